// docs/reference.md, generated from the registries (reference.hpp).
#include "ddplab/strategies/reference.hpp"

#include <cctype>

#include <fmt/format.h>

#include "ddplab/core/scenario.hpp"
#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/optimizer.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

namespace {

// A table cell: pipes would end the cell.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out.empty() ? "-" : out;
}

// A registry's one-line summary as a sentence.
std::string sentence(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text.empty() || text.back() == '.' ? text : text + ".";
}

// One table of options, or a line saying there are none.
std::string options_table(const std::vector<OptionSpec>& specs) {
  if (specs.empty()) return "No options.\n";
  std::string out = "| option | value | default | what it does |\n|---|---|---|---|\n";
  for (const OptionSpec& s : specs)
    out += fmt::format("| `{}` | {} | `{}` | {} |\n", s.name, s.requirement(), s.fallback, cell(s.help));
  return out;
}

// Each entry of a registry: "### `name`", its summary as a sentence, the lines particular to that registry
// (`lines(entry)`, each ending in a newline; may be empty), and its options.
template <class Info, class Lines>
std::string entries(const std::vector<Info>& registry, Lines lines) {
  std::string out;
  for (const Info& e : registry) {
    out += fmt::format("### `{}`\n\n{}\n\n", e.name, sentence(e.summary));
    const std::string particular = lines(e);
    if (!particular.empty()) out += particular + "\n";
    out += options_table(e.options) + "\n";
  }
  return out;
}

template <class Info>
std::string no_lines(const Info&) {
  return "";
}

const char* shards_name(Shards s) {
  switch (s) {
    case Shards::None:
      return "none (every rank updates whole buckets)";
    case Shards::Ranks:
      return "ranks (rank r updates shard r)";
    case Shards::Servers:
      return "servers (parameter servers update their shards)";
  }
  return "";
}

std::string policies_section() {
  return "## Sync policies\n\n`[[strategy]] policy`: when and how gradients are synchronised.\n\n" +
         entries(policies(), [](const PolicyInfo& p) {
           std::string out = fmt::format("- buckets: {}\n", p.bucketed ? "by `bucket_cap` and `first_bucket_cap`"
                                                                       : "one bucket of every gradient");
           out += fmt::format("- optimizer shards: {}\n", shards_name(p.shards));
           if (p.zero > 0) out += fmt::format("- ZeRO stage: {}\n", p.zero);
           out += fmt::format("- `data.uneven = \"join\"`: {}\n", p.joins ? "supported" : "refused");
           if (!p.caveat.empty()) out += fmt::format("- caveat of its simulated figures: {}\n", p.caveat);
           return out;
         });
}

std::string codecs_section() {
  return "## Codecs\n\n`[[strategy]] codec`, with `codec_options = { ... }`: how a bucket is encoded on the wire.\n\n" +
         entries(codecs(), no_lines<CodecInfo>);
}

std::string schedules_section() {
  std::string out =
      "## Schedules\n\n`[[strategy]] schedule`: the collective algorithm, as per-rank send, receive and reduce steps. "
      "`native` is the backend's own collective (Open MPI's or NCCL's allreduce), not a schedule of steps.\n\n"
      "| schedule | collective | what it does |\n|---|---|---|\n";
  for (const ScheduleInfo& s : schedules())
    out += fmt::format("| `{}` | {} | {} |\n", s.name, s.collective, cell(s.summary));
  return out + "\n";
}

std::string optimizers_section() {
  return "## Optimizers\n\n`[train] optimizer`, with `optimizer_options = { ... }`.\n\n" +
         entries(optimizers(), [](const OptimizerInfo& o) {
           std::string out = fmt::format("- state: {} float{} per parameter{}\n", o.state_slots,
                                         o.state_slots == 1 ? "" : "s", o.scratch ? ", plus a scratch buffer" : "");
           if (o.per_tensor) out += "- per-tensor trust ratio: refused by policies that shard the update\n";
           out += fmt::format("- memory moved per parameter and update: {:g} bytes\n", o.bytes_per_param);
           return out;
         });
}

std::string lr_schedules_section() {
  return "## Learning-rate schedules\n\n`[train] lr_schedule`, with `lr_schedule_options = { ... }`: the decay after "
         "warm-up.\n\n" +
         entries(lr_schedules(), no_lines<LrScheduleInfo>);
}

std::string pipeline_section() {
  std::string out =
      "## Pipeline schedules\n\n`[parallel] pipeline_schedule`: the order of a stage's forward and backward passes.\n\n"
      "| schedule | interleaved chunks | what it does |\n|---|---|---|\n";
  for (const PipelineInfo& p : pipeline_schedules())
    out += fmt::format("| `{}` | {} | {} |\n", p.name, p.interleaved ? "yes (`virtual_stages` >= 2)" : "no",
                       cell(p.summary));
  return out + "\n";
}

std::string presets_section() {
  std::string out =
      "## Cluster presets\n\n`[cluster] preset`: a named cluster; fields set next to it override the preset's.\n\n"
      "| preset | cluster | device peak | device memory | network model |\n|---|---|---|---|---|\n";
  for (std::string_view name : kClusterPresets) {
    ClusterConfig c;
    apply_cluster_preset(c, name);
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", name, cell(describe_cluster(c)),
                       c.device_flops ? fmt::format("{:g} TFLOP/s", *c.device_flops / 1e12) : "-",
                       c.device_memory ? fmt::format("{:g} GB", *c.device_memory / 1e9) : "-", c.network_model);
  }
  return out + "\n";
}

}  // namespace

std::string reference_markdown() {
  std::string out =
      "# Reference: strategies, schedules, optimizers, presets\n\n"
      "Here you look up every name a scenario can use, with its options and defaults. This page is generated "
      "from the registries by `ddplab reference > docs/reference.md`; a unit test fails when it differs from "
      "what the command prints. The guide to choosing among them is in [the user guide](README.md).\n\n";
  out += policies_section();
  out += codecs_section();
  out += schedules_section();
  out += optimizers_section();
  out += lr_schedules_section();
  out += pipeline_section();
  out += presets_section();
  while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

}  // namespace ddplab
