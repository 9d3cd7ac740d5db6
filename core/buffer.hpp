// RAII arrays in the memory of a context's backend (device memory for cuda, host memory for
// host), viewed as cuda::std::span for kernels and functors.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda/std/span>

#include "core/context.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"

namespace soac {

template <class T>
using span = cuda::std::span<T>;

enum class lifetime { persistent, temporary };

template <class T>
class buffer {
  static_assert(std::is_trivially_copyable_v<T>, "soac::buffer holds trivially copyable types only");

 public:
  buffer() = default;
  // Uninitialised storage for n elements.
  buffer(context& ctx, std::size_t n, lifetime life = lifetime::persistent)
      : ctx_(&ctx), size_(n), life_(life) {
    if (n == 0) return;
    const std::size_t bytes = checked_bytes(n, sizeof(T), "soac::buffer");
    void* p = life == lifetime::temporary ? ctx.allocate_temp(bytes) : ctx.allocate(bytes);
    data_ = static_cast<T*>(p);
  }
  // A copy of host data.
  buffer(context& ctx, std::span<const T> host, lifetime life = lifetime::persistent)
      : buffer(ctx, host.size(), life) {
    copy_from(host);
  }
  buffer(buffer&& o) noexcept { swap(o); }
  buffer& operator=(buffer&& o) noexcept {
    buffer(std::move(o)).swap(*this);
    return *this;
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { release(); }

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  span<T> view() const noexcept { return span<T>(data_, size_); }
  operator span<T>() const noexcept { return view(); }
  operator span<const T>() const noexcept { return span<const T>(data_, size_); }

  void copy_from(std::span<const T> host) {
    if (host.size() != size_) throw usage_error("buffer::copy_from: size mismatch");
    if (size_) ctx_->copy_to_backend(data_, host.data(), size_ * sizeof(T));
  }
  void copy_to(std::span<T> host) const {
    if (host.size() != size_) throw usage_error("buffer::copy_to: size mismatch");
    if (size_) ctx_->copy_to_host(host.data(), data_, size_ * sizeof(T));
  }
  std::vector<T> to_vector() const {
    require_host_memory(size_ * sizeof(T), "a copy of an array to the host");
    std::vector<T> v(size_);
    copy_to(v);
    return v;
  }

  void swap(buffer& o) noexcept {
    std::swap(ctx_, o.ctx_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(life_, o.life_);
  }

 private:
  void release() noexcept {
    if (!data_) return;
    if (life_ == lifetime::temporary) ctx_->free_temp(data_);
    else ctx_->free(data_);
    data_ = nullptr;
  }
  context* ctx_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  lifetime life_ = lifetime::persistent;
};

}  // namespace soac
