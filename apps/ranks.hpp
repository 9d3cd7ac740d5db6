// The run setting `devices` of the apps that run on several ranks (`soac run APP --set devices=...`):
// ranks in this process (all, or a list such as 0,1; the host backend simulates that many) or,
// under mpirun, one rank per process (mpi), where each process reads only its part of the input
// and rank 0 writes the result.
#pragma once

#include <memory>
#include <string>

#include "apps/app.hpp"
#include "core/multi/mpi_world.hpp"
#include "core/multi/multi_context.hpp"

namespace soac::apps {

inline setting devices_setting(const std::string& how) {
  return {"devices", "",
          "several ranks: all or a list such as 0,1 (GPUs of this process; the host backend simulates that many ranks), or mpi "
          "(under mpirun: one rank per process, each reading only its part of the input, rank 0 writing the result); " +
              how};
}

// The ranks the setting names; null without it (one context, as always).
inline std::unique_ptr<multi_context> ranks_of_setting(backend which, const std::string& devices) {
  if (devices.empty()) return nullptr;
  if (devices == "mpi") return std::make_unique<multi_context>(which, mpi_world::get());
  return std::make_unique<multi_context>(which, parse_devices(devices, which, "--set devices"));
}

// Whether this process writes the result: every process without MPI ranks, rank 0's with them.
inline bool writes_result(const multi_context* ranks) { return !ranks || !ranks->distributed() || ranks->is_local(0); }

}  // namespace soac::apps
