// ValidationTableModel, ValidationChartView and ValidationView: see validation_view.hpp.
#include "ddplab/gui/validation_view.hpp"

#include <QBrush>
#include <QColor>
#include <QComboBox>
#include <QCursor>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QScatterSeries>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QToolTip>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "ddplab/gui/charts.hpp"

namespace ddplab::gui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString kindName(const std::string& kind) { return kind == "collective" ? QStringLiteral("bench") : qs(kind); }

// 64 MiB, 512 KiB, 1000 B; "" for 0 (training runs have no buffer size).
QString sizeText(std::int64_t bytes) {
  if (bytes <= 0) return {};
  if (bytes % (1 << 30) == 0) return QStringLiteral("%1 GiB").arg(bytes >> 30);
  if (bytes % (1 << 20) == 0) return QStringLiteral("%1 MiB").arg(bytes >> 20);
  if (bytes % (1 << 10) == 0) return QStringLiteral("%1 KiB").arg(bytes >> 10);
  return QStringLiteral("%1 B").arg(bytes);
}

QString metricText(const std::string& key) {
  const ValidationMetric* m = find_validation_metric(key);
  return m ? QStringLiteral("%1 (%2)").arg(QString::fromLatin1(m->title).toLower(), QString::fromLatin1(m->unit))
           : qs(key);
}

double scaled(const ValidationRow& v, double value) {
  const ValidationMetric* m = find_validation_metric(v.metric);
  return value * (m ? m->scale : 1.0);
}

QString comparisons(std::size_t n) {
  return n == 1 ? QObject::tr("1 comparison") : QObject::tr("%1 comparisons").arg(n);
}

QString errorText(double e) { return std::isfinite(e) ? QString::asprintf("%+.1f", e) : QStringLiteral("n/a"); }

// |error| <= 5%: green, <= 10%: amber, above: red (the test bed's accuracy goals, docs/calibration.md).
QColor errorColor(double e) {
  const double a = std::abs(e);
  if (!std::isfinite(a)) return QColor(0x7f, 0x7f, 0x7f);
  if (a <= 5) return QColor(0x1a, 0x80, 0x1a);
  if (a <= 10) return QColor(0xb0, 0x70, 0x00);
  return QColor(0xc0, 0x30, 0x30);
}

// "4 comparisons, median |error| 3.1%, max 7.2%" over the rows of one metric.
QString errorSummary(const std::vector<const ValidationRow*>& rows) {
  std::vector<double> abs;
  for (const ValidationRow* v : rows) {
    const double e = validation_error_pct(v->predicted, v->measured);
    if (std::isfinite(e)) abs.push_back(std::abs(e));
  }
  QString out = comparisons(rows.size());
  if (abs.empty()) return out + QObject::tr(", no finite error");
  std::sort(abs.begin(), abs.end());
  const std::size_t n = abs.size();
  const double median = n % 2 ? abs[n / 2] : 0.5 * (abs[n / 2 - 1] + abs[n / 2]);
  return out + QObject::tr(", median |error| %1%, max %2%").arg(median, 0, 'f', 1).arg(abs.back(), 0, 'f', 1);
}

}  // namespace

const std::vector<ValidationMetric>& validation_metrics() {
  // What `ddplab validate` stores today (step_s, comm_s, busbw_gbs), then the other step metrics it may
  // add; any other key is shown as stored.
  static const std::vector<ValidationMetric> metrics{{"step_s", "Step time", "ms", 1e3},
                                                     {"comm_s", "Comm time", "ms", 1e3},
                                                     {"busbw_gbs", "Bus bandwidth", "GB/s", 1.0},
                                                     {"compute_s", "Compute time", "ms", 1e3},
                                                     {"exposed_comm_s", "Exposed comm", "ms", 1e3},
                                                     {"optimizer_s", "Optimizer time", "ms", 1e3}};
  return metrics;
}

const ValidationMetric* find_validation_metric(const std::string& key) {
  for (const ValidationMetric& m : validation_metrics())
    if (key == m.key) return &m;
  return nullptr;
}

