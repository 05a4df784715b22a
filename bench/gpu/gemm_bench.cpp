// ddplab-gemm-bench: TFLOP/s of the CUDA backend's GEMM at the default MLP's layer shapes (forward, weight
// gradient and input gradient of each layer at batch 64), against cuBLAS at a large square shape, the
// best the library does on this device. fp32 and TF32. Inputs are uniform in [-1, 1): all-zero matrices
// draw less power and run at higher clocks, which flatters the figures. Prints one JSON object.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_check.hpp"
#include "cuda_ops.hpp"

namespace {

struct Shape {
  std::string name;
  bool ta, tb;
  int m, n, k;
};

// Uniform in [-1, 1) from a 64-bit LCG: fast enough for the 8192^2 operands, and not zeros.
void fill_random(ddplab::Ops& ops, float* dev, std::size_t n, std::uint64_t seed) {
  std::vector<float> h(n);
  for (float& v : h) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<double>(seed >> 40) / double(1ull << 24) * 2.0 - 1.0);
  }
  ops.to_device(dev, h.data(), n);
}

double tflops(ddplab::Ops& ops, cudaStream_t s, const Shape& g, int iters) {
  const std::size_t a_n = std::size_t(g.m) * g.k, b_n = std::size_t(g.k) * g.n, c_n = std::size_t(g.m) * g.n;
  float *a = ops.alloc(a_n), *b = ops.alloc(b_n), *c = ops.alloc(c_n);
  fill_random(ops, a, a_n, 1), fill_random(ops, b, b_n, 2);
  ops.synchronize();
  const int lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n;
  for (int i = 0; i < 3; ++i) ops.gemm(g.ta, g.tb, g.m, g.n, g.k, 1.0f, a, lda, b, ldb, 0.0f, c, g.n);  // warm-up
  cudaEvent_t e0, e1;
  cudaCheck(cudaEventCreate(&e0));
  cudaCheck(cudaEventCreate(&e1));
  cudaCheck(cudaEventRecord(e0, s));
  for (int i = 0; i < iters; ++i) ops.gemm(g.ta, g.tb, g.m, g.n, g.k, 1.0f, a, lda, b, ldb, 0.0f, c, g.n);
  cudaCheck(cudaEventRecord(e1, s));
  cudaCheck(cudaEventSynchronize(e1));
  float ms = 0;
  cudaCheck(cudaEventElapsedTime(&ms, e0, e1));
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  ops.free(a), ops.free(b), ops.free(c);
  return 2.0 * g.m * g.n * double(g.k) * iters / (ms * 1e-3) / 1e12;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int batch = argc > 1 ? std::stoi(argv[1]) : 64;
    const std::vector<int> layers = {784, 1024, 1024, 1024, 10};
    std::vector<Shape> shapes;
    for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
      const int in = layers[l], out = layers[l + 1], i = static_cast<int>(l);
      shapes.push_back({"fwd" + std::to_string(i), false, true, batch, out, in});
      shapes.push_back({"dW" + std::to_string(i), true, false, out, in, batch});
      if (l > 0) shapes.push_back({"dX" + std::to_string(i), false, false, batch, in, out});
    }
    std::string json = "{\"batch\": " + std::to_string(batch) + ", \"inputs\": \"uniform(-1,1)\", \"layers\": [";
    for (int tf32 = 0; tf32 < 2; ++tf32) {
      auto ops = ddplab::make_cuda_ops(ddplab::CudaOpsOptions{-1, tf32 != 0});
      cudaStream_t s = ddplab::cuda_stream(*ops);
      for (const Shape& g : shapes) {
        const double t = tflops(*ops, s, g, 200);
        char row[200];
        std::snprintf(row, sizeof row,
                      "%s{\"shape\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, \"tf32\": %s, \"tflops\": %.3f}",
                      json.back() == '[' ? "" : ", ", g.name.c_str(), g.m, g.n, g.k, tf32 ? "true" : "false", t);
        json += row;
      }
    }
    json += "]";
    for (int tf32 = 0; tf32 < 2; ++tf32) {
      auto ops = ddplab::make_cuda_ops(ddplab::CudaOpsOptions{-1, tf32 != 0});
      const double t = tflops(*ops, ddplab::cuda_stream(*ops), {"square8192", false, false, 8192, 8192, 8192}, 20);
      char row[120];
      std::snprintf(row, sizeof row, ", \"cublas_best_%s_tflops\": %.3f", tf32 ? "tf32" : "fp32", t);
      json += row;
    }
    std::printf("%s}\n", json.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
