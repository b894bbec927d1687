// HopperKernelsTest.cpp - dots on Hopper's warpgroup MMA (chip sm_90a:
// wgmma.mma_async reading swizzled shared memory through matrix
// descriptors), run in the CTA simulator - which models wgmma's
// asynchrony, its descriptors and swizzles from the PTX ISA - and on an
// sm_90a GPU when one is present, against the interpreter on fresh random
// inputs with ragged shapes. Without such a GPU those cases skip with the
// reason.
#include "TestUtil.h"
#include "TestKernels.h"
#include "examples/kernels.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuLaunch.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <regex>

#include <fmt/format.h>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

struct Target {
  Backend backend;
  int warps;
};
void PrintTo(const Target &t, std::ostream *os) {
  *os << (t.backend == Backend::GPU ? "gpu" : "sim") << ", " << t.warps << " warps";
}

class Hopper : public ::testing::TestWithParam<Target> {
protected:
  void SetUp() override {
    if (GetParam().backend != Backend::GPU)
      return;
    std::string why;
    if (!runtime::Driver::available(&why))
      GTEST_SKIP() << "no GPU: " << why;
    if (std::string chip = runtime::currentDevice().chip(); chip != "sm_90a")
      GTEST_SKIP() << "wgmma needs an sm_90a GPU; this one is " << chip;
  }
  LaunchOptions target(Grid g) const {
    return {.grid = g, .num_warps = GetParam().warps, .backend = GetParam().backend, .chip = "sm_90a"};
  }
  static LaunchOptions interp(Grid g) { return {.grid = g, .backend = Backend::Interp}; }
};

struct Shape {
  int M, N, K, BM, BN, BK;
};

template <class T> void checkMatmul(const LaunchOptions &target, const std::vector<Shape> &shapes) {
  auto k = kernel("matmul_wgmma", examples::matmul<T>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  for (Shape s : shapes) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}, {} warps", s.M, s.N, s.K, s.BM, s.BN,
                             s.BK, target.num_warps));
    auto a = random_vector<T>(size_t(s.M * s.K)), b = random_vector<T>(size_t(s.K * s.N));
    auto want = poisoned<T>(size_t(s.M * s.N)), got = poisoned<T>(size_t(s.M * s.N));
    Grid g{uint32_t(cdiv(s.M, s.BM)), uint32_t(cdiv(s.N, s.BN))};
    LaunchOptions ti{.grid = g, .backend = Backend::Interp}, tt = target;
    tt.grid = g;
    k(ti, a, b, want, s.M, s.N, s.K, s.BM, s.BN, s.BK);
    k(tt, a, b, got, s.M, s.N, s.K, s.BM, s.BN, s.BK);
    // f32 sums in another order; the stored 16-bit results differ by an ulp at most.
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<T>());
  }
}

/// Tiles with whole warpgroups along M (BM = 64 per 4 warps), N from one
/// m64n32 instruction to m64n256, K of one to four k16 steps; ragged
/// shapes need the masked loads' zero fill.
std::vector<Shape> shapesFor(int warps) {
  if (warps == 4)
    return {{65, 33, 40, 64, 32, 16}, {100, 72, 96, 64, 64, 32}, {130, 130, 70, 128, 128, 64},
            {64, 256, 32, 64, 256, 16}};
  // Two m64 tiles per warpgroup (BM = 256), and m64n256 instructions.
  return {{130, 70, 40, 128, 64, 32}, {129, 128, 64, 128, 128, 32}, {260, 64, 48, 256, 64, 16},
          {128, 256, 32, 128, 256, 32}};
}

TEST_P(Hopper, MatmulBf16) { checkMatmul<bfloat16>(target({1}), shapesFor(GetParam().warps)); }
TEST_P(Hopper, MatmulF16) { checkMatmul<float16>(target({1}), shapesFor(GetParam().warps)); }

