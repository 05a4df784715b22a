// TimelineView and TimelineWidget: see timeline_view.hpp.
#include "ddplab/gui/timeline_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QTextStream>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

namespace ddplab::gui {

namespace {

// Compute ops by kind; every comm op in one red, its name says which.
QColor barColor(const TimelineBar& b) {
  if (b.comm) return QColor(0xe1, 0x57, 0x59);
  const std::string kind = b.name.substr(0, b.name.find(' '));
  if (kind == "forward") return QColor(0x4e, 0x79, 0xa7);
  if (kind == "recompute") return QColor(0xa0, 0xcb, 0xe8);  // a forward again: forward's hue, lighter
  if (kind == "backward") return QColor(0x76, 0xb7, 0xb2);
  if (kind == "optimizer" || kind == "shard_optimizer") return QColor(0x59, 0xa1, 0x4f);
  if (kind == "grad_norm") return QColor(0xb0, 0x7a, 0xa1);
  return QColor(0xba, 0xb0, 0xac);
}

// A tick spacing of 1, 2 or 5 times a power of ten giving about `count` ticks over `span`.
double niceTick(double span, int count) {
  if (!(span > 0)) return 1;
  const double raw = span / count, p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

}  // namespace

std::vector<std::int64_t> trace_steps(const std::vector<TraceEvent>& events) {
  std::set<std::int64_t> steps;
  for (const TraceEvent& e : events) steps.insert(trace_step(e));
  return {steps.begin(), steps.end()};
}

TimelineStep timeline_step(const std::vector<TraceEvent>& events, std::int64_t step) {
  TimelineStep out;
  out.step = step;
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const TraceEvent& e : events)
    if (trace_step(e) == step) first = std::min(first, e.start_s), last = std::max(last, e.start_s + e.dur_s);
  for (const TraceEvent& e : events) {
    if (trace_step(e) != step) continue;
    TimelineBar b;
    b.rank = e.rank;
    b.comm = e.track == "comm";
    b.name = e.name;
    b.start_ms = (e.start_s - first) * 1e3;
    b.dur_ms = e.dur_s * 1e3;
    b.bytes = e.args.is_object() && e.args.contains("bytes") && e.args["bytes"].is_number()
                  ? e.args["bytes"].get<std::int64_t>()
                  : 0;
    out.ranks = std::max(out.ranks, e.rank + 1);
    out.bars.push_back(std::move(b));
  }
  if (!out.bars.empty()) out.span_ms = (last - first) * 1e3;
  return out;
}

const RunRecord* simulated_counterpart(const StoreSnapshot& snapshot, const RunRecord& run) {
  const RunRecord* best = nullptr;
  for (const RunRecord& r : snapshot.runs) {
    if (!r.simulated() || !snapshot.traced.count(r.id()) || r.info().scenario != run.info().scenario ||
        r.info().strategy != run.info().strategy)
      continue;
    const int d = std::abs(r.info().world_size - run.info().world_size);
    // Nearest world size; at equal distance the newer run (runs come oldest first).
    if (!best || d <= std::abs(best->info().world_size - run.info().world_size)) best = &r;
  }
  return best;
}

std::int64_t matching_step(std::int64_t step, std::int64_t period, const std::vector<std::int64_t>& steps) {
  if (steps.empty()) return -1;
  if (period > 1)
    for (auto it = steps.rbegin(); it != steps.rend(); ++it)
      if (*it % period == step % period) return *it;
  return steps.back();
}

// ---------------------------------------------------------------------------------------
TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(160);
  setBackgroundRole(QPalette::Base);
  setAutoFillBackground(true);
}

void TimelineWidget::setStep(TimelineStep step, const QString& title) {
  step_ = std::move(step);
  title_ = title;
  update();
}

void TimelineWidget::setWindow(double t0, double t1) {
  // Never narrower than a nanosecond: below that the time ticks would stop advancing.
  if (!(t1 > t0) || !std::isfinite(t0) || !std::isfinite(t1) || (t0 == t0_ && t1 == t1_)) return;
  if (t1 - t0 < 1e-6) {
    const double mid = 0.5 * (t0 + t1);
    t0 = mid - 0.5e-6, t1 = mid + 0.5e-6;
  }
  t0_ = t0, t1_ = t1;
  update();
  emit windowChanged(t0_, t1_);
}

void TimelineWidget::showAll() { setWindow(0, step_.span_ms > 0 ? step_.span_ms * 1.02 : 1); }

