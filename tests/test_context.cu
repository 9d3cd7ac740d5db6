// The context: backend choice, device properties, memory, and typed CUDA errors.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/buffer.hpp"
#include "core/cuda_check.hpp"
#include "core/launch.cuh"
#include "tests/backend_fixture.hpp"

namespace {

using namespace soac;
using soac::testing::backend_test;

class Context : public backend_test {};

TEST_P(Context, BufferRoundTrip) {
  std::vector<std::int64_t> h(1000);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = std::int64_t(i) * 7 - 3;
  buffer<std::int64_t> b(ctx(), std::span<const std::int64_t>(h));
  EXPECT_EQ(b.size(), h.size());
  EXPECT_EQ(b.to_vector(), h);
  buffer<std::int64_t> moved = std::move(b);
  EXPECT_EQ(moved.to_vector(), h);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_THROW(moved.copy_from(std::span<const std::int64_t>(h.data(), 10)), usage_error);
}

TEST_P(Context, TemporariesAreAlignedAndReused) {
  void* p = ctx().allocate_temp(1 << 20);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  ctx().free_temp(p);
  if (ctx().is_cuda()) {
    void* q = ctx().allocate_temp(1 << 20);  // the caching allocator hands the same block back
    EXPECT_EQ(p, q);
    ctx().free_temp(q);
  }
  buffer<float> t(ctx(), 1000, lifetime::temporary);
  EXPECT_NE(t.data(), nullptr);
}

TEST_P(Context, AllocationBeyondMemoryIsAResourceError) {
  try {
    buffer<std::uint8_t> huge(ctx(), std::size_t{1} << 52);  // 4 PiB
    FAIL() << "allocating 4 PiB succeeded";
  } catch (const resource_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot allocate"), std::string::npos) << e.what();
  }
}

TEST_P(Context, DescribesItself) {
  const std::string d = ctx().describe();
  EXPECT_EQ(d.rfind(std::string(to_string(GetParam())) + ":", 0), 0u) << d;
  EXPECT_GE(ctx().props().host_threads, 1);
}

SOAC_INSTANTIATE_BACKENDS(Context);

TEST(ContextHost, ResolvesBackendNames) {
  EXPECT_EQ(resolve_backend("host"), backend::host);
  EXPECT_EQ(resolve_backend("cuda"), backend::cuda);
  EXPECT_EQ(resolve_backend("auto"), cuda_device_count() > 0 ? backend::cuda : backend::host);
  EXPECT_THROW(resolve_backend("gpu"), usage_error);
}

TEST(ContextHost, CudaBackendWithoutADeviceIsAClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  try {
    context ctx(backend::cuda);
    FAIL();
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("needs a CUDA device"), std::string::npos) << e.what();
  }
}

TEST(ContextHost, CudaErrorsCarryCallPlaceAndMessage) {
  try {
    SOAC_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL();
  } catch (const cuda_error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), int(cudaErrorInvalidValue));
    EXPECT_NE(what.find("cudaErrorInvalidValue"), std::string::npos) << what;  // the call's text
    EXPECT_NE(what.find("test_context.cu:"), std::string::npos) << what;       // the place
    EXPECT_NE(what.find("invalid argument"), std::string::npos) << what;       // CUDA's message
  }
}

__global__ void noop_kernel() {}

TEST(CudaContext, DevicePropertiesForTheModels) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  context ctx(backend::cuda);
  const auto& p = ctx.props();
  EXPECT_GT(p.sm_count, 0);
  EXPECT_GE(p.max_threads_per_sm, 1024);
  EXPECT_GE(p.shared_per_block_optin, p.shared_per_block);
  EXPECT_GT(p.l2_bytes, 0u);
  EXPECT_GT(p.global_bytes, 0u);
  EXPECT_NE(ctx.stream(), nullptr);
}

TEST(CudaContext, ZeroedCountersStartAtZeroAndGrow) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  context ctx(backend::cuda);
  unsigned* small = ctx.zeroed_counters(10);
  ASSERT_NE(small, nullptr);
  unsigned* grown = ctx.zeroed_counters(100'000);
  std::vector<unsigned> h(100'000, 7);
  ctx.copy_to_host(h.data(), grown, h.size() * sizeof(unsigned));
  EXPECT_EQ(h, std::vector<unsigned>(100'000, 0u));
  EXPECT_EQ(ctx.zeroed_counters(5), grown);  // no reallocation when it is large enough
}

TEST(ContextHost, ZeroedCountersAreForCudaOnly) {
  context ctx(backend::host);
  EXPECT_THROW(ctx.zeroed_counters(4), usage_error);
}

TEST(CudaContext, BadLaunchBecomesATypedErrorNamingTheKernel) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  context ctx(backend::cuda);
  noop_kernel<<<1, 4096, 0, ctx.stream()>>>();  // more threads per block than any GPU allows
  try {
    SOAC_CHECK_LAUNCH("noop_kernel");
    FAIL();
  } catch (const cuda_error& e) {
    EXPECT_NE(std::string(e.what()).find("noop_kernel"), std::string::npos) << e.what();
  }
  ctx.synchronize();  // the context stays usable
}

}  // namespace
