#include "core/multi/multi_context.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <sstream>

#include <nccl.h>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/multi/mpi_world.hpp"
#include "core/multi/rank_threads.hpp"

// Every NCCL call goes through SOAC_NCCL_CHECK, beside SOAC_CUDA_CHECK: a failure becomes a
// soac::cuda_error naming the call, the place and NCCL's message (ncclGetErrorString, and
// ncclGetLastError's detail where there is one).
#define SOAC_NCCL_CHECK(call) ::soac::detail::check_nccl((call), #call, __FILE__, __LINE__)

namespace soac {

namespace detail {
namespace {
void check_nccl(ncclResult_t code, const char* call, const char* file, int line) {
  if (code == ncclSuccess) return;
  std::string message = std::string("NCCL: ") + ncclGetErrorString(code);
  if (const char* last = ncclGetLastError(nullptr); last && *last) message += std::string(" (") + last + ")";
  throw cuda_error(static_cast<int>(code), call, std::string(file) + ':' + std::to_string(line), message);
}
}  // namespace
}  // namespace detail

namespace {

std::vector<int> first_ranks(int count) {
  std::vector<int> v(static_cast<std::size_t>(std::max(count, 0)));
  for (int r = 0; r < count; ++r) v[static_cast<std::size_t>(r)] = r;
  return v;
}

ncclDataType_t nccl_type(reduce_type t) {
  switch (t) {
    case reduce_type::i8: return ncclInt8;
    case reduce_type::u8: return ncclUint8;
    case reduce_type::i32: return ncclInt32;
    case reduce_type::u32: return ncclUint32;
    case reduce_type::i64: return ncclInt64;
    case reduce_type::u64: return ncclUint64;
    case reduce_type::f32: return ncclFloat32;
    case reduce_type::f64: return ncclFloat64;
  }
  throw usage_error("multi_context: unknown reduce_type");
}

ncclRedOp_t nccl_op(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return ncclSum;
    case reduce_op::min: return ncclMin;
    case reduce_op::max: return ncclMax;
  }
  throw usage_error("multi_context: unknown reduce_op");
}

// The host ranks' reduction: for every element, the ranks' values folded in rank order (so a
// float sum is the same on every run), written to every rank's buffer or to root's alone.
template <class T, class Op>
void host_reduce(std::span<void* const> buffers, std::size_t count, int root) {
  const std::int64_t n = static_cast<std::int64_t>(count);
  const Op op{};
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    T acc = static_cast<const T*>(buffers[0])[i];
    for (std::size_t r = 1; r < buffers.size(); ++r) acc = op(acc, static_cast<const T*>(buffers[r])[i]);
    for (std::size_t r = 0; r < buffers.size(); ++r)
      if (root < 0 || static_cast<int>(r) == root) static_cast<T*>(buffers[r])[i] = acc;
  }
}

template <class T>
void host_reduce_as(std::span<void* const> buffers, std::size_t count, reduce_op op, int root) {
  switch (op) {
    case reduce_op::sum: return host_reduce<T, plus<T>>(buffers, count, root);
    case reduce_op::min: return host_reduce<T, minimum<T>>(buffers, count, root);
    case reduce_op::max: return host_reduce<T, maximum<T>>(buffers, count, root);
  }
}

// root < 0: every rank.
void host_reduce_any(std::span<void* const> buffers, std::size_t count, reduce_type type, reduce_op op, int root) {
  switch (type) {
    case reduce_type::i8: return host_reduce_as<std::int8_t>(buffers, count, op, root);
    case reduce_type::u8: return host_reduce_as<std::uint8_t>(buffers, count, op, root);
    case reduce_type::i32: return host_reduce_as<std::int32_t>(buffers, count, op, root);
    case reduce_type::u32: return host_reduce_as<std::uint32_t>(buffers, count, op, root);
    case reduce_type::i64: return host_reduce_as<std::int64_t>(buffers, count, op, root);
    case reduce_type::u64: return host_reduce_as<std::uint64_t>(buffers, count, op, root);
    case reduce_type::f32: return host_reduce_as<float>(buffers, count, op, root);
    case reduce_type::f64: return host_reduce_as<double>(buffers, count, op, root);
  }
}

}  // namespace

