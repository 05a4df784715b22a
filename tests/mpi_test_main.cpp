#include <gtest/gtest.h>

#include <cstdlib>

#include "mpi_test_main.hpp"

namespace ddplab {
Communicator* g_comm = nullptr;
}  // namespace ddplab

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto comm = ddplab::make_mpi_communicator(&argc, &argv);
  ddplab::g_comm = comm.get();
  if (comm->rank() != 0 && !std::getenv("DDPLAB_TEST_ALL_RANKS")) {
    // One report is enough; failures on other ranks still fail the job through the exit code (set
    // DDPLAB_TEST_ALL_RANKS to see every rank's report).
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  int ok = rc == 0 ? 1 : 0;
  comm->allreduce_min(&ok, 1);
  return ok ? 0 : 1;
}
