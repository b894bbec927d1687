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

} // namespace
