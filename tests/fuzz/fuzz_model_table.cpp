// The model-table CSV reader (strategies/models/README.md): any text gives a model or a ModelTableError
// naming the file.
#include <string>

#include "ddplab/strategies/model_library.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = "fuzz.csv";
  const std::string text(reinterpret_cast<const char*>(data), size);
  ddplab::fuzz::expect_clear_error<ddplab::ModelTableError>(path, [&] {
    const ddplab::ModelSpec m = ddplab::parse_model_table(text, path);
    if (m.params.empty() && m.layers.empty()) ddplab::fuzz::report("a table accepted without layers");
    (void)m.parameter_count();
  });
  return 0;
}
