// Executes a collective Schedule from strategies/ over a Communicator's point-to-point operations,
// and records the bytes this rank sent to each peer (the contract the simulator must match).
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

class ScheduleExecutor {
 public:
  explicit ScheduleExecutor(Communicator& comm) : comm_(comm) {}
  // In place over buf (schedule.count elements of `type`). Reductions are sums in that type.
  void run(const Schedule& schedule, void* buf, ElemType type = ElemType::F32);
  const std::map<int, std::uint64_t>& bytes_to_peer() const { return bytes_to_peer_; }
  std::uint64_t bytes_sent() const;
  void reset_counters() { bytes_to_peer_.clear(); }

 private:
  Communicator& comm_;
  std::vector<unsigned char> scratch_;
  std::map<int, std::uint64_t> bytes_to_peer_;
};

}  // namespace ddplab
