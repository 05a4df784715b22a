// See process_identity.hpp.
#include "ddplab/core/process_identity.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace ddplab {
namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string hostname() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

std::string link_target(const std::string& path) {
  char buf[256] = {};
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// Field 3 (state) and field 22 (start time) of /proc/PID/stat. The command name (field 2) is in parentheses
// and may itself hold spaces and parentheses, so fields are counted after its last ')'.
struct Stat {
  bool found = false;
  char state = '?';
  std::int64_t start_ticks = 0;
};

Stat read_stat(std::int64_t pid) {
  Stat st;
  const std::string text = first_line("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) return st;
  std::istringstream rest(text.substr(paren + 1));
  std::string field;
  rest >> st.state;  // field 3
  for (int f = 4; f < 22 && rest >> field; ++f) {
  }
  if (!(rest >> st.start_ticks)) return st;
  st.found = true;
  return st;
}

}  // namespace

ProcessIdentity ProcessIdentity::current() {
  static std::mutex mu;
  static ProcessIdentity cached;
  std::lock_guard<std::mutex> lock(mu);
  if (cached.pid == ::getpid()) return cached;
  ProcessIdentity p;
  p.host = hostname();
  p.machine_id = first_line("/etc/machine-id");
  if (p.machine_id.empty()) p.machine_id = first_line("/var/lib/dbus/machine-id");  // empty: reboots go unseen
  p.boot_id = first_line("/proc/sys/kernel/random/boot_id");
  p.pid_ns = link_target("/proc/self/ns/pid");
  p.pid = ::getpid();
  p.start_ticks = read_stat(p.pid).start_ticks;
  cached = p;
  return p;
}

std::string ProcessIdentity::to_json() const {
  return nlohmann::json{{"host", host}, {"machine_id", machine_id},  {"boot_id", boot_id}, {"pid_ns", pid_ns},
                        {"pid", pid},   {"start_ticks", start_ticks}}
      .dump();
}

ProcessIdentity ProcessIdentity::from_json(const std::string& text) {
  ProcessIdentity p;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return p;
  try {
    p.host = j.value("host", "");
    p.machine_id = j.value("machine_id", "");
    p.boot_id = j.value("boot_id", "");
    p.pid_ns = j.value("pid_ns", "");
    p.pid = j.value("pid", std::int64_t{0});
    p.start_ticks = j.value("start_ticks", std::int64_t{0});
  } catch (const nlohmann::json::exception&) {
    return {};  // a field of the wrong type: nothing that can be checked
  }
  return p;
}

Liveness liveness(const ProcessIdentity& p) {
  if (p.pid <= 0 || p.boot_id.empty()) return Liveness::Unknown;
  const ProcessIdentity here = ProcessIdentity::current();
  if (p.boot_id != here.boot_id)
    return !p.machine_id.empty() && p.machine_id == here.machine_id ? Liveness::Gone : Liveness::Unknown;
  if (p.pid_ns != here.pid_ns) return Liveness::Unknown;
  const Stat st = read_stat(p.pid);
  if (!st.found) {
    // Not in /proc: ended, or hidden from this user (hidepid), which kill(pid, 0) tells apart.
    if (::kill(static_cast<pid_t>(p.pid), 0) == 0 || errno == EPERM) return Liveness::Unknown;
    return Liveness::Gone;
  }
  if (st.start_ticks != p.start_ticks || st.state == 'Z' || st.state == 'X') return Liveness::Gone;
  return Liveness::Alive;
}

}  // namespace ddplab
