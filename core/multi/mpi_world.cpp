#include "core/multi/mpi_world.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/error.hpp"

#if SOAC_HAVE_MPI
// The C API alone: without these, Open MPI's and MPICH's mpi.h pull in the C++ bindings library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace soac {

namespace {
const mpi_world* joined_world = nullptr;
}

const mpi_world* mpi_world::joined() noexcept { return joined_world; }

#if SOAC_HAVE_MPI

namespace {

// Every MPI call goes through this: MPI's error text in a soac::usage_error (MPI_ERRORS_RETURN
// is set on the world, so a failure returns here instead of aborting silently).
void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw usage_error(std::string("MPI: ") + call + " failed: " + std::string(text, std::size_t(length)));
}
#define SOAC_MPI_CHECK(call) check_mpi((call), #call)

MPI_Datatype mpi_type(reduce_type t) {
  switch (t) {
    case reduce_type::i8: return MPI_INT8_T;
    case reduce_type::u8: return MPI_UINT8_T;
    case reduce_type::i32: return MPI_INT32_T;
    case reduce_type::u32: return MPI_UINT32_T;
    case reduce_type::i64: return MPI_INT64_T;
    case reduce_type::u64: return MPI_UINT64_T;
    case reduce_type::f32: return MPI_FLOAT;
    case reduce_type::f64: return MPI_DOUBLE;
  }
  throw usage_error("mpi_world: unknown reduce_type");
}

std::size_t type_bytes(reduce_type t) {
  switch (t) {
    case reduce_type::i8:
    case reduce_type::u8: return 1;
    case reduce_type::i32:
    case reduce_type::u32:
    case reduce_type::f32: return 4;
    default: return 8;
  }
}

MPI_Op mpi_op(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return MPI_SUM;
    case reduce_op::min: return MPI_MIN;
    case reduce_op::max: return MPI_MAX;
  }
  throw usage_error("mpi_world: unknown reduce_op");
}

// MPI counts are ints: large transfers go in pieces of at most this many elements.
constexpr std::size_t max_piece = std::size_t{1} << 30;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

bool mpi_world::built_with_mpi() noexcept { return true; }

mpi_world::mpi_world() {
  int initialized = 0;
  SOAC_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    SOAC_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    std::atexit(finalize_at_exit);
  }
  SOAC_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  SOAC_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  SOAC_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  MPI_Comm local;
  SOAC_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  SOAC_MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  SOAC_MPI_CHECK(MPI_Comm_size(local, &local_size_));
  MPI_Comm_free(&local);
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  SOAC_MPI_CHECK(MPI_Get_processor_name(name, &length));
  host_.assign(name, std::size_t(length));
}

mpi_world& mpi_world::get() {
  static mpi_world world;
  joined_world = &world;
  return world;
}

void mpi_world::all_reduce(void* buffer, std::size_t count, reduce_type type, reduce_op op) const {
  for (std::size_t at = 0; at < count; at += max_piece)
    SOAC_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(buffer) + at * type_bytes(type), int(std::min(max_piece, count - at)),
                                 mpi_type(type), mpi_op(op), MPI_COMM_WORLD));
}

void mpi_world::reduce(void* buffer, std::size_t count, reduce_type type, reduce_op op, int root) const {
  for (std::size_t at = 0; at < count; at += max_piece) {
    char* p = static_cast<char*>(buffer) + at * type_bytes(type);
    const int piece = int(std::min(max_piece, count - at));
    SOAC_MPI_CHECK(MPI_Reduce(rank_ == root ? MPI_IN_PLACE : p, rank_ == root ? p : nullptr, piece, mpi_type(type), mpi_op(op),
                              root, MPI_COMM_WORLD));
  }
}

void mpi_world::all_gather(const void* send, void* recv, std::size_t bytes) const {
  if (bytes > std::size_t(std::numeric_limits<int>::max()))
    throw usage_error("mpi_world::all_gather: " + std::to_string(bytes) + " bytes per rank, MPI counts stop below 2 GiB");
  SOAC_MPI_CHECK(MPI_Allgather(send, int(bytes), MPI_BYTE, recv, int(bytes), MPI_BYTE, MPI_COMM_WORLD));
}

void mpi_world::gather(const void* send, void* recv, std::size_t bytes, int root) const {
  constexpr int tag = 0x5347;  // soac gather
  if (rank_ != root) {
    for (std::size_t at = 0; at < bytes; at += max_piece)
      SOAC_MPI_CHECK(MPI_Send(static_cast<const char*>(send) + at, int(std::min(max_piece, bytes - at)), MPI_BYTE, root, tag, MPI_COMM_WORLD));
    return;
  }
  for (int r = 0; r < size_; ++r) {
    char* mine = static_cast<char*>(recv) + std::size_t(r) * bytes;
    if (r == root) {
      if (bytes > 0) std::memcpy(mine, send, bytes);
      continue;
    }
    for (std::size_t at = 0; at < bytes; at += max_piece)
      SOAC_MPI_CHECK(MPI_Recv(mine + at, int(std::min(max_piece, bytes - at)), MPI_BYTE, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  }
}

void mpi_world::broadcast(void* buffer, std::size_t bytes, int root) const {
  for (std::size_t at = 0; at < bytes; at += max_piece)
    SOAC_MPI_CHECK(MPI_Bcast(static_cast<char*>(buffer) + at, int(std::min(max_piece, bytes - at)), MPI_BYTE, root, MPI_COMM_WORLD));
}

int mpi_world::max_over_ranks(int value) const {
  int out = value;
  SOAC_MPI_CHECK(MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  return out;
}

void mpi_world::barrier() const { SOAC_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }

void mpi_world::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return on a working MPI
}

#else  // built without MPI

bool mpi_world::built_with_mpi() noexcept { return false; }
mpi_world::mpi_world() = default;
mpi_world& mpi_world::get() {
  throw usage_error("this soac was built without MPI: install Open MPI (scripts/setup-deps.sh installs libopenmpi-dev) and rebuild");
}
void mpi_world::all_reduce(void*, std::size_t, reduce_type, reduce_op) const {}
void mpi_world::reduce(void*, std::size_t, reduce_type, reduce_op, int) const {}
void mpi_world::all_gather(const void*, void*, std::size_t) const {}
void mpi_world::gather(const void*, void*, std::size_t, int) const {}
void mpi_world::broadcast(void*, std::size_t, int) const {}
int mpi_world::max_over_ranks(int value) const { return value; }
void mpi_world::barrier() const {}
void mpi_world::abort(int code) const { std::_Exit(code); }

#endif

}  // namespace soac
