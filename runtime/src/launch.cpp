#include "ddplab/runtime/launch.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/job_notes.hpp"
#include <nlohmann/json.hpp>

extern char** environ;

namespace ddplab {

bool under_mpi_launcher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         (std::getenv("SLURM_PROCID") != nullptr && std::getenv("PMI_RANK") != nullptr);
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw RunFault(std::string("cannot resolve /proc/self/exe: ") + std::strerror(errno));
  return std::string(buf, static_cast<std::size_t>(n));
}

LaunchPlan plan_launch(int np, const std::vector<std::string>& self_args,
                       const std::vector<std::string>& mpirun_extra) {
  LaunchPlan p;
  const char* mpirun = std::getenv("DDPLAB_MPIRUN");
  p.argv = {mpirun ? mpirun : "mpirun", "-np", std::to_string(np)};
  if (geteuid() == 0) p.argv.push_back("--allow-run-as-root");
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (static_cast<unsigned>(np) > cores) {
    p.argv.push_back("--oversubscribe");
    p.oversubscribed = true;
  }
  // Ranks share the cores: pinning each to one core would stack oversubscribed ranks; let the OS spread them.
  // No rank reads standard input, and mpirun runs in a background process group (execute): it must never
  // read the terminal.
  for (const char* arg :
       {"--bind-to", "none", "--stdin", "none", "-x", "OPENBLAS_NUM_THREADS=1", "-x", "OMP_NUM_THREADS=1"})
    p.argv.push_back(arg);
  // Each rank runs a compute thread and a communication thread. When they outnumber the cores, Open MPI's
  // busy polling in a waiting collective steals the core the compute thread needs: make it yield instead.
  if (2u * static_cast<unsigned>(np) > cores)
    for (const char* arg : {"--mca", "mpi_yield_when_idle", "1"}) p.argv.push_back(arg);
  p.argv.insert(p.argv.end(), mpirun_extra.begin(), mpirun_extra.end());
  for (const char* arg : {"-x", kJobDirVar}) p.argv.push_back(arg);  // execute sets it: job_notes.hpp
  p.argv.push_back(self_executable());
  p.argv.insert(p.argv.end(), self_args.begin(), self_args.end());
  return p;
}

void retry_unstarted(LaunchPlan& plan, int attempts) { plan.attempts = std::max(plan.attempts, attempts); }

void mark_rank_started() { write_job_note(rank_note("started"), ""); }

namespace {
volatile std::sig_atomic_t g_signal = 0;   // the first SIGINT / SIGTERM / SIGHUP
volatile std::sig_atomic_t g_signals = 0;  // how many arrived
void on_stop_signal(int sig) {
  if (!g_signal) g_signal = sig;
  g_signals = g_signals + 1;
}
volatile std::sig_atomic_t g_usr1s = 0;  // SIGUSR1s to pass on: the ranks dump their flight recorders
void on_usr1(int) { g_usr1s = g_usr1s + 1; }

// Every process below `pid` (children first listed, then theirs), from /proc: Open MPI puts each local rank
// in a process group of its own, so killing mpirun's group does not reach them.
std::vector<pid_t> descendants(pid_t pid) {
  std::vector<pid_t> out{pid};
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::error_code ec;
    try {  // a process may end while it is walked
      for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(out[i]) + "/task", ec)) {
        std::FILE* f = std::fopen((task.path() / "children").c_str(), "r");
        if (!f) continue;
        long child = 0;
        while (std::fscanf(f, "%ld", &child) == 1) out.push_back(static_cast<pid_t>(child));
        std::fclose(f);
      }
    } catch (const std::filesystem::filesystem_error&) {
    }
  }
  out.erase(out.begin());
  return out;
}

// SIGKILL to mpirun and everything it started on this machine.
void kill_job(pid_t pid) {
  const std::vector<pid_t> below = descendants(pid);
  kill(pid, SIGKILL);
  for (pid_t p : below) kill(p, SIGKILL);
}

