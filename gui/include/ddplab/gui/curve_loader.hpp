// Measured runs' curves, read from the store in a background thread so that a large store opens at once:
// the window shows the runs' summaries, and the Convergence view draws each run's curve once it is read.
// Curves of runs that cannot change any more (not running, same run as before) are kept across reloads,
// so live follow reads again only the runs still being written.
//
// All members are called on the thread that owns the loader (the GUI thread); the worker only reads the
// store (read-only) and hands batches of curves back through the event loop, at most every kBatchMs.
#pragma once
#include <QObject>
#include <QString>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ddplab/gui/run_data.hpp"

namespace ddplab::gui {

// `queue` with the runs of `first` that it holds moved to the front, in first's order; the rest keep theirs.
std::deque<RunRow> prioritized(std::deque<RunRow> queue, const std::vector<std::int64_t>& first);

class CurveLoader : public QObject {
  Q_OBJECT
 public:
  static constexpr int kBatchMs = 100;

  explicit CurveLoader(QObject* parent = nullptr);
  ~CurveLoader() override;  // drops what is left and joins the worker

  // Reads the curves of the snapshot's measured runs, those in `first` first, dropping any earlier request.
  // Curves already held for a run that is not running, and was the same run (RunRow) then, are kept; the
  // others are forgotten.
  void load(const StoreSnapshot& snapshot, const std::vector<const RunRecord*>& first = {});
  // Moves these runs to the front of what is left to read, in this order (the runs a view is about to draw).
  void prioritize(const std::vector<const RunRecord*>& runs);

  const RunCurves* find(std::int64_t run) const;    // nullptr until read
  std::size_t pending() const { return pending_; }  // runs of the last load() not read yet
  bool idle() const { return pending_ == 0; }
  QString error() const { return error_; }         // why the last load stopped early, if it did
  std::size_t readCount() const { return read_; }  // runs read since construction (kept curves are not)

  // Processes events until every requested curve is in (or the load failed); false on timeout.
  bool waitUntilIdle(int timeout_ms);

 signals:
  void arrived();  // curves were added; idle() tells whether more will come
  void failed(QString reason);

 private:
  using Batch = std::vector<std::shared_ptr<const RunCurves>>;
  void work();
  void drain();  // on the owner's thread: takes the worker's batches in

  std::unordered_map<std::int64_t, std::shared_ptr<const RunCurves>> curves_;
  std::size_t pending_ = 0, read_ = 0;
  QString error_;

  // Shared with the worker, under mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string path_;
  std::deque<RunRow> queue_;
  std::uint64_t job_ = 0;  // bumped by load(): the worker drops a stale job's work
  Batch inbox_;
  std::uint64_t inboxJob_ = 0;
  QString inboxError_;
  bool drainPosted_ = false, stop_ = false;
  std::thread worker_;
};

}  // namespace ddplab::gui
