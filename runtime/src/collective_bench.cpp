// Collective benchmark: see collective_bench.hpp for the metric definitions.
#include "ddplab/runtime/collective_bench.hpp"

#include "ddplab/core/error.hpp"
#include "ddplab/core/metrics.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>

#include "ddplab/core/units.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/schedule_executor.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

constexpr std::uint64_t kElem = sizeof(float);

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Whole floats, at least one.
std::uint64_t whole_floats(std::string_view text) {
  const std::uint64_t bytes = parse_bytes(trim(text));
  if (bytes < kElem) throw InputError("size \"" + std::string(trim(text)) + "\" is less than one float (4 bytes)");
  return bytes / kElem * kElem;
}

// Rank r's value at element i: small integers of both signs, so every partial sum is exact in float
// whatever the order of additions, and a misplaced chunk or a missing rank shows up as a wrong element.
constexpr int kPeriod = 17;
float input_value(int rank, std::size_t i) {
  return static_cast<float>(static_cast<int>((i + 7 * static_cast<std::size_t>(rank)) % kPeriod) - 8);
}

// Max over ranks of a per-rank value: gathered to rank 0 and broadcast (the Communicator has no max reduction).
double max_over_ranks(Communicator& comm, double mine) {
  std::vector<double> all(static_cast<std::size_t>(comm.size()));
  comm.gather(&mine, sizeof mine, all.data(), 0);
  double m = comm.rank() == 0 ? *std::max_element(all.begin(), all.end()) : 0.0;
  comm.broadcast(&m, sizeof m, 0);
  return m;
}

}  // namespace

std::vector<std::uint64_t> parse_size_list(std::string_view text) {
  std::vector<std::uint64_t> sizes;
  if (const auto colon = text.find(':'); colon != std::string_view::npos) {
    const std::uint64_t lo = whole_floats(text.substr(0, colon)), hi = whole_floats(text.substr(colon + 1));
    if (lo > hi) throw InputError("size range \"" + std::string(text) + "\": the first size exceeds the last");
    for (std::uint64_t s = lo; s <= hi; s *= 2) sizes.push_back(s);
  } else {
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      sizes.push_back(whole_floats(text.substr(start, comma - start)));
      start = comma + 1;
    }
  }
  return sizes;
}

void run_collective_bench(Communicator& comm, const CollectiveBenchOptions& opt, const BenchRowSink& on_row,
                          const BenchProgress& on_progress) {
  using Clock = std::chrono::steady_clock;
  if (opt.iters < 1) throw InputError("iters must be >= 1");
  if (opt.warmup < 0) throw InputError("warmup must be >= 0");
  const int n = comm.size(), me = comm.rank();
  if (comm.chunk_memory() && !opt.device)
    throw InternalError(
        "collective bench: this communicator's buffers live on a device (NCCL); "
        "CollectiveBenchOptions::device must name the backend that allocates them");
  const std::uint64_t max_bytes = opt.sizes.empty() ? 0 : *std::max_element(opt.sizes.begin(), opt.sizes.end());
  std::vector<float> buf(max_bytes / kElem);  // the inputs and results, on the host
  DeviceBuffer dev;                           // the reduced buffer itself with opt.device
  if (opt.device) dev = DeviceBuffer(*opt.device, buf.size());
  float* work = opt.device ? dev.data() : buf.data();
  auto upload = [&](std::size_t count) {
    if (opt.device) opt.device->to_device(work, buf.data(), count);
  };
  auto download = [&](std::size_t count) {
    if (opt.device) opt.device->to_host(buf.data(), work, count);
  };
  ScheduleExecutor exec(comm);

  // The exact sum at element i depends only on i % kPeriod.
  float expected[kPeriod] = {};
  for (int p = 0; p < kPeriod; ++p)
    for (int r = 0; r < n; ++r) expected[p] += input_value(r, static_cast<std::size_t>(p));

  const std::size_t total = opt.schedules.size() * opt.sizes.size();
  std::size_t done = 0;
  for (const std::string& name : opt.schedules) {
    for (const std::uint64_t bytes : opt.sizes) {
      if (on_progress) on_progress(name, bytes, done, total);
      const std::size_t count = bytes / kElem;
      std::optional<Schedule> schedule;
      if (!is_backend_native(name)) schedule = make_schedule(name, ScheduleParams{n, count, opt.ranks_per_node});
      auto once = [&] {
        if (schedule)
          exec.run(*schedule, work, ElemType::F32);
        else
          comm.allreduce_sum(work, count, ElemType::F32);
      };

      CollectiveBenchRow row;
      row.schedule = name;
      row.bytes = static_cast<std::int64_t>(bytes);
      row.count = static_cast<std::int64_t>(count);
      if (opt.check) {
        for (std::size_t i = 0; i < count; ++i) buf[i] = input_value(me, i);
        upload(count);
        once();
        download(count);
        if (me == n - 1 && opt.fault.corrupts(name, bytes)) buf[0] += 1.0f;
        std::size_t mine = 0;
        for (std::size_t i = 0; i < count; ++i) mine += buf[i] != expected[i % kPeriod];
        double wrong = static_cast<double>(mine);  // exact up to 2^53
        comm.allreduce_sum(&wrong, 1);
        row.wrong = static_cast<std::int64_t>(wrong);
      }

      // Zeros while timing: repeated in-place sums stay finite and never denormal, so every iteration
      // costs the same arithmetic.
      std::fill_n(buf.begin(), count, 0.0f);
      upload(count);
      if (opt.device) opt.device->synchronize();
      for (int w = 0; w < opt.warmup; ++w) once();
      comm.barrier();
      const auto t0 = Clock::now();
      for (int it = 0; it < opt.iters; ++it) once();
      const double mine = std::chrono::duration<double>(Clock::now() - t0).count() / opt.iters;
      const double time_s = max_over_ranks(comm, mine);

      set_bandwidths(row, time_s, n);
      ++done;
      if (on_row) on_row(row);
    }
  }
}

}  // namespace ddplab
