// The driver of the harnesses in builds without libFuzzer (gcc): runs LLVMFuzzerTestOneInput once on every
// file named, or found under a folder named, so that the seed corpora and every crash that became a
// regression input run in the ordinary test suite. Exits 1 when it found no input, so that a missing corpus
// fails rather than passes.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz_check.hpp"

namespace {

void run_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  if (!f.eof() && f.fail()) ddplab::fuzz::report("cannot read " + p.string());
  std::fprintf(stderr, "input %s (%zu bytes)\n", p.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  int inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg = argv[i];
    if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& p : files) run_file(p), ++inputs;
    } else if (std::filesystem::is_regular_file(arg)) {
      run_file(arg), ++inputs;
    }
  }
  std::printf("%d inputs replayed\n", inputs);
  return inputs > 0 ? 0 : 1;
}
