// The flight recorder's records (runtime/watchdog.hpp keeps each rank's last calls) and the merged view of
// `ddplab report --flight RUN`: the calls of every rank side by side, by sequence number, and the first one
// where they part (a rank that never reached it, a call still in flight, different calls at one number), as
// PyTorch's flight recorder analysis (fr_trace) shows it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ddplab {

struct FlightRecord {
  int rank = 0;
  std::int64_t seq = 0;    // this rank's call number since the job's watchdog started (over all its runs)
  std::int64_t step = -1;  // training step (-1: outside the step loop)
  std::string op;          // the plan op it belongs to ("sync_grads #2 on ring"), or empty
  std::string call;        // "allreduce of 50890 f32", "point-to-point wait", ...
  std::int64_t bytes = 0;
  double start_s = 0;   // wall clock, seconds since the epoch
  double end_s = -1;    // -1: still in flight when the recorder was dumped
  bool failed = false;  // it ended with an error (end_s is when)
  bool in_flight() const { return end_s < 0; }
};

// A rank's dump as JSON text, and back (InputError names what is wrong).
std::string flight_to_json(const std::vector<FlightRecord>& records);
std::vector<FlightRecord> flight_from_json(const std::string& text);

// Every rank's records side by side (world_size ranks; a rank without records is named), ending with the
// first call where they part, or "no divergence".
std::string flight_report(const std::vector<FlightRecord>& records, int world_size);

}  // namespace ddplab
