#include "trainer_placement.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace ddplab {
namespace {

std::unique_ptr<Ops> open_ops(const TrainConfig& tr) { return make_ops(tr.backend, tr.tf32); }

// The ranks on this node, as mpirun tells them; the world without it.
int local_ranks(int world) {
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  return local_size ? std::max(1, std::atoi(local_size)) : world;
}

// This rank's model with its initial parameters: with a split every share is cut from the whole model's one
// draw (pure DP's initial model); without one, rank 0's draw is everyone's, as in DDP's constructor.
std::unique_ptr<Model> initial_model(const Scenario& sc, RankParallel& rp, Ops& ops, Communicator& comm,
                                     int eval_batch) {
  const auto& tr = sc.train;
  std::unique_ptr<Model> model = rp.make_model(ops, sc.model, rp.split() ? tr.batch_size : eval_batch);
  if (rp.split()) {
    model->init(tr.seed);
    return model;
  }
  if (comm.rank() == 0) model->init(tr.seed);
  std::vector<float> host(model->num_params());
  ops.to_host(host.data(), model->params(), host.size());
  comm.broadcast(host.data(), host.size() * sizeof(float), 0);
  ops.to_device(model->params(), host.data(), host.size());
  return model;
}

}  // namespace

Placement::Placement(const Scenario& sc, const StrategyConfig& st, Communicator& comm)
    : ops(open_ops(sc.train)),
      nccl(transport_of(sc.train.backend) == Transport::Nccl
               ? open_nccl_communicator(comm, *ops, sc.train.comm_timeout_s)
               : nullptr),
      plan_comm(nccl ? *nccl : comm),
      backend_name(sc.train.backend == Backend::CudaMpi ? ops->name() + "+mpi" : ops->name()),
      // Evaluation in batches of at least 500 loss rows: images, or a language model's tokens.
      eval_batch(
          std::max(sc.train.batch_size, (500 + sc.model.labels_per_sample() - 1) / sc.model.labels_per_sample())),
      ranks_per_node(local_ranks(comm.size())),
      rp(sc, comm, ranks_per_node),
      model(initial_model(sc, rp, *ops, comm, eval_batch)),
      whole_model(rp.split() ? make_model(*ops, sc.model, eval_batch) : nullptr),
      strategy(rp.split() ? Strategy(st, rp.stage().model, rp.stage().context)
                          : Strategy(st, model->spec(), strategy_context(sc, comm.size(), ranks_per_node))),
      replica(rp.data().rank()),
      worker(strategy.is_worker(replica)),
      workers(strategy.workers()) {}

}  // namespace ddplab