// mpirun's spawn attributes: a process group of its own (Open MPI gives each local rank its own too), so that
// a terminal's Ctrl-C reaches the launcher only, which decides what the job gets; default dispositions and
// nothing blocked.
class SpawnAttributes {
 public:
  SpawnAttributes() {
    posix_spawnattr_init(&attr_);
    sigset_t stops, none;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    sigemptyset(&none);
    posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr_, 0);
    posix_spawnattr_setsigdefault(&attr_, &stops);
    posix_spawnattr_setsigmask(&attr_, &none);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  const posix_spawnattr_t* get() const { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

// The launcher's handlers while a job runs: the stop signals (SIGHUP too: a closed terminal, which mpirun in
// its own group would not get) and SIGUSR1; the previous ones are back when it goes out of scope.
class JobSignals {
 public:
  JobSignals() {
    g_signal = 0;
    g_signals = 0;
    g_usr1s = 0;
    struct sigaction act {};
    act.sa_handler = on_stop_signal;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESTART;
    sigaction(SIGINT, &act, &old_int_);
    sigaction(SIGTERM, &act, &old_term_);
    sigaction(SIGHUP, &act, &old_hup_);
    struct sigaction usr1 {};
    usr1.sa_handler = on_usr1;
    sigemptyset(&usr1.sa_mask);
    usr1.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &usr1, &old_usr1_);
  }
  ~JobSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGHUP, &old_hup_, nullptr);
    sigaction(SIGUSR1, &old_usr1_, nullptr);
  }
  JobSignals(const JobSignals&) = delete;
  JobSignals& operator=(const JobSignals&) = delete;

 private:
  struct sigaction old_int_ {
  }, old_term_{}, old_hup_{}, old_usr1_{};
};

// Forwards what the launcher receives to the job until mpirun exits, and returns its wait status. The first
// stop signal asks the ranks to stop after their step (graceful_stop_s > 0) or passes the signal to mpirun;
// a second one, or a job that outlives its grace, is killed.
int supervise(pid_t pid, const LaunchPlan& plan, const std::string& job_dir) {
  using Clock = std::chrono::steady_clock;
  auto after = [](double s) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  int status = 0;
  int forwarded = 0;  // signals handled so far
  int usr1_forwarded = 0;
  Clock::time_point deadline{};
  Clock::time_point graceful_deadline{};
  bool graceful = false;  // the ranks were asked to stop and mpirun was not signalled yet
  bool killed = false;
  std::vector<pid_t> started;  // what mpirun had started here when the first signal came
  for (;;) {
    // Polled, not blocking: a signal landing just before a blocking waitpid would go unforwarded.
    const pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) throw RunFault(std::string("waitpid: ") + std::strerror(errno));
    for (int usr1s = g_usr1s; usr1s > usr1_forwarded; ++usr1_forwarded) kill(pid, SIGUSR1);  // mpirun passes it on
    const int seen = g_signals;
    if (seen > forwarded) {
      if (forwarded == 0) {
        started = descendants(pid);
        if (plan.graceful_stop_s > 0) {
          // The ranks stop together after a step, storing every row (and a checkpoint); mpirun is signalled
          // only if they have not within graceful_stop_s.
          std::fprintf(stderr, "ddplab: %s: stopping the job after the current step (again to kill it at once)\n",
                       strsignal(g_signal));
          request_stop(job_dir);
          graceful = true;
          graceful_deadline = after(plan.graceful_stop_s);
        } else {
          std::fprintf(stderr, "ddplab: %s: stopping the job (again to kill it at once)\n", strsignal(g_signal));
          kill(pid, g_signal);  // mpirun stops its ranks
          deadline = after(kStopGraceS);
        }
      } else if (!killed) {
        std::fprintf(stderr, "ddplab: killing the job\n");
        kill_job(pid), killed = true;
      }
      forwarded = seen;
    }
    if (graceful && !killed && Clock::now() > graceful_deadline) {
      std::fprintf(stderr, "ddplab: the ranks did not stop within %.0f s: stopping mpirun\n", plan.graceful_stop_s);
      kill(pid, g_signal);
      graceful = false;
      deadline = after(kStopGraceS);
    }
    if (forwarded && !graceful && !killed && Clock::now() > deadline) {
      std::fprintf(stderr, "ddplab: the job did not stop within %.0f s: killing it\n", kStopGraceS);
      kill_job(pid), killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t p : started)  // a rank mpirun did not take down with it
    if (kill(p, 0) == 0) kill(p, SIGKILL);
  return status;
}

