// make_cuda_ops / cuda_unavailable_reason for ddplab_runtime in a build with CUDA. The CUDA code lives in
// a plugin (libddplab_cuda.so, see runtime/cuda/CMakeLists.txt) that is dlopen'ed only when a user asks
// for backend "cuda", so the CLI (started once per rank) does not load cudart/cuBLAS (~0.5 GB) and runs
// on nodes without them. No CUDA headers here. Where the plugin is looked for, first hit wins:
//   1. $DDPLAB_CUDA_PLUGIN, when set (and nothing else);
//   2. the build tree's plugin (DDPLAB_CUDA_PLUGIN_PATH);
//   3. next to the executable, then ../lib from it;
//   4. the bare file name (LD_LIBRARY_PATH, rpath, ld.so.cache).
// It is never dlclose'd: the Ops it makes point into its code. Programs that need the backend's stream
// (NCCL, gemm bench) link the static ddplab_cuda and call make_cuda_ops(const CudaOpsOptions&) instead.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_plugin.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/ops.hpp"

namespace ddplab {
namespace {

struct Plugin {
  ddplab_cuda_make_ops_fn* make_ops = nullptr;
  ddplab_cuda_unavailable_reason_fn* unavailable_reason = nullptr;
  ddplab_cuda_make_nccl_fn* make_nccl = nullptr;
};

std::vector<std::string> candidates() {
  if (const char* env = std::getenv("DDPLAB_CUDA_PLUGIN"); env && *env) return {env};
  std::vector<std::string> c = {DDPLAB_CUDA_PLUGIN_PATH};
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::string path(exe, static_cast<std::size_t>(n));
    const std::string dir = path.substr(0, path.find_last_of('/') + 1);
    c.push_back(dir + DDPLAB_CUDA_PLUGIN_NAME);
    c.push_back(dir + "../lib/" DDPLAB_CUDA_PLUGIN_NAME);
  }
  c.push_back(DDPLAB_CUDA_PLUGIN_NAME);
  return c;
}

// Loads (or finds already loaded) the plugin; on failure the error names every path tried and why.
Plugin load(std::string* error) {
  std::string tried;
  for (const std::string& path : candidates()) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::string e = dlerror();  // usually "PATH: why"; the path is said once
      if (e.rfind(path + ": ", 0) == 0) e.erase(0, path.size() + 2);
      tried += "; " + path + ": " + e;
      continue;
    }
    auto* abi = reinterpret_cast<ddplab_cuda_plugin_abi_fn*>(dlsym(h, "ddplab_cuda_plugin_abi"));
    Plugin p;
    p.make_ops = reinterpret_cast<ddplab_cuda_make_ops_fn*>(dlsym(h, "ddplab_cuda_make_ops"));
    p.unavailable_reason =
        reinterpret_cast<ddplab_cuda_unavailable_reason_fn*>(dlsym(h, "ddplab_cuda_unavailable_reason"));
    p.make_nccl = reinterpret_cast<ddplab_cuda_make_nccl_fn*>(dlsym(h, "ddplab_cuda_make_nccl"));
    const bool complete = abi && p.make_ops && p.unavailable_reason && p.make_nccl;
    if (complete && abi() == DDPLAB_CUDA_PLUGIN_ABI) return p;
    tried += "; " + path + ": " +
             (!complete ? std::string("not a ddplab CUDA plugin (no ddplab_cuda_* symbols)")
                        : "plugin ABI " + std::to_string(abi()) + ", this program needs " +
                              std::to_string(DDPLAB_CUDA_PLUGIN_ABI) + " (a plugin from another build?)");
    dlclose(h);  // nothing made from it yet
  }
  *error = "backend \"cuda\" is not available: cannot load the CUDA plugin (tried" + tried.substr(1) +
           "); set DDPLAB_CUDA_PLUGIN to the path of " DDPLAB_CUDA_PLUGIN_NAME;
  return {};
}

}  // namespace

std::string cuda_unavailable_reason() {
  std::string error;
  const Plugin p = load(&error);
  if (!p.unavailable_reason) return error;
  char why[1024] = "";
  p.unavailable_reason(why, sizeof why);
  return why;
}

std::unique_ptr<Ops> make_cuda_ops(bool tf32) {
  std::string error;
  const Plugin p = load(&error);
  if (!p.make_ops) throw InputError(error);
  char why[1024] = "";
  Ops* ops = p.make_ops(tf32, -1, why, sizeof why);
  if (!ops) throw InputError(std::string("backend \"cuda\" is not available: ") + why);
  return std::unique_ptr<Ops>(ops);
}

std::unique_ptr<Communicator> open_nccl_communicator(Communicator& bootstrap, Ops& cuda_ops, double timeout_s) {
  std::string error;
  const Plugin p = load(&error);
  if (!p.make_nccl) throw InputError(error);
  char why[1024] = "";
  Communicator* c = p.make_nccl(&bootstrap, &cuda_ops, timeout_s, why, sizeof why);
  if (!c)
    throw RunFault(std::string("rank ") + std::to_string(bootstrap.rank()) + ": NCCL: " + why,
                   {.rank = bootstrap.rank(), .op = "NCCL init"});
  return std::unique_ptr<Communicator>(c);
}

}  // namespace ddplab
