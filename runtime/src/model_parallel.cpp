#include "ddplab/runtime/model_parallel.hpp"

#include <fmt/format.h>

#include "ddplab/runtime/split_mlp.hpp"

namespace ddplab {

RankParallel::RankParallel(const Scenario& sc, Communicator& world, int ranks_per_node)
    : world_(world), stages_(scenario_stages(sc, world.size(), ranks_per_node)) {
  coord_ = layout().coord(world.rank());
  if (!split()) return;
  const ParallelLayout& l = layout();
  const RankCoord c = coord_;
  // Each group is a split ordered by world rank, which orders it by its coordinate in either placement.
  dp_ = world.split(c.pp * l.tp() + c.tp);
  tp_ = world.split(c.pp * l.dp() + c.dp);
  pp_ = world.split(c.dp * l.tp() + c.tp);
  if (dp_->rank() != c.dp || tp_->rank() != c.tp || pp_->rank() != c.pp)
    throw std::logic_error(fmt::format("RankParallel: {} is rank {} / {} / {} of its DP / TP / PP groups", describe_rank(world.rank()),
                                       dp_->rank(), tp_->rank(), pp_->rank()));
}

std::unique_ptr<Model> RankParallel::make_model(Ops& ops, const ModelConfig& model, int batch) const {
  if (!split()) return ddplab::make_model(ops, model, batch);
  if (model.type != "mlp") throw std::invalid_argument("the runtime splits the MLP only, not model type \"" + model.type + "\"");
  return std::make_unique<SplitMlp>(ops, model.layers, stage().model, stage().context.pipeline, layout().tp(), coord_.tp,
                                    batch);
}

void RankParallel::attach(PlanExecutor& executor) {
  if (split()) executor.set_groups(tp_.get(), pp_.get());
}

std::vector<float> RankParallel::whole_parameters(Model& model) {
  auto* split_model = dynamic_cast<SplitMlp*>(&model);
  if (!split_model) throw std::logic_error("RankParallel::whole_parameters: not a split model");
  std::vector<float> whole = coord_.dp == 0 ? split_model->whole_contribution(coord_.tp == 0)
                                            : std::vector<float>(split_model->whole_params(), 0.0f);
  world_.allreduce_sum(whole.data(), whole.size());  // one share per element, zeros elsewhere: exact
  return whole;
}

std::string RankParallel::describe_rank(int rank) const {
  const RankCoord c = layout().coord(rank);
  return fmt::format("rank {} (tp {}, pp {}, dp {})", rank, c.tp, c.pp, c.dp);
}

}  // namespace ddplab
