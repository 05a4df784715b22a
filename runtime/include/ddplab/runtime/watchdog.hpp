// A watchdog for host communicators (MPI), as NCCL's own is for the GPU (open_nccl_communicator). A monitor
// thread watches every blocking call of the wrapped communicator; one still in flight after timeout_s is
// reported, naming this rank, the training step (set_step), the plan op (annotate), the call, and the ranks
// that did not arrive. Those are found from the heartbeats every rank's monitor leaves in the job folder
// (job_notes.hpp): a rank whose heartbeat stopped (stopped, hung in the kernel, dead) or that is not in a
// call of the same step; without a job folder, the ranks a point-to-point wait receives from. The report goes to
// standard error and to this rank's failure note in the job folder (job_notes.hpp), from which the launcher stores it
// as the run's reason; then the whole job is aborted, so that a rank that is stopped or hung never keeps the others
// waiting forever.
// It is also a flight recorder: it keeps this rank's last kFlightRecords calls (op, call, bytes, step, start,
// end or still in flight). They are dumped to the job folder ("flight-rank-R") on a timeout, on a failure
// (dump_flight) and on SIGUSR1; the launcher stores the dumps with the run (`ddplab report --flight RUN`).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ddplab/core/flight.hpp"
#include "ddplab/runtime/communicator.hpp"

namespace ddplab {

class WatchedCommunicator final : public Communicator {
 public:
  // What becomes of a report. The default prints it, writes the failure note, waits abort_grace_s (the other
  // ranks' watchdogs write theirs) and aborts the job with kTimeoutExit.
  using OnTimeout = std::function<void(const std::string& report)>;
  static constexpr int kTimeoutExit = 3;
  static constexpr std::size_t kFlightRecords = 256;

  // The job's world communicator: its monitor also leaves this rank's heartbeats.
  WatchedCommunicator(Communicator& inner, double timeout_s, OnTimeout on_timeout = {}, double abort_grace_s = 1.0);
  ~WatchedCommunicator() override;

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int local_rank() const override { return inner_.local_rank(); }

  void barrier() override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void allreduce_sum(float* data, std::size_t count) override;
  void allreduce_sum(double* data, std::size_t count) override;
  void allreduce_min(int* data, std::size_t count) override;
  void allreduce_sum(void* data, std::size_t count, ElemType type) override;
  void all_gather(void* data, std::size_t bytes_per_rank) override;
  void reduce_scatter_sum(float* data, std::size_t count) override;
  void all_gather_shards(float* data, std::size_t count) override;
  void gather(const void* send, std::size_t bytes, void* recv, int root) override;
  void isend(const void* data, std::size_t bytes, int peer, int tag) override;
  void irecv(void* data, std::size_t bytes, int peer, int tag) override;
  void wait_all() override;
  void wait_receives() override;
  std::unique_ptr<Communicator> split(int color) override;

  ChunkMemory* chunk_memory() override { return inner_.chunk_memory(); }
  double take_device_seconds() override { return inner_.take_device_seconds(); }
  std::size_t device_bytes() const override { return inner_.device_bytes(); }

  void annotate(const std::string& what) override;
  void set_step(std::int64_t step) override { step_ = step; }
  [[noreturn]] void abort(int code) override;

  double timeout_s() const { return timeout_; }

  // The flight recorder: this rank's last calls, oldest first; and its dump into the job folder (a no-op
  // without one, and for a split). Safe from any thread.
  std::vector<FlightRecord> flight() const;
  void dump_flight() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct InFlight {
    std::string call, op;
    std::int64_t step = -1;
    std::vector<int> peers;  // point-to-point: the ranks it receives from
    std::int64_t seq = 0;    // its number in the flight recorder
    int tag = -1;
    Clock::time_point start;
    bool reported = false;
  };
  struct Posted {  // point-to-point posted on a thread since its last wait_all
    std::vector<int> from;
    int tag = -1;
    std::int64_t bytes = 0;
  };
  class Watch;  // one blocking call, in flight while it lives; recorded in flight_

  // A split of a watched communicator (split()): owned, watched with its own handler, and without heartbeats or
  // flight dumps, whose names are world ranks.
  WatchedCommunicator(std::unique_ptr<Communicator> owned, double timeout_s, OnTimeout on_timeout,
                      double abort_grace_s);
  void start();
  void monitor(int usr1);  // usr1: the SIGUSR1s seen before it started
  struct Beat {            // a heartbeat note: "STEP IN_CALL WALL_MS"
    std::int64_t step = -1;
    int in_call = 0;
    std::int64_t wall_ms = 0;  // since the epoch
  };
  void heartbeat(const Beat& b) const;  // this rank's progress note, for the other ranks' reports
  std::string report(const InFlight& f, double waited) const;

  std::unique_ptr<Communicator> owned_;
  Communicator& inner_;
  bool world_;  // leaves heartbeats
  double timeout_, grace_;
  OnTimeout user_on_timeout_;  // as given (empty: the default), for splits
  OnTimeout on_timeout_;
  std::atomic<std::int64_t> step_{-1};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::thread::id, InFlight> flight_;
  std::map<std::thread::id, std::string> ops_;
  std::map<std::thread::id, Posted> posted_;
  std::deque<FlightRecord> recorder_;
  std::int64_t next_seq_ = 0;
  std::thread monitor_;
};

}  // namespace ddplab
