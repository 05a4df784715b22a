#include "ddplab/runtime/trainer.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/job_notes.hpp"
#include "ddplab/core/resume.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/trace.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/core/version.hpp"
#include "ddplab/runtime/checkpointer.hpp"
#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/elastic.hpp"
#include "ddplab/runtime/evaluation.hpp"
#include "ddplab/runtime/input_pipeline.hpp"
#include "ddplab/runtime/job_info.hpp"
#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/model_parallel.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/partition.hpp"
#include "ddplab/runtime/progress.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/runtime/watchdog.hpp"
#include "stop_check.hpp"
#include "trace_collector.hpp"
#include "ddplab/strategies/replica_agreement.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Resources resource_usage(int rank, Clock::time_point start) {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  Resources r;
  r.rank = rank;
  r.peak_rss_bytes = static_cast<std::int64_t>(u.ru_maxrss) * 1024;
  r.cpu_s = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  r.wall_s = seconds_since(start);
  return r;
}

struct Data {
  Dataset train, test;
};

Data load_data(const Scenario& s) { return {load_scenario_data(s, true), load_scenario_data(s, false)}; }

// Rank 0 collects every rank's step rows (all ranks run the same number of steps) and stores them.
void gather_steps(Communicator& comm, std::vector<StepMetrics>& mine, Store* store, std::int64_t run) {
  const std::size_t bytes = mine.size() * sizeof(StepMetrics);
  std::vector<StepMetrics> all(comm.rank() == 0 ? mine.size() * static_cast<std::size_t>(comm.size()) : 0);
  comm.gather(mine.data(), bytes, all.data(), 0);
  if (store)
    for (const auto& m : all) store->add_step(run, m);
  if (store) store->flush();
  mine.clear();
}

void flip_a_bit(Ops& ops, Model& model) {
  std::vector<float> p(model.num_params());
  ops.to_host(p.data(), model.params(), p.size());
  std::uint32_t bits = 0;
  std::memcpy(&bits, &p[p.size() / 2], sizeof bits);
  bits ^= 1u;
  std::memcpy(&p[p.size() / 2], &bits, sizeof bits);
  ops.to_device(model.params(), p.data(), p.size());
  ops.synchronize();
}

// Every rank compares its parameters with replica 0's (rank 0's without a split; the first of its DP group,
// which holds the same share, with one), bit for bit. Returns "" or a message naming the ranks. A perturb
// fault (fault_injection.hpp) changes one of its rank's parameters first.
std::string check_identical(Communicator& comm, RankParallel& rp, Ops& ops, Model& model, const FaultInjection& fault) {
  std::vector<float> mine(model.num_params()), root(model.num_params());
  ops.to_host(mine.data(), model.params(), mine.size());
  if (fault.strikes(FaultKind::Perturb, comm.rank())) mine[mine.size() / 2] += 1e-3f;
  root = mine;
  rp.data().broadcast(root.data(), root.size() * sizeof(float), 0);
  long long first_diff = -1;
  if (std::memcmp(mine.data(), root.data(), mine.size() * sizeof(float)) != 0)
    for (std::size_t i = 0; i < mine.size(); ++i)
      if (std::memcmp(&mine[i], &root[i], sizeof(float)) != 0) {
        first_diff = static_cast<long long>(i);
        break;
      }
  std::vector<long long> diffs(static_cast<std::size_t>(comm.size()), -1);
  comm.gather(&first_diff, sizeof first_diff, diffs.data(), 0);
  std::string msg;
  for (int r = 0; r < comm.size(); ++r)
    if (diffs[static_cast<std::size_t>(r)] >= 0)
      msg += fmt::format("{}parameters of {} differ from {} (first at element {})", msg.empty() ? "" : "; ",
                         rp.describe_rank(r), rp.describe_rank(rp.replica_zero(r)), diffs[static_cast<std::size_t>(r)]);
  // Only rank 0 saw every rank's answer; all ranks must agree on the outcome.
  int identical = msg.empty() ? 1 : 0;
  comm.broadcast(&identical, sizeof identical, 0);
  if (!identical && msg.empty()) msg = "parameters differ across ranks (named by rank 0)";
  return msg;
}

