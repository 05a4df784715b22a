// CollectivesView: see collectives_view.hpp.
#include "ddplab/gui/collectives_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

namespace ddplab::gui {

std::vector<BusbwLine> busbw_lines(const BenchRecord& bench, const std::vector<ValidationRow>& validations) {
  std::map<std::string, BusbwLine> measured, simulated;
  for (const CollectiveBenchRow& r : bench.rows) {
    if (r.collective != Collective::Allreduce || !(r.busbw_gbs > 0)) continue;
    BusbwLine& l = measured[r.schedule];
    l.schedule = r.schedule;
    l.points.emplace_back(r.bytes, r.busbw_gbs);
  }
  // The newest validation of this bench: its rows share created_at and calibration (validation_batches).
  for (const ValidationBatch& batch : validation_batches(validations)) {
    std::map<std::string, BusbwLine> lines;
    for (const ValidationRow& v : batch.rows) {
      if (v.kind != "collective" || v.ref_id != bench.bench.id || v.metric != "busbw_gbs" || !(v.predicted > 0))
        continue;
      BusbwLine& l = lines[v.label];
      l.schedule = v.label;
      l.simulated = true;
      l.points.emplace_back(v.bytes, v.predicted);
    }
    if (!lines.empty()) simulated = std::move(lines);  // batches oldest first: the last one wins
  }
  std::vector<BusbwLine> out;
  for (auto* m : {&measured, &simulated})
    for (auto& [name, l] : *m) {
      std::sort(l.points.begin(), l.points.end());
      out.push_back(std::move(l));
    }
  return out;
}

CollectivesView::CollectivesView(QWidget* parent) : View(parent) {
  bench_ = new QComboBox;
  bench_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("benchmark")));
  bar->addWidget(bench_);
  bar->addStretch(1);
  chart_ = new ChartView(tr("Bus bandwidth"));
  note_ = new QLabel;
  note_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(chart_, 1);
  layout->addWidget(note_);
  connect(bench_, &QComboBox::currentIndexChanged, this, &CollectivesView::refresh);
  refresh();
}

void CollectivesView::setContext(const ViewContext& context) {
  const bool fresh = context.generation != ctx_.generation || context.generation == 0;
  ctx_ = context;
  if (!fresh) return refresh();
  const QVariant keep = bench_->currentData();
  const QSignalBlocker block(bench_);
  bench_->clear();
  if (ctx_.snapshot)
    for (auto it = ctx_.snapshot->benches.rbegin(); it != ctx_.snapshot->benches.rend(); ++it) {
      const BenchRunRow& b = it->bench;
      const auto host = nlohmann::json::parse(b.info.host_info, nullptr, false);
      const std::string from = host.is_object() ? host.value("imported_from", "") : "";
      bench_->addItem(tr("#%1 %2, %3 ranks (%4 per node), %5%6")
                          .arg(b.id)
                          .arg(QString::fromStdString(b.info.backend))
                          .arg(b.info.world_size)
                          .arg(b.info.ranks_per_node)
                          .arg(QString::fromStdString(b.started_at))
                          .arg(from.empty() ? QString() : tr(", imported from %1").arg(QString::fromStdString(from))),
                      QVariant::fromValue<qlonglong>(b.id));
    }
  const int at = keep.isValid() ? bench_->findData(keep) : -1;
  bench_->setCurrentIndex(at >= 0 ? at : 0);
  refresh();
}

void CollectivesView::refresh() {
  QChart* c = chart_->chart();
  clearChart(c);
  lines_.clear();
  const BenchRecord* bench = nullptr;
  if (ctx_.snapshot && bench_->currentIndex() >= 0)
    for (const BenchRecord& b : ctx_.snapshot->benches)
      if (b.bench.id == bench_->currentData().toLongLong()) bench = &b;
  if (!bench) {
    c->setTitle(tr("Bus bandwidth: no collective benchmarks"));
    note_->setText(
        tr("No benchmarks in this store. `ddplab bench collectives --np 4` measures the schedules; "
           "`ddplab import nccl-tests LOG --name CLUSTER` brings in an all_reduce_perf log."));
    c->addAxis(valueAxis(tr("message size (bytes)"), 0, 1), Qt::AlignBottom);
    c->addAxis(valueAxis(tr("busbw (GB/s)"), 0, 1), Qt::AlignLeft);
    return;
  }
  lines_ = busbw_lines(*bench, ctx_.snapshot->validations);
  double bmin = std::numeric_limits<double>::infinity(), bmax = 0, ymin = bmin, ymax = 0;
  for (const BusbwLine& l : lines_)
    for (const auto& [bytes, bw] : l.points)
      bmin = std::min<double>(bmin, bytes), bmax = std::max<double>(bmax, bytes), ymin = std::min(ymin, bw),
      ymax = std::max(ymax, bw);
  auto* x = logAxis(tr("message size (bytes, log)"), lines_.empty() ? 1 : bmin, lines_.empty() ? 10 : bmax);
  auto* y = logAxis(tr("busbw (GB/s, log)"), lines_.empty() ? 0.1 : ymin, lines_.empty() ? 1 : ymax);
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  std::map<std::string, std::size_t> slot;  // one colour per schedule, measured and predicted alike
  for (const BusbwLine& l : lines_) slot.emplace(l.schedule, slot.size());
  for (const BusbwLine& l : lines_) {
    auto* s = new QLineSeries;
    for (const auto& [bytes, bw] : l.points) s->append(static_cast<double>(bytes), bw);
    const QString name = QString::fromStdString(l.schedule);
    s->setName(name + (l.simulated ? tr(" simulated") : tr(" measured")));
    QPen pen(paletteColor(slot[l.schedule]));
    pen.setWidthF(2.0);
    if (l.simulated) pen.setStyle(Qt::DashLine);
    s->setPen(pen);
    s->setPointsVisible(true);
    pointTooltips(s, [n = s->name()](const QPointF& p) {
      return QObject::tr("%1\n%2 bytes: %3 GB/s").arg(n).arg(p.x(), 0, 'f', 0).arg(p.y(), 0, 'g', 4);
    });
    c->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  elideLegend(c);
  c->setTitle(
      tr("Allreduce bus bandwidth, bench #%1 (%2 ranks)").arg(bench->bench.id).arg(bench->bench.info.world_size));
  note_->setText(
      tr("busbw = algbw x 2(n-1)/n, as nccl-tests defines it; dashed: the newest `ddplab validate` prediction of this "
         "bench (none when it was never validated)."));
}

}  // namespace ddplab::gui