// One launch of the plan, with `envp` as its environment and `job_dir` as its job folder.
JobEnd run_once(const LaunchPlan& plan, char* const* envp, const std::string& job_dir) {
  std::vector<char*> argv;
  for (const auto& a : plan.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const SpawnAttributes attr;
  const JobSignals signals;
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], nullptr, attr.get(), argv.data(), envp);
  if (rc != 0)
    throw RunFault("cannot start " + plan.argv[0] + ": " + std::strerror(rc) +
                   " (install openmpi-bin, or run scripts/setup.sh)");
  const int status = supervise(pid, plan, job_dir);
  JobEnd end;
  end.signal = g_signal;
  if (WIFEXITED(status))
    end.rc = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    end.rc = 128 + WTERMSIG(status);
  else
    end.rc = 1;
  return end;
}

}  // namespace

JobEnd execute(const LaunchPlan& plan) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/ddplab-job-XXXXXX";
  if (!mkdtemp(dir.data())) throw RunFault(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
  struct RemoveDir {
    const std::string& dir;
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_dir{dir};
  // The ranks' environment: this one, with the job folder.
  const std::string var = std::string(kJobDirVar) + "=" + dir;
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, var.c_str(), std::strlen(kJobDirVar) + 1) != 0) envp.push_back(*e);
  envp.push_back(const_cast<char*>(var.c_str()));
  envp.push_back(nullptr);
  JobEnd end;
  for (int attempt = 1;; ++attempt) {
    end = run_once(plan, envp.data(), dir);
    if (end.rc == 0 || end.signal || attempt >= plan.attempts || !read_job_notes(dir, "started-").empty()) break;
    std::fprintf(stderr,
                 "ddplab: the launch failed before any rank started (mpirun exit %d): trying again (%d of %d)\n",
                 end.rc, attempt + 1, plan.attempts);
  }
  for (const JobNote& n : read_job_notes(dir, "failure-")) end.failures.push_back(n.text);
  for (const JobNote& n : read_job_notes(dir, "flight-")) end.flights.push_back(n.text);
  return end;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\"'$\\") == std::string::npos;
    out += plain ? a : "'" + a + "'";
  }
  return out;
}

std::vector<RunRow> launch_runs(Store& store, std::int64_t after_id, const std::string& launch_id) {
  std::vector<RunRow> out;
  for (auto& r : store.runs()) {
    if (r.id <= after_id) continue;
    const auto j = nlohmann::json::parse(r.info.host_info, nullptr, false);
    if (j.is_object() && j.value("launch_id", std::string()) == launch_id) out.push_back(std::move(r));
  }
  return out;
}

void require_writable_store(const std::string& db) {
  namespace fs = std::filesystem;
  const fs::path path(db);
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  fs::create_directories(dir, ec);  // the store's own open creates them too; a failure shows below
  auto fail = [&](const std::string& what) {
    throw InputError(fmt::format("results store {} is not writable: {}", db, what));
  };
  if (fs::exists(path)) {
    FILE* f = std::fopen(db.c_str(), "r+");
    if (!f) fail(std::strerror(errno));
    std::fclose(f);
  }
  // SQLite writes its -wal and -shm files beside the store.
  std::string probe = (dir / ".ddplab-write-probe-XXXXXX").string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) fail(fmt::format("cannot create files in {} ({})", dir.string(), std::strerror(errno)));
  close(fd);
  unlink(probe.c_str());
}

}  // namespace ddplab
