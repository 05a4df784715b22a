// Model tables (CSV, see model_library.hpp) -> ModelSpec. Every error names file:line:col and the field.
#include "ddplab/strategies/model_library.hpp"

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/cnn_layout.hpp"
#include "ddplab/strategies/gpt.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#ifndef DDPLAB_MODELS_DIR
#error "DDPLAB_MODELS_DIR must name strategies/models (set in strategies/CMakeLists.txt)"
#endif

namespace ddplab {
namespace {

// One comma-separated cell of a row and the 1-based column where it starts.
struct Cell {
  std::string_view text;
  std::size_t col = 1;
};

std::string_view trim(std::string_view s, std::size_t& col) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
    ++col;
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Splits `line` at `sep`, trimming each piece; columns are relative to `col0` (the column of line[0]).
std::vector<Cell> split(std::string_view line, char sep, std::size_t col0) {
  std::vector<Cell> cells;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = line.find(sep, start);
    const std::string_view piece = line.substr(start, end == std::string_view::npos ? line.npos : end - start);
    std::size_t col = col0 + start;
    const std::string_view text = trim(piece, col);
    cells.push_back({text, col});
    if (end == std::string_view::npos) return cells;
    start = end + 1;
  }
}

std::string quote(std::string_view s) { return fmt::format("\"{}\"", s); }

bool valid_name(std::string_view s, bool allow_dash) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           (allow_dash && c == '-');
  });
}

class TableParser {
 public:
  explicit TableParser(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(std::size_t line, std::size_t col, const std::string& message) const {
    throw ModelTableError(InputLocation{path_, static_cast<int>(line), static_cast<int>(col), {}}, message);
  }

  ModelSpec parse(const std::string& text) {
    ModelSpec m;
    m.name = std::filesystem::path(path_).stem().string();
    std::istringstream in(text);
    std::string raw;
    std::size_t line = 0;
    bool header = false;
    while (std::getline(in, raw)) {
      ++line;
      std::size_t col = 1;
      const std::string_view s = trim(raw, col);
      if (s.empty() || s.front() == '#') continue;
      if (!header) {
        if (s != kModelTableHeader && s != kModelTableHeaderTp)
          fail(line, col,
               fmt::format("the header must be {} or {}, got {}", quote(kModelTableHeader), quote(kModelTableHeaderTp),
                           quote(s)));
        header = true;
        fields_ = s == kModelTableHeader ? 5 : 6;
        continue;
      }
      row(m, s, line, col);
    }
    if (!header) fail(std::max<std::size_t>(line, 1), 1, fmt::format("no header row {}", quote(kModelTableHeader)));
    if (m.layers.empty()) fail(line, 1, "the table has no layers (one row per layer after the header)");
    if (m.params.empty()) fail(line, 1, "the table has no parameters (every row's params field is empty)");
    return m;
  }

 private:
  void row(ModelSpec& m, std::string_view s, std::size_t line, std::size_t col0) {
    const std::vector<Cell> cells = split(s, ',', col0);
    if (cells.size() != fields_)
      fail(line, col0,
           fmt::format("a row has {} fields ({}), this one has {}", fields_,
                       fields_ == 5 ? kModelTableHeader : kModelTableHeaderTp, cells.size()));
    const int layer = static_cast<int>(m.layers.size());
    LayerSpec l;
    const Cell& name = cells[0];
    if (!valid_name(name.text, true))
      fail(line, name.col,
           fmt::format("name must be a non-empty layer name of letters, digits, '_', '.' and '-', got {}",
                       quote(name.text)));
    if (auto [it, fresh] = layer_line_.emplace(std::string(name.text), line); !fresh)
      fail(line, name.col,
           fmt::format("name must be unique (line {} has the same), got {}", it->second, quote(name.text)));
    l.name = std::string(name.text);
    l.forward_flops = number(cells[2], "forward_flops", line);
    l.backward_flops = number(cells[3], "backward_flops", line);
    l.activation_bytes = number(cells[4], "activation_bytes", line);
    if (fields_ == 6) l.tp = split_kind(cells[5], line);
    if (!cells[1].text.empty())
      for (const Cell& t : split(cells[1].text, ';', cells[1].col)) m.params.push_back(tensor(t, l.name, layer, line));
    m.layers.push_back(std::move(l));
  }

  TpSplit split_kind(const Cell& c, std::size_t line) const {
    for (TpSplit k : {TpSplit::None, TpSplit::Column, TpSplit::Row, TpSplit::Split})
      if (c.text == tp_split_name(k)) return k;
    fail(line, c.col,
         fmt::format("tp must be \"column\", \"row\", \"split\" or empty (replicated), got {}", quote(c.text)));
  }

  double number(const Cell& c, const char* field, std::size_t line) const {
    double v = 0;
    const char* end = c.text.data() + c.text.size();
    const auto [ptr, ec] = std::from_chars(c.text.data(), end, v);
    if (c.text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v) || v < 0)
      fail(line, c.col, fmt::format("{} must be a non-negative number (per sample), got {}", field, quote(c.text)));
    return v;
  }

