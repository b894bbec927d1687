// DriverPathTest.cpp - the host half of GPU launches, against the recording
// fake driver (test/fakecuda): what the runtime hands cuLaunchKernel (each
// parameter's bytes, as the kernel's PTX/cubin declares them; tensor maps
// after them), staging of host buffers, the shared-memory opt-in, streams,
// and driver failures. No kernel runs here - these are not GPU tests; a hook
// plays the kernel where a test needs its effect.
#include "FakeDriverTest.h"
#include "TestUtil.h"
#include "examples/kernels.h"
#include "runtime/DeviceErrorReport.h"
#include "runtime/GpuLaunch.h"
#include "tegula/device.h"
#include "tegula/tegula.h"

#include <fmt/format.h>
#include <gmock/gmock.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

using namespace tegula;
using namespace tegula::testing;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
namespace fake = tegula::fakecuda;
using fake::paramAs;

namespace {

class DriverPath : public fake::FakeDriverTest {
protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    liveBefore_ = fake::tegula_fake_cuda_stats().liveAllocations;
  }
  void TearDown() override {
    FakeDriverTest::TearDown();
    EXPECT_EQ(fake::tegula_fake_cuda_stats().liveAllocations, liveBefore_) << "leaked device memory";
  }
  size_t liveBefore_ = 0;
};

/// Every scalar type a kernel can take, in one launch.
void scalars(tl::ptr<double> out, tl::scalar<bool> flag, tl::scalar<int8_t> i8,
             tl::scalar<int16_t> i16, tl::scalar<int32_t> i32, tl::scalar<int64_t> i64,
             tl::scalar<float> f32, tl::scalar<double> f64) {
  tl::tensor sum = flag.to(tl::f64) + i8.to(tl::f64) + i16.to(tl::f64) + i32.to(tl::f64) +
                   i64.to(tl::f64) + f32.to(tl::f64) + f64;
  tl::store(out, sum);
}

TEST_F(DriverPath, ScalarsArePackedAtTheSizesTheKernelDeclares) {
  auto k = kernel("scalars", scalars, {"out", "flag", "i8", "i16", "i32", "i64", "f32", "f64"});
  DeviceBuffer out(1, DType::f64);
  k({.grid = {3, 2, 1}, .num_warps = 2, .backend = Backend::GPU}, out, true, -7, -300, 123456,
    int64_t(1) << 40, 2.5, -0.125);
  auto launches = fake::tegula_fake_cuda_launches();
  ASSERT_EQ(launches.size(), 1u);
  const fake::Launch &l = launches[0];
  EXPECT_EQ(l.kernel, "scalars");
  EXPECT_EQ(l.grid[0], 3u);
  EXPECT_EQ(l.grid[1], 2u);
  EXPECT_EQ(l.block[0], 64u);
  ASSERT_EQ(l.params.size(), 8u);
  EXPECT_EQ(paramAs<uint64_t>(l, 0), out.device_ptr());
  EXPECT_EQ(l.params[1].size(), 1u);
  EXPECT_EQ(l.params[1][0], 1);
  EXPECT_EQ(paramAs<int8_t>(l, 2), -7);
  EXPECT_EQ(paramAs<int16_t>(l, 3), -300);
  EXPECT_EQ(paramAs<int32_t>(l, 4), 123456);
  EXPECT_EQ(paramAs<int64_t>(l, 5), int64_t(1) << 40);
  EXPECT_EQ(paramAs<float>(l, 6), 2.5f);
  EXPECT_EQ(paramAs<double>(l, 7), -0.125);
  // Device buffers only: the launch is asynchronous.
  EXPECT_EQ(fake::tegula_fake_cuda_stats().synchronizes, 0u);
}

/// The hook plays vector_add: out = x + y on the "device" copies.
void playVectorAdd(const fake::Launch &l) {
  const auto *x = reinterpret_cast<const float *>(paramAs<uint64_t>(l, 0));
  const auto *y = reinterpret_cast<const float *>(paramAs<uint64_t>(l, 1));
  auto *out = reinterpret_cast<float *>(paramAs<uint64_t>(l, 2));
  for (int i = 0; i < paramAs<int32_t>(l, 3); ++i)
    out[i] = x[i] + y[i];
}

TEST_F(DriverPath, HostBuffersAreStagedAndOnlyWrittenOnesCopiedBack) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  const int n = 1000;
  const std::vector<float> x = random_vector<float>(n), y = random_vector<float>(n);
  std::vector<float> out = poisoned<float>(n);
  fake::tegula_fake_cuda_on_launch(playVectorAdd);
  k({.grid = {1}, .backend = Backend::GPU}, x, y, out, n, 1024);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out[i], x[i] + y[i]) << i;
  fake::Stats s = fake::tegula_fake_cuda_stats();
  EXPECT_EQ(s.copiesToDevice, 3u); // x, y, out
  EXPECT_EQ(s.copiesToHost, 1u);   // out alone: x and y are const
  EXPECT_EQ(s.synchronizes, 1u);   // the wait before copying back
}

