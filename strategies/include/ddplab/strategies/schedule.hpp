// Collective schedules: the per-rank steps of one collective algorithm over a buffer of `count` elements.
// Pure data: the runtime executes it over a Communicator, the simulator as SimGrid comms, so both move
// exactly the same bytes between the same ranks.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/choices.hpp"

namespace ddplab {

// A contiguous range of elements of the collective's buffer.
struct Chunk {
  std::size_t offset = 0;
  std::size_t count = 0;
  bool operator==(const Chunk&) const = default;
};

// [offset, count) of chunk i when `count` elements are split into `parts` near-equal chunks
// (the first count % parts chunks get one element more). Inline: the CUDA plugin's NCCL communicator
// uses it and links no strategies library.
inline Chunk chunk_of(std::size_t count, int parts, int i) {
  const std::size_t p = static_cast<std::size_t>(parts), idx = static_cast<std::size_t>(i);
  const std::size_t base = count / p, extra = count % p;
  return {idx * base + (idx < extra ? idx : extra), base + (idx < extra ? 1 : 0)};
}

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

// Costs a model of a backend's own collective (nccl_model.hpp) adds to its messages' time on the links: a
// protocol's fixed start-up, its per-hop latency beyond the wire's, and the bytes it puts on the wire per
// byte of payload (LL sends a 4-byte flag with every 4 bytes of data). The runtime's schedules have none.
struct ScheduleTiming {
  double start_s = 0;      // once, before the first step
  double intra_hop_s = 0;  // before each send to a rank on the same node
  double inter_hop_s = 0;  // before each send to a rank on another node
  double wire_factor = 1;  // wire bytes per payload byte
  int ranks_per_node = 1;  // which sends cross nodes
  // Steps whose sends may be in flight at once (NCCL's buffer slots): a step waits for its receives, and
  // for its own sends only `pipeline_depth` steps later. 1 = lock-step, as the runtime's schedules run.
  int pipeline_depth = 1;
  std::string protocol;  // "LL" | "LL128" | "Simple"; "" = none
  bool operator==(const ScheduleTiming&) const = default;
  // The delay before a step of `rank` whose sends go to `peers`: the slowest hop's.
  template <class Peers>
  double step_delay(int rank, const Peers& peers) const {
    double d = 0;
    for (const auto& p : peers) {
      const bool inter = p.peer / ranks_per_node != rank / ranks_per_node;
      d = d > (inter ? inter_hop_s : intra_hop_s) ? d : (inter ? inter_hop_s : intra_hop_s);
    }
    return d;
  }
};

struct Schedule {
  std::string name;  // "ring", ...
  Collective collective = Collective::Allreduce;
  int world_size = 1;
  std::size_t count = 0;                         // elements
  std::vector<std::vector<ScheduleStep>> ranks;  // ranks[r] = the steps of rank r
  ScheduleTiming timing;                         // a backend model's protocol costs (none for the runtime's schedules)

