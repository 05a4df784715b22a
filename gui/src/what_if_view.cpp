// WhatIfView, WhatIfRunner and run_what_if: see what_if_view.hpp.
#include "ddplab/gui/what_if_view.hpp"

#include <QCheckBox>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QThread>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <type_traits>

#include "ddplab/core/error.hpp"
#include "ddplab/gui/breakdown_view.hpp"
#include "ddplab/gui/what_if_scenario.hpp"
#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab::gui {

WhatIfInputs inputs_of(const Scenario& sc, const StrategyConfig& st, int world) {
  WhatIfInputs in;
  in.world = world;
  in.link_gbps = sc.cluster.link_bandwidth * 8 / 1e9;
  in.latency_us = sc.cluster.link_latency * 1e6;
  in.devices_per_node = sc.cluster.devices_per_node;
  in.bucket_kib = static_cast<double>(st.bucket_cap) / 1024;
  in.schedule = st.schedule;
  in.codec = st.codec;
  in.network_model = "auto";  // as `ddplab simulate` without --network-model: the cluster's own
  in.use_calibration = !sc.cluster.calibration.empty();
  return in;
}

std::pair<Scenario, StrategyConfig> apply_inputs(const Scenario& sc, const StrategyConfig& st, const WhatIfInputs& in) {
  std::pair<Scenario, StrategyConfig> out{sc, st};
  // Values shown in other units come back with rounding: one that did not change keeps the scenario's own,
  // so unchanged inputs simulate the scenario bit for bit as `ddplab simulate` does.
  auto set = [](auto& field, double value) {
    const double was = static_cast<double>(field);
    if (std::abs(value - was) > 1e-9 * std::max(std::abs(was), 1e-300))
      field = static_cast<std::decay_t<decltype(field)>>(value);
  };
  ClusterConfig& c = out.first.cluster;
  set(c.link_bandwidth, in.link_gbps * 1e9 / 8);
  set(c.link_latency, in.latency_us * 1e-6);
  c.devices_per_node = in.devices_per_node;
  if (!in.use_calibration) c.calibration.clear();
  StrategyConfig& s = out.second;
  set(s.bucket_cap, std::round(in.bucket_kib * 1024));
  s.schedule = in.schedule;
  if (in.codec != st.codec) s.codec_options.clear();  // another codec's options would be refused
  s.codec = in.codec;
  return out;
}

WhatIfResult run_what_if(const WhatIfRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  WhatIfResult r;
  r.id = req.id;
  try {
    if (req.strategy >= req.scenario.strategies.size()) throw InternalError("no such strategy in the scenario");
    const StrategyConfig& st = req.scenario.strategies[req.strategy];
    const Store store(req.store_path, Store::Access::ReadOnly);
    // As written: the scenario's own cluster and strategy, at the chosen size.
    if (req.inputs.mode == "exact" && req.inputs.world > kExactMaxWorld)
      throw InputError(
          "exact simulation above " + std::to_string(kExactMaxWorld) +
          " ranks takes minutes and cannot be interrupted here; use aggregated (or `ddplab simulate --exact`)");
    SimOptions given;
    given.mode = req.inputs.mode;
    given.keep_trace = false;  // as `ddplab simulate` without --trace: no per-op records through the pipe
    const SweepSetup base = sweep_setup(req.scenario, st, store, given);
    r.base = simulate_point(req.scenario, st, req.inputs.world, base);
    const auto [sc, s] = apply_inputs(req.scenario, st, req.inputs);
    given.network_model = req.inputs.network_model;
    const SweepSetup setup = sweep_setup(sc, s, store, given);
    r.what_if = simulate_point(sc, s, req.inputs.world, setup);
    r.compute_origin = setup.compute.origin;
    r.network_model = network_model_for(sc.cluster, setup.options);
    for (int n = 1; n < req.inputs.world; n *= 2)
      r.scaling.emplace_back(n, simulate_point(sc, s, n, setup).result.samples_per_s);
    r.scaling.emplace_back(req.inputs.world, r.what_if.result.samples_per_s);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// ---------------------------------------------------------------------------------------
WhatIfRunner::WhatIfRunner(QObject* parent) : QObject(parent) {
  qRegisterMetaType<ddplab::gui::WhatIfResult>();
  worker_ = std::thread([this] { loop(); });
}

WhatIfRunner::~WhatIfRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    pending_.reset();
  }
  cv_.notify_all();
  worker_.join();  // waits for the simulation under way (well under a second up to 256 ranks)
}

