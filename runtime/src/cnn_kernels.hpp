// A convolution's passes on a batch of NHWC images, as im2col blocks and GEMMs: the one implementation the
// whole CNN (cnn.cpp) and a rank's share of it (split_model.cpp) run, so their sums are the same.
#pragma once
#include <cstddef>

#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/cnn_layout.hpp"

namespace ddplab {

// Samples per im2col block of layer L for batches of up to max_batch (the column buffer stays bounded), and
// the column buffer's floats.
int im2col_block(const CnnLayer& L, int max_batch);
std::size_t im2col_floats(const CnnLayer& L, int max_batch);

// y (n x h x w x out) = conv(x) + b, b optional (a conv before batch norm has none).
void conv_forward(Ops& ops, const CnnLayer& L, const float* w, const float* b, const float* x, float* y, int n,
                  float* col, int block);
// From dy (n x h x w x out, before the ReLU and pool): dw and db (optional), added to with accumulate, and
// dx (n x h x w x in; nullptr: not needed, the model's input).
void conv_backward(Ops& ops, const CnnLayer& L, const float* w, const float* x, const float* dy, float* dw, float* db,
                   float* dx, int n, float* col, int block, bool accumulate);

}  // namespace ddplab