QRectF TimelineWidget::plotRect() const {
  return QRectF(130, 26, std::max(10, width() - 140), std::max(10, height() - 56));
}

double TimelineWidget::xOf(double ms) const {
  const QRectF r = plotRect();
  return r.left() + (ms - t0_) / (t1_ - t0_) * r.width();
}

const TimelineBar* TimelineWidget::barAt(QPointF p) const {
  const QRectF r = plotRect();
  if (step_.ranks == 0 || !r.contains(p)) return nullptr;
  const double rowH = r.height() / (2.0 * step_.ranks);
  const int row = static_cast<int>((p.y() - r.top()) / rowH);
  const int rank = row / 2;
  const bool comm = row % 2 == 1;
  const TimelineBar* hit = nullptr;
  for (const TimelineBar& b : step_.bars)  // the shortest bar under the pointer: nested ops stay reachable
    if (b.rank == rank && b.comm == comm && xOf(b.start_ms) - 1 <= p.x() && p.x() <= xOf(b.start_ms + b.dur_ms) + 1 &&
        (!hit || b.dur_ms < hit->dur_ms))
      hit = &b;
  return hit;
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.drawText(QRectF(8, 2, width() - 16, 22), Qt::AlignLeft | Qt::AlignVCenter, title_);
  p.setFont(font());
  const QRectF r = plotRect();
  if (step_.ranks == 0) {
    p.drawText(r, Qt::AlignCenter, tr("no timeline"));
    return;
  }
  const double rowH = r.height() / (2.0 * step_.ranks);
  // Grid and time axis.
  const double tick = niceTick(t1_ - t0_, 8);
  p.setPen(QColor(0xdd, 0xdd, 0xdd));
  const double first = std::ceil(t0_ / tick);
  for (int i = 0; i < 100 && (first + i) * tick <= t1_; ++i) {
    const double t = (first + i) * tick;
    const double x = xOf(t);
    p.setPen(QColor(0xdd, 0xdd, 0xdd));
    p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(x - 40, r.bottom() + 2, 80, 16), Qt::AlignCenter, QString::number(t, 'g', 4));
  }
  p.drawText(QRectF(r.left(), r.bottom() + 16, r.width(), 14), Qt::AlignCenter, tr("ms from the step's first op"));
  // Row labels and bars, clipped to the plot.
  for (int row = 0; row < 2 * step_.ranks; ++row) {
    const double y = r.top() + row * rowH;
    if (row % 2 == 0) p.fillRect(QRectF(r.left(), y, r.width(), 2 * rowH), QColor(0xf6, 0xf6, 0xf6));
    p.setPen(palette().color(QPalette::Text));
    if (rowH >= 9)
      p.drawText(QRectF(4, y, 122, rowH), Qt::AlignRight | Qt::AlignVCenter,
                 tr("rank %1 %2").arg(row / 2).arg(row % 2 ? tr("comm") : tr("compute")));
  }
  p.setClipRect(r);
  for (const TimelineBar& b : step_.bars) {
    const double y = r.top() + (2 * b.rank + (b.comm ? 1 : 0)) * rowH;
    const double x0 = xOf(b.start_ms), x1 = std::max(xOf(b.start_ms + b.dur_ms), x0 + 1);
    const QRectF bar(x0, y + 0.12 * rowH, x1 - x0, 0.76 * rowH);
    const QColor c = barColor(b);
    p.fillRect(bar, c);
    p.setPen(c.darker(140));
    p.drawRect(bar);
    if (bar.width() > 40 && rowH >= 12) {
      p.setPen(Qt::white);
      p.drawText(bar.adjusted(3, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter,
                 p.fontMetrics().elidedText(QString::fromStdString(b.name), Qt::ElideRight,
                                            static_cast<int>(bar.width()) - 5));
    }
  }
}

void TimelineWidget::wheelEvent(QWheelEvent* e) {
  const QRectF r = plotRect();
  const double at = t0_ + (e->position().x() - r.left()) / r.width() * (t1_ - t0_);
  const double f = std::pow(0.8, e->angleDelta().y() / 120.0);
  setWindow(at - (at - t0_) * f, at + (t1_ - at) * f);
  e->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* e) {
  dragFrom_ = e->position().x();
  dragT0_ = t0_;
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* e) {
  if (!(e->buttons() & Qt::LeftButton) || dragFrom_ < 0) return;
  const double shift = (e->position().x() - dragFrom_) / plotRect().width() * (t1_ - t0_);
  const double span = t1_ - t0_;
  setWindow(dragT0_ - shift, dragT0_ - shift + span);
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent*) { showAll(); }

