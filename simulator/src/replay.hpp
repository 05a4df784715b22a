// Internal: replay of a Schedule as SimGrid comms, message by message. Used on its own (simulate_schedule)
// and for every collective call of a step plan (plan_replay.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>
#include <map>
#include <unordered_map>

#include <simgrid/s4u.hpp>

#include "ddplab/simulator/simulator.hpp"

namespace ddplab::sim {

// What one rank sent, summed over every schedule it replayed.
struct SendTally {
  std::uint64_t bytes = 0, messages = 0;
  std::map<int, std::uint64_t> to_peer;  // dst -> bytes
};

// One rank's mailboxes, one per ordered pair ("r3->r4"), looked up once. Messages between a pair match in
// FIFO order and every rank replays the same schedules in the same order, so the k-th send of a pair meets
// the k-th receive of that pair, across schedules too.
class RankMailboxes {
 public:
  explicit RankMailboxes(int rank) : rank_(rank) {}
  simgrid::s4u::Mailbox* to(int dst);
  simgrid::s4u::Mailbox* from(int src);
  // Starts a message of `bytes` (a simulated size, no data) to `dst` and counts it in tally.to_peer and
  // tally.messages; tally.bytes is the caller's to add. wire_factor: bytes on the wire per byte counted.
  simgrid::s4u::CommPtr send(int dst, std::uint64_t bytes, SendTally& tally, double wire_factor = 1);
  // Starts the receive of a message from `src` of `wire` bytes on the wire into *sink.
  simgrid::s4u::CommPtr recv(int src, std::uint64_t wire, int** sink);
  // Peers of to, from, send and recv are indices into `ranks` until the next call (a collective over a
  // group: its schedule's ranks are the group's); nullptr: ranks themselves.
  void use_group(const std::vector<int>* ranks) { group_ = ranks; }
  int global(int peer) const { return group_ ? group_->at(static_cast<std::size_t>(peer)) : peer; }  // a peer's rank
  // The folded replay (plan_replay.hpp): only the ranks with replayed[r] run. A send to one that does not
  // goes to its host with no receiver; a receive from one is its message, started from its host now, as
  // it would send it in the same step of the same schedule (the replicas run alike). hosts: by rank.
  void fold(const std::vector<simgrid::s4u::Host*>* hosts, const std::vector<char>* replayed) {
    hosts_ = hosts;
    replayed_ = replayed;
  }

 private:
  bool mirrored(int g) const { return replayed_ && !(*replayed_)[static_cast<std::size_t>(g)]; }
  const std::vector<int>* group_ = nullptr;
  const std::vector<simgrid::s4u::Host*>* hosts_ = nullptr;
  const std::vector<char>* replayed_ = nullptr;
  int rank_;
  std::unordered_map<int, simgrid::s4u::Mailbox*> out_, in_;
};

// The sends a pipelined schedule (ScheduleTiming::pipeline_depth) leaves in flight: a step's sends are waited
// for only `depth` steps later, or at the end. Depth 1 waits for them in their own step.
class SendWindow {
 public:
  explicit SendWindow(int depth) : depth_(depth < 1 ? 1 : depth) {}
  bool lock_step() const { return depth_ == 1; }
  void add(std::vector<simgrid::s4u::CommPtr>&& sends);  // this step's; waits for the oldest beyond the depth
  void drain();                                          // waits for every send still in flight

 private:
  int depth_;
  std::deque<std::vector<simgrid::s4u::CommPtr>> steps_;
};

// Rank `rank`'s part of a schedule: per step, start every send and receive, then wait for all of them.
// A zero-byte chunk is still a message, so steps and messages match the runtime's. Returns bytes sent.
// A backend model's timing (Schedule::timing) delays the first step and each step's sends, and scales
// the bytes on the wire; bytes sent stay the payload's.
// serialize_from > 0: where a rank both sends to and receives from one peer in a step, messages of at
// least that many bytes each, the two take turns, the lower rank's first. That is Open MPI's TCP transport
// above its eager limit: a message waits for the receiver's go-ahead, which queues behind the receiver's
// own outgoing data on the one connection of the pair (docs/testbed.md). The runtime's own
// schedules cut their messages into pieces and do not suffer it; Open MPI's native collectives do.
std::uint64_t replay_schedule(const Schedule& s, int rank, std::size_t elem_bytes, RankMailboxes& boxes,
                              SendTally& tally, std::uint64_t serialize_from = 0);

// True when every rank plays the same part: as many steps each, and in every step as many receives as
// sends, at least one (a ring, halving-doubling on a power of two). Then a rank's peers reach each step
// when it does, if their times match, and the folded replay can mirror them (plan_replay.hpp). A tree,
// whose leaves only send, or a rank that idles a step, is not.
bool lockstep_symmetric(const Schedule& s);

// Throws InternalError when the schedule cannot run: peers out of range, a rank sending to
// itself, or sends and receives between a pair that do not match in number (it would deadlock).
void validate_schedule(const Schedule& schedule);

// Builds the engine and star platform and replays the schedule alone (one actor per rank); wall_s left 0.
// Creates SimGrid's engine: call it at most once per process, i.e. inside run_in_child.
SimStepResult run_schedule_simulation(const ClusterConfig& cluster, const Schedule& schedule, std::size_t elem_bytes,
                                      const SimOptions& options);

}  // namespace ddplab::sim
