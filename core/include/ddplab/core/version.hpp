#pragma once
#include <string>
namespace ddplab {
const char* version();   // "0.1.0"
const char* build_id();  // the git commit the build was configured from ("unknown" outside a checkout)
int usable_cores();      // cores this process may run on (its CPU affinity)
// hostname, cpu model, cores (usable_cores), kernel, build, launch id, as a JSON object text
std::string host_info_json();
}  // namespace ddplab
