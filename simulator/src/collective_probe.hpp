// Internal: the probes of the probed replay (mode "probed", plan_replay.hpp). Each distinct DP collective
// call -- by schedule, collective, element type, count and where it runs -- is simulated once, alone on the
// platform, before the plans are replayed; a replayed rank then spends on each such call the time its own
// part took in the probe, and tallies what it sent there. At 1024 ranks the 240 buckets of GPT-2 XL come
// down to a few dozen probes.
//
// Where it runs: on a uniform star (every device its own NIC and NVSwitch port, no per-node overrides) two
// DP groups without a common host share no link that can bind, and two whose members share nodes alike run
// alike: one probe of one group serves every group of that node pattern. Elsewhere the probe runs every DP
// group of the chain (a pipeline stage) at once, as they run for real.
#pragma once
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <simgrid/s4u.hpp>

#include "ddplab/strategies/strategy.hpp"
#include "replay.hpp"

namespace ddplab::sim {

struct ProbeOutcome {
  double seconds = 0;  // from the probe's start, when every member started, to this rank's end
  SendTally tally;     // what this rank sent
};

// A uniform star, on which one group's probe stands for every group of its node pattern.
bool probes_one_group(const ClusterConfig& cluster);

// Largest group a probe replays message by message; above it, as the aggregated mode's phases (GPT-2 XL's
// 1024-rank --search: 55 s instead of 72 s, step times within 0.42% of message-by-message probes).
inline constexpr int kProbeExactMaxRanks = 16;

class CollectiveProbes {
 public:
  // group_of[r]: replayed rank r's DP group (global ranks; a rank's index in it is its rank in the call's
  // schedule), empty for the others; chain_of[r]: the chain r runs.
  CollectiveProbes(const std::vector<std::vector<int>>& group_of, const std::vector<std::size_t>& chain_of,
                   int devices_per_node, bool one_group);
  // A call of replayed rank `rank`'s plans over its DP group (op.group is not Tensor); s: the plan's strategy.
  void add(int rank, const Strategy& s, const PlanOp& op, const CollectiveCall& call);

  struct Where {
    const std::vector<simgrid::s4u::Host*>* hosts = nullptr;  // by rank
    NativeReplay native_as;                                   // what `native` replays as
    const NcclFabric* nccl = nullptr;
    std::uint64_t serialize_from = 0;  // native calls' exchanges take turns from this size (replay.hpp)
    std::string memo;  // SimOptions::probe_memo: outcomes kept from earlier simulations (one probed group only)
  };
  // Runs every probe, one after the other; call it from an actor (it waits for each probe's actors). A
  // group above kProbeExactMaxRanks replays as the aggregated mode's phases, else message by message.
  void run(const Where& where);
  // `rank`'s part in the probe of that call (run done), its peers those of its own group.
  ProbeOutcome outcome(int rank, const Strategy& s, const PlanOp& op, const CollectiveCall& call) const;
  std::size_t probes() const { return entries_.size(); }

 private:
  // The groups one probe runs at once.
  struct ProbeSet {
    std::vector<std::vector<int>> groups;
    std::unordered_map<int, std::size_t> index;  // global rank -> its index in its group (the probed ranks)
    std::vector<std::size_t> needed;             // one group: the indices whose outcomes replayed ranks take
    std::vector<int> pattern;                    // one group: its members' nodes, numbered as first met
  };
  struct Key {
    std::size_t set = 0;
    int world = 0, ranks_per_node = 0, servers = 0;
    std::string schedule;
    Collective collective = Collective::Allreduce;
    ElemType type = ElemType::F32;
    std::size_t count = 0;
    auto operator<=>(const Key&) const = default;
  };
  Key key(int rank, const Strategy& s, const PlanOp& op, const CollectiveCall& call) const;
  struct Entry {
    CollectiveCall call;
    std::vector<std::vector<ProbeOutcome>> by_member;  // [group][index]
  };
  struct Member {
    std::size_t set = 0, group = 0;  // the probe set and the group in it whose member stands for r
    std::size_t index = 0;           // r's index in its group
    std::vector<int> own;            // r's own group, for its peers
    bool probed = false;             // its own group is the one probed
  };
  // The memo (Where::memo): a probe's file, named by a hash of what identifies it; reads and writes the
  // outcomes of the set's needed members, peers by their index in the group.
  std::string memo_path(const Where& where, const Key& k) const;
  bool load(const std::string& path, const Key& k, Entry& e) const;
  void save(const std::string& path, const Key& k, const Entry& e) const;
  std::vector<ProbeSet> sets_;
  bool one_group_ = false;
  std::unordered_map<int, Member> member_;  // by replayed rank
  std::map<Key, Entry> entries_;
};

}  // namespace ddplab::sim
