// The test bed's operations on the real network: up, down, status, through `ip` and `tc` (command.hpp).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <tuple>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/launch.hpp"
#include "ddplab/testbed/command.hpp"
#include "ddplab/testbed/testbed.hpp"

namespace ddplab::testbed {

namespace {

using Args = std::vector<std::string>;

bool has_prefix(const std::string& name) { return name.rfind(kPrefix, 0) == 0; }

nlohmann::json json_of(const Args& argv) {
  const std::string out = check_command(argv);
  if (out.find_first_not_of(" \n\t") == std::string::npos) return nlohmann::json::array();
  try {
    return nlohmann::json::parse(out);
  } catch (const nlohmann::json::exception& e) {
    throw CommandError("cannot parse the JSON output of `" + shell_join(argv) + "`: " + e.what());
  }
}

// Prefixed objects in the root namespace. Links inside a namespace go with it, and qdiscs with their link.
struct Inventory {
  std::set<std::string> netns, links;
};

Inventory scan() {
  Inventory inv;
  for (const auto& n : json_of({"ip", "-j", "netns", "list"}))
    if (n.contains("name") && has_prefix(n["name"].get<std::string>())) inv.netns.insert(n["name"].get<std::string>());
  for (const auto& l : json_of({"ip", "-j", "link", "show"}))
    if (l.contains("ifname") && has_prefix(l["ifname"].get<std::string>()))
      inv.links.insert(l["ifname"].get<std::string>());
  return inv;
}

// The tbf shaping `dev` (in namespace ns, or the root one when empty): "tbf 1gbit", and whether it has the rate.
std::pair<std::string, bool> shaper(const std::string& ns, const std::string& dev, std::uint64_t rate_bps) {
  Args argv = {"tc"};
  if (!ns.empty()) argv.insert(argv.end(), {"-n", ns});
  argv.insert(argv.end(), {"-j", "qdisc", "show", "dev", dev});
  const CommandResult r = run_command(argv);
  if (r.status != 0) return {"-", false};
  std::string kinds;
  std::uint64_t bps = 0;
  for (const auto& q : nlohmann::json::parse(r.out.empty() ? "[]" : r.out)) {
    const std::string kind = q.value("kind", "");
    if (kind != "tbf" && kind != "netem") continue;
    kinds += (kinds.empty() ? "" : "+") + kind;
    if (kind == "tbf" && q.contains("options")) bps = q["options"].value("rate", std::uint64_t{0}) * 8;
  }
  if (bps == 0) return {"-", false};
  // tc stores rates in bytes per second: allow its rounding.
  const bool ok =
      std::fabs(static_cast<double>(bps) - static_cast<double>(rate_bps)) <= 0.01 * static_cast<double>(rate_bps);
  return {kinds + " " + format_rate(bps), ok};
}

Health inspect(const State* s, const Inventory& inv) {
  Health h;
  std::set<std::string> known_ns, known_links;
  if (s) {
    h.bridge = inv.links.count(s->bridge) > 0;
    h.files = access(s->agent.c_str(), X_OK) == 0 && access(s->hostfile.c_str(), R_OK) == 0;
    known_links.insert(s->bridge);
    for (const auto& n : s->nodes) {
      known_ns.insert(n.ns);
      known_links.insert(n.veth_root);
      NodeHealth nh;
      nh.ns = inv.netns.count(n.ns) > 0;
      nh.veth_root = inv.links.count(n.veth_root) > 0;
      if (nh.ns) {
        const CommandResult r = run_command({"ip", "-n", n.ns, "-j", "-4", "addr", "show", "dev", n.veth_ns});
        if (r.status == 0)
          for (const auto& l : nlohmann::json::parse(r.out.empty() ? "[]" : r.out))
            for (const auto& a : l.value("addr_info", nlohmann::json::array()))
              if (a.value("local", "") == n.ip) nh.addr = true;
        std::tie(nh.qdisc_out, nh.out_ok) = shaper(n.ns, n.veth_ns, s->rate_bps);
      } else {
        nh.qdisc_out = "-";
      }
      if (nh.veth_root)
        std::tie(nh.qdisc_in, nh.in_ok) = shaper("", n.veth_root, s->rate_bps);
      else
        nh.qdisc_in = "-";
      h.nodes.push_back(nh);
    }
  }
  for (const auto& n : inv.netns)
    if (!known_ns.count(n)) h.leftovers.push_back("netns " + n);
  for (const auto& l : inv.links)
    if (!known_links.count(l)) h.leftovers.push_back("link " + l);
  return h;
}

// Serialises up and down (two at once would tear each other's objects apart).
class Lock {
 public:
  explicit Lock(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string path = dir + "/lock";
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) throw RunFault("cannot open " + path + ": " + std::strerror(errno));
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0)
      throw RunFault("another `ddplab testbed up/down` holds " + path + "; wait for it to finish");
  }
  ~Lock() { close(fd_); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  int fd_ = -1;
};

void require_root(const char* what) {
  if (geteuid() != 0)
    throw InputError(std::string("ddplab testbed ") + what +
                     " needs root (network namespaces, veths and tc qdiscs); run it as root or with sudo");
}

std::string delay_arg(double seconds) { return std::to_string(std::llround(seconds * 1e6)) + "us"; }

// Checks, in a throwaway namespace, that tc has tbf and (when a delay is asked for) netem.
void probe(const Options& opt) {
  const std::string ns = std::string(kPrefix) + "probe";
  check_command({"ip", "netns", "add", ns});
  std::string problem;
  try {
    if (!opt.delay.empty()) {
      const Args netem = {
          "tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", delay_arg(opt.delay_s)};
      const CommandResult r = run_command(netem);
      if (r.status != 0)
        problem = "--delay needs the netem qdisc, which is unavailable on this kernel (" + describe_failure(netem, r) +
                  "). Rate shaping works without it: leave out --delay, and the latency is the real network stack's.";
    }
    if (problem.empty()) {
      Args tbf = {"tc", "-n", ns, "qdisc", "replace", "dev", "lo", "root"};
      const Args shaping = tbf_args(opt.rate_bps);
      tbf.insert(tbf.end(), shaping.begin(), shaping.end());
      const CommandResult r = run_command(tbf);
      if (r.status != 0) problem = "the tbf qdisc is unavailable: " + describe_failure(tbf, r);
    }
  } catch (const std::exception& e) {
    problem = e.what();
  }
  check_command({"ip", "netns", "del", ns});
  if (!problem.empty()) throw RunFault(problem);
}

// Refuses a subnet that an interface outside the test bed already uses.
void check_subnet_free(const Subnet& subnet) {
  for (const auto& l : json_of({"ip", "-j", "-4", "addr", "show"}))
    for (const auto& a : l.value("addr_info", nlohmann::json::array())) {
      const auto addr = parse_ipv4(a.value("local", ""));
      if (addr && subnet.contains(*addr))
        throw InputError("--subnet " + subnet.text() + " is in use: " + a.value("local", "") + " on " +
                         l.value("ifname", "?") + "; choose another with --subnet");
    }
}

// Fault injection for tests, once K hosts exist: DDPLAB_TESTBED_FAULT=crash-after-host:K makes `up` die without
// cleaning up; fail-after-host:K makes it fail as a command would.
int fault_after_host(const char* kind) {
  const char* f = std::getenv("DDPLAB_TESTBED_FAULT");
  const std::string key = std::string(kind) + "-after-host:";
  if (!f || std::string(f).rfind(key, 0) != 0) return -1;
  return std::atoi(f + key.size());
}

void create(const State& s, const Options& opt) {
  const std::string len = s.bridge_ip.substr(s.bridge_ip.find('/'));
  check_command({"ip", "link", "add", s.bridge, "type", "bridge"});
  check_command({"ip", "addr", "add", s.bridge_ip, "dev", s.bridge});
  check_command({"ip", "link", "set", s.bridge, "up"});
  const Args shaping = tbf_args(s.rate_bps);
  const int crash_after = fault_after_host("crash"), fail_after = fault_after_host("fail");
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    const Node& n = s.nodes[i];
    check_command({"ip", "netns", "add", n.ns});
    check_command({"ip", "link", "add", n.veth_root, "type", "veth", "peer", "name", n.veth_ns, "netns", n.ns});
    check_command({"ip", "link", "set", n.veth_root, "master", s.bridge});
    check_command({"ip", "link", "set", n.veth_root, "up"});
    Args in = {"tc", "qdisc", "add", "dev", n.veth_root, "root"};  // the switch port: traffic into the host
    in.insert(in.end(), shaping.begin(), shaping.end());
    check_command(in);
    check_command({"ip", "-n", n.ns, "link", "set", "lo", "up"});
    check_command({"ip", "-n", n.ns, "addr", "add", n.ip + len, "dev", n.veth_ns});
    check_command({"ip", "-n", n.ns, "link", "set", n.veth_ns, "up"});
    Args out = {"tc", "-n", n.ns, "qdisc", "add", "dev", n.veth_ns};  // the host's NIC: traffic out of it
    if (opt.delay.empty()) {
      out.push_back("root");
    } else {
      check_command({"tc", "-n", n.ns, "qdisc", "add", "dev", n.veth_ns, "root", "handle", "1:", "netem", "delay",
                     delay_arg(opt.delay_s)});
      out.insert(out.end(), {"parent", "1:1", "handle", "10:"});
    }
    out.insert(out.end(), shaping.begin(), shaping.end());
    check_command(out);
    if (crash_after >= 0 && static_cast<int>(i) + 1 >= crash_after) {
      std::fprintf(stderr, "ddplab testbed up: DDPLAB_TESTBED_FAULT: dying after %zu hosts\n", i + 1);
      std::_Exit(86);
    }
    if (fail_after >= 0 && static_cast<int>(i) + 1 >= fail_after)
      throw RunFault("DDPLAB_TESTBED_FAULT: failing after " + std::to_string(i + 1) + " hosts");
  }
  std::ofstream(s.hostfile, std::ios::trunc) << hostfile_text(s);
  std::ofstream(s.agent, std::ios::trunc) << agent_script(s);
  if (chmod(s.agent.c_str(), 0755) != 0) throw RunFault("chmod " + s.agent + ": " + std::strerror(errno));
}

