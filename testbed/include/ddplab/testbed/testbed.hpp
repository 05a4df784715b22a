// The emulated cluster (`ddplab testbed`): N network namespaces, each with a veth to a bridge in the root
// namespace, addresses on a private subnet and a tc shaper on both ends of every veth. mpirun reaches the
// namespaces through a launch agent script that runs `ip netns exec`.
//
// Everything `up` creates is named with kPrefix and listed in a state file, so `down` removes exactly that;
// prefixed objects that the state file does not list are crash leftovers, reported by `status`/`up` and
// removed by `down`.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddplab::testbed {

inline constexpr const char* kPrefix = "ddpl-";
inline constexpr int kMaxHosts = 64;

// Rates as tc writes them: a number and a unit, bit (or none), kbit, mbit, gbit, tbit, the IEC forms kibit,
// mibit, ..., and bytes per second bps, kbps, mbps, gbps, tbps, kibps, ... Case-insensitive. Returns bits/s;
// throws InputError naming the expected form.
std::uint64_t parse_rate(std::string_view text);
std::string format_rate(std::uint64_t bits_per_s);  // "1gbit", "100mbit", "1500kbit": parse_rate's inverse

struct Subnet {
  std::uint32_t network = 0;  // host order
  int prefix_len = 24;
  std::string text() const;        // "10.77.0.0/24"
  std::uint32_t capacity() const;  // usable host addresses
  bool contains(std::uint32_t addr) const;
};
// An IPv4 network in a private range (RFC 1918), "a.b.c.d/len" with len 8..30 and no host bits set.
Subnet parse_subnet(std::string_view text);
std::string ipv4_text(std::uint32_t addr);
std::optional<std::uint32_t> parse_ipv4(std::string_view text);

// What `testbed up` was asked for, validated.
struct Options {
  int hosts = 0;
  std::uint64_t rate_bps = 0;
  std::string delay;  // as given; empty = none
  double delay_s = 0;
  Subnet subnet;
};
Options make_options(int hosts, const std::string& rate, const std::string& delay, const std::string& subnet);

struct Node {
  std::string ns;         // network namespace, ddpl-h<i>
  std::string ip;         // 10.77.0.<i+1>
  std::string veth_root;  // bridge port in the root namespace, ddpl-v<i>
  std::string veth_ns;    // its peer inside the namespace, ddpl-p<i>
};

struct State {
  std::string phase = "creating";  // "creating" until every piece exists, then "up"
  int hosts = 0;
  std::uint64_t rate_bps = 0;
  std::string delay;            // empty = none
  std::string subnet;           // "10.77.0.0/24"
  std::string bridge;           // ddpl-br
  std::string bridge_ip;        // the root namespace's address on the bridge (mpirun's end), with /len
  std::string agent, hostfile;  // files written into the state folder
  std::string created_at;       // ISO-8601 UTC
  long pid = 0;                 // the `up` process
  std::vector<Node> nodes;

  std::string rate() const { return format_rate(rate_bps); }
};

// The state folder: $DDPLAB_TESTBED_DIR, else /run/ddplab-testbed. The state file is state.json inside it.
std::string state_dir();
std::string state_path();

// The names, addresses and files `up` will create for these options (nothing is touched).
State plan_state(const Options& opt, const std::string& dir);

nlohmann::json to_json(const State& s);
State state_from_json(const nlohmann::json& j);  // throws InputError naming the bad field
// Written to a temporary file and renamed, so a crash never leaves half a state file.
void write_state(const State& s, const std::string& path);
std::optional<State> read_state(const std::string& path);  // nullopt when absent; throws when unreadable

// The launch agent: `AGENT HOST CMD...` runs CMD inside HOST's namespace; unknown hosts are refused.
std::string agent_script(const State& s);
std::string hostfile_text(const State& s);  // one namespace IP per line, slots=1
// mpirun options that place one rank per namespace: hostfile, agent, TCP only on the subnet, no shared memory.
std::vector<std::string> mpirun_args(const State& s);
// Launches on the test bed are tried this many times while no rank starts (runtime/launch.hpp's retry_unstarted).
inline constexpr int kLaunchAttempts = 3;
// What a stored run records about the test bed it ran on.
nlohmann::json run_tag(const State& s);

// The tc shaper arguments after `tc qdisc add dev DEV <parent>`: tbf at the rate, with a burst of at least
// 1 ms of traffic (64 KiB minimum) and 20 ms of queue.
std::vector<std::string> tbf_args(std::uint64_t rate_bps);

// What `status` finds of each piece of the state, and the prefixed objects no state lists.
struct NodeHealth {
  bool ns = false, veth_root = false, addr = false;
  std::string qdisc_out, qdisc_in;  // "tbf 1gbit", "netem+tbf 1gbit", "-" when missing
  bool out_ok = false, in_ok = false;
  bool ok() const { return ns && veth_root && addr && out_ok && in_ok; }
};

struct Health {
  bool bridge = false, files = false;
  std::vector<NodeHealth> nodes;
  std::vector<std::string> leftovers;  // "netns ddpl-h7", "link ddpl-v7": prefixed, not in the state
  bool whole(const State& s) const {
    bool all = s.phase == "up" && bridge && files && leftovers.empty();
    for (const auto& n : nodes) all = all && n.ok();
    return all;
  }
};

// Operations on the real network (root and iproute2 needed); the CLI prints what they return. Failures
// throw with the command line, its exit status and stderr.
State up(const Options& opt);  // refuses when a test bed or leftovers exist; returns the state, now "up"

struct DownReport {
  std::vector<std::string> removed;  // "netns ddpl-h0", "link ddpl-br", "file /run/...": what was deleted
  bool was_up = false;               // a state file was read
  std::string unreadable;            // why the state file could not be read (every prefixed object went)
};
DownReport down();  // removes what the state lists, then any prefixed leftovers

struct StatusReport {
  std::optional<State> state;
  std::string unreadable;  // why the state file could not be read
  Health health;
  int exit_code() const;  // 0: up and whole; 1: nothing up; 3: incomplete or leftovers
};
StatusReport status();

// The state of a test bed that is up and whole, for `run --testbed`; throws telling what to do otherwise,
// also when `np` (the user's --np) is given and differs from the host count.
State require_up(std::optional<int> np = std::nullopt);

// Adds "testbed": run_tag(s) to the config of every run the launch `launch_id` stored in `db` (launch_runs).
void tag_runs(const std::string& db, std::int64_t after_id, const std::string& launch_id, const State& s);

}  // namespace ddplab::testbed
