#include "launch.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace ddplab::cli {

bool under_mpi_launcher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         (std::getenv("SLURM_PROCID") != nullptr && std::getenv("PMI_RANK") != nullptr);
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error(std::string("cannot resolve /proc/self/exe: ") + std::strerror(errno));
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
  for (const char* arg : {"--bind-to", "none", "-x", "OPENBLAS_NUM_THREADS=1", "-x", "OMP_NUM_THREADS=1"})
    p.argv.push_back(arg);
  // Each rank runs a compute thread and a communication thread. When they outnumber the cores, Open MPI's
  // busy polling in a waiting collective steals the core the compute thread needs: make it yield instead.
  if (2u * static_cast<unsigned>(np) > cores)
    for (const char* arg : {"--mca", "mpi_yield_when_idle", "1"}) p.argv.push_back(arg);
  p.argv.insert(p.argv.end(), mpirun_extra.begin(), mpirun_extra.end());
  p.argv.push_back(self_executable());
  p.argv.insert(p.argv.end(), self_args.begin(), self_args.end());
  return p;
}

int execute(const LaunchPlan& plan) {
  std::vector<char*> argv;
  for (const auto& a : plan.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (rc != 0)
    throw std::runtime_error("cannot start " + plan.argv[0] + ": " + std::strerror(rc) +
                             " (install openmpi-bin, or run scripts/setup.sh)");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
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
    throw std::runtime_error(fmt::format("results store {} is not writable: {}", db, what));
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

}  // namespace ddplab::cli
