// Several ranks behind one API: a soac::context per rank and the collectives between them.
//
//   soac::multi_context mc(soac::backend::cuda, soac::parse_devices("all", soac::backend::cuda));
//   mc.rank(r)          // rank r's context (its device and stream), for the single-GPU primitives
//   mc.all_reduce(...)  // NCCL on cuda; an in-process loop over the ranks' buffers on host
//
// cuda: one rank per GPU, each its own context (device + stream) and NCCL communicator rank, all
// driven by this one process (ncclCommInitAll). soac is a library called from one host program:
// the apps already own their process, and there is no MPI launcher to start one process per GPU,
// so the calling thread makes the collectives (NCCL's group calls join the ranks) and
// for_each_rank queues the ranks' own work from a thread per rank.
// host: R simulated ranks in this process, each a host context, with the same collectives done
// in rank order over the ranks' buffers (all in host memory).
// Distributed (multi_context(which, mpi_world)): one rank per process of an MPI world (mpirun,
// srun); ranks() is the world's size and this process holds rank world.rank() alone (is_local).
// cuda: its GPU is the host-local rank's, and the NCCL communicator is bootstrapped by
// broadcasting its unique id over MPI; host: the collectives are MPI's. Everything that loops
// over ranks visits the local ones only (for_each_rank, local_ranks()); collectives still take a
// pointer per rank of the world, reading only the local ones'. The decomposition above (the
// sharding and combining of core/multi/combine.cuh) is the same code for both, so the host tests
// exercise exactly what runs on several GPUs.
//
// Collectives take one pointer per rank (in that rank's memory), are queued on each rank's
// stream (cuda; asynchronous like the primitives) or done at once (host), and must not alias a
// send buffer with another rank's receive buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/context.hpp"
#include "core/operators.hpp"

namespace soac {

namespace detail {
class rank_threads;
}
class mpi_world;

// The ranks of "--devices all|0,1,...": cuda: distinct existing device ordinals ("all": every
// device); host: simulated ranks, a list of N distinct numbers below max_host_ranks meaning N
// ranks ("all": one). usage_error for bad text, duplicates and devices that do not exist.
inline constexpr int max_host_ranks = 64;
std::vector<int> parse_devices(std::string_view text, backend which, std::string_view option = "--devices");

// Element types and operators the collectives reduce natively (NCCL's and the host loop's).
enum class reduce_type { i8, u8, i32, u32, i64, u64, f32, f64 };
enum class reduce_op { sum, min, max };

template <class T>
constexpr bool has_reduce_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> ||
    (std::is_integral_v<T> && !std::is_same_v<T, bool> && (sizeof(T) == 1 || sizeof(T) == 4 || sizeof(T) == 8));

template <class T>
constexpr reduce_type reduce_type_of() {
  static_assert(has_reduce_type_v<T>);
  if constexpr (std::is_same_v<T, float>) return reduce_type::f32;
  else if constexpr (std::is_same_v<T, double>) return reduce_type::f64;
  else if constexpr (sizeof(T) == 1) return std::is_signed_v<T> ? reduce_type::i8 : reduce_type::u8;
  else if constexpr (sizeof(T) == 4) return std::is_signed_v<T> ? reduce_type::i32 : reduce_type::u32;
  else return std::is_signed_v<T> ? reduce_type::i64 : reduce_type::u64;
}

// native_reduction<Op>: whether an all-reduce does Op itself (plus, minimum, maximum of a type
// above), and as what. Any other operator is combined by gathering the ranks' partials and
// folding them with Op (core/multi/combine.cuh).
template <class Op>
struct native_reduction : std::false_type {};
template <class T, reduce_op R>
struct native_reduction_of : std::bool_constant<has_reduce_type_v<T>> {
  static constexpr reduce_op op = R;
};
template <class T>
struct native_reduction<plus<T>> : native_reduction_of<T, reduce_op::sum> {};
template <class T>
struct native_reduction<minimum<T>> : native_reduction_of<T, reduce_op::min> {};
template <class T>
struct native_reduction<maximum<T>> : native_reduction_of<T, reduce_op::max> {};
template <class Op>
inline constexpr bool native_reduction_v = native_reduction<Op>::value;

class multi_context {
 public:
  // One rank per entry of `devices` (from parse_devices: device ordinals on cuda, as many
  // simulated ranks on host). usage_error when empty; cuda errors and NCCL's as cuda_error.
  multi_context(backend which, const std::vector<int>& devices);
  // R simulated ranks (host) or the first R devices (cuda).
  multi_context(backend which, int ranks);
  // One rank per process of `world`: this process holds rank world.rank() (cuda: on its host's
  // GPU number world.local_rank()). Collective: every process of the world must construct it;
  // a failure on any process (no such GPU, NCCL) throws on every one.
  multi_context(backend which, const mpi_world& world);
  ~multi_context();
  multi_context(const multi_context&) = delete;
  multi_context& operator=(const multi_context&) = delete;

  backend which() const noexcept { return backend_; }
  bool is_cuda() const noexcept { return backend_ == backend::cuda; }
  // Ranks of the whole world (in every process when distributed).
  int ranks() const noexcept { return static_cast<int>(contexts_.size()); }
  // Rank r's context; usage_error for a rank held by another process.
  context& rank(int r) const;
  // The ranks this process holds, ascending (every rank unless distributed).
  const std::vector<int>& local_ranks() const noexcept { return local_; }
  bool is_local(int r) const noexcept {
    return r >= 0 && r < ranks() && contexts_[static_cast<std::size_t>(r)] != nullptr;
  }
  // Whether other ranks live in other processes (an MPI world).
  bool distributed() const noexcept { return world_ != nullptr; }
  // "2 ranks: cuda: NVIDIA H100 ... (device 0, ...); cuda: ... (device 1, ...)".
  std::string describe() const;
  // Waits for every rank's stream.
  void synchronize() const;

  // task(r) for every local rank r, returning once every call has. cuda with several ranks: all at
  // once, rank 0 on this thread and each other rank on a thread of its own, so that no rank's
  // launches (microseconds of host time each) wait behind another's. host: in rank order on this
  // thread (each simulated rank already uses every core). The first exception in rank order is
  // rethrown after every call has ended. task must only touch rank r's context and data, and
  // must not call the collectives (they join the ranks from one thread).
  void for_each_rank(const std::function<void(int)>& task) const;

  // In place: buffers[r] (count elements each) becomes the reduction over all ranks, on every
  // rank (all_reduce) or on `root` alone (reduce: the others' buffers are left unspecified).
  void all_reduce(std::span<void* const> buffers, std::size_t count, reduce_type type, reduce_op op) const;
  void reduce(std::span<void* const> buffers, std::size_t count, reduce_type type, reduce_op op, int root) const;
  // recv[r] (ranks() * bytes) receives every rank's send[q] (bytes each) at q * bytes.
  void all_gather(std::span<const void* const> send, std::span<void* const> recv, std::size_t bytes) const;
  // buffers[r] (bytes each) receives buffers[root].
  void broadcast(std::span<void* const> buffers, std::size_t bytes, int root) const;

 private:
  void check_ranks(std::size_t given, std::string_view what) const;
  struct nccl;  // the communicators, kept out of this header (nccl.h is needed by multi_context.cu alone)
  backend backend_;
  std::vector<std::unique_ptr<context>> contexts_;  // one per rank of the world; null for other processes
  std::vector<int> local_;
  const mpi_world* world_ = nullptr;
  std::unique_ptr<nccl> nccl_;
  std::unique_ptr<detail::rank_threads> threads_;  // for_each_rank's (cuda, several ranks)
};

}  // namespace soac
