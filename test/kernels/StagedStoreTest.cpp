// StagedStoreTest.cpp - the persistent warp-specialised GEMMs of
// benchmarks/gemm at 128x256 and 4 stages: their C block (f32/i32 for the
// 8-bit GEMMs, bf16 for the 16-bit one) leaves through TMA two 128-byte
// column blocks at a time (layout::tmaStoreStaging), so the rings' four
// stages and C fit in an H100's 227 KiB; ptxas finds no spills. (The
// simulator runs the staging in TmaSimTest; the GPU in the kernel tests and
// the benchmark.)
#include "TestUtil.h"
#include "examples/kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

using namespace tegula;
using namespace tegula::testing;

namespace {

int count(const std::string &text, const std::string &pattern) {
  const std::regex re(pattern);
  return int(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

void expectStagedFourStages(const char *what, const CompiledKernel &c, int blocks) {
  SCOPED_TRACE(what);
  EXPECT_EQ(c.producer_warps, 4);
  EXPECT_LE(c.shared_bytes + c.dynamic_shared_bytes, 227 * 1024);
  EXPECT_EQ(count(c.ptx, "cp\\.async\\.bulk\\.tensor\\.2d\\.global\\.shared::cta"), blocks);
  // Deferred across tiles: every block waits for the copy two blocks back.
  EXPECT_EQ(count(c.ptx, "cp\\.async\\.bulk\\.wait_group\\.read 1;"), blocks);
  if (!c.cubin.empty())
    EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
  std::printf("[tegula test] %s: %d registers, %d spill bytes, %d bytes of shared memory\n", what, c.registers,
              c.spill_bytes, c.shared_bytes + c.dynamic_shared_bytes);
}

TEST(StagedTmaStore, FourStagesOf128x256FitBesideTheCBlock) {
  const std::vector<std::string> tn = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"};
  const CompileOptions o{.chip = "sm_90a", .num_warps = 8, .num_stages = 4, .warp_specialize = true};
  std::vector<float8_e4m3> q(16);
  std::vector<float> f(16);
  auto fp8 = kernel("matmul_tn_persistent_fp8", examples::matmul_tn_persistent<float8_e4m3, float>, tn);
  expectStagedFourStages("fp8 128x256x128", fp8.compile({q, q, f, 4096, 4096, 4096, 128, 256, 128, 8}, o), 8);
  std::vector<int8_t> i8(16);
  std::vector<int32_t> i32(16);
  auto int8 = kernel("matmul_tn_persistent_i8", examples::matmul_tn_persistent<int8_t, int32_t>, tn);
  expectStagedFourStages("i8 128x256x128", int8.compile({i8, i8, i32, 4096, 4096, 4096, 128, 256, 128, 8}, o), 8);
  std::vector<bfloat16> h(16);
  auto bf16 = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>, tn);
  expectStagedFourStages("bf16 128x256x64", bf16.compile({h, h, h, 4096, 4096, 4096, 128, 256, 64, 8}, o), 4);
}

} // namespace
