// The closed sets every library shares, as enums (choice.hpp): what a model is, what runs the arithmetic,
// what carries the collectives, which collective a call is, and a stored run's status and source.
// Registries with entries of their own (policies, codecs, schedules, optimizers) are not here: they are
// looked up by name in strategies/.
//
// The enums and their name tables are plain C++17, so that the CUDA sources (nvcc, C++17) can see the
// strategies/ headers that use them; the helpers (choice.hpp: parsing, JSON, fmt) need C++20.
#pragma once
#include <array>
#include <string_view>
#include <utility>

namespace ddplab {

template <class E>
struct ChoiceNames;

// [model] type: "mlp", "cnn" and "gpt" are trained by the runtime; "table" is a model table (simulation only).
enum class ModelType { Mlp, Cnn, Gpt, Table };
template <>
struct ChoiceNames<ModelType> {
  static constexpr std::string_view what = "model type";
  static constexpr std::array names{
      std::pair{ModelType::Mlp, std::string_view("mlp")}, std::pair{ModelType::Cnn, std::string_view("cnn")},
      std::pair{ModelType::Gpt, std::string_view("gpt")}, std::pair{ModelType::Table, std::string_view("table")}};
};

// A GPT's parts ([model] norm, activation, position): GPT-2's are LayerNorm, GELU (tanh approximation) and
// learned positions; Llama's RMSNorm, SwiGLU and rotary embeddings.
enum class GptNorm { LayerNorm, RmsNorm };
template <>
struct ChoiceNames<GptNorm> {
  static constexpr std::string_view what = "norm";
  static constexpr std::array names{std::pair{GptNorm::LayerNorm, std::string_view("layernorm")},
                                    std::pair{GptNorm::RmsNorm, std::string_view("rmsnorm")}};
};
enum class GptActivation { Gelu, SwiGlu };
template <>
struct ChoiceNames<GptActivation> {
  static constexpr std::string_view what = "activation";
  static constexpr std::array names{std::pair{GptActivation::Gelu, std::string_view("gelu")},
                                    std::pair{GptActivation::SwiGlu, std::string_view("swiglu")}};
};
enum class GptPosition { Learned, Rotary };
template <>
struct ChoiceNames<GptPosition> {
  static constexpr std::string_view what = "position embedding";
  static constexpr std::array names{std::pair{GptPosition::Learned, std::string_view("learned")},
                                    std::pair{GptPosition::Rotary, std::string_view("rope")}};
};

// [train] backend: OpenBLAS + MPI; cuBLAS + NCCL; cuBLAS with MPI collectives staged through host memory.
enum class Backend { Cpu, Cuda, CudaMpi };
template <>
struct ChoiceNames<Backend> {
  static constexpr std::string_view what = "backend";
  static constexpr std::array names{std::pair{Backend::Cpu, std::string_view("cpu")},
                                    std::pair{Backend::Cuda, std::string_view("cuda")},
                                    std::pair{Backend::CudaMpi, std::string_view("cuda+mpi")}};
};
// What carries a backend's collectives: NCCL for "cuda", MPI otherwise.
enum class Transport { Mpi, Nccl };
template <>
struct ChoiceNames<Transport> {
  static constexpr std::string_view what = "transport";
  static constexpr std::array names{std::pair{Transport::Mpi, std::string_view("mpi")},
                                    std::pair{Transport::Nccl, std::string_view("nccl")}};
};
constexpr Transport transport_of(Backend b) { return b == Backend::Cuda ? Transport::Nccl : Transport::Mpi; }
constexpr bool on_gpu(Backend b) { return b != Backend::Cpu; }

// A collective call's kind. all_gather_shards gathers ZeRO shards of unequal size; push and pull are a
// parameter server's halves.
enum class Collective { Allreduce, ReduceScatter, AllGather, AllGatherShards, Push, Pull };
template <>
struct ChoiceNames<Collective> {
  static constexpr std::string_view what = "collective";
  static constexpr std::array names{std::pair{Collective::Allreduce, std::string_view("allreduce")},
                                    std::pair{Collective::ReduceScatter, std::string_view("reduce_scatter")},
                                    std::pair{Collective::AllGather, std::string_view("all_gather")},
                                    std::pair{Collective::AllGatherShards, std::string_view("all_gather_shards")},
                                    std::pair{Collective::Push, std::string_view("push")},
                                    std::pair{Collective::Pull, std::string_view("pull")}};
};

// A stored run's (or benchmark's) status. "abandoned" is never written: it is how a run reads whose writer
// is gone while it still says "running".
enum class RunStatus { Running, Completed, Failed, Interrupted, Abandoned };
template <>
struct ChoiceNames<RunStatus> {
  static constexpr std::string_view what = "run status";
  static constexpr std::array names{std::pair{RunStatus::Running, std::string_view("running")},
                                    std::pair{RunStatus::Completed, std::string_view("completed")},
                                    std::pair{RunStatus::Failed, std::string_view("failed")},
                                    std::pair{RunStatus::Interrupted, std::string_view("interrupted")},
                                    std::pair{RunStatus::Abandoned, std::string_view("abandoned")}};
};
// A stopped run that `ddplab run --resume` may continue.
constexpr bool resumable(RunStatus s) {
  return s == RunStatus::Failed || s == RunStatus::Interrupted || s == RunStatus::Abandoned;
}

// Where a stored run's figures come from.
enum class RunSource { Measured, Simulated };
template <>
struct ChoiceNames<RunSource> {
  static constexpr std::string_view what = "run source";
  static constexpr std::array names{std::pair{RunSource::Measured, std::string_view("measured")},
                                    std::pair{RunSource::Simulated, std::string_view("simulated")}};
};

}  // namespace ddplab

#if __cplusplus >= 202002L
#include "ddplab/core/choice.hpp"
#endif
