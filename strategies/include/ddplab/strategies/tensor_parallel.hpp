// Megatron-LM's tensor parallelism on a ModelSpec: what one rank of a TP group of T holds and runs, and the
// allreduces the group needs (Shoeybi et al. 2019, arXiv 1909.08053, section 3).
#pragma once
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

// Rank's share of `model` over T ranks, by each layer's TpSplit: a Column, Row or Split layer keeps 1/T of
// its FLOPs; Column and Split layers 1/T of their output (Row layers' outputs are allreduced, whole); the
// parameters of Column and Row layers 1/T each, except a Row layer's bias, which every rank adds after the
// allreduce (a Column layer's tensors split along their first dimension, its outputs; a Row layer's weight along its
// second, its inputs; either along the first dimension T divides where that one does not). tp_sync_bytes is set per
// sample: a Row layer's output, a Column layer's input (the activations of the layer before it; none for the first
// layer, whose input is the data). T = 1 returns the model. Throws InputError when T does not
// divide a split tensor or a split layer's output.
ModelSpec tensor_parallel_shard(const ModelSpec& model, int T);

}  // namespace ddplab
