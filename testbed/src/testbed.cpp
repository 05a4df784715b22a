// The test bed's pure parts: argument parsing, the state file, the launch agent and mpirun options.
#include "ddplab/testbed/testbed.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/runtime/launch.hpp"

namespace ddplab::testbed {

namespace {

struct RateUnit {
  const char* name;
  double bits;
};
constexpr RateUnit kRateUnits[] = {
    {"bit", 1},
    {"kbit", 1e3},
    {"mbit", 1e6},
    {"gbit", 1e9},
    {"tbit", 1e12},
    {"kibit", 1024.0},
    {"mibit", 1048576.0},
    {"gibit", 1073741824.0},
    {"tibit", 1099511627776.0},
    {"bps", 8},
    {"kbps", 8e3},
    {"mbps", 8e6},
    {"gbps", 8e9},
    {"tbps", 8e12},
    {"kibps", 8 * 1024.0},
    {"mibps", 8 * 1048576.0},
    {"gibps", 8 * 1073741824.0},
    {"tibps", 8 * 1099511627776.0},
};
constexpr std::uint64_t kMinRate = 1000;              // 1kbit
constexpr std::uint64_t kMaxRate = 1000000000000ull;  // 1tbit

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

template <class T>
T field(const nlohmann::json& j, const char* name) {
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("field \"") + name + "\": " + e.what());
  }
}

}  // namespace

std::uint64_t parse_rate(std::string_view text) {
  const std::string t = lower(text);
  std::size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  const std::string number = t.substr(0, i), unit = t.substr(i);
  const std::string expected = "expected a tc rate such as 100mbit, 1gbit or 10gbit, got \"" + std::string(text) + "\"";
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || number == ".") throw InputError(expected);
  double bits_per_unit = 0;
  if (unit.empty()) bits_per_unit = 1;  // tc: a bare number is bits per second
  for (const auto& u : kRateUnits)
    if (unit == u.name) bits_per_unit = u.bits;
  if (bits_per_unit == 0)
    throw InputError(expected + " (unknown unit \"" + unit +
                     "\"; use bit, kbit, mbit, gbit, tbit, "
                     "kibit..tibit, or bps, kbps, mbps, gbps, tbps for bytes per second)");
  const double bits = std::strtod(number.c_str(), nullptr) * bits_per_unit;
  if (!(bits >= static_cast<double>(kMinRate)) || bits > static_cast<double>(kMaxRate))
    throw InputError("rate \"" + std::string(text) + "\" is out of range (1kbit to 1tbit)");
  return static_cast<std::uint64_t>(std::llround(bits));
}

std::string format_rate(std::uint64_t bps) {
  constexpr std::pair<std::uint64_t, const char*> kSteps[] = {
      {1000000000000ull, "tbit"}, {1000000000ull, "gbit"}, {1000000ull, "mbit"}, {1000ull, "kbit"}};
  for (const auto& [scale, name] : kSteps)
    if (bps >= scale && bps % scale == 0) return std::to_string(bps / scale) + name;
  return std::to_string(bps) + "bit";
}

std::string ipv4_text(std::uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." + std::to_string((a >> 8) & 255) + "." +
         std::to_string(a & 255);
}

std::optional<std::uint32_t> parse_ipv4(std::string_view text) {
  std::uint32_t addr = 0;
  int parts = 0;
  std::size_t i = 0;
  while (parts < 4) {
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i || j - i > 3) return std::nullopt;
    const int v = std::stoi(std::string(text.substr(i, j - i)));
    if (v > 255) return std::nullopt;
    addr = (addr << 8) | static_cast<std::uint32_t>(v);
    ++parts;
    if (parts < 4) {
      if (j >= text.size() || text[j] != '.') return std::nullopt;
      i = j + 1;
    } else if (j != text.size()) {
      return std::nullopt;
    }
  }
  return addr;
}

std::string Subnet::text() const { return ipv4_text(network) + "/" + std::to_string(prefix_len); }
std::uint32_t Subnet::capacity() const { return (1u << (32 - prefix_len)) - 2; }
bool Subnet::contains(std::uint32_t addr) const {
  const std::uint32_t mask = ~((1u << (32 - prefix_len)) - 1);
  return (addr & mask) == network;
}