// Removes what the state lists (when given) and then every prefixed leftover; returns what it removed.
std::vector<std::string> teardown(const State* s) {
  std::vector<std::string> removed;
  auto del_ns = [&](const std::string& ns) {
    // Processes still inside (an MPI daemon of a killed job) would keep the namespace and its veth alive.
    const CommandResult pids = run_command({"ip", "netns", "pids", ns});
    if (pids.status == 0 && !pids.out.empty()) {
      std::string list;
      for (std::size_t p = 0, e; p < pids.out.size(); p = e + 1) {
        e = pids.out.find('\n', p);
        if (e == std::string::npos) e = pids.out.size();
        const long pid = std::atol(pids.out.substr(p, e - p).c_str());
        if (pid > 1 && kill(static_cast<pid_t>(pid), SIGTERM) == 0) list += " " + std::to_string(pid);
      }
      if (!list.empty())
        std::fprintf(stderr, "ddplab testbed down: stopped processes in %s:%s\n", ns.c_str(), list.c_str());
    }
    check_command({"ip", "netns", "del", ns});
    removed.push_back("netns " + ns);
  };
  auto del_link = [&](const std::string& link) {
    const Args argv = {"ip", "link", "del", link};
    const CommandResult r = run_command(argv);
    // The kernel removes a deleted namespace's veths in the background: one may vanish between scan and delete.
    if (r.status != 0 && scan().links.count(link)) throw CommandError(describe_failure(argv, r));
    if (r.status == 0) removed.push_back("link " + link);
  };
  Inventory inv = scan();
  if (s) {
    for (const auto& n : s->nodes)
      if (inv.netns.count(n.ns)) del_ns(n.ns);
    // Their veths go with them, in the background; delete explicitly only those still held (by a process).
    auto held = [&] {
      inv = scan();
      for (const auto& n : s->nodes)
        if (inv.links.count(n.veth_root)) return true;
      return false;
    };
    for (int i = 0; i < 20 && held(); ++i) usleep(100000);
    for (const auto& n : s->nodes)
      if (inv.links.count(n.veth_root)) del_link(n.veth_root);
    if (inv.links.count(s->bridge)) del_link(s->bridge);
    for (const auto* f : {&s->agent, &s->hostfile})
      if (std::remove(f->c_str()) == 0) removed.push_back("file " + *f);
    // The hosts' Open MPI session directories (agent_script), which Open MPI empties but leaves.
    const char* tmp = std::getenv("TMPDIR");
    for (const auto& n : s->nodes) {
      const std::filesystem::path dir = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / ("ddplab-testbed-" + n.ns);
      std::error_code ec;
      if (std::filesystem::remove_all(dir, ec) > 0) removed.push_back("dir " + dir.string());
    }
  }
  inv = scan();
  for (const auto& ns : inv.netns) del_ns(ns);
  inv = scan();
  // Veths before the bridge: deleting a veth removes its peer, so skip names already gone.
  for (const auto& l : inv.links)
    if (l != std::string(kPrefix) + "br" && scan().links.count(l)) del_link(l);
  for (const auto& l : scan().links) del_link(l);
  return removed;
}

}  // namespace

