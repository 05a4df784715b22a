// A checkpoint file: one rank's state at a step, as small JSON (identity, counters, layout) plus named float
// tensors (parameters, optimizer and codec state). Written atomically: a temporary file in the same folder,
// fsync, rename, fsync of the folder; so a crash leaves the previous file or the new one, never half of one.
// Every tensor carries a CRC-32, so a damaged file is refused rather than resumed from.
//
// Layout (little-endian): "DDPLABCK", u32 format version, u32 0, u64 JSON length, the JSON, then the tensors
// in the order of the JSON's "tensors" array ({name, count, crc32}), each count float32s.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "ddplab/core/error.hpp"

namespace ddplab {

// A checkpoint file that is missing, truncated or of another format: input (the run it is resumed from names it).
struct CheckpointError : InputError {
  using InputError::InputError;
};

struct Checkpoint {
  static constexpr std::uint32_t kFormatVersion = 1;
  nlohmann::json meta = nlohmann::json::object();  // must not hold a "tensors" key: the file's index goes there
  std::map<std::string, std::vector<float>> tensors;

  // A tensor by name; throws CheckpointError naming it (and `what` the file is) when it is missing or has
  // another size than `count`.
  const std::vector<float>& tensor(const std::string& name, std::size_t count, const std::string& what) const;
};

// Writes `c` to `path` atomically (see above). Returns the bytes written. Throws CheckpointError naming the
// path and the system's reason.
std::uint64_t write_checkpoint(const std::string& path, const Checkpoint& c);
// Reads and checks a file written by write_checkpoint. Throws CheckpointError naming the path and what is wrong:
// missing, not a checkpoint, another format version, truncated, a tensor whose CRC does not match.
Checkpoint read_checkpoint(const std::string& path);

// Where two JSON values differ, as "key.path: A in the checkpoint, B now" lines joined by "; " (at most
// `limit` of them, then "and N more"); keys in `ignored` (full dotted paths) may differ. "" when they agree.
std::string json_differences(const nlohmann::json& saved, const nlohmann::json& now,
                             const std::set<std::string>& ignored, std::size_t limit = 4);

}  // namespace ddplab
