// Ranks in separate processes (core/multi over an mpi_world), run under mpirun by CTest
// (mpi_ranks.np2, .np3: 2 and 3 processes, oversubscribed on CI's 2 cores): the collectives, and
// multi_hist, multi_hist_batched and multi_segreduce on the host backend, each process holding one
// rank and its shard only, against one context's result of the whole input: bit-exact for
// integer operators, within the summation bound for float sums. Uneven splits and ranks with no
// data included. Every process runs every test; the exit code is the worst over the processes.
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/multi/hist.cuh"
#include "core/multi/mpi_world.hpp"
#include "core/multi/segreduce.cuh"
#include "tests/multi_fixtures.hpp"

namespace {

using namespace soac;
using namespace soac::testing;

const mpi_world& world() { return mpi_world::get(); }

// The backends a test runs on: host always; cuda where this host has a GPU per process.
std::vector<backend> backends() {
  std::vector<backend> out = {backend::host};
  if (cuda_device_count() >= world().local_size()) out.push_back(backend::cuda);
  return out;
}

TEST(MpiWorld, EveryProcessIsOneRank) {
  EXPECT_GE(world().size(), 2);
  EXPECT_LT(world().rank(), world().size());
  EXPECT_EQ(world().max_over_ranks(world().rank()), world().size() - 1);
  for (const backend b : backends()) {
    multi_context mc(b, world());
    EXPECT_TRUE(mc.distributed());
    EXPECT_EQ(mc.ranks(), world().size());
    EXPECT_EQ(mc.local_ranks(), std::vector<int>{world().rank()});
    const int other = (world().rank() + 1) % world().size();
    EXPECT_FALSE(mc.is_local(other));
    EXPECT_THROW(mc.rank(other), usage_error);
    EXPECT_NE(mc.describe().find("MPI process"), std::string::npos) << mc.describe();
    int calls = 0;
    mc.for_each_rank([&](int r) {
      EXPECT_EQ(r, world().rank());
      ++calls;
    });
    EXPECT_EQ(calls, 1);
  }
}

TEST(MpiWorld, Collectives) {
  const int R = world().size(), me = world().rank();
  for (const backend b : backends()) {
    multi_context mc(b, world());
    context& ctx = mc.rank(me);
    std::vector<void*> bufs(std::size_t(R), nullptr);
    std::vector<const void*> sends(std::size_t(R), nullptr);
    // all_reduce and reduce: element i of rank r holds r * 1000 + i.
    const std::size_t count = 1001;
    std::vector<std::int64_t> mine(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = std::int64_t(me) * 1000 + std::int64_t(i);
    buffer<std::int64_t> sum(ctx, std::span<const std::int64_t>(mine)), top(ctx, std::span<const std::int64_t>(mine));
    bufs[std::size_t(me)] = sum.data();
    mc.all_reduce(bufs, count, reduce_type::i64, reduce_op::sum);
    bufs[std::size_t(me)] = top.data();
    mc.reduce(bufs, count, reduce_type::i64, reduce_op::max, R - 1);
    const auto got_sum = sum.to_vector(), got_top = top.to_vector();
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(got_sum[i], std::int64_t(R) * (R - 1) / 2 * 1000 + std::int64_t(R) * std::int64_t(i)) << i;
      if (me == R - 1) ASSERT_EQ(got_top[i], std::int64_t(R - 1) * 1000 + std::int64_t(i)) << i;
    }
    // all_gather: rank r sends 3 bytes r, r, r.
    const std::vector<std::uint8_t> three(3, std::uint8_t(me));
    buffer<std::uint8_t> send(ctx, std::span<const std::uint8_t>(three)), recv(ctx, std::size_t(3 * R));
    sends[std::size_t(me)] = send.data();
    bufs[std::size_t(me)] = recv.data();
    mc.all_gather(sends, bufs, 3);
    const auto gathered = recv.to_vector();
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < 3; ++k) ASSERT_EQ(gathered[std::size_t(3 * r + k)], std::uint8_t(r));
    // broadcast from the last rank.
    buffer<std::int32_t> word(ctx, std::span<const std::int32_t>(std::vector<std::int32_t>{me * 7}));
    bufs[std::size_t(me)] = word.data();
    mc.broadcast(bufs, 4, R - 1);
    EXPECT_EQ(word.to_vector()[0], (R - 1) * 7);
  }
}