Subnet parse_subnet(std::string_view text) {
  const std::string expected =
      "expected a private IPv4 network such as 10.77.0.0/24, got \"" + std::string(text) + "\"";
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) throw InputError(expected);
  const auto addr = parse_ipv4(text.substr(0, slash));
  const std::string len_text(text.substr(slash + 1));
  if (!addr || len_text.empty() || len_text.size() > 2 || !std::all_of(len_text.begin(), len_text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    throw InputError(expected);
  Subnet s;
  s.network = *addr;
  s.prefix_len = std::stoi(len_text);
  if (s.prefix_len < 8 || s.prefix_len > 30) throw InputError(expected + " (prefix length must be 8..30)");
  if ((s.network & ((1u << (32 - s.prefix_len)) - 1)) != 0)
    throw InputError(expected + " (host bits set; did you mean " +
                     ipv4_text(s.network & ~((1u << (32 - s.prefix_len)) - 1)) + "/" + len_text + "?)");
  const bool is_private =
      (s.network >> 24) == 10 || ((s.network >> 20) == ((172u << 4) | 1)) || ((s.network >> 16) == ((192u << 8) | 168));
  const int min_len = (s.network >> 24) == 10 ? 8 : (s.network >> 24) == 172 ? 12 : 16;
  if (!is_private || s.prefix_len < min_len)
    throw InputError(expected + " (not inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)");
  return s;
}

Options make_options(int hosts, const std::string& rate, const std::string& delay, const std::string& subnet) {
  Options o;
  if (hosts < 1 || hosts > kMaxHosts)
    throw InputError("--hosts must be 1.." + std::to_string(kMaxHosts) + ", got " + std::to_string(hosts));
  o.hosts = hosts;
  try {
    o.rate_bps = parse_rate(rate);
  } catch (const InputError& e) {
    throw InputError(std::string("--rate: ") + e.what(), "--rate");
  }
  if (!delay.empty()) {
    try {
      o.delay_s = parse_duration(delay);
    } catch (const InputError& e) {
      throw InputError(std::string("--delay: ") + e.what(), "--delay");
    }
    if (!(o.delay_s > 0) || o.delay_s > 10)
      throw InputError("--delay must be above 0 and at most 10s, got \"" + delay + "\"");
    o.delay = delay;
  }
  try {
    o.subnet = parse_subnet(subnet);
  } catch (const InputError& e) {
    throw InputError(std::string("--subnet: ") + e.what(), "--subnet");
  }
  if (static_cast<std::uint32_t>(hosts) + 1 > o.subnet.capacity())
    throw InputError("--subnet " + o.subnet.text() + " has room for " + std::to_string(o.subnet.capacity()) +
                     " addresses; " + std::to_string(hosts) + " hosts and the bridge need " +
                     std::to_string(hosts + 1));
  return o;
}

std::string state_dir() {
  const char* dir = std::getenv("DDPLAB_TESTBED_DIR");
  return dir && *dir ? dir : "/run/ddplab-testbed";
}

std::string state_path() { return state_dir() + "/state.json"; }

State plan_state(const Options& opt, const std::string& dir) {
  State s;
  s.hosts = opt.hosts;
  s.rate_bps = opt.rate_bps;
  s.delay = opt.delay;
  s.subnet = opt.subnet.text();
  s.bridge = std::string(kPrefix) + "br";
  // mpirun runs in the root namespace: its out-of-band channel needs an address on the subnet, the last one.
  s.bridge_ip = ipv4_text(opt.subnet.network + opt.subnet.capacity()) + "/" + std::to_string(opt.subnet.prefix_len);
  s.agent = dir + "/agent.sh";
  s.hostfile = dir + "/hostfile";
  s.created_at = utc_now();
  s.pid = static_cast<long>(getpid());
  for (int i = 0; i < opt.hosts; ++i) {
    const std::string n = std::to_string(i);
    s.nodes.push_back({kPrefix + std::string("h") + n,
                       ipv4_text(opt.subnet.network + 1 + static_cast<std::uint32_t>(i)),
                       kPrefix + std::string("v") + n, kPrefix + std::string("p") + n});
  }
  return s;
}

nlohmann::json to_json(const State& s) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : s.nodes)
    nodes.push_back({{"ns", n.ns}, {"ip", n.ip}, {"veth_root", n.veth_root}, {"veth_ns", n.veth_ns}});
  return {{"version", 1},       {"phase", s.phase},       {"hosts", s.hosts},
          {"rate", s.rate()},   {"rate_bps", s.rate_bps}, {"delay", s.delay},
          {"subnet", s.subnet}, {"bridge", s.bridge},     {"bridge_ip", s.bridge_ip},
          {"agent", s.agent},   {"hostfile", s.hostfile}, {"created_at", s.created_at},
          {"pid", s.pid},       {"nodes", nodes}};
}

State state_from_json(const nlohmann::json& j) {
  if (field<int>(j, "version") != 1) throw InputError("field \"version\": this build reads version 1");
  State s;
  s.phase = field<std::string>(j, "phase");
  if (s.phase != "creating" && s.phase != "up")
    throw InputError("field \"phase\": expected \"creating\" or \"up\", got \"" + s.phase + "\"");
  s.hosts = field<int>(j, "hosts");
  s.rate_bps = field<std::uint64_t>(j, "rate_bps");
  s.delay = field<std::string>(j, "delay");
  s.subnet = field<std::string>(j, "subnet");
  s.bridge = field<std::string>(j, "bridge");
  s.bridge_ip = field<std::string>(j, "bridge_ip");
  s.agent = field<std::string>(j, "agent");
  s.hostfile = field<std::string>(j, "hostfile");
  s.created_at = field<std::string>(j, "created_at");
  s.pid = field<long>(j, "pid");
  for (const auto& n : field<nlohmann::json>(j, "nodes"))
    s.nodes.push_back({field<std::string>(n, "ns"), field<std::string>(n, "ip"), field<std::string>(n, "veth_root"),
                       field<std::string>(n, "veth_ns")});
  if (static_cast<int>(s.nodes.size()) != s.hosts)
    throw InputError("field \"nodes\": " + std::to_string(s.nodes.size()) + " entries for " + std::to_string(s.hosts) +
                     " hosts");
  // Only our own names: `down` deletes what the file lists, so a file edited by hand must not reach further.
  auto ours = [](const std::string& name) { return name.rfind(kPrefix, 0) == 0 && name.size() <= 15; };
  if (!ours(s.bridge)) throw InputError("field \"bridge\": \"" + s.bridge + "\" lacks the prefix " + kPrefix);
  for (const auto& n : s.nodes)
    for (const auto* name : {&n.ns, &n.veth_root, &n.veth_ns})
      if (!ours(*name)) throw InputError("field \"nodes\": \"" + *name + "\" lacks the prefix " + kPrefix);
  return s;
}

