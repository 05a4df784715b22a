#include "ddplab/runtime/schedule_executor.hpp"

#include <stdexcept>
#include <string>

namespace ddplab {

void ScheduleExecutor::run(const Schedule& s, float* buf) {
  const int me = comm_.rank();
  if (s.world_size != comm_.size())
    throw std::invalid_argument("schedule " + s.name + " built for " + std::to_string(s.world_size) +
                                " ranks, communicator has " + std::to_string(comm_.size()));
  int step_no = 0;
  for (const ScheduleStep& step : s.ranks[static_cast<std::size_t>(me)]) {
    // Receives land in scratch first: a reduce must not race with a send of the same range.
    std::size_t need = 0;
    for (const RecvOp& r : step.recvs) need += r.chunk.count;
    if (scratch_.size() < need) scratch_.resize(need);
    std::size_t at = 0;
    // The tag is the step number so that messages of consecutive steps between the same pair never match
    // the wrong receive, whatever order the transport delivers them in.
    for (const RecvOp& r : step.recvs) {
      comm_.irecv(scratch_.data() + at, r.chunk.count * sizeof(float), r.peer, step_no);
      at += r.chunk.count;
    }
    for (const SendOp& snd : step.sends) {
      comm_.isend(buf + snd.chunk.offset, snd.chunk.count * sizeof(float), snd.peer, step_no);
      bytes_to_peer_[snd.peer] += snd.chunk.count * sizeof(float);
    }
    comm_.wait_all();
    at = 0;
    for (const RecvOp& r : step.recvs) {
      float* dst = buf + r.chunk.offset;
      const float* src = scratch_.data() + at;
      if (r.mode == RecvMode::Reduce)
        for (std::size_t i = 0; i < r.chunk.count; ++i) dst[i] += src[i];
      else
        for (std::size_t i = 0; i < r.chunk.count; ++i) dst[i] = src[i];
      at += r.chunk.count;
    }
    ++step_no;
  }
}

std::uint64_t ScheduleExecutor::bytes_sent() const {
  std::uint64_t total = 0;
  for (const auto& [peer, bytes] : bytes_to_peer_) total += bytes;
  return total;
}

}  // namespace ddplab
