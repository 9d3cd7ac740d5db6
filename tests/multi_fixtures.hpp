// Element functors and inputs shared by the tests of several ranks (tests/test_multi.cu: ranks in
// one process; tests/mpi_ranks.cu: ranks in separate MPI processes).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/buffer.hpp"
#include "core/hd.hpp"
#include "core/multi/combine.cuh"
#include "core/segreduce.cuh"
#include "core/hist.cuh"
#include "core/operators.hpp"
#include "core/segreduce/operators.hpp"
#include "datasets/random.hpp"

namespace soac::testing {

// ---- functors: each rank reads its own copy of its shard (local[i - begin]) ----

struct count_bins {
  const std::int32_t* local;
  std::int64_t begin, H;
  SOAC_HD bin_value<int> operator()(std::int64_t i) const { return {local[i - begin] % (H + 3), 1}; }  // some bins out of range
};

struct argmax_bins {
  const std::int32_t* local;
  std::int64_t begin, H;
  SOAC_HD bin_value<indexed<std::int32_t, std::int32_t>> operator()(std::int64_t i) const {
    const std::int32_t x = local[i - begin];
    return {x % H, {x / 7, std::int32_t(i)}};  // many ties: the lower index must win
  }
};

struct vector_bins {
  const std::int32_t* local;
  std::int64_t begin, H;
  SOAC_HD bin_value<vec<int, 3>> operator()(std::int64_t i) const {
    const std::int32_t x = local[i - begin];
    return {x % H, {{x, 1, -x}}};
  }
};

struct float_bins {
  const std::int32_t* local;
  std::int64_t begin, H;
  SOAC_HD bin_value<float> operator()(std::int64_t i) const {
    const std::int32_t x = local[i - begin];
    return {x % H, float(x) * 0.1f};
  }
};

// segreduce: element (s, j) of the m x n row-major matrix (every rank holds it whole).
template <class T>
struct matrix_element {
  const std::int32_t* a;
  std::int64_t n;
  SOAC_HD T operator()(std::int64_t s, std::int64_t j) const { return T(a[s * n + j]); }
};
struct mss_element {
  const std::int32_t* a;
  std::int64_t n;
  SOAC_HD mss_quad<std::int64_t> operator()(std::int64_t s, std::int64_t j) const {
    return max_subarray<std::int64_t>::lift(a[s * n + j]);
  }
};
struct argmax_element {
  const std::int32_t* a;
  std::int64_t n;
  SOAC_HD indexed<std::int32_t, std::int32_t> operator()(std::int64_t s, std::int64_t j) const {
    return {a[s * n + j] / 5, std::int32_t(j)};
  }
};

inline std::vector<std::int32_t> random_values(std::int64_t count, std::uint64_t seed, std::uint32_t range) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) v[std::size_t(i)] = std::int32_t(datasets::random_u32(seed, 0, std::uint64_t(i)) % range);
  return v;
}

// Signed values for the maximum subarray (its result depends on the order of the elements).
inline std::vector<std::int32_t> signed_values(std::int64_t count, std::uint64_t seed) {
  auto v = random_values(count, seed, 2001);
  for (auto& x : v) x -= 1000;
  return v;
}


template <class T>
std::vector<span<T>> views_of(const std::vector<buffer<T>>& bufs) {
  std::vector<span<T>> out;
  for (const auto& b : bufs) out.push_back(b.view());
  return out;
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Every rank's copy of the whole input and a destination of `size` elements, with the
// destinations' views.
template <class T>
struct replicated {
  std::vector<buffer<std::int32_t>> copies;
  std::vector<buffer<T>> outs;
  std::vector<span<T>> views;
  replicated(const multi_context& mc, const std::vector<std::int32_t>& host, std::size_t size)
      : copies(std::size_t(mc.ranks())), outs(std::size_t(mc.ranks())) {
    for (int r : mc.local_ranks()) {  // other processes' ranks keep empty buffers
      copies[std::size_t(r)] = buffer<std::int32_t>(mc.rank(r), std::span<const std::int32_t>(host));
      outs[std::size_t(r)] = buffer<T>(mc.rank(r), size);
    }
    views = views_of(outs);
  }
  std::span<const span<T>> destinations() const { return views; }
};

// Each rank's copy of its shard of `host`, as make_f hands it to the functor F{local, begin, H}.
template <class F>
struct sharded_input {
  const multi_context& mc;
  const std::vector<std::int32_t>& host;
  std::int64_t H;
  std::vector<buffer<std::int32_t>> local;
  sharded_input(const multi_context& m, const std::vector<std::int32_t>& h, std::int64_t bins)
      : mc(m), host(h), H(bins), local(std::size_t(m.ranks())) {
    for (int r : mc.local_ranks()) {
      const shard s = shard_of(std::int64_t(host.size()), mc.ranks(), r);
      local[std::size_t(r)] = buffer<std::int32_t>(mc.rank(r), std::span<const std::int32_t>(host.data() + s.begin, std::size_t(s.size())));
    }
  }
  auto make_f() const {
    return [this](const shard& s) { return F{local[std::size_t(s.rank)].data(), s.begin, H}; };
  }
};

// One context's histogram of the same input (the reference every rank count must match).
template <class Op, class F>
std::vector<typename Op::value_type> single_hist(backend which, const std::vector<std::int32_t>& host, std::int64_t H) {
  context ctx(which);
  buffer<std::int32_t> data(ctx, std::span<const std::int32_t>(host));
  std::vector<typename Op::value_type> init(std::size_t(H), Op::identity());
  buffer<typename Op::value_type> histo(ctx, std::span<const typename Op::value_type>(init));
  hist(ctx, std::int64_t(host.size()), F{data.data(), 0, H}, histo.view(), Op{});
  return histo.to_vector();
}


// One context's segreduce of an m x n matrix (the reference every rank count must match).
template <class Op, class F>
std::vector<typename Op::value_type> single_segreduce(backend which, const std::vector<std::int32_t>& host, std::int64_t m,
                                                       std::int64_t n) {
  context one(which);
  buffer<std::int32_t> data(one, std::span<const std::int32_t>(host));
  buffer<typename Op::value_type> out(one, std::size_t(m));
  segreduce(one, m, n, F{data.data(), n}, out.view(), Op{});
  return out.to_vector();
}

}  // namespace soac::testing
