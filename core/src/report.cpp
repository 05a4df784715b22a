// Run comparison: an aligned terminal table, CSV for spreadsheets, JSON for scripts.
#include "ddplab/core/report.hpp"
#include "ddplab/core/units.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/class_metrics.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/step_totals.hpp"

namespace ddplab {
namespace {

using nlohmann::json;

// "-" for an absent or non-finite value.
std::string fixed(std::optional<double> v, int decimals, double scale = 1.0) {
  if (!v || !std::isfinite(*v)) return "-";
  return fmt::format("{:.{}f}", *v * scale, decimals);
}

// Shortest text that reads back to the same double; empty when absent.
std::string exact(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "";
  return fmt::format("{}", *v);
}

struct Column {
  const char* title;
  bool right;  // numbers right-aligned, names left-aligned
};

// Columns as wide as their widest cell, two spaces apart, a rule under the titles, no trailing spaces.
std::string aligned(const std::vector<Column>& cols, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(cols.size());
  for (std::size_t c = 0; c < cols.size(); ++c) {
    width[c] = std::string(cols[c].title).size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](auto cell) {
    std::string out;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      if (c) out += "  ";
      std::string text = cell(c);
      std::string pad(width[c] - text.size(), ' ');
      out += cols[c].right ? pad + text : (c + 1 == cols.size() ? text : text + pad);
    }
    return out + '\n';
  };
  std::string out = line([&](std::size_t c) { return std::string(cols[c].title); });
  out += line([&](std::size_t c) { return std::string(width[c], '-'); });
  for (const auto& row : rows) out += line([&](std::size_t c) { return row[c]; });
  return out;
}

// RFC 4180: quote a field holding a comma, quote, CR or LF, doubling inner quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

// Fields joined into one CSV line.
std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  return out + '\n';
}

// A terminal cell stays on one line: control characters (newline, tab, ...) become spaces.
std::string cell(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return s;
}

// JSON has no NaN or infinity: they become null.
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json num(const std::optional<double>& v) { return v ? num(*v) : json(nullptr); }

// Embedded JSON text (config, host info) is kept structured when it parses, as a string otherwise.
json embedded(const std::string& text) {
  if (text.empty()) return nullptr;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json(text) : j;
}

}  // namespace

std::optional<TimeToAccuracy> time_to_accuracy(const Store& store, std::int64_t run, double target) {
  for (const auto& e : store.evaluations(run)) {  // ordered by step; e.step counts the steps done before it
    if (!std::isfinite(e.test_accuracy) || e.test_accuracy < target) continue;
    TimeToAccuracy t{e.wall_s, e.step, 0};
    for (const auto& m : store.steps(run))
      if (m.step < e.step) t.samples += m.samples;
    return t;
  }
  return std::nullopt;
}

std::string report_table(const std::vector<RunSummary>& runs, std::optional<double> target,
                         const std::vector<std::optional<TimeToAccuracy>>& time_to_target) {
  std::vector<Column> cols = {
      {"id", true},         {"scenario", false},  {"strategy", false}, {"source", false},    {"backend", false},
      {"world", true},      {"status", false},    {"steps", true},     {"warm-up s", true},  {"samples/s", true},
      {"step ms", true},    {"compute ms", true}, {"comm ms", true},   {"exposed ms", true}, {"MB/step", true},
      {"final loss", true}, {"final acc", true},
  };
  const std::string tta_s = target ? fmt::format("s to {:.3g}", *target) : "",
                    tta_steps = target ? fmt::format("steps to {:.3g}", *target) : "",
                    tta_samples = target ? fmt::format("samples to {:.3g}", *target) : "";
  if (target)
    for (const std::string* t : {&tta_s, &tta_steps, &tta_samples}) cols.push_back({t->c_str(), true});
  std::vector<std::vector<std::string>> rows;
  for (std::size_t row = 0; row < runs.size(); ++row) {
    const RunSummary& s = runs[row];
    const auto& r = s.run;
    rows.push_back({
        std::to_string(r.id),
        cell(r.info.scenario),
        cell(r.info.strategy),
        cell(to_string(r.info.source)),
        cell(r.info.backend),
        std::to_string(r.info.world_size),
        cell(to_string(r.status)),
        std::to_string(s.steps),
        s.warmup_steps ? fixed(s.warmup_s, 2) : "-",
        s.steps ? fixed(s.samples_per_s, 1) : "-",
        s.steps ? fixed(s.step_s, 2, 1e3) : "-",
        s.steps ? fixed(s.compute_s, 2, 1e3) : "-",
        s.steps ? fixed(s.comm_s, 2, 1e3) : "-",
        s.steps ? fixed(s.exposed_comm_s, 2, 1e3) : "-",
        s.steps ? fixed(s.bytes_per_step, 3, 1e-6) : "-",
        fixed(s.final_loss, 4),
        fixed(s.final_accuracy, 4),
    });
    if (target) {
      const auto t = row < time_to_target.size() ? time_to_target[row] : std::nullopt;
      rows.back().push_back(t ? fixed(t->wall_s, 1) : "-");
      rows.back().push_back(t ? std::to_string(t->steps) : "-");
      rows.back().push_back(t ? std::to_string(t->samples) : "-");
    }
  }
  return aligned(cols, rows);
}

