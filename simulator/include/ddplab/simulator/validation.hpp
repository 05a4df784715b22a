// Validation: every measured configuration of a results store replayed on the simulator, predicted against
// measured (what `ddplab validate` prints and stores). Measured training runs are simulated with their own
// scenario, strategy and world size and compared on the medians of whole blocks of their step pattern (step
// time, comm time); compute comes from the calibration's per-layer times when it measured the run's model
// (a prediction), else from the run itself. Stored collective benches are replayed as the simulator replays
// the same collective anywhere (`native` as the backend's own choice: Open MPI's by size, NCCL's algorithm
// and protocol on the bench's preset). With a calibration its network fit replaces the scenario's links.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ddplab/core/store.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/simulator/steady_state.hpp"

namespace ddplab {

struct ValidationOptions {
  std::string calibration;  // name; empty: the latest stored, if any
  std::string network_model = "auto";
  int warmup = 2;                 // steps skipped at the start of each run, at least
  std::string compute = "auto";   // "auto" (the calibration's when it fits the run), "calibration", "measured"
  bool runs_only = false;         // leave the collective benches out
  double large_error_pct = 10.0;  // step errors beyond this get their likely causes (diagnosis.hpp)
};

// Where one run's step goes, measured and predicted (medians of whole steady blocks).
struct RunValidation {
  RunRow run;
  std::string strategy;
  int world_size = 0;
  SteadyState measured, predicted;
  bool compute_from_calibration = false;
  double step_error_pct = 0;
  bool large_error = false;                // |step error| > large_error_pct
  std::vector<std::string> likely_causes;  // when large_error: what diagnosis.hpp finds recorded
};

struct ValidationReport {
  std::string calibration;                 // the one used, or empty
  std::shared_ptr<const Calibration> fit;  // its fit, or null
  std::vector<ValidationRow> rows;         // as stored in table validations
  std::vector<RunValidation> runs;
  // Per world size, measured and predicted step times of the runs, in the same order (for Kendall's tau).
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> ranking;
  std::vector<std::string> not_compared;  // configurations of another transport than the calibration's
  std::vector<std::string> errors;        // configurations that could not be replayed, each named
};

// Validates the store's measured runs and benches and stores the rows (table validations). The constructor
// picks and loads the calibration (so that a caller can say which before any row), run() does the rest;
// on_row sees each row as it is made. Throws InputError for a bad option (an unknown compute
// source, compute "calibration" without a calibration) or an unknown calibration name.
class StoreValidation {
 public:
  StoreValidation(Store& store, const ValidationOptions& options);
  ~StoreValidation();
  const std::string& calibration() const;  // empty: the scenarios' own links
  const Calibration* fit() const;          // its fit, or null
  ValidationReport run(const std::function<void(const ValidationRow&)>& on_row = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

inline ValidationReport validate_store(Store& store, const ValidationOptions& options,
                                       const std::function<void(const ValidationRow&)>& on_row = {}) {
  return StoreValidation(store, options).run(on_row);
}

}  // namespace ddplab
