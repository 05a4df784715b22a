// See job_notes.hpp.
#include "ddplab/core/job_notes.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdlib.h>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ddplab {

void write_job_note(const std::string& name, const std::string& text) {
  const char* dir = std::getenv(kJobDirVar);
  if (!dir || !*dir) return;
  const std::string path = std::string(dir) + "/" + name;
  std::string tmp = path + ".tmpXXXXXX";  // one of its own for every writer, threads of one process too
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return;
  bool ok = true;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

std::vector<JobNote> read_job_notes(const std::string& dir, const std::string& prefix) {
  std::vector<JobNote> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.find(".tmp") != std::string::npos) continue;
    std::ifstream in(e.path());
    std::ostringstream text;
    text << in.rdbuf();
    out.push_back({name, text.str()});
  }
  // Shorter names first: rank 2 before rank 10.
  std::sort(out.begin(), out.end(), [](const JobNote& a, const JobNote& b) {
    return a.name.size() != b.name.size() ? a.name.size() < b.name.size() : a.name < b.name;
  });
  return out;
}

namespace {
constexpr const char* kStopNote = "stop-request";
}

void request_stop(const std::string& dir) { std::ofstream(std::filesystem::path(dir) / kStopNote) << "stop\n"; }

bool stop_requested() {
  const char* dir = std::getenv(kJobDirVar);
  if (!dir || !*dir) return false;
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(dir) / kStopNote, ec);
}

std::string rank_note(const std::string& kind) {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = std::getenv("PMI_RANK");
  return kind + "-rank-" + (rank ? std::string(rank) : std::to_string(::getpid()));
}

}  // namespace ddplab
