// NCCL's algorithm and protocol choice, and the link load of each choice (nccl_model.hpp).
#include "ddplab/strategies/nccl_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>

#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

enum Proto { LL = 0, LL128 = 1, Simple = 2 };
constexpr std::array<const char*, 3> kProtoName{"LL", "LL128", "Simple"};
constexpr double us = 1e-6;

// NCCL 2.30.7's tuner constants (tuning.cc; docs/published-measurements.md 4.1), per protocol, in us.
constexpr std::array<double, 3> kBaseRing{6.6, 14.0, 8.4}, kBaseTree{6.8, 14.0, 8.4};
constexpr std::array<double, 3> kHopNvlRing{0.6, 1.9, 3.4}, kHopNvlTree{0.6, 1.25, 4.0};
constexpr std::array<double, 3> kHopNetRing{2.7, 4.0, 14.0}, kHopNetTree{5.0, 8.5, 14.0};
constexpr double kHopNvls = 25.0;  // NVLS, Simple only, one node
constexpr double kNvlsEff = 0.85;  // NVLS bandwidth efficiency on Hopper
// NVLS's pipeline, which the tuner's formula leaves out. Each step moves one chunk per NVLS channel and
// head (a head per GPU of the node); for buffers under 64, 8 and 2 such steps NCCL shrinks the chunk from
// 128 KiB to 64, 32 and 16 KiB (enqueue.cc's chunking for NVLS), so mid-size buffers take few, small steps
// and the steps that fill the pipeline weigh. kNvlsFill is fitted to the 8x H200 sweep (row 1.4 of
// docs/published-measurements.md) at 2-32 MiB; the rest is NCCL's.
constexpr int kNvlsChannels = 16;   // NVLS_NCHANNELS on Hopper, as NCCL's init log reports it
constexpr double kNvlsFill = 2.0;   // step times before the first step completes
constexpr double kLL128Eff = 0.92;  // LL128's share of Simple's bandwidth
constexpr double kTreeEff = 0.92;   // Tree AllReduce's share of the ring's bus bandwidth
constexpr int kSlots = 8;           // NCCL_STEPS: buffer slots per connection
// LL moves 4 bytes of data with a 4-byte flag; LL128 120 of every 128 bytes.
constexpr std::array<double, 3> kWire{2.0, 128.0 / 120.0, 1.0};

double ll_cap(const NcclFabric& f) { return (f.arch == "hopper" ? 141.0 : 87.7) * 1e9; }

struct Shape {
  int n, d, nodes, stripes;
  bool full;  // every node holds d ranks
};

Shape shape_of(const NcclFabric& f, int n) {
  Shape s{n, std::max(1, std::min(f.ranks_per_node, n)), 0, 1, false};
  s.nodes = (n + s.d - 1) / s.d;
  s.full = n % s.d == 0;
  // One channel per NIC: a node's NICs each carry a stripe when there is one per device.
  s.stripes = s.nodes > 1 && s.full && f.nics_per_node == s.d ? s.d : 1;
  return s;
}

// Bus bandwidth of the ring (bytes/s): each device's link, or the node's NICs when the ring leaves the node.
double ring_busbw(const NcclFabric& f, const Shape& s) {
  if (s.nodes == 1) return f.intra_bw;
  if (s.d == 1) return f.nic_bw;
  const double nic = f.nic_bw * std::max(1, std::min(f.nics_per_node, s.d));
  // A striped ring keeps (stripes-1)/stripes of each step on NVLink; an unstriped one all of it but one hop.
  const double intra = s.stripes > 1 ? f.intra_bw * s.stripes / (s.stripes - 1) : f.intra_bw;
  return std::min(intra, nic);
}

double proto_bw(const NcclFabric& f, double busbw, int p) {
  if (p == LL) return std::min(ll_cap(f), 0.5 * busbw);
  return p == LL128 ? kLL128Eff * busbw : busbw;
}

