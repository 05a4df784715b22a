// The nccl-tests log importer (`ddplab import nccl-tests`): any text gives a log or an NcclTestsError
// naming the file.
#include <string>

#include "ddplab/core/nccl_tests.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = "fuzz.log";
  const std::string text(reinterpret_cast<const char*>(data), size);
  ddplab::fuzz::expect_clear_error<ddplab::NcclTestsError>(path, [&] {
    const ddplab::NcclTestsLog log = ddplab::parse_nccl_tests(text, path);
    if (log.ranks < 1 || log.rows.empty()) ddplab::fuzz::report("a log accepted without ranks or rows");
  });
  return 0;
}
