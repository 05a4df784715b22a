// Pipeline schedules: the order in which one pipeline stage runs the forward and backward passes of a
// step's microbatches ([parallel] pipeline_schedule, docs/model-parallel.md). One file each under
// src/pipelines/, one line in pipelines/pipelines.cpp. An executor runs a stage's passes in this order, each
// waiting for its input from the neighbouring stage, so the pipeline's bubble comes from these dependencies
// and not from a formula; `pipeline_makespan` is that execution with fixed pass times, for tests and checks.
#pragma once
#include <string>
#include <vector>

#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

struct PipelineShape {
  int stages = 1;        // P: ranks in a pipeline
  int microbatches = 1;  // M: per step
  int chunks = 1;        // v: model chunks per rank (interleaved; 1 otherwise)
};

// One pass of one microbatch through one of this rank's model chunks. The chunk's place in the whole
// pipeline is chunk * stages + stage: chunk 0 of every rank comes first, then chunk 1, ... (Megatron-LM's
// interleaving: with P = 4, v = 2 and 16 layers, rank 0 holds layers 1-2 and 9-10).
struct PipeOp {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;
  bool operator==(const PipeOp&) const = default;
};

struct PipelineInfo {
  std::string name;          // "gpipe", "1f1b", "interleaved"
  std::string summary;       // one line, with its source
  bool interleaved = false;  // runs chunks >= 2 per rank; then microbatches must be a multiple of stages
  std::vector<PipeOp> (*order)(const PipelineShape& shape, int stage) = nullptr;  // every pass of `stage`, once
};
const std::vector<PipelineInfo>& pipeline_schedules();
const PipelineInfo* find_pipeline_schedule(const std::string& name);

// The most microbatch-chunks whose forward has run and whose backward has not, at any point of `order`:
// the activations a stage holds at its peak, in chunks of microbatches.
int peak_in_flight(const std::vector<PipeOp>& order);

// The step's time when every stage runs its order with a forward pass of one chunk taking forward_s and a
// backward backward_s, each pass waiting for the same microbatch's pass on the neighbouring chunk (the
// previous one in forward, the next one in backward). Throws std::logic_error when the orders deadlock or
// omit a pass.
double pipeline_makespan(const PipelineInfo& schedule, const PipelineShape& shape, double forward_s, double backward_s);

// One rank's stage of a pipeline, as the Strategy that plans it sees it (StrategyContext::pipeline).
struct StageChunk {
  int first = 0, end = 0;   // its layers in the stage's ModelSpec, [first, end)
  int model_first = 0;      // its first layer in the whole model's (layer first is the model's model_first)
  double input_bytes = 0;   // per sample, from the previous chunk of the pipeline (0 on the first)
  double output_bytes = 0;  // per sample, to the next chunk (0 on the last)
};
struct PipelineStage {
  const PipelineInfo* schedule = nullptr;  // nullptr: no pipeline (the plan's compute pass is the whole model's)
  PipelineShape shape;
  int stage = 0;
  std::vector<StageChunk> chunks;  // this rank's, by chunk
};

// Stage `stage` of `model` cut into C = shape.stages x shape.chunks pipeline chunks (the rank holds chunks
// stage, stage + stages, ...). Chunks share the model's numbered blocks (from the layers' names:
// "transformer.h.12.*", "layer3.1.*", "layers.2") by count, as Megatron-LM shares transformer layers, the
// layers before the first block going with chunk 0 (embeddings) and after the last with chunk C - 1 (the
// head); a model without numbered blocks is cut by layer count. The model keeps the stage's layers,
// renumbered from 0, and their parameters; the activations between chunks are the last layer's
// activation_bytes. Throws InputError when the model has fewer blocks than chunks, a layer between
// chunks has no activation size, or it has SyncBatchNorm layers (their statistics would span stages).
struct StageModel {
  ModelSpec model;
  PipelineStage stage;
};
StageModel pipeline_stage(const ModelSpec& model, const PipelineInfo& schedule, const PipelineShape& shape, int stage);

}  // namespace ddplab
