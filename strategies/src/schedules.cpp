// The schedule registry: one line per schedule.
#include <stdexcept>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

namespace {
Schedule build_ring(const ScheduleParams& p) { return ring_allreduce(p.world_size, p.count); }
}  // namespace

const std::vector<ScheduleInfo>& schedules() {
  static const std::vector<ScheduleInfo> all = {
      {"ring", "allreduce", "reduce-scatter then all-gather around a ring, 2(n-1) steps", build_ring},
  };
  return all;
}

std::vector<std::string> allreduce_schedule_names() {
  std::vector<std::string> names{"native"};
  for (const auto& s : schedules())
    if (s.collective == "allreduce") names.push_back(s.name);
  return names;
}

Schedule make_schedule(const std::string& name, const ScheduleParams& params, const std::string& collective) {
  if (params.world_size < 1) throw std::invalid_argument("schedule " + name + ": world size must be >= 1");
  std::string known;
  for (const auto& s : schedules()) {
    if (s.collective != collective) continue;
    if (s.name == name) return s.build(params);
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw std::invalid_argument("unknown " + collective + " schedule \"" + name + "\" (known: " + known + ")");
}

Schedule make_schedule(const std::string& name, int world_size, std::size_t count) {
  return make_schedule(name, ScheduleParams{world_size, count, 1});
}

}  // namespace ddplab
