// Model tables: layer-by-layer descriptions of models too large to train here (ResNet-50, BERT-large,
// GPT-2 XL, Llama-2-7B ship built in), loaded into a ModelSpec so strategies and the simulator can plan
// their steps. The format (CSV, described in strategies/models/README.md):
//
//   # comment lines and blank lines are ignored
//   name,params,forward_flops,backward_flops,activation_bytes
//   conv1,weight:64x3x7x7,236027904,472055808,3211264
//   bn1,weight:64;bias:64,1605632,3211264,3211264
//   relu,,802816,1605632,3211264
//
// One row per layer in execution order. params: ";"-separated "tensor:d0xd1x..." (empty for none); the
// parameter is named "<layer>.<tensor>". FLOPs and bytes are per sample, non-negative numbers. A sixth
// column, `tp` (header kModelTableHeaderTp), says how tensor parallelism splits the layer: "column", "row",
// "split" or empty (replicated; TpSplit in model_spec.hpp).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

// A malformed or unreadable table; the message names the file, line, column and field.
struct ModelTableError : InputError {
  using InputError::InputError;
};

// The header row every table starts with.
inline constexpr const char* kModelTableHeader = "name,params,forward_flops,backward_flops,activation_bytes";
inline constexpr const char* kModelTableHeaderTp = "name,params,forward_flops,backward_flops,activation_bytes,tp";

// A built-in name ("resnet50", ... see kBuiltinModelTables) -> its shipped file; any other value unchanged.
std::string model_table_path(const std::string& name_or_path);

// Parses a table; `path` is only for messages and the model's name (its file stem). A tensor of more than
// two dimensions becomes rows = shape[0], cols = the product of the rest (count exact, shape kept).
ModelSpec parse_model_table(const std::string& text, const std::string& path);
// Reads and parses a built-in table or a file. Throws ModelTableError.
ModelSpec load_model_table(const std::string& name_or_path);

// The scenario's model: ModelSpec::mlp(layers) for type "mlp", cnn_model_spec for "cnn", the loaded table
// for type "table".
ModelSpec model_spec_for(const ModelConfig& model);

}  // namespace ddplab
