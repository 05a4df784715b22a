// `ddplab runs`: list, show, delete and prune the runs of a results store (core/run_admin.hpp, report.hpp).
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "validators.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/report.hpp"
#include "ddplab/core/run_admin.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab::cli {

namespace {
void require_store(const std::string& db) {
  if (!std::ifstream(db)) throw InputError(db + ": no results store here (run `ddplab run` or `ddplab demo` first)");
}

std::string describe(const RunRow& r) {
  return fmt::format("run {} ({} / {}, {} ranks, {}, {}, started {})", r.id, r.info.scenario, r.info.strategy,
                     r.info.world_size, r.info.source, r.status, r.started_at);
}
}  // namespace

void add_runs(CLI::App& app) {
  struct Args {
    std::string db = kDefaultDb;
    std::vector<std::string> status;
    std::int64_t id = 0;
    std::vector<std::int64_t> ids;
    bool dry_run = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("runs", "List, show, delete or prune the runs of a results store");
  cmd->require_subcommand(1);
  const std::string statuses = fmt::format("{}", choice_names<RunStatus>());

  auto* list =
      cmd->add_subcommand("list", "One line per run: id, status, scenario, strategy, source, world, steps, times");
  list->add_option("--db", a->db, "Results store (SQLite)")->capture_default_str();
  list->add_option("--status", a->status, "Only runs with these statuses (" + statuses + ")")->delimiter(',');
  list->callback([a] {
    require_store(a->db);
    const Store store(a->db, Store::Access::ReadOnly);
    std::vector<RunSummary> rows = store.summaries();
    if (!a->status.empty()) {
      std::set<std::int64_t> wanted;
      for (const RunRow& r : runs_with_status(store, a->status)) wanted.insert(r.id);
      std::erase_if(rows, [&](const RunSummary& s) { return !wanted.count(s.run.id); });
    }
    const std::string text = runs_table(rows);
    std::fwrite(text.data(), 1, text.size(), stdout);
  });

  auto* show =
      cmd->add_subcommand("show", "One run in full: status and times, what is stored, summary, host and config");
  show->add_option("--db", a->db, "Results store (SQLite)")->capture_default_str();
  show->add_option("ID", a->id, "Run id (the id column of `ddplab runs list`)")->required()->check(positive_int());
  show->callback([a] {
    require_store(a->db);
    const std::string text = run_details(Store(a->db, Store::Access::ReadOnly), a->id);
    std::fwrite(text.data(), 1, text.size(), stdout);
  });

  auto* del =
      cmd->add_subcommand("delete", "Delete runs with their steps, evaluations and timelines, in one transaction");
  del->add_option("--db", a->db, "Results store (SQLite)")->capture_default_str();
  del->add_option("ID", a->ids, "Run ids; a run still marked running is refused, and then nothing is deleted")
      ->required()
      ->check(positive_int());
  del->callback([a] {
    require_store(a->db);
    Store store(a->db);
    for (const RunRow& r : delete_runs_checked(store, a->ids)) std::printf("deleted %s\n", describe(r).c_str());
  });

  auto* prune = cmd->add_subcommand("prune", "Delete every run with one of the given statuses, in one transaction");
  prune->add_option("--db", a->db, "Results store (SQLite)")->capture_default_str();
  prune->add_option("--status", a->status, "Statuses to delete (" + statuses + "; running is refused)")
      ->delimiter(',')
      ->required();
  prune->add_flag("--dry-run", a->dry_run, "Print what would be deleted and delete nothing");
  prune->callback([a] {
    require_store(a->db);
    Store store(a->db);
    std::vector<std::int64_t> ids;
    const std::vector<RunRow> rows = runs_with_status(store, a->status);
    for (const RunRow& r : rows) ids.push_back(r.id);
    if (ids.empty()) {
      std::printf("no runs with status %s in %s\n", fmt::format("{}", fmt::join(a->status, " or ")).c_str(),
                  a->db.c_str());
      return;
    }
    if (a->dry_run) {
      for (const RunRow& r : rows) std::printf("would delete %s\n", describe(r).c_str());
      return;
    }
    for (const RunRow& r : delete_runs_checked(store, ids)) std::printf("deleted %s\n", describe(r).c_str());
  });
}

}  // namespace ddplab::cli
