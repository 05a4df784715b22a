// The "What-if" view: one scenario and strategy, simulated again each time a control changes.
//   - controls: world size, link bandwidth and latency, devices per node, bucket cap, schedule, codec,
//     network model (schedules and codecs from the registries), whether the scenario's calibration applies
//     (its links then replace the bandwidth and latency set here), and the simulation mode;
//   - each change re-simulates in a worker thread, exactly as `ddplab simulate` (with --aggregated or
//     --exact) would: sweep_setup and simulate_point, the same compute source, calibration and options, but
//     nothing stored;
//   - shown: the step breakdown of the scenario as written and of the what-if at the chosen size, and the
//     what-if's samples/s at powers of two up to it; a newer change makes an unfinished request stale: its
//     result is dropped, and only the newest pending request runs next.
// Scenarios are the *.toml files under scenarios/ (beside the working directory or the store), any file
// opened with "Scenario...", and the scenario of the store's newest run as the store holds it
// (what_if_scenario.hpp) when no file is that scenario. A newly opened store starts the view on the
// scenario of its newest run, and the origin line says which and why.
#pragma once
#include <QObject>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/gui/charts.hpp"
#include "ddplab/gui/view.hpp"
#include "ddplab/simulator/simulator.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;

namespace ddplab::gui {

struct WhatIfInputs {
  int world = 8;
  double link_gbps = 10, latency_us = 2;  // NIC bandwidth (Gbit/s) and latency per link
  int devices_per_node = 1;
  double bucket_kib = 25 * 1024;
  std::string schedule = "native", codec = "none";
  std::string network_model = "auto";  // SimOptions::network_model, as `ddplab simulate --network-model`
  bool use_calibration = true;         // the scenario's [cluster] calibration, when it names one
  // SimOptions::mode. "aggregated" by default, so that a change is re-simulated quickly even at large worlds
  // (docs/simulation.md gives where it parts from "exact"); "exact" for the reference.
  std::string mode = "aggregated";
};
// The scenario's own values (at `world` ranks).
WhatIfInputs inputs_of(const Scenario& scenario, const StrategyConfig& strategy, int world);
// The scenario and strategy with the inputs applied (codec options kept only for the scenario's own codec).
std::pair<Scenario, StrategyConfig> apply_inputs(const Scenario& scenario, const StrategyConfig& strategy,
                                                 const WhatIfInputs& in);

struct WhatIfRequest {
  std::uint64_t id = 0;
  std::string store_path;  // for the compute source and the calibration, read-only
  Scenario scenario;
  std::size_t strategy = 0;  // index into scenario.strategies
  WhatIfInputs inputs;
};
struct WhatIfResult {
  std::uint64_t id = 0;
  std::string error;                            // set when the inputs were refused or the simulation failed
  SweepPoint base, what_if;                     // at inputs.world: the scenario as written, and with the inputs
  std::vector<std::pair<int, double>> scaling;  // what-if samples/s at 1, 2, 4, ... up to inputs.world
  std::string compute_origin, network_model;
  double wall_s = 0;  // the whole request
};
// One request, synchronously (what the worker thread runs).
WhatIfResult run_what_if(const WhatIfRequest& request);

// Runs requests on one worker thread, newest first: a request queued while another runs replaces any
// request still waiting; results of requests older than the newest are dropped.
class WhatIfRunner : public QObject {
  Q_OBJECT
 public:
  explicit WhatIfRunner(QObject* parent = nullptr);
  ~WhatIfRunner() override;
  std::uint64_t submit(WhatIfRequest request);  // returns its id
  std::uint64_t latest() const { return next_ - 1; }
  std::uint64_t ran() const;  // requests simulated so far (stale ones skipped are not)

 signals:
  void finished(const ddplab::gui::WhatIfResult& result);  // only the newest request's

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<WhatIfRequest> pending_;
  bool stop_ = false;
  std::uint64_t next_ = 1, ran_ = 0;
  std::thread worker_;
};

class WhatIfView : public View {
  Q_OBJECT
 public:
  explicit WhatIfView(QWidget* parent = nullptr);
  QString title() const override { return tr("What-if"); }
  void setContext(const ViewContext& context) override;
  QList<QChartView*> chartViews() const override { return {breakdown_, scaling_}; }

  // The scenarios offered: files found under scenarios/ folders, plus any opened. false with *error if
  // `path` does not load.
  bool addScenario(const QString& path, QString* error = nullptr);
  bool selectScenario(const QString& path);
  const Scenario* scenario() const;
  void setInputs(const WhatIfInputs& in);  // sets the controls (one request)
  WhatIfInputs inputs() const;
  WhatIfRunner* runner() const { return runner_; }
  const std::optional<WhatIfResult>& result() const { return result_; }
  QLabel* summaryLabel() const { return summary_; }
  QLabel* originLabel() const { return origin_; }  // which scenario the view opened on, and why
  // Processes events until the newest request's result is shown (screenshots, tests); false on timeout.
  bool waitForResult(int timeout_ms);

 private:
  void scenarioChanged();
  void strategyChanged();
  void submit();
  void show(const WhatIfResult& r);
  void openOnNewestScenario();

  ViewContext ctx_;
  std::string storePath_;  // the store the view last opened on
  std::vector<Scenario> scenarios_;
  std::optional<WhatIfResult> result_;
  bool filling_ = false;  // controls being set: no request per control
  WhatIfRunner* runner_ = nullptr;
  QComboBox* scenario_ = nullptr;
  QLabel* origin_ = nullptr;
  QComboBox* strategy_ = nullptr;
  QSpinBox* world_ = nullptr;
  QDoubleSpinBox* bandwidth_ = nullptr;
  QDoubleSpinBox* latency_ = nullptr;
  QSpinBox* perNode_ = nullptr;
  QDoubleSpinBox* bucket_ = nullptr;
  QComboBox* schedule_ = nullptr;
  QComboBox* codec_ = nullptr;
  QComboBox* network_ = nullptr;
  QComboBox* mode_ = nullptr;
  QCheckBox* calibration_ = nullptr;
  QLabel* summary_ = nullptr;
  ChartView* breakdown_ = nullptr;
  ChartView* scaling_ = nullptr;
};

}  // namespace ddplab::gui