void write_state(const State& s, const std::string& path) {
  const std::filesystem::path p(path);
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) throw RunFault("cannot create " + p.parent_path().string() + ": " + ec.message());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << to_json(s).dump(2) << "\n";
    out.flush();
    if (!out) throw RunFault("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw RunFault("cannot rename " + tmp + " to " + path + ": " + ec.message());
}

std::optional<State> read_state(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (access(path.c_str(), F_OK) != 0) return std::nullopt;
    throw RunFault("cannot read the test bed state " + path);
  }
  try {
    return state_from_json(nlohmann::json::parse(in));
  } catch (const std::exception& e) {
    throw InputError("test bed state " + path + " is unreadable: " + e.what());
  }
}

std::string agent_script(const State& s) {
  std::ostringstream o;
  o << "#!/bin/sh\n"
    << "# Written by `ddplab testbed up`. Open MPI calls it as `AGENT HOST COMMAND...` (plm_rsh_agent):\n"
    << "# it runs COMMAND in the network namespace of HOST.\n"
    << "case \"$1\" in\n";
  for (const auto& n : s.nodes) o << "  " << n.ip << ") ns=" << n.ns << " ;;\n";
  o << "  *) echo \"ddplab testbed agent: $1 is not a host of the test bed\" >&2; exit 255 ;;\n"
    << "esac\n"
    << "shift\n"
    // Each emulated host gets its own Open MPI session directory: the hosts share /tmp and one host name,
    // and their daemons raced to create the same one ("A call to mkdir was unable to create the desired
    // directory: /tmp/ompi.<host>.0/jf.N"), which failed a launch now and then.
    << "export OMPI_MCA_orte_tmpdir_base=\"${TMPDIR:-/tmp}/ddplab-testbed-$ns\"\n"
    << "mkdir -p \"$OMPI_MCA_orte_tmpdir_base\"\n"
    << "exec ip netns exec \"$ns\" sh -c \"$*\"\n";
  return o.str();
}

std::string hostfile_text(const State& s) {
  std::string out;
  for (const auto& n : s.nodes) out += n.ip + " slots=1\n";
  return out;
}

std::vector<std::string> mpirun_args(const State& s) {
  return {"--hostfile", s.hostfile, "--mca", "plm_rsh_agent", s.agent, "--mca", "plm_rsh_no_tree_spawn",
          "1",  // every daemon starts from the root namespace
          // Daemons stay attached to their agent instead of daemonizing: one that dies is then noticed and
          // reported by mpirun (a detached daemon that failed in a namespace left mpirun waiting forever).
          "--mca", "orte_leave_session_attached", "1", "--mca", "oob_tcp_if_include", s.subnet, "--mca", "pml",
          "ob1",                       // not UCX: all traffic goes through the TCP BTL below
          "--mca", "btl", "tcp,self",  // no shared memory: ranks only talk over the shaped veths
          "--mca", "btl_tcp_if_include", s.subnet};
}

nlohmann::json run_tag(const State& s) {
  nlohmann::json j = {
      {"hosts", s.hosts}, {"rate", s.rate()}, {"rate_bps", s.rate_bps}, {"subnet", s.subnet}, {"shaper", "tbf"}};
  if (!s.delay.empty()) j["delay"] = s.delay;
  return j;
}

std::vector<std::string> tbf_args(std::uint64_t rate_bps) {
  const std::uint64_t burst = std::max<std::uint64_t>(65536, rate_bps / 8 / 1000);
  return {"tbf", "rate", std::to_string(rate_bps) + "bit", "burst", std::to_string(burst), "latency", "20ms"};
}

void tag_runs(const std::string& db, std::int64_t after_id, const std::string& launch_id, const State& s) {
  if (access(db.c_str(), F_OK) != 0) return;  // the job failed before storing anything
  Store store(db);
  for (const auto& r : launch_runs(store, after_id, launch_id)) {
    nlohmann::json cfg = nlohmann::json::parse(r.info.config_json, nullptr, false);
    if (cfg.is_discarded() || !cfg.is_object()) cfg = nlohmann::json::object();
    cfg["testbed"] = run_tag(s);
    store.set_run_config(r.id, cfg.dump());
  }
}

}  // namespace ddplab::testbed