TEST_F(DriverPath, ADriverFailureNamesTheCallAndTheKernelAndFreesTheStagingCopies) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  std::vector<float> x(64), y(64), out(64);
  fake::tegula_fake_cuda_fail_next("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  try {
    k({.grid = {1}, .backend = Backend::GPU}, x, y, out, 64, 64);
    FAIL() << "the failed launch did not throw";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("cuLaunchKernel failed for kernel 'vector_add': "
                                    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources "
                                    "requested for launch)"));
  }
  // TearDown: the three staging copies were freed.
}

/// A kernel that trapped (a failed assert, a loop counter about to wrap)
/// surfaces as a sticky error with no word of why: the error says what it
/// means and where to look.
TEST_F(DriverPath, AKernelThatTrappedIsExplained) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  std::vector<float> x(64), y(64), out(64);
  for (CUresult fault : {CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_ILLEGAL_ADDRESS}) {
    fake::tegula_fake_cuda_fail_next("cuLaunchKernel", fault);
    const std::string err = tegula::testing::error_of([&] { k({.grid = {1}, .backend = Backend::GPU}, x, y, out, 64, 64); });
    EXPECT_THAT(err, HasSubstr("a kernel trapped or faulted"));
    EXPECT_THAT(err, HasSubstr("TEGULA_BACKEND=sim runs the same compiled code on the CPU and says where and why"));
  }
  fake::tegula_fake_cuda_fail_next("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_THAT(tegula::testing::error_of([&] { k({.grid = {1}, .backend = Backend::GPU}, x, y, out, 64, 64); }),
              ::testing::Not(HasSubstr("trapped")));
}

int g_assertLine = 0;
void asserts_in_range(tl::ptr<int32_t> idx, tl::scalar<int32_t> n) {
  tl::tensor i = tl::load(idx + tl::arange(0, 16));
  g_assertLine = __LINE__ + 1;
  tl::device_assert(i < n, "index in range");
}

/// A kernel that stops on purpose leaves a report in the record the runtime
/// gave its module (runtime/DeviceErrorReport.h): the fault that follows
/// says which site, program and element - here the fake plays the GPU's
/// part, writing the record where the module's tegula_error_report_<kernel> points.
TEST_F(DriverPath, AKernelThatStoppedSaysWhereAndWhy) {
  auto k = kernel("asserts_in_range", asserts_in_range, {"idx", "n"});
  const CompiledKernel compiled = k.compile({std::vector<int32_t>(16), 16}, {.chip = "sm_90a"});
  ASSERT_EQ(compiled.error_sites.size(), 1u);
  EXPECT_EQ(compiled.error_sites[0], fmt::format("{}:{}: device assertion failed: index in range", __FILE__,
                                                 g_assertLine));
  DeviceBuffer idx(16, DType::i32);
  k({.grid = {4}, .backend = Backend::GPU}, idx, 16); // loads the module: the record's address is in it
  auto *slot = static_cast<uint64_t *>(fake::tegula_fake_cuda_global("asserts_in_range", "tegula_error_report_asserts_in_range"));
  ASSERT_NE(slot, nullptr);
  ASSERT_NE(*slot, 0u) << "the runtime gave the module no record";
  auto *record = reinterpret_cast<runtime::DeviceErrorRecord *>(*slot);
  EXPECT_EQ(record->site, 0u);
  // Another kernel with a site gets a record of its own.
  auto other = kernel("asserts_in_range_too", asserts_in_range, {"idx", "n"});
  other({.grid = {1}, .backend = Backend::GPU}, idx, 16);
  auto *otherSlot =
      static_cast<uint64_t *>(fake::tegula_fake_cuda_global("asserts_in_range_too", "tegula_error_report_asserts_in_range_too"));
  ASSERT_NE(otherSlot, nullptr);
  EXPECT_NE(*otherSlot, *slot);
  // The GPU's part: program 2's thread claims the report, writes it and traps.
  record->program[0] = 2;
  record->rank = 1;
  record->index[0] = 5;
  record->site = 1;
  fake::tegula_fake_cuda_fail_next("cuCtxSynchronize", CUDA_ERROR_ILLEGAL_INSTRUCTION);
  std::vector<int32_t> host(16);
  const std::string err = tegula::testing::error_of([&] { k({.grid = {4}, .backend = Backend::GPU}, host, 16); });
  EXPECT_THAT(err, HasSubstr("this process's CUDA context is now unusable:\nkernel 'asserts_in_range' stopped: "));
  EXPECT_THAT(err, HasSubstr(fmt::format("{}:{}: device assertion failed: index in range (pid (2, 0, 0) idx (5))",
                                         __FILE__, g_assertLine)));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("TEGULA_BACKEND=sim")));
  // A site number the kernel does not list is said as such.
  record->site = 7;
  fake::tegula_fake_cuda_fail_next("cuCtxSynchronize", CUDA_ERROR_ILLEGAL_INSTRUCTION);
  EXPECT_THAT(tegula::testing::error_of([&] { k({.grid = {4}, .backend = Backend::GPU}, host, 16); }),
              HasSubstr("a stop at site 6, which its kernel does not list (pid (2, 0, 0) idx (5))"));
  record->site = 0; // nothing reported: this process's driver goes on (the fake's does)
}

