#include "ddplab/runtime/schedule_executor.hpp"

#include <cstring>
#include <stdexcept>

#include "ddplab/strategies/half.hpp"
#include <string>

namespace ddplab {

void ScheduleExecutor::run(const Schedule& s, void* buffer, ElemType type) {
  const int me = comm_.rank();
  if (s.world_size != comm_.size())
    throw std::invalid_argument("schedule " + s.name + " built for " + std::to_string(s.world_size) +
                                " ranks, communicator has " + std::to_string(comm_.size()));
  const std::size_t eb = elem_bytes(type);
  auto* buf = static_cast<unsigned char*>(buffer);
  int step_no = 0;
  for (const ScheduleStep& step : s.ranks[static_cast<std::size_t>(me)]) {
    // Receives land in scratch first: a reduce must not race with a send of the same range.
    std::size_t need = 0;
    for (const RecvOp& r : step.recvs) need += r.chunk.count * eb;
    if (scratch_.size() < need) scratch_.resize(need);
    std::size_t at = 0;
    // The tag is the step number so that messages of consecutive steps between the same pair never match
    // the wrong receive, whatever order the transport delivers them in.
    for (const RecvOp& r : step.recvs) {
      comm_.irecv(scratch_.data() + at, r.chunk.count * eb, r.peer, step_no);
      at += r.chunk.count * eb;
    }
    for (const SendOp& snd : step.sends) {
      comm_.isend(buf + snd.chunk.offset * eb, snd.chunk.count * eb, snd.peer, step_no);
      bytes_to_peer_[snd.peer] += snd.chunk.count * eb;
    }
    comm_.wait_all();
    at = 0;
    for (const RecvOp& r : step.recvs) {
      unsigned char* dst = buf + r.chunk.offset * eb;
      if (r.mode == RecvMode::Reduce)
        sum_into(type, dst, scratch_.data() + at, r.chunk.count);
      else
        std::memcpy(dst, scratch_.data() + at, r.chunk.count * eb);
      at += r.chunk.count * eb;
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
