// InputPipeline: batch s + 1 is gathered and uploaded on the loader thread while step s runs, every step
// sees exactly gather_batch's samples (across an epoch boundary too), and a failed upload comes back from
// ready() instead of being lost on the other thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/input_pipeline.hpp"
#include "forwarding_ops.hpp"
#include "numbered_dataset.hpp"

namespace ddplab {
namespace {

// Holds every upload until the test releases it, and notes which threads bound and uploaded.
class HeldOps final : public ForwardingOps {
 public:
  void prefetch(void* dst, const void* host, std::size_t bytes) override {
    std::unique_lock<std::mutex> lock(mu);
    upload_threads.push_back(std::this_thread::get_id());
    // A synchronous load would wait here for a release that only comes after it returned.
    held_until_released = cv.wait_for(lock, std::chrono::seconds(10), [&] { return released; }) && held_until_released;
    lock.unlock();
    if (fail) throw std::runtime_error("upload failed");
    ForwardingOps::prefetch(dst, host, bytes);
  }
  void bind_thread() override {
    std::lock_guard<std::mutex> lock(mu);
    bound_threads.push_back(std::this_thread::get_id());
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      released = true;
    }
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  bool released = false, held_until_released = true, fail = false;
  std::vector<std::thread::id> upload_threads, bound_threads;
};

void expect_slot(Ops& ops, const InputPipeline& in, const Dataset& d, const std::vector<std::size_t>& idx,
                 std::size_t first, int count, std::size_t slot, const char* what) {
  std::vector<float> want(static_cast<std::size_t>(count * d.features)), got(want.size());
  std::vector<std::int32_t> want_y(static_cast<std::size_t>(count)), got_y(want_y.size());
  gather_batch(d, idx, first, count, want.data(), want_y.data());
  ops.to_host(got.data(), in.x(slot), got.size());
  std::copy(in.y(slot), in.y(slot) + count, got_y.begin());  // CPU memory: labels are readable as they are
  EXPECT_EQ(got, want) << what;
  EXPECT_EQ(got_y, want_y) << what;
}

TEST(InputPipeline, LoadStepReturnsBeforeTheUploadAndReadyWaitsForIt) {
  const Dataset d = test::numbered_dataset(40, 5);
  DistributedSampler sampler(d.size(), 0, 1, 3);
  HeldOps ops;
  InputPipeline in(ops, d, 8);
  in.plan(sampler, 1, 0);
  EXPECT_EQ(in.load_step(0), 8);  // returns although the upload is held
  ops.release();
  in.ready();
  EXPECT_TRUE(ops.held_until_released) << "load_step gathered and uploaded on the calling thread";
  ASSERT_FALSE(ops.upload_threads.empty());
  for (std::thread::id t : ops.upload_threads) EXPECT_NE(t, std::this_thread::get_id());
  ASSERT_FALSE(ops.bound_threads.empty()) << "the loader thread never bound itself to the device";
  EXPECT_EQ(ops.bound_threads.front(), ops.upload_threads.front());
  expect_slot(ops, in, d, sampler.indices(0), 0, 8, 0, "step 0");
}

TEST(InputPipeline, EveryStepSeesItsSamplesAcrossEpochs) {
  const Dataset d = test::numbered_dataset(44, 3);  // 44 = 5 batches of 8 + one of 4, per epoch
  DistributedSampler sampler(d.size(), 0, 1, 9);
  HeldOps ops;
  ops.release();
  InputPipeline in(ops, d, 8);
  in.plan(sampler, 2, 0);
  ASSERT_EQ(in.steps(), 12u);
  int b = in.load_step(0);
  for (std::size_t s = 0; s < in.steps(); ++s) {
    in.ready();
    const int this_b = b;
    if (s + 1 < in.steps()) b = in.load_step(s + 1);  // refills the other slot while this one is read
    const int epoch = static_cast<int>(s / 6);
    const std::size_t first = (s % 6) * 8;
    EXPECT_EQ(this_b, s % 6 == 5 ? 4 : 8) << "step " << s;
    expect_slot(ops, in, d, sampler.indices(epoch), first, this_b, s % 2, ("step " + std::to_string(s)).c_str());
  }
}

TEST(InputPipeline, AShortLastBatchUnderTheMinimumIsDropped) {
  EXPECT_EQ(InputPipeline::batches(44, 8), 6);
  EXPECT_EQ(InputPipeline::batches(44, 8, 4), 6);  // the last batch of 4 is kept at a minimum of 4
  EXPECT_EQ(InputPipeline::batches(44, 8, 5), 5);
  EXPECT_EQ(InputPipeline::batches(40, 8, 5), 5);  // no short batch to drop
  const Dataset d = test::numbered_dataset(44, 3);
  DistributedSampler sampler(d.size(), 0, 1, 9);
  HeldOps ops;
  ops.release();
  InputPipeline in(ops, d, 8);
  in.plan(sampler, 2, 0, 0, 5);
  ASSERT_EQ(in.steps(), 10u);  // 5 full batches an epoch
  int b = in.load_step(0);
  for (std::size_t s = 0; s < in.steps(); ++s) {
    in.ready();
    EXPECT_EQ(b, 8) << "step " << s;
    expect_slot(ops, in, d, sampler.indices(static_cast<int>(s / 5)), (s % 5) * 8, b, s % 2,
                ("step " + std::to_string(s)).c_str());
    if (s + 1 < in.steps()) b = in.load_step(s + 1);
  }
}

TEST(InputPipeline, AFailedUploadComesBackFromReady) {
  const Dataset d = test::numbered_dataset(16, 2);
  DistributedSampler sampler(d.size(), 0, 1, 1);
  HeldOps ops;
  ops.fail = true;
  ops.release();
  InputPipeline in(ops, d, 8);
  in.plan(sampler, 1, 0);
  in.load_step(0);
  EXPECT_THROW(
      {
        try {
          in.ready();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "upload failed");
          throw;
        }
      },
      std::runtime_error);
  ops.fail = false;  // the error is reported once; the pipeline goes on
  in.load_step(1);
  in.ready();
  expect_slot(ops, in, d, sampler.indices(0), 8, 8, 1, "step 1 after the failure");
}

TEST(InputPipeline, ClosingWithALoadInFlightWaitsForIt) {
  const Dataset d = test::numbered_dataset(16, 2);
  DistributedSampler sampler(d.size(), 0, 1, 1);
  HeldOps ops;
  std::thread releaser;
  {
    InputPipeline in(ops, d, 8);
    in.plan(sampler, 1, 0);
    in.load_step(0);
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ops.release();
    });
  }  // the destructor joins the loader, which finishes its upload first
  releaser.join();
  EXPECT_EQ(ops.upload_threads.size(), 2u);  // images and labels of step 0
}

}  // namespace
}  // namespace ddplab