std::string runs_table(const std::vector<RunSummary>& runs) {
  const std::vector<Column> cols = {{"id", true},       {"status", false},  {"scenario", false}, {"strategy", false},
                                    {"source", false},  {"backend", false}, {"world", true},     {"steps", true},
                                    {"started", false}, {"ended", false}};
  std::vector<std::vector<std::string>> rows;
  for (const RunSummary& s : runs) {
    const RunRow& r = s.run;
    rows.push_back({std::to_string(r.id), cell(to_string(r.status)), cell(r.info.scenario), cell(r.info.strategy),
                    cell(to_string(r.info.source)), cell(r.info.backend), std::to_string(r.info.world_size),
                    std::to_string(s.skipped + s.steps), cell(r.started_at),
                    r.ended_at.empty() ? "-" : cell(r.ended_at)});
  }
  return aligned(cols, rows);
}

std::string run_details(const Store& store, std::int64_t id) {
  const RunSummary s = store.summary(id);
  const RunRow& r = s.run;
  const std::size_t steps = store.totals(id).size(), evaluations = store.evaluations(id).size();
  const std::vector<std::int64_t> traced = store.traced_runs();
  const bool timeline = std::find(traced.begin(), traced.end(), id) != traced.end();
  auto pretty = [](const std::string& text) {
    const json j = embedded(text);
    return j.is_null() ? std::string("-") : j.dump(2);
  };
  std::string out = fmt::format("run {}: {} / {}, {} on {}, {} rank{} x {} samples\n", r.id, cell(r.info.scenario),
                                cell(r.info.strategy), cell(to_string(r.info.source)), cell(r.info.backend),
                                r.info.world_size, r.info.world_size == 1 ? "" : "s", r.info.batch_size);
  out += fmt::format("status      {}\n", cell(to_string(r.status)));
  if (!r.reason.empty()) out += fmt::format("reason      {}\n", cell(r.reason));
  out +=
      fmt::format("started     {}\nended       {}\n", cell(r.started_at), r.ended_at.empty() ? "-" : cell(r.ended_at));
  out += fmt::format("written by  ddplab {}\n", cell(r.version));
  out += fmt::format("stored      {} step{}, {} evaluation{}, {}\n", steps, steps == 1 ? "" : "s", evaluations,
                     evaluations == 1 ? "" : "s", timeline ? "a timeline" : "no timeline");
  if (s.steps)
    out += fmt::format(
        "summary     {:.1f} samples/s, step {:.2f} ms, compute {:.2f} ms, comm {:.2f} ms, exposed {:.2f} ms "
        "(means over {} steps after {})\n",
        s.samples_per_s, s.step_s * 1e3, s.compute_s * 1e3, s.comm_s * 1e3, s.exposed_comm_s * 1e3, s.steps, s.skipped);
  out += fmt::format("final       loss {}, accuracy {}\n", fixed(s.final_loss, 4), fixed(s.final_accuracy, 4));
  for (const CheckpointRow& c : store.checkpoints(id))
    out += fmt::format("checkpoint  step {}{}: {} rank{}, {} written in {:.3f} s (slowest rank), {}\n", c.step,
                       c.final ? " (final)" : "", c.ranks, c.ranks == 1 ? "" : "s",
                       format_bytes(static_cast<double>(c.bytes)), c.write_s, cell(c.path));
  out += "host        " + pretty(r.info.host_info) + "\n";
  out += "config      " + pretty(r.info.config_json) + "\n";
  return out;
}