State up(const Options& opt) {
  require_root("up");
  const std::string dir = state_dir();
  Lock lock(dir);
  std::optional<State> existing;
  try {
    existing = read_state(state_path());
  } catch (const std::exception& e) {
    throw InputError(std::string(e.what()) + "; run `ddplab testbed down` to clean up");
  }
  if (existing) {
    const Health h = inspect(&*existing, scan());
    if (h.whole(*existing))
      throw InputError("a test bed is already up (" + std::to_string(existing->hosts) + " hosts at " +
                       existing->rate() + "); run `ddplab testbed down` first");
    throw InputError("a test bed left over from a crash is here (state " + state_path() + ", phase " + existing->phase +
                     "); run `ddplab testbed down` to remove it, then `up` again");
  }
  const Inventory inv = scan();
  if (!inv.netns.empty() || !inv.links.empty()) {
    std::string list;
    for (const auto& l : inspect(nullptr, inv).leftovers) list += (list.empty() ? "" : ", ") + l;
    throw InputError("leftovers of an earlier test bed, not in any state file: " + list +
                     "; run `ddplab testbed down` to remove them");
  }
  check_subnet_free(opt.subnet);
  probe(opt);

  State s = plan_state(opt, dir);
  write_state(s, state_path());  // phase "creating": a crash from here on leaves a record for `down`
  try {
    create(s, opt);
  } catch (const std::exception& e) {
    std::string cleanup = "removed what it had created";
    try {
      teardown(&s);
      std::remove(state_path().c_str());
    } catch (const std::exception& e2) {
      cleanup = std::string("cleanup failed too (") + e2.what() + "); run `ddplab testbed down`";
    }
    throw RunFault(std::string("testbed up failed: ") + e.what() + "; " + cleanup);
  }
  s.phase = "up";
  write_state(s, state_path());
  return s;
}