// The replicas' parameters compared by checksum (FNV-1a over their bytes) among the workers, every rank
// learning every checksum. Returns "" or a message naming the ranks whose parameters differ from the checksum
// a strict majority holds, or, without one, every group of ranks with its checksum.
std::string check_consistency(Communicator& comm, Ops& ops, Model& model, const Strategy& strategy, std::int64_t step,
                              int every) {
  std::vector<float> mine(model.num_params());
  ops.to_host(mine.data(), model.params(), mine.size());
  std::uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(mine.data());
  for (std::size_t i = 0; i < mine.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  all[static_cast<std::size_t>(comm.rank())] = h;
  comm.all_gather(all.data(), sizeof h);
  std::map<std::uint64_t, std::vector<int>> holders;
  int workers = 0;
  for (int r = 0; r < comm.size(); ++r)
    if (strategy.is_worker(r)) holders[all[static_cast<std::size_t>(r)]].push_back(r), ++workers;
  if (holders.size() <= 1) return "";
  const auto common = std::max_element(holders.begin(), holders.end(),
                                       [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  // Only a strict majority tells which replicas are the odd ones; otherwise every group is named.
  if (2 * static_cast<int>(common->second.size()) <= workers) {
    std::vector<std::string> groups;
    for (const auto& [sum, ranks] : holders) groups.push_back(fmt::format("rank {} {:016x}", fmt::join(ranks, ", "), sum));
    return fmt::format("step {}: the replicas' parameters disagree and no checksum is held by a majority ({}): replicas "
                       "diverged (train.consistency_every = {})",
                       step, fmt::join(groups, "; "), every);
  }
  std::vector<int> diverged;
  for (const auto& [sum, ranks] : holders)
    if (sum != common->first) diverged.insert(diverged.end(), ranks.begin(), ranks.end());
  std::sort(diverged.begin(), diverged.end());
  return fmt::format("step {}: the parameters of rank{} {} differ from the other replicas' (checksum {:016x}, not "
                     "{:016x}): replicas diverged (train.consistency_every = {})",
                     step, diverged.size() == 1 ? "" : "s", fmt::join(diverged, ", "),
                     all[static_cast<std::size_t>(diverged.front())], common->first, every);
}

// Dedicated parameter servers hold only their shards up to date. Before an evaluation or the final check
// each server receives every server's shards, as the workers pulled them, and so holds the whole model;
// check_identical then compares the servers' shards with what the workers hold. Workers receive into
// scratch (what they pulled stays theirs).
void assemble_server_models(Communicator& comm, Ops& ops, Model& model, const Strategy& strategy) {
  const PsLayout ps = strategy.ps_layout();
  if (ps.servers == 0) return;
  const bool worker = ps.is_worker(comm.rank());
  // A server receives into its host copy of the model, a worker into scratch it then drops.
  std::vector<float> host(worker ? 0 : model.num_params()), scratch;
  if (!worker) ops.to_host(host.data(), model.params(), host.size());
  for (const Bucket& b : strategy.bucketing().buckets)
    for (int s = 0; s < ps.number(); ++s) {
      const Chunk c = strategy.shard(b.id, ps.server_rank(s));
      if (c.count == 0) continue;
      if (worker) scratch.resize(c.count);
      float* at = worker ? scratch.data() : host.data() + b.offset + c.offset;
      comm.broadcast(at, c.count * sizeof(float), ps.server_rank(s));
    }
  if (!worker) ops.to_device(model.params(), host.data(), host.size());
}

// Batch norm's running statistics differ between replicas that normalise by their own batches (bn =
// "local"). Before an evaluation every rank takes the workers' average (a dedicated server has none of its
// own), so all evaluate one model and keep training from the same statistics. (DDP instead broadcasts rank
// 0's buffers before each forward; the average uses every replica's data.)
void average_buffers(Communicator& comm, Ops& ops, Model& model, bool worker, int workers) {
  if (model.num_buffers() == 0) return;
  std::vector<float> host(model.num_buffers());
  ops.to_host(host.data(), model.buffers(), host.size());
  for (float& v : host) v = worker ? v / static_cast<float>(workers) : 0.0f;
  comm.allreduce_sum(host.data(), host.size());
  ops.to_device(model.buffers(), host.data(), host.size());
  ops.synchronize();  // host is pageable and goes out of scope
}

// Where a rank is, so an error can name the run and step.
struct Where {
  std::int64_t run = -1;
  std::int64_t step = -1;
};

struct StrategyOutcome {
  bool ok = true;
  std::string error;
  bool stopped = false;  // on request (stop_check.hpp: the launcher or a signal): stored interrupted, the job ends
};

// The run a job continues (WorkerOptions::resume_run), as rank 0 found it and broadcast it to every rank.
struct Resume {
  std::int64_t run = 0, step = 0;
  std::size_t strategy = 0;  // index in the scenario
  int old_world = 0;         // the run's ranks: another number than now is an elastic resume (elastic.hpp)
  std::string folder;        // the checkpoint's
  bool elastic(int world) const { return old_world != world; }
};

// Collective: rank 0 looks the run up (find_resume_point, which the launcher checked already) and every rank
// learns it; a refusal is rank 0's message on every rank.
Resume resolve_resume(const Scenario& sc, Communicator& comm, Store* store, std::int64_t run) {
  Resume r;
  std::string error;
  if (comm.rank() == 0) try {
      const ResumePoint p = find_resume_point(*store, sc, comm.size(), run > 0 ? std::optional(run) : std::nullopt);
      r = {p.run.id, p.checkpoint.step, p.strategy_index, p.run.info.world_size, p.checkpoint.path};
    } catch (const std::exception& e) {
      error = e.what();
    }
  long long head[5] = {r.run, r.step, static_cast<long long>(r.strategy), r.old_world,
                       static_cast<long long>(error.empty() ? r.folder.size() : error.size())};
  comm.broadcast(head, sizeof head, 0);
  std::string text = error.empty() ? r.folder : error;
  text.resize(static_cast<std::size_t>(head[4]));
  comm.broadcast(text.data(), text.size(), 0);
  if (head[0] == 0) throw InputError(text);  // run_worker names the rank
  return {head[0], head[1], static_cast<std::size_t>(head[2]), static_cast<int>(head[3]), text};
}

StrategyOutcome train_strategy(const Scenario& sc, const StrategyConfig& st, const Data& data, Communicator& comm,
                               Store* store, const WorkerOptions& opt, Where& where,
                               const Resume* resume) {
  const int rank = comm.rank(), world = comm.size();
  const auto& tr = sc.train;
  auto ops = tr.backend == "cpu" ? make_ops(tr.backend) : make_cuda_ops(tr.tf32);
  // Backend "cuda": the plan's collectives go through NCCL on device buffers; everything else (metrics,
  // evaluation sums, the initial broadcast) stays on MPI with host buffers. "cuda+mpi" keeps MPI for the
  // plan too, staging buckets through host memory (PlanExecutor).
  std::unique_ptr<Communicator> nccl;
  if (tr.backend == "cuda") nccl = open_nccl_communicator(comm, *ops, tr.comm_timeout_s);
  Communicator& plan_comm = nccl ? *nccl : comm;
  const std::string backend_name = tr.backend == "cuda+mpi" ? ops->name() + "+mpi" : ops->name();
  const int eval_batch = std::max(tr.batch_size, 500);
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks_per_node = local_size ? std::max(1, std::atoi(local_size)) : world;
  // A [parallel] layout splits the model: this rank holds its stage's share, syncs it over its DP group and
  // is a replica's rank as its DP group's rank (model_parallel.hpp). Without one, the DP group is the world.
  RankParallel rp(sc, comm, ranks_per_node);
  const std::unique_ptr<Model> owned_model = rp.make_model(*ops, sc.model, rp.split() ? tr.batch_size : eval_batch);
  Model& model = *owned_model;
  // A split model is evaluated whole: the shares assembled into this one (the scenario's unsplit model).
  const std::unique_ptr<Model> whole_model = rp.split() ? make_model(*ops, sc.model, eval_batch) : nullptr;
  if (rp.split()) {
    model.init(tr.seed);  // every share cut from the whole model's one draw: pure DP's initial model
  } else {
    if (rank == 0) model.init(tr.seed);
    // Rank 0's initial parameters are everyone's, as in DDP's constructor.
    std::vector<float> host(model.num_params());
    ops->to_host(host.data(), model.params(), host.size());
    comm.broadcast(host.data(), host.size() * sizeof(float), 0);
    ops->to_device(model.params(), host.data(), host.size());
  }

  Strategy strategy = rp.split() ? Strategy(st, rp.stage().model, rp.stage().context)
                                 : Strategy(st, model.spec(), strategy_context(sc, world, ranks_per_node));
  // Workers share the data; dedicated parameter servers (the last ranks) take no batches but step along
  // with the workers (they sample as worker 0 does, to count the same steps). A replica's ranks all take
  // its batch.
  const int replica = rp.data().rank();
  const bool worker = strategy.is_worker(replica);
  const int workers = strategy.workers();

  const auto sampler = make_sampler(data.train, sc.data, worker ? replica : 0, workers, tr.seed);
  // Every rank's classes, for rank 0 to print and store (iid's costs a shuffle per rank: not on every rank),
  // and for each rank's loss weights under data.balance = "class_weighted" (resample is the sampler's).
  const bool weighted = sc.data.balance == "class_weighted";
  const auto histograms = rank == 0 || weighted ? class_histograms(data.train, sc.data, workers, tr.seed)
                                                : std::vector<std::vector<std::size_t>>{};
  if (weighted && worker) model.set_class_weights(balanced_class_weights(histograms.at(static_cast<std::size_t>(rank))));
  // Under join every rank takes the longest share's steps, shadowing the syncs once its own run out.
  std::optional<JoinSchedule> join;
  if (sc.data.uneven == "join") join = join_schedule(data.train, sc.data, workers, tr.seed, tr.batch_size);
  // A pipeline cuts each batch into parallel.microbatches: an epoch's last batch with fewer samples is dropped.
  const std::size_t min_batch = rp.layout().pp() > 1 ? static_cast<std::size_t>(sc.parallel.microbatches) : 1;
  const std::int64_t steps_per_epoch =
      join ? join->per_epoch() : InputPipeline::batches(sampler->per_rank(), static_cast<std::size_t>(tr.batch_size), min_batch);
  if (rank == 0 && !join && InputPipeline::batches(sampler->per_rank(), static_cast<std::size_t>(tr.batch_size)) != steps_per_epoch) {
    std::printf("%s: each epoch's last batch (%zu samples per replica) is dropped: fewer than parallel.microbatches = %d\n",
                st.name.c_str(), sampler->per_rank() % static_cast<std::size_t>(tr.batch_size), sc.parallel.microbatches);
    std::fflush(stdout);
  }
  if (rank == 0 && fixed_split(sc.data)) {
    std::printf("%s", partition_table(sc.data, histograms, join ? static_cast<std::size_t>(steps_per_epoch) : sampler->per_rank()).c_str());
    std::fflush(stdout);
  }
  std::int64_t total_steps = steps_per_epoch * tr.epochs;
  if (tr.max_steps > 0) total_steps = std::min<std::int64_t>(total_steps, tr.max_steps);

  // The learning rate of every update: the scaling rule takes the global batch of one update.
  const OptimizerConfig oc = optimizer_config(tr, tr.batch_size * workers * st.accumulate_steps,
                                              std::max<std::int64_t>(1, total_steps / st.accumulate_steps));
  if (rank == 0 && (oc.lr.scale_rule != "none" || oc.lr.warmup > 0 || oc.lr.schedule != "constant")) {
    std::printf("%s: %s\n", tr.optimizer.c_str(), oc.lr.describe().c_str());
    std::fflush(stdout);
  }

  // Resumed on as many ranks, the stored run continues; on another number (elastic), a new run does.
  const bool elastic = resume && resume->elastic(world);
  PlanExecutor executor(rp.split() ? rp.data() : plan_comm, *ops, model, strategy, oc);
  rp.attach(executor);
  // Where a resumed run stands: its state and counters as its checkpoint holds them.
  std::int64_t first_step = 0, samples_total = 0, next_check = tr.consistency_every;
  double last_loss = 0, wall_before = 0;
  ReplicaAgreement agreement;  // train.consistency_every, and what a checkpoint records
  if (resume) {
    // Every rank loads its state before the stored run is touched, so that a file one rank cannot read leaves
    // the run as it was.
    std::string problem;
    try {
      const Checkpointer loader(sc, st, comm, nullptr, resume->run, opt.db_path);
      nlohmann::json t;
      if (!elastic) {
        const Checkpoint c = loader.load(resume->folder);
        executor.load(c, rank_checkpoint_file(resume->folder, rank));
        t = c.meta.at("trainer");
        first_step = t.at("step").get<std::int64_t>();
        next_check = t.at("next_check").get<std::int64_t>();
        agreement.restore(t.at("agreement").get<std::vector<char>>());
      } else {
        // Every old rank's file, its shards re-cut for this world (elastic.hpp); the step where this world has
        // seen as many samples (at most the end of the run).
        const std::vector<Checkpoint> old = loader.load_world(resume->folder, resume->old_world);
        Strategy old_strategy(st, model.spec(), strategy_context(sc, resume->old_world, resume->old_world));
        const nlohmann::json order =
            old.front().meta.value("executor", nlohmann::json::object()).value("rebuilt_order", nlohmann::json());
        if (order.is_array()) old_strategy.observe_ready_order(order.get<std::vector<int>>());
        executor.load(elastic_checkpoint(old, old_strategy), rank_checkpoint_file(resume->folder, 0));
        t = old.front().meta.at("trainer");
        first_step = std::min(elastic_step(t.at("step").get<std::int64_t>(), old_strategy.workers(), workers, st.accumulate_steps),
                              total_steps / st.accumulate_steps * st.accumulate_steps);
        next_check = first_step + tr.consistency_every;
      }
      samples_total = t.at("samples_total").get<std::int64_t>();
      last_loss = t.at("last_loss").get<double>();
      wall_before = t.at("wall_s").get<double>();
    } catch (const std::exception& e) {
      problem = e.what();
      std::fprintf(stderr, "error: rank %d: %s\n", rank, problem.c_str());
    }
    std::vector<int> loaded(static_cast<std::size_t>(world), 0);
    loaded[static_cast<std::size_t>(rank)] = problem.empty() ? 1 : 0;
    comm.all_gather(loaded.data(), sizeof(int));
    std::vector<int> failed;
    for (int r = 0; r < world; ++r)
      if (!loaded[static_cast<std::size_t>(r)]) failed.push_back(r);
    if (!failed.empty()) {
      // An unreadable checkpoint is no resume point: the one before it, if kept, is the next. No rank ends the
      // job (MPI_Abort) before rank 0 has dropped it.
      if (store) store->delete_checkpoint(resume->run, resume->step);
      int dropped = 1;
      comm.broadcast(&dropped, sizeof dropped, 0);
      throw RunFault(fmt::format("rank {}: run {}'s checkpoint at step {} could not be loaded on rank {} ({}); it is "
                                 "dropped from the store: --resume again continues from the one before it, if one is kept",
                                 rank, resume->run, resume->step, fmt::join(failed, ", "),
                                 problem.empty() ? "see that rank's error" : problem),
                     {.rank = rank, .step = resume->step, .op = "resume"});
    }
  }

  std::int64_t run = resume && !elastic ? resume->run : -1;
  const std::string host_info = job_host_info(comm);  // collective
  if (resume && !elastic) {
    // The run reads running again, without its rows past the checkpoint (Store::resume_run).
    if (store) store->resume_run(run, resume->step, host_info);
  } else if (store) {
    nlohmann::json cfg = sc.to_json();
    if (rp.split()) cfg["layout"] = rp.layout().describe();
    cfg["strategy"] = st.to_json();
    cfg["world_size"] = world;
    cfg["steps"] = total_steps;
    cfg["pattern"] = strategy.pattern().to_json();  // reports split warm-up and steady state by it
    cfg["partition"] = {{"samples_per_epoch", sampler->per_rank()}, {"class_histograms", histograms}};
    cfg["lr_plan"] = {{"peak", oc.lr.peak}, {"global_batch", oc.lr.global_batch}, {"updates", oc.lr.total},
                      {"describe", oc.lr.describe()}};
    if (elastic)
      cfg["resumed_from"] = {{"run", resume->run}, {"step", resume->step}, {"world_size", resume->old_world}};
    run = store->begin_run({sc.name, st.name, backend_name, world, "measured", cfg.dump(), host_info, tr.batch_size});
  }
  comm.broadcast(&run, sizeof run, 0);  // every rank's checkpoint goes to the run's folder
  where.run = run;
  Checkpointer checkpointer(sc, st, comm, store, run, opt.db_path);
  if (resume && rank == 0) {
    if (elastic)
      std::printf("%s: resuming run %lld (%d ranks, step %lld) on %d ranks as run %lld from step %lld of %lld, as many "
                  "samples seen; optimizer shards re-cut, codec state reset\n",
                  st.name.c_str(), static_cast<long long>(resume->run), resume->old_world,
                  static_cast<long long>(resume->step), world, static_cast<long long>(run),
                  static_cast<long long>(first_step), static_cast<long long>(total_steps));
    else
      std::printf("%s: resuming run %lld from its checkpoint at step %lld of %lld\n", st.name.c_str(),
                  static_cast<long long>(run), static_cast<long long>(resume->step), static_cast<long long>(total_steps));
    std::fflush(stdout);
  }
  // [cluster].stragglers, as the simulator reads them. Every rank checks every factor, so a bad one stops
  // them all before the first collective.
  for (int r = 0; r < world; ++r) {
    const Slowdown s(sc.cluster.compute_factor(r));
    if (r == rank) executor.set_compute_factor(s.factor());
    if (rank == 0 && s.active()) std::printf("straggler: rank %d computes %gx slower\n", r, s.factor());
  }
  InputPipeline input(*ops, data.train, tr.batch_size);
  // [data] augment_*: Fashion-MNIST's 28 x 28 images, black (0 before normalisation) outside.
  const AugmentConfig augment{sc.data.augment_rotate, sc.data.augment_scale, sc.data.augment_shift};
  if (augment.active()) input.set_augment(augment, 28, -kFashionMnistMean / kFashionMnistStd, tr.seed);
  double input_wait_s = 0;  // the steps' wait for their batch
  std::vector<StepMetrics> pending;
  Progress progress(opt.progress && rank == rp.loss_rank(), st.name, total_steps);
  // A resumed run's clock goes on from the checkpoint's: time to accuracy leaves the time it was down out.
  const auto start = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wall_before));
  // All ranks share the machine's monotonic clock, so rank 0's start is a common origin for the trace.
  Clock::time_point origin = start;
  comm.broadcast(&origin, sizeof origin, 0);
  TraceCollector trace(opt, st.name, sc.strategies.size() > 1, origin, total_steps, strategy.pattern().period());
  std::int64_t step = first_step;

  auto run_eval = [&](std::int64_t at_step) {
    assemble_server_models(comm, *ops, model, strategy);
    executor.gather_parameters();
    average_buffers(comm, *ops, model, worker, workers);
    if (whole_model) {
      const std::vector<float> whole = rp.whole_parameters(model);
      ops->to_device(whole_model->params(), whole.data(), whole.size());
    }
    Evaluation e = evaluate(whole_model ? *whole_model : model, *ops, data.test, comm, eval_batch);
    e.step = at_step;
    e.wall_s = seconds_since(start);
    if (store) store->add_evaluation(run, e);
    return e;
  };

  auto counters = [&] {
    return nlohmann::json{{"step", step}, {"samples_total", samples_total}, {"last_loss", last_loss},
                          {"wall_s", seconds_since(start)}, {"next_check", next_check}, {"agreement", agreement.state()}};
  };
  StopCheck stop(st.accumulate_steps, first_step);
  // Batches in step order, so the input pipeline can upload batch s + 1 while step s runs.
  input.plan(*sampler, tr.epochs, total_steps, join ? steps_per_epoch : 0, min_batch);
  const auto first = static_cast<std::size_t>(first_step);
  int next_b = first >= input.steps() ? 0 : input.load_step(first, worker);
  for (std::size_t bi = first; bi < input.steps(); ++bi) {
    if (opt.fault.strikes(FaultKind::Exit, rank, step)) {
      std::fprintf(stderr, "rank %d step %lld: exiting on purpose (--inject-fault)\n", rank, static_cast<long long>(step));
      std::_Exit(3);
    }
    const int b = next_b;
    if (join) {
      // The sync divides by the ranks that take a batch in its accumulation window (those that add to it).
      executor.set_grad_divisor(sc.data.join_divide_by_initial
                                    ? workers
                                    : join->active_in(step - step % st.accumulate_steps, st.accumulate_steps));
    }
    where.step = step;
    comm.set_step(step);
    StepMetrics m;
    m.step = step;
    m.rank = rank;
    m.samples = worker && rp.counts_samples() ? b : 0;  // a step's rows sum to the global batch
    const auto t0 = Clock::now();
    if (worker) {
      const auto w0 = Clock::now();
      input.ready();
      input_wait_s += std::chrono::duration<double>(Clock::now() - w0).count();
    }
    const std::size_t slot = bi % 2;
    if (bi + 1 < input.steps()) next_b = input.load_step(bi + 1, worker);
    const StepRecord rec = executor.run_step(step, input.x(slot), input.y(slot), b);
    trace.add(rank, step, rec);
    m.loss = rec.loss;  // NaN on a server and before a pipeline's last stage: stored as NULL, not averaged
    if (worker && b > 0 && rp.holds_loss() && !std::isfinite(m.loss))
      throw RunFault(fmt::format("rank {} step {}: loss is {} (diverged; lower train.lr?)", rank, step, m.loss),
                     {.rank = rank, .step = step, .op = "loss"});
    m.compute_s = rec.compute_s;
    m.comm_s = rec.comm_s;
    m.exposed_comm_s = rec.exposed_comm_s;
    m.optimizer_s = rec.optimizer_s;
    m.bytes_sent = static_cast<std::int64_t>(rec.bytes_sent);
    m.step_s = std::chrono::duration<double>(Clock::now() - t0).count();
    pending.push_back(m);
    if (worker && b > 0 && rp.holds_loss()) last_loss = m.loss;
    samples_total += join ? join->samples_at(step % steps_per_epoch) : static_cast<std::int64_t>(b) * workers;
    if (opt.fault.strikes(FaultKind::Bitflip, rank, step)) flip_a_bit(*ops, model);
    // Followed for the consistency checks, and for checkpoints, which record whether the replicas agree
    // (elastic resume needs them to).
    if (tr.consistency_every > 0 || checkpointer.enabled())
      agreement.after(strategy.plan(step), strategy.bucketing().buckets.size());
    if (tr.consistency_every > 0) {
      if (step + 1 >= next_check && agreement.agree()) {
        executor.gather_parameters();
        if (const std::string bad = check_consistency(comm, *ops, model, strategy, step, tr.consistency_every); !bad.empty())
          throw RunFault(bad, {.rank = rank, .step = step, .op = "consistency check"});
        next_check = step + 1 + tr.consistency_every;
      }
    }
    ++step;
    progress.update(step, last_loss, samples_total);
    if (static_cast<int>(pending.size()) >= opt.flush_every) gather_steps(comm, pending, store, run);
    if (tr.eval_every > 0 && step % tr.eval_every == 0 && step < total_steps) run_eval(step);
    const bool saved = checkpointer.due(step) && step < total_steps;
    bool saved_ok = false;
    if (saved) {
      gather_steps(comm, pending, store, run);  // a checkpoint never has steps before it unstored
      saved_ok = checkpointer.save(step, false, executor, counters());
    }
    if (step < total_steps && stop.stop_after(comm, step, m.step_s)) {
      // Stopped on request: every step so far stored, a checkpoint to resume from when they are on.
      gather_steps(comm, pending, store, run);
      const bool kept = saved_ok || (checkpointer.enabled() && !saved && checkpointer.save(step, false, executor, counters()));
      const std::string why = fmt::format("stopped on request after step {}{}", step,
                                          kept ? " (checkpoint there: ddplab run --resume continues it)" : "");
      if (store) store->finish_run(run, "interrupted", why);
      if (rank == 0) std::printf("%s: %s\n", st.name.c_str(), why.c_str());
      progress.finish();
      where = Where{};
      comm.set_step(-1);
      StrategyOutcome out;
      out.stopped = true;
      return out;
    }
  }
  where.step = -1;
  comm.set_step(-1);
  // The policy's end-of-run work (local SGD ends on the average of the ranks' models, so that they agree).
  executor.finish(step);
  gather_steps(comm, pending, store, run);
  progress.finish();
  const Evaluation final_eval = run_eval(step);

  Resources res = resource_usage(rank, start);
  if (ops->device_memory())
    res.peak_device_bytes = static_cast<std::int64_t>(ops->peak_device_bytes() + plan_comm.device_bytes());
  std::vector<Resources> all(static_cast<std::size_t>(world));
  comm.gather(&res, sizeof res, all.data(), 0);
  if (store)
    for (const auto& r : all) store->add_resources(run, r);

  const std::string trace_file =
      trace.write(comm, store, run, {{"scenario", sc.name}, {"strategy", st.to_json()}, {"world_size", world}});
  if (!trace_file.empty())
    std::printf("trace of steps %lld..%lld written to %s\n", static_cast<long long>(trace.first_traced()),
                static_cast<long long>(trace.last_traced()), trace_file.c_str());
  else if (!opt.trace_path.empty() && rank == 0)
    std::printf("trace: no step in %lld..%lld ran (the run took %lld steps); nothing written\n",
                static_cast<long long>(opt.trace_first), static_cast<long long>(opt.trace_last - 1),
                static_cast<long long>(step));

  if (augment.active() && rank == 0 && step > 0)
    std::printf("augmentation (rank 0): %.2f ms a batch on the loader thread; the steps waited %.2f ms each for "
                "their batch\n",
                1e3 * input.augment_seconds() / static_cast<double>(step), 1e3 * input_wait_s / static_cast<double>(step));

  StrategyOutcome out;
  assemble_server_models(comm, *ops, model, strategy);
  executor.gather_parameters();
  if (checkpointer.enabled()) checkpointer.save(step, true, executor, counters());  // the trained model
  out.error = check_identical(comm, rp, *ops, model, opt.fault);
  if (rp.split()) comm.broadcast(&last_loss, sizeof last_loss, rp.loss_rank());  // for rank 0's line
  out.ok = out.error.empty();
  if (store) store->finish_run(run, out.ok ? "completed" : "failed", out.error);
  where.run = -1;
  if (rank == 0) {
    const double wall = seconds_since(start);
    // Wall clock of the whole run (evaluation included) and replica 0's last loss (its last stage's, sent to
    // rank 0 above, with a split): `ddplab report` gives the stored figures (samples over the slowest rank's
    // step times, loss averaged over ranks).
    std::printf("%-12s %d ranks  %lld steps in %s  %.0f samples/s (wall clock)  last loss %.4f (rank %d)  test acc %.4f%s\n",
                st.name.c_str(), world, static_cast<long long>(step), format_duration(wall).c_str(),
                static_cast<double>(samples_total) / wall, last_loss, rp.loss_rank(), final_eval.test_accuracy,
                !out.ok ? "" : rp.split() ? "  each share identical across its DP group" : "  params identical on all ranks");
    std::fflush(stdout);
  }
  return out;
}

// Keeps what was measured (flushed) and marks the unfinished run failed. Best effort: we are aborting.
void fail_run(Store* store, const Where& where, const std::string& reason) {
  if (!store || where.run < 0) return;
  try {
    store->finish_run(where.run, "failed", reason);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: could not mark run %lld failed: %s\n", static_cast<long long>(where.run), e.what());
  }
}

}  // namespace