std::string report_csv(const std::vector<RunSummary>& runs, std::optional<double> target,
                       const std::vector<std::optional<TimeToAccuracy>>& time_to_target) {
  // Raw units (seconds, bytes) at full precision: this is for further processing.
  std::string out =
      "id,scenario,strategy,source,backend,world_size,batch_size,status,version,started_at,ended_at,steps,"
      "samples_per_s,step_s,compute_s,comm_s,exposed_comm_s,optimizer_s,bytes_per_step,final_loss,final_accuracy,"
      "period,warmup_steps,warmup_s";
  out += target ? ",time_to_target_s,steps_to_target,samples_to_target\n" : "\n";
  for (std::size_t row = 0; row < runs.size(); ++row) {
    const RunSummary& s = runs[row];
    const auto& r = s.run;
    std::vector<std::string> fields = {
        std::to_string(r.id),
        r.info.scenario,
        r.info.strategy,
        to_string(r.info.source),
        r.info.backend,
        std::to_string(r.info.world_size),
        std::to_string(r.info.batch_size),
        to_string(r.status),
        r.version,
        r.started_at,
        r.ended_at,
        std::to_string(s.steps),
        exact(s.samples_per_s),
        exact(s.step_s),
        exact(s.compute_s),
        exact(s.comm_s),
        exact(s.exposed_comm_s),
        exact(s.optimizer_s),
        exact(s.bytes_per_step),
        exact(s.final_loss),
        exact(s.final_accuracy),
        std::to_string(s.period),
        std::to_string(s.warmup_steps),
        exact(s.warmup_s),
    };
    if (target) {
      // A pointer, not a copy of the optional: GCC 12 warns, wrongly, that a copy's fields may be uninitialised.
      const std::optional<TimeToAccuracy>* t = row < time_to_target.size() ? &time_to_target[row] : nullptr;
      const bool reached = t && t->has_value();
      fields.push_back(reached ? exact((*t)->wall_s) : "");
      fields.push_back(reached ? std::to_string((*t)->steps) : "");
      fields.push_back(reached ? std::to_string((*t)->samples) : "");
    }
    out += csv_line(fields);
  }
  return out;
}