DownReport down() {
  require_root("down");
  const std::string dir = state_dir();
  Lock lock(dir);
  DownReport report;
  std::optional<State> s;
  try {
    s = read_state(state_path());
  } catch (const std::exception& e) {
    report.unreadable = e.what();
  }
  report.was_up = s.has_value();
  report.removed = teardown(s ? &*s : nullptr);
  if (std::remove(state_path().c_str()) == 0) report.removed.push_back("file " + state_path());
  // Veths of deleted namespaces go away asynchronously: give the kernel a few seconds.
  Inventory left = scan();
  for (int i = 0; i < 50 && (!left.netns.empty() || !left.links.empty()); ++i) {
    usleep(100000);
    left = scan();
  }
  if (!left.netns.empty() || !left.links.empty())
    throw RunFault("some " + std::string(kPrefix) + " objects survived `down`; see `ddplab testbed status`");
  return report;
}

StatusReport status() {
  require_root("status");
  StatusReport report;
  try {
    report.state = read_state(state_path());
  } catch (const std::exception& e) {
    report.unreadable = e.what();
  }
  report.health = inspect(report.state ? &*report.state : nullptr, scan());
  return report;
}

int StatusReport::exit_code() const {
  if (!state && health.leftovers.empty() && unreadable.empty()) return 1;
  return state && health.whole(*state) ? 0 : 3;
}

State require_up(std::optional<int> np) {
  std::optional<State> s = read_state(state_path());
  if (!s)
    throw InputError("--testbed: no test bed is up (no " + state_path() +
                     "); start one with `ddplab testbed up --hosts N --rate 1gbit`");
  if (geteuid() != 0) throw InputError("--testbed needs root: the launch agent enters network namespaces");
  if (!inspect(&*s, scan()).whole(*s))
    throw InputError(
        "--testbed: the test bed is incomplete or has leftovers; see `ddplab testbed status`, "
        "then `ddplab testbed down` and `up` again");
  if (np && *np != s->hosts)
    throw InputError("--np " + std::to_string(*np) + " disagrees with the test bed's " + std::to_string(s->hosts) +
                     " hosts (one rank per host); leave out --np");
  return *s;
}

}  // namespace ddplab::testbed
