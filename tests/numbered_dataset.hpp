// A dataset whose every value says where it came from: sample i's feature f is i * 100 + f and its label
// i % 3, so a batch gathered from the wrong samples or slot cannot compare equal by chance.
#pragma once
#include "ddplab/runtime/data.hpp"

namespace ddplab::test {

inline Dataset numbered_dataset(int samples, int features) {
  Dataset d;
  d.features = features, d.classes = 3;
  for (int i = 0; i < samples; ++i) {
    for (int f = 0; f < features; ++f) d.images.push_back(static_cast<float>(i * 100 + f));
    d.labels.push_back(i % 3);
  }
  return d;
}

}  // namespace ddplab::test