std::string report_json(const Store& store, const std::vector<RunSummary>& runs) {
  json all = json::array();
  for (const auto& s : runs) {
    const auto& r = s.run;
    json run = {
        {"id", r.id},
        {"info",
         {{"scenario", r.info.scenario},
          {"strategy", r.info.strategy},
          {"backend", r.info.backend},
          {"world_size", r.info.world_size},
          {"source", r.info.source},
          {"batch_size", r.info.batch_size},
          {"config", embedded(r.info.config_json)},
          {"host_info", embedded(r.info.host_info)}}},
        {"version", r.version},
        {"started_at", r.started_at},
        {"ended_at", r.ended_at.empty() ? json(nullptr) : json(r.ended_at)},
        {"status", r.status},
        {"reason", r.reason.empty() ? json(nullptr) : json(r.reason)},
        {"summary",
         {{"steps", s.steps},
          {"skipped_steps", s.skipped},
          {"period", s.period},
          {"warmup_steps", s.warmup_steps},
          {"warmup_s", num(s.warmup_s)},
          {"samples_per_s", num(s.samples_per_s)},
          {"step_s", num(s.step_s)},
          {"compute_s", num(s.compute_s)},
          {"comm_s", num(s.comm_s)},
          {"exposed_comm_s", num(s.exposed_comm_s)},
          {"optimizer_s", num(s.optimizer_s)},
          {"bytes_per_step", num(s.bytes_per_step)},
          {"final_loss", num(s.final_loss)},
          {"final_accuracy", num(s.final_accuracy)}}},
    };

    // Steps collapsed over ranks: the mean loss (of ranks that report one) and the slowest rank's time.
    struct Agg {
      double loss_sum = 0;
      int loss_n = 0, ranks = 0;
      double step_s = 0;
      std::int64_t samples = 0, bytes = 0;
    };
    std::map<std::int64_t, Agg> per_step;
    for (const auto& m : store.steps(r.id)) {
      auto& a = per_step[m.step];
      if (std::isfinite(m.loss)) a.loss_sum += m.loss, ++a.loss_n;
      a.step_s = a.ranks ? std::max(a.step_s, m.step_s) : m.step_s;
      a.samples += m.samples;
      a.bytes += m.bytes_sent;
      ++a.ranks;
    }
    json steps = json::array();
    for (const auto& [step, a] : per_step)
      steps.push_back({{"step", step},
                       {"ranks", a.ranks},
                       {"loss", a.loss_n ? num(a.loss_sum / a.loss_n) : json(nullptr)},
                       {"step_s", num(a.step_s)},
                       {"samples", a.samples},
                       {"bytes_sent", a.bytes}});
    run["steps"] = std::move(steps);

    json evals = json::array();
    for (const auto& e : store.evaluations(r.id)) {
      json ev = {{"step", e.step},
                 {"wall_s", num(e.wall_s)},
                 {"test_loss", num(e.test_loss)},
                 {"test_accuracy", num(e.test_accuracy)},
                 {"macro_precision", num(e.macro_precision)},
                 {"macro_recall", num(e.macro_recall)}};
      if (!e.confusion.empty()) {  // per class, and the matrix they come from (row = true class)
        const ClassMetrics m = class_metrics(e.confusion, e.classes);
        ev["macro_f1"] = num(m.macro_f1);
        json classes = json::array();
        for (int c = 0; c < m.classes; ++c) {
          const auto i = static_cast<std::size_t>(c);
          classes.push_back({{"class", c},
                             {"support", m.support[i]},
                             {"precision", num(m.precision[i])},
                             {"recall", num(m.recall[i])},
                             {"f1", num(m.f1[i])}});
        }
        ev["classes"] = std::move(classes);
        ev["confusion"] = confusion_rows(e);
      }
      evals.push_back(std::move(ev));
    }
    run["evaluations"] = std::move(evals);

    json res = json::array();
    for (const auto& x : store.resources(r.id))
      res.push_back({{"rank", x.rank},
                     {"peak_rss_bytes", x.peak_rss_bytes},
                     {"peak_device_bytes", x.peak_device_bytes ? json(*x.peak_device_bytes) : json(nullptr)},
                     {"cpu_s", num(x.cpu_s)},
                     {"wall_s", num(x.wall_s)}});
    run["resources"] = std::move(res);

    all.push_back(std::move(run));
  }
  // Invalid UTF-8 in a name must not make the export throw.
  return all.dump(2, ' ', false, json::error_handler_t::replace) + '\n';
}

std::string predictions_table(const std::vector<PredictionRow>& rows) {
  const std::vector<Column> cols = {
      {"id", true},          {"scenario", false},    {"strategy", false}, {"target", true},
      {"world", true},       {"global batch", true}, {"updates", true},   {"step ms", true},
      {"predicted s", true}, {"measured s", true},   {"error", true},     {"created", false},
  };
  std::vector<std::vector<std::string>> cells;
  for (const PredictionRow& p : rows)
    cells.push_back({std::to_string(p.id), cell(p.scenario), cell(p.strategy), fixed(p.target_accuracy, 3),
                     std::to_string(p.world_size), fixed(p.global_batch, 0), fixed(p.updates, 1),
                     fixed(p.step_s, 3, 1e3), fixed(p.time_s, 3), fixed(p.measured_s, 3),
                     p.measured_s ? fmt::format("{:+.1f}%", error_pct(*p.measured_s, p.time_s)) : "-", p.created_at});
  return aligned(cols, cells);
}

std::string predictions_csv(const std::vector<PredictionRow>& rows) {
  std::string out =
      "id,created_at,scenario,strategy,target_accuracy,world_size,global_batch,updates,step_s,time_s,sim_run_id,"
      "measured_s,error_pct,measured_runs,fit,version\n";
  for (const PredictionRow& p : rows)
    out += csv_line({std::to_string(p.id), p.created_at, p.scenario, p.strategy, exact(p.target_accuracy),
                     std::to_string(p.world_size), exact(p.global_batch), exact(p.updates), exact(p.step_s),
                     exact(p.time_s), p.sim_run_id ? std::to_string(*p.sim_run_id) : "", exact(p.measured_s),
                     p.measured_s ? exact(error_pct(*p.measured_s, p.time_s)) : "", p.measured_runs_json, p.fit_json,
                     p.version});
  return out;
}

}  // namespace ddplab
