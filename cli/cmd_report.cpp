// `ddplab report`: compare the runs in a results store, or export them.
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "validators.hpp"
#include "ddplab/core/class_metrics.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/flight.hpp"
#include "ddplab/core/rank_report.hpp"
#include "ddplab/core/report.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab::cli {

void add_report(CLI::App& app) {
  struct Args {
    std::string db = kDefaultDb, out;
    bool csv = false, json = false, predictions = false;
    std::optional<double> target;
    int skip_steps = 0;
    std::optional<std::int64_t> ranks, classes, step, flight;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("report", "Print a comparison table of the stored runs, or export them as CSV / JSON");
  cmd->add_option("--db", a->db, "Results store (SQLite)")->capture_default_str();
  auto* csv = cmd->add_flag("--csv", a->csv, "CSV, one row per run");
  auto* json = cmd->add_flag("--json", a->json, "JSON, runs with their summaries and evaluations")->excludes(csv);
  cmd->add_option("-o,--output", a->out, "Write to this file instead of standard output");
  cmd->add_option("--target-accuracy", a->target, "Add the time (s) each run took to reach this test accuracy")
      ->check(number_in(0.0, 1.0));
  cmd->add_option("--ranks", a->ranks,
                  "One run's ranks: compute, optimizer, comm and exposed comm per step, CPU use and peak memory, and "
                  "the slowest rank with what it costs the others (ID from the table's run column)")
      ->excludes(csv)
      ->excludes(json);
  auto* classes = cmd->add_option("--classes", a->classes,
                                  "One run's evaluation by class: support, precision, recall and F1, and the confusion "
                                  "matrix (the last evaluation, or --step's; with --csv one row per class)")
                      ->excludes(json);
  classes->excludes("--ranks");
  cmd->add_option("--step", a->step, "With --classes: the evaluation after this step (the steps column of --json)")
      ->needs(classes);
  cmd->add_flag("--predictions", a->predictions,
                "`ddplab predict`'s stored predictions instead of the runs: time to the target per strategy and world "
                "size, with the measured counterpart's error where there is one (with --csv every column)")
      ->excludes(json)
      ->excludes("--ranks")
      ->excludes(classes);
  cmd->add_option("--flight", a->flight,
                  "One failed run's flight recorder: every rank's last calls side by side, and the first call where "
                  "they part (a rank that never reached it, a call that never completed)")
      ->excludes(csv)
      ->excludes(json)
      ->excludes("--ranks")
      ->excludes(classes)
      ->excludes("--predictions");
  cmd->add_option(
         "--skip-steps", a->skip_steps,
         "Leave each run's first N steps (warm-up) out of the time and byte columns; the last step always counts")
      ->check(non_negative_int());
  cmd->callback([a] {
    if (!std::ifstream(a->db))
      throw InputError(a->db + ": no results store here (run `ddplab run` or `ddplab demo` first)");
    Store store(a->db);
    auto write = [&](const std::string& text, const std::string& what) {
      if (a->out.empty()) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        return;
      }
      std::ofstream f(a->out);
      if (!(f << text)) throw InputError(a->out + ": cannot write");
      std::fprintf(stderr, "wrote %s to %s\n", what.c_str(), a->out.c_str());
    };
    if (a->ranks) {
      const auto run = store.run(*a->ranks);
      if (!run) throw InputError(fmt::format("{}: no run {} (`ddplab report` lists them)", a->db, *a->ranks));
      const RankReport ranks = rank_report(store.steps(run->id), a->skip_steps, store.resources(run->id));
      write(rank_report_text(*run, ranks), fmt::format("run {}'s ranks", run->id));
      return;
    }
    if (a->flight) {
      const auto run = store.run(*a->flight);
      if (!run) throw InputError(fmt::format("{}: no run {} (`ddplab report` lists them)", a->db, *a->flight));
      const auto calls = store.flight(run->id);
      if (calls.empty())
        throw InputError(
            fmt::format("{}: run {} has no flight recorder dump (its ranks leave one when the job "
                        "fails under `ddplab run`)",
                        a->db, run->id));
      write(fmt::format("run {} ({}, {})\n", run->id, run->info.strategy, run->status) +
                flight_report(calls, run->info.world_size),
            fmt::format("run {}'s flight recorder", run->id));
      return;
    }
    if (a->classes) {
      const auto run = store.run(*a->classes);
      if (!run) throw InputError(fmt::format("{}: no run {} (`ddplab report` lists them)", a->db, *a->classes));
      const auto evals = store.evaluations(run->id);
      write(a->csv ? class_report_csv(*run, evals, a->step) : class_report_text(*run, evals, a->step),
            fmt::format("run {}'s classes", run->id));
      return;
    }
    if (a->predictions) {
      const auto rows = store.predictions();
      if (rows.empty() && !a->csv)
        std::fprintf(stderr, "%s has no predictions yet: `ddplab predict SCENARIO --target-accuracy A` makes some\n",
                     a->db.c_str());
      write(a->csv ? predictions_csv(rows) : predictions_table(rows), fmt::format("{} predictions", rows.size()));
      return;
    }
    const auto runs = store.summaries(a->skip_steps);
    if (a->skip_steps > 0 && !a->csv && !a->json && !runs.empty())
      std::fprintf(stderr, "averages leave out each run's first %d steps (its steps column counts those averaged)\n",
                   a->skip_steps);
    // Table and CSV stay well-formed for scripts; a person reading the table is told why it is empty.
    if (runs.empty() && !a->csv && !a->json)
      std::fprintf(
          stderr, "%s has no runs yet: `ddplab run SCENARIO` measures some, `ddplab simulate SCENARIO` predicts some\n",
          a->db.c_str());
    std::vector<std::optional<TimeToAccuracy>> tta;
    if (a->target)
      for (const auto& r : runs) tta.push_back(time_to_accuracy(store, r.run.id, *a->target));
    const std::string text = a->csv    ? report_csv(runs, a->target, tta)
                             : a->json ? report_json(store, runs)
                                       : report_table(runs, a->target, tta);
    write(text, fmt::format("{} runs", runs.size()));
  });
}

}  // namespace ddplab::cli
