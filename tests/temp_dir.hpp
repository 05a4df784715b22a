// A fresh folder under $TMPDIR (or /tmp) for one test, removed with everything in it. Shared by every test
// that writes files (stores, scenarios, model tables, test bed state).
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace ddplab::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "ddplab-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + " failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The path of `name` inside the folder ("" gives the folder itself).
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `text` to `name` inside the folder and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = file(name);
    std::ofstream out(p);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + p);
    return p;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace ddplab::test
