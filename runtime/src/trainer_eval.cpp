#include "trainer_eval.hpp"

#include <vector>

namespace ddplab {

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

void average_buffers(Communicator& comm, Ops& ops, Model& model, bool worker, int workers) {
  if (model.num_buffers() == 0) return;
  std::vector<float> host(model.num_buffers());
  ops.to_host(host.data(), model.buffers(), host.size());
  for (float& v : host) v = worker ? v / static_cast<float>(workers) : 0.0f;
  comm.allreduce_sum(host.data(), host.size());
  ops.to_device(model.buffers(), host.data(), host.size());
  ops.synchronize();  // host is pageable and goes out of scope
}

Evaluation evaluate_run(StrategyRun& r, std::int64_t at_step, TrainerClock::time_point start) {
  Placement& p = r.place;
  assemble_server_models(r.comm, *p.ops, *p.model, p.strategy);
  r.executor.gather_parameters();
  average_buffers(r.comm, *p.ops, *p.model, p.worker, p.workers);
  if (p.whole_model) {
    const std::vector<float> whole = p.rp.whole_parameters(*p.model);
    p.ops->to_device(p.whole_model->params(), whole.data(), whole.size());
  }
  Evaluation e = evaluate(p.whole_model ? *p.whole_model : *p.model, *p.ops, r.data.test, r.comm, p.eval_batch);
  e.step = at_step;
  e.wall_s = seconds_since(start);
  if (r.store) r.store->add_evaluation(r.run, e);
  return e;
}

}  // namespace ddplab
