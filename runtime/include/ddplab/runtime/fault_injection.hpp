// Faults injected on purpose, to test how a job reacts to one: the testing option --inject-fault of `ddplab
// run` and `ddplab bench collectives` (docs/reliability.md) is parsed here once, at the command line, and the
// launcher passes it on to every rank it starts, which acts on it where the fault's kind says.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace ddplab {

enum class FaultKind {
  None,
  Exit,     // exit:RANK:STEP: the rank exits (status 3) as that step begins; the others must not hang
  Perturb,  // perturb:RANK: one parameter of the rank changed before the final check, which must then fail
  Bitflip,  // bitflip:RANK:STEP: the lowest bit of one parameter of the rank flipped after that step, which
            // train.consistency_every must catch at its next check
  Wrong,    // wrong:SCHEDULE:BYTES: one element of the last rank's result corrupted in the collective bench's
            // correctness pass of that schedule and size, which #wrong and the exit code must show
};

struct FaultInjection {
  FaultKind kind = FaultKind::None;
  int rank = -1;            // Exit, Perturb, Bitflip
  std::int64_t step = -1;   // Exit, Bitflip
  std::string schedule;     // Wrong
  std::uint64_t bytes = 0;  // Wrong

  // Whether this fault is one of `k` on rank `r`, at step `s` for the kinds that name a step.
  bool strikes(FaultKind k, int r, std::int64_t s = -1) const {
    return kind == k && rank == r && (k == FaultKind::Perturb || step == s);
  }
  // Whether this fault corrupts the bench's result of `sched` at `b` bytes (on the last rank).
  bool corrupts(std::string_view sched, std::uint64_t b) const {
    return kind == FaultKind::Wrong && schedule == sched && bytes == b;
  }
};

// One of the `accepted` kinds, from its text (above). Throws InputError, naming `option`, for anything else:
// another kind, a missing or extra field, a rank, step or size that is not a whole number >= 0.
FaultInjection parse_fault_injection(std::string_view text, std::string_view option,
                                     std::initializer_list<FaultKind> accepted);

// The text parse_fault_injection reads back ("" for none): what a launcher passes on to its ranks.
std::string fault_injection_text(const FaultInjection& fault);

}  // namespace ddplab
