// Which process wrote a run, recorded so that another process can tell later whether it is still alive: a run
// left "running" by a writer that is gone (SIGKILL, a crash, power loss) reads as "abandoned".
#pragma once
#include <cstdint>
#include <string>

namespace ddplab {

struct ProcessIdentity {
  std::string host;        // gethostname
  std::string machine_id;  // /etc/machine-id: this installation, whatever its host name
  std::string boot_id;     // /proc/sys/kernel/random/boot_id: this kernel since its last boot
  std::string pid_ns;      // /proc/self/ns/pid, e.g. "pid:[4026531836]": where `pid` means this process
  std::int64_t pid = 0;
  std::int64_t start_ticks = 0;  // /proc/PID/stat start time (clock ticks since boot): tells a reused pid apart

  static ProcessIdentity current();  // read once per process (the pid is checked: a fork reads again)
  std::string to_json() const;
  // Empty or unreadable text (a run stored before schema version 10) gives an identity with pid 0.
  static ProcessIdentity from_json(const std::string& text);
};

enum class Liveness {
  Alive,    // that very process still runs (not a zombie)
  Gone,     // it ended: on this boot of this machine its pid is free, reused or a zombie, or the machine rebooted
  Unknown,  // another machine, another pid namespace, a process this user may not see (hidepid), or nothing
            // recorded: cannot be checked from here
};

// Checked against this process's view of the machine: only a process on the same boot and pid namespace can be
// looked up (/proc, kill(pid, 0)); one on this machine (same machine id) but another boot id ended when the
// machine rebooted. Host names are not trusted to tell machines apart: cloned machines share them.
Liveness liveness(const ProcessIdentity& p);

}  // namespace ddplab