// NCCL's latency for the ring: hops along the path a byte takes, the node crossings at network cost.
double ring_latency(const Shape& s, Collective coll, int p) {
  const int steps = coll == Collective::Allreduce ? 2 * (s.n - 1) : s.n - 1;
  // With one rank per node every hop crosses nodes.
  const int inter = std::min(steps, s.nodes > 1 ? (coll == Collective::Allreduce ? 2 * s.nodes : s.nodes - 1) : 0);
  return (kBaseRing[p] + (steps - inter) * kHopNvlRing[p] + inter * kHopNetRing[p]) * us;
}

double tree_latency(const Shape& s, int p) {
  return (kBaseTree[p] + 2 * ((s.d - 1) * kHopNvlTree[p] + std::log2(s.nodes) * kHopNetTree[p])) * us;
}

double bus_bytes(Collective coll, int n, std::size_t bytes) {
  const double b = static_cast<double>(bytes);
  return coll == Collective::Allreduce ? b * 2 * (n - 1) / n : b * (n - 1) / n;
}

// ---- link-load schedules ----

using StepMap = std::vector<std::map<int, std::size_t>>;  // per step: peer -> elements

struct Builder {
  int n;
  std::vector<StepMap> sends, recvs;  // per rank
  explicit Builder(int world) : n(world), sends(world), recvs(world) {}
  void add(int src, int dst, std::size_t step, std::size_t elems) {
    auto grow = [step](StepMap& m) {
      if (m.size() <= step) m.resize(step + 1);
    };
    grow(sends[src]);
    grow(recvs[dst]);
    sends[src][step][dst] += elems;
    recvs[dst][step][src] += elems;
  }
  Schedule finish(std::string name, Collective coll, std::size_t count) {
    std::size_t steps = 0;
    for (int r = 0; r < n; ++r) steps = std::max({steps, sends[r].size(), recvs[r].size()});
    Schedule s{
        std::move(name), coll, n, count, std::vector<std::vector<ScheduleStep>>(static_cast<std::size_t>(n)), {}};
    for (int r = 0; r < n; ++r) {
      sends[r].resize(steps);
      recvs[r].resize(steps);
      auto& out = s.ranks[static_cast<std::size_t>(r)];
      out.resize(steps);
      for (std::size_t t = 0; t < steps; ++t) {
        for (const auto& [peer, e] : sends[r][t]) out[t].sends.push_back({peer, Chunk{0, e}});
        for (const auto& [peer, e] : recvs[r][t]) out[t].recvs.push_back({peer, Chunk{0, e}, RecvMode::Reduce});
      }
    }
    return s;
  }
};

// The ring with one channel per NIC: each ring step of a rank split as nccl_ring_peers says.
Schedule striped_ring(const NcclFabric& f, int n, Collective coll, std::size_t count) {
  const Schedule ring = make_schedule("ring", ScheduleParams{n, count, 1, 0}, coll);
  Builder b(n);
  for (int r = 0; r < n; ++r) {
    const NcclRingPeers to = nccl_ring_peers(f, n, r);
    const auto& steps = ring.ranks[static_cast<std::size_t>(r)];
    for (std::size_t t = 0; t < steps.size(); ++t)
      for (const SendOp& op : steps[t].sends) {
        b.add(r, to.intra, t, op.chunk.count - to.across(op.chunk.count));
        b.add(r, to.inter, t, to.across(op.chunk.count));
      }
  }
  return b.finish("", coll, count);
}

