// The tests' small CNN: 8 x 8 images, two conv blocks of 3 and 4 channels with 3 x 3 kernels (each
// pooled), one hidden Linear layer, then the classes.
#pragma once
#include <string>

#include "ddplab/core/scenario.hpp"

namespace ddplab::test {

inline ModelConfig small_cnn(int channels, int hidden, int classes, const std::string& bn = "none") {
  ModelConfig m;
  m.type = ddplab::ModelType::Cnn;
  m.image = {8, 8, channels};
  m.conv = {3, 4};
  m.kernel = 3;
  m.hidden = {hidden};
  m.classes = classes;
  m.bn = bn;
  return m;
}

}  // namespace ddplab::test