/// f32 at tf32 precision: m64nNk8 with both operands K-major (the TN
/// layout, through tensor descriptors: TMA rings whose tensor maps round to
/// tf32 as the copies land, as the interpreter rounds), so only the order of the
/// sums differs. A row-major B - loaded along N, where wgmma reads tf32
/// K-major only - comes through a K-major cp.async ring filled 4 bytes a
/// copy.
TEST_P(Hopper, MatmulTf32) {
  const std::vector<std::string> names = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"};
  auto tn = kernel("matmul_wgmma_tf32_tn", examples::matmul_tn<float, float, tl::precision::tf32>, names);
  auto nn = kernel("matmul_tf32_nn", examples::matmul<float, tl::precision::tf32>, names);
  const int BM = 16 * GetParam().warps;
  for (Shape s : {Shape{BM + 5, 72, 40, BM, 64, 16}, Shape{2 * BM, 128, 64, BM, 128, 32}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}", s.M, s.N, s.K, s.BM, s.BN, s.BK));
    Grid g{uint32_t(cdiv(s.M, s.BM)), uint32_t(cdiv(s.N, s.BN))};
    for (const Kernel *k : {&tn, &nn}) { // B [N, K] for TN, [K, N] for NN: as many elements
      auto a = random_vector<float>(size_t(s.M * s.K)), b = random_vector<float>(size_t(s.K * s.N));
      auto want = poisoned<float>(size_t(s.M * s.N)), got = poisoned<float>(size_t(s.M * s.N));
      (*k)(interp(g), a, b, want, s.M, s.N, s.K, s.BM, s.BN, s.BK);
      (*k)(target(g), a, b, got, s.M, s.N, s.K, s.BM, s.BN, s.BK);
      EXPECT_LT(rel_error(got, to_double(want)), 1e-5) << k->name();
    }
  }
  std::vector<float> x(128 * 128);
  const CompileOptions hopper{.chip = "sm_90a", .assemble = false};
  std::string ptx = tn.compile({x, x, x, 128, 128, 128, 64, 64, 32}, hopper).ptx;
  EXPECT_THAT(ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"));
  EXPECT_THAT(ptx, HasSubstr("cp.async.bulk.tensor"));
  EXPECT_THAT(ptx, Not(HasSubstr("mma.sync")));
  ptx = nn.compile({x, x, x, 128, 128, 128, 64, 64, 32}, hopper).ptx;
  EXPECT_THAT(ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"));
  EXPECT_THAT(ptx, HasSubstr("cp.async.cg.shared.global")); // A, K-major
  EXPECT_THAT(ptx, HasSubstr("cp.async.ca.shared.global"));  // B, an element a copy
  EXPECT_THAT(ptx, Not(HasSubstr("mma.sync")));
}

/// Operands contiguous along M (A) or along K (B): wgmma's transposed
/// (MN-major) A and its K-major B.
TEST_P(Hopper, MatmulTransposedOperands) {
  auto k = kernel("matmul_wgmma_tt", matmul_transposed_operands<bfloat16>,
                  {"at", "bt", "c", "M", "N", "K", "BM", "BN", "BK"});
  const int warps = GetParam().warps;
  for (Shape s : {Shape{70 * warps / 4, 40, 48, 16 * warps, 64, 16},
                  Shape{32 * warps, 128, 64, 16 * warps, 128, 64}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}", s.M, s.N, s.K, s.BM, s.BN, s.BK));
    auto a = random_vector<bfloat16>(size_t(s.K * s.M)), b = random_vector<bfloat16>(size_t(s.N * s.K));
    auto want = poisoned<bfloat16>(size_t(s.M * s.N)), got = poisoned<bfloat16>(size_t(s.M * s.N));
    Grid g{uint32_t(cdiv(s.M, s.BM)), uint32_t(cdiv(s.N, s.BN))};
    k(interp(g), a, b, want, s.M, s.N, s.K, s.BM, s.BN, s.BK);
    k(target(g), a, b, got, s.M, s.N, s.K, s.BM, s.BN, s.BK);
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
  }
}

/// Flash attention: Q K^T and P V are chained wgmmas - Q (loop-invariant)
/// and P (the first accumulator, cast to 16 bits) come from registers,
/// K^T and V from shared memory.
TEST_P(Hopper, AttentionForward) {
  auto k = kernel("attention_fwd_wgmma", examples::attention_fwd<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
  const int warps = GetParam().warps, heads = 2, BM = 16 * warps;
  struct Config { int dim, bn; };
  for (Config c : {Config{32, 32}, Config{64, 64}})
    for (bool causal : {false, true})
      for (int seq : {40, 130}) {
        SCOPED_TRACE(fmt::format("d={} BN={} T={} causal={}", c.dim, c.bn, seq, causal));
        const size_t n = size_t(heads * seq * c.dim);
        auto q = random_vector<bfloat16>(n), kk = random_vector<bfloat16>(n), v = random_vector<bfloat16>(n);
        auto want = poisoned<bfloat16>(n), got = poisoned<bfloat16>(n);
        const float scale = 1.0f / std::sqrt(float(c.dim));
        Grid g{uint32_t(cdiv(seq, BM)), uint32_t(heads)};
        k(interp(g), q, kk, v, want, seq, scale, c.dim, BM, c.bn, causal);
        k(target(g), q, kk, v, got, seq, scale, c.dim, BM, c.bn, causal);
        EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
      }
}

/// The persistent GEMM (a tile loop around the pipelined K loop) on wgmma.
TEST_P(Hopper, MatmulPersistent) {
  auto k = kernel("matmul_persistent_wgmma", examples::matmul_persistent<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  const int BM = 16 * GetParam().warps;
  for (Shape s : {Shape{200, 130, 70, BM, 64, 32}, Shape{3 * BM, 256, 64, BM, 128, 64}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}", s.M, s.N, s.K, s.BM, s.BN, s.BK));
    auto a = random_vector<bfloat16>(size_t(s.M * s.K)), b = random_vector<bfloat16>(size_t(s.K * s.N));
    auto want = poisoned<bfloat16>(size_t(s.M * s.N)), got = poisoned<bfloat16>(size_t(s.M * s.N));
    k(interp({3}), a, b, want, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2);
    k(target({3}), a, b, got, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2);
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
  }
}

/// Operands loaded transposed (`a_t.trans()`, `b_t.trans()`) are pipelined
/// too: the rings hold the tiles as loaded, the dot reads them transposed -
/// ldmatrix on mma.sync, the other major of the descriptors on wgmma.
TEST(HopperPtx, TransposedOperandsArePipelined) {
  auto k = kernel("matmul_tt_pipelined", matmul_transposed_operands<bfloat16>,
                  {"at", "bt", "c", "M", "N", "K", "BM", "BN", "BK"});
  std::vector<bfloat16> x(256 * 256);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    std::string ptx =
        k.compile({x, x, x, 256, 256, 256, 64, 128, 64}, {.chip = chip, .num_stages = 3, .assemble = false}).ptx;
    EXPECT_THAT(ptx, HasSubstr("cp.async.cg.shared.global"));
    EXPECT_THAT(ptx, HasSubstr(std::string(chip) == "sm_90a" ? "wgmma.mma_async" : "ldmatrix"));
  }
}

std::string targetName(const ::testing::TestParamInfo<Target> &info) {
  return fmt::format("{}_w{}", info.param.backend == Backend::GPU ? "gpu" : "sim", info.param.warps);
}
INSTANTIATE_TEST_SUITE_P(Sim, Hopper,
                         ::testing::Values(Target{Backend::Sim, 4}, Target{Backend::Sim, 8}),
                         targetName);
INSTANTIATE_TEST_SUITE_P(Gpu, Hopper,
                         ::testing::Values(Target{Backend::GPU, 4}, Target{Backend::GPU, 8}),
                         targetName);

//===----------------------------------------------------------------------===//
// What the compiler emits for sm_90a (no GPU needed)
//===----------------------------------------------------------------------===//

TEST(HopperPtx, DotsUseWgmmaAndFenceTheAsyncProxy) {
  auto k = kernel("matmul_wgmma_ptx", examples::matmul<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  std::vector<bfloat16> x(128 * 128);
  std::string ptx = k.compile({x, x, x, 128, 128, 128, 128, 128, 32},
                              {.chip = "sm_90a", .num_stages = 1, .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr(".target sm_90a"));
  EXPECT_THAT(ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
  EXPECT_THAT(ptx, HasSubstr("wgmma.fence.sync.aligned"));
  EXPECT_THAT(ptx, HasSubstr("wgmma.commit_group.sync.aligned"));
  EXPECT_THAT(ptx, HasSubstr("wgmma.wait_group.sync.aligned 0"));
  EXPECT_THAT(ptx, HasSubstr("fence.proxy.async.shared::cta"));
  EXPECT_THAT(ptx, Not(HasSubstr("mma.sync")));
  EXPECT_THAT(ptx, Not(HasSubstr("ldmatrix")));
  // The same kernel for sm_80 stays on mma.sync.
  ptx = k.compile({x, x, x, 128, 128, 128, 128, 128, 32}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("mma.sync.aligned.m16n8k16"));
  EXPECT_THAT(ptx, Not(HasSubstr("wgmma.mma_async")));
}

TEST(HopperPtx, AttentionChainsWgmmaWithAFromRegisters) {
  auto k = kernel("attention_fwd_wgmma_ptx", examples::attention_fwd<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
  std::vector<bfloat16> x(128 * 64);
  CompiledKernel out = k.compile({x, x, x, x, 128, 0.125f, 64, 64, 64, true},
                                 {.chip = "sm_90a", .num_warps = 4});
  EXPECT_THAT(out.ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"));
  EXPECT_THAT(out.ptx, Not(HasSubstr("mma.sync")));
  // K and V (B operands; A is Q or P, in registers) come through cp.async rings.
  EXPECT_THAT(out.ptx, HasSubstr("cp.async.cg.shared.global"));
  std::string ampere = k.compile({x, x, x, x, 128, 0.125f, 64, 64, 64, true},
                                 {.chip = "sm_80", .num_warps = 4, .assemble = false}).ptx;
  EXPECT_THAT(ampere, HasSubstr("cp.async.cg.shared.global"));
  EXPECT_THAT(ampere, HasSubstr("mma.sync"));
  if (!out.cubin.empty())
    EXPECT_EQ(out.spill_bytes, 0) << out.ptxas_log;
  std::printf("[ptxas sm_90a] attention d=64 64x64 w4: %d registers, %d B spills\n", out.registers,
              out.spill_bytes);
}

/// ptxas accepts the wgmma code for sm_90a, without spills, at the tile
/// sizes the tensor-core issue ships.
TEST(HopperPtx, PtxasAssemblesWithoutSpills) {
  const char *home = std::getenv("CUDA_HOME");
  if (!std::filesystem::exists(std::string(home ? home : "/usr/local/cuda") + "/bin/ptxas"))
    GTEST_SKIP() << "ptxas not found (set TEGULA_PTXAS or install the CUDA toolkit)";
  auto k = kernel("matmul_wgmma_ptxas", examples::matmul<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  std::vector<bfloat16> x(256 * 256);
  struct Config { int BM, BN, BK, warps; };
  for (Config c : {Config{128, 128, 32, 4}, Config{128, 256, 64, 8}})
    for (int stages : {1, 3}) {
      SCOPED_TRACE(fmt::format("{}x{}x{}, {} warps, {} stages", c.BM, c.BN, c.BK, c.warps, stages));
      CompiledKernel out = k.compile({x, x, x, 256, 256, 256, c.BM, c.BN, c.BK},
                                     {.chip = "sm_90a", .num_warps = c.warps, .num_stages = stages});
      EXPECT_FALSE(out.cubin.empty()) << out.ptxas_log;
      EXPECT_EQ(out.spill_bytes, 0) << out.ptxas_log;
      EXPECT_THAT(out.ptxas_log, Not(HasSubstr("(C75"))) << "ptxas repaired the wgmma fences";
      EXPECT_THAT(out.ptx, HasSubstr("wgmma.mma_async"));
      if (stages > 1)
        EXPECT_THAT(out.ptx, HasSubstr("cp.async.cg.shared.global"));
      if (out.ptxas_log.find("warning") != std::string::npos)
        std::printf("%s\n", out.ptxas_log.c_str());
      std::printf("[ptxas sm_90a] %dx%dx%d w%d s%d: %d registers, %d B shared, %d B spills\n", c.BM,
                  c.BN, c.BK, c.warps, stages, out.registers, out.shared_bytes + out.dynamic_shared_bytes,
                  out.spill_bytes);
    }
}

/// A bf16 GEMM with what stops a kernel on purpose: an assertion on its
/// arguments, a K loop whose step is known only at launch (checked positive
/// where the loop starts) and a counter a huge K could wrap. `print` adds
/// a tl::print, which is a call (vprintf).
template <bool print>
void checked_matmul(tl::ptr<bfloat16> a, tl::ptr<bfloat16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                    tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::scalar<int32_t> k_step) {
  constexpr int BM = 128, BN = 128, BK = 32;
  tl::device_assert(k_step == BK, "k_step is the tile's K");
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, k_step, acc)) {
    tl::tensor ka = k + rk;
    tl::tensor a_tile = tl::load(a + rm.expand_dims(1) * K + ka.expand_dims(0),
                                 (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f);
    tl::tensor b_tile = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                                 (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f);
    acc = tl::dot(a_tile, b_tile, acc);
  }
  if constexpr (print)
    tl::print("K =", {K});
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc,
            (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

/// A kernel that stops on purpose leaves a report (runtime/DeviceErrorReport.h)
/// instead of printing: no call, so ptxas keeps its wgmmas asynchronous
/// (with vprintf it serialises them: C7510 - the print below shows what the
/// asserts cost before). The sites are the assertion, the step check and the
/// loop guard, each at its line.
TEST(HopperPtx, StopsWithAReportKeepWgmmasAsynchronous) {
  if (!have_ptxas())
    GTEST_SKIP() << "ptxas not found: its messages are what this test reads";
  std::vector<bfloat16> x(256 * 256);
  std::vector<float> y(256 * 256);
  CompiledKernel checked = kernel("checked_matmul", checked_matmul<false>, {"a", "b", "c", "M", "N", "K", "k_step"})
                               .compile({x, x, y, 256, 256, 256, 32}, {.chip = "sm_90a", .num_warps = 8});
  EXPECT_THAT(checked.ptx, HasSubstr("wgmma.mma_async"));
  EXPECT_THAT(checked.ptx, Not(HasSubstr("vprintf")));
  EXPECT_FALSE(checked.cubin.empty()) << checked.ptxas_log;
  EXPECT_THAT(checked.ptxas_log, Not(HasSubstr("C7510"))) << "ptxas serialised the wgmmas";
  EXPECT_EQ(checked.spill_bytes, 0) << checked.ptxas_log;
  std::vector<std::string> messages;
  for (const std::string &site : checked.error_sites) {
    EXPECT_THAT(site, HasSubstr("HopperKernelsTest.cpp:"));
    messages.push_back(site.substr(site.find(": ") + 2));
  }
  EXPECT_THAT(messages, ::testing::UnorderedElementsAre(
                            "device assertion failed: k_step is the tile's K",
                            "device assertion failed: tl::range step must be positive",
                            ::testing::StartsWith("this loop's i32 counter would pass 2147483647")));
  CompiledKernel printing = kernel("printing_matmul", checked_matmul<true>, {"a", "b", "c", "M", "N", "K", "k_step"})
                                .compile({x, x, y, 256, 256, 256, 32}, {.chip = "sm_90a", .num_warps = 8});
  EXPECT_THAT(printing.ptxas_log, HasSubstr("C7510")) << "a call no longer serialises wgmmas: the test above "
                                                         "proves nothing";
  std::printf("[ptxas sm_90a] checked GEMM 128x128x32 w8: %d registers; with a print: %d\n", checked.registers,
              printing.registers);
}

/// The PTX ISA makes a register written between wgmma.fence and a wgmma
/// that reads it (accumulator or A fragment) undefined; ptxas repairs it
/// with warpgroup arrives it warns about (C7519), and in divergent code
/// serialises the wgmmas (C7520). Attention chains wgmma with A from
/// registers (P) and fresh accumulators (S); neither may be written after
/// the fence - plain, warp specialised and ping-pong.
TEST(HopperPtx, NoRegisterIsWrittenBetweenTheFenceAndItsWgmma) {
  if (!have_ptxas())
    GTEST_SKIP() << "ptxas not found: its warnings are what this test reads";
  auto k = kernel("attention_fwd_descriptors_fence", examples::attention_fwd_descriptors<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
  std::vector<bfloat16> x(256 * 128);
  struct Config {
    int BM, warps;
    bool ws, pp;
  };
  for (Config c : {Config{128, 8, false, false}, Config{128, 8, true, false}, Config{64, 4, false, true}}) {
    SCOPED_TRACE(fmt::format("attention {}x64 d128, {} warps{}{}", c.BM, c.warps, c.ws ? ", warp specialised" : "",
                             c.pp ? ", ping-pong" : ""));
    CompiledKernel out = k.compile({x, x, x, x, 256, 256, 0.1f, 128, c.BM, 64, true},
                                   {.chip = "sm_90a", .num_warps = c.warps, .warp_specialize = c.ws,
                                    .ping_pong = c.pp});
    ASSERT_FALSE(out.cubin.empty()) << out.ptxas_log;
    EXPECT_THAT(out.ptxas_log, Not(HasSubstr("C7519"))) << "registers written after wgmma.fence";
    EXPECT_THAT(out.ptxas_log, Not(HasSubstr("C7520"))) << "wgmmas serialised";
    EXPECT_EQ(out.spill_bytes, 0) << out.ptxas_log;
  }
}

/// Attention written with its unmasked key blocks and its masked ones (the
/// diagonal, the sequence's end) in two loops, one after the other. Each
/// loop has rings of its own; they are never live together, so each loop's
/// rotation fits shared memory beside its own rings and Q's staging ring
/// (counting both loops' rings, as overlap-chained-dots once did, left both
/// loops unrotated at 128 x 128, d 128).
template <class T>
void attention_two_loops(tl::ptr<T> q, tl::ptr<T> k, tl::ptr<T> v, tl::ptr<T> out, tl::scalar<int32_t> seq_len,
                         tl::scalar<int32_t> rows, tl::scalar<float> scale, tl::constant<int> D, tl::constant<int> BM,
                         tl::constant<int> BN) {
  auto k_desc = tl::make_tensor_descriptor(k, {rows, D}, {D, 1}, {BN, D});
  auto v_desc = tl::make_tensor_descriptor(v, {rows, D}, {D, 1}, {BN, D});
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rd = tl::arange(0, D);
  tl::tensor q_tile = tl::load(q + rm.expand_dims(1) * D + rd.expand_dims(0), rm.expand_dims(1) < seq_len, 0.0f);
  tl::tensor m = tl::full({BM}, -INFINITY, tl::f32), l = tl::zeros({BM}, tl::f32), acc = tl::zeros({BM, D}, tl::f32);
  const tl::tensor c = scale * tl::log2e;
  auto step = [&](const tl::tensor &start, bool masked) {
    tl::tensor s = tl::dot(q_tile, k_desc.load({start, 0}).trans());
    if (masked)
      s = tl::where((start + tl::arange(0, BN)).expand_dims(0) < seq_len, s, -INFINITY);
    tl::tensor m_new = tl::maximum(m, tl::max(s, 1) * c);
    tl::tensor p = tl::exp2(tl::fma(s, c, -m_new.expand_dims(1)));
    tl::tensor alpha = tl::exp2(m - m_new);
    l = tl::fma(l, alpha, tl::sum(p, 1));
    acc = tl::dot(p.to(dtype_of_v<T>), v_desc.load({start, 0}), acc * alpha.expand_dims(1));
    m = m_new;
  };
  tl::tensor split = seq_len / BN.value * BN.value;
  for (auto start : tl::range(0, split, BN.value, m, l, acc))
    step(start, false);
  for (auto start : tl::range(split, seq_len, BN.value, m, l, acc))
    step(start, true);
  tl::store(out + rm.expand_dims(1) * D + rd.expand_dims(0), (acc / l.expand_dims(1)).to(dtype_of_v<T>),
            rm.expand_dims(1) < seq_len);
}

TEST(HopperPtx, SequentialAttentionLoopsAreEachRotated) {
  auto k = kernel("attention_two_loops", attention_two_loops<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN"});
  std::vector<bfloat16> x(256 * 128);
  for (bool ws : {false, true}) {
    SCOPED_TRACE(ws ? "warp specialised" : "plain");
    const CompiledKernel c = k.compile({x, x, x, x, 1000, 1000, 0.1f, 128, 128, 128},
                                       {.chip = "sm_90a", .num_warps = 8, .warp_specialize = ws, .assemble = false});
    // Each rotated loop waits for S alone once an iteration, and the
    // loops' rings and Q's staging rings share the H100's shared memory.
    EXPECT_EQ(occurrences(c.ptx, "wgmma.wait_group.sync.aligned 1;"), 2);
    EXPECT_LE(c.shared_bytes + c.dynamic_shared_bytes, 227 * 1024);
    std::printf("[tegula test] two attention loops%s: %d B shared\n", ws ? " ws" : "",
                c.shared_bytes + c.dynamic_shared_bytes);
  }
}

/// overlap-chained-dots on the benchmark's attention tiles: the loop is
/// rotated (the first dot's wait leaves the second in flight: wait_group 1)
/// where both accumulators, two sets of P fragments and Q fit the thread's
/// registers, without spills or serialised wgmmas. Q, loop-invariant, is
/// in shared memory, rotated or not (stage-invariant-wgmma-operands): S =
/// Q K^T reads both operands through descriptors.
/// TEGULA_OVERLAP_DOTS=0 turns the rotation off.
TEST(HopperPtx, AttentionSoftmaxRunsWhileTheNextDotComputes) {
  auto k = kernel("attention_fwd_descriptors_overlap", examples::attention_fwd_descriptors<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
  std::vector<bfloat16> x(256 * 128);
  struct Config {
    int BM, BN, D, warps;
    bool ws, pp, rotated;
  };
  // A wgmma whose A operand is a descriptor, not a {register list}.
  auto readsAFromShared = [](const std::string &ptx) {
    for (size_t at = ptx.find("wgmma.mma_async"); at != std::string::npos; at = ptx.find("wgmma.mma_async", at + 1))
      if (ptx.compare(ptx.find('}', at), 5, "}, %r") == 0)
        return true;
    return false;
  };
  constexpr const char *kOverlapWait = "wgmma.wait_group.sync.aligned 1;";
  for (Config c : {Config{64, 64, 64, 4, false, false, true}, Config{128, 64, 128, 8, false, false, true},
                   Config{128, 64, 128, 8, true, false, true}, Config{64, 64, 128, 4, true, true, true},
                   Config{128, 128, 64, 8, true, false, true}, Config{128, 128, 128, 8, true, false, true},
                   Config{128, 128, 128, 8, false, false, true}}) {
    SCOPED_TRACE(fmt::format("attention {}x{} d{}, {} warps{}{}", c.BM, c.BN, c.D, c.warps,
                             c.ws ? ", warp specialised" : "", c.pp ? ", ping-pong" : ""));
    const CompileOptions options{.chip = "sm_90a", .num_warps = c.warps, .warp_specialize = c.ws, .ping_pong = c.pp};
    CompiledKernel out = k.compile({x, x, x, x, 256, 256, 0.1f, c.D, c.BM, c.BN, true}, options);
    EXPECT_EQ(out.ptx.find(kOverlapWait) != std::string::npos, c.rotated);
    EXPECT_TRUE(readsAFromShared(out.ptx));
    if (c.rotated) { // P carried round the loop stays packed: paired conversions, no repacking
      EXPECT_THAT(out.ptx, HasSubstr("cvt.rn.bf16x2.f32"));
      EXPECT_FALSE(std::regex_search(out.ptx, std::regex(R"(mov\.b32\s+%r\d+, \{%rs)")));
    }
    if (!out.cubin.empty()) {
      EXPECT_EQ(out.spill_bytes, 0) << out.ptxas_log;
      EXPECT_THAT(out.ptxas_log, Not(HasSubstr("(C75"))) << "wgmmas serialised";
      std::printf("[tegula test] attention %dx%d d%d %d warps%s%s: %s, %d registers, 0 spills\n", c.BM, c.BN,
                  c.D, c.warps, c.ws ? " ws" : "", c.pp ? " pp" : "", c.rotated ? "overlapped" : "not overlapped",
                  out.registers);
    }
    if (c.rotated) {
      ScopedEnv off("TEGULA_OVERLAP_DOTS", "0");
      const std::string ptx = k.compile({x, x, x, x, 256, 256, 0.1f, c.D, c.BM, c.BN, true}, options).ptx;
      EXPECT_EQ(ptx.find(kOverlapWait), std::string::npos);
      EXPECT_TRUE(readsAFromShared(ptx));
    }
  }
}

} // namespace