// ---------------------------------------------------------------------------------------
ValidationTableModel::ValidationTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void ValidationTableModel::setRows(std::vector<ValidationRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int ValidationTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ValidationTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ValidationTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() < 0 || index.row() >= static_cast<int>(rows_.size())) return {};
  const ValidationRow& v = rows_[static_cast<std::size_t>(index.row())];
  const double err = validation_error_pct(v.predicted, v.measured);
  if (role == Qt::DisplayRole || role == SortRole) {
    const bool sort = role == SortRole;
    switch (index.column()) {
      case Kind:
        return kindName(v.kind);
      case Ref:
        return sort ? QVariant::fromValue<qlonglong>(v.ref_id)
                    : QVariant(QStringLiteral("%1 #%2").arg(kindName(v.kind)).arg(v.ref_id));
      case Label:
        return qs(v.label);
      case World:
        return v.world_size;
      case Size:
        return sort ? QVariant::fromValue<qlonglong>(v.bytes) : QVariant(sizeText(v.bytes));
      case Metric:
        return metricText(v.metric);
      case Measured:
        return sort ? QVariant(scaled(v, v.measured)) : QVariant(QString::number(scaled(v, v.measured), 'g', 4));
      case Predicted:
        return sort ? QVariant(scaled(v, v.predicted)) : QVariant(QString::number(scaled(v, v.predicted), 'g', 4));
      case ErrorPct:
        if (sort) return std::isfinite(err) ? QVariant(err) : QVariant();
        return errorText(err);
      default:
        return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    switch (index.column()) {
      case World:
      case Size:
      case Measured:
      case Predicted:
      case ErrorPct:
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      default:
        return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
    }
  }
  if (role == Qt::ForegroundRole && index.column() == ErrorPct) return QBrush(errorColor(err));
  if (role == Qt::ToolTipRole) {
    return tr("%1 #%2 (%3), world %4: measured %5, predicted %6 %7, error %8%; validated %9 %10")
        .arg(v.kind == "run" ? tr("run") : tr("collective bench"))
        .arg(v.ref_id)
        .arg(qs(v.label))
        .arg(v.world_size)
        .arg(scaled(v, v.measured), 0, 'g', 6)
        .arg(scaled(v, v.predicted), 0, 'g', 6)
        .arg(find_validation_metric(v.metric) ? QString::fromLatin1(find_validation_metric(v.metric)->unit) : QString())
        .arg(errorText(err))
        .arg(qs(v.created_at))
        .arg(v.calibration.empty() ? tr("with the scenario's links")
                                   : tr("with calibration \"%1\"").arg(qs(v.calibration)));
  }
  return {};
}

QVariant ValidationTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case Kind:
      return tr("kind");
    case Ref:
      return tr("id");
    case Label:
      return tr("strategy / schedule");
    case World:
      return tr("world");
    case Size:
      return tr("size");
    case Metric:
      return tr("metric");
    case Measured:
      return tr("measured");
    case Predicted:
      return tr("predicted");
    case ErrorPct:
      return tr("error %");
    default:
      return {};
  }
}

// ---------------------------------------------------------------------------------------
ValidationChartView::ValidationChartView(QWidget* parent) : QChartView(makeChart(tr("Predicted vs measured")), parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(420, 320);
  chart()->legend()->setAlignment(Qt::AlignBottom);  // few, short names; the plot keeps its width
  plot({}, validation_metrics().front());
}