std::uint64_t WhatIfRunner::submit(WhatIfRequest request) {
  std::lock_guard<std::mutex> lock(mu_);
  request.id = next_++;
  const std::uint64_t id = request.id;
  pending_ = std::move(request);  // replaces a request still waiting: it is stale
  cv_.notify_all();
  return id;
}

std::uint64_t WhatIfRunner::ran() const {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mu_));
  return ran_;
}

void WhatIfRunner::loop() {
  for (;;) {
    WhatIfRequest req;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || pending_; });
      if (stop_) return;
      req = std::move(*pending_);
      pending_.reset();
    }
    WhatIfResult result = run_what_if(req);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++ran_;
      if (stop_) return;
    }
    // Delivered on the GUI thread, and only if no newer request was submitted meanwhile.
    QMetaObject::invokeMethod(
        this,
        [this, result = std::move(result)] {
          if (result.id == latest()) emit finished(result);
        },
        Qt::QueuedConnection);
  }
}

// ---------------------------------------------------------------------------------------
WhatIfView::WhatIfView(QWidget* parent) : View(parent) {
  runner_ = new WhatIfRunner(this);
  scenario_ = new QComboBox;
  scenario_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  auto* open = new QPushButton(tr("Scenario..."));
  strategy_ = new QComboBox;
  world_ = new QSpinBox;
  world_->setRange(1, 4096);
  bandwidth_ = new QDoubleSpinBox;
  bandwidth_->setRange(0.001, 10000);
  bandwidth_->setDecimals(3);
  bandwidth_->setSuffix(tr(" Gbit/s"));
  latency_ = new QDoubleSpinBox;
  latency_->setRange(0.01, 100000);
  latency_->setDecimals(2);
  latency_->setSuffix(tr(" us"));
  perNode_ = new QSpinBox;
  perNode_->setRange(1, 64);
  bucket_ = new QDoubleSpinBox;
  bucket_->setRange(1, 4 << 20);
  bucket_->setDecimals(0);  // whole KiB: a cap written in KiB or MiB comes back exactly
  bucket_->setSuffix(tr(" KiB"));
  schedule_ = new QComboBox;
  for (const std::string& n : allreduce_schedule_names()) schedule_->addItem(QString::fromStdString(n));
  codec_ = new QComboBox;
  for (const CodecInfo& c : codecs()) codec_->addItem(QString::fromStdString(c.name));
  network_ = new QComboBox;
  network_->addItems({"auto", "LV08", "CM02"});
  mode_ = new QComboBox;
  mode_->addItems({"aggregated", "exact", "auto"});
  mode_->setToolTip(
      tr("aggregated: schedule steps merged into phases of flows (fast; docs/simulation.md says where it "
         "parts from exact); exact: every message; auto: exact up to 256 ranks"));
  calibration_ = new QCheckBox(tr("the scenario's calibration (its links replace these)"));
  for (QWidget* w : {static_cast<QWidget*>(world_), static_cast<QWidget*>(bandwidth_), static_cast<QWidget*>(latency_),
                     static_cast<QWidget*>(perNode_), static_cast<QWidget*>(bucket_)})
    w->setMinimumWidth(140);

  auto* form = new QFormLayout;
  form->addRow(tr("scenario"), scenario_);
  form->addRow(QString(), open);
  form->addRow(tr("strategy"), strategy_);
  form->addRow(tr("world size"), world_);
  form->addRow(tr("link bandwidth"), bandwidth_);
  form->addRow(tr("link latency"), latency_);
  form->addRow(tr("devices per node"), perNode_);
  form->addRow(tr("bucket cap"), bucket_);
  form->addRow(tr("schedule"), schedule_);
  form->addRow(tr("codec"), codec_);
  form->addRow(tr("network model"), network_);
  form->addRow(tr("simulation"), mode_);
  form->addRow(calibration_);
  origin_ = new QLabel;
  origin_->setWordWrap(true);
  origin_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setMinimumWidth(300);
  auto* left = new QVBoxLayout;
  left->addWidget(origin_);
  left->addLayout(form);
  left->addWidget(summary_);
  left->addStretch(1);
  breakdown_ = new ChartView(tr("Step breakdown"));
  scaling_ = new ChartView(tr("samples/s"));
  breakdown_->setRubberBand(QChartView::NoRubberBand);
  auto* right = new QVBoxLayout;
  right->addWidget(breakdown_, 1);
  right->addWidget(scaling_, 1);
  auto* layout = new QHBoxLayout(this);
  layout->addLayout(left);
  layout->addLayout(right, 1);

  connect(open, &QPushButton::clicked, this, [this] {
    const QString file =
        QFileDialog::getOpenFileName(this, tr("Open a scenario"), "scenarios", tr("Scenarios (*.toml)"));
    QString error;
    if (!file.isEmpty() && !addScenario(file, &error))
      summary_->setText(error);
    else if (!file.isEmpty())
      selectScenario(file);
  });
  connect(scenario_, &QComboBox::currentIndexChanged, this, &WhatIfView::scenarioChanged);
  connect(strategy_, &QComboBox::currentIndexChanged, this, &WhatIfView::strategyChanged);
  for (QSpinBox* b : {world_, perNode_}) connect(b, &QSpinBox::valueChanged, this, &WhatIfView::submit);
  for (QDoubleSpinBox* b : {bandwidth_, latency_, bucket_})
    connect(b, &QDoubleSpinBox::valueChanged, this, &WhatIfView::submit);
  for (QComboBox* b : {schedule_, codec_, network_, mode_})
    connect(b, &QComboBox::currentIndexChanged, this, &WhatIfView::submit);
  connect(calibration_, &QCheckBox::toggled, this, &WhatIfView::submit);
  connect(runner_, &WhatIfRunner::finished, this, &WhatIfView::show);
  summary_->setText(
      tr("No scenario: none found under scenarios/ beside the working directory or the store; open one with "
         "Scenario..."));
}

