// BreakdownView: see breakdown_view.hpp.
#include "ddplab/gui/breakdown_view.hpp"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QHorizontalStackedBarSeries>
#include <QLabel>
#include <QLegend>
#include <QSplitter>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <array>
#include <map>
#include <tuple>

namespace ddplab::gui {

std::vector<BreakdownBar> strategy_breakdown(const std::vector<const RunRecord*>& runs) {
  // (scenario, strategy, world, simulated) -> newest run; the map's order puts measured beside simulated.
  std::map<std::tuple<std::string, std::string, int, bool>, const RunRecord*> newest;
  for (const RunRecord* r : runs)
    if (r && r->finished() && r->summary.step_s > 0 && (r->measured() || r->simulated()))
      newest[{r->info().scenario, r->info().strategy, r->info().world_size, r->simulated()}] = r;  // oldest first in
  std::vector<BreakdownBar> out;
  std::size_t scenarios = 0;
  {
    std::string last;
    for (const auto& [k, r] : newest) scenarios += (std::get<0>(k) != last), last = std::get<0>(k);
  }
  for (const auto& [k, r] : newest) {
    const RunSummary& s = r->summary;
    BreakdownBar b;
    b.run = r;
    b.label = (scenarios > 1 ? std::get<0>(k) + ": " : std::string()) + std::get<1>(k) + " " +
              std::to_string(std::get<2>(k)) + "r " + (std::get<3>(k) ? "simulated" : "measured");
    b.compute_s = s.compute_s;
    b.exposed_comm_s = s.exposed_comm_s;
    b.optimizer_s = s.optimizer_s;
    b.other_s = other_s(s.step_s, s.compute_s, s.exposed_comm_s, s.optimizer_s);
    out.push_back(b);
  }
  return out;
}

namespace {

struct Part {
  const char* name;
  QRgb color;
};
const Part kParts[] = {{"compute", 0x4e79a7}, {"exposed comm", 0xe15759}, {"optimizer", 0x59a14f}, {"other", 0xbab0ac}};

}  // namespace

void drawStepStack(QChart* c, const QStringList& categories, std::vector<std::array<double, 4>> ms, bool percent) {
  clearChart(c);
  if (percent)
    for (auto& row : ms) {
      const double sum = row[0] + row[1] + row[2] + row[3];
      for (double& v : row) v = sum > 0 ? 100 * v / sum : 0;
    }
  auto* series = new QHorizontalStackedBarSeries;
  double max = 0;
  for (std::size_t p = 0; p < 4; ++p) {
    auto* set = new QBarSet(QObject::tr(kParts[p].name));
    set->setColor(QColor(kParts[p].color));
    set->setBorderColor(QColor(kParts[p].color).darker(120));
    for (auto it = ms.rbegin(); it != ms.rend(); ++it) set->append((*it)[p]);  // reversed: first row on top
    series->append(set);
  }
  for (const auto& row : ms) max = std::max(max, row[0] + row[1] + row[2] + row[3]);
  QStringList reversed(categories.rbegin(), categories.rend());
  series->setBarWidth(0.7);
  c->addSeries(series);
  auto* y = new QBarCategoryAxis;
  y->append(reversed);
  auto* x = percent ? valueAxis(QObject::tr("% of the step"), 0, 100, true)
                    : valueAxis(QObject::tr("ms per step"), 0, max > 0 ? max : 1, true);
  c->addAxis(y, Qt::AlignLeft);
  c->addAxis(x, Qt::AlignBottom);
  series->attachAxis(y);
  series->attachAxis(x);
  c->legend()->setAlignment(Qt::AlignBottom);
  c->legend()->setMarkerShape(QLegend::MarkerShapeRectangle);
}

BreakdownView::BreakdownView(QWidget* parent) : View(parent) {
  strategies_ = new ChartView(tr("Step breakdown per strategy"));
  ranks_ = new ChartView(tr("Per rank"));
  for (ChartView* v : {strategies_, ranks_}) v->setRubberBand(QChartView::NoRubberBand);
  straggler_ = new QLabel;
  straggler_->setWordWrap(true);
  // Side by side: horizontal bars need height per category, and a store holds a dozen strategies and sizes.
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(strategies_);
  auto* lower = new QWidget;
  auto* ll = new QVBoxLayout(lower);
  ll->setContentsMargins(0, 0, 0, 0);
  ll->addWidget(ranks_, 1);
  ll->addWidget(straggler_);
  split->addWidget(lower);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({840, 560});
  percent_ = new QCheckBox(tr("as % of the step"));
  percent_->setToolTip(
      tr("Each bar's parts as shares of its step, to compare strategies whose steps differ by orders of magnitude"));
  auto* bar = new QHBoxLayout;
  bar->addWidget(percent_);
  bar->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(split, 1);
  connect(percent_, &QCheckBox::toggled, this, &BreakdownView::refresh);
  setContext({});
}

void BreakdownView::setContext(const ViewContext& context) {
  ctx_ = context;
  if (!deferDraw()) refresh();
}

const RankReport* BreakdownView::rankReport() const {
  if (!rankRun_) return nullptr;
  const auto it = reports_.find(rankRun_->id());
  return it == reports_.end() ? nullptr : &it->second;
}

void BreakdownView::setPercent(bool on) { percent_->setChecked(on); }

void BreakdownView::refresh() {
  const bool pct = percent_->isChecked();
  bars_ = strategy_breakdown(ctx_.runs);
  QStringList cats;
  std::vector<std::array<double, 4>> ms;
  for (const BreakdownBar& b : bars_) {
    cats << QString::fromStdString(b.label);
    ms.push_back({b.compute_s * 1e3, b.exposed_comm_s * 1e3, b.optimizer_s * 1e3, b.other_s * 1e3});
  }
  drawStepStack(strategies_->chart(), cats, ms, pct);
  strategies_->chart()->setTitle(bars_.empty()
                                     ? tr("Step breakdown: no completed runs shown")
                                     : tr("Step breakdown per strategy (newest run of each; means over ranks)"));

  // Per rank: the first selected run, else the newest shown completed measured run (a simulated one has
  // identical ranks by construction), else the newest measured, else the newest shown run.
  rankRun_ = nullptr;
  for (const RunRecord* r : ctx_.selected)
    if (!rankRun_ && r->summary.skipped + r->summary.steps > 0) rankRun_ = r;
  auto pick = [&](auto&& wanted) {
    for (auto it = ctx_.runs.rbegin(); it != ctx_.runs.rend() && !rankRun_ && ctx_.selected.empty(); ++it)
      if ((*it)->summary.skipped + (*it)->summary.steps > 0 && wanted(**it)) rankRun_ = *it;
  };
  pick([](const RunRecord& r) { return r.measured() && r.finished(); });
  pick([](const RunRecord& r) { return r.measured(); });
  pick([](const RunRecord&) { return true; });
  cats.clear();
  ms.clear();
  QString text;
  if (rankRun_) {
    // Read on demand, once per run and snapshot.
    if (ctx_.generation != reportGeneration_) reports_.clear(), reportGeneration_ = ctx_.generation;
    auto found = reports_.find(rankRun_->id());
    if (found == reports_.end()) {
      RankReport loaded;
      try {
        loaded = read_rank_report(ctx_.snapshot->path, rankRun_->id(), rankRun_->summary.skipped);
      } catch (const LoadError& e) {
        text = QString::fromStdString(e.what());
      }
      found = reports_.emplace(rankRun_->id(), std::move(loaded)).first;
    }
    const RankReport& report = found->second;
    for (const RankBreakdown& r : report.ranks) {
      cats << tr("rank %1").arg(r.rank);
      ms.push_back({r.compute_s * 1e3, r.exposed_comm_s * 1e3, r.optimizer_s * 1e3,
                    other_s(r.step_s, r.compute_s, r.exposed_comm_s, r.optimizer_s) * 1e3});
    }
    const QString run = tr("run #%1 %2 (%3 ranks, %4)")
                            .arg(rankRun_->id())
                            .arg(QString::fromStdString(rankRun_->info().strategy))
                            .arg(rankRun_->info().world_size)
                            .arg(QString::fromStdString(to_string(rankRun_->info().source)));
    if (report.slowest >= 0) {
      const RankBreakdown& slow = *std::find_if(report.ranks.begin(), report.ranks.end(),
                                                [&](const RankBreakdown& b) { return b.rank == report.slowest; });
      const double mine = slow.compute_s + slow.optimizer_s, median = report.others_work_s;
      const double over = median > 0 ? 100 * (mine - median) / median : 0.0;
      // Under kStragglerPct the ranks are even: naming one would point at noise.
      text = over >= kStragglerPct ? tr("Straggler of %1: rank %2, compute + optimizer %3 ms per step, %4% over the "
                                        "other ranks' median; they "
                                        "wait for it %5 ms per step (their exposed comm beyond its own).")
                                         .arg(run)
                                         .arg(slow.rank)
                                         .arg(mine * 1e3, 0, 'f', 2)
                                         .arg(over, 0, 'f', 1)
                                         .arg(report.others_wait_s * 1e3, 0, 'f', 2)
                                   : tr("No straggler in %1: the slowest rank's compute + optimizer is within %2% of "
                                        "the other ranks' median.")
                                         .arg(run)
                                         .arg(kStragglerPct, 0, 'f', 0);
    }
    ranks_->chart()->setTitle(QString());
    drawStepStack(ranks_->chart(), cats, ms, pct);
    ranks_->chart()->setTitle(tr("Per rank: run #%1").arg(rankRun_->id()));
  } else {
    drawStepStack(ranks_->chart(), {}, {}, pct);
    ranks_->chart()->setTitle(tr("Per rank: select a run"));
  }
  straggler_->setText(text);
  straggler_->setVisible(!text.isEmpty());
}

}  // namespace ddplab::gui