void ValidationChartView::plot(const std::vector<ValidationRow>& rows, const ValidationMetric& metric) {
  QChart* c = chart();
  clearChart(c);

  // Points per series, in display units; log axes need positive values.
  std::set<std::string> kinds;
  for (const ValidationRow& v : rows) kinds.insert(v.kind);
  struct Group {
    QList<QPointF> points;
    std::vector<ValidationRow> rows;
  };
  std::map<QString, Group> groups;  // sorted: a stable legend
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const ValidationRow& v : rows) {
    const double x = v.measured * metric.scale, y = v.predicted * metric.scale;
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    const QString name = kinds.size() > 1 ? kindName(v.kind) + QStringLiteral(": ") + qs(v.label) : qs(v.label);
    Group& g = groups[name];
    g.points.append(QPointF(x, y));
    g.rows.push_back(v);
    lo = std::min({lo, x, y});
    hi = std::max({hi, x, y});
  }
  const QString unit = QString::fromLatin1(metric.unit);
  const QString title = tr("%1, predicted vs measured").arg(QString::fromLatin1(metric.title));
  log_ = !groups.empty() && lo > 0 && hi / lo > 10;

  QAbstractAxis* x = nullptr;
  QAbstractAxis* y = nullptr;
  double r0 = 0, r1 = 1;
  if (log_) {
    // Whole decades, each labelled (charts.hpp logAxis); both axes share them.
    for (QAbstractAxis** a : {&x, &y}) *a = logAxis(QString(), lo, hi);
    r0 = static_cast<QLogValueAxis*>(x)->min();
    r1 = static_cast<QLogValueAxis*>(x)->max();
  } else {
    // Zoomed on the points, the +-10% band still wide enough to read; from 0 (or below) only when a value is.
    if (!groups.empty()) {
      r0 = lo > 0 ? lo / 1.25 : lo * 1.1;
      r1 = hi > 0 ? hi * 1.1 : 1.0;
      if (!(r1 > r0)) r1 = r0 + 1;
    }
    for (QAbstractAxis** a : {&x, &y}) {
      auto* va = new QValueAxis;
      va->setRange(r0, r1);
      va->applyNiceNumbers();
      va->setLabelFormat("%.3g");
      *a = va;
    }
    r0 = static_cast<QValueAxis*>(x)->min();
    r1 = static_cast<QValueAxis*>(x)->max();
  }
  x->setTitleText(tr("measured (%1)%2").arg(unit, log_ ? tr(", log") : QString()));
  y->setTitleText(tr("predicted (%1)%2").arg(unit, log_ ? tr(", log") : QString()));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);

  auto addLine = [&](const QString& name, double slope, QPen pen) {
    auto* line = new QLineSeries;
    line->setName(name);
    const double from = log_ ? r0 : std::max(r0, 0.0);
    line->append(from, slope * from);
    line->append(r1, slope * r1);
    line->setPen(pen);
    c->addSeries(line);
    line->attachAxis(x);
    line->attachAxis(y);
    return line;
  };
  QPen ideal(QColor(0x40, 0x40, 0x40));
  ideal.setWidthF(1.5);
  ideal.setStyle(Qt::DashLine);
  addLine(tr("y = x"), 1.0, ideal);
  QPen band(QColor(0xa0, 0xa0, 0xa0));
  band.setWidthF(1.0);
  band.setStyle(Qt::DotLine);
  addLine(QString::fromUtf8("\u00b110%"), 1.1, band);
  QLineSeries* lower = addLine(QString::fromUtf8("\u00b110% (lower)"), 0.9, band);
  for (QLegendMarker* m : c->legend()->markers(lower)) m->setVisible(false);

  std::size_t color = 0;
  for (auto& [name, g] : groups) {
    auto* scatter = new QScatterSeries;
    scatter->setName(name);
    scatter->replace(g.points);
    scatter->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    scatter->setMarkerSize(11);
    // A strategy keeps the colour it has in every other chart; schedules get the palette in order.
    const ValidationRow& first = g.rows.front();
    const QColor col = colors_ && first.kind == "run" && colors_->knowsStrategy(first.label)
                           ? colors_->strategyColor(first.label)
                           : paletteColor(color++);
    scatter->setColor(col);
    scatter->setBorderColor(col.darker(150));
    c->addSeries(scatter);
    scatter->attachAxis(x);
    scatter->attachAxis(y);
    // Hovering a point names the configuration it compares.
    auto info = std::make_shared<std::vector<ValidationRow>>(std::move(g.rows));
    const double scale = metric.scale;
    connect(scatter, &QScatterSeries::hovered, this, [info, scale, unit](const QPointF& p, bool on) {
      if (!on) {
        QToolTip::hideText();
        return;
      }
      for (const ValidationRow& v : *info)
        if (qFuzzyCompare(v.measured * scale + 1, p.x() + 1) && qFuzzyCompare(v.predicted * scale + 1, p.y() + 1)) {
          QToolTip::showText(QCursor::pos(),
                             tr("%1 #%2 %3, world %4%5\nmeasured %6 %7, predicted %8 %7 (%9%)")
                                 .arg(kindName(v.kind))
                                 .arg(v.ref_id)
                                 .arg(qs(v.label))
                                 .arg(v.world_size)
                                 .arg(v.bytes > 0 ? QStringLiteral(", ") + sizeText(v.bytes) : QString())
                                 .arg(p.x(), 0, 'g', 5)
                                 .arg(unit)
                                 .arg(p.y(), 0, 'g', 5)
                                 .arg(errorText(validation_error_pct(v.predicted, v.measured))));
          return;
        }
    });
  }
  c->setTitle(groups.empty() ? title + tr(" (no comparisons)") : title);
}

