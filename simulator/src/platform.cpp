#include "platform.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {

void validate_cluster(const ClusterConfig& c) {
  if (c.topology != "star")
    throw std::invalid_argument(fmt::format("simulator: topology \"{}\" is not supported (known: star)", c.topology));
  if (!(c.link_bandwidth > 0))
    throw std::invalid_argument("simulator: [cluster].link_bandwidth must be > 0 bytes/s");
  if (!(c.link_latency >= 0)) throw std::invalid_argument("simulator: [cluster].link_latency must be >= 0 s");
}

double tcp_gamma_for(const ClusterConfig& c) {
  // SimGrid bounds every flow at gamma / (2 * route latency), where route latency is the sum of the link
  // latencies before any model factor (2 * link_latency on the star). The 4 MiB default binds for fast or
  // long links (300 GB/s at 10 us, or 10 Gbit/s at 1 ms), which would silently turn the simulator into a
  // window model. Size the window so the cap is 16x the link bandwidth: links, not TCP windows, decide.
  const double route_latency = 2 * c.link_latency;
  const double needed = 16.0 * c.link_bandwidth * 2 * route_latency;
  return std::max(4.0 * 1024 * 1024, needed);
}

double time_precision_for(const ClusterConfig& c, const SimOptions& options) {
  if (options.time_precision_s > 0) return options.time_precision_s;
  // Chunks of a schedule differ by one element when the count does not divide evenly, so with SimGrid's
  // 1 ns default their flows end a few ns apart (4 B at 10 Gbit/s is 3.2 ns). The ranks then drift apart,
  // every completion becomes its own event, and with cross-traffic the ring's flows form one coupled
  // max-min system re-solved at each event: 1024 ranks took 322 s instead of 17 s. Merging events closer
  // than 1% of a link latency bounds the error per step by that 1%: a step lasts at least one route
  // latency (2 x link latency), so the collective time is off by at most 0.5%.
  return std::max(1e-9, 0.01 * c.link_latency);
}

sg4::Engine* make_engine(const ClusterConfig& cluster, const SimOptions& options) {
  // SimGrid parses --log from argv; logging is silenced unless verbose (critical errors still print).
  static std::vector<std::string> args;
  static std::vector<char*> argv;
  args = {"ddplab-simulator"};
  if (!options.verbose) args.push_back("--log=root.thres:critical");
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  auto* engine = new sg4::Engine(&argc, argv.data());

  engine->set_config(fmt::format("network/model:{}", options.network_model));
  engine->set_config(fmt::format("network/crosstraffic:{}", options.crosstraffic ? 1 : 0));
  engine->set_config(fmt::format("network/TCP-gamma:{}", tcp_gamma_for(cluster)));
  engine->set_config(fmt::format("surf/precision:{}", time_precision_for(cluster, options)));
  return engine;
}

std::vector<sg4::Host*> build_star_platform(const ClusterConfig& c, int world_size) {
  auto* zone = sg4::create_star_zone("cluster");
  std::vector<sg4::Host*> hosts;
  hosts.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    const std::string name = fmt::format("r{}", r);
    auto* host = zone->create_host(name, kHostSpeed);
    auto* link = zone->create_split_duplex_link(fmt::format("link-{}", name), c.link_bandwidth)->set_latency(c.link_latency);
    link->seal();
    // UP is host -> switch; the symmetric route switch -> host uses the link's DOWN half.
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{link, sg4::LinkInRoute::Direction::UP}}, true);
    hosts.push_back(host);
  }
  zone->seal();
  return hosts;
}

}  // namespace ddplab::sim
