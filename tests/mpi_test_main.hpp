// GoogleTest under mpirun: every rank runs the tests, rank 0 prints, and the job fails when any rank fails.
// Link ddplab_mpi_test_main and use g_comm.
#pragma once
#include "ddplab/runtime/communicator.hpp"

namespace ddplab {
extern Communicator* g_comm;  // the job's communicator, set before the tests run
}  // namespace ddplab
