#include "ddplab/runtime/job_info.hpp"

#include <unistd.h>

#include <array>
#include <cstring>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/version.hpp"

namespace ddplab {

std::string job_host_info(Communicator& comm) {
  std::array<char, 256> mine{};
  ::gethostname(mine.data(), mine.size() - 1);
  std::vector<std::array<char, 256>> all(comm.rank() == 0 ? static_cast<std::size_t>(comm.size()) : 0);
  comm.gather(mine.data(), mine.size(), all.data(), 0);
  if (comm.rank() != 0) return "";
  std::map<std::string, int> per_host;
  for (const auto& h : all) ++per_host[std::string(h.data(), ::strnlen(h.data(), h.size()))];
  nlohmann::json j = nlohmann::json::parse(host_info_json());
  const int here = per_host[std::string(mine.data(), ::strnlen(mine.data(), mine.size()))];
  j["ranks"] = comm.size();
  j["hosts"] = per_host.size();
  j["ranks_on_host"] = here;
  j["oversubscribed"] = here > j.value("cores", 1);
  return j.dump();
}

}  // namespace ddplab
