// `ddplab testbed up|down|status`: an emulated cluster of network namespaces on this machine (testbed.hpp).
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "ddplab/testbed/testbed.hpp"

namespace ddplab::cli {
namespace {

void print_up(const testbed::State& s) {
  std::printf("test bed up: %d hosts on bridge %s (%s), every NIC shaped to %s both ways%s\n", s.hosts,
              s.bridge.c_str(), s.subnet.c_str(), s.rate().c_str(),
              s.delay.empty() ? "" : (", plus " + s.delay + " one-way delay (netem)").c_str());
  for (const auto& n : s.nodes) std::printf("  %-10s %s\n", n.ns.c_str(), n.ip.c_str());
  std::printf("state %s; use it with `ddplab run SCENARIO --testbed`, remove it with `ddplab testbed down`\n",
              testbed::state_path().c_str());
}

void print_down(const testbed::DownReport& r) {
  if (!r.unreadable.empty())
    std::fprintf(stderr, "ddplab testbed down: %s; removed every %s object instead\n", r.unreadable.c_str(),
                 testbed::kPrefix);
  for (const auto& x : r.removed) std::printf("removed %s\n", x.c_str());
  if (r.removed.empty() && !r.was_up) std::printf("no test bed was up\n");
}

std::string yes_no(bool ok) { return ok ? "ok" : "MISSING"; }

int print_status(const testbed::StatusReport& r) {
  const testbed::Health& h = r.health;
  if (!r.unreadable.empty()) std::printf("%s\n", r.unreadable.c_str());
  const int code = r.exit_code();
  if (code == 1) {
    std::printf("no test bed is up (no state at %s, no %s objects)\n", testbed::state_path().c_str(), testbed::kPrefix);
    return code;
  }
  if (const auto& s = r.state) {
    std::printf("test bed: %s, %d hosts at %s%s, subnet %s, created %s by pid %ld\nstate: %s\n", s->phase.c_str(),
                s->hosts, s->rate().c_str(), s->delay.empty() ? "" : (" + " + s->delay + " delay").c_str(),
                s->subnet.c_str(), s->created_at.c_str(), s->pid, testbed::state_path().c_str());
    std::printf("bridge %s %s: %s; agent and hostfile: %s\n", s->bridge.c_str(), s->bridge_ip.c_str(),
                yes_no(h.bridge).c_str(), yes_no(h.files).c_str());
    // Each piece is followed by "ok" or "MISSING"; a shaper at another rate than the state's is marked "!".
    auto shown = [](const std::string& q, bool ok) { return q == "-" ? std::string("MISSING") : ok ? q : q + " !"; };
    std::printf("%-4s %-18s %-18s %-26s %-16s %-16s\n", "host", "namespace", "ip", "veths (bridge/host)", "qdisc out",
                "qdisc in");
    for (std::size_t i = 0; i < s->nodes.size(); ++i) {
      const testbed::Node& n = s->nodes[i];
      const testbed::NodeHealth& nh = h.nodes[i];
      std::printf("%-4zu %-18s %-18s %-26s %-16s %-16s\n", i, (n.ns + " " + yes_no(nh.ns)).c_str(),
                  (n.ip + " " + yes_no(nh.addr)).c_str(),
                  (n.veth_root + "/" + n.veth_ns + " " + yes_no(nh.veth_root)).c_str(),
                  shown(nh.qdisc_out, nh.out_ok).c_str(), shown(nh.qdisc_in, nh.in_ok).c_str());
    }
  }
  for (const auto& l : h.leftovers) std::printf("leftover (in no state file): %s\n", l.c_str());
  if (code == 0)
    std::printf("whole: every piece exists and is shaped to %s\n", r.state->rate().c_str());
  else
    std::printf("incomplete or left over from a crash: run `ddplab testbed down` to remove it\n");
  return code;
}

}  // namespace

void add_testbed(CLI::App& app) {
  auto* tb =
      app.add_subcommand("testbed", "An emulated cluster: N network namespaces on a bridge, NICs shaped with tc");
  tb->require_subcommand(1);
  tb->footer(
      "Needs root and iproute2. Every object is named ddpl-*: namespaces ddpl-h<i>, veths ddpl-v<i> (bridge side)\n"
      "and ddpl-p<i> (host side), bridge ddpl-br. The state lives in $DDPLAB_TESTBED_DIR, else /run/ddplab-testbed.\n"
      "Use it with `ddplab run SCENARIO --testbed` or `ddplab bench collectives --testbed`: one rank per host.");

  struct UpArgs {
    int hosts = 0;
    std::string rate, delay, subnet = "10.77.0.0/24";
  };
  auto a = std::make_shared<UpArgs>();
  auto* up = tb->add_subcommand("up", "Create the namespaces, bridge, veths and shapers, and record them");
  up->add_option("--hosts", a->hosts, "Hosts (namespaces), 1..64")->required();
  up->add_option("--rate", a->rate, "Rate of every NIC, each way, in tc syntax: 100mbit, 1gbit, 10gbit")->required();
  up->add_option("--delay", a->delay,
                 "One-way delay added to each host's outgoing traffic (netem), e.g. 50us; fails where the kernel "
                 "lacks netem");
  up->add_option("--subnet", a->subnet,
                 "Private IPv4 network for the hosts (.1, .2, ...) and the bridge (last address)")
      ->capture_default_str();
  up->footer(
      "Refuses to start when a test bed, or leftovers of one, already exist: `ddplab testbed down` removes them.");
  up->callback([a] { print_up(testbed::up(testbed::make_options(a->hosts, a->rate, a->delay, a->subnet))); });

  tb->add_subcommand("down", "Remove what `up` created, and any ddpl-* leftovers of a crashed one")->callback([] {
    print_down(testbed::down());
  });

  tb->add_subcommand("status", "Hosts, IPs and shapers, whether each piece exists, and leftovers")
      ->footer(
          "Exit status: 0 when the test bed is up and whole, 1 when there is none, 3 when it is incomplete or "
          "leftovers exist.")
      ->callback([] { g_exit_code = print_status(testbed::status()); });
}

}  // namespace ddplab::cli