bool TimelineWidget::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* h = static_cast<QHelpEvent*>(e);
    if (const TimelineBar* b = barAt(h->pos())) {
      QString text = tr("%1\nrank %2, %3 track\nstart %4 ms, %5 ms")
                         .arg(QString::fromStdString(b->name))
                         .arg(b->rank)
                         .arg(b->comm ? tr("comm") : tr("compute"))
                         .arg(b->start_ms, 0, 'f', 3)
                         .arg(b->dur_ms, 0, 'f', 3);
      if (b->bytes > 0) text += tr("\n%1 bytes").arg(b->bytes);
      QToolTip::showText(h->globalPos(), text, this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(e);
}

// ---------------------------------------------------------------------------------------
TimelineView::TimelineView(QWidget* parent) : View(parent) {
  run_ = new QComboBox;
  run_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  step_ = new QComboBox;
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("run")));
  bar->addWidget(run_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("step")));
  bar->addWidget(step_);
  bar->addStretch(1);
  top_ = new TimelineWidget;
  bottom_ = new TimelineWidget;
  panes_ = new QWidget;
  auto* pl = new QVBoxLayout(panes_);
  pl->setContentsMargins(0, 0, 0, 0);
  pl->addWidget(top_, 1);
  pl->addWidget(bottom_, 1);
  note_ = new QLabel;
  note_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(panes_, 1);
  layout->addWidget(note_);
  // One time window for both: zooming one zooms the other.
  connect(top_, &TimelineWidget::windowChanged, bottom_, &TimelineWidget::setWindow);
  connect(bottom_, &TimelineWidget::windowChanged, top_, &TimelineWidget::setWindow);
  connect(run_, &QComboBox::currentIndexChanged, this, &TimelineView::runChanged);
  connect(step_, &QComboBox::currentIndexChanged, this, &TimelineView::stepChanged);
  setContext({});
}

void TimelineView::setContext(const ViewContext& context) {
  ctx_ = context;
  const QVariant keep = run_->currentData();
  const QSignalBlocker block(run_);
  run_->clear();
  const RunRecord* preferred = nullptr;
  if (ctx_.snapshot) {
    path_ = ctx_.snapshot->path;
    for (auto it = ctx_.runs.rbegin(); it != ctx_.runs.rend(); ++it) {  // newest first
      const RunRecord* r = *it;
      if (!ctx_.snapshot->traced.count(r->id())) continue;
      run_->addItem(tr("#%1 %2, %3 ranks, %4")
                        .arg(r->id())
                        .arg(QString::fromStdString(r->info().strategy))
                        .arg(r->info().world_size)
                        .arg(QString::fromStdString(to_string(r->info().source))),
                    QVariant::fromValue<qlonglong>(r->id()));
      if (!preferred && r->measured()) preferred = r;
    }
    for (const RunRecord* r : ctx_.selected)
      if (ctx_.snapshot->traced.count(r->id())) {
        preferred = r;
        break;
      }
  }
  const std::int64_t wasShown = shown_ ? shown_->id() : -1;
  const bool reread = context.generation != generation_;
  generation_ = context.generation;
  int at = -1;
  if (!ctx_.selected.empty() && preferred) at = run_->findData(QVariant::fromValue<qlonglong>(preferred->id()));
  if (at < 0 && keep.isValid()) at = run_->findData(keep);  // the user's choice survives filter changes and reloads
  if (at < 0 && preferred) at = run_->findData(QVariant::fromValue<qlonglong>(preferred->id()));
  run_->setCurrentIndex(at >= 0 ? at : (run_->count() ? 0 : -1));
  // The same run of the same snapshot: keep its step and zoom, and do not read its timeline again.
  const std::int64_t now = run_->currentIndex() >= 0 ? run_->currentData().toLongLong() : -1;
  if (!reread && now == wasShown && now >= 0) {
    shown_ = ctx_.snapshot->find(now);
    counterpart_ = shown_ && shown_->measured() ? simulated_counterpart(*ctx_.snapshot, *shown_) : nullptr;
    return;
  }
  runChanged();
}

