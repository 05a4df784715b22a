// Why a prediction of a measured run may be far off, from what the store recorded about the run and the
// calibration: `ddplab validate` prints these under a run whose step error is large, so that a 70% error
// comes with its likely reason instead of none.
#pragma once
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"
#include "ddplab/simulator/calibration.hpp"

namespace ddplab {

// Each cause is one sentence. Checked: the run had more ranks than cores on its host; the calibration was
// measured at another world size, on another transport (the emulated test bed or not) or compute backend,
// or by another build of ddplab than the run (than this program, for a run that recorded no build). `calibration` may
// be null (no calibration: then only the run's own facts are checked).
std::vector<std::string> likely_causes(const RunRow& run, const CalibrationRecord* record,
                                       const Calibration* calibration);

}  // namespace ddplab