// gather onto a root: rank r's bytes land at r * bytes there, nowhere else (memberships written by
// rank 0 alone); 0 bytes too.
TEST(MpiWorld, GatherOntoARoot) {
  const int R = world().size(), me = world().rank(), root = R - 1;
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{5}, std::size_t{100'003}}) {
    std::vector<std::uint8_t> mine(bytes), all(bytes * std::size_t(R), 0xee);
    for (std::size_t i = 0; i < bytes; ++i) mine[i] = std::uint8_t(me * 31 + int(i % 7));
    world().gather(mine.data(), all.data(), bytes, root);
    for (int r = 0; r < R; ++r)
      for (std::size_t i = 0; i < bytes; ++i)
        ASSERT_EQ(all[std::size_t(r) * bytes + i], me == root ? std::uint8_t(r * 31 + int(i % 7)) : std::uint8_t(0xee)) << r << " " << i;
  }
}

// multi_hist over the world against one context, for every size (n = 0 and 1: ranks with no data).
template <class Op, class F>
void check_hist(backend b, std::int64_t H, std::uint32_t range) {
  using V = typename Op::value_type;
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{5}, std::int64_t{1000}, std::int64_t{100'003}}) {
    const auto host = random_values(n, std::uint64_t(n + 3), range);
    const auto want = single_hist<Op, F>(b, host, H);
    multi_context mc(b, world());
    const sharded_input<F> in(mc, host, H);
    std::vector<buffer<V>> histos(std::size_t(mc.ranks()));
    histos[std::size_t(world().rank())] = buffer<V>(mc.rank(world().rank()), std::size_t(H));
    const auto views = views_of(histos);
    multi_hist(mc, {}, n, in.make_f(), std::span<const span<V>>(views), Op{});
    EXPECT_EQ(histos[std::size_t(world().rank())].to_vector(), want) << "n " << n << " rank " << world().rank();
  }
}

TEST(MpiHist, NativeSumEqualsOneContext) {
  for (const backend b : backends()) check_hist<plus<int>, count_bins>(b, 37, 40);
}

TEST(MpiHist, ArgMaxGathersAndFoldsInRankOrder) {
  for (const backend b : backends()) check_hist<arg_max<std::int32_t, std::int32_t>, argmax_bins>(b, 23, 700);
}

TEST(MpiHist, FloatSumWithinTheSummationBound) {
  const std::int64_t H = 19, n = 200'003;
  const auto host = random_values(n, 11, 1000);
  for (const backend b : backends()) {
    const auto want = single_hist<plus<float>, float_bins>(b, host, H);
    multi_context mc(b, world());
    const sharded_input<float_bins> in(mc, host, H);
    std::vector<buffer<float>> histos(std::size_t(mc.ranks()));
    histos[std::size_t(world().rank())] = buffer<float>(mc.rank(world().rank()), std::size_t(H));
    const auto views = views_of(histos);
    multi_hist(mc, {}, n, in.make_f(), std::span<const span<float>>(views), plus<float>{});
    const auto got = histos[std::size_t(world().rank())].to_vector();
    // Both sums are of at most n terms of |x| <= 100: within 2 n eps sum |x| of each other.
    for (std::int64_t h = 0; h < H; ++h) {
      double magnitude = 0;
      for (std::int64_t i = 0; i < n; ++i)
        if (host[std::size_t(i)] % H == h) magnitude += std::fabs(double(host[std::size_t(i)]) * 0.1);
      EXPECT_LE(std::fabs(double(got[std::size_t(h)]) - double(want[std::size_t(h)])), 2.0 * double(n) * 0x1p-24 * magnitude) << h;
    }
  }
}

