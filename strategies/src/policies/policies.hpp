// The policies' plan builders (one file each) and the registry in policies.cpp.
#pragma once
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

void build_after_backward(const Strategy& s, std::int64_t step, StepPlan& plan);
void build_overlap(const Strategy& s, std::int64_t step, StepPlan& plan);
void build_local_sgd(const Strategy& s, std::int64_t step, StepPlan& plan);
PolicyTiming local_sgd_timing(const StrategyConfig& c);
std::vector<OptionSpec> local_sgd_options();
std::vector<OptionSpec> parameter_server_options();
void finish_local_sgd(const Strategy& s, StepPlan& plan);
void build_zero1(const Strategy& s, std::int64_t step, StepPlan& plan);
void build_zero3(const Strategy& s, std::int64_t step, StepPlan& plan);
void accumulate_zero3(const Strategy& s, std::int64_t step, StepPlan& plan);
std::vector<OptionSpec> zero3_options();
void build_parameter_server(const Strategy& s, std::int64_t step, StepPlan& plan);

// Shared by zero1 (and zero2) and ps (sharded.cpp): per bucket, `gather` once ready, ShardOptimizer, then `spread`.
void build_sharded(const Strategy& s, std::int64_t step, StepPlan& plan, OpKind gather, OpKind spread);

}  // namespace ddplab