  // Bytes rank r sends for elements of `elem_bytes` bytes.
  std::size_t bytes_sent(int rank, std::size_t elem_bytes) const;
};

// What a schedule is built for. Shards: for reduce_scatter and all_gather, rank r owns
// chunk_of(count, world_size, r) (the result of reduce_scatter, the input of all_gather).
struct NcclFabric;  // nccl_model.hpp
struct ScheduleParams {
  int world_size = 1;
  std::size_t count = 0;   // elements
  int ranks_per_node = 1;  // consecutive ranks share a node (hierarchical schedules); divides world_size or not
  int servers = 0;         // parameter server schedules: dedicated server ranks (0 = every rank serves a shard)
  const NcclFabric* nccl = nullptr;  // the simulator's `native` on NCCL: the fabric NCCL's choice depends on
};

// Who serves what in a parameter server. With S dedicated servers they are the last S ranks and the first
// n - S ranks are the workers; with S = 0 every rank is a worker and rank r serves shard r (co-located).
// Server s owns shard chunk_of(count, number(), s) of every buffer.
struct PsLayout {
  int world_size = 1;
  int servers = 0;
  int number() const { return servers > 0 ? servers : world_size; }  // shards (= server count)
  int workers() const { return servers > 0 ? world_size - servers : world_size; }
  int server_rank(int s) const { return servers > 0 ? world_size - servers + s : s; }
  int server_index(int rank) const;  // the shard rank serves, or -1
  bool is_worker(int rank) const { return rank < workers(); }
};

// Ring allreduce: n-1 reduce-scatter steps then n-1 all-gather steps between neighbours,
// each moving one of n chunks. Any world size and any count (chunks may be empty).
Schedule ring_allreduce(int world_size, std::size_t count);

// Rabenseifner's recursive halving / doubling allreduce: 2 log2 p steps (p = largest power of two <= n),
// 2 more when n is not a power of two (the extra ranks fold into a partner before and are served after).
Schedule halving_doubling_allreduce(int world_size, std::size_t count);
Schedule recursive_doubling_allreduce(int world_size, std::size_t count);
// The schedule a backend's own collective runs (native.cpp), for the simulator to replay `native` with:
// on transport "mpi", Open MPI 4.1's fixed choice of allreduce algorithm by world size and buffer bytes
// (ring, recursive_doubling or halving_doubling); the ring otherwise (Open MPI's other collectives are not
// modelled; NCCL's choice needs the fabric: schedule_for_call builds it from ScheduleParams::nccl).
std::string native_schedule(Transport transport, Collective collective, int world_size, std::size_t count,
                            std::size_t elem_bytes);

// NCCL-style double binary tree: two complementary trees, each reducing then broadcasting half the buffer,
// pipelined in `pipeline_chunks` chunks per half (0: chosen from count, 32Ki-element chunks, 1 to 8).
Schedule double_binary_tree_allreduce(int world_size, std::size_t count, int pipeline_chunks = 0);
// Intra-node ring reduce-scatter, cross-node ring allreduce per chunk, intra-node ring all-gather, with
// `ranks_per_node` consecutive ranks per node (the last node may have fewer).
Schedule hierarchical_allreduce(int world_size, std::size_t count, int ranks_per_node);
// All-to-all reduce-scatter then all-gather: 2 steps, n-1 messages in flight per rank per step.
Schedule direct_allreduce(int world_size, std::size_t count);
// Ring reduce-scatter (rank r ends with the sum of chunk_of(count, n, r); the rest of its buffer is
// unspecified) and ring all-gather (rank r starts with chunk r), n-1 steps each.
Schedule ring_reduce_scatter(int world_size, std::size_t count);
Schedule ring_all_gather(int world_size, std::size_t count);
// Parameter server, one step each (PsLayout{world_size, servers}). ps_push: every worker sends shard s of
// its buffer to server s, which adds them into its own shard (in worker order; a dedicated server's shard
// must be zero before); ps_pull: server s sends its shard to every worker, which copies it.
Schedule ps_push(int world_size, std::size_t count, int servers);
Schedule ps_pull(int world_size, std::size_t count, int servers);

// The registered schedules. Adding one = one file defining its builder + one line in schedules.cpp + one test.
struct ScheduleInfo {
  std::string name;                                    // "ring"
  Collective collective;                               // allreduce, reduce_scatter, all_gather, push or pull
  std::string summary;                                 // one line for --help and docs
  Schedule (*build)(const ScheduleParams&) = nullptr;  // null for the backend's own collective
  // Capability: the backend's own collective (ncclAllReduce, MPI_Allreduce, ...), `native`. It has no
  // Schedule in the runtime; the simulator replays it as a NativeReplay (plan.hpp) says.
  bool backend_own = false;
};
const std::vector<ScheduleInfo>& schedules();
// True for a registered schedule of that name and collective (`native` is one of each it covers).
bool has_schedule(const std::string& name, Collective collective);
// True when `name` is the backend's own collective (ScheduleInfo::backend_own).
bool is_backend_native(const std::string& name);
// The backend's own collective a stored bench row's schedule label names ("native", "native (in-place)").
std::optional<std::string> backend_native_base(const std::string& label);
// The names of the allreduce schedules, `native` first.
std::vector<std::string> allreduce_schedule_names();

// Throws InputError naming the known schedules when `name` is not a registered one (or not of the given
// collective), and for `native`, which has no Schedule of its own (resolve it first: schedule_for_call).
Schedule make_schedule(const std::string& name, const ScheduleParams& params,
                       Collective collective = Collective::Allreduce);
Schedule make_schedule(const std::string& name, int world_size, std::size_t count);

}  // namespace ddplab
