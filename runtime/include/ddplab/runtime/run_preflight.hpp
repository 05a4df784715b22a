// What `ddplab run` checks before mpirun starts: a setting the ranks would refuse only once they started (and
// once the strategies before the bad one trained) is refused here, at its file:line:col.
#pragma once
#include <string>

#include "ddplab/core/scenario.hpp"
#include "ddplab/runtime/fault_injection.hpp"

namespace ddplab {

// A model the runtime trains (the MLP or the CNN); a model table is for `ddplab simulate`. InputError at
// model.type.
void require_trainable_model(const Scenario& scenario);

// Every rule that depends on the world of `np` ranks: the layout fits and the runtime runs it, each strategy
// can be made there (a parameter server needs a worker besides its servers), ZeRO-2/3 only on the cpu backend,
// stragglers only slow ranks down, and an injected fault names one of the ranks. InputError (ScenarioError
// where a scenario setting is at fault).
void preflight_run(const Scenario& scenario, int np, const FaultInjection& fault);

}  // namespace ddplab
