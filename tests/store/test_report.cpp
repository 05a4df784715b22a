// Reports over a store: the aligned table, RFC 4180 CSV, and JSON that parses back.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "ddplab/core/report.hpp"
#include "ddplab/core/store.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using ddplab::test::sample_info;
using ddplab::test::TempDir;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A strict RFC 4180 reader, to check that quoting round-trips.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        rows.back().back() += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        rows.back().back() += c;
    } else if (c == '"') {
      EXPECT_TRUE(rows.back().back().empty()) << "quote inside an unquoted field";
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else if (c != '\r') {
      rows.back().back() += c;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quote";
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

// Two runs: a measured one with losses and evaluations, and a simulated one without loss.
struct Fixture {
  TempDir dir;
  Store store{dir.file("report.db")};
  std::int64_t measured = 0, simulated = 0;

  Fixture() {
    RunInfo a = sample_info("ring");
    a.scenario = "tricky, \"quoted\"\nname";
    measured = store.begin_run(a);
    for (int step = 0; step < 2; ++step)
      for (int rank = 0; rank < 2; ++rank)
        store.add_step(measured,
                       {step, rank, 0.01, 0.004, 0.002, 0.001, 0.02 + 0.01 * rank, 32, 2'000'000, 1.0 + rank + step});
    store.add_evaluation(measured, {1, 3.5, 0.6, 0.8125, 0.8, 0.79, 0, {}});
    store.add_resources(measured, {0, 1 << 20, 1.5, 2.0, std::nullopt});
    store.finish_run(measured, RunStatus::Completed);

    simulated = store.begin_run(sample_info("tree", RunSource::Simulated));
    for (int rank = 0; rank < 2; ++rank)
      store.add_step(simulated, {0, rank, 0.01, 0.01, 0.005, 0.001, 0.05, 32, 1'000'000,
                                 std::numeric_limits<double>::quiet_NaN()});
    store.flush();  // left running
  }
};

}  // namespace

TEST(Report, TableHasAlignedColumnsAndDashes) {
  Fixture f;
  auto table = report_table(f.store.summaries());
  auto lines = lines_of(table);
  ASSERT_EQ(lines.size(), 4u) << table;  // header, rule, two runs (the newline in the name became a space)
  for (const char* title : {"id", "scenario", "strategy", "source", "backend", "world", "status", "steps", "samples/s",
                            "step ms", "compute ms", "comm ms", "exposed ms", "MB/step", "final loss", "final acc"})
    EXPECT_NE(lines[0].find(title), std::string::npos) << title;
  EXPECT_EQ(lines[1].find_first_not_of("- "), std::string::npos);
  // Right-aligned last column: every line ends at the same width.
  for (const auto& l : lines) EXPECT_EQ(l.size(), lines[0].size()) << l;
  // Measured run: step_s = mean(max(0.02,0.03), max(0.02,0.03)) = 30 ms, 2 MB/step, loss (2+3)/2, acc.
  EXPECT_NE(lines[2].find("30.00"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("2.000"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("2.5000"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("0.8125"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("tricky, \"quoted\" name"), std::string::npos) << lines[2];
  // Simulated run: no loss, no accuracy.
  EXPECT_NE(lines[3].find("simulated"), std::string::npos);
  EXPECT_NE(lines[3].find("running"), std::string::npos);
  EXPECT_EQ(lines[3].substr(lines[3].size() - 1), "-");
  EXPECT_NE(lines[3].find("-  "), std::string::npos);

  auto empty = lines_of(report_table({}));
  EXPECT_EQ(empty.size(), 2u);
}

TEST(Report, CsvQuotesPerRfc4180) {
  Fixture f;
  auto csv = report_csv(f.store.summaries());
  auto rows = parse_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << csv;
  const auto& header = rows[0];
  for (const auto& row : rows) EXPECT_EQ(row.size(), header.size());
  auto col = [&](const std::string& name) {
    auto it = std::find(header.begin(), header.end(), name);
    EXPECT_NE(it, header.end()) << name;
    return static_cast<std::size_t>(it - header.begin());
  };
  EXPECT_EQ(rows[1][col("scenario")], "tricky, \"quoted\"\nname");
  EXPECT_NE(csv.find("\"tricky, \"\"quoted\"\"\nname\""), std::string::npos) << csv;
  EXPECT_EQ(rows[1][col("id")], std::to_string(f.measured));
  EXPECT_EQ(rows[1][col("status")], "completed");
  EXPECT_DOUBLE_EQ(std::stod(rows[1][col("step_s")]), 0.03);
  EXPECT_DOUBLE_EQ(std::stod(rows[1][col("final_loss")]), 2.5);
  EXPECT_DOUBLE_EQ(std::stod(rows[1][col("final_accuracy")]), 0.8125);
  EXPECT_DOUBLE_EQ(std::stod(rows[1][col("bytes_per_step")]), 2e6);
  EXPECT_EQ(rows[2][col("source")], "simulated");
  EXPECT_EQ(rows[2][col("final_loss")], "");
  EXPECT_EQ(rows[2][col("final_accuracy")], "");
  EXPECT_EQ(rows[2][col("ended_at")], "");
  // Plain fields stay unquoted.
  EXPECT_EQ(csv.substr(0, 3), "id,");
}

TEST(Report, JsonParsesBackWithNullsForNan) {
  Fixture f;
  auto text = report_json(f.store, f.store.summaries());
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(text)) << text;
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);

  const auto& m = j[0];
  EXPECT_EQ(m["id"], f.measured);
  EXPECT_EQ(m["info"]["scenario"], "tricky, \"quoted\"\nname");
  EXPECT_EQ(m["info"]["config"]["model"], "mlp");  // embedded JSON stays structured
  EXPECT_EQ(m["info"]["host_info"]["cores"], 8);
  EXPECT_EQ(m["status"], "completed");
  EXPECT_TRUE(m["ended_at"].is_string());
  EXPECT_EQ(m["summary"]["steps"], 2);
  EXPECT_DOUBLE_EQ(m["summary"]["final_loss"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(m["summary"]["final_accuracy"].get<double>(), 0.8125);
  ASSERT_EQ(m["steps"].size(), 2u);
  EXPECT_EQ(m["steps"][0]["step"], 0);
  EXPECT_EQ(m["steps"][0]["ranks"], 2);
  EXPECT_DOUBLE_EQ(m["steps"][0]["loss"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(m["steps"][1]["loss"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(m["steps"][1]["step_s"].get<double>(), 0.03);
  EXPECT_EQ(m["steps"][1]["samples"], 64);
  ASSERT_EQ(m["evaluations"].size(), 1u);
  EXPECT_DOUBLE_EQ(m["evaluations"][0]["test_accuracy"].get<double>(), 0.8125);
  ASSERT_EQ(m["resources"].size(), 1u);
  EXPECT_EQ(m["resources"][0]["peak_rss_bytes"], 1 << 20);
  EXPECT_TRUE(m["resources"][0]["peak_device_bytes"].is_null());  // a CPU run: not measured

  const auto& s = j[1];
  EXPECT_EQ(s["info"]["source"], "simulated");
  EXPECT_TRUE(s["ended_at"].is_null());
  EXPECT_TRUE(s["summary"]["final_loss"].is_null());
  EXPECT_TRUE(s["summary"]["final_accuracy"].is_null());
  ASSERT_EQ(s["steps"].size(), 1u);
  EXPECT_TRUE(s["steps"][0]["loss"].is_null());
  EXPECT_TRUE(s["evaluations"].empty());

  EXPECT_EQ(nlohmann::json::parse(report_json(f.store, {})), nlohmann::json::array());
}

TEST(Report, TimeToTargetAccuracyIsTheFirstEvaluationAtOrAboveIt) {
  TempDir dir;
  Store store(dir.file("tta.db"));
  const std::int64_t run = store.begin_run(sample_info("ring"));
  // 2 ranks, 30 steps of 64 and 32 samples.
  for (int step = 0; step < 30; ++step)
    for (int rank = 0; rank < 2; ++rank) {
      StepMetrics m;
      m.step = step, m.rank = rank, m.samples = rank == 0 ? 64 : 32;
      store.add_step(run, m);
    }
  for (const auto& [step, wall, acc] : {std::tuple{10, 1.0, 0.5}, {20, 2.0, 0.82}, {30, 3.0, 0.85}}) {
    Evaluation e;
    e.step = step;  // steps done before it
    e.wall_s = wall;
    e.test_accuracy = acc;
    store.add_evaluation(run, e);
  }
  store.finish_run(run, RunStatus::Completed);
  const auto at8 = time_to_accuracy(store, run, 0.8);
  ASSERT_TRUE(at8);
  EXPECT_EQ(at8->wall_s, 2.0);
  EXPECT_EQ(at8->steps, 20);
  EXPECT_EQ(at8->samples, 20 * (64 + 32));
  EXPECT_EQ(time_to_accuracy(store, run, 0.85)->steps, 30);
  EXPECT_EQ(time_to_accuracy(store, run, 0.9), std::nullopt);
  const auto runs = store.summaries();
  const auto table = lines_of(report_table(runs, 0.8, {at8}));
  ASSERT_EQ(table.size(), 3u);
  EXPECT_NE(table[0].find("s to 0.8  steps to 0.8  samples to 0.8"), std::string::npos) << table[0];
  std::istringstream row(table[2]);
  std::vector<std::string> cells{std::istream_iterator<std::string>(row), {}};
  ASSERT_GE(cells.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(cells.end() - 3, cells.end()), (std::vector<std::string>{"2.0", "20", "1920"}))
      << table[2];
  const auto csv = parse_csv(report_csv(runs, 0.9, {time_to_accuracy(store, run, 0.9)}));
  ASSERT_GE(csv[0].size(), 3u);
  EXPECT_EQ(std::vector<std::string>(csv[0].end() - 3, csv[0].end()),
            (std::vector<std::string>{"time_to_target_s", "steps_to_target", "samples_to_target"}));
  EXPECT_EQ(csv[1].back(), "");  // never reached
  const auto csv8 = parse_csv(report_csv(runs, 0.8, {at8}));
  EXPECT_EQ(csv8[1].back(), "1920");
}

// `ddplab predict`'s rows: the table's error column is 100 (predicted - measured) / measured, "-" without a
// measured counterpart; the CSV keeps every column, the fit's JSON quoted per RFC 4180.
TEST(Report, PredictionsWithTheirErrorAgainstTheMeasuredCounterpart) {
  TempDir dir;
  Store store(dir.file("p.db"));
  PredictionRow checked;
  checked.scenario = "goodput";
  checked.strategy = "overlap";
  checked.target_accuracy = 0.8;
  checked.world_size = 4;
  checked.global_batch = 128;
  checked.updates = 90;
  checked.step_s = 0.014;
  checked.time_s = 1.26;
  checked.fit_json = R"({"s_min":53.9,"b_noise":85.6})";
  checked.measured_s = 1.4;
  checked.measured_runs_json = "[73,77]";
  PredictionRow scale = checked;
  scale.world_size = 512;
  scale.global_batch = 16384;
  scale.measured_s.reset();
  scale.measured_runs_json = "[]";
  store.add_predictions({checked, scale});
  const auto rows = store.predictions();
  const auto table = lines_of(predictions_table(rows));
  ASSERT_EQ(table.size(), 4u);
  EXPECT_NE(table[0].find("predicted s  measured s   error"), std::string::npos) << table[0];
  const auto cells = [&](std::size_t line) {
    std::istringstream row(table[line]);
    return std::vector<std::string>{std::istream_iterator<std::string>(row), {}};
  };
  const auto with = cells(2), without = cells(3);
  ASSERT_EQ(with.size(), 12u) << table[2];
  ASSERT_EQ(without.size(), 12u) << table[3];
  EXPECT_EQ(std::vector<std::string>(with.begin() + 4, with.begin() + 11),
            (std::vector<std::string>{"4", "128", "90.0", "14.000", "1.260", "1.400", "-10.0%"}));
  EXPECT_EQ(std::vector<std::string>(without.begin() + 9, without.begin() + 11), (std::vector<std::string>{"-", "-"}));
  const auto csv = parse_csv(predictions_csv(rows));
  ASSERT_EQ(csv.size(), 3u);
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(csv[0].begin(), csv[0].end(), name) - csv[0].begin());
  };
  EXPECT_NEAR(std::stod(csv[1][col("error_pct")]), -10.0, 1e-9);
  EXPECT_EQ(csv[1][col("fit")], checked.fit_json);
  EXPECT_EQ(csv[1][col("measured_runs")], "[73,77]");
  EXPECT_EQ(csv[2][col("measured_s")], "");
  EXPECT_EQ(csv[2][col("world_size")], "512");
}
