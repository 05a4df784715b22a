// `ddplab simulate`: replay a scenario's strategies on a SimGrid model of larger clusters.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "validators.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/trace.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/partition.hpp"
#include "ddplab/simulator/layout_search.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/stages.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab::cli {

namespace {

// A micro-step's compute, and what recomputation runs again at the rate compute_s implies.
std::string describe_compute(const Scenario& sc, const ComputeSource& src) {
  if (sc.train.recompute == "none") return format_duration(src.compute_s);
  return fmt::format("{} + {} recomputed", format_duration(src.compute_s),
                     format_duration(src.compute_s * recomputed_share(sc)));
}

// --search: every layout of the one world size, per strategy, fastest first.
int search(const SimulateRequest& req, const Scenario& sc, const std::vector<int>& worlds, Store& store,
           const SimOptions& opt, bool tty) {
  if (worlds.size() != 1)
    throw InputError(
        fmt::format("--search ranks the layouts of one world size: give a single --world N (got {})", worlds.size()));
  bool found = false;
  for (const auto& st : sc.strategies) {
    if (!req.strategy.empty() && st.name != req.strategy) continue;
    found = true;
    const SweepSetup setup = sweep_setup(sc, st, store, opt);
    const LayoutSearch s = search_layouts(
        sc, st, worlds.front(), setup,
        [tty](int done, int total) {
          if (tty) std::fprintf(stderr, "\r\033[Ksimulating layout %d/%d", done, total);
        },
        req.zero_stages);
    if (tty) std::fprintf(stderr, "\r\033[K");
    const auto refused =
        std::count_if(s.candidates.begin(), s.candidates.end(), [](const auto& c) { return !c.point; });
    std::string what = fmt::format("{} layouts", s.candidates.size());
    if (req.zero_stages)  // every layout under each variant
      what = fmt::format("{} layouts x {} policies ({})", s.candidates.size() / s.policies.size(), s.policies.size(),
                         fmt::join(s.policies, ", "));
    std::printf("%s / %s: %s of %d ranks (%ld refused), simulated in %.1f s; compute %s per micro-step (from %s)\n",
                sc.name.c_str(), st.name.c_str(), what.c_str(), worlds.front(), static_cast<long>(refused), s.wall_s,
                describe_compute(sc, setup.compute).c_str(), setup.compute.origin.c_str());
    // With --zero-stages each row names its policy (zero_stage_variants), after the layout.
    const std::string policy_head = req.zero_stages ? fmt::format(" {:<9}", "policy") : "";
    std::printf("%5s %4s %4s %5s %6s%s %10s %11s %7s %11s %-7s %6s %s\n", "rank", "tp", "pp", "dp", "micro",
                policy_head.c_str(), "step_ms", "samples/s", "MFU", "memory", "mode", "sim_s", "fits");
    int rank = 0;
    for (const LayoutCandidate& c : s.candidates) {
      const ParallelConfig& p = c.parallel;
      const std::string policy = req.zero_stages ? fmt::format(" {:<9}", c.strategy.policy) : "";
      if (!c.point) {
        std::printf("%5s %4d %4d %5d %6d%s  refused: %s\n", "-", p.tp, p.pp, *p.dp, p.microbatches, policy.c_str(),
                    c.refused.c_str());
        continue;
      }
      const SweepPoint& pt = *c.point;
      std::printf("%5d %4d %4d %5d %6d%s %10.2f %11.0f %6s %11s %-7s %6.2f %s\n", ++rank, p.tp, p.pp, *p.dp,
                  p.microbatches, policy.c_str(), pt.result.step_s * 1e3, pt.result.samples_per_s,
                  pt.mfu ? fmt::format("{:.1f}%", 100 * *pt.mfu).c_str() : "-",
                  format_bytes(pt.memory.memory.total()).c_str(), c.mode.c_str(), pt.result.wall_s,
                  !pt.memory.capacity ? "-"
                  : pt.memory.fits()  ? "yes"
                                      : "OUT OF MEMORY");
    }
    const std::string held =
        sc.train.precision == "fp32" && sc.train.recompute == "none"
            ? "fp32"
            : fmt::format("fp32{}{}", sc.train.precision == "fp32" ? "" : " but " + sc.train.precision + " activations",
                          sc.train.recompute == "none" ? "" : ", activations recomputed");
    std::printf(
        "(pipelines: %s schedule; microbatch sizes 1, 2, 4, ... of the batch of %d; memory: the device that "
        "needs the most, %s, against cluster.device_memory)\n",
        sc.parallel.pipeline_schedule.c_str(), sc.train.batch_size, held.c_str());
    for (const std::string& name : s.policies)  // what a ranked policy's figures were found to miss
      if (const PolicyInfo* p = find_policy(name); p && !p->caveat.empty())
        std::printf("(policy %s: %s)\n", name.c_str(), p->caveat.c_str());
  }
  if (!found) throw InputError(fmt::format("{}: no strategy named \"{}\"", req.scenario, req.strategy));
  return 0;
}

// With trace_path set, the one simulated step's timeline goes there as Chrome trace JSON.
// mode: SimOptions::mode ("auto", "exact", "aggregated", "folded" or "probed").
int simulate_traced(const SimulateRequest& req, const std::string& trace_path, const std::string& mode = "auto") {
  const Scenario sc = load_validated_scenario(req.scenario);  // names, as `run` checks them: file:line:col
  const std::vector<int> worlds = req.worlds.empty() ? sc.cluster.simulate_world : req.worlds;
  const ModelSpec model = model_spec_for(sc.model);
  for (int w : worlds) {  // every world fits the layout, and the model its stages, before anything is looked up
    if (w < 1) throw InputError(fmt::format("--world: world sizes must be >= 1, got {}", w));
    (void)stage_specs(sc, model, scenario_layout(sc, w, fmt::format("--world {}", w)), sc.cluster.devices_per_node);
  }
  if (!trace_path.empty() && req.search)
    throw InputError("--trace writes one simulation's timeline; --search runs many: give one of them");
  if (!trace_path.empty()) {
    if (worlds.size() != 1)
      throw InputError(fmt::format(
          "--trace writes one simulation's timeline: give a single --world N (got {} world sizes)", worlds.size()));
    if (req.strategy.empty() && sc.strategies.size() > 1)
      throw InputError(
          fmt::format("--trace writes one simulation's timeline: pick one of the {} strategies with --strategy",
                      sc.strategies.size()));
    // Fail before a long simulation rather than after it.
    const auto dir = std::filesystem::path(trace_path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      throw InputError(fmt::format("--trace {}: directory {} does not exist", trace_path, dir.string()));
  }
  Store store(req.db);
  SimOptions opt;
  opt.network_model = req.network_model;
  opt.mode = mode;
  opt.compute = req.compute;
  opt.allow_oversubscribed = req.allow_oversubscribed;
  if (sc.data.uneven == "join") {
    // Each rank's share at each world size, from the dataset, as `ddplab run` splits it.
    const Dataset train = load_scenario_data(sc, true);
    for (int w : worlds) opt.join[w] = join_schedule(train, sc.data, w, sc.train.seed, sc.train.batch_size);
  }
  const bool tty = isatty(STDERR_FILENO);
  if (req.search) return search(req, sc, worlds, store, opt, tty);
  bool found = false;
  for (const auto& st : sc.strategies) {
    if (!req.strategy.empty() && st.name != req.strategy) continue;
    found = true;
    const ComputeSource src = compute_source(sc, st, store, opt.compute, opt.allow_oversubscribed);
    // Under a pipeline, each stage's DP group syncs that stage's parameters: the largest stage's are shown.
    const ScenarioStages split = scenario_stages(sc, worlds.empty() ? 1 : worlds.front(), sc.cluster.devices_per_node);
    const ParallelLayout& layout = split.layout;
    const std::size_t parameters = largest_stage_parameters(split.stages), grad_bytes = parameters * kGradientElemBytes;
    // What moves the gradients: a parameter server pushes and pulls, ZeRO reduce-scatters the gradients and
    // all-gathers the parameters, every other policy allreduces.
    // ZeRO-3 gathers before the forward and the backward; ZeRO's shards travel in the training precision.
    const PolicyInfo& policy = *find_policy(st.policy);
    const bool ranks_shard = policy.shards == Shards::Ranks;
    const double shard_bytes = static_cast<double>(parameters * elem_bytes(activation_type(sc.train)));
    const std::string sync =
        uses_parameter_servers(st)
            ? fmt::format("push + pull of {} per sync ({})", format_bytes(static_cast<double>(grad_bytes)),
                          describe_servers(st))
            : fmt::format("{} of {}{} per sync (schedule {})",
                          !ranks_shard       ? "allreduce"
                          : policy.zero >= 3 ? "all-gathers before forward and backward + reduce-scatter"
                                             : "reduce-scatter + all-gather",
                          format_bytes(ranks_shard ? shard_bytes : static_cast<double>(grad_bytes)),
                          split.split() ? " (the largest stage's share)" : "",
                          !is_backend_native(st.schedule) ? st.schedule
                          : native_transport(sc, opt).transport == ddplab::Transport::Mpi
                              ? "native: Open MPI 4.1's choice by size"
                              : "native: NCCL's choice by size and scale");
    std::printf("%s / %s: compute %s per micro-step, optimizer %s per update (compute from %s); %s\n", sc.name.c_str(),
                st.name.c_str(), describe_compute(sc, src).c_str(), format_duration(src.optimizer_s).c_str(),
                src.origin.c_str(), sync.c_str());
    std::printf("network: %s, %s, %s per NIC link\n", network_model_for(sc.cluster, opt).c_str(),
                describe_cluster(sc.cluster).c_str(), format_duration(sc.cluster.link_latency).c_str());
    if (!policy.caveat.empty()) std::printf("policy %s: %s\n", policy.name.c_str(), policy.caveat.c_str());
    if (layout.pp() > 1)
      std::printf(
          "layout: %s (at world %d). compute_ms is a stage's share; comm_ms includes its receives from the "
          "neighbouring stages, which wait for their compute (the bubble)%s\n",
          describe_stages(sc, layout, split.stages).c_str(), layout.world(),
          layout.tp() > 1 ? ", and its TP allreduces" : "");
    else if (layout.tp() > 1)
      std::printf("layout: %s (at world %d). compute_ms is a TP rank's share; comm_ms includes its TP allreduces\n",
                  describe_stages(sc, layout, split.stages).c_str(), layout.world());
    auto progress = [tty](int done, int total) {
      if (tty) std::fprintf(stderr, "\r\033[Ksimulating %d/%d", done, total);
    };
    opt.keep_trace = !trace_path.empty();  // per-op records only when a timeline is written
    const auto points = simulate_sweep(sc, st, worlds, store, opt, progress);
    if (tty) std::fprintf(stderr, "\r\033[K");
    if (!points.empty() && !points.front().result.join)
      std::printf("step pattern: %s\n", points.front().result.pattern.describe().c_str());
    std::printf("%7s %10s %10s %10s %12s %10s %11s %10s %10s %11s %8s\n", "world", "step_ms", "compute_ms", "comm_ms",
                "samples/s", "efficiency", "warmup_s", "sim_wall_s", "mode", "comms", "run");
    for (const auto& p : points)
      std::printf("%7d %10.2f %10.2f %10.2f %12.0f %9.1f%% %11.3f %10.2f %10s %11llu %8lld\n", p.world_size,
                  p.result.step_s * 1e3, p.result.compute_s * 1e3, p.result.comm_s * 1e3, p.result.samples_per_s,
                  p.efficiency * 100, p.result.warmup_s, p.result.wall_s,
                  simulation_mode(opt, p.world_size, sc.parallel.model_parallel()).c_str(),
                  static_cast<unsigned long long>(p.result.comms), static_cast<long long>(p.run_id));
    for (const auto& p : points)  // the device that needs the most, against cluster.device_memory
      std::printf("  world %d: device memory %s\n", p.world_size, p.memory.describe().c_str());
    for (const auto& p : points)
      if (const std::string m = describe_mfu(sc, p, src); !m.empty())
        std::printf("  world %d: %s\n", p.world_size, m.c_str());
    for (const auto& p : points)  // what `native` ran as at each size, so that the table explains itself
      if (const std::string c = describe_nccl_choices(sc, st, p.world_size, opt); !c.empty())
        std::printf("  world %d: NCCL's choice for the steady block's collectives: %s\n", p.world_size, c.c_str());
    for (const auto& p : points)  // under join the steady block is an epoch, of its own length at each size
      if (const auto& j = p.result.join) {
        std::int64_t out_from = j->per_epoch(), taken = 0;
        for (int r = 0; r < p.world_size; ++r) out_from = std::min(out_from, j->steps_of(r));
        for (std::int64_t s = 0; s < j->per_epoch(); ++s) taken += j->samples_at(s);
        std::printf(
            "  world %d: join: an epoch is %lld steps, the first rank runs out of data after %lld; samples/s "
            "counts the samples taken over the epoch, %.1f%% of %lld full steps\n",
            p.world_size, static_cast<long long>(j->per_epoch()), static_cast<long long>(out_from),
            100.0 * static_cast<double>(taken) / static_cast<double>(j->per_epoch() * j->batch * p.world_size),
            static_cast<long long>(j->per_epoch()));
      }
    if (!points.empty() && points.front().result.pattern.period() > 1 && !points.front().result.join)
      std::printf(
          "(steady state: step_ms, compute_ms and comm_ms are means per micro-step over a block of %lld; "
          "samples/s = the block's samples / its time)\n",
          static_cast<long long>(points.front().result.pattern.period()));
    if (!trace_path.empty()) {
      const SimPatternResult& r = points.front().result;
      write_chrome_trace(trace_path, trace_events(r.steps),
                         {{"scenario", sc.name},
                          {"strategy", st.name},
                          {"world_size", points.front().world_size},
                          {"steps", r.pattern.to_json()},
                          {"source", "simulated"},
                          {"network_model", network_model_for(sc.cluster, opt)},
                          {"run", points.front().run_id}});
      std::printf("trace of world size %d (micro-steps %lld..%lld) written to %s\n", points.front().world_size,
                  static_cast<long long>(r.steps.front().step), static_cast<long long>(r.steps.back().step),
                  trace_path.c_str());
    }
    std::fflush(stdout);
  }
  if (!found) throw InputError(fmt::format("{}: no strategy named \"{}\"", req.scenario, req.strategy));
  return 0;
}

}  // namespace

int simulate_scenario(const SimulateRequest& req) { return simulate_traced(req, ""); }

void add_simulate(CLI::App& app) {
  auto req = std::make_shared<SimulateRequest>();
  auto trace = std::make_shared<std::string>();
  auto mode = std::make_shared<std::string>("auto");
  auto* cmd = app.add_subcommand("simulate", "Predict step time and scaling at larger world sizes with SimGrid");
  cmd->add_option("scenario", req->scenario, "Scenario TOML file")->required();
  auto worlds = std::make_shared<std::string>();
  cmd->add_option("--world", *worlds,
                  "World sizes: a list, e.g. 8,64,512; \"...\" continues the progression of the two sizes before it "
                  "(2,4,...,1024 doubles; 8,16,24,...,64 adds 8) (default: cluster.simulate_world)")
      ->option_text("LIST");
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->add_option("--strategy", req->strategy, "Only this strategy (default: all of the scenario's)");
  cmd->add_option("--network-model", req->network_model, kNetworkModelHelp)
      ->check(CLI::IsMember({"auto", "LV08", "CM02"}))
      ->capture_default_str();
  cmd->add_option(
         "--compute", req->compute,
         "Compute time per micro-step: auto, calibration (the scenario's calibration's per-layer times), run:ID "
         "(a measured run), flops (the model's FLOPs at [cluster].device_flops) or a time such as 13ms")
      ->capture_default_str();
  cmd->add_flag("--allow-oversubscribed", req->allow_oversubscribed,
                "Accept --compute run:ID of a run that had more ranks than cores on its host");
  cmd->add_option(
         "--trace", *trace,
         "Write the simulated step's timeline (Chrome trace JSON, opens in Perfetto) to FILE; needs one --world N")
      ->option_text("FILE");
  auto* search_flag = cmd->add_flag(
      "--search", req->search,
      "Simulate every [parallel] layout of the one --world N (TP inside a node x PP x DP, microbatches) and "
      "rank them by samples/s, with MFU and device memory");
  cmd->add_flag("--zero-stages", req->zero_stages,
                "With --search: each layout under the strategy's ZeRO stages too (its policy, then each registered "
                "policy with another ZeRO stage), for a policy that syncs gradients every step")
      ->needs(search_flag);
  auto* exact = cmd->add_flag_callback(
      "--exact", [mode] { *mode = "exact"; },
      fmt::format("Replay every message of every schedule (the reference; default up to {} ranks)", kExactMaxWorld));
  auto* aggregated =
      cmd->add_flag_callback(
             "--aggregated", [mode] { *mode = "aggregated"; },
             fmt::format("Merge schedule steps into phases of concurrent flows (fast; default above {} ranks)",
                         kExactMaxWorld))
          ->excludes(exact);
  auto* folded = cmd->add_flag_callback(
                        "--folded", [mode] { *mode = "folded"; },
                        "Model-parallel layouts: replay one DP replica in full, the others only in DP collectives")
                     ->excludes(exact)
                     ->excludes(aggregated);
  cmd->add_flag_callback(
         "--probed", [mode] { *mode = "probed"; },
         fmt::format("Replay one DP replica (rank 0 without a layout); each distinct DP collective is simulated once, "
                     "alone, and its time reused (fastest; default above {} ranks for a layout, and for every layout "
                     "of such a --search)",
                     kExactMaxLayoutWorld))
      ->excludes(exact)
      ->excludes(aggregated)
      ->excludes(folded);
  cmd->footer(
      "Compute (--compute auto) comes from [cluster].compute_s in the scenario, else from the per-layer times of\n"
      "the calibration it names (when they measured its model), else from the newest measured run of the same\n"
      "scenario, strategy, model and batch that had no more ranks than cores, else from the model's FLOPs and\n"
      "[cluster].device_flops. Each table says which.\n"
      "A [model] type = \"table\" names a model table (resnet50, bert_large, gpt2_xl, llama2_7b, gpt3_175b or a "
      "file).\n"
      "The strategy's step plan is replayed: compute as timed work, every collective message by message\n"
      "(--exact), or with consecutive schedule steps between the same peers merged into one flow per pair\n"
      "(--aggregated; docs/simulation.md gives its agreement with --exact per topology), or for one\n"
      "DP replica with each distinct DP collective simulated once (--probed; docs/model-parallel.md). Without a\n"
      "flag, worlds above 256 ranks are aggregated and layouts above 64 ranks probed (in --search, every layout).");
  cmd->callback([req, trace, mode, worlds] {
    if (!worlds->empty()) req->worlds = world_sizes_option("--world", *worlds);
    g_exit_code = simulate_traced(*req, *trace, *mode);
  });
}

}  // namespace ddplab::cli
