// `ddplab testbed up|down|status`: an emulated cluster of network namespaces on this machine (testbed.hpp).
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "ddplab/testbed/testbed.hpp"

namespace ddplab::cli {

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
  up->callback([a] { g_exit_code = testbed::up(testbed::make_options(a->hosts, a->rate, a->delay, a->subnet)); });

  tb->add_subcommand("down", "Remove what `up` created, and any ddpl-* leftovers of a crashed one")->callback([] {
    g_exit_code = testbed::down();
  });

  tb->add_subcommand("status", "Hosts, IPs and shapers, whether each piece exists, and leftovers")
      ->footer(
          "Exit status: 0 when the test bed is up and whole, 1 when there is none, 3 when it is incomplete or "
          "leftovers exist.")
      ->callback([] { g_exit_code = testbed::status(); });
}

}  // namespace ddplab::cli
