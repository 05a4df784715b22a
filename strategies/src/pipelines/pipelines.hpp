// The pipeline schedules' orders, one file each; registered in pipelines.cpp.
#pragma once
#include <vector>

#include "ddplab/strategies/pipeline.hpp"

namespace ddplab {

std::vector<PipeOp> gpipe_order(const PipelineShape& shape, int stage);
std::vector<PipeOp> one_f_one_b_order(const PipelineShape& shape, int stage);
std::vector<PipeOp> interleaved_order(const PipelineShape& shape, int stage);

}  // namespace ddplab
