#include "ddplab/core/trace.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

constexpr double kMicro = 1e6;  // the format's timestamps are microseconds

nlohmann::json meta_event(const char* what, int pid, int tid, nlohmann::json args) {
  nlohmann::json e = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

}  // namespace

nlohmann::json chrome_trace(const std::vector<TraceEvent>& events, const nlohmann::json& metadata) {
  // compute and comm always get threads 1 and 2, so every rank's tracks line up in the viewer.
  std::map<std::string, int> tids = {{"compute", 1}, {"comm", 2}};
  std::set<int> ranks;
  std::set<std::pair<int, std::string>> tracks;
  nlohmann::json out = nlohmann::json::array();
  for (const TraceEvent& ev : events) {
    auto [it, added] = tids.emplace(ev.track, static_cast<int>(tids.size()) + 1);
    ranks.insert(ev.rank);
    tracks.emplace(ev.rank, ev.track);
    nlohmann::json e = {{"name", ev.name},          {"cat", ev.track}, {"ph", "X"},        {"ts", ev.start_s * kMicro},
                        {"dur", ev.dur_s * kMicro}, {"pid", ev.rank},  {"tid", it->second}};
    if (!ev.args.is_null() && !ev.args.empty()) e["args"] = ev.args;
    out.push_back(std::move(e));
  }
  nlohmann::json meta = nlohmann::json::array();
  for (int r : ranks) {
    meta.push_back(meta_event("process_name", r, -1, {{"name", "rank " + std::to_string(r)}}));
    meta.push_back(meta_event("process_sort_index", r, -1, {{"sort_index", r}}));
  }
  for (const auto& [r, track] : tracks) {
    const int tid = tids.at(track);
    meta.push_back(meta_event("thread_name", r, tid, {{"name", track}}));
    meta.push_back(meta_event("thread_sort_index", r, tid, {{"sort_index", tid}}));
  }
  for (auto& e : out) meta.push_back(std::move(e));
  return {{"traceEvents", std::move(meta)}, {"displayTimeUnit", "ms"}, {"otherData", metadata}};
}

void write_chrome_trace(const std::string& path, const std::vector<TraceEvent>& events,
                        const nlohmann::json& metadata) {
  const std::string text = chrome_trace(events, metadata).dump();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw InputError("cannot write trace " + path + ": " + std::strerror(errno));
  f << text << '\n';
  f.flush();
  if (!f) throw InputError("cannot write trace " + path + ": write failed");
}

std::int64_t trace_step(const TraceEvent& e) {
  return e.args.is_object() && e.args.contains("step") && e.args["step"].is_number_integer()
             ? e.args["step"].get<std::int64_t>()
             : -1;
}

}  // namespace ddplab
