// See collective_probe.hpp.
#include "collective_probe.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "aggregate.hpp"

#include "ddplab/core/error.hpp"

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {

bool probes_one_group(const ClusterConfig& c) {
  return c.topology == "star" && c.nodes.empty() &&
         (c.devices_per_node == 1 || (c.nics == "per_device" && c.intra == "nvswitch"));
}

CollectiveProbes::CollectiveProbes(const std::vector<std::vector<int>>& group_of,
                                   const std::vector<std::size_t>& chain_of, int devices_per_node, bool one_group)
    : one_group_(one_group) {
  std::map<std::vector<int>, std::size_t> by_pattern;  // one_group: the set of each node pattern
  std::map<std::size_t, std::size_t> by_chain;         // else: the set of each chain
  for (std::size_t r = 0; r < group_of.size(); ++r) {
    const std::vector<int>& g = group_of[r];
    if (g.empty()) continue;
    std::size_t set = 0;
    if (one_group) {
      // Nodes numbered in the order the group first meets them: groups alike share nodes alike.
      std::vector<int> pattern;
      std::map<int, int> label;
      for (int m : g)
        pattern.push_back(label.try_emplace(m / devices_per_node, static_cast<int>(label.size())).first->second);
      const auto [it, fresh] = by_pattern.try_emplace(pattern, sets_.size());
      if (fresh) {
        sets_.emplace_back().groups.push_back(g);
        sets_.back().pattern = pattern;
      }
      set = it->second;
    } else {
      const auto [it, fresh] = by_chain.try_emplace(chain_of[r], sets_.size());
      if (fresh) sets_.emplace_back();
      set = it->second;
      sets_[set].groups.push_back(g);
    }
    Member& m = member_[static_cast<int>(r)];
    m.set = set, m.group = one_group ? 0 : sets_[set].groups.size() - 1, m.own = g;
    m.probed = sets_[set].groups[m.group] == g;
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i] == static_cast<int>(r)) m.index = i;
    auto& needed = sets_[set].needed;
    if (std::find(needed.begin(), needed.end(), m.index) == needed.end()) needed.push_back(m.index);
  }
  for (ProbeSet& s : sets_)
    for (const auto& g : s.groups)
      for (std::size_t i = 0; i < g.size(); ++i) s.index[g[i]] = i;
}

CollectiveProbes::Key CollectiveProbes::key(int rank, const Strategy& s, const PlanOp& op,
                                            const CollectiveCall& call) const {
  const ScheduleParams p = s.schedule_params(CommGroup::Data);
  return {member_.at(rank).set, p.world_size,    p.ranks_per_node, p.servers,
          op.schedule,          call.collective, call.type,        call.count};
}

void CollectiveProbes::add(int rank, const Strategy& s, const PlanOp& op, const CollectiveCall& call) {
  const auto [it, fresh] = entries_.try_emplace(key(rank, s, op, call));
  if (fresh) it->second.call = call;
}

void CollectiveProbes::run(const Where& where) {
  // The aggregated phases look routes up by a rank's index in its group: one Routes per group.
  std::map<std::vector<int>, std::pair<std::vector<sg4::Host*>, std::unique_ptr<Routes>>> routes_of;
  auto routes_for = [&](const std::vector<int>& group) -> Routes& {
    auto& [hosts, routes] = routes_of[group];
    if (!routes) {
      for (int r : group) hosts.push_back((*where.hosts)[static_cast<std::size_t>(r)]);
      routes = std::make_unique<Routes>(hosts);
    }
    return *routes;
  };
  for (auto& [k, e] : entries_) {
    const ProbeSet& set = sets_[k.set];
    const std::string memo = memo_path(where, k);
    if (!memo.empty() && load(memo, k, e)) continue;
    const ScheduleParams params{k.world, 0, k.ranks_per_node, k.servers, where.nccl};
    const bool aggregated = params.world_size > kProbeExactMaxRanks;
    const std::size_t bytes = elem_bytes(e.call.type);
    const std::uint64_t serialize_from = is_backend_native(k.schedule) ? where.serialize_from : 0;
    // One schedule serves every group (its ranks are group indices); phases keep per-replay state: one each.
    std::unique_ptr<Schedule> schedule;
    std::vector<std::unique_ptr<Phases>> phases;
    if (!aggregated)
      schedule = std::make_unique<Schedule>(schedule_for_call(e.call, k.schedule, params, where.native_as));
    std::vector<sg4::ActorPtr> actors;
    e.by_member.assign(set.groups.size(), {});
    for (std::size_t gi = 0; gi < set.groups.size(); ++gi) {
      const std::vector<int>& group = set.groups[gi];
      if (static_cast<int>(group.size()) != params.world_size)
        throw InternalError(fmt::format("simulator: a DP group of {} ranks probed with a schedule of {}", group.size(),
                                        params.world_size));
      if (aggregated)
        phases.push_back(std::make_unique<Phases>(phases_for_call(e.call, k.schedule, params, where.native_as)));
      const Phases* ph = aggregated ? phases.back().get() : nullptr;
      Routes* routes = aggregated ? &routes_for(group) : nullptr;
      e.by_member[gi].resize(group.size());
      for (std::size_t i = 0; i < group.size(); ++i) {
        const int r = group[i];
        ProbeOutcome& out = e.by_member[gi][i];
        actors.push_back(sg4::Actor::create(fmt::format("probe{}", r), (*where.hosts)[static_cast<std::size_t>(r)],
                                            [&, ph, routes, r, i, sched = schedule.get()] {
                                              RankMailboxes boxes(r);
                                              boxes.use_group(&group);
                                              const double start = sg4::Engine::get_clock();
                                              const int me = static_cast<int>(i);
                                              if (ph)
                                                replay_phases(*ph, me, bytes, boxes, out.tally, *routes);
                                              else
                                                replay_schedule(*sched, me, bytes, boxes, out.tally, serialize_from);
                                              out.seconds = sg4::Engine::get_clock() - start;
                                            }));
      }
    }
    for (const auto& a : actors) a->join();
    if (!memo.empty()) save(memo, k, e);
  }
}

