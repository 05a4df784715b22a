#pragma once
#include <string>
namespace ddplab {
const char* version();     // "0.1.0"
std::string host_info_json();  // hostname, cpu model, cores, kernel, as a JSON object text
}  // namespace ddplab