bool WhatIfView::addScenario(const QString& path, QString* error) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  for (int i = 0; i < scenario_->count(); ++i)
    if (scenario_->itemData(i).toString() == abs) return true;
  try {
    Scenario sc = load_scenario(abs.toStdString());
    scenarios_.push_back(std::move(sc));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  const QSignalBlocker block(scenario_);
  scenario_->addItem(QFileInfo(abs).fileName(), abs);
  if (scenario_->count() == 1) {
    scenario_->setCurrentIndex(0);
    scenarioChanged();
  }
  return true;
}

bool WhatIfView::selectScenario(const QString& path) {
  const int i = scenario_->findData(QFileInfo(path).absoluteFilePath());
  if (i < 0) return false;
  scenario_->setCurrentIndex(i);
  return true;
}

const Scenario* WhatIfView::scenario() const {
  const int i = scenario_->currentIndex();
  return i >= 0 && i < static_cast<int>(scenarios_.size()) ? &scenarios_[static_cast<std::size_t>(i)] : nullptr;
}

void WhatIfView::setContext(const ViewContext& context) {
  const bool fresh = context.generation != ctx_.generation;
  ctx_ = context;
  // The window refreshes its views before any store is open: nothing to simulate against yet.
  if (!fresh || !ctx_.snapshot || ctx_.snapshot->path.empty()) return;
  // scenarios/ beside the working directory, the store, and the store's parent (results/ -> the project).
  const QFileInfo store(QString::fromStdString(ctx_.snapshot->path));
  for (const QString& dir :
       {QDir::current().filePath("scenarios"), store.dir().filePath("scenarios"), store.dir().filePath("../scenarios")})
    for (const QFileInfo& f : QDir(dir).entryInfoList({"*.toml"}, QDir::Files, QDir::Name)) addScenario(f.filePath());
  // A reload (live follow): the user's choice stays, nothing to redo. The path is kept apart: the window
  // reloads into the same snapshot object, so ctx_.snapshot already holds the new one.
  if (storePath_ == ctx_.snapshot->path) return;
  storePath_ = ctx_.snapshot->path;
  openOnNewestScenario();
}

