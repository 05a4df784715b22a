// CurveLoader: see curve_loader.hpp.
#include "ddplab/gui/curve_loader.hpp"

#include <QEventLoop>
#include <QTimer>
#include <chrono>
#include <optional>

namespace ddplab::gui {

namespace {
bool sameRun(const RunRow& a, const RunRow& b) {
  return a.id == b.id && a.started_at == b.started_at && a.ended_at == b.ended_at && a.status == b.status;
}
}  // namespace

CurveLoader::CurveLoader(QObject* parent) : QObject(parent), worker_([this] { work(); }) {}

CurveLoader::~CurveLoader() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void CurveLoader::load(const StoreSnapshot& snapshot, const std::vector<const RunRecord*>& first) {
  std::unordered_map<std::int64_t, std::shared_ptr<const RunCurves>> keep;
  std::deque<RunRow> want;
  for (const RunRecord& r : snapshot.runs) {
    if (!r.measured()) continue;
    const auto it = curves_.find(r.id());
    if (it != curves_.end() && !r.running() && sameRun(it->second->run, r.summary.run))
      keep.insert(*it);
    else
      want.push_back(r.summary.run);
  }
  curves_ = std::move(keep);
  pending_ = want.size();
  error_.clear();
  {
    const std::lock_guard lock(mutex_);
    ++job_;
    path_ = snapshot.path;
    queue_ = std::move(want);
    inbox_.clear();
    inboxError_.clear();
  }
  prioritize(first);
  wake_.notify_all();
}

std::deque<RunRow> prioritized(std::deque<RunRow> queue, const std::vector<std::int64_t>& first) {
  std::vector<std::int64_t> was;
  std::unordered_map<std::int64_t, RunRow> queued;
  for (RunRow& row : queue) {
    was.push_back(row.id);
    queued.emplace(row.id, std::move(row));
  }
  std::deque<RunRow> out;
  auto take = [&](std::int64_t id) {
    const auto it = queued.find(id);
    if (it == queued.end()) return;
    out.push_back(std::move(it->second));
    queued.erase(it);
  };
  for (std::int64_t id : first) take(id);
  for (std::int64_t id : was) take(id);
  return out;
}

void CurveLoader::prioritize(const std::vector<const RunRecord*>& runs) {
  if (runs.empty()) return;
  std::vector<std::int64_t> ids;
  for (const RunRecord* r : runs)
    if (r) ids.push_back(r->id());
  const std::lock_guard lock(mutex_);
  queue_ = prioritized(std::move(queue_), ids);
}

const RunCurves* CurveLoader::find(std::int64_t run) const {
  const auto it = curves_.find(run);
  return it == curves_.end() ? nullptr : it->second.get();
}

bool CurveLoader::waitUntilIdle(int timeout_ms) {
  if (idle()) return true;
  QEventLoop loop;
  QTimer timer;
  timer.setSingleShot(true);
  connect(&timer, &QTimer::timeout, &loop, &QEventLoop::quit);
  connect(this, &CurveLoader::arrived, &loop, [&] {
    if (idle()) loop.quit();
  });
  timer.start(timeout_ms);
  loop.exec();
  return idle();
}

void CurveLoader::work() {
  using Clock = std::chrono::steady_clock;
  for (;;) {
    std::uint64_t job = 0;
    std::string path;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = job_;
      path = path_;
    }
    // Hands a batch (and why the job stopped, if it did) to the owner's thread; one drain is queued at a time.
    auto post = [&](Batch& batch, const QString& error) {
      const std::lock_guard lock(mutex_);
      if (job != job_) return;  // a newer load() superseded this one
      if (inboxJob_ != job) inbox_.clear(), inboxError_.clear(), inboxJob_ = job;
      for (auto& c : batch) inbox_.push_back(std::move(c));
      batch.clear();
      if (!error.isEmpty()) inboxError_ = error, queue_.clear();
      if (!drainPosted_) {
        drainPosted_ = true;
        QMetaObject::invokeMethod(
            this, [this] { drain(); }, Qt::QueuedConnection);
      }
    };
    Batch batch;
    std::optional<Store> store;
    try {
      store.emplace(path, Store::Access::ReadOnly);
    } catch (const std::exception& e) {
      post(batch, QString::fromStdString("cannot read curves from " + path + ": " + e.what()));
      continue;
    }
    auto since = Clock::now();
    for (;;) {
      RunRow row;
      {
        const std::lock_guard lock(mutex_);
        if (stop_) return;
        if (job != job_ || queue_.empty()) break;
        row = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        batch.push_back(std::make_shared<const RunCurves>(read_curves(*store, row)));
      } catch (const std::exception& e) {
        post(batch, QString::fromStdString("cannot read the curves of run " + std::to_string(row.id) + " from " + path +
                                           ": " + e.what()));
        break;
      }
      if (Clock::now() - since >= std::chrono::milliseconds(kBatchMs)) {
        post(batch, {});
        since = Clock::now();
      }
    }
    if (!batch.empty()) post(batch, {});
  }
}

void CurveLoader::drain() {
  Batch batch;
  QString error;
  {
    const std::lock_guard lock(mutex_);
    drainPosted_ = false;
    if (inboxJob_ == job_) batch.swap(inbox_), error.swap(inboxError_);
    inbox_.clear();
  }
  for (auto& c : batch) curves_[c->run.id] = std::move(c);
  read_ += batch.size();
  pending_ -= std::min(pending_, batch.size());
  if (!error.isEmpty()) {
    error_ = error;
    pending_ = 0;
    emit failed(error);
  }
  if (!batch.empty() || !error.isEmpty()) emit arrived();
}

}  // namespace ddplab::gui