// NCCL's double binary tree: a chain inside each node and two binary trees of nodes, each carrying half the
// data, the second the mirror of the first so that a node inside one tree is a leaf of the other (each NIC
// then carries about the buffer once each way). One pair of trees per NIC stripe (its node leader is local
// index c); each half pipelined in chunks, each chunk reduced towards the root and broadcast back.
Schedule striped_tree(const Shape& s, std::size_t count, std::size_t elem_bytes) {
  Builder b(s.n);
  auto size_of = [&](int node) { return std::min(s.d, s.n - node * s.d); };
  for (int c = 0; c < s.stripes; ++c)
    for (int half = 0; half < 2; ++half) {
      const Chunk stripe = chunk_of(count, s.stripes, c);
      const std::size_t elems_total = chunk_of(stripe.count, 2, half).count;
      const std::size_t bytes = elems_total * elem_bytes;
      const int chunks = static_cast<int>(std::clamp<std::size_t>((bytes + (128u << 10) - 1) >> 17, 1, 64));
      // Node a sits at heap position a (first tree) or N-1-a (its mirror); the parent of position q is (q-1)/2.
      auto node_at = [&](int q) { return half ? s.nodes - 1 - q : q; };
      std::vector<int> parent(static_cast<std::size_t>(s.n), -1);
      for (int r = 0; r < s.n; ++r) {
        const int node = r / s.d, j = r % s.d, size = size_of(node);
        const int leader = node * s.d + (c % size), q = half ? s.nodes - 1 - node : node;
        if (r != leader) {
          parent[r] = node * s.d + (j + 1) % size;
        } else if (q > 0) {
          const int up = node_at((q - 1) / 2);
          parent[r] = up * s.d + (c % size_of(up));
        }
      }
      std::vector<int> height(static_cast<std::size_t>(s.n), 0), depth(static_cast<std::size_t>(s.n), -1);
      for (bool changed = true; changed;) {  // heights bottom-up: a parent's exceeds each child's
        changed = false;
        for (int r = 0; r < s.n; ++r)
          if (parent[r] >= 0 && height[parent[r]] < height[r] + 1) height[parent[r]] = height[r] + 1, changed = true;
      }
      std::function<int(int)> depth_of = [&](int r) -> int {
        if (depth[r] < 0) depth[r] = parent[r] < 0 ? 0 : depth_of(parent[r]) + 1;
        return depth[r];
      };
      int root = 0;
      for (int r = 0; r < s.n; ++r) {
        if (parent[r] < 0) root = r;
        depth_of(r);
      }
      // The root broadcasts a chunk as soon as it has reduced it: the two directions overlap, as NCCL's
      // tree kernel pipelines them.
      const std::size_t bcast = static_cast<std::size_t>(height[root]);
      for (int k = 0; k < chunks; ++k) {
        const std::size_t elems = chunk_of(elems_total, chunks, k).count;
        for (int r = 0; r < s.n; ++r) {
          if (parent[r] < 0) continue;
          b.add(r, parent[r], static_cast<std::size_t>(k + height[r]), elems);             // reduce, leaves first
          b.add(parent[r], r, bcast + static_cast<std::size_t>(k + depth[r] - 1), elems);  // broadcast, root first
        }
      }
    }
  return b.finish("", Collective::Allreduce, count);
}

// NVLink SHARP: the switch reduces and multicasts, so each GPU moves (n+1)/n of the buffer each way.
Schedule nvls_schedule(int n, std::size_t count) {
  Builder b(n);
  const double per_peer = static_cast<double>(count) * (n + 1) / (static_cast<double>(n) * (n - 1));
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      if (q != r) b.add(r, q, 0, static_cast<std::size_t>(std::llround(per_peer)));
  return b.finish("", Collective::Allreduce, count);
}

// NCCL's NVLS chunk for a buffer of `bytes` over n GPUs of one node (enqueue.cc, same order of tests).
std::size_t nvls_chunk(std::size_t bytes, int n) {
  const std::size_t ops = static_cast<std::size_t>(kNvlsChannels) * static_cast<std::size_t>(n);
  std::size_t chunk = 128u << 10;
  if (bytes < 64 * ops * chunk) chunk = 64u << 10;
  if (bytes < 8 * ops * chunk) chunk = 32u << 10;
  if (bytes < 2 * ops * chunk) chunk = 16u << 10;
  return chunk;
}

double nvls_seconds_per_byte(const NcclFabric& f, int n) { return (n + 1.0) / n / (kNvlsEff * f.intra_bw); }

}  // namespace

