// make_ops("cuda") dlopens the CUDA plugin (runtime/cuda/cuda_loader.cpp); device-free, label unit.
// Its failures must say what was tried, and with this build's plugin the answer must come from inside
// the plugin (the device check), which proves it loaded.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "ddplab/runtime/ops.hpp"

namespace ddplab {
namespace {

// Sets DDPLAB_CUDA_PLUGIN (or unsets it for nullptr) for one scope.
class PluginEnv {
 public:
  explicit PluginEnv(const char* value) {
    if (const char* old = std::getenv(kName)) old_ = old;
    value ? setenv(kName, value, 1) : unsetenv(kName);
  }
  ~PluginEnv() { old_ ? setenv(kName, old_->c_str(), 1) : unsetenv(kName); }

 private:
  static constexpr const char* kName = "DDPLAB_CUDA_PLUGIN";
  std::optional<std::string> old_;
};

// The runtime_error of make_ops("cuda"), or "" when it made a backend.
std::string make_error(std::string* name = nullptr) {
  try {
#ifdef DDPLAB_GPU_ONLY  // no make_ops there (it needs OpenBLAS); make_ops("cuda") only forwards to this
    auto ops = make_cuda_ops();
#else
    auto ops = make_ops("cuda");
#endif
    if (name) *name = ops->name();
    return "";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

#ifdef DDPLAB_TEST_CUDA_PLUGIN
TEST(CudaLoader, MissingPluginNamesThePath) {
  PluginEnv env("/nonexistent.so");
  const std::string e = make_error();
  EXPECT_NE(e.find("backend \"cuda\" is not available"), std::string::npos) << e;
  EXPECT_NE(e.find("/nonexistent.so"), std::string::npos) << e;
  EXPECT_NE(e.find("DDPLAB_CUDA_PLUGIN"), std::string::npos) << e;
  EXPECT_NE(cuda_unavailable_reason().find("/nonexistent.so"), std::string::npos);
}

TEST(CudaLoader, OtherLibraryIsNotAPlugin) {
  PluginEnv env("libz.so.1");  // loads fine, but has no ddplab_cuda_* symbols
  const std::string e = make_error();
  EXPECT_NE(e.find("libz.so.1: not a ddplab CUDA plugin"), std::string::npos) << e;
}

// This build's plugin, found without help (build-tree path) and through the variable.
TEST(CudaLoader, RealPluginAnswersFromInside) {
  for (const char* value : {static_cast<const char*>(nullptr), DDPLAB_TEST_CUDA_PLUGIN}) {
    PluginEnv env(value);
    const std::string why = cuda_unavailable_reason(), label = value ? value : "(build tree)";
    std::string name;
    const std::string e = make_error(&name);
    if (why.empty()) {
      EXPECT_EQ(e, "") << label;
      EXPECT_EQ(name, "cuda") << label;
    } else {
      EXPECT_NE(why.find("no CUDA device visible"), std::string::npos) << label << ": " << why;
      EXPECT_NE(e.find(why), std::string::npos) << label << ": " << e;
      EXPECT_EQ(e.find("cannot load"), std::string::npos) << label << ": " << e;
    }
  }
}
#else
TEST(CudaLoader, BuiltWithoutCuda) {
  PluginEnv env("/nonexistent.so");
  EXPECT_NE(make_error().find("built without CUDA"), std::string::npos);
  EXPECT_EQ(cuda_unavailable_reason(), "built without CUDA");
}
#endif

}  // namespace
}  // namespace ddplab