TEST(MpiHist, BatchedEqualsOneContext) {
  for (const backend b : backends()) {
    const std::int64_t batches = 4, seg_len = 1001, H = 17;
    const auto host = random_values(batches * seg_len, 29, 1000);
    context one(b);
    buffer<std::int32_t> data(one, std::span<const std::int32_t>(host));
    buffer<int> want_buf(one, std::size_t(batches * H));
    fill(one, want_buf.view(), 0);
    hist_batched(one, {}, batches, seg_len, count_bins{data.data(), 0, H}, want_buf.view(), H, plus<int>{});
    const auto want = want_buf.to_vector();
    multi_context mc(b, world());
    const replicated<int> out(mc, host, std::size_t(batches * H));
    const auto& copies = out.copies;
    multi_hist_batched(mc, {}, batches, seg_len, [&](const shard& s) { return count_bins{copies[std::size_t(s.rank)].data(), 0, H}; },
                       out.destinations(), H, plus<int>{});
    EXPECT_EQ(out.outs[std::size_t(world().rank())].to_vector(), want);
  }
}

// multi_segreduce over the world against one context: whole segments per rank (m >= R) and
// every segment split across the ranks (m < R), including a non-commutative operator.
template <class Op, class F>
void check_segreduce(backend b, std::int64_t m, std::int64_t n, const multi_options& options = {}) {
  using T = typename Op::value_type;
  const auto host = signed_values(m * n, std::uint64_t(m * 131 + n));
  const auto want = single_segreduce<Op, F>(b, host, m, n);
  multi_context mc(b, world());
  const replicated<T> in(mc, host, std::size_t(m));
  const auto& copies = in.copies;
  multi_segreduce(mc, m, n, [&](const segment_shard& s) { return F{copies[std::size_t(s.rank)].data(), n}; }, in.destinations(), Op{},
                  options);
  if (!detail::receives_result(options, world().rank())) return;
  const auto got = in.outs[std::size_t(world().rank())].to_vector();
  for (std::int64_t s = 0; s < m; ++s)
    EXPECT_TRUE(got[std::size_t(s)] == want[std::size_t(s)]) << "m " << m << " n " << n << " segment " << s;
}

const std::vector<std::pair<std::int64_t, std::int64_t>> segment_shapes = {{50, 40}, {13, 1000}, {2, 7001}, {1, 100'003}, {5, 3}, {3, 0}, {1, 1}};

TEST(MpiSegreduce, SumMaxSubarrayAndArgMaxEqualOneContext) {
  for (const backend b : backends())
    for (const auto& [m, n] : segment_shapes) {
      check_segreduce<plus<std::int64_t>, matrix_element<std::int64_t>>(b, m, n);
      check_segreduce<max_subarray<std::int64_t>, mss_element>(b, m, n);
      check_segreduce<arg_max<std::int32_t, std::int32_t>, argmax_element>(b, m, n);
    }
}

TEST(MpiSegreduce, ResultOnTheRootAlone) {
  multi_options root;
  root.placement = result_placement::root;
  root.root = world().size() - 1;
  for (const backend b : backends())
    for (const std::int64_t m : {std::int64_t{1}, std::int64_t{world().size() + 2}}) {
      check_segreduce<plus<std::int64_t>, matrix_element<std::int64_t>>(b, m, 300, root);
      check_segreduce<max_subarray<std::int64_t>, mss_element>(b, m, 300, root);
    }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const soac::mpi_world& w = soac::mpi_world::get();
  // One report, rank 0's; every process still runs every test and counts in the exit code.
  if (w.rank() != 0) delete ::testing::UnitTest::GetInstance()->listeners().Release(
                         ::testing::UnitTest::GetInstance()->listeners().default_result_printer());
  const int failed = RUN_ALL_TESTS();
  return w.max_over_ranks(failed);
}