// Another store: start on the scenario of its newest run (a file of that name, else the scenario as the
// store holds it), and simulate again: the compute source and the calibration come from the store.
void WhatIfView::openOnNewestScenario() {
  const auto& runs = ctx_.snapshot->runs;
  const auto newest = std::max_element(runs.begin(), runs.end(),
                                       [](const RunRecord& a, const RunRecord& b) { return a.id() < b.id(); });
  // `rebuilt`: the entry's scenario was replaced, so its strategies and inputs are filled again.
  auto open = [this](std::size_t i, const QString& why, bool rebuilt) {
    origin_->setText(why);
    if (scenario_->currentIndex() != static_cast<int>(i)) return scenario_->setCurrentIndex(static_cast<int>(i));
    if (rebuilt) return scenarioChanged();
    submit();
  };
  if (newest == runs.end()) {
    origin_->setText(tr("The store holds no runs: showing the first scenario file found."));
    return submit();
  }
  const std::string name = newest->info().scenario;
  for (std::size_t i = 0; i < scenarios_.size(); ++i)
    if (scenarios_[i].name == name)
      return open(i,
                  tr("Scenario %1 (%2): the store's newest run, #%3, is of it.")
                      .arg(QString::fromStdString(name), scenario_->itemText(static_cast<int>(i)))
                      .arg(newest->id()),
                  false);
  std::optional<StoredScenario> stored;
  QString why;
  try {
    std::vector<RunRow> rows;
    for (const RunRecord& r : runs) rows.push_back(r.summary.run);
    stored = newest_stored_scenario(rows, Store(ctx_.snapshot->path, Store::Access::ReadOnly).calibrations());
  } catch (const std::exception& e) {
    why = QString::fromStdString(e.what());
  }
  if (!stored) {
    origin_->setText(
        tr("The store's newest run, #%1, is of scenario %2, which no file here is and no completed measured "
           "run rebuilds%3; open its file with Scenario...")
            .arg(newest->id())
            .arg(QString::fromStdString(name), why.isEmpty() ? QString() : ": " + why));
    return submit();
  }
  const QString key = QStringLiteral("store:") + QString::fromStdString(name);
  int at = scenario_->findData(key);  // rebuilt before, from another store: this store's replaces it
  if (at >= 0) {
    scenarios_[static_cast<std::size_t>(at)] = stored->scenario;
  } else {
    scenarios_.push_back(stored->scenario);
    const QSignalBlocker block(scenario_);
    scenario_->addItem(tr("%1 (from the store)").arg(QString::fromStdString(name)), key);
    at = scenario_->count() - 1;
  }
  open(static_cast<std::size_t>(at),
       tr("Scenario %1 as the store holds it: the newest run, #%2, is of it; no file here is. Its model, training and "
          "cluster are run #%3's, its %4 strategies those of its %5 completed measured runs; calibration: %6.")
           .arg(QString::fromStdString(name))
           .arg(newest->id())
           .arg(stored->run)
           .arg(stored->scenario.strategies.size())
           .arg(stored->runs)
           .arg(stored->calibration.empty() ? tr("none of its transport in the store")
                                            : QString::fromStdString(stored->calibration)),
       true);
}

void WhatIfView::scenarioChanged() {
  const Scenario* sc = scenario();
  const QSignalBlocker block(strategy_);
  strategy_->clear();
  if (sc)
    for (const StrategyConfig& st : sc->strategies) strategy_->addItem(QString::fromStdString(st.name));
  strategy_->setCurrentIndex(sc ? 0 : -1);
  strategyChanged();
}

void WhatIfView::strategyChanged() {
  const Scenario* sc = scenario();
  const int i = strategy_->currentIndex();
  if (!sc || i < 0) return;
  const int world = sc->cluster.simulate_world.empty() ? 8 : std::min(256, sc->cluster.simulate_world.back());
  setInputs(inputs_of(*sc, sc->strategies[static_cast<std::size_t>(i)], world));
  calibration_->setEnabled(!sc->cluster.calibration.empty());
  calibration_->setText(
      sc->cluster.calibration.empty()
          ? tr("no calibration named by the scenario")
          : tr("calibration \"%1\" (its links replace these)").arg(QString::fromStdString(sc->cluster.calibration)));
}

void WhatIfView::setInputs(const WhatIfInputs& in) {
  filling_ = true;
  world_->setValue(in.world);
  bandwidth_->setValue(in.link_gbps);
  latency_->setValue(in.latency_us);
  perNode_->setValue(in.devices_per_node);
  bucket_->setValue(in.bucket_kib);
  schedule_->setCurrentIndex(schedule_->findText(QString::fromStdString(in.schedule)));
  codec_->setCurrentIndex(codec_->findText(QString::fromStdString(in.codec)));
  network_->setCurrentIndex(std::max(0, network_->findText(QString::fromStdString(in.network_model))));
  calibration_->setChecked(in.use_calibration);
  mode_->setCurrentIndex(std::max(0, mode_->findText(QString::fromStdString(in.mode))));
  filling_ = false;
  submit();
}

