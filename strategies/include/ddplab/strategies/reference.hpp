// The registries as a Markdown page (docs/reference.md): every sync policy, codec, schedule, optimizer,
// learning-rate schedule, pipeline schedule and cluster preset, with their options and defaults. Printed by
// `ddplab reference`; a test holds the committed page to it, so the page never drifts from the code.
#pragma once
#include <string>

namespace ddplab {

std::string reference_markdown();

}  // namespace ddplab
