// See watchdog.hpp.
#include "ddplab/runtime/watchdog.hpp"

#include <algorithm>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <exception>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ddplab/core/job_notes.hpp"

namespace ddplab {

namespace {
double wall_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
std::atomic<int> g_usr1{0};  // SIGUSR1s received: each asks every recorder of this process for a dump
void on_usr1(int) { g_usr1.fetch_add(1); }
}  // namespace

class WatchedCommunicator::Watch {
 public:
  Watch(WatchedCommunicator& w, std::string call, std::int64_t bytes) : w_(w) {
    const auto tid = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock(w_.mu_);
    InFlight& f = w_.flight_[tid];
    f = InFlight{};
    f.call = std::move(call);
    if (auto op = w_.ops_.find(tid); op != w_.ops_.end()) f.op = op->second;
    f.step = w_.step_.load();
    if (auto p = w_.posted_.find(tid); p != w_.posted_.end()) {
      f.peers = p->second.from;
      f.tag = p->second.tag;
      bytes += p->second.bytes;
      w_.posted_.erase(p);
    }
    f.start = Clock::now();
    f.seq = w_.next_seq_++;
    if (w_.recorder_.size() == kFlightRecords) w_.recorder_.pop_front();
    w_.recorder_.push_back({w_.inner_.rank(), f.seq, f.step, f.op, f.call, bytes, wall_s(), -1, false});
  }
  ~Watch() {
    std::lock_guard<std::mutex> lock(w_.mu_);
    const auto it = w_.flight_.find(std::this_thread::get_id());
    if (it == w_.flight_.end()) return;
    const std::int64_t seq = it->second.seq;
    w_.flight_.erase(it);
    for (auto r = w_.recorder_.rbegin(); r != w_.recorder_.rend(); ++r)
      if (r->seq == seq) {
        r->end_s = wall_s();
        r->failed = std::uncaught_exceptions() > exceptions_;  // left by an error, not by returning
        break;
      }
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  WatchedCommunicator& w_;
  int exceptions_ = std::uncaught_exceptions();
};

WatchedCommunicator::WatchedCommunicator(Communicator& inner, double timeout_s, OnTimeout on_timeout,
                                         double abort_grace_s)
    : inner_(inner),
      world_(true),
      timeout_(timeout_s),
      grace_(abort_grace_s),
      user_on_timeout_(on_timeout),
      on_timeout_(std::move(on_timeout)) {
  start();
}

WatchedCommunicator::WatchedCommunicator(std::unique_ptr<Communicator> owned, double timeout_s, OnTimeout on_timeout,
                                         double abort_grace_s)
    : owned_(std::move(owned)),
      inner_(*owned_),
      world_(false),
      timeout_(timeout_s),
      grace_(abort_grace_s),
      user_on_timeout_(on_timeout),
      on_timeout_(std::move(on_timeout)) {
  start();
}

void WatchedCommunicator::start() {
  if (!on_timeout_)
    on_timeout_ = [this](const std::string& report) {
      std::fprintf(stderr, "error: %s\n", report.c_str());
      std::fflush(stderr);
      write_job_note(rank_note("failure"), report);
      dump_flight();
      std::this_thread::sleep_for(std::chrono::duration<double>(grace_));
      inner_.abort(kTimeoutExit);
    };
  struct sigaction act {};
  act.sa_handler = on_usr1;
  sigemptyset(&act.sa_mask);
  act.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &act, nullptr);
  const int usr1 = g_usr1.load();  // SIGUSR1s from now on: read here, before the monitor runs
  // The first heartbeat at once, not a tick later: a rank stopped within its first steps is then reported
  // as silent, not as one that never left a heartbeat.
  heartbeat({step_.load(), 0, wall_ms()});
  monitor_ = std::thread([this, usr1] { monitor(usr1); });
}

std::vector<FlightRecord> WatchedCommunicator::flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {recorder_.begin(), recorder_.end()};
}

void WatchedCommunicator::dump_flight() const {
  if (world_) write_job_note(rank_note("flight"), flight_to_json(flight()));  // a split's calls are not numbered alike
}

WatchedCommunicator::~WatchedCommunicator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  monitor_.join();
}

namespace {
std::int64_t as_bytes(std::size_t n) { return static_cast<std::int64_t>(n); }
}  // namespace

void WatchedCommunicator::abort(int code) {
  inner_.abort(code);
  std::_Exit(code);  // not reached
}

