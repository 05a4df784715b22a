// The optimizer and learning-rate schedule registries, the lr plan that combines scaling, warm-up and
// decay, and the [train] checks against them.
#include <cmath>
#include <limits>
#include <numbers>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "optimizers/optimizer_impl.hpp"

namespace ddplab {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

OptionSpec unit_interval(const char* name, const char* fallback, const char* example, const char* help) {
  OptionSpec s{name, OptionKind::Number, 0, 1, false, fallback, example, help};
  s.max_excluded = true;
  return s;
}
OptionSpec positive(const char* name, const char* fallback, const char* example, const char* help) {
  return {name, OptionKind::Number, 0, inf, true, fallback, example, help};
}
OptionSpec flag(const char* name, const char* fallback, const char* example, const char* help) {
  return {.name = name, .kind = OptionKind::Boolean, .max = 1, .fallback = fallback, .example = example, .help = help};
}
std::vector<OptionSpec> adam_options(const char* eps) {
  return {unit_interval("beta1", "0.9", "0.95", "decay of the first moment"),
          unit_interval("beta2", "0.999", "0.98", "decay of the second moment"),
          positive("eps", eps, "1e-6", "added to the root of the second moment")};
}

// The schedules' decay factors; t counts updates after warm-up from 0, total (>= 1) of them.
double constant_factor(const OptionValues&, std::int64_t, std::int64_t) { return 1.0; }
double cosine_factor(const OptionValues& o, std::int64_t t, std::int64_t total) {
  const double floor = option_number(find_lr_schedule("cosine")->options, o, "min_factor");
  // From the peak at the first update after warm-up to the floor at the last (t = total - 1).
  const double progress = total > 1 ? std::min(1.0, static_cast<double>(t) / static_cast<double>(total - 1)) : 1.0;
  return floor + (1.0 - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}
double step_factor(const OptionValues& o, std::int64_t t, std::int64_t) {
  const auto& specs = find_lr_schedule("step")->options;
  return std::pow(option_number(specs, o, "gamma"), static_cast<double>(t / option_integer(specs, o, "step_size")));
}

std::string names_of(const auto& entries) {
  std::string out;
  for (const auto& e : entries) out += (out.empty() ? "\"" : ", \"") + e.name + "\"";
  return out;
}

}  // namespace

// bytes_per_param: what one fused pass (PyTorch's fused kernels) reads and writes per fp32 parameter with
// the default options: SGD reads p, g, buf and writes p, buf (20 B); Adam reads p, g, m, v and writes p, m, v
// (28 B); LARS adds a read of p and g for the norms; LAMB writes its step, reads it with p for the norms
// and again to apply it. ddplab's own updates are several passes (optimizer_impl.hpp) and move more: a
// calibration or a measured run times them, and the simulator prefers those times.
const std::vector<OptimizerInfo>& optimizers() {
  using namespace optimizer_detail;
  static const std::vector<OptimizerInfo> all = {
      {.name = "sgd",
       .summary = "SGD with momentum (and Nesterov), as torch.optim.SGD",
       .options = {unit_interval("momentum", "0.9", "0.0", "decay of the momentum buffer (0 = plain SGD)"),
                   unit_interval("dampening", "0", "0.1", "share of the gradient left out of the momentum buffer"),
                   flag("nesterov", "false", "true", "step along g + momentum * buf")},
       .state_slots = 1,
       .bytes_per_param = 20,
       .make = make_sgd},
      {.name = "adam",
       .summary = "Adam with L2 weight decay added to the gradient, as torch.optim.Adam",
       .options = adam_options("1e-8"),
       .state_slots = 2,
       .bytes_per_param = 28,
       .make = make_adam},
      {.name = "adamw",
       .summary = "Adam with decoupled weight decay (p *= 1 - lr wd), as torch.optim.AdamW",
       .options = adam_options("1e-8"),
       .state_slots = 2,
       .bytes_per_param = 28,
       .make = make_adamw},
      {.name = "rmsprop",
       .summary = "RMSprop (not centered), as torch.optim.RMSprop",
       .options = {unit_interval("alpha", "0.99", "0.9", "decay of the mean square"),
                   positive("eps", "1e-8", "1e-6", "added to the root of the mean square"),
                   unit_interval("momentum", "0", "0.9", "decay of the momentum buffer (0 = none)")},
       .state_slots = 2,
       .bytes_per_param = 20,
       .make = make_rmsprop},
      {.name = "lars",
       .summary =
           "LARS: SGD with momentum and a per-tensor trust ratio eta ||w|| / (||g|| + wd ||w||) (You et al. 2017)",
       .options = {unit_interval("momentum", "0.9", "0.0", "decay of the momentum buffer"),
                   positive("eta", "0.001", "0.02", "trust coefficient"),
                   positive("eps", "1e-9", "1e-8", "added to the trust ratio's denominator"),
                   flag("exclude_vectors", "true", "false", "biases keep the plain learning rate and no weight decay")},
       .state_slots = 1,
       .per_tensor = true,
       .bytes_per_param = 28,
       .make = make_lars},
      {.name = "lamb",
       .summary = "LAMB: Adam's step scaled per tensor by ||w|| / ||step|| (You et al. 2019)",
       .options = adam_options("1e-6"),
       .state_slots = 2,
       .scratch = true,
       .per_tensor = true,
       .bytes_per_param = 48,
       .make = make_lamb},
  };
  return all;
}

const OptimizerInfo* find_optimizer(const std::string& name) {
  for (const auto& o : optimizers())
    if (o.name == name) return &o;
  return nullptr;
}

bool optimizer_runs_with(const OptimizerInfo& optimizer, const PolicyInfo& policy) {
  return !optimizer.per_tensor || policy.shards == Shards::None;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const OptionValues& options) {
  const OptimizerInfo* info = find_optimizer(name);
  if (!info) throw InputError(fmt::format("unknown optimizer \"{}\" (known: {})", name, names_of(optimizers())));
  check_options("optimizer " + name, info->options, options);
  return info->make(options);
}

const std::vector<LrScheduleInfo>& lr_schedules() {
  static const std::vector<LrScheduleInfo> all = {
      {"constant", "the peak learning rate after warm-up", {}, constant_factor},
      {"cosine",
       "cosine decay from the peak to min_factor x peak at the last update (Loshchilov & Hutter)",
       {{"min_factor", OptionKind::Number, 0, 1, false, "0", "0.01", "the last update's share of the peak"}},
       cosine_factor},
      {"step",
       "the peak times gamma^(t / step_size), t the update after warm-up (torch's StepLR)",
       {{"step_size", OptionKind::Integer, 1, inf, false, "1000", "200", "updates between decays"},
        positive("gamma", "0.1", "0.5", "factor at each decay")},
       step_factor},
  };
  return all;
}

const LrScheduleInfo* find_lr_schedule(const std::string& name) {
  for (const auto& s : lr_schedules())
    if (s.name == name) return &s;
  return nullptr;
}

double LrPlan::lr(std::int64_t t) const {
  if (t < warmup) return peak * static_cast<double>(t + 1) / warmup;
  return peak *
         find_lr_schedule(schedule)->factor(schedule_options, t - warmup, std::max<std::int64_t>(1, total - warmup));
}

LrPlan LrPlan::constant(double lr) {
  LrPlan p;
  p.base = p.peak = lr;
  return p;
}

std::string LrPlan::describe() const {
  std::string out = fmt::format("lr {:g}", base);
  if (scale_rule != "none")
    out += fmt::format(" x {:.4g} ({} scaling: global batch {} / {}) = {:.4g}", peak / base, scale_rule, global_batch,
                       base_batch, peak);
  if (warmup > 0) out += fmt::format(", warm-up {} updates", warmup);
  if (schedule == "cosine")
    out += fmt::format(", cosine decay over {} updates", std::max<std::int64_t>(1, total - warmup));
  if (schedule == "step") {
    const auto& specs = find_lr_schedule("step")->options;
    out += fmt::format(", x {:g} every {} updates", option_number(specs, schedule_options, "gamma"),
                       option_integer(specs, schedule_options, "step_size"));
  }
  return out;
}

LrPlan make_lr_plan(const TrainConfig& train, int global_batch, std::int64_t total_updates) {
  const LrScheduleInfo* info = find_lr_schedule(train.lr_schedule);
  if (!info)
    throw InputError(
        fmt::format("unknown lr_schedule \"{}\" (known: {})", train.lr_schedule, names_of(lr_schedules())));
  check_options("lr_schedule " + info->name, info->options, train.lr_schedule_options);
  LrPlan p;
  p.base = train.lr;
  p.global_batch = global_batch;
  p.base_batch = train.lr_base_batch > 0 ? train.lr_base_batch : train.batch_size;
  p.scale_rule = train.lr_scale;
  const double k = static_cast<double>(global_batch) / p.base_batch;
  p.peak = train.lr_scale == "linear" ? train.lr * k : train.lr_scale == "sqrt" ? train.lr * std::sqrt(k) : train.lr;
  p.warmup = train.warmup_steps;
  p.schedule = info->name;
  p.schedule_options = train.lr_schedule_options;
  p.total = std::max<std::int64_t>(1, total_updates);
  return p;
}

OptimizerConfig optimizer_config(const TrainConfig& train, int global_batch, std::int64_t total_updates) {
  OptimizerConfig oc;
  oc.name = train.optimizer;
  oc.options = train.optimizer_options;
  oc.weight_decay = static_cast<float>(train.weight_decay);
  oc.lr = make_lr_plan(train, global_batch, total_updates);
  oc.clip_grad_norm = train.clip_grad_norm;
  return oc;
}

void validate_train(const Scenario& sc) {
  const TrainConfig& tr = sc.train;
  auto fail = [&](const std::string& field, const std::string& problem) {
    const auto it = tr.where.find(field);
    throw ScenarioError(InputLocation::at(it != tr.where.end() ? it->second : sc.path, "train." + field),
                        fmt::format("train.{} {}", field, problem));
  };
  // Each option by itself at its own position; then what the entry says of them together, at the table.
  auto check = [&](const std::string& table, const std::string& what, const std::vector<OptionSpec>& specs,
                   const OptionValues& values, const auto& make) {
    for (const auto& [key, value] : values) {
      const OptionSpec* spec = find_option(specs, key);
      if (!spec)
        fail(table + "." + key, fmt::format("is not an option of {} (known: {})", what,
                                            specs.empty() ? std::string("none") : option_names(specs)));
      if (!option_accepts(*spec, value))
        fail(table + "." + key, fmt::format("must be {}, got {}", spec->requirement(), value));
    }
    try {
      make();
    } catch (const InputError& e) {
      fail(table, e.what());
    }
  };
  const OptimizerInfo* opt = find_optimizer(tr.optimizer);
  if (!opt) fail("optimizer", fmt::format("must be one of {}, got \"{}\"", names_of(optimizers()), tr.optimizer));
  check("optimizer_options", "optimizer \"" + opt->name + "\"", opt->options, tr.optimizer_options,
        [&] { opt->make(tr.optimizer_options); });
  const LrScheduleInfo* schedule = find_lr_schedule(tr.lr_schedule);
  if (!schedule)
    fail("lr_schedule", fmt::format("must be one of {}, got \"{}\"", names_of(lr_schedules()), tr.lr_schedule));
  check("lr_schedule_options", "lr_schedule \"" + schedule->name + "\"", schedule->options, tr.lr_schedule_options,
        [&] { make_lr_plan(tr, tr.batch_size, 1); });
  for (std::size_t i = 0; i < sc.strategies.size(); ++i) {
    const PolicyInfo* policy = find_policy(sc.strategies[i].policy);
    if (policy && !optimizer_runs_with(*opt, *policy))
      fail("optimizer",
           fmt::format("\"{}\" scales each tensor by a ratio of whole-tensor norms, but strategy[{}] (\"{}\") "
                       "uses policy \"{}\", which splits the optimizer's work across ranks",
                       tr.optimizer, i, sc.strategies[i].name, policy->name));
  }
}

}  // namespace ddplab
