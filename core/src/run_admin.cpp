// See run_admin.hpp.
#include "ddplab/core/run_admin.hpp"

#include <algorithm>
#include <filesystem>
#include <cstring>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ddplab/core/error.hpp"

namespace ddplab {

std::vector<RunRow> runs_with_status(const Store& store, const std::vector<std::string>& statuses) {
  std::set<RunStatus> wanted;
  for (const std::string& s : statuses) {
    const auto status = choice_from<RunStatus>(s);
    if (!status)
      throw InputError(fmt::format("unknown run status \"{}\" (one of: {})", s, choice_names<RunStatus>()), "--status");
    wanted.insert(*status);
  }
  std::vector<RunRow> out;
  for (RunRow& r : store.runs())
    if (wanted.count(r.status)) out.push_back(std::move(r));
  return out;
}

std::vector<RunRow> delete_runs_checked(Store& store, const std::vector<std::int64_t>& ids) {
  std::vector<RunRow> rows;
  std::vector<std::int64_t> missing, running;
  for (std::int64_t id : std::set<std::int64_t>(ids.begin(), ids.end())) {
    std::optional<RunRow> row = store.run(id);
    if (!row)
      missing.push_back(id);
    else if (row->status == RunStatus::Running)
      running.push_back(id);
    else
      rows.push_back(std::move(*row));
  }
  std::vector<std::string> why;
  if (!missing.empty()) why.push_back(fmt::format("no run {} in {}", fmt::join(missing, ", "), store.path()));
  if (!running.empty())
    why.push_back(fmt::format("run {} still marked running (its launcher may be writing it; stop it first)",
                              fmt::join(running, ", ")));
  if (!why.empty()) throw InputError(fmt::format("nothing deleted: {}", fmt::join(why, "; ")));
  std::vector<std::int64_t> checked;
  std::vector<std::string> folders;  // the runs' checkpoints, removed once their rows are gone
  for (const RunRow& r : rows) {
    checked.push_back(r.id);
    for (const CheckpointRow& c : store.checkpoints(r.id)) folders.push_back(c.path);
  }
  if (!checked.empty()) store.delete_runs(checked);
  for (const std::string& f : folders) {
    std::error_code ec;
    std::filesystem::remove_all(f, ec);
    // The run's folder (run-ID) too, once its last step's is gone.
    std::filesystem::remove(std::filesystem::path(f).parent_path(), ec);
  }
  return rows;
}

std::string job_failure_reason(const JobOutcome& outcome) {
  std::vector<std::string> notes;
  for (const std::string& f : outcome.failures)
    if (std::find(notes.begin(), notes.end(), f) == notes.end()) notes.push_back(f);
  if (!notes.empty()) return fmt::format("{}", fmt::join(notes, "; "));
  if (!outcome.signal) return "";
  const char* abbrev = sigabbrev_np(outcome.signal);
  return (abbrev ? std::string("SIG") + abbrev : std::string(strsignal(outcome.signal))) + " to the launcher";
}

JobEndRecord record_job_end(Store& store, const std::vector<RunRow>& launch_runs, const JobOutcome& outcome) {
  JobEndRecord out;
  const std::string reason = job_failure_reason(outcome);
  // The run the job was in when it ended: the last one not completed.
  const auto unfinished = std::find_if(launch_runs.rbegin(), launch_runs.rend(),
                                       [](const RunRow& r) { return r.status != RunStatus::Completed; });
  std::vector<FlightRecord> calls;
  for (const std::string& dump : outcome.flights) try {
      for (FlightRecord& c : flight_from_json(dump)) calls.push_back(std::move(c));
    } catch (const InputError& e) {
      out.unreadable.push_back(e.what());
    }
  if (unfinished != launch_runs.rend() && !calls.empty()) {
    out.flight_run = unfinished->id;
    store.add_flight(out.flight_run, calls);
  }
  const RunStatus status = outcome.signal ? RunStatus::Interrupted : RunStatus::Failed;
  for (const RunRow& r : launch_runs)
    if (r.status == RunStatus::Running || r.status == RunStatus::Abandoned) {
      store.finish_run(r.id, status, reason);
      out.marked.push_back(r);
    } else if (r.status == RunStatus::Interrupted) {
      out.stopped.push_back(r);
    } else if (r.status == RunStatus::Failed && !outcome.failures.empty()) {
      store.set_run_reason(r.id, reason);
    }
  return out;
}

}  // namespace ddplab