std::vector<int> parse_devices(std::string_view text, backend which, std::string_view option) {
  const bool cuda = which == backend::cuda;
  const int available = cuda ? cuda_device_count() : max_host_ranks;
  const auto bad = [&](const std::string& why) {
    return usage_error(std::string(option) + " '" + std::string(text) + "': " + why + " (expected all or a list such as 0,1,3)");
  };
  if (text == "all") {
    if (cuda && available == 0) throw usage_error(std::string(option) + " all: no CUDA device is available");
    return first_ranks(cuda ? available : 1);
  }
  std::vector<int> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    int value = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc{} || end != item.data() + item.size() || value < 0)
      throw bad("'" + std::string(item) + "' is not a device number");
    if (value >= available)
      throw bad(cuda ? "CUDA device " + std::to_string(value) + " does not exist (this machine has " + std::to_string(available) + ")"
                     : "the host backend simulates at most " + std::to_string(max_host_ranks) + " ranks (numbers 0-" +
                           std::to_string(max_host_ranks - 1) + ")");
    if (std::find(out.begin(), out.end(), value) != out.end()) throw bad("device " + std::to_string(value) + " is named twice");
    out.push_back(value);
    if (comma == text.size()) break;
    at = comma + 1;
  }
  return out;
}

struct multi_context::nccl {
  std::vector<ncclComm_t> comms;
  ~nccl() {
    for (ncclComm_t c : comms)
      if (c) ncclCommDestroy(c);
  }
};

multi_context::multi_context(backend which, int ranks) : multi_context(which, first_ranks(ranks)) {}

multi_context::multi_context(backend which, const std::vector<int>& devices) : backend_(which) {
  if (devices.empty()) throw usage_error("multi_context: at least one rank is needed");
  if (which == backend::host && devices.size() > static_cast<std::size_t>(max_host_ranks))
    throw usage_error("multi_context: the host backend simulates at most " + std::to_string(max_host_ranks) + " ranks");
  for (int d : devices) contexts_.push_back(std::make_unique<context>(which, which == backend::cuda ? d : 0));
  local_ = first_ranks(static_cast<int>(devices.size()));
  if (which != backend::cuda) return;
  nccl_ = std::make_unique<nccl>();
  nccl_->comms.assign(devices.size(), nullptr);
  SOAC_NCCL_CHECK(ncclCommInitAll(nccl_->comms.data(), static_cast<int>(devices.size()), devices.data()));
  if (devices.size() > 1) threads_ = std::make_unique<detail::rank_threads>(static_cast<int>(devices.size()));
}

