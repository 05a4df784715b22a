#include "trainer_data.hpp"

#include <algorithm>
#include <cstdio>

#include "ddplab/runtime/input_pipeline.hpp"
#include "ddplab/runtime/partition.hpp"

namespace ddplab {

DataPlan plan_data(const Scenario& sc, const std::string& label, const Dataset& train, const DataShare& share,
                   int rank) {
  const auto& tr = sc.train;
  DataPlan p;
  p.share = share;
  p.sampler = make_sampler(train, sc.data, share.index, share.workers, tr.seed);
  if (rank == 0 || sc.data.balance == "class_weighted")
    p.histograms = class_histograms(train, sc.data, share.workers, tr.seed);
  if (sc.data.uneven == "join") p.join = join_schedule(train, sc.data, share.workers, tr.seed, tr.batch_size);
  const auto batch = static_cast<std::size_t>(tr.batch_size);
  const std::size_t per_rank = p.sampler->per_rank();
  p.steps_per_epoch = p.join ? p.join->per_epoch() : InputPipeline::batches(per_rank, batch, share.min_batch);
  // A pipeline cuts each batch into parallel.microbatches: an epoch's last batch with fewer samples is dropped.
  if (rank == 0 && !p.join && InputPipeline::batches(per_rank, batch) != p.steps_per_epoch) {
    std::printf(
        "%s: each epoch's last batch (%zu samples per replica) is dropped: fewer than parallel.microbatches = %d\n",
        label.c_str(), per_rank % batch, sc.parallel.microbatches);
    std::fflush(stdout);
  }
  if (rank == 0 && fixed_split(sc.data)) {
    std::printf("%s",
                partition_table(sc.data, p.histograms, p.join ? static_cast<std::size_t>(p.steps_per_epoch) : per_rank)
                    .c_str());
    std::fflush(stdout);
  }
  p.total_steps = p.steps_per_epoch * tr.epochs;
  if (tr.max_steps > 0) p.total_steps = std::min<std::int64_t>(p.total_steps, tr.max_steps);
  return p;
}

}  // namespace ddplab