  // "weight:64x3x7x7" -> a ParamSpec named "<layer>.weight".
  ParamSpec tensor(const Cell& c, const std::string& layer_name, int layer, std::size_t line) {
    const std::size_t colon = c.text.find(':');
    const std::string_view tname = colon == c.text.npos ? c.text : c.text.substr(0, colon);
    if (colon == c.text.npos || !valid_name(tname, false))
      fail(line, c.col,
           fmt::format("params must be \";\"-separated tensor:shape entries such as \"weight:64x3x7x7\", got {}",
                       quote(c.text)));
    ParamSpec p;
    p.name = layer_name + "." + std::string(tname);
    p.layer = layer;
    std::size_t count = 1;
    for (const Cell& d : split(c.text.substr(colon + 1), 'x', c.col + colon + 1)) {
      std::uint64_t v = 0;
      const char* end = d.text.data() + d.text.size();
      const auto [ptr, ec] = std::from_chars(d.text.data(), end, v);
      if (d.text.empty() || ec != std::errc() || ptr != end || v == 0)
        fail(line, d.col,
             fmt::format("params: tensor {} has a bad dimension {} (dimensions are positive integers "
                         "joined by 'x', such as 64x3x7x7)",
                         quote(tname), quote(d.text)));
      if (count > std::numeric_limits<std::size_t>::max() / v)
        fail(line, c.col, fmt::format("params: tensor {} has more than 2^64 elements", quote(tname)));
      count *= v;
      p.shape.push_back(static_cast<std::size_t>(v));
    }
    p.rows = p.shape.front();
    p.cols = count / p.rows;
    if (auto [it, fresh] = param_line_.emplace(p.name, line); !fresh)
      fail(line, c.col, fmt::format("params: parameter {} is already defined on line {}", quote(p.name), it->second));
    return p;
  }

  std::string path_;
  std::size_t fields_ = 5;                                      // 6 with the tp column
  std::map<std::string, std::size_t> layer_line_, param_line_;  // name -> line that defined it
};

}  // namespace

std::string model_table_path(const std::string& name_or_path) {
  for (std::string_view b : kBuiltinModelTables)
    if (name_or_path == b) return fmt::format("{}/{}.csv", DDPLAB_MODELS_DIR, b);
  return name_or_path;
}

ModelSpec parse_model_table(const std::string& text, const std::string& path) { return TableParser(path).parse(text); }

ModelSpec load_model_table(const std::string& name_or_path) {
  const std::string path = model_table_path(name_or_path);
  std::ifstream f(path, std::ios::binary);
  std::error_code ec;
  if (!f || std::filesystem::is_directory(path, ec))
    throw ModelTableError(InputLocation{.file = path},
                          fmt::format("cannot open model table ({})", f ? "it is a directory" : std::strerror(errno)));
  std::ostringstream text;
  text << f.rdbuf();
  return parse_model_table(text.str(), path);
}

ModelSpec model_spec_for(const ModelConfig& model) {
  switch (model.type) {
    case ModelType::Mlp:
      return ModelSpec::mlp(model.layers);
    case ModelType::Cnn:
      return cnn_model_spec(cnn_layout(model));
    case ModelType::Gpt:
      return gpt_model_spec(model.gpt);
    case ModelType::Table:
      return load_model_table(model.table);
  }
  throw InternalError(fmt::format("model_spec_for: model type {} has no spec", static_cast<int>(model.type)));
}

}  // namespace ddplab
