// Collective schedules: the per-rank steps of one collective algorithm over a buffer of `count` elements.
// Pure data: the runtime executes it over a Communicator, the simulator as SimGrid comms, so both move
// exactly the same bytes between the same ranks.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace ddplab {

// A contiguous range of elements of the collective's buffer.
struct Chunk {
  std::size_t offset = 0;
  std::size_t count = 0;
  bool operator==(const Chunk&) const = default;
};

// [offset, count) of chunk i when `count` elements are split into `parts` near-equal chunks
// (the first count % parts chunks get one element more).
Chunk chunk_of(std::size_t count, int parts, int i);

enum class RecvMode { Reduce, Copy };  // add into the buffer, or overwrite it

struct SendOp {
  int peer;
  Chunk chunk;
};
struct RecvOp {
  int peer;
  Chunk chunk;
  RecvMode mode;
};

// One step of a rank: all sends and receives may be in flight together; the step ends when all
// complete, and reductions are applied then. Steps of a rank run in order.
// Rules every schedule keeps (the executors and tests rely on them): all ranks have the same number of
// steps (idle ranks get empty steps), a message of step k is received in step k of the peer, and there is
// at most one send per (rank, peer) per step.
struct ScheduleStep {
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
};

struct Schedule {
  std::string name;        // "ring", ...
  std::string collective;  // "allreduce", "reduce_scatter", "all_gather"
  int world_size = 1;
  std::size_t count = 0;   // elements
  std::vector<std::vector<ScheduleStep>> ranks;  // ranks[r] = the steps of rank r

  // Bytes rank r sends for elements of `elem_bytes` bytes.
  std::size_t bytes_sent(int rank, std::size_t elem_bytes) const;
};

// What a schedule is built for. Shards: for reduce_scatter and all_gather, rank r owns
// chunk_of(count, world_size, r) (the result of reduce_scatter, the input of all_gather).
struct ScheduleParams {
  int world_size = 1;
  std::size_t count = 0;      // elements
  int ranks_per_node = 1;     // consecutive ranks share a node (hierarchical schedules); divides world_size or not
};

// Ring allreduce: n-1 reduce-scatter steps then n-1 all-gather steps between neighbours,
// each moving one of n chunks. Any world size and any count (chunks may be empty).
Schedule ring_allreduce(int world_size, std::size_t count);

// The registered schedules. Adding one = one file defining its builder + one line in schedules.cpp + one test.
struct ScheduleInfo {
  std::string name;        // "ring"
  std::string collective;  // "allreduce" | "reduce_scatter" | "all_gather"
  std::string summary;     // one line for --help and docs
  Schedule (*build)(const ScheduleParams&);
};
const std::vector<ScheduleInfo>& schedules();
// The names of the allreduce schedules plus "native" (the backend's own collective, not a Schedule).
std::vector<std::string> allreduce_schedule_names();

// Throws std::invalid_argument naming the known schedules when `name` is not a registered one
// (or not of the given collective).
Schedule make_schedule(const std::string& name, const ScheduleParams& params, const std::string& collective = "allreduce");
Schedule make_schedule(const std::string& name, int world_size, std::size_t count);

}  // namespace ddplab