// ---------------------------------------------------------------------------------------
ValidationView::ValidationView(QWidget* parent) : View(parent) {
  empty_ = new QLabel;
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);
  empty_->setTextFormat(Qt::RichText);
  empty_->setText(
      tr("<h3>No validations in this results store</h3>"
         "<p><code>ddplab validate</code> replays every measured run and collective bench of the store on the "
         "simulator and stores predicted vs measured step time, comm time and bus bandwidth, with the % error.</p>"
         "<p>Measure first (<code>ddplab run</code>, <code>ddplab bench</code>), optionally fit the network "
         "(<code>ddplab calibrate</code>), then run <code>ddplab validate</code> on this store and reload (F5).</p>"));
  empty_->setMargin(24);

  batch_ = new QComboBox;
  batch_->setToolTip(tr("Each `ddplab validate` run stores a new set of comparisons; newest first"));
  batch_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  metric_ = new QComboBox;
  metric_->setToolTip(tr("Metric to plot and list"));
  summary_ = new QLabel;
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Validation:")));
  controls->addWidget(batch_);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(tr("Metric:")));
  controls->addWidget(metric_);
  controls->addStretch(1);

  chart_ = new ValidationChartView;
  model_ = new ValidationTableModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(ValidationTableModel::SortRole);
  table_ = new QTableView;
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);  // store order until a header is clicked
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(false);

  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(chart_);
  split->addWidget(table_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({500, 500});  // rescaled to the window

  auto* content = new QWidget;
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(controls);
  layout->addWidget(summary_);
  layout->addWidget(split, 1);

  stack_ = new QStackedWidget;
  stack_->addWidget(empty_);
  stack_->addWidget(content);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(stack_);

  connect(batch_, &QComboBox::currentIndexChanged, this, &ValidationView::batchChanged);
  connect(metric_, &QComboBox::currentIndexChanged, this, &ValidationView::refresh);
  setValidations({});
}

void ValidationView::setValidations(const std::vector<ValidationRow>& rows) {
  // Keep the metric shown across a reload.
  const QString keepMetric = currentMetric();
  batches_ = validation_batches(rows);
  {
    const QSignalBlocker block(batch_);
    batch_->clear();
    for (auto it = batches_.rbegin(); it != batches_.rend(); ++it) {
      QString when = qs(it->created_at);
      when.replace('T', ' ').replace('Z', QStringLiteral(" UTC"));
      batch_->addItem(
          tr("%1 \u00b7 %2 \u00b7 %3")
              .arg(when,
                   it->calibration.empty() ? tr("scenario links") : tr("calibration \"%1\"").arg(qs(it->calibration)),
                   comparisons(it->rows.size())));
    }
    batch_->setCurrentIndex(batches_.empty() ? -1 : 0);
  }
  stack_->setCurrentIndex(batches_.empty() ? 0 : 1);
  batchChanged();
  if (!keepMetric.isEmpty()) setCurrentMetric(keepMetric);
}

