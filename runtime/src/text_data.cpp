// load_fortunes (data.hpp): Debian's fortune files as byte-level language-model data.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "ddplab/runtime/data.hpp"

namespace ddplab {

namespace {

// The fortunes of one file: the text between its lines holding only "%".
std::vector<std::string> split_fortunes(const std::string& text) {
  std::vector<std::string> out;
  std::string current, line;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    if (line == "%") {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
    } else {
      current += line + "\n";
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

}  // namespace

Dataset load_fortunes(const std::string& dir, int seq, bool train) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && !it->is_symlink() && !it->path().has_extension()) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  std::string stream;
  std::size_t count = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) throw DataError(fmt::format("{}: cannot read", f.string()));
    for (const std::string& fortune : split_fortunes(text.str()))
      if ((count++ % 10 == 9) != train) stream += fortune + "%\n";
  }
  if (count == 0)
    throw DataError(
        fmt::format("{}: no fortune files (data.dataset = \"fortunes\" reads Debian's fortunes package: "
                    "apt-get install fortunes, or scripts/setup.sh)",
                    dir));
  const std::size_t n = stream.size() > 1 ? (stream.size() - 1) / static_cast<std::size_t>(seq) : 0;
  if (n == 0)
    throw DataError(fmt::format("{}: the {} set has {} bytes, less than one sequence of {} tokens", dir,
                                train ? "training" : "validation", stream.size(), seq));
  Dataset d;
  d.features = seq;
  d.classes = 256;
  d.labels_per_sample = seq;
  d.images.resize(n * static_cast<std::size_t>(seq));
  d.labels.resize(d.images.size());
  for (std::size_t i = 0; i < d.images.size(); ++i) {
    d.images[i] = static_cast<float>(static_cast<unsigned char>(stream[i]));
    d.labels[i] = static_cast<unsigned char>(stream[i + 1]);
  }
  return d;
}

}  // namespace ddplab