int run_worker(const Scenario& sc, Communicator& world, const WorkerOptions& opt) {
  install_stop_signals();  // under srun (no job folder) a rank's SIGTERM is a request to stop
  // Every MPI call of the job is watched: one stuck past train.comm_timeout_s aborts the job, naming it.
  WatchedCommunicator comm(world, sc.train.comm_timeout_s);
  std::unique_ptr<Store> store;
  Where where;
  // A rank's failure: said, left as a note with its flight recorder for the launcher, the run marked, the job
  // ended with the error's exit code (mpirun passes it on to the launcher).
  auto fail = [&](const std::string& why, int exit_code) {
    std::fprintf(stderr, "error: %s\n", why.c_str());
    write_job_note(rank_note("failure"), why);
    comm.dump_flight();
    fail_run(store.get(), where, why);
    std::fflush(stderr);
    comm.abort(exit_code);
  };
  auto named = [&](const std::exception& e) {
    const std::string at = where.step >= 0 ? fmt::format(" step {}", where.step) : std::string();
    return fmt::format("rank {}{}: {}", comm.rank(), at, e.what());
  };
  try {
    if (comm.rank() == 0) store = std::make_unique<Store>(opt.db_path);
    std::optional<Resume> resume;
    if (opt.resume_run != 0) resume = resolve_resume(sc, comm, store.get(), opt.resume_run);
    const Data data = load_data(sc);
    int failures = 0;
    for (std::size_t i = resume ? resume->strategy : 0; i < sc.strategies.size(); ++i) {
      const StrategyConfig& st = sc.strategies[i];
      // A stop asked for as the last strategy ended: the next one is not started.
      if (i > (resume ? resume->strategy : 0) && stop_requested_everywhere(comm)) break;
      const StrategyOutcome out = train_strategy(sc, st, data, comm, store.get(), opt, where,
                                                 resume && i == resume->strategy ? &*resume : nullptr);
      if (out.stopped) break;  // the strategies after it are not started
      if (!out.ok) {
        ++failures;
        if (comm.rank() == 0) std::fprintf(stderr, "error: strategy %s: %s\n", st.name.c_str(), out.error.c_str());
      }
    }
    // A rank stopped by its own signal (srun) exits as the signal would have had it: 128 + its number.
    if (const int sig = g_stop_signal.load(); sig != 0) return 128 + sig;
    return failures == 0 ? 0 : RunFault::kExitCode;  // replicas that ended apart: the run failed
  } catch (const RunFault& e) {
    // The trainer's own name their rank and step; a communicator's does not.
    fail(e.rank() ? e.what() : named(e), e.exit_code());
  } catch (const std::exception& e) {
    fail(named(e), rank_exit_code(e));
  }
  return 1;  // not reached: abort ends the process
}

}  // namespace ddplab