void ValidationView::setContext(const ViewContext& context) {
  const bool recolour = context.colors && (!colors_ || context.colors->group() != group_);
  chart_->setColors(context.colors);
  colors_ = context.colors;
  if (context.colors) group_ = context.colors->group();
  if (context.generation == generation_ && generation_ != 0) {
    if (recolour) refresh();
    return;
  }
  generation_ = context.generation;
  setValidations(context.snapshot ? context.snapshot->validations : std::vector<ValidationRow>{});
}

QList<QChartView*> ValidationView::chartViews() const { return {chart_}; }

bool ValidationView::isEmptyState() const { return stack_->currentIndex() == 0; }

const ValidationBatch* ValidationView::currentBatch() const {
  const int i = batch_->currentIndex();
  if (i < 0 || i >= static_cast<int>(batches_.size())) return nullptr;
  return &batches_[batches_.size() - 1 - static_cast<std::size_t>(i)];
}

QString ValidationView::currentMetric() const { return metric_->currentData().toString(); }

bool ValidationView::setCurrentMetric(const QString& key) {
  const int i = metric_->findData(key);
  if (i < 0) return false;
  metric_->setCurrentIndex(i);
  return true;
}

void ValidationView::batchChanged() {
  const QString keep = currentMetric();
  const ValidationBatch* b = currentBatch();
  {
    const QSignalBlocker block(metric_);
    metric_->clear();
    std::set<std::string> present;
    if (b)
      for (const ValidationRow& v : b->rows) present.insert(v.metric);
    for (const ValidationMetric& m : validation_metrics())
      if (present.count(m.key))
        metric_->addItem(QStringLiteral("%1 (%2)").arg(QString::fromLatin1(m.title), QString::fromLatin1(m.unit)),
                         QString::fromLatin1(m.key));
    for (const std::string& k : present)  // metrics a newer ddplab may store
      if (!find_validation_metric(k)) metric_->addItem(qs(k), qs(k));
    const int i = metric_->findData(keep);
    metric_->setCurrentIndex(i >= 0 ? i : (metric_->count() ? 0 : -1));
  }
  // The summary covers every metric of the invocation.
  QStringList parts;
  if (b) {
    for (int i = 0; i < metric_->count(); ++i) {
      const std::string key = metric_->itemData(i).toString().toStdString();
      std::vector<const ValidationRow*> of;
      for (const ValidationRow& v : b->rows)
        if (v.metric == key) of.push_back(&v);
      const ValidationMetric* m = find_validation_metric(key);
      parts << QStringLiteral("<b>%1</b>: %2").arg(m ? QString::fromLatin1(m->title) : qs(key), errorSummary(of));
    }
  }
  summary_->setText(parts.join(QStringLiteral(" &nbsp;\u00b7&nbsp; ")));
  refresh();
}

void ValidationView::refresh() {
  const ValidationBatch* b = currentBatch();
  const std::string key = currentMetric().toStdString();
  std::vector<ValidationRow> rows;
  if (b)
    for (const ValidationRow& v : b->rows)
      if (v.metric == key) rows.push_back(v);
  // The metric is the one chosen and the kind is in the id column: no column of their own. Sizes only
  // when some row has one (collective benches).
  const bool sized = std::any_of(rows.begin(), rows.end(), [](const ValidationRow& v) { return v.bytes > 0; });
  model_->setRows(rows);
  table_->setColumnHidden(ValidationTableModel::Kind, true);
  table_->setColumnHidden(ValidationTableModel::Metric, true);
  table_->setColumnHidden(ValidationTableModel::Size, !sized);
  table_->resizeColumnsToContents();
  static const ValidationMetric unknown{"", "Value", "", 1.0};
  const ValidationMetric* m = find_validation_metric(key);
  chart_->plot(rows, m ? *m : unknown);
}

}  // namespace ddplab::gui