TEST_F(DriverPath, AStreamIsPassedAndStagingCopiesLandBeforeTheKernelStarts) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  CUstream stream;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS); // the fake's, as torch's would be
  DeviceBuffer x(64, DType::f32), y(64, DType::f32), out(64, DType::f32);
  const uint64_t handle = reinterpret_cast<uint64_t>(stream);
  k({.grid = {1}, .backend = Backend::GPU, .stream = handle}, x, y, out, 64, 64);
  std::vector<float> hostOut(64);
  k({.grid = {1}, .backend = Backend::GPU, .stream = handle}, x, y, hostOut, 64, 64);
  auto launches = fake::tegula_fake_cuda_launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].stream, stream);
  EXPECT_EQ(launches[1].stream, stream);
  // The copy of hostOut ran on the default stream: a wait separates it from
  // a kernel on another stream.
  std::vector<std::string> calls = fake::tegula_fake_cuda_calls();
  auto launch = std::find(calls.begin(), calls.end(), "cuLaunchKernel");
  auto second = std::find(launch + 1, calls.end(), "cuLaunchKernel");
  ASSERT_NE(second, calls.end());
  EXPECT_NE(std::find(launch, second, "cuCtxSynchronize"), second)
      << "no wait between the staging copy and the launch on the caller's stream";
  EXPECT_EQ(std::find(calls.begin(), launch, "cuCtxSynchronize"), launch)
      << "a launch on device buffers waited";
  ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

/// tegula::Stream: launches on it are ordered with the default stream's only
/// by its waits (wait_for) and joins (join_into), through events.
TEST_F(DriverPath, AStreamOfOurOwnIsOrderedOnlyByItsWaitsAndJoins) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  DeviceBuffer x(64, DType::f32), y(64, DType::f32), out(64, DType::f32);
  fake::tegula_fake_cuda_reset();
  {
    Stream side;
    const LaunchOptions main{.grid = {1}, .backend = Backend::GPU};
    LaunchOptions beside = main;
    beside.stream = side.handle();
    k(main, x, y, out, 64, 64);   // default 1
    k(beside, x, y, out, 64, 64); // side 1: may run beside it
    side.wait_for(0);
    k(beside, x, y, out, 64, 64); // side 2: after default 1
    k(main, x, y, out, 64, 64);   // default 2: beside the side stream
    side.join_into(0);
    k(main, x, y, out, 64, 64);   // default 3: after side 1 and 2
    side.synchronize();
    const std::vector<fake::Launch> l = fake::tegula_fake_cuda_launches();
    ASSERT_EQ(l.size(), 5u);
    auto after = [](const fake::Launch &launch, CUstream other) {
      return launch.after.count(other) ? launch.after.at(other) : size_t(0);
    };
    const CUstream s = reinterpret_cast<CUstream>(side.handle());
    // The default stream's launches count from the driver's start (earlier
    // tests in this process launched there too): l[0] is its number l[0].seq.
    EXPECT_EQ(l[1].stream, s);
    EXPECT_LE(after(l[1], nullptr), l[0].seq);
    EXPECT_EQ(after(l[2], nullptr), l[0].seq + 1);
    EXPECT_EQ(after(l[3], s), 0u);
    EXPECT_EQ(after(l[4], s), 2u);
    const std::vector<std::string> calls = fake::tegula_fake_cuda_calls();
    EXPECT_EQ(std::count(calls.begin(), calls.end(), "cuStreamWaitEvent"), 2);
  }
  EXPECT_EQ(fake::tegula_fake_cuda_calls().back(), "cuStreamDestroy") << "the stream outlived its object";
}

