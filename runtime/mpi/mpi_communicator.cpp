// Communicator over Open MPI. MPI_THREAD_MULTIPLE is requested so a communication thread can drive
// point-to-point operations while the compute thread runs (overlap policies).
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <unistd.h>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/strategies/half.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RunFault(std::string(what) + " failed: " + std::string(msg, static_cast<std::size_t>(len)), {.op = what});
}
#define MPI_CHECK(call) check((call), #call)

int as_int(std::size_t n) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::length_error("message of " + std::to_string(n) + " elements exceeds MPI's int count");
  return static_cast<int>(n);
}

// MPI has no half-precision sum: user-defined reductions that add in float and round back, like NCCL's.
void sum_f16(void* in, void* inout, int* len, MPI_Datatype*) {
  sum_into(ElemType::F16, inout, in, static_cast<std::size_t>(*len));
}
void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  sum_into(ElemType::BF16, inout, in, static_cast<std::size_t>(*len));
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(int* argc, char*** argv) : owns_mpi_(true) {
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    open(MPI_COMM_WORLD);
  }
  // A split of the world (split()): MPI stays initialised while the world communicator lives.
  explicit MpiCommunicator(MPI_Comm comm) : owns_mpi_(false) { open(comm); }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Op_free(&op_f16_);
      MPI_Op_free(&op_bf16_);
      if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
      if (owns_mpi_) MPI_Finalize();
    }
  }
  std::unique_ptr<Communicator> split(int color) override {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split(comm_, color >= 0 ? color : MPI_UNDEFINED, rank_, &sub));
    if (sub == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiCommunicator>(sub);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  void barrier() override { MPI_CHECK(MPI_Barrier(comm_)); }
  void broadcast(void* data, std::size_t bytes, int root) override {
    MPI_CHECK(MPI_Bcast(data, as_int(bytes), MPI_BYTE, root, comm_));
  }
  void allreduce_sum(float* data, std::size_t count) override {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, as_int(count), MPI_FLOAT, MPI_SUM, comm_));
  }
  void allreduce_sum(double* data, std::size_t count) override {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, as_int(count), MPI_DOUBLE, MPI_SUM, comm_));
  }
  void allreduce_min(int* data, std::size_t count) override {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, as_int(count), MPI_INT, MPI_MIN, comm_));
  }
  void allreduce_sum(void* data, std::size_t count, ElemType type) override {
    switch (type) {
      case ElemType::F32:
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, as_int(count), MPI_FLOAT, MPI_SUM, comm_));
        return;
      case ElemType::F16:
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, as_int(count), MPI_UINT16_T, op_f16_, comm_));
        return;
      case ElemType::BF16:
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, as_int(count), MPI_UINT16_T, op_bf16_, comm_));
        return;
      case ElemType::IndexValue:
        break;
    }
    throw InternalError(std::string("allreduce of ") + elem_name(type) + " is not a sum");
  }
  void all_gather(void* data, std::size_t bytes_per_rank) override {
    MPI_CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, data, as_int(bytes_per_rank), MPI_BYTE, comm_));
  }
  void reduce_scatter_sum(float* data, std::size_t count) override {
    std::vector<int> counts(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) counts[static_cast<std::size_t>(r)] = as_int(chunk_of(count, size_, r).count);
    // MPI delivers the shard at the start of the receive buffer; move it to its place in ours.
    const Chunk mine = chunk_of(count, size_, rank_);
    std::vector<float> shard(mine.count);
    MPI_CHECK(MPI_Reduce_scatter(data, shard.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm_));
    std::copy(shard.begin(), shard.end(), data + mine.offset);
  }
  void all_gather_shards(float* data, std::size_t count) override {
    std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      const Chunk c = chunk_of(count, size_, r);
      counts[static_cast<std::size_t>(r)] = as_int(c.count);
      displs[static_cast<std::size_t>(r)] = as_int(c.offset);
    }
    MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, data, counts.data(), displs.data(), MPI_FLOAT, comm_));
  }
  void gather(const void* send, std::size_t bytes, void* recv, int root) override {
    MPI_CHECK(MPI_Gather(send, as_int(bytes), MPI_BYTE, recv, as_int(bytes), MPI_BYTE, root, comm_));
  }
  // Messages to a peer reached over TCP go in pieces of at most piece_ bytes (both sides cut them alike,
  // and MPI keeps the order of messages with one source, tag and communicator). Over Open MPI's TCP
  // transport a message above its eager limit (64 KiB with the header) waits for the receiver's go-ahead,
  // which queues behind the receiver's own outgoing data on the same connection: the two directions of a
  // pairwise exchange then take turns, and halving-doubling, the trees and `direct` ran at half the ring's
  // bandwidth on the test bed (docs/testbed.md). Eager-sized pieces flow both ways at once. Over
  // shared memory pieces would only cost (large messages there go in one copy), so they are not cut. A
  // zero-byte message is still one message.
  void isend(const void* data, std::size_t bytes, int peer, int tag) override {
    const auto* p = static_cast<const unsigned char*>(data);
    in_pieces(bytes, peer, true, [&](std::size_t off, std::size_t n, MPI_Request* req) {
      MPI_CHECK(MPI_Isend(p + off, as_int(n), MPI_BYTE, peer, tag, comm_, req));
    });
  }
  void irecv(void* data, std::size_t bytes, int peer, int tag) override {
    auto* p = static_cast<unsigned char*>(data);
    in_pieces(bytes, peer, false, [&](std::size_t off, std::size_t n, MPI_Request* req) {
      MPI_CHECK(MPI_Irecv(p + off, as_int(n), MPI_BYTE, peer, tag, comm_, req));
    });
  }
  void wait_all() override {
    if (requests_.empty()) return;
    const int rc = MPI_Waitall(as_int(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
    is_send_.clear();
    MPI_CHECK(rc);
  }
  void wait_receives() override {
    std::vector<MPI_Request> recvs, sends;
    std::vector<char> kinds;
    for (std::size_t i = 0; i < requests_.size(); ++i)
      if (is_send_[i])
        sends.push_back(requests_[i]), kinds.push_back(1);
      else
        recvs.push_back(requests_[i]);
    requests_ = std::move(sends);
    is_send_ = std::move(kinds);
    if (!recvs.empty()) MPI_CHECK(MPI_Waitall(as_int(recvs.size()), recvs.data(), MPI_STATUSES_IGNORE));
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);  // the whole job, from a split too
    std::_Exit(code);
  }

 private:
  // Posts a message to or from `peer` as one request per piece: post(offset, bytes, request).
  template <class Post>
  void in_pieces(std::size_t bytes, int peer, bool send, Post post) {
    const std::size_t piece = pieces_to_[static_cast<std::size_t>(peer)] ? piece_ : 0;
    std::size_t off = 0;
    do {
      const std::size_t n = piece > 0 ? std::min(piece, bytes - off) : bytes;
      requests_.emplace_back();
      is_send_.push_back(send ? 1 : 0);
      post(off, n, &requests_.back());
      off += n;
    } while (off < bytes);
  }

  void open(MPI_Comm comm) {
    comm_ = comm;
    // Errors come back as codes so we can name the rank and the operation before aborting.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    // The node's device of this process, whatever communicator it is in.
    local_rank_ = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("SLURM_LOCALID", 0));
    MPI_Op_create(&sum_f16, 1, &op_f16_);
    MPI_Op_create(&sum_bf16, 1, &op_bf16_);
    // Which peers are reached over TCP: those on another host, or all of them when Open MPI's byte
    // transports leave shared memory out (the emulated test bed runs `--mca btl tcp,self`). UCX is not TCP.
    constexpr int kLen = 256;
    std::vector<char> hosts(static_cast<std::size_t>(kLen) * static_cast<std::size_t>(size_), 0);
    char mine[kLen] = {};
    gethostname(mine, kLen - 1);
    MPI_CHECK(MPI_Allgather(mine, kLen, MPI_CHAR, hosts.data(), kLen, MPI_CHAR, comm_));
    const char* btl = std::getenv("OMPI_MCA_btl");
    const char* pml = std::getenv("OMPI_MCA_pml");
    const bool no_shared_memory = btl && !std::strstr(btl, "vader") && !std::strstr(btl, "sm");
    const bool ucx = pml && std::strstr(pml, "ucx");
    pieces_to_.assign(static_cast<std::size_t>(size_), 0);
    for (int r = 0; r < size_; ++r) {
      const bool other_host = std::strncmp(hosts.data() + static_cast<std::size_t>(r) * kLen, mine, kLen) != 0;
      pieces_to_[static_cast<std::size_t>(r)] = !ucx && (no_shared_memory || other_host);
    }
  }

  bool owns_mpi_;
  MPI_Comm comm_ = MPI_COMM_WORLD;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::vector<MPI_Request> requests_;
  std::vector<char> is_send_;  // by request: a send (wait_receives leaves it posted)
  // Point-to-point piece size to peers reached over TCP (isend): DDPLAB_MPI_PIECE_BYTES, 0 = whole messages;
  // default 32 KiB, under Open MPI's TCP eager limit with any header.
  std::size_t piece_ = static_cast<std::size_t>(std::max(0, env_int("DDPLAB_MPI_PIECE_BYTES", 32 * 1024)));
  std::vector<char> pieces_to_;  // by peer rank: cut messages to it into pieces
  MPI_Op op_f16_ = MPI_OP_NULL, op_bf16_ = MPI_OP_NULL;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(int* argc, char*** argv) {
  return std::make_unique<MpiCommunicator>(argc, argv);
}

}  // namespace ddplab
