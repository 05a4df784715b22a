// See flight.hpp.
#include "ddplab/core/flight.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"

namespace ddplab {

std::string flight_to_json(const std::vector<FlightRecord>& records) {
  nlohmann::json out = nlohmann::json::array();
  for (const FlightRecord& r : records)
    out.push_back({{"rank", r.rank},
                   {"seq", r.seq},
                   {"step", r.step},
                   {"op", r.op},
                   {"call", r.call},
                   {"bytes", r.bytes},
                   {"start_s", r.start_s},
                   {"end_s", r.in_flight() ? nlohmann::json(nullptr) : nlohmann::json(r.end_s)},
                   {"failed", r.failed}});
  return out.dump();
}

std::vector<FlightRecord> flight_from_json(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) throw InputError("a flight recorder dump must be a JSON array");
  std::vector<FlightRecord> out;
  try {
    for (const auto& e : j) {
      FlightRecord r;
      r.rank = e.at("rank").get<int>();
      r.seq = e.at("seq").get<std::int64_t>();
      r.step = e.at("step").get<std::int64_t>();
      r.op = e.at("op").get<std::string>();
      r.call = e.at("call").get<std::string>();
      r.bytes = e.at("bytes").get<std::int64_t>();
      r.start_s = e.at("start_s").get<double>();
      r.end_s = e.at("end_s").is_null() ? -1 : e.at("end_s").get<double>();
      r.failed = e.value("failed", false);
      out.push_back(std::move(r));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("flight recorder dump, record {}: {}", out.size(), e.what()));
  }
  return out;
}

namespace {
std::string describe(const FlightRecord& r, double t0) {
  std::string s = r.call;
  if (!r.op.empty()) s += " (" + r.op + ")";
  if (r.step >= 0) s += fmt::format(", step {}", r.step);
  if (r.in_flight())
    s += fmt::format(", IN FLIGHT since {:+.3f} s", r.start_s - t0);
  else if (r.failed)
    s += fmt::format(", {:+.3f} s, FAILED after {:.3f} ms", r.start_s - t0, (r.end_s - r.start_s) * 1e3);
  else
    s += fmt::format(", {:+.3f} s for {:.3f} ms", r.start_s - t0, (r.end_s - r.start_s) * 1e3);
  return s;
}
}  // namespace

std::string flight_report(const std::vector<FlightRecord>& records, int world_size) {
  std::map<int, std::map<std::int64_t, const FlightRecord*>> by_rank;
  double t0 = 0;
  for (const FlightRecord& r : records) {
    by_rank[r.rank][r.seq] = &r;
    if (t0 == 0 || r.start_s < t0) t0 = r.start_s;
  }
  std::string out = fmt::format("flight recorder: {} calls from {} of {} ranks (times from the earliest kept call)\n",
                                records.size(), by_rank.size(), world_size);
  std::vector<int> silent;
  for (int r = 0; r < world_size; ++r)
    if (!by_rank.count(r)) silent.push_back(r);
  if (by_rank.empty()) return out + "no rank left a record\n";
  // The calls every rank still holds: from the latest first kept call to the latest call of any rank.
  std::int64_t from = 0, to = 0;
  for (const auto& [rank, calls] : by_rank) {
    from = std::max(from, calls.begin()->first);
    to = std::max(to, calls.rbegin()->first);
  }
  std::optional<std::int64_t> parted;
  std::string why;
  // At each number, in this order: a rank that never made the call, ranks that made different calls, a call
  // that did not complete.
  for (std::int64_t seq = from; seq <= to && !parted; ++seq) {
    std::vector<const FlightRecord*> at;
    for (const auto& [rank, calls] : by_rank) {
      const auto it = calls.find(seq);
      if (it == calls.end()) {
        parted = seq, why = fmt::format("rank {} never reached call #{}", rank, seq);
        break;
      }
      at.push_back(it->second);
    }
    for (std::size_t i = 1; !parted && i < at.size(); ++i)
      if (at[i]->call != at[0]->call || at[i]->step != at[0]->step)
        parted = seq, why = fmt::format("ranks {} and {} made different calls at #{}", at[0]->rank, at[i]->rank, seq);
    // Unfinished calls. When every rank that dumped is in one, none is more to blame than the others.
    std::vector<std::string> stuck;
    for (const FlightRecord* r : at)
      if (r->in_flight() || r->failed)
        stuck.push_back(fmt::format("rank {} ({})", r->rank, r->failed ? "failed" : "in flight"));
    if (!parted && !stuck.empty())
      parted = seq,
      why = stuck.size() == at.size() && at.size() > 1
                ? fmt::format("call #{} completed on no rank that dumped: {}", seq, fmt::join(stuck, ", "))
                : fmt::format("call #{} did not complete on {}", seq, fmt::join(stuck, ", "));
  }
  // The last calls before the parting (or the last ones), every rank's side by side.
  const std::int64_t last = parted ? *parted : to;
  for (std::int64_t seq = std::max(from, last - 4); seq <= last; ++seq) {
    out += fmt::format("#{}\n", seq);
    for (const auto& [rank, calls] : by_rank) {
      const auto it = calls.find(seq);
      out += fmt::format("  rank {}: {}\n", rank, it == calls.end() ? std::string("-") : describe(*it->second, t0));
    }
  }
  for (int r : silent) out += fmt::format("rank {} left no record (stopped, hung or dead before it could dump)\n", r);
  if (parted)
    out += fmt::format("first divergence at call #{}: {}\n", *parted, why);
  else if (!silent.empty())
    out += "no divergence among the ranks that dumped; the others left no record\n";
  else
    out += "no divergence: every rank completed the same calls\n";
  return out;
}

}  // namespace ddplab
