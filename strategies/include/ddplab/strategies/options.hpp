// Typed options of a registry entry: a policy's [[strategy]] keys (StrategyConfig::policy_options) and a
// codec's codec_options. One definition of each option's type, range, default and meaning, used to check a
// scenario, to read the values, and by tests that enumerate the registries. Values travel as text (as
// written in the scenario, and in stored JSON).
#pragma once
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace ddplab {

enum class OptionKind { Integer, Number, Boolean };

struct OptionSpec {
  std::string name;
  OptionKind kind = OptionKind::Integer;
  double min = 0;                                        // Integer, Number: the smallest accepted value
  double max = std::numeric_limits<double>::infinity();  // and the largest
  bool min_excluded = false;                             // Number: min itself refused ("in (0, 1]")
  std::string fallback;                                  // the value when unset, as text
  std::string example;                                   // a valid value other than the fallback
  std::string help;                                      // one line: what it does
  bool max_excluded = false;                             // Number: max itself refused ("in [0, 1)")
  // What a value must be: "an integer >= 1", "a number >= 0", "in (0, 1]", "in [0, 1)", "true or false".
  std::string requirement() const;
};

using OptionValues = std::map<std::string, std::string>;

const OptionSpec* find_option(const std::vector<OptionSpec>& specs, const std::string& name);
// "ratio, error_feedback", or "" for none.
std::string option_names(const std::vector<OptionSpec>& specs);
// True when `text` is a value of the option's type within its range.
bool option_accepts(const OptionSpec& spec, const std::string& text);

// Checks every value set against `specs`: unknown keys first (so a typo is reported as such rather than
// silently ignored), then each value's type and range. Throws InputError "WHAT: unknown option
// "KEY" (known: ...)" or "WHAT: KEY must be REQUIREMENT, got "TEXT"", WHAT being "codec topk" and the like;
// its field() is KEY.
void check_options(const std::string& what, const std::vector<OptionSpec>& specs, const OptionValues& values);

// The value set in `values`, else the option's fallback. Throws InternalError for a name not in `specs` or an
// option of another kind (option_number reads integers too), and InputError "NAME must be REQUIREMENT,
// got "TEXT"" (field() NAME) for a value it does not accept.
long long option_integer(const std::vector<OptionSpec>& specs, const OptionValues& values, const std::string& name);
double option_number(const std::vector<OptionSpec>& specs, const OptionValues& values, const std::string& name);
bool option_bool(const std::vector<OptionSpec>& specs, const OptionValues& values, const std::string& name);

}  // namespace ddplab
