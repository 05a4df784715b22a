// The errors ddplab throws: one hierarchy under ddplab::Error, three kinds, each with the exit code `ddplab`
// ends with when one reaches main.
//   InputError     bad input from the user: a scenario, a command-line value, a points, table, calibration or
//                  results file, a store that does not hold what was asked. Exit 2.
//   RunFault       a fault during a run: a rank died, a hang or timeout, replicas that disagree, a failed
//                  communicator, a simulation that did not finish. Exit 1.
//   InternalError  a broken invariant: a bug in ddplab. Exit 70 (EX_SOFTWARE).
// Each keeps its message as what() and carries, besides, where it happened as fields, for code that must
// decide something (which field to point at): nothing decides by reading the message.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ddplab {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  ~Error() override;
  // What `ddplab` exits with when this error ends it.
  virtual int exit_code() const noexcept = 0;
};

// Where bad input was found; any part may be unknown. A command-line option is a field without a file.
struct InputLocation {
  std::string file = {};
  std::optional<int> line = {}, column = {};
  std::string field = {};  // "train.lr", "strategy[0].schedule", "codec_options.ratio", "--np"
  // A position as scenario readers write it: "FILE:LINE:COL", "FILE:LINE" or "FILE".
  static InputLocation at(std::string_view position, std::string field = {});
  // The position back as text, with the parts known ("FILE:LINE:COL"); "" without a file.
  std::string position() const;
};

class InputError : public Error {
 public:
  static constexpr int kExitCode = 2;
  // A message that names what it needs to; the field, where the caller knows it, for code that points at it.
  explicit InputError(const std::string& message, std::string field = {});
  // what() = POSITION + ": " + detail (just detail when the location has no file).
  InputError(InputLocation where, const std::string& detail);
  // A message that names its place itself, and that place as fields.
  InputError(const std::string& message, InputLocation where);
  int exit_code() const noexcept override { return kExitCode; }
  const InputLocation& where() const noexcept { return where_; }
  const std::string& file() const noexcept { return where_.file; }
  std::optional<int> line() const noexcept { return where_.line; }
  std::optional<int> column() const noexcept { return where_.column; }
  const std::string& field() const noexcept { return where_.field; }
  // The message without its position (what is wrong, not where).
  const std::string& detail() const noexcept { return detail_; }
  // The same error, with `prefix` in front of its message, for a caller that adds context; kind and fields kept.
  InputError prefixed(std::string_view prefix) const;

 private:
  InputError(const std::string& message, InputLocation where, std::string detail);
  InputLocation where_;
  std::string detail_;
};

// Where a run failed; any part may be unknown.
struct RunLocation {
  std::optional<int> rank = {};
  std::optional<std::int64_t> step = {};
  std::string op = {};  // "allreduce", "resume", "consistency check"
};

class RunFault : public Error {
 public:
  static constexpr int kExitCode = 1;
  explicit RunFault(const std::string& message, RunLocation where = {});
  int exit_code() const noexcept override { return kExitCode; }
  const RunLocation& where() const noexcept { return where_; }
  std::optional<int> rank() const noexcept { return where_.rank; }
  std::optional<std::int64_t> step() const noexcept { return where_.step; }
  const std::string& op() const noexcept { return where_.op; }
  RunFault prefixed(std::string_view prefix) const;

 private:
  RunLocation where_;
};

class InternalError : public Error {
 public:
  static constexpr int kExitCode = 70;  // EX_SOFTWARE
  using Error::Error;
  int exit_code() const noexcept override { return kExitCode; }
};

// The exit code `e` ends ddplab with: a ddplab::Error's own; InternalError's for any other exception.
int exit_code_of(const std::exception& e) noexcept;

// The same in a rank of a running job, which ends the job with it (Communicator::abort): a ddplab::Error's own,
// InternalError's for a std::logic_error, and a run fault's for any other exception: the CUDA plugin's (its
// CUDA, cuBLAS and NCCL failures cannot be a ddplab::Error across the plugin's boundary), running out of memory.
int rank_exit_code(const std::exception& e) noexcept;

}  // namespace ddplab
