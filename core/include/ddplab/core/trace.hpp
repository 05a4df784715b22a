// Timelines as Chrome trace JSON (the Trace Event Format that Perfetto and chrome://tracing open): one
// process per rank ("rank N") with one thread per track ("compute", "comm"), every op a complete event.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddplab {

struct TraceEvent {
  int rank = 0;
  std::string track;  // "compute" | "comm" (thread 1 and 2); any other name gets its own thread after those
  std::string name;   // "backward 2", "sync_grads 0"
  double start_s = 0, dur_s = 0;
  nlohmann::json args = nlohmann::json::object();  // shown in the viewer's details pane (bytes, ...)
};

// The step an event belongs to (its args' "step"), -1 when it names none.
std::int64_t trace_step(const TraceEvent& e);

// The trace document: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": metadata}. Events are
// "ph":"X" with "ts"/"dur" in microseconds, "pid" = rank and "tid" = track; process_name, thread_name and
// sort-index metadata events name them.
nlohmann::json chrome_trace(const std::vector<TraceEvent>& events,
                            const nlohmann::json& metadata = nlohmann::json::object());

// Writes chrome_trace(events, metadata) to path. Throws InputError naming the path on I/O failure.
void write_chrome_trace(const std::string& path, const std::vector<TraceEvent>& events,
                        const nlohmann::json& metadata = nlohmann::json::object());

}  // namespace ddplab
