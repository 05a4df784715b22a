// World size 1 without MPI: every collective of one rank leaves its buffer as it is (an all-gather's
// rank-0 part is already in place), gather copies to the root, and there is no peer to send to.
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/communicator.hpp"

namespace ddplab {
namespace {

class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  void barrier() override {}
  void broadcast(void*, std::size_t, int root) override { check_root(root); }
  void allreduce_sum(float*, std::size_t) override {}
  void allreduce_sum(double*, std::size_t) override {}
  void allreduce_min(int*, std::size_t) override {}
  void allreduce_sum(void*, std::size_t, ElemType) override {}
  void all_gather(void*, std::size_t) override {}
  void reduce_scatter_sum(float*, std::size_t) override {}
  void all_gather_shards(float*, std::size_t) override {}
  void gather(const void* send, std::size_t bytes, void* recv, int root) override {
    check_root(root);
    if (bytes > 0 && recv != send) std::memmove(recv, send, bytes);
  }
  void isend(const void*, std::size_t, int peer, int) override { no_peer(peer); }
  void irecv(void*, std::size_t, int peer, int) override { no_peer(peer); }
  void wait_all() override {}
  std::unique_ptr<Communicator> split(int color) override {
    if (color < 0) return nullptr;
    return std::make_unique<SingleProcessCommunicator>();
  }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

 private:
  static void check_root(int root) {
    if (root != 0) throw InternalError("single-process communicator: root " + std::to_string(root) + " does not exist");
  }
  [[noreturn]] static void no_peer(int peer) {
    throw InternalError("single-process communicator: no rank " + std::to_string(peer) + " to talk to");
  }
};

}  // namespace

std::unique_ptr<Communicator> make_single_process_communicator() {
  return std::make_unique<SingleProcessCommunicator>();
}

}  // namespace ddplab
