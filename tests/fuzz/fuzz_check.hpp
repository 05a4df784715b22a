// What every harness asserts: a reader given any bytes either returns or throws its documented error type
// with a message that names the file it read. Anything else (another exception, a message
// that does not say which file, a sanitizer report, a hang) is a finding: report() prints it and aborts,
// which libFuzzer records as a crash and the replay driver as a failed test.
#pragma once
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <typeinfo>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace ddplab::fuzz {

[[noreturn]] inline void report(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

// Runs f; accepts a return or an Error whose message names `path`.
template <class Error, class F>
void expect_clear_error(const std::string& path, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (std::string_view(e.what()).find(path) == std::string_view::npos)
      report(std::string("error without the file's name: ") + e.what());
  } catch (const std::exception& e) {
    report(std::string("undocumented exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    report("a non-standard exception");
  }
}

// A folder of this process's own for readers that take a path, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ddplab-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) report("mkdtemp " + tmpl + " failed");
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

// Writes bytes to `name` in scratch_dir() and returns its path.
inline std::string write_scratch(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f) report("cannot write " + path);
  return path;
}

}  // namespace ddplab::fuzz