NcclChoice nccl_choose(const NcclFabric& f, Collective coll, int n, std::size_t bytes) {
  if (coll != Collective::Allreduce && coll != Collective::ReduceScatter && coll != Collective::AllGather)
    throw InputError("nccl model: no model of collective \"" + to_string(coll) + "\"");
  const Shape s = shape_of(f, n);
  NcclChoice best{"ring", "Simple", std::numeric_limits<double>::infinity()};
  if (n < 2) return {"ring", "Simple", 0};
  const double bus = bus_bytes(coll, n, bytes), ring_bw = ring_busbw(f, s);
  auto consider = [&](const char* algo, int p, double t) {
    if (t < best.model_s) best = {algo, kProtoName[p], t};
  };
  for (int p : {LL, LL128, Simple}) {
    consider("ring", p, ring_latency(s, coll, p) + bus / proto_bw(f, ring_bw, p));
    if (coll == Collective::Allreduce && s.nodes > 1)
      consider("tree", p, tree_latency(s, p) + bus / proto_bw(f, kTreeEff * ring_bw, p));
  }
  if (coll == Collective::Allreduce && f.nvls && s.nodes == 1 && n > 2)
    consider("nvls", Simple, kHopNvls * us + static_cast<double>(bytes) * nvls_seconds_per_byte(f, n));
  return best;
}

ScheduleTiming nccl_timing(const NcclFabric& f, const NcclChoice& c, Collective coll, int n, int steps,
                           std::size_t bytes) {
  const Shape s = shape_of(f, n);
  const int p = c.protocol == "LL" ? LL : c.protocol == "LL128" ? LL128 : Simple;
  ScheduleTiming t;
  t.protocol = c.protocol;
  t.wire_factor = c.algorithm == "nvls" ? 1 / kNvlsEff : kWire[p];
  t.ranks_per_node = s.d;
  // The replay runs steps in lock-step, where NCCL pipelines: a byte pays each hop's latency once along its
  // path (NCCL's latency model). So the path's latency is spread over the schedule's steps; each step
  // pays at least the platform's wire latency, which the hop latencies include.
  const double base = c.algorithm == "nvls" ? 0.0 : c.algorithm == "tree" ? kBaseTree[p] * us : kBaseRing[p] * us;
  const double path = c.algorithm == "nvls"   ? kHopNvls * us
                      : c.algorithm == "tree" ? tree_latency(s, p) - base
                                              : ring_latency(s, coll, p) - base;
  const double mean_hop = path / std::max(1, steps);
  t.start_s = base;
  if (c.algorithm == "nvls")  // the pipeline's fill: kNvlsFill steps of chunks
    t.start_s = kNvlsFill * static_cast<double>(kNvlsChannels * n) * static_cast<double>(nvls_chunk(bytes, n)) *
                nvls_seconds_per_byte(f, n);
  t.intra_hop_s = std::max(0.0, mean_hop - f.intra_wire_s);
  t.inter_hop_s = std::max(0.0, mean_hop - (s.nodes > 1 ? f.inter_wire_s : f.intra_wire_s));
  // A ring step waits for its slowest hop: across nodes every step has one.
  if (c.algorithm == "ring" && s.nodes > 1) t.intra_hop_s = t.inter_hop_s;
  // A tree's chunks stream: a rank goes on receiving while its sends are in flight (NCCL_STEPS slots).
  if (c.algorithm == "tree") t.pipeline_depth = kSlots;
  return t;
}

NcclRingPeers nccl_ring_peers(const NcclFabric& f, int world, int r) {
  const Shape s = shape_of(f, world);
  if (s.stripes <= 1) return {(r + 1) % world, (r + 1) % world, 1};
  const int node = r / s.d, next_j = (r % s.d + 1) % s.d;
  return {node * s.d + next_j, ((node + 1) % s.nodes) * s.d + next_j, s.stripes};
}

Schedule nccl_schedule(const NcclFabric& f, Collective coll, int n, std::size_t count, std::size_t elem_bytes) {
  const NcclChoice c = nccl_choose(f, coll, n, count * elem_bytes);
  const Shape s = shape_of(f, n);
  Schedule out = c.algorithm == "nvls"   ? nvls_schedule(n, count)
                 : c.algorithm == "tree" ? striped_tree(s, count, elem_bytes)
                 : s.stripes > 1         ? striped_ring(f, n, coll, count)
                                         : make_schedule("ring", ScheduleParams{n, count, 1, 0}, coll);
  out.name = "nccl:" + c.algorithm + "/" + c.protocol;
  out.timing = nccl_timing(f, c, coll, n, static_cast<int>(out.ranks.front().size()), count * elem_bytes);
  return out;
}

}  // namespace ddplab
