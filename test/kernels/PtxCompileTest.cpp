// PtxCompileTest.cpp - example kernels compiled through the GPU pipeline
// (layouts -> per-thread LLVM -> PTX) for sm_80 and sm_90a, assembled by
// ptxas: registers are printed, spills fail. Kernels whose ops are not
// lowered yet must fail with a message naming the op and the user's line.
#include "TestUtil.h"
#include "examples/kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

using namespace tegula;
using ::testing::HasSubstr;

namespace {

bool havePtxas() {
  const char *home = std::getenv("CUDA_HOME");
  std::string p = std::string(home ? home : "/usr/local/cuda") + "/bin/ptxas";
  return std::filesystem::exists(p);
}

class PtxCompile : public ::testing::TestWithParam<std::string> {};

void expectCompiles(const Kernel &k, const std::vector<Arg> &args, const std::string &chip) {
  CompiledKernel c = k.compile(args, {.chip = chip, .num_warps = 4});
  EXPECT_THAT(c.ptx, HasSubstr(".target " + chip));
  EXPECT_THAT(c.ptx, HasSubstr(".visible .entry " + k.name() + "("));
  EXPECT_THAT(c.ptx, HasSubstr(".maxntid 128, 1, 1"));
  if (!havePtxas()) {
    GTEST_SKIP() << "ptxas not found (no CUDA toolkit): PTX generated but not assembled";
  }
  ASSERT_FALSE(c.cubin.empty()) << c.ptxas_log;
  std::printf("[ptxas] %-12s %-7s registers=%d shared=%dB spills=%dB\n", k.name().c_str(),
              chip.c_str(), c.registers, c.shared_bytes, c.spill_bytes);
  EXPECT_GT(c.registers, 0);
  EXPECT_EQ(c.spill_bytes, 0) << "simple kernels must not spill:\n" << c.ptxas_log;
}

TEST_P(PtxCompile, VectorAdd) {
  std::vector<float> x(4096), y(4096), out(4096);
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  expectCompiles(k, {x, y, out, 1000, 1024}, GetParam());
}

TEST_P(PtxCompile, GeluF32) {
  std::vector<float> x(4096), out(4096);
  auto k = kernel("gelu", examples::gelu<float>, {"x", "out", "n", "BLOCK"});
  expectCompiles(k, {x, out, 1000, 512}, GetParam());
  // libdevice's tanh is linked and inlined.
  EXPECT_THAT(k.compile({x, out, 1000, 512}, {.chip = GetParam(), .assemble = false}).ptx,
              ::testing::Not(HasSubstr("__nv_tanhf")));
}

TEST_P(PtxCompile, GeluBf16) {
  std::vector<bfloat16> x(4096), out(4096);
  auto k = kernel("gelu_bf16", examples::gelu<bfloat16>, {"x", "out", "n", "BLOCK"});
  expectCompiles(k, {x, out, 1000, 512}, GetParam());
}

TEST_P(PtxCompile, SoftmaxF32) {
  std::vector<float> x(4096), out(4096);
  auto k = kernel("softmax", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
  expectCompiles(k, {x, out, 1000, 1024}, GetParam());
  // Row reductions: butterfly shuffles in warps, shared memory across them.
  std::string ptx = k.compile({x, out, 1000, 1024}, {.chip = GetParam(), .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("shfl.sync.bfly.b32"));
  EXPECT_THAT(ptx, HasSubstr("bar.sync"));
  EXPECT_THAT(ptx, HasSubstr("st.shared"));
}

TEST_P(PtxCompile, SoftmaxBf16) {
  std::vector<bfloat16> x(4096), out(4096);
  auto k = kernel("softmax_bf16", examples::softmax<bfloat16>, {"x", "out", "n_cols", "BLOCK"});
  expectCompiles(k, {x, out, 1000, 1024}, GetParam());
}

TEST_P(PtxCompile, LayerNormF32) {
  std::vector<float> x(4096), w(1024), b(1024), y(4096), mean(4), rstd(4);
  auto k = kernel("layernorm", examples::layernorm<float>,
                  {"x", "weight", "bias", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"});
  expectCompiles(k, {x, w, b, y, mean, rstd, 1000, 1e-5f, 256}, GetParam());
}

TEST_P(PtxCompile, LayerNormBf16) {
  std::vector<bfloat16> x(4096), w(1024), b(1024), y(4096);
  std::vector<float> mean(4), rstd(4);
  auto k = kernel("layernorm_bf16", examples::layernorm<bfloat16>,
                  {"x", "weight", "bias", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"});
  expectCompiles(k, {x, w, b, y, mean, rstd, 1000, 1e-5f, 256}, GetParam());
}

TEST_P(PtxCompile, Transpose) {
  std::vector<float> x(4096), out(4096);
  auto k = kernel("transpose", examples::transpose<float>, {"x", "out", "M", "N", "BM", "BN"});
  expectCompiles(k, {x, out, 64, 64, 32, 32}, GetParam());
  // Elements cross threads through shared memory.
  std::string ptx = k.compile({x, out, 64, 64, 32, 32}, {.chip = GetParam(), .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("st.shared"));
  EXPECT_THAT(ptx, HasSubstr("ld.shared"));
}

TEST_P(PtxCompile, MatmulFmaF32) {
  std::vector<float> a(4096), b(4096), c(4096);
  auto k = kernel("matmul", examples::matmul<float>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  expectCompiles(k, {a, b, c, 64, 64, 64, 32, 32, 16}, GetParam());
  std::string ptx = k.compile({a, b, c, 64, 64, 64, 32, 32, 16}, {.chip = GetParam(), .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("fma.rn.f32"));
}

TEST_P(PtxCompile, MatmulFmaBf16) {
  std::vector<bfloat16> a(4096), b(4096), c(4096);
  auto k = kernel("matmul_bf16", examples::matmul<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  expectCompiles(k, {a, b, c, 64, 64, 64, 32, 32, 16}, GetParam());
}

TEST_P(PtxCompile, RowSumAtomicAdd) {
  std::vector<float> x(4096), out(4);
  auto k = kernel("row_sum_atomic", examples::row_sum_atomic, {"x", "out", "n_cols", "BLOCK"});
  expectCompiles(k, {x, out, 1000, 256}, GetParam());
  std::string ptx = k.compile({x, out, 1000, 256}, {.chip = GetParam(), .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("atom.acq_rel.gpu.global.add.f32"));
}

TEST_P(PtxCompile, DropoutsPhiloxTakesHighProductsWithMulHi) {
  std::vector<float> x(4096), out(4096);
  auto k = kernel("dropout", examples::dropout, {"x", "out", "n", "p", "seed", "BLOCK"});
  const std::vector<Arg> args = {x, out, 4000, 0.5f, int64_t(7), 1024};
  expectCompiles(k, args, GetParam());
  // Philox's 64-bit products (the DSL's way to a high word) become single
  // mul.hi.u32 instructions; only the first round, where LLVM folds the
  // 64-bit seed in, keeps a few 64-bit multiplies (112 against 9 here).
  std::string ptx = k.compile(args, {.chip = GetParam(), .assemble = false}).ptx;
  const int hi = tegula::testing::occurrences(ptx, "mul.hi.u32"), wide = tegula::testing::occurrences(ptx, "mul.lo.s64");
  EXPECT_GE(hi, 8 * 10) << "a high product per element and round at least";
  EXPECT_LT(wide, hi / 8) << ptx;
}

// 128-bit accesses: aligned buffers and sizes divisible by 16 specialise the
// kernel, the coalesce pass proves 4 contiguous f32 per thread under a mask
// constant over them, and the lowering emits v4 loads and stores.
TEST(PtxVectorize, ContiguousF32AccessesAre128Bit) {
  std::vector<float> x(8192), y(8192), out(8192), w(1024), b(1024), mean(8), rstd(8);
  auto add = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  std::string ptx = add.compile({x, y, out, 4096, 1024}, {.assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("ld.global.v4.b32"));
  EXPECT_THAT(ptx, HasSubstr("st.global.v4.b32"));
  // n = 1000 is not divisible by 4: the mask may change inside a vector.
  std::string ragged = add.compile({x, y, out, 1000, 1024}, {.assemble = false}).ptx;
  EXPECT_THAT(ragged, ::testing::Not(HasSubstr(".v4.")));

  auto softmax = kernel("softmax", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
  ptx = softmax.compile({x, out, 1024, 1024}, {.assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("ld.global.v4.b32"));
  EXPECT_THAT(ptx, HasSubstr("st.global.v4.b32"));

  auto ln = kernel("layernorm", examples::layernorm<float>,
                   {"x", "weight", "bias", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"});
  ptx = ln.compile({x, w, b, out, mean, rstd, 1024, 1e-5f, 512}, {.assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("ld.global.v4.b32"));
  EXPECT_THAT(ptx, HasSubstr("st.global.v4.b32"));
}

TEST(PtxCompileCache, SecondCompileIsAMemoryHit) {
  std::vector<float> x(4096), y(4096), out(4096);
  auto k = kernel("vector_add_cached", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  CompiledKernel first = k.compile({x, y, out, 1000, 1024});
  auto t0 = std::chrono::steady_clock::now();
  CompiledKernel again = k.compile({x, y, out, 777, 1024}); // runtime n: same kernel
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(first.ptx, again.ptx);
  EXPECT_EQ(first.cubin, again.cubin);
  std::printf("[cache] second compile took %.1f us\n", us);
  // Another kernel object compiling the same IR finds it in the process cache.
  auto k2 = kernel("vector_add_cached", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  EXPECT_EQ(k2.compile({x, y, out, 1000, 1024}).ptx, first.ptx);
}

TEST(PtxCompileDump, StagesGoToStderrOnRequest) {
  std::vector<float> x(4096), y(4096), out(4096);
  auto k = kernel("vector_add_dumped", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  ::setenv("TEGULA_DUMP", "tilegpu,ptx", 1);
  ::testing::internal::CaptureStderr();
  k.compile({x, y, out, 1000, 512}, {.assemble = false});
  std::string err = ::testing::internal::GetCapturedStderr();
  ::unsetenv("TEGULA_DUMP");
  EXPECT_THAT(err, HasSubstr("kernel 'vector_add_dumped' after stage 'tilegpu'"));
  EXPECT_THAT(err, HasSubstr("#tilegpu.blocked"));
  EXPECT_THAT(err, HasSubstr("after stage 'ptx'"));
  EXPECT_THAT(err, HasSubstr(".entry vector_add_dumped"));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("after stage 'llvm'")));
}

// max_registers caps a kernel's registers (.maxnreg; Triton's maxnreg): the
// bf16 GEMM at 128 x 128 on 4 warps takes more than 96 a thread by itself,
// at most 96 capped (spilling what does not fit); out-of-range caps and a
// warp-specialised kernel that moves registers between its warpgroups (it
// declares its own pool) are errors naming the problem.
TEST_P(PtxCompile, MaxRegistersCapsAKernel) {
  std::vector<bfloat16> a(16), b(16), c(16);
  auto k = kernel("matmul_bf16", examples::matmul<bfloat16>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  const std::vector<Arg> args = {a, b, c, 512, 512, 512, 128, 128, 32};
  const CompiledKernel free = k.compile(args, {.chip = GetParam(), .num_warps = 4});
  const CompiledKernel capped = k.compile(args, {.chip = GetParam(), .num_warps = 4, .max_registers = 96});
  EXPECT_THAT(capped.ptx, HasSubstr(".maxnreg 96"));
  EXPECT_THAT(free.ptx, ::testing::Not(HasSubstr(".maxnreg")));
  if (havePtxas()) {
    std::printf("[ptxas] matmul_bf16 %s: %d registers free, %d capped at 96 (%d B spilled)\n", GetParam().c_str(),
                free.registers, capped.registers, capped.spill_bytes);
    EXPECT_GT(free.registers, 96);
    EXPECT_LE(capped.registers, 96);
  }
  auto error = [&](const Kernel &kern, const std::vector<Arg> &kargs, const CompileOptions &opts) {
    try {
      kern.compile(kargs, opts);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error(k, args, {.chip = GetParam(), .max_registers = 300}),
              HasSubstr("max_registers is 16 to 255 registers a thread (0: ptxas chooses), not 300"));
  // Refused by every backend alike, though the CPU ones ignore the cap.
  try {
    k({.grid = {1, 1}, .backend = Backend::Interp, .max_registers = 8}, a, b, c, 16, 16, 16, 16, 16, 16);
    ADD_FAILURE() << "an 8-register cap launched";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("max_registers is 16 to 255"));
  }
  if (GetParam() == "sm_90a") { // 8 consumer warps + a producer warpgroup: registers move
    auto ws = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                     {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
    const std::vector<Arg> wsArgs = {a, b, c, 512, 512, 512, 512, 512, 512, 128, 256, 64};
    const CompileOptions opts{.chip = "sm_90a", .num_warps = 8, .warp_specialize = true, .assemble = false,
                              .max_registers = 128};
    EXPECT_THAT(error(ws, wsArgs, opts), HasSubstr("moves registers between its warpgroups (setmaxnreg)"));
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PtxCompile, ::testing::Values("sm_80", "sm_90a"));

void float_atomic_max(tl::ptr<float> out, tl::ptr<float> x) {
  tl::tensor offs = tl::arange(0, 512); // 4 loops per thread: labels must be unique
  tl::atomic_max(out + offs, tl::load(x + offs));
}

TEST(PtxCompileAtomics, FloatMaxIsACompareAndSwapLoop) {
  std::vector<float> a(512), b(512);
  auto k = kernel("float_atomic_max", float_atomic_max);
  CompiledKernel c = k.compile({a, b}, {.chip = "sm_80"});
  EXPECT_THAT(c.ptx, HasSubstr("max.NaN.f32"));
  EXPECT_THAT(c.ptx, HasSubstr("atom.acq_rel.gpu.global.cas.b32"));
  if (havePtxas())
    EXPECT_FALSE(c.cubin.empty()) << c.ptxas_log;
}

void fp8_atomic_xchg(tl::ptr<float8_e4m3> out) { tl::atomic_xchg(out, 1.0f); } // no 8-bit compare-and-swap
void f16_atomic_or(tl::ptr<float16> out) { tl::atomic_or(out, 1.0f); }

/// Atomics the GPU lacks used to trace, run in the interpreter and fail in
/// lowering with the IR; they are refused at the user's line on every
/// backend, naming what there is.
TEST(PtxCompileLimits, AtomicsTheGpuLacksAreRefusedAtTheLine) {
  std::vector<float16> h(128);
  std::vector<float8_e4m3> e(128);
  for (Backend backend : {Backend::Interp, Backend::Sim}) {
    std::string err = tegula::testing::error_of(
        [&] { kernel("fp8_atomic_xchg", fp8_atomic_xchg)({.grid = {1}, .backend = backend}, e); });
    EXPECT_THAT(err, HasSubstr("tl::atomic_xchg on f8e4m3 memory is not supported"));
    EXPECT_THAT(err, HasSubstr("PtxCompileTest.cpp:"));
  }
  EXPECT_THAT(tegula::testing::error_of([&] { (void)kernel("fp8_atomic_xchg", fp8_atomic_xchg).compile({e}); }),
              HasSubstr("tl::atomic_xchg on f8e4m3 memory is not supported: atomics need elements of 16, 32 or 64 bits"));
  EXPECT_THAT(tegula::testing::error_of([&] { (void)kernel("f16_atomic_or", f16_atomic_or).compile({h}); }),
              HasSubstr("tl::atomic_or needs integer memory (i16, i32 or i64), got f16"));
}

} // namespace
