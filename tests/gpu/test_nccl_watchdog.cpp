// The NCCL watchdog on a real device (label gpu; skipped without one): a set-up or collective that never
// completes is aborted (ncclCommAbort) after the timeout, one that NCCL fails is aborted at once, and
// either way the error names the rank and the operation instead of the run hanging. One GPU: a world of
// two whose second rank never comes stands in for a lost peer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <cuda_runtime_api.h>

#include "cuda_ops.hpp"
#include "nccl_communicator.hpp"

namespace ddplab {
namespace {

// Rank 0 of a two-rank job whose rank 1 never starts. Only what NCCL's set-up asks of a bootstrap works:
// rank 0 is the root of the id's broadcast, so it sends nothing.
class LoneRankOfTwo final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  void broadcast(void*, std::size_t, int root) override {
    if (root != 0) unused("a broadcast from rank " + std::to_string(root));
  }
  void barrier() override { unused("barrier"); }
  void allreduce_sum(float*, std::size_t) override { unused("allreduce"); }
  void allreduce_sum(double*, std::size_t) override { unused("allreduce"); }
  void allreduce_min(int*, std::size_t) override { unused("allreduce"); }
  void allreduce_sum(void*, std::size_t, ElemType) override { unused("allreduce"); }
  void all_gather(void*, std::size_t) override { unused("all_gather"); }
  void reduce_scatter_sum(float*, std::size_t) override { unused("reduce_scatter"); }
  void all_gather_shards(float*, std::size_t) override { unused("all_gather_shards"); }
  void gather(const void*, std::size_t, void*, int) override { unused("gather"); }
  void isend(const void*, std::size_t, int, int) override { unused("isend"); }
  void irecv(void*, std::size_t, int, int) override { unused("irecv"); }
  void wait_all() override { unused("wait_all"); }
  [[noreturn]] void abort(int code) override { std::exit(code); }

 private:
  [[noreturn]] static void unused(const std::string& what) {
    throw std::logic_error("LoneRankOfTwo: the NCCL set-up asked for " + what);
  }
};

class NcclWatchdog : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_device_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
  // Runs `f`, which must throw; returns what it said and after how long, both also recorded in the JSON
  // report (what a user would read).
  template <class F>
  std::pair<std::string, double> failure_of(const char* what, F f) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string message;
    try {
      f();
      ADD_FAILURE() << what << " completed";
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RecordProperty("message", message);
    RecordProperty("waited_s", std::to_string(waited));
    return {message, waited};
  }
};

TEST_F(NcclWatchdog, AbortsAnInitThatNoPeerJoins) {
  LoneRankOfTwo boot;
  NcclOptions o;
  o.bootstrap = &boot;
  o.timeout_s = 3;
  const auto [message, waited] =
      failure_of("a world of two initialised with one rank", [&] { auto comm = make_nccl_communicator(o); });
  EXPECT_NE(message.find("rank 0"), std::string::npos) << message;
  EXPECT_NE(message.find("ncclCommInitRank"), std::string::npos) << message;
  EXPECT_NE(message.find("ncclCommAbort"), std::string::npos) << message;
  EXPECT_GE(waited, 3.0) << "failed before the timeout: " << message;
  EXPECT_LT(waited, 30.0) << "the abort took " << waited << " s";
}

// What a schedule step does (begin, transfers, end_step), with a receive from rank 0 that no send
// matches. NCCL reports this one itself (invalid usage, seen after about 1 s on the check machine): the
// step must fail at once, naming the rank and the step, and the communicator is aborted.
TEST_F(NcclWatchdog, AFailedStepIsNamedAndAbortsTheCommunicator) {
  NcclOptions o;
  o.timeout_s = 30;
  auto comm = make_nccl_communicator(o);
  ChunkMemory* mem = comm->chunk_memory();
  ASSERT_NE(mem, nullptr);
  void* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, 4096), cudaSuccess);
  const auto [message, waited] = failure_of("a receive that no send matches", [&] {
    mem->begin("unmatched receive");
    comm->irecv(buf, 4096, 0, 0);
    comm->wait_all();
    mem->end_step();
  });
  EXPECT_NE(message.find("rank 0: NCCL unmatched receive failed"), std::string::npos) << message;
  EXPECT_LT(waited, 30.0) << "the failure was not seen before the timeout: " << message;
  EXPECT_THROW(comm->barrier(), std::runtime_error);  // an aborted communicator refuses further work
  cudaFree(buf);
}

// A collective stuck behind compute that never ends (a host function holds the compute stream, as a
// hung kernel would): the watchdog's timeout aborts it. ncclCommAbort then waits for the stream (seen on
// the H200), so the error must come after the abort grace (1 s here) without it; a helper thread lets
// the stream go after 8 s so that the abort, and the test, can end.
TEST_F(NcclWatchdog, AbortsACollectiveStuckBehindCompute) {
  cudaStream_t compute = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  NcclOptions o;
  o.timeout_s = 3;
  o.abort_grace_s = 1;
  o.compute_stream = compute;
  auto comm = make_nccl_communicator(o);
  float* buf = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&buf), 1024 * sizeof(float)), cudaSuccess);
  std::atomic<bool> go{false};
  ASSERT_EQ(cudaLaunchHostFunc(
                compute,
                [](void* p) {
                  while (!static_cast<std::atomic<bool>*>(p)->load())
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                },
                &go),
            cudaSuccess);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::seconds(8));
    go = true;
  });
  const auto [message, waited] =
      failure_of("an allreduce behind a held stream", [&] { comm->allreduce_sum(buf, 1024); });
  releaser.join();
  cudaStreamSynchronize(compute);
  EXPECT_NE(message.find("rank 0: NCCL allreduce did not complete within 3"), std::string::npos) << message;
  EXPECT_NE(message.find("ncclCommAbort"), std::string::npos) << message;
  EXPECT_GE(waited, 3.0) << message;
  EXPECT_LT(waited, 7.0) << "the error waited " << waited << " s: for the stream's release at 8 s?";
  comm.reset();
  cudaFree(buf);
  cudaStreamDestroy(compute);
}

}  // namespace
}  // namespace ddplab