/// profile_kernels: each launch between two events on its stream (the
/// launch stays asynchronous); kernel_profile() waits for them, sums them per
/// kernel (and ProfileLabel) and forgets them; a failed launch leaves no
/// record; off, launches record no events.
TEST_F(DriverPath, ProfiledLaunchesAreTimedPerKernel) {
  auto add = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  DeviceBuffer x(64, DType::f32), y(64, DType::f32), out(64, DType::f32);
  const LaunchOptions on{.grid = {1}, .backend = Backend::GPU};
  add(on, x, y, out, 64, 64); // loaded before profiling
  ASSERT_FALSE(profiling_kernels()) << "TEGULA_PROFILE is set for this test";
  profile_kernels(true);
  fake::tegula_fake_cuda_reset();
  add(on, x, y, out, 64, 64);
  add(on, x, y, out, 64, 64);
  std::vector<std::string> calls = fake::tegula_fake_cuda_calls();
  auto launch = std::find(calls.begin(), calls.end(), "cuLaunchKernel");
  ASSERT_NE(launch, calls.end());
  ASSERT_NE(launch, calls.begin());
  EXPECT_EQ(*(launch - 1), "cuEventRecord");
  ASSERT_NE(launch + 1, calls.end());
  EXPECT_EQ(*(launch + 1), "cuEventRecord");
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "cuCtxSynchronize"), 0) << "a profiled launch waited";
  fake::tegula_fake_cuda_fail_next("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_THROW(add(on, x, y, out, 64, 64), Error);
  std::vector<KernelProfile> profile = kernel_profile();
  ASSERT_EQ(profile.size(), 1u);
  EXPECT_EQ(profile[0].kernel, "vector_add");
  EXPECT_EQ(profile[0].label, "");
  EXPECT_EQ(profile[0].calls, 2);
  EXPECT_GE(profile[0].total_ms, 0.0);
  EXPECT_TRUE(kernel_profile().empty()) << "read twice";
  // Under a ProfileLabel, apart: the innermost label, the outer one back
  // when the inner ends, none after both.
  {
    const ProfileLabel outer("mlp.c_fc");
    add(on, x, y, out, 64, 64);
    {
      const ProfileLabel inner("lm_head");
      add(on, x, y, out, 64, 64);
      add(on, x, y, out, 64, 64);
    }
    add(on, x, y, out, 64, 64);
  }
  add(on, x, y, out, 64, 64);
  std::map<std::string, int> callsByLabel;
  for (const KernelProfile &k : kernel_profile()) {
    EXPECT_EQ(k.kernel, "vector_add");
    callsByLabel[k.label] += k.calls;
  }
  EXPECT_EQ(callsByLabel, (std::map<std::string, int>{{"", 1}, {"lm_head", 2}, {"mlp.c_fc", 2}}));
  profile_kernels(false);
  fake::tegula_fake_cuda_reset();
  add(on, x, y, out, 64, 64);
  calls = fake::tegula_fake_cuda_calls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "cuEventRecord"), 0);
  EXPECT_TRUE(kernel_profile().empty());
}

