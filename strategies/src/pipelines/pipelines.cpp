// The pipeline schedule registry (one line per schedule) and what every executor shares.
#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "pipelines.hpp"

namespace ddplab {

const std::vector<PipelineInfo>& pipeline_schedules() {
  static const std::vector<PipelineInfo> all = {
      {"gpipe", "every forward, then every backward (Huang et al. 2019; torch.distributed.pipelining's ScheduleGPipe)",
       false, gpipe_order},
      {"1f1b",
       "warm-up forwards, then one forward one backward, then the remaining backwards (PipeDream-Flush, "
       "Narayanan et al. 2021; Megatron-LM without interleaving)",
       false, one_f_one_b_order},
      {"interleaved",
       "1F1B over v model chunks per rank: the bubble shrinks by v (Narayanan et al. 2021, section 2.2.2; "
       "Megatron-LM's interleaved schedule)",
       true, interleaved_order},
  };
  return all;
}

const PipelineInfo* find_pipeline_schedule(const std::string& name) {
  for (const auto& p : pipeline_schedules())
    if (p.name == name) return &p;
  return nullptr;
}

int peak_in_flight(const std::vector<PipeOp>& order) {
  int now = 0, peak = 0;
  for (const PipeOp& op : order) peak = std::max(peak, now += op.forward ? 1 : -1);
  return peak;
}

double pipeline_makespan(const PipelineInfo& schedule, const PipelineShape& shape, double forward_s,
                         double backward_s) {
  const int P = shape.stages, v = shape.chunks;
  std::vector<std::vector<PipeOp>> orders;
  for (int s = 0; s < P; ++s) orders.push_back(schedule.order(shape, s));
  // When each pass ended, by (forward, microbatch, place in the pipeline).
  std::map<std::tuple<bool, int, int>, double> done;
  std::vector<std::size_t> next(static_cast<std::size_t>(P), 0);
  std::vector<double> free_at(static_cast<std::size_t>(P), 0.0);
  const int places = P * v;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < P; ++s) {
      auto& i = next[static_cast<std::size_t>(s)];
      const auto& order = orders[static_cast<std::size_t>(s)];
      while (i < order.size()) {
        const PipeOp& op = order[i];
        const int place = op.chunk * P + s;
        // Forward waits for the previous place's forward; backward for the next place's backward (the last
        // place's backward follows its own forward).
        double ready = free_at[static_cast<std::size_t>(s)];
        const auto dep = op.forward
                             ? (place > 0 ? std::optional(std::tuple(true, op.microbatch, place - 1)) : std::nullopt)
                             : (place + 1 < places ? std::optional(std::tuple(false, op.microbatch, place + 1))
                                                   : std::optional(std::tuple(true, op.microbatch, place)));
        if (dep) {
          const auto it = done.find(*dep);
          if (it == done.end()) break;
          ready = std::max(ready, it->second);
        }
        const double end = ready + (op.forward ? forward_s : backward_s);
        done[{op.forward, op.microbatch, place}] = end;
        free_at[static_cast<std::size_t>(s)] = end;
        ++i;
        progress = true;
      }
    }
  }
  double makespan = 0;
  for (int s = 0; s < P; ++s) {
    if (next[static_cast<std::size_t>(s)] != orders[static_cast<std::size_t>(s)].size())
      throw InternalError(fmt::format("pipeline schedule {}: stage {} waits forever at pass {}", schedule.name, s,
                                      next[static_cast<std::size_t>(s)]));
    makespan = std::max(makespan, free_at[static_cast<std::size_t>(s)]);
  }
  if (done.size() != static_cast<std::size_t>(2 * shape.microbatches * places))
    throw InternalError(fmt::format("pipeline schedule {}: {} passes run, not {}", schedule.name, done.size(),
                                    2 * shape.microbatches * places));
  return makespan;
}

}  // namespace ddplab