std::string CollectiveProbes::memo_path(const Where& where, const Key& k) const {
  if (where.memo.empty() || !one_group_) return "";
  std::string id =
      fmt::format("{} {} {} {} {} {} {} {} {}:", where.native_as.name(), where.serialize_from, k.world,
                  k.ranks_per_node, k.servers, k.schedule, k.collective, static_cast<int>(k.type), k.count);
  for (int node : sets_[k.set].pattern) id += fmt::format(" {}", node);  // groups of one pattern run alike
  return fmt::format("{}/{:016x}.json", where.memo, std::hash<std::string>{}(id));
}

bool CollectiveProbes::load(const std::string& path, const Key& k, Entry& e) const {
  std::ifstream in(path);
  if (!in) return false;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  const ProbeSet& set = sets_[k.set];
  if (j.is_discarded() || !j.contains("members")) return false;
  e.by_member.assign(1, std::vector<ProbeOutcome>(set.groups.front().size()));
  for (std::size_t i : set.needed) {
    const auto it = j["members"].find(std::to_string(i));
    if (it == j["members"].end()) return false;
    ProbeOutcome& o = e.by_member[0][i];
    o.seconds = it->at("seconds").get<double>();
    o.tally.bytes = it->at("bytes").get<std::uint64_t>();
    o.tally.messages = it->at("messages").get<std::uint64_t>();
    for (const auto& [peer, bytes] : it->at("to_peer").get<std::vector<std::pair<std::size_t, std::uint64_t>>>())
      o.tally.to_peer[set.groups.front().at(peer)] = bytes;
  }
  return true;
}

void CollectiveProbes::save(const std::string& path, const Key& k, const Entry& e) const {
  const ProbeSet& set = sets_[k.set];
  nlohmann::json members = nlohmann::json::object();
  for (std::size_t i : set.needed) {
    const ProbeOutcome& o = e.by_member.at(0).at(i);
    std::vector<std::pair<std::size_t, std::uint64_t>> to_peer;
    for (const auto& [peer, bytes] : o.tally.to_peer) to_peer.emplace_back(set.index.at(peer), bytes);
    members[std::to_string(i)] = {
        {"seconds", o.seconds}, {"bytes", o.tally.bytes}, {"messages", o.tally.messages}, {"to_peer", to_peer}};
  }
  // Written whole, then renamed: a simulation running beside this one reads the old file or the new.
  const std::string tmp = fmt::format("{}.{}", path, ::getpid());
  {
    std::ofstream out(tmp);
    out << nlohmann::json{{"members", members}}.dump();
  }
  std::rename(tmp.c_str(), path.c_str());
}

ProbeOutcome CollectiveProbes::outcome(int rank, const Strategy& s, const PlanOp& op,
                                       const CollectiveCall& call) const {
  const auto it = entries_.find(key(rank, s, op, call));
  if (it == entries_.end()) throw InternalError("simulator: a DP collective call that was not probed");
  const Member& m = member_.at(rank);
  ProbeOutcome out = it->second.by_member.at(m.group).at(m.index);
  if (m.probed) return out;
  std::map<int, std::uint64_t> to_peer;  // the probed group's ranks -> the same places in rank's own group
  for (const auto& [peer, b] : out.tally.to_peer) to_peer[m.own[sets_[m.set].index.at(peer)]] += b;
  out.tally.to_peer = std::move(to_peer);
  return out;
}

}  // namespace ddplab::sim