namespace {
constexpr double kHeartbeatS = 0.2;  // how often a rank's monitor says it is alive
}  // namespace

void WatchedCommunicator::heartbeat(const Beat& b) const {
  if (!world_ || inner_.size() < 2) return;
  write_job_note(fmt::format("heartbeat-rank-{}", inner_.rank()),
                 fmt::format("{} {} {}", b.step, b.in_call, b.wall_ms));
}

void WatchedCommunicator::monitor(int usr1) {
  // Checked often enough to report within a tenth of the timeout (at most every heartbeat).
  const auto every = std::chrono::duration<double>(std::clamp(timeout_ / 10, 0.001, kHeartbeatS));
  std::unique_lock<std::mutex> lock(mu_);
  auto last = Clock::now();
  while (!cv_.wait_for(lock, every, [&] { return stop_; })) {
    const Beat beat{step_.load(), flight_.empty() ? 0 : 1, wall_ms()};
    const auto now = Clock::now();
    // A tick far later than asked: this process was not running (SIGSTOP, then SIGCONT, as Open MPI sends
    // before it kills). That time was no one else's fault; it does not count against the calls in flight.
    if (const auto gap = now - last; gap > every + std::chrono::seconds(1))
      for (auto& [tid, f] : flight_) f.start += gap - std::chrono::duration_cast<Clock::duration>(every);
    last = now;
    std::optional<InFlight> late;
    double waited = 0;
    for (auto& [tid, f] : flight_) {
      waited = std::chrono::duration<double>(now - f.start).count();
      if (f.reported || waited <= timeout_) continue;
      f.reported = true;
      late = f;
      break;
    }
    // Files and the handler outside the lock: the calls being watched take it too.
    lock.unlock();
    heartbeat(beat);
    if (const int now_usr1 = g_usr1.load(); now_usr1 != usr1) {
      usr1 = now_usr1;
      dump_flight();
      std::fprintf(stderr, "rank %d: flight recorder dumped (SIGUSR1)\n", inner_.rank());
    }
    if (late) on_timeout_(report(*late, waited));  // the default does not return
    lock.lock();
  }
}

std::string WatchedCommunicator::report(const InFlight& f, double waited) const {
  std::string where = fmt::format("rank {}", inner_.rank());
  if (f.step >= 0) where += fmt::format(" step {}", f.step);
  if (!f.op.empty()) where += ": " + f.op;
  std::string what = f.call;
  if (!f.peers.empty())
    what += fmt::format(" (schedule step {}), receiving from rank{} {}", f.tag, f.peers.size() == 1 ? "" : "s",
                        fmt::join(f.peers, ", "));
  // Who did not arrive, from the other ranks' heartbeats where there are any: a rank that fell silent, or one
  // behind this call (an earlier step, or this step but in no call). A point-to-point wait suspects only the
  // ranks it receives from, and silent ones. Ranks ahead are not suspected; ranks without a heartbeat are
  // named apart (their folder may not be this one).
  std::vector<std::string> missing;
  std::vector<int> unknown;
  const char* dir = std::getenv(kJobDirVar);
  const std::int64_t now = wall_ms();
  for (int r = 0; world_ && dir && *dir && r < inner_.size(); ++r) {
    if (r == inner_.rank()) continue;
    const std::string name = fmt::format("heartbeat-rank-{}", r);
    const auto notes = read_job_notes(dir, name);
    Beat b;
    if (notes.empty() || notes.front().name != name ||
        std::sscanf(notes.front().text.c_str(), "%" SCNd64 " %d %" SCNd64, &b.step, &b.in_call, &b.wall_ms) != 3) {
      unknown.push_back(r);
      continue;
    }
    const bool peer = f.peers.empty() || std::find(f.peers.begin(), f.peers.end(), r) != f.peers.end();
    const double silent = static_cast<double>(now - b.wall_ms) / 1e3;
    if (silent > std::max(1.0, 5 * kHeartbeatS))
      missing.push_back(fmt::format("rank {} (silent for {:.1f} s: stopped, hung or dead)", r, silent));
    else if (peer && b.step >= 0 && b.step < f.step)
      missing.push_back(fmt::format("rank {} (still at step {})", r, b.step));
    else if (peer && b.step == f.step && !b.in_call)
      missing.push_back(fmt::format("rank {} (at step {}, in no call)", r, b.step));
  }
  std::string who;
  if (!missing.empty())
    who = fmt::format("did not arrive: {}", fmt::join(missing, ", "));
  else if (!f.peers.empty())
    who = fmt::format("rank {} did not arrive", fmt::join(f.peers, ", "));
  else
    who = "a rank did not arrive";
  if (!unknown.empty()) who += fmt::format(" (no heartbeat from rank {})", fmt::join(unknown, ", "));
  return fmt::format("{}: {} not complete after {:.1f} s (train.comm_timeout_s = {:g}); {}; aborting the job", where,
                     what, waited, timeout_, who);
}