multi_context::multi_context(backend which, const mpi_world& world) : backend_(which), world_(&world) {
  const int me = world.rank();
  contexts_.resize(static_cast<std::size_t>(world.size()));
  local_ = {me};
  // Every process learns whether every other one could open its rank before any waits on it in
  // a collective, so a failure ends all of them instead of leaving the others hanging.
  std::string failure;
  try {
    int device = 0;
    if (which == backend::cuda) {
      const int gpus = cuda_device_count();
      if (world.local_size() > gpus)
        throw usage_error(std::to_string(world.local_size()) + " processes on host " + world.host_name() + " but " +
                          std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") + ": one process per GPU");
      device = world.local_rank();
    }
    contexts_[static_cast<std::size_t>(me)] = std::make_unique<context>(which, device);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (world.max_over_ranks(failure.empty() ? 0 : 1) != 0)
    throw usage_error(failure.empty() ? "multi_context: another rank could not start (its own message says why)"
                                      : "multi_context: rank " + std::to_string(me) + ": " + failure);
  if (which != backend::cuda) return;
  nccl_ = std::make_unique<nccl>();
  nccl_->comms.assign(contexts_.size(), nullptr);
  ncclUniqueId id{};
  if (me == 0) SOAC_NCCL_CHECK(ncclGetUniqueId(&id));
  world.broadcast(&id, sizeof(id), 0);
  rank(me).activate();
  SOAC_NCCL_CHECK(ncclCommInitRank(&nccl_->comms[static_cast<std::size_t>(me)], world.size(), id, me));
}

context& multi_context::rank(int r) const {
  if (!is_local(r))
    throw usage_error("multi_context: rank " + std::to_string(r) + (r >= 0 && r < ranks() ? " is held by another process" : " does not exist") +
                      " (" + std::to_string(ranks()) + " ranks)");
  return *contexts_[static_cast<std::size_t>(r)];
}

multi_context::~multi_context() {
  threads_.reset();
  // The communicators go before the contexts' streams (ncclCommDestroy waits for queued work).
  nccl_.reset();
}

void multi_context::for_each_rank(const std::function<void(int)>& task) const {
  if (threads_) return threads_->run(task);
  std::exception_ptr first;
  for (int r : local_) {
    try {
      task(r);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::string multi_context::describe() const {
  std::ostringstream s;
  s << ranks() << (ranks() == 1 ? " rank: " : " ranks: ");
  if (world_) {
    s << "one per MPI process; this one is rank " << world_->rank() << " on " << world_->host_name() << ": "
      << rank(world_->rank()).describe();
    return s.str();
  }
  if (!is_cuda()) {
    s << "simulated in one process, each " << rank(0).describe();
    return s.str();
  }
  for (int r = 0; r < ranks(); ++r) s << (r ? "; " : "") << rank(r).describe();
  return s.str();
}

void multi_context::synchronize() const {
  for (const auto& c : contexts_)
    if (c) c->synchronize();
}

void multi_context::check_ranks(std::size_t given, std::string_view what) const {
  if (given != contexts_.size())
    throw usage_error("multi_context::" + std::string(what) + ": " + std::to_string(given) + " buffers for " +
                      std::to_string(ranks()) + " ranks");
}

void multi_context::all_reduce(std::span<void* const> buffers, std::size_t count, reduce_type type, reduce_op op) const {
  check_ranks(buffers.size(), "all_reduce");
  if (count == 0) return;
  if (!is_cuda() && world_) return world_->all_reduce(buffers[std::size_t(world_->rank())], count, type, op);
  if (!is_cuda()) return host_reduce_any(buffers, count, type, op, -1);
  SOAC_NCCL_CHECK(ncclGroupStart());
  for (int r : local_)
    SOAC_NCCL_CHECK(ncclAllReduce(buffers[r], buffers[r], count, nccl_type(type), nccl_op(op), nccl_->comms[r], rank(r).stream()));
  SOAC_NCCL_CHECK(ncclGroupEnd());
}

void multi_context::reduce(std::span<void* const> buffers, std::size_t count, reduce_type type, reduce_op op, int root) const {
  check_ranks(buffers.size(), "reduce");
  if (root < 0 || root >= ranks()) throw usage_error("multi_context::reduce: root " + std::to_string(root) + " is not a rank");
  if (count == 0) return;
  if (!is_cuda() && world_) return world_->reduce(buffers[std::size_t(world_->rank())], count, type, op, root);
  if (!is_cuda()) return host_reduce_any(buffers, count, type, op, root);
  SOAC_NCCL_CHECK(ncclGroupStart());
  for (int r : local_)
    SOAC_NCCL_CHECK(ncclReduce(buffers[r], buffers[r], count, nccl_type(type), nccl_op(op), root, nccl_->comms[r], rank(r).stream()));
  SOAC_NCCL_CHECK(ncclGroupEnd());
}

void multi_context::all_gather(std::span<const void* const> send, std::span<void* const> recv, std::size_t bytes) const {
  check_ranks(send.size(), "all_gather");
  check_ranks(recv.size(), "all_gather");
  if (bytes == 0) return;
  if (!is_cuda() && world_) return world_->all_gather(send[std::size_t(world_->rank())], recv[std::size_t(world_->rank())], bytes);
  if (!is_cuda()) {
    for (std::size_t r = 0; r < recv.size(); ++r)
      for (std::size_t q = 0; q < send.size(); ++q) std::memcpy(static_cast<char*>(recv[r]) + q * bytes, send[q], bytes);
    return;
  }
  SOAC_NCCL_CHECK(ncclGroupStart());
  for (int r : local_)
    SOAC_NCCL_CHECK(ncclAllGather(send[r], recv[r], bytes, ncclUint8, nccl_->comms[r], rank(r).stream()));
  SOAC_NCCL_CHECK(ncclGroupEnd());
}

void multi_context::broadcast(std::span<void* const> buffers, std::size_t bytes, int root) const {
  check_ranks(buffers.size(), "broadcast");
  if (root < 0 || root >= ranks()) throw usage_error("multi_context::broadcast: root " + std::to_string(root) + " is not a rank");
  if (bytes == 0) return;
  if (!is_cuda() && world_) return world_->broadcast(buffers[std::size_t(world_->rank())], bytes, root);
  if (!is_cuda()) {
    for (std::size_t r = 0; r < buffers.size(); ++r)
      if (static_cast<int>(r) != root) std::memcpy(buffers[r], buffers[root], bytes);
    return;
  }
  SOAC_NCCL_CHECK(ncclGroupStart());
  for (int r : local_)
    SOAC_NCCL_CHECK(ncclBroadcast(buffers[r], buffers[r], bytes, ncclUint8, root, nccl_->comms[r], rank(r).stream()));
  SOAC_NCCL_CHECK(ncclGroupEnd());
}

}  // namespace soac
