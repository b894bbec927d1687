// GpuKernelsTest.cpp - GPU-only behaviour of launches. Every example kernel
// on the GPU against the interpreter is in kernels/CompiledKernelsTest.cpp
// (shared with the simulator).
#include "TestUtil.h"
#include "examples/kernels.h"
#include "runtime/CudaDriver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;
using namespace tegula::testing;

namespace {

TEST(GpuWithoutDriver, AskingForTheGpuSaysSo) {
  if (runtime::Driver::available())
    GTEST_SKIP() << "a CUDA driver is present; this test covers machines without one";
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  std::vector<float> x(16), y(16), out(16);
  try {
    k({.grid = {1}, .backend = Backend::GPU}, x, y, out, 16, 16);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no CUDA driver"));
  }
}

void asserts_positive(tl::ptr<float> x) {
  tl::tensor v = tl::load(x + tl::program_id(0) * 64 + tl::arange(0, 64));
  tl::device_assert(v > 0.0f, "x must be positive");
}

template <int STEP> void counted(tl::ptr<int32_t> out, tl::scalar<int32_t> lo, tl::scalar<int32_t> hi) {
  tl::tensor n = tl::zeros({}, tl::i32);
  for ([[maybe_unused]] auto i : tl::range(lo, hi, STEP, n))
    n = n + 1;
  tl::store(out, n);
}

/// A kernel that stops on purpose on the GPU: the trap ends the process's
/// CUDA context, so each case runs in a child process (a death test, which
/// re-runs this binary for it), whose error must carry the kernel's report
/// (runtime/DeviceErrorReport.h): where, why, which program and element.
TEST(GpuDeathTest, AKernelThatStopsSaysWhereAndWhy) {
  std::string why;
  if (!runtime::Driver::available(&why))
    GTEST_SKIP() << "no GPU: " << why;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto runOrSay = [](auto launch) {
    try {
      launch();
    } catch (const Error &e) {
      std::fprintf(stderr, "%s\n", e.what());
      std::fflush(stderr);
      std::_Exit(3);
    }
    std::_Exit(0);
  };
  auto k = kernel("asserts_positive", asserts_positive, {"x"});
  std::vector<float> x(4 * 64, 1.0f);
  x[2 * 64 + 17] = -1.0f; // program 2, element 17
  EXPECT_EXIT(runOrSay([&] { k({.grid = {4}, .backend = Backend::GPU}, x); }), ::testing::ExitedWithCode(3),
              "kernel 'asserts_positive' stopped: .*GpuKernelsTest.cpp:[0-9]+: device assertion failed: x must be "
              "positive \\(pid \\(2, 0, 0\\) idx \\(17\\)\\)");
  auto loop = kernel("counted", counted<1024>, {"out", "lo", "hi"});
  std::vector<int32_t> out(1);
  EXPECT_EXIT(runOrSay([&] { loop({.grid = {1}, .backend = Backend::GPU}, out, 2147483000, 2147483640 + 7); }),
              ::testing::ExitedWithCode(3),
              "kernel 'counted' stopped: .*GpuKernelsTest.cpp:[0-9]+: this loop's i32 counter would pass 2147483647 "
              "after its last iteration");
  // Without a failure the same kernels run.
  x[2 * 64 + 17] = 1.0f;
  EXPECT_EXIT(runOrSay([&] {
                k({.grid = {4}, .backend = Backend::GPU}, x);
                loop({.grid = {1}, .backend = Backend::GPU}, out, 0, 10000);
                if (out[0] != 10)
                  throw Error(fmt::format("the loop ran {} times, not 10", out[0]));
              }),
              ::testing::ExitedWithCode(0), "");
}

} // namespace