void WatchedCommunicator::annotate(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  ops_[std::this_thread::get_id()] = what;
}

void WatchedCommunicator::barrier() {
  Watch w(*this, "MPI barrier", 0);
  inner_.barrier();
}
void WatchedCommunicator::broadcast(void* data, std::size_t bytes, int root) {
  Watch w(*this, fmt::format("broadcast of {} bytes from rank {}", bytes, root), as_bytes(bytes));
  inner_.broadcast(data, bytes, root);
}
void WatchedCommunicator::allreduce_sum(float* data, std::size_t count) {
  Watch w(*this, fmt::format("allreduce of {} floats", count), as_bytes(count * sizeof(float)));
  inner_.allreduce_sum(data, count);
}
void WatchedCommunicator::allreduce_sum(double* data, std::size_t count) {
  Watch w(*this, fmt::format("allreduce of {} doubles", count), as_bytes(count * sizeof(double)));
  inner_.allreduce_sum(data, count);
}
void WatchedCommunicator::allreduce_min(int* data, std::size_t count) {
  Watch w(*this, fmt::format("allreduce (min) of {} ints", count), as_bytes(count * sizeof(int)));
  inner_.allreduce_min(data, count);
}
void WatchedCommunicator::allreduce_sum(void* data, std::size_t count, ElemType type) {
  Watch w(*this, fmt::format("allreduce of {} {}", count, elem_name(type)), as_bytes(count * elem_bytes(type)));
  inner_.allreduce_sum(data, count, type);
}
void WatchedCommunicator::all_gather(void* data, std::size_t bytes_per_rank) {
  Watch w(*this, fmt::format("all-gather of {} bytes per rank", bytes_per_rank), as_bytes(bytes_per_rank));
  inner_.all_gather(data, bytes_per_rank);
}
void WatchedCommunicator::reduce_scatter_sum(float* data, std::size_t count) {
  Watch w(*this, fmt::format("reduce-scatter of {} floats", count), as_bytes(count * sizeof(float)));
  inner_.reduce_scatter_sum(data, count);
}
void WatchedCommunicator::all_gather_shards(float* data, std::size_t count) {
  Watch w(*this, fmt::format("all-gather of {} floats in shards", count), as_bytes(count * sizeof(float)));
  inner_.all_gather_shards(data, count);
}
void WatchedCommunicator::gather(const void* send, std::size_t bytes, void* recv, int root) {
  Watch w(*this, fmt::format("gather of {} bytes per rank to rank {}", bytes, root), as_bytes(bytes));
  inner_.gather(send, bytes, recv, root);
}
void WatchedCommunicator::isend(const void* data, std::size_t bytes, int peer, int tag) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Posted& p = posted_[std::this_thread::get_id()];
    p.tag = tag;
    p.bytes += as_bytes(bytes);
  }
  inner_.isend(data, bytes, peer, tag);
}
void WatchedCommunicator::irecv(void* data, std::size_t bytes, int peer, int tag) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Posted& p = posted_[std::this_thread::get_id()];
    p.tag = tag;
    p.bytes += as_bytes(bytes);
    if (std::find(p.from.begin(), p.from.end(), peer) == p.from.end()) p.from.push_back(peer);
  }
  inner_.irecv(data, bytes, peer, tag);
}
void WatchedCommunicator::wait_all() {
  Watch w(*this, "point-to-point wait", 0);  // the bytes posted since the last wait
  inner_.wait_all();
}
void WatchedCommunicator::wait_receives() {
  Watch w(*this, "point-to-point receive", 0);
  inner_.wait_receives();
}

std::unique_ptr<Communicator> WatchedCommunicator::split(int color) {
  std::unique_ptr<Communicator> sub = inner_.split(color);
  if (!sub) return nullptr;
  return std::unique_ptr<Communicator>(new WatchedCommunicator(std::move(sub), timeout_, user_on_timeout_, grace_));
}

}  // namespace ddplab
