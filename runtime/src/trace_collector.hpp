// Private to the trainer: the timeline of a run's traced steps, gathered from every rank.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/store.hpp"
#include "ddplab/core/trace.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/runtime/trainer.hpp"

namespace ddplab {

// The timeline of the traced steps: rank 0 collects every rank's events, writes one Chrome trace when asked
// (--trace) and stores them with the run (table trace_events) for the GUI's Timeline. Without --trace-steps the
// window is the run's last two steady blocks (two steps at least): the end of a run is past every warm-up.
class TraceCollector {
 public:
  using Clock = std::chrono::steady_clock;
  TraceCollector(const WorkerOptions& opt, const std::string& strategy, bool several, Clock::time_point origin,
                 std::int64_t total_steps, std::int64_t period)
      : origin_(origin), first_asked_(opt.trace_first), last_asked_(opt.trace_last) {
    if (opt.trace_path.empty()) {
      const std::int64_t span = std::max<std::int64_t>(2, 2 * period);
      first_asked_ = std::max<std::int64_t>(1, total_steps - span), last_asked_ = total_steps;
      return;
    }
    path_ = opt.trace_path;
    if (several) {
      const auto dot = path_.rfind('.');
      path_ = dot == std::string::npos || path_.find('/', dot) != std::string::npos
                  ? path_ + "." + strategy
                  : path_.substr(0, dot) + "." + strategy + path_.substr(dot);
    }
  }
  void add(int rank, std::int64_t step, const StepRecord& rec) {
    if (step < first_asked_ || step >= last_asked_) return;
    if (first_ < 0) first_ = step;
    last_ = step;
    const double base = std::chrono::duration<double>(rec.start - origin_).count();
    for (const OpRecord& op : rec.ops) {
      if (op.end_s <= op.start_s && op.bytes == 0) continue;  // never ran (e.g. an empty bucket)
      nlohmann::json args = {{"step", step}};
      if (is_comm(op.kind)) args["bytes"] = op.bytes;
      mine_.push_back({{"rank", rank},
                       {"track", is_comm(op.kind) ? "comm" : "compute"},
                       {"name", std::string(op_name(op.kind)) + (op.index >= 0 ? " " + std::to_string(op.index) : "")},
                       {"start_s", base + op.start_s},
                       {"dur_s", op.end_s - op.start_s},
                       {"args", args}});
    }
  }
  std::int64_t first_traced() const { return first_; }
  std::int64_t last_traced() const { return last_; }
  // Collective: every rank calls it. Rank 0 stores the events with `run` (when it has a store) and writes the
  // file asked for; returns the path written, or "". Nothing happens when the run ended before the window
  // (every rank ran the same steps, so all skip alike).
  std::string write(Communicator& comm, Store* store, std::int64_t run, const nlohmann::json& metadata) {
    if (first_ < 0) return "";
    const std::string text = mine_.dump();
    const long long len = static_cast<long long>(text.size());
    std::vector<long long> lens(static_cast<std::size_t>(comm.size()));
    comm.gather(&len, sizeof len, lens.data(), 0);
    std::vector<std::string> texts(static_cast<std::size_t>(comm.size()));
    if (comm.rank() == 0) {
      for (int r = 1; r < comm.size(); ++r) {
        texts[static_cast<std::size_t>(r)].resize(static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
        comm.irecv(texts[static_cast<std::size_t>(r)].data(), texts[static_cast<std::size_t>(r)].size(), r, 7);
      }
    } else {
      comm.isend(text.data(), text.size(), 0, 7);
    }
    comm.wait_all();
    if (comm.rank() != 0) return "";
    texts[0] = text;
    std::vector<TraceEvent> events;
    for (const std::string& t : texts)
      for (const auto& e : nlohmann::json::parse(t))
        events.push_back({e["rank"], e["track"], e["name"], e["start_s"], e["dur_s"], e["args"]});
    if (store && run >= 0) {
      try {
        store->add_trace(run, events);
      } catch (const StoreError& e) {  // the run's figures are stored; only its timeline is lost
        std::fprintf(stderr, "warning: run %lld's timeline was not stored: %s\n", static_cast<long long>(run),
                     e.what());
      }
    }
    if (path_.empty()) return "";
    write_chrome_trace(path_, events, metadata);
    return path_;
  }

 private:
  Clock::time_point origin_;
  std::int64_t first_asked_, last_asked_;  // the window [first, last)
  std::string path_;
  std::int64_t first_ = -1, last_ = -1;  // steps traced
  nlohmann::json mine_ = nlohmann::json::array();
};

}  // namespace ddplab
