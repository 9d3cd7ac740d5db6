// Ranks in separate processes: the MPI world this process belongs to (started by mpirun or srun,
// one process per rank). soac builds with MPI where the build finds it (Open MPI from Debian's
// packages; `soac info` says whether this build has it); without it, mpi_world::get() throws.
//
//   soac::mpi_world& w = soac::mpi_world::get();    // MPI_Init on the first call, MPI_Finalize at exit
//   soac::multi_context mc(soac::backend::cuda, w);  // this process: rank w.rank() of w.size()
//
// The byte-level collectives below are what multi_context uses on the host backend; on cuda it
// broadcasts NCCL's unique id with them and reduces over NCCL.
#pragma once

#include <cstddef>
#include <string>

#include "core/multi/multi_context.hpp"

namespace soac {

class mpi_world {
 public:
  // Whether this build has MPI.
  static bool built_with_mpi() noexcept;
  // The world, initialised on the first call (MPI_Init_thread; MPI_Finalize runs at exit).
  // usage_error when this build has no MPI.
  static mpi_world& get();
  // The world if get() has joined it in this process, else null (no MPI call).
  static const mpi_world* joined() noexcept;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  // This process's place among the world's processes on its host (picks its GPU).
  int local_rank() const noexcept { return local_rank_; }
  int local_size() const noexcept { return local_size_; }
  const std::string& host_name() const noexcept { return host_; }

  // In place on every process (all_reduce) or on root alone (reduce); count elements of `type`.
  void all_reduce(void* buffer, std::size_t count, reduce_type type, reduce_op op) const;
  void reduce(void* buffer, std::size_t count, reduce_type type, reduce_op op, int root) const;
  // recv (size() * bytes) receives every process's send (bytes) at rank * bytes.
  void all_gather(const void* send, void* recv, std::size_t bytes) const;
  // On root, recv (size() * bytes) receives every process's send (bytes) at rank * bytes; the
  // others' recv is not touched (may be null). Any size: sent in pieces below MPI's 2 GiB counts.
  void gather(const void* send, void* recv, std::size_t bytes, int root) const;
  void broadcast(void* buffer, std::size_t bytes, int root) const;
  // The largest value over the processes: how they agree on one outcome (an error code).
  int max_over_ranks(int value) const;
  void barrier() const;
  // Ends every process of the world with exit code `code` (MPI_Abort); never returns.
  [[noreturn]] void abort(int code) const;

  mpi_world(const mpi_world&) = delete;
  mpi_world& operator=(const mpi_world&) = delete;

 private:
  mpi_world();
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
};

}  // namespace soac