/// matmul_descriptors on the fake sm_90a: its TMA tensor maps follow the
/// kernel's own parameters, each encoded for its buffer, shape and box.
TEST_F(DriverPath, TensorMapsFollowTheParametersAndDescribeTheirBuffers) {
  ASSERT_EQ(device_info().chip, "sm_90a") << "TEGULA_FAKE_CUDA_ARCH changed the fake's device";
  auto k = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  const int M = 200, N = 256, K = 192, lda = 192, ldb = 256, ldc = 256;
  DeviceBuffer a(size_t(M) * lda, DType::bf16), b(size_t(K) * ldb, DType::bf16),
      c(size_t(M) * ldc, DType::bf16);
  for (bool ws : {false, true}) {
    SCOPED_TRACE(ws ? "warp specialised" : "one warpgroup");
    fake::tegula_fake_cuda_reset();
    k({.grid = {2, 2}, .num_warps = 4, .backend = Backend::GPU, .warp_specialize = ws}, a, b, c,
      M, N, K, lda, ldb, ldc, 128, 128, 64);
    auto launches = fake::tegula_fake_cuda_launches();
    ASSERT_EQ(launches.size(), 1u);
    const fake::Launch &l = launches[0];
    EXPECT_EQ(l.block[0], ws ? 256u : 128u) << "a producer warpgroup joins the 4 warps";
    // 128x64 + 64x128 bf16 per stage, 3 stages: above 48 KiB, opted in.
    EXPECT_GE(l.sharedBytes, 3u * (128 * 64 + 64 * 128) * 2);
    // After the 9 parameters: A's and B's ring maps (128-byte swizzle, one
    // box per stage's block) and C's for the store - nothing else (the
    // descriptors' own maps, which the rings replaced, are not passed).
    ASSERT_EQ(l.params.size(), 12u);
    std::map<uint64_t, fake::TensorMap> maps;
    for (size_t i = 9; i < l.params.size(); ++i) {
      fake::TensorMap map;
      ASSERT_EQ(l.params[i].size(), 128u);
      ASSERT_TRUE(fake::tegula_fake_cuda_decode_tensor_map(l.params[i].data(), &map)) << i;
      EXPECT_EQ(map.dtype, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
      EXPECT_EQ(map.rank, 2u);
      maps[map.address] = map;
    }
    ASSERT_EQ(maps.size(), 3u);
    auto expectMap = [&](const DeviceBuffer &buf, uint64_t rows, uint64_t cols, uint64_t ld,
                         unsigned boxRows, unsigned boxCols, CUtensorMapSwizzle swizzle) {
      ASSERT_TRUE(maps.count(buf.device_ptr()));
      const fake::TensorMap &m = maps[buf.device_ptr()];
      EXPECT_EQ(m.dims[0], cols);
      EXPECT_EQ(m.dims[1], rows);
      EXPECT_EQ(m.strides[0], ld * 2);
      EXPECT_EQ(m.box[0], boxCols);
      EXPECT_EQ(m.box[1], boxRows);
      EXPECT_EQ(m.swizzle, swizzle);
    };
    expectMap(a, M, K, lda, 128, 64, CU_TENSOR_MAP_SWIZZLE_128B);
    expectMap(b, K, N, ldb, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B); // 128-byte rows: two boxes a stage
    // C only stored through: staged swizzled, out in boxes of 64 columns.
    expectMap(c, M, N, ldc, 128, 64, CU_TENSOR_MAP_SWIZZLE_128B);
    std::vector<std::string> calls = fake::tegula_fake_cuda_calls();
    EXPECT_NE(std::find(calls.begin(), calls.end(), "cuFuncSetAttribute"), calls.end())
        << "more than 48 KiB of shared memory without the opt-in";
  }
  // The same buffers and shapes again: the tensor-map cache answers.
  fake::tegula_fake_cuda_reset();
  k({.grid = {2, 2}, .num_warps = 4, .backend = Backend::GPU}, a, b, c, M, N, K, lda, ldb, ldc,
    128, 128, 64);
  EXPECT_EQ(fake::tegula_fake_cuda_stats().encodes, 0u);
}

/// A tf32 GEMM with both operands through TMA (matmul_tn at tf32) on the
/// fake sm_90a: the operand rings' tensor maps are encoded as TFLOAT32 - TMA
/// rounds the f32 elements to tf32 as they land - and C's, only stored
/// through, stays FLOAT32.
TEST_F(DriverPath, Tf32OperandMapsRoundAsTheyLand) {
  ASSERT_EQ(device_info().chip, "sm_90a") << "TEGULA_FAKE_CUDA_ARCH changed the fake's device";
  auto k = kernel("matmul_tn_tf32", examples::matmul_tn<float, float, tl::precision::tf32>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  const int M = 256, N = 128, K = 96;
  DeviceBuffer a(size_t(M) * K, DType::f32), b(size_t(N) * K, DType::f32), c(size_t(M) * N, DType::f32);
  fake::tegula_fake_cuda_reset();
  k({.grid = {2, 1}, .num_warps = 4, .backend = Backend::GPU}, a, b, c, M, N, K, 128, 128, 32);
  auto launches = fake::tegula_fake_cuda_launches();
  ASSERT_EQ(launches.size(), 1u);
  std::map<uint64_t, CUtensorMapDataType> types;
  for (const auto &param : launches[0].params) {
    fake::TensorMap map;
    if (param.size() == 128 && fake::tegula_fake_cuda_decode_tensor_map(param.data(), &map))
      types[map.address] = map.dtype;
  }
  ASSERT_TRUE(types.count(a.device_ptr()) && types.count(b.device_ptr()));
  EXPECT_EQ(types[a.device_ptr()], CU_TENSOR_MAP_DATA_TYPE_TFLOAT32);
  EXPECT_EQ(types[b.device_ptr()], CU_TENSOR_MAP_DATA_TYPE_TFLOAT32);
  if (types.count(c.device_ptr()))
    EXPECT_EQ(types[c.device_ptr()], CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
}

/// Ping-pong (two programs per CTA): the launch runs ceil(grid.x / 2) CTAs
/// of 2 x 4 + 4 warps and passes the launch's grid.x as the hidden last
/// parameter (the kernel's num_programs(0)), after the tensor maps.
TEST_F(DriverPath, PingPongLaunchesHalfTheCtasAndPassesTheProgramCount) {
  ASSERT_EQ(device_info().chip, "sm_90a") << "TEGULA_FAKE_CUDA_ARCH changed the fake's device";
  auto k = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  const int M = 384, N = 256, K = 128;
  DeviceBuffer a(size_t(M) * K, DType::bf16), b(size_t(K) * N, DType::bf16), c(size_t(M) * N, DType::bf16);
  for (uint32_t programs : {1u, 5u, 6u}) {
    SCOPED_TRACE(std::to_string(programs) + " programs");
    fake::tegula_fake_cuda_reset();
    k({.grid = {programs}, .num_warps = 4, .num_stages = 4, .backend = Backend::GPU, .ping_pong = true}, a,
      b, c, M, N, K, 128, 128, 64, 8);
    auto launches = fake::tegula_fake_cuda_launches();
    ASSERT_EQ(launches.size(), 1u);
    const fake::Launch &l = launches[0];
    EXPECT_EQ(l.grid[0], (programs + 1) / 2);
    EXPECT_EQ(l.grid[1], 1u);
    EXPECT_EQ(l.block[0], 384u) << "two consumer warpgroups and a producer";
    // Stages of 128x64 + 64x128 bf16 shared by both programs, and each
    // program's own epilogue block: far above 48 KiB, opted in.
    EXPECT_GE(l.sharedBytes, 4u * (128 * 64 + 64 * 128) * 2);
    EXPECT_LE(l.sharedBytes, 227u * 1024);
    // a, b, c, M, N, K; A's, B's and C's maps; then the program count.
    ASSERT_EQ(l.params.size(), 10u);
    EXPECT_EQ(paramAs<int32_t>(l, 3), M);
    EXPECT_EQ(paramAs<int32_t>(l, 9), int32_t(programs)) << "num_programs(0) is the launch's, not the CTAs'";
    for (size_t i = 6; i < 9; ++i) {
      fake::TensorMap map;
      EXPECT_TRUE(fake::tegula_fake_cuda_decode_tensor_map(l.params[i].data(), &map)) << i;
    }
  }
}

/// max_resident_programs asks the driver what fits at once, as the launch
/// would compile and load the kernel: CTAs per SM times SMs, whole clusters
/// only in clusters (the fake's GPCs of 18 SMs leave 2 SMs of each idle for
/// clusters of 4), two programs a CTA with ping-pong; other backends refuse.
TEST_F(DriverPath, MaxResidentProgramsCountsWhatTheDriverFitsAtOnce) {
  ASSERT_EQ(device_info().chip, "sm_90a") << "TEGULA_FAKE_CUDA_ARCH changed the fake's device";
  auto add = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  DeviceBuffer x(1024, DType::f32), y(1024, DType::f32), out(1024, DType::f32);
  // 4 warps, 32 registers, no shared memory: 16 CTAs an SM (threads, registers).
  EXPECT_EQ(add.max_resident_programs({.num_warps = 4, .backend = Backend::GPU}, x, y, out, 1024, 1024), 16 * 132);
  EXPECT_THAT([&] { add.max_resident_programs({.backend = Backend::Interp}, x, y, out, 1024, 1024); },
              ThrowsMessage<Error>(HasSubstr("max_resident_programs asks the CUDA driver")));

  auto cluster = kernel("matmul_persistent_cluster", examples::matmul_persistent_cluster<bfloat16>,
                        {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  const int M = 512, N = 256, K = 128;
  DeviceBuffer a(size_t(M) * K, DType::bf16), b(size_t(K) * N, DType::bf16), c(size_t(M) * N, DType::bf16);
  const LaunchOptions ws{.num_warps = 8, .num_stages = 4, .backend = Backend::GPU, .warp_specialize = true};
  // One CTA an SM (over 200 KiB of shared memory each).
  EXPECT_EQ(cluster.max_resident_programs(ws, a, b, c, M, N, K, 128, 256, 64, 8), 132);
  LaunchOptions pairs = ws, fours = ws;
  pairs.cluster_size = 2;
  fours.cluster_size = 4;
  EXPECT_EQ(cluster.max_resident_programs(pairs, a, b, c, M, N, K, 128, 256, 64, 8), 132);
  EXPECT_EQ(cluster.max_resident_programs(fours, a, b, c, M, N, K, 128, 256, 64, 8), 4 * (7 * 4 + 1));

  auto pingPong = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
                         {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  EXPECT_EQ(pingPong.max_resident_programs({.num_warps = 4, .num_stages = 2, .backend = Backend::GPU, .ping_pong = true},
                                           a, b, c, M, N, K, 128, 128, 64, 8),
            2 * 132);
}

/// A warp-specialised kernel at 8 + 4 warps moves registers between its
/// warpgroups within a pool of 384 x its .maxnreg (168): the cubin ptxas
/// built has exactly that many and launches; a function given another count
/// (another ptxas, the driver's JIT) is refused when it loads, naming the
/// kernel and both counts - on a GPU its consumers would wait forever.
TEST_F(DriverPath, AWarpSpecializedKernelNeedsTheRegisterCountItWasSizedFor) {
  auto k = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  const int M = 128, N = 256, K = 128;
  DeviceBuffer a(size_t(M) * K, DType::bf16), b(size_t(K) * N, DType::bf16), c(size_t(M) * N, DType::bf16);
  const LaunchOptions opts{.grid = {1, 1}, .num_warps = 8, .num_stages = 3, .backend = Backend::GPU,
                           .warp_specialize = true};
  struct Restore {
    ~Restore() { fake::tegula_fake_cuda_allocate_registers(0); }
  } restore;
  fake::tegula_fake_cuda_allocate_registers(160);
  EXPECT_THAT(error_of([&] { k(opts, a, b, c, M, N, K, K, N, N, 128, 256, 64); }),
              AllOf(HasSubstr("kernel 'matmul_descriptors' moves registers between its warpgroups (setmaxnreg) in "
                              "a pool of 168 registers a thread"),
                    HasSubstr("was given 160")));
  fake::tegula_fake_cuda_allocate_registers(0);
  fake::tegula_fake_cuda_reset();
  k(opts, a, b, c, M, N, K, K, N, N, 128, 256, 64);
  ASSERT_EQ(fake::tegula_fake_cuda_launches().size(), 1u);
  EXPECT_EQ(fake::tegula_fake_cuda_launches()[0].block[0], 384u);
}

/// The TEGULA_* switches are read at every launch (one pass over the
/// environment), so a program may change them between launches; a longer
/// name that starts like one is not it.
TEST_F(DriverPath, EnvironmentSwitchesAreReadAtEveryLaunch) {
  struct Restore {
    ~Restore() {
      unsetenv("TEGULA_BACKEND");
      unsetenv("TEGULA_BACKEND_X");
      unsetenv("TEGULA_WGMMA");
    }
  } restore;
  auto add = kernel("vector_add_env", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  std::vector<float> x(100, 1.0f), y(100, 2.0f), out(100, 0.0f);
  auto launches = [] { return fake::tegula_fake_cuda_launches().size(); };
  setenv("TEGULA_BACKEND", "gpu", 1);
  add({.grid = {1}}, x, y, out, 100, 128);
  EXPECT_EQ(launches(), 1u) << "TEGULA_BACKEND=gpu";
  setenv("TEGULA_BACKEND", "interp", 1);
  add({.grid = {1}}, x, y, out, 100, 128);
  EXPECT_EQ(launches(), 1u) << "TEGULA_BACKEND=interp ran on the driver";
  EXPECT_EQ(out[99], 3.0f);
  unsetenv("TEGULA_BACKEND");
  setenv("TEGULA_BACKEND_X", "gpu", 1);
  add({.grid = {1}}, x, y, out, 100, 128);
  EXPECT_EQ(launches(), 1u) << "TEGULA_BACKEND_X was taken for TEGULA_BACKEND";
  setenv("TEGULA_BACKEND", "nonsense", 1);
  try {
    add({.grid = {1}}, x, y, out, 100, 128);
    ADD_FAILURE() << "TEGULA_BACKEND=nonsense was accepted";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("TEGULA_BACKEND=nonsense: unknown backend 'nonsense'; available: interp, gpu (or cuda), sim"));
  }
  unsetenv("TEGULA_BACKEND");

  // TEGULA_WGMMA=0 between two launches of a Hopper GEMM: a second module
  // (mma.sync code) is loaded; back to wgmma, the first one is reused.
  ASSERT_EQ(device_info().chip, "sm_90a");
  auto mm = kernel("matmul_env", examples::matmul<bfloat16>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  DeviceBuffer a(128 * 128, DType::bf16), b(128 * 128, DType::bf16), c(128 * 128, DType::bf16);
  auto loads = [] {
    std::vector<std::string> calls = fake::tegula_fake_cuda_calls();
    return std::count_if(calls.begin(), calls.end(),
                         [](const std::string &c) { return c.rfind("cuModuleLoad", 0) == 0; });
  };
  const LaunchOptions gpu{.grid = {1, 1}, .num_warps = 4, .backend = Backend::GPU};
  fake::tegula_fake_cuda_reset();
  mm(gpu, a, b, c, 128, 128, 128, 128, 128, 64);
  EXPECT_EQ(loads(), 1);
  setenv("TEGULA_WGMMA", "0", 1);
  mm(gpu, a, b, c, 128, 128, 128, 128, 128, 64);
  EXPECT_EQ(loads(), 2) << "TEGULA_WGMMA=0 reused the wgmma kernel";
  unsetenv("TEGULA_WGMMA");
  mm(gpu, a, b, c, 128, 128, 128, 128, 128, 64);
  EXPECT_EQ(loads(), 2);
}

/// A cubin the driver refuses (built for another GPU) is loaded from its
/// PTX through the driver's JIT; a JIT failure carries the driver's log.
TEST_F(DriverPath, ARefusedCubinLoadsFromItsPtxAndAJitFailureCarriesTheLog) {
  auto k = kernel("vector_add_jit", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  std::vector<float> x(64);
  CompiledKernel c = k.compile({x, x, x, 64, 64}, {.chip = "sm_90a", .num_warps = 1});
  if (c.cubin.empty())
    GTEST_SKIP() << "no ptxas here: no cubin to refuse";
  fake::tegula_fake_cuda_fail_next("cuModuleLoadData", CUDA_ERROR_NO_BINARY_FOR_GPU);
  ::testing::internal::CaptureStderr();
  auto loaded = runtime::LoadedKernel::load(c.cubin, c.ptx, "vector_add_jit");
  const std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(loaded->function(), nullptr);
  EXPECT_THAT(said, HasSubstr("kernel 'vector_add_jit': the driver refused its cubin: CUDA_ERROR_NO_BINARY_FOR_GPU"));
  // PTX for a newer GPU than the fake's sm_90.
  std::string newer = c.ptx;
  newer.replace(newer.find(".target sm_90a"), 14, ".target sm_120a");
  try {
    runtime::LoadedKernel::load({}, newer, "vector_add_jit");
    ADD_FAILURE() << "the JIT took PTX for sm_120a";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("cuModuleLoadDataEx failed for kernel 'vector_add_jit': CUDA_ERROR_INVALID_PTX"));
    EXPECT_THAT(e.what(), HasSubstr("the JIT says:\nptxas application ptx input"));
  }
}

/// What the fake reads from a cubin (ELF .nv.info) and from PTX agree: the
/// same parameter sizes and thread limit for the same kernel.
TEST_F(DriverPath, TheFakeReadsCubinsAndPtxAlike) {
  auto k = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  std::vector<bfloat16> x(256 * 256);
  CompiledKernel c = k.compile({x, x, x, 256, 256, 256, 256, 256, 256, 128, 128, 64},
                               {.chip = "sm_90a", .num_warps = 4, .warp_specialize = true});
  if (c.cubin.empty())
    GTEST_SKIP() << "no ptxas here: no cubin to read";
  std::vector<fake::Signature> read;
  for (const void *image : {static_cast<const void *>(c.cubin.data()),
                            static_cast<const void *>(c.ptx.c_str())}) {
    CUmodule module;
    CUfunction fn;
    ASSERT_EQ(cuModuleLoadData(&module, image), CUDA_SUCCESS);
    EXPECT_EQ(cuModuleGetFunction(&fn, module, "nope"), CUDA_ERROR_NOT_FOUND);
    ASSERT_EQ(cuModuleGetFunction(&fn, module, "matmul_descriptors"), CUDA_SUCCESS);
    read.push_back(fake::tegula_fake_cuda_signature(fn));
    // More threads than .maxntid (4 + 4 warps) is refused.
    std::vector<std::array<char, 128>> storage(read.back().bytes.size());
    std::vector<void *> params;
    for (auto &s : storage)
      params.push_back(s.data());
    EXPECT_EQ(cuLaunchKernel(fn, 1, 1, 1, 512, 1, 1, 0, nullptr, params.data(), nullptr),
              CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  }
  const fake::Signature &cubin = read[0], &ptx = read[1];
  EXPECT_EQ(cubin.bytes, ptx.bytes);
  EXPECT_EQ(cubin.pointer, ptx.pointer);
  for (int d = 0; d < 3; ++d)
    EXPECT_EQ(cubin.maxThreads[d], ptx.maxThreads[d]);
  EXPECT_EQ(ptx.maxThreads[0], 256u);
  EXPECT_EQ(cubin.registers, c.registers) << "the cubin's REGCOUNT, as ptxas reported it";
  EXPECT_EQ(ptx.registers, 32) << "no .maxnreg: the fake's stand-in for a JIT's choice";
  ASSERT_GE(ptx.bytes.size(), 11u); // 3 pointers, 6 integers, the tensor maps
  for (size_t i = 0; i < ptx.bytes.size(); ++i)
    EXPECT_EQ(ptx.bytes[i], i < 3 ? 8u : i < 9 ? 4u : 128u) << i;
  for (size_t i = 0; i < ptx.pointer.size(); ++i)
    EXPECT_EQ(ptx.pointer[i], i < 3) << i;
}

} // namespace
