// Parameter server push and pull (PsLayout): the wire pattern of policy ps. A push is a reduce-scatter
// onto the servers only, a pull a gather-free broadcast of each server's shard to the workers; each is
// one step with every transfer in flight at once, as workers talk to all servers concurrently.
#include <stdexcept>
#include <string>

#include "builder.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {

int PsLayout::server_index(int rank) const {
  if (servers > 0) return rank >= world_size - servers && rank < world_size ? rank - (world_size - servers) : -1;
  return rank >= 0 && rank < world_size ? rank : -1;
}

namespace {

PsLayout layout_of(int n, int servers, const char* what) {
  if (servers < 0 || (servers > 0 && servers >= n))
    throw InputError(std::string(what) + ": " + std::to_string(servers) + " dedicated servers leave no worker among " +
                     std::to_string(n) + " ranks");
  return PsLayout{n, servers};
}

}  // namespace

Schedule ps_push(int n, std::size_t count, int servers) {
  const PsLayout ps = layout_of(n, servers, "ps push");
  sched::Builder b("ps", Collective::Push, n, count);
  const std::vector<Chunk> shards = sched::split({0, count}, ps.number());
  // Server s adds the workers' shards in worker order after its own (the sum is formed once, on s).
  for (int s = 0; s < ps.number(); ++s)
    for (int d = 0; d < ps.workers(); ++d) {
      const int w = servers > 0 ? d : (s + 1 + d) % n;
      if (w == ps.server_rank(s)) continue;  // a co-located server's own shard is already in place
      b.move(0, w, ps.server_rank(s), shards[static_cast<std::size_t>(s)], RecvMode::Reduce);
    }
  b.use_rounds(n > 1 ? 1 : 0);
  return b.finish();
}

Schedule ps_pull(int n, std::size_t count, int servers) {
  const PsLayout ps = layout_of(n, servers, "ps pull");
  sched::Builder b("ps", Collective::Pull, n, count);
  const std::vector<Chunk> shards = sched::split({0, count}, ps.number());
  for (int s = 0; s < ps.number(); ++s)
    for (int w = 0; w < ps.workers(); ++w)
      if (w != ps.server_rank(s)) b.move(0, ps.server_rank(s), w, shards[static_cast<std::size_t>(s)], RecvMode::Copy);
  b.use_rounds(n > 1 ? 1 : 0);
  return b.finish();
}

}  // namespace ddplab