WhatIfInputs WhatIfView::inputs() const {
  WhatIfInputs in;
  in.world = world_->value();
  in.link_gbps = bandwidth_->value();
  in.latency_us = latency_->value();
  in.devices_per_node = perNode_->value();
  in.bucket_kib = bucket_->value();
  in.schedule = schedule_->currentText().toStdString();
  in.codec = codec_->currentText().toStdString();
  in.network_model = network_->currentText().toStdString();
  in.use_calibration = calibration_->isChecked();
  in.mode = mode_->currentText().toStdString();
  return in;
}

void WhatIfView::submit() {
  const Scenario* sc = scenario();
  if (filling_ || !sc || strategy_->currentIndex() < 0 || !ctx_.snapshot || ctx_.snapshot->path.empty()) return;
  WhatIfRequest req;
  req.store_path = ctx_.snapshot->path;
  req.scenario = *sc;
  req.strategy = static_cast<std::size_t>(strategy_->currentIndex());
  req.inputs = inputs();
  runner_->submit(std::move(req));
  summary_->setText(tr("simulating..."));
}

bool WhatIfView::waitForResult(int timeout_ms) {
  QElapsedTimer t;
  t.start();
  while (runner_->latest() > 0 && !(result_ && result_->id == runner_->latest())) {
    if (t.elapsed() > timeout_ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(5);
  }
  return true;
}

void WhatIfView::show(const WhatIfResult& r) {
  result_ = r;
  if (!r.error.empty()) {
    summary_->setText(tr("Refused: %1").arg(QString::fromStdString(r.error)));
    clearChart(breakdown_->chart());
    clearChart(scaling_->chart());
    return;
  }
  auto parts = [](const SimPatternResult& p) -> std::array<double, 4> {
    return {p.compute_s * 1e3, p.exposed_comm_s * 1e3, p.optimizer_s * 1e3,
            other_s(p.step_s, p.compute_s, p.exposed_comm_s, p.optimizer_s) * 1e3};
  };
  const int n = r.what_if.world_size;
  drawStepStack(breakdown_->chart(), {tr("as written, %1 ranks").arg(n), tr("what-if, %1 ranks").arg(n)},
                {parts(r.base.result), parts(r.what_if.result)}, false);
  breakdown_->chart()->setTitle(tr("Simulated step at %1 ranks (steady state, means per micro-step)").arg(n));
  QChart* c = scaling_->chart();
  clearChart(c);
  auto* line = new QLineSeries;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& [w, sps] : r.scaling) {
    line->append(w, sps);
    if (sps > 0) lo = std::min(lo, sps), hi = std::max(hi, sps);
  }
  line->setName(tr("what-if"));
  QPen pen(paletteColor(0));
  pen.setWidthF(2);
  line->setPen(pen);
  line->setPointsVisible(true);
  pointTooltips(
      line, [](const QPointF& p) { return QObject::tr("%1 ranks: %2 samples/s").arg(p.x()).arg(p.y(), 0, 'f', 0); });
  auto* x = logAxis(tr("world size (ranks, log2)"), 1 / 1.2, n * 1.2, 2);
  auto* y = logAxis(tr("samples/s (log)"), hi > 0 ? lo : 1, hi > 0 ? hi : 10);
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  c->addSeries(line);
  line->attachAxis(x);
  line->attachAxis(y);
  c->setTitle(tr("What-if samples/s up to %1 ranks").arg(n));
  const SimPatternResult& b = r.base.result;
  const SimPatternResult& w = r.what_if.result;
  summary_->setText(
      tr("<b>what-if</b>: step %1 ms, %2 samples/s, efficiency %3%<br><b>as written</b>: step %4 ms, %5 samples/s "
         "(%6%)<br>compute: %7<br>network model %8, schedule replayed %9<br>%10 simulations in %11 s")
          .arg(w.step_s * 1e3, 0, 'f', 3)
          .arg(w.samples_per_s, 0, 'f', 0)
          .arg(100 * r.what_if.efficiency, 0, 'f', 1)
          .arg(b.step_s * 1e3, 0, 'f', 3)
          .arg(b.samples_per_s, 0, 'f', 0)
          .arg(100 * r.base.efficiency, 0, 'f', 1)
          .arg(QString::fromStdString(r.compute_origin), QString::fromStdString(r.network_model),
               QString::fromStdString(w.schedule))
          .arg(r.scaling.size() + 1)
          .arg(r.wall_s, 0, 'f', 2));
}

}  // namespace ddplab::gui
