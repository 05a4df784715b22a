#include "ddplab/runtime/schedule_executor.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/half.hpp"

namespace ddplab {
namespace {

bool overlap(const Chunk& a, const Chunk& b) {
  return a.count > 0 && b.count > 0 && a.offset < b.offset + b.count && b.offset < a.offset + a.count;
}

// A copy that no send and no other receive of the step touches can land in the buffer itself: nothing
// reads or writes that range during the step, so the result is the same bit for bit, one memcpy cheaper
// (the all-gather half of ring and halving-doubling, the broadcast half of the trees).
bool receives_in_place(const ScheduleStep& step, std::size_t i) {
  const RecvOp& r = step.recvs[i];
  if (r.mode != RecvMode::Copy) return false;
  for (const SendOp& s : step.sends)
    if (overlap(r.chunk, s.chunk)) return false;
  for (std::size_t j = 0; j < step.recvs.size(); ++j)
    if (j != i && overlap(r.chunk, step.recvs[j].chunk)) return false;
  return true;
}

}  // namespace

void ScheduleExecutor::run(const Schedule& s, void* buffer, ElemType type) {
  const int me = comm_.rank();
  if (s.world_size != comm_.size())
    throw InternalError("schedule " + s.name + " built for " + std::to_string(s.world_size) +
                        " ranks, communicator has " + std::to_string(comm_.size()));
  const std::size_t eb = elem_bytes(type);
  auto* buf = static_cast<unsigned char*>(buffer);
  ChunkMemory* device = comm_.chunk_memory();  // null: host memory
  if (device) device->begin(s.name + " " + to_string(s.collective));
  std::vector<bool> in_place;
  int step_no = 0;
  for (const ScheduleStep& step : s.ranks[static_cast<std::size_t>(me)]) {
    // Other receives land in scratch first: a reduce must not race with a send of the same range.
    in_place.assign(step.recvs.size(), false);
    std::size_t need = 0;
    for (std::size_t i = 0; i < step.recvs.size(); ++i) {
      in_place[i] = receives_in_place(step, i);
      if (!in_place[i]) need += step.recvs[i].chunk.count * eb;
    }
    unsigned char* scratch = nullptr;
    if (device) {
      scratch = device->scratch(need);
    } else {
      if (scratch_.size() < need) scratch_.resize(need);
      scratch = scratch_.data();
    }
    std::size_t at = 0;
    // The tag is the step number so that messages of consecutive steps between the same pair never match
    // the wrong receive, whatever order the transport delivers them in.
    for (std::size_t i = 0; i < step.recvs.size(); ++i) {
      const RecvOp& r = step.recvs[i];
      unsigned char* dst = in_place[i] ? buf + r.chunk.offset * eb : scratch + at;
      comm_.irecv(dst, r.chunk.count * eb, r.peer, step_no);
      if (!in_place[i]) at += r.chunk.count * eb;
    }
    for (const SendOp& snd : step.sends) {
      comm_.isend(buf + snd.chunk.offset * eb, snd.chunk.count * eb, snd.peer, step_no);
      bytes_to_peer_[snd.peer] += snd.chunk.count * eb;
    }
    comm_.wait_all();
    // In the schedule's receive order, so every element sees the same additions in the same order.
    at = 0;
    for (std::size_t i = 0; i < step.recvs.size(); ++i) {
      if (in_place[i]) continue;
      const RecvOp& r = step.recvs[i];
      unsigned char* dst = buf + r.chunk.offset * eb;
      if (device && r.mode == RecvMode::Reduce)
        device->reduce(type, dst, scratch + at, r.chunk.count);
      else if (device)
        device->copy(dst, scratch + at, r.chunk.count * eb);
      else if (r.mode == RecvMode::Reduce)
        sum_into(type, dst, scratch + at, r.chunk.count);
      else
        std::memcpy(dst, scratch + at, r.chunk.count * eb);
      at += r.chunk.count * eb;
    }
    if (device) device->end_step();
    ++step_no;
  }
}

std::uint64_t ScheduleExecutor::bytes_sent() const {
  std::uint64_t total = 0;
  for (const auto& [peer, bytes] : bytes_to_peer_) total += bytes;
  return total;
}

}  // namespace ddplab
