#include "ddplab/core/error.hpp"
#include "ddplab/runtime/model_parallel.hpp"

#include <tuple>

#include <fmt/format.h>

#include "ddplab/runtime/split_model.hpp"
#include "ddplab/strategies/optimizer.hpp"

namespace ddplab {

void require_runnable_layout(const Scenario& sc) {
  // Modelled by the simulator only, split or not.
  for (const auto& [key, value, runs] :
       {std::tuple{"precision", sc.train.precision, "fp32"}, std::tuple{"recompute", sc.train.recompute, "none"}})
    if (value != runs) {
      const auto it = sc.train.where.find(key);
      throw ScenarioError(
          fmt::format("{}: train.{} = \"{}\": the runtime trains in fp32 and keeps every activation "
                      "(train.{} = \"{}\"); ddplab simulate models it",
                      it != sc.train.where.end() ? it->second : sc.path, key, value, key, runs));
    }
  const ParallelConfig& p = sc.parallel;
  if (!p.model_parallel()) return;
  const std::string split = p.tp > 1 ? fmt::format("parallel.tp = {}", p.tp) : fmt::format("parallel.pp = {}", p.pp);
  const std::string split_at = parallel_position(sc, p.tp > 1 ? "tp" : "pp");
  auto refuse = [&](const std::map<std::string, std::string>& where, const std::string& key, const std::string& what,
                    const std::string& why) {
    const auto it = where.find(key);
    throw ScenarioError(
        fmt::format("{}: {}: the runtime does not run it on a split model ({}) yet: {} (ddplab simulate "
                    "replays the layout; docs/model-parallel.md)",
                    it != where.end() ? it->second : split_at, what, split, why));
  };
  const TrainConfig& tr = sc.train;
  if (!sc.model.trainable() || sc.model.type == ModelType::Gpt)
    refuse(sc.model.where, "type", fmt::format("model.type = \"{}\"", sc.model.type), "the MLP and the CNN split");
  if (sc.model.type == ModelType::Cnn && sc.model.bn != "none")
    refuse(sc.model.where, "bn", fmt::format("model.bn = \"{}\"", sc.model.bn),
           "batch norm's statistics would be a microbatch's, or a TP share's");
  if (tr.backend != Backend::Cpu)
    refuse(tr.where, "backend", fmt::format("train.backend = \"{}\"", tr.backend),
           "the shares train on the CPU backend");
  if (tr.checkpoint_every > 0)
    refuse(tr.where, "checkpoint_every", fmt::format("train.checkpoint_every = {}", tr.checkpoint_every),
           "a checkpoint holds whole replicas");
  if (tr.consistency_every > 0)
    refuse(tr.where, "consistency_every", fmt::format("train.consistency_every = {}", tr.consistency_every),
           "the check compares whole replicas (the final check compares each share across its DP group)");
  if (tr.clip_grad_norm > 0)
    refuse(tr.where, "clip_grad_norm", fmt::format("train.clip_grad_norm = {}", tr.clip_grad_norm),
           "the global norm would need every share's sum of squares");
  if (const OptimizerInfo* o = find_optimizer(tr.optimizer); o && o->per_tensor && p.tp > 1)
    refuse(tr.where, "optimizer", fmt::format("train.optimizer = \"{}\"", tr.optimizer),
           "its per-tensor norms would see a TP share of each tensor");
  if (sc.data.uneven == "join")
    refuse({}, "", "data.uneven = \"join\"", "the replicas' ranks would have to shadow each other's pipelines");
  if (sc.data.balance == "class_weighted")
    refuse({}, "", "data.balance = \"class_weighted\"", "the last stage's loss takes no class weights");
}

RankParallel::RankParallel(const Scenario& sc, Communicator& world, int ranks_per_node)
    : world_(world), stages_(scenario_stages(sc, world.size(), ranks_per_node)) {
  coord_ = layout().coord(world.rank());
  require_runnable_layout(sc);  // split or not: precision and recompute are refused either way
  if (!split()) return;
  const ParallelLayout& l = layout();
  const RankCoord c = coord_;
  // Each group is a split ordered by world rank, which orders it by its coordinate in either placement.
  dp_ = world.split(c.pp * l.tp() + c.tp);
  tp_ = world.split(c.pp * l.dp() + c.dp);
  pp_ = world.split(c.dp * l.tp() + c.tp);
  if (dp_->rank() != c.dp || tp_->rank() != c.tp || pp_->rank() != c.pp)
    throw InternalError(fmt::format("RankParallel: {} is rank {} / {} / {} of its DP / TP / PP groups",
                                    describe_rank(world.rank()), dp_->rank(), tp_->rank(), pp_->rank()));
}

std::unique_ptr<Model> RankParallel::make_model(Ops& ops, const ModelConfig& model, int batch) const {
  if (!split()) return ddplab::make_model(ops, model, batch);
  return std::make_unique<SplitModel>(ops, model, stage().model, stage().context.pipeline, layout().tp(), coord_.tp,
                                      batch);
}

void RankParallel::attach(PlanExecutor& executor) {
  if (split()) executor.set_groups(tp_.get(), pp_.get());
}

std::vector<float> RankParallel::whole_parameters(Model& model) {
  auto* split_model = dynamic_cast<SplitModel*>(&model);
  if (!split_model) throw InternalError("RankParallel::whole_parameters: not a split model");
  std::vector<float> whole = coord_.dp == 0 ? split_model->whole_contribution(coord_.tp == 0)
                                            : std::vector<float>(split_model->whole_params(), 0.0f);
  world_.allreduce_sum(whole.data(), whole.size());  // one share per element, zeros elsewhere: exact
  return whole;
}

int RankParallel::replica_zero(int rank) const {
  RankCoord c = layout().coord(rank);
  c.dp = 0;
  return split() ? layout().rank(c) : 0;
}

std::string RankParallel::describe_rank(int rank) const {
  if (!split()) return fmt::format("rank {}", rank);
  const RankCoord c = layout().coord(rank);
  return fmt::format("rank {} (tp {}, pp {}, dp {})", rank, c.tp, c.pp, c.dp);
}

}  // namespace ddplab
