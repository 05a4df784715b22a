// What a job's ranks share: how many sit on rank 0's host, against the cores there. Stored with every
// measured run and calibration (host_info), so that compute measured on oversubscribed cores is recognised
// later (the simulator refuses it as a compute source by default; validate names it as a likely cause).
#pragma once
#include <string>

#include "ddplab/runtime/communicator.hpp"

namespace ddplab {

// Collective: every rank calls it. Rank 0 gets host_info_json() plus "ranks" (world size), "hosts"
// (distinct host names), "ranks_on_host" (ranks on rank 0's host) and "oversubscribed" (ranks_on_host >
// cores); the other ranks get "". Ranks of the emulated test bed share one host name and one machine's
// cores, so they count as one host, as they are.
std::string job_host_info(Communicator& comm);

}  // namespace ddplab