void TimelineView::runChanged() {
  // A reload of the run shown keeps its step.
  const qlonglong keepStep = shown_ && run_->currentIndex() >= 0 && run_->currentData().toLongLong() == shown_->id() &&
                                     step_->currentIndex() >= 0
                                 ? step_->currentData().toLongLong()
                                 : -1;
  shown_ = counterpart_ = nullptr;
  events_.clear();
  counterEvents_.clear();
  if (ctx_.snapshot && run_->currentIndex() >= 0) shown_ = ctx_.snapshot->find(run_->currentData().toLongLong());
  QString error;
  if (shown_) {
    try {
      events_ = read_trace(path_, shown_->id());
      if (shown_->measured() && (counterpart_ = simulated_counterpart(*ctx_.snapshot, *shown_)))
        counterEvents_ = read_trace(path_, counterpart_->id());
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
  }
  const QSignalBlocker block(step_);
  step_->clear();
  // The last traced step that communicates (under local SGD, the averaging one), else the last.
  std::set<std::int64_t> talking;
  for (const TraceEvent& e : events_)
    if (e.track == "comm") talking.insert(trace_step(e));
  int pick = -1;
  for (std::int64_t s : trace_steps(events_)) {
    step_->addItem(QString::number(s), QVariant::fromValue<qlonglong>(s));
    if (talking.count(s) || talking.empty()) pick = step_->count() - 1;
  }
  const int kept = keepStep >= 0 ? step_->findData(QVariant::fromValue<qlonglong>(keepStep)) : -1;
  step_->setCurrentIndex(kept >= 0 ? kept : pick);
  stepChanged();
  if (!error.isEmpty()) note_->setText(error);
}

void TimelineView::stepChanged() {
  const std::int64_t s = step_->currentIndex() >= 0 ? step_->currentData().toLongLong() : -1;
  auto describe = [](const RunRecord* r, std::int64_t step) {
    return tr("run #%1 %2 (%3 ranks, %4), step %5")
        .arg(r->id())
        .arg(QString::fromStdString(r->info().strategy))
        .arg(r->info().world_size)
        .arg(QString::fromStdString(to_string(r->info().source)))
        .arg(step);
  };
  if (!shown_) {
    top_->setStep({}, tr("No timeline among the runs shown"));
    bottom_->hide();
    note_->setText(
        tr("Timelines are stored by `ddplab run` (the last two steady blocks, or --trace-steps) and by `ddplab "
           "simulate` up to 16 ranks. Stores written before schema 7 have none."));
    return;
  }
  const TimelineStep top = timeline_step(events_, s);
  top_->setStep(top, describe(shown_, s));
  double span = top.span_ms;
  if (counterpart_) {
    const std::int64_t cs = matching_step(s, shown_->summary.period, trace_steps(counterEvents_));
    const TimelineStep bottom = timeline_step(counterEvents_, cs);
    bottom_->setStep(bottom, describe(counterpart_, cs));
    bottom_->show();
    span = std::max(span, bottom.span_ms);
    note_->setText(
        tr("Measured above, simulated below, on one time scale: measured step %1 ms, simulated %2 ms. Wheel: zoom; "
           "drag: pan; double click: whole step.")
            .arg(top.span_ms, 0, 'f', 3)
            .arg(bottom.span_ms, 0, 'f', 3));
  } else {
    bottom_->hide();
    note_->setText(shown_->measured()
                       ? tr("No simulated timeline of %1 in this store (`ddplab simulate` stores one up to 16 ranks). "
                            "Wheel: zoom; drag: pan; double click: whole step.")
                             .arg(QString::fromStdString(shown_->info().strategy))
                       : tr("Wheel: zoom; drag: pan; double click: whole step."));
  }
  top_->setWindow(0, span > 0 ? span * 1.02 : 1);
}

QWidget* TimelineView::exportWidget() { return shown_ ? panes_ : nullptr; }

QString TimelineView::csv() const {
  if (!shown_) return {};
  QString out;
  QTextStream ts(&out);
  ts << "run,source,step,rank,track,name,start_ms,dur_ms,bytes\n";
  auto rows = [&](const RunRecord* r, const TimelineStep& s) {
    for (const TimelineBar& b : s.bars)
      ts << r->id() << ',' << QString::fromStdString(to_string(r->info().source)) << ',' << s.step << ',' << b.rank
         << ',' << (b.comm ? "comm" : "compute") << ',' << QString::fromStdString(b.name) << ','
         << QString::number(b.start_ms, 'g', 10) << ',' << QString::number(b.dur_ms, 'g', 10) << ',' << b.bytes << '\n';
  };
  rows(shown_, top_->step());
  if (counterpart_ && bottom_->isVisibleTo(this)) rows(counterpart_, bottom_->step());
  return out;
}

}  // namespace ddplab::gui
