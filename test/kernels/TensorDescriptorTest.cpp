// TensorDescriptorTest.cpp - tl::make_tensor_descriptor: blocks of a strided
// tensor loaded (zeros outside it) and stored (clipped to it). The
// interpreter is checked against C++ references; the simulator - sm_80 code
// (masked accesses) and sm_90a code - and the GPU when present against the
// interpreter, on fresh random inputs with ragged shapes, negative offsets
// and padded rows whose padding must stay untouched.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "examples/kernels.h"
#include "kernels/ChipTargets.h"
#include "kernels/MlpChunks.h"

#include <array>
#include <bit>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;
using namespace tegula::testing;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

/// out[i, j] = 2 * x[i - SHIFT, j] over an M x N tensor (row strides ldx,
/// ldo): the top blocks read above row 0, the edge blocks past M and N.
template <class T>
void shifted_copy(tl::ptr<T> x, tl::ptr<T> out, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                  tl::scalar<int32_t> ldx, tl::scalar<int32_t> ldo, tl::constant<int> SHIFT,
                  tl::constant<int> BM, tl::constant<int> BN) {
  auto src = tl::make_tensor_descriptor(x, {M, N}, {ldx, 1}, {BM, BN});
  auto dst = tl::make_tensor_descriptor(out, {M, N}, {ldo, 1}, {BM, BN});
  tl::tensor i0 = tl::program_id(0) * BM, j0 = tl::program_id(1) * BN;
  dst.store({i0, j0}, src.load({i0 - SHIFT, j0}) * 2.0f);
}

/// A 3-D tensor [D0, D1, D2] (strides s0, s1, 1): out = x + 1 block by block.
inline void add_one_3d(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> d0,
                       tl::scalar<int32_t> d1, tl::scalar<int32_t> d2, tl::scalar<int64_t> s0,
                       tl::scalar<int64_t> s1, tl::constant<int> B) {
  auto src = tl::make_tensor_descriptor(x, {d0, d1, d2}, {s0, s1, 1}, {2, B, B});
  auto dst = tl::make_tensor_descriptor(out, {d0, d1, d2}, {s0, s1, 1}, {2, B, B});
  std::vector<tl::operand> at = {tl::program_id(0) * 2, tl::program_id(1) * B,
                                 tl::program_id(2) * B};
  dst.store(at, src.load(at) + 1.0f);
}

/// A multi-head buffer [rows, H * D]: each program doubles one head's block
/// of rows; the row stride H * D is an argument times a constant, which the
/// host computes for TMA's tensor map.
inline void scale_heads(tl::ptr<bfloat16> x, tl::ptr<bfloat16> out, tl::scalar<int32_t> rows, tl::scalar<int32_t> H,
                        tl::constant<int> D, tl::constant<int> BM) {
  tl::tensor width = H * D;
  auto src = tl::make_tensor_descriptor(x, {rows, width}, {width, 1}, {BM, D});
  auto dst = tl::make_tensor_descriptor(out, {rows, width}, {width, 1}, {BM, D});
  tl::tensor at_row = tl::program_id(0) * BM, at_col = tl::program_id(1) * D;
  dst.store({at_row, at_col}, src.load({at_row, at_col}) * 2.0f);
}

/// c = (a @ b) * s elementwise, s [M, N] through a descriptor (of type S):
/// a GEMM epilogue's operand, which on sm_90a lands by TMA in a swizzled
/// tile and is read straight into the accumulator's layout (ldmatrix for
/// 16 bits) instead of being converted into it through shared memory.
template <class S>
void scaled_product(tl::ptr<bfloat16> a, tl::ptr<bfloat16> b, tl::ptr<S> scale, tl::ptr<float> c,
                    tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                    tl::constant<int> BN, tl::constant<int> BK) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto s_desc = tl::make_tensor_descriptor(scale, {M, N}, {N, 1}, {BM, BN});
  tl::tensor m0 = tl::program_id(0) * BM, n0 = tl::program_id(1) * BN;
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, acc))
    acc = tl::dot(a_desc.load({m0, k}), b_desc.load({k, n0}), acc);
  tl::tensor rm = m0 + tl::arange(0, BM), rn = n0 + tl::arange(0, BN);
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc * (s_desc.load({m0, n0}).to(tl::f32) + 1.0f),
            (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

constexpr float kUntouched = 777.0f;

struct CopyShape {
  int M, N, ldx, ldo, shift, BM, BN;
};

/// Runs shifted_copy and checks it against the definition; returns `out`.
template <class T>
std::vector<T> runShiftedCopy(const LaunchOptions &base, CopyShape s, const std::vector<T> &x) {
  auto k = kernel("shifted_copy", shifted_copy<T>,
                  {"x", "out", "M", "N", "ldx", "ldo", "SHIFT", "BM", "BN"});
  // Two spare rows below M: a clipped store must not reach them either.
  std::vector<T> out(size_t(s.M + 2) * size_t(s.ldo), T(kUntouched));
  LaunchOptions o = base;
  o.grid = {uint32_t(cdiv(s.M, s.BM)), uint32_t(cdiv(s.N, s.BN))};
  k(o, x, out, s.M, s.N, s.ldx, s.ldo, s.shift, s.BM, s.BN);
  return out;
}

template <class T> void checkShiftedCopyAgainstDefinition() {
  for (CopyShape s : {CopyShape{37, 40, 40, 48, 3, 16, 16}, CopyShape{64, 72, 80, 72, 0, 32, 32},
                      CopyShape{5, 24, 32, 32, 9, 8, 32}}) {
    SCOPED_TRACE(fmt::format("M={} N={} ldx={} ldo={} shift={} block {}x{}", s.M, s.N, s.ldx,
                             s.ldo, s.shift, s.BM, s.BN));
    auto x = random_vector<T>(size_t(s.M) * size_t(s.ldx));
    auto out = runShiftedCopy<T>({.backend = Backend::Interp}, s, x);
    for (int i = 0; i < s.M + 2; ++i)
      for (int j = 0; j < s.ldo; ++j) {
        float got = float(out[size_t(i) * size_t(s.ldo) + size_t(j)]);
        float want = kUntouched;
        if (i < s.M && j < s.N)
          want = i - s.shift < 0 ? 0.0f : 2.0f * float(x[size_t(i - s.shift) * size_t(s.ldx) + size_t(j)]);
        ASSERT_EQ(got, float(T(want))) << "at (" << i << ", " << j << ")";
      }
  }
}

TEST(TensorDescriptorInterp, ShiftedCopyF32) { checkShiftedCopyAgainstDefinition<float>(); }
TEST(TensorDescriptorInterp, ShiftedCopyBf16) { checkShiftedCopyAgainstDefinition<bfloat16>(); }

TEST(TensorDescriptorInterp, ThreeDimensionalBlocks) {
  auto k = kernel("add_one_3d", add_one_3d, {"x", "out", "d0", "d1", "d2", "s0", "s1", "B"});
  const int d0 = 3, d1 = 10, d2 = 12, s1 = 16, s0 = 11 * s1, B = 8;
  auto x = random_vector<float>(size_t(d0) * size_t(s0));
  std::vector<float> out(x.size(), kUntouched);
  k({.grid = {2, 2, 2}, .backend = Backend::Interp}, x, out, d0, d1, d2, long(s0), long(s1), B);
  for (int a = 0; a < d0; ++a)
    for (int b = 0; b < s0 / s1; ++b)
      for (int c = 0; c < s1; ++c) {
        size_t at = size_t(a * s0 + b * s1 + c);
        float want = b < d1 && c < d2 ? x[at] + 1.0f : kUntouched;
        ASSERT_EQ(out[at], want) << a << "," << b << "," << c;
      }
}

//===----------------------------------------------------------------------===//
// Compiled code (simulator, GPU) against the interpreter
//===----------------------------------------------------------------------===//

using TensorDescriptor = ChipTargetTest;

TEST_P(TensorDescriptor, ShiftedCopyMatchesTheInterpreter) {
  for (CopyShape s : {CopyShape{37, 40, 40, 48, 3, 16, 16}, CopyShape{70, 72, 80, 72, 5, 32, 64}}) {
    SCOPED_TRACE(fmt::format("M={} N={} shift={} block {}x{}", s.M, s.N, s.shift, s.BM, s.BN));
    auto x = random_vector<bfloat16>(size_t(s.M) * size_t(s.ldx));
    auto want = runShiftedCopy<bfloat16>({.backend = Backend::Interp}, s, x);
    auto got = runShiftedCopy<bfloat16>(target(), s, x);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(float(got[i]), float(want[i])) << "element " << i;
  }
}

TEST_P(TensorDescriptor, ThreeDimensionalBlocksMatchTheInterpreter) {
  auto k = kernel("add_one_3d", add_one_3d, {"x", "out", "d0", "d1", "d2", "s0", "s1", "B"});
  const int d0 = 3, d1 = 10, d2 = 12, s1 = 16, s0 = 11 * s1, B = 8;
  auto x = random_vector<float>(size_t(d0) * size_t(s0));
  std::vector<float> want(x.size(), kUntouched), got = want;
  k({.grid = {2, 2, 2}, .backend = Backend::Interp}, x, want, d0, d1, d2, long(s0), long(s1), B);
  LaunchOptions o = target();
  o.grid = {2, 2, 2};
  k(o, x, got, d0, d1, d2, long(s0), long(s1), B);
  EXPECT_EQ(got, want);
}

TEST_P(TensorDescriptor, StridesThatAreAnArgumentTimesAConstant) {
  auto k = kernel("scale_heads", scale_heads, {"x", "out", "rows", "H", "D", "BM"});
  const int rows = 37, H = 3, D = 32, BM = 16;
  auto x = random_vector<bfloat16>(size_t(rows * H * D));
  auto want = poisoned<bfloat16>(x.size()), got = want;
  const Grid g{uint32_t(cdiv(rows, BM)), uint32_t(H)};
  k({.grid = g, .backend = Backend::Interp}, x, want, rows, H, D, BM);
  LaunchOptions o = target(g);
  k(o, x, got, rows, H, D, BM);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(float(got[i]), float(want[i])) << i;
  // On sm_90a both accesses are TMA: the record multiplies argument H by 32.
  CompiledKernel c = k.compile({x, got, rows, H, D, BM}, {.chip = "sm_90a", .assemble = false});
  EXPECT_THAT(c.ptx, HasSubstr("cp.async.bulk.tensor.2d.shared::cluster"));
  EXPECT_THAT(c.tensor_maps, HasSubstr(" 3 32 -1 1 "));
}

/// GEMM with every operand through a descriptor: ragged M, N, K and padded
/// leading dimensions; the clipped store leaves C's padding alone.
template <class T, tl::precision P = tl::precision::ieee>
void checkMatmulDescriptors(const LaunchOptions &target, double tol) {
  auto k = kernel("matmul_descriptors", examples::matmul_descriptors<T, P>,
                  {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  struct S { int M, N, K, BM, BN, BK; };
  for (S s : {S{70, 40, 50, 64, 32, 16}, S{33, 72, 24, 32, 64, 32}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}", s.M, s.N, s.K, s.BM, s.BN, s.BK));
    int lda = (s.K + 15) / 16 * 16, ldb = (s.N + 15) / 16 * 16 + 16, ldc = ldb;
    auto a = random_vector<T>(size_t(s.M * lda)), b = random_vector<T>(size_t(s.K * ldb));
    std::vector<T> want(size_t(s.M * ldc), T(kUntouched)), got = want;
    Grid g{uint32_t(cdiv(s.M, s.BM)), uint32_t(cdiv(s.N, s.BN))};
    k({.grid = g, .backend = Backend::Interp}, a, b, want, s.M, s.N, s.K, lda, ldb, ldc, s.BM, s.BN, s.BK);
    LaunchOptions o = target;
    o.grid = g;
    k(o, a, b, got, s.M, s.N, s.K, lda, ldb, ldc, s.BM, s.BN, s.BK);
    for (int i = 0; i < s.M; ++i)
      for (int j = s.N; j < ldc; ++j)
        ASSERT_EQ(float(got[size_t(i * ldc + j)]), float(T(kUntouched))) << "padding (" << i << ", " << j << ")";
    EXPECT_LT(rel_error(got, to_double(want)), tol);
  }
}

/// On sm_90a these become TMA rings feeding wgmma: swizzles of 32, 64 and
/// 128 bytes, rows wider than 128 bytes as several boxes per stage, K loops
/// long enough for the rings to wrap (mbarrier phases flip), B transposed.
TEST_P(TensorDescriptor, PipelinedTilesMatchTheInterpreter) {
  struct S { int M, N, K, BM, BN, BK, warps; bool bt; };
  for (S s : {S{70, 72, 96, 64, 64, 32, 4, false}, S{200, 136, 296, 128, 128, 64, 4, false},
              S{130, 264, 200, 128, 256, 64, 8, false}, S{100, 80, 136, 64, 64, 64, 4, true},
              S{130, 200, 160, 128, 128, 32, 8, true}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}, {} warps{}", s.M, s.N, s.K, s.BM, s.BN,
                             s.BK, s.warps, s.bt ? ", B transposed" : ""));
    auto a = random_vector<bfloat16>(size_t(s.M * s.K)), b = random_vector<bfloat16>(size_t(s.K * s.N));
    auto want = poisoned<bfloat16>(size_t(s.M * s.N)), got = want;
    Grid g{uint32_t(cdiv(s.M, s.BM)), uint32_t(cdiv(s.N, s.BN))};
    LaunchOptions o = target(g, s.warps);
    if (s.bt) { // examples::matmul_tn: B stored [N, K], f32 out
      auto k = kernel("matmul_tn", examples::matmul_tn<bfloat16>,
                      {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
      auto want32 = poisoned<float>(size_t(s.M * s.N)), got32 = want32;
      k({.grid = g, .backend = Backend::Interp}, a, b, want32, s.M, s.N, s.K, s.BM, s.BN, s.BK);
      k(o, a, b, got32, s.M, s.N, s.K, s.BM, s.BN, s.BK);
      EXPECT_LT(rel_error(got32, to_double(want32)), 1e-5);
      continue;
    } else {
      auto k = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                      {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
      k({.grid = g, .backend = Backend::Interp}, a, b, want, s.M, s.N, s.K, s.K, s.N, s.N, s.BM,
        s.BN, s.BK);
      k(o, a, b, got, s.M, s.N, s.K, s.K, s.N, s.N, s.BM, s.BN, s.BK);
    }
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
  }
}

/// Warp specialisation (sm_90a: a producer warpgroup fills the rings, the
/// tile program's warps wait, compute and release stages; elsewhere the
/// option changes nothing): ragged shapes, rings that wrap several times,
/// 4 and 8 consumer warps, B transposed.
TEST_P(TensorDescriptor, WarpSpecializedTilesMatchTheInterpreter) {
  struct S { int M, N, K, BM, BN, BK, warps, stages; bool bt; };
  for (S s : {S{70, 72, 200, 64, 64, 32, 4, 3, false}, S{200, 136, 296, 128, 128, 64, 4, 4, false},
              S{130, 264, 200, 128, 256, 64, 8, 3, false}, S{100, 80, 136, 64, 64, 64, 4, 2, true}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}, {} warps, {} stages{}", s.M, s.N, s.K, s.BM, s.BN,
                             s.BK, s.warps, s.stages, s.bt ? ", B transposed" : ""));
    auto a = random_vector<bfloat16>(size_t(s.M * s.K)), b = random_vector<bfloat16>(size_t(s.K * s.N));
    Grid g{uint32_t(cdiv(s.M, s.BM)), uint32_t(cdiv(s.N, s.BN))};
    LaunchOptions o = target(g, s.warps);
    o.num_stages = s.stages;
    o.warp_specialize = true;
    if (s.bt) {
      auto k = kernel("matmul_tn", examples::matmul_tn<bfloat16>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
      auto want = poisoned<float>(size_t(s.M * s.N)), got = want;
      k({.grid = g, .backend = Backend::Interp}, a, b, want, s.M, s.N, s.K, s.BM, s.BN, s.BK);
      k(o, a, b, got, s.M, s.N, s.K, s.BM, s.BN, s.BK);
      EXPECT_LT(rel_error(got, to_double(want)), 1e-5);
      continue;
    }
    auto k = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                    {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
    auto want = poisoned<bfloat16>(size_t(s.M * s.N)), got = want;
    k({.grid = g, .backend = Backend::Interp}, a, b, want, s.M, s.N, s.K, s.K, s.N, s.N, s.BM, s.BN, s.BK);
    k(o, a, b, got, s.M, s.N, s.K, s.K, s.N, s.N, s.BM, s.BN, s.BK);
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
  }
}

/// The persistent GEMM warp specialised: the producer walks the same tiles,
/// the rings and their phases run on from tile to tile (the producer fills
/// the next tile's stages while the consumers store this one's C block).
/// Fewer programs than tiles, K loops of 5 and 3 iterations (rings that
/// wrap within and across tiles), 4 and 8 consumer warps.
TEST_P(TensorDescriptor, WarpSpecializedPersistentMatmul) {
  auto k = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  struct S { int M, N, K, BM, BN, BK, warps, stages, programs; };
  // The last: more programs than tiles (the idle ones' producers and
  // consumers both skip the loops).
  for (S s : {S{200, 136, 160, 64, 64, 32, 4, 3, 3}, S{260, 264, 192, 128, 128, 64, 8, 4, 2},
              S{100, 64, 96, 64, 64, 32, 4, 3, 5}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}, {} warps, {} stages, {} programs", s.M, s.N, s.K, s.BM,
                             s.BN, s.BK, s.warps, s.stages, s.programs));
    auto a = random_vector<bfloat16>(size_t(s.M * s.K)), b = random_vector<bfloat16>(size_t(s.K * s.N));
    auto want = poisoned<bfloat16>(size_t(s.M * s.N)), got = want;
    const Grid g{uint32_t(s.programs)};
    k({.grid = g, .backend = Backend::Interp}, a, b, want, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2);
    LaunchOptions o = target(g, s.warps);
    o.num_stages = s.stages;
    o.warp_specialize = true;
    k(o, a, b, got, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2);
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
  }
  std::vector<bfloat16> x(256 * 256);
  for (auto [BN, warps] : {std::pair{128, 4}, std::pair{256, 8}}) {
    CompiledKernel c = k.compile({x, x, x, 256, 256, 256, 128, BN, 64, 8},
                                 {.chip = "sm_90a", .num_warps = warps, .num_stages = 3, .warp_specialize = true});
    EXPECT_EQ(c.producer_warps, 4);
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
    std::printf("[tegula test] warp-specialised persistent 128x%dx64, %d+4 warps, 3 stages: %d registers, %d spill "
                "bytes\n",
                BN, warps, c.registers, c.spill_bytes);
  }
}

/// Attention warp specialised: the producer warpgroup fills the K and V
/// rings; each dot waits for and releases its own.
TEST_P(TensorDescriptor, WarpSpecializedAttentionMatchesThePointerKernel) {
  auto ref = kernel("attention_fwd", examples::attention_fwd<bfloat16>,
                    {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
  auto k = kernel("attention_fwd_descriptors", examples::attention_fwd_descriptors<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
  const int heads = 2, seq = 200;
  struct Tile {
    int BM, BN, D, warps;
  };
  // The last: FlashAttention-3's tile at d = 128 (benchmarks/attention), a
  // Hopper tile - its rings take 224 KiB, more than an A100's 163.
  for (Tile t : {Tile{64, 64, 64, 4}, Tile{128, 64, 64, 8}, Tile{128, 128, 128, 8}})
    for (bool causal : {false, true}) {
      if (t.D == 128 && GetParam().chip != "sm_90a")
        continue;
      SCOPED_TRACE(fmt::format("T={} causal={} {}x{} d {} at {} warps", seq, causal, t.BM, t.BN, t.D, t.warps));
      const size_t n = size_t(heads * seq * t.D);
      auto q = random_vector<bfloat16>(n), kk = random_vector<bfloat16>(n), v = random_vector<bfloat16>(n);
      auto want = poisoned<bfloat16>(n), got = want;
      Grid g{uint32_t(cdiv(seq, t.BM)), uint32_t(heads)};
      const float scale = 1.0f / std::sqrt(float(t.D));
      ref({.grid = g, .backend = Backend::Interp}, q, kk, v, want, seq, scale, t.D, t.BM, t.BN, causal);
      LaunchOptions o = target(g, t.warps);
      o.warp_specialize = true;
      k(o, q, kk, v, got, seq, heads * seq, scale, t.D, t.BM, t.BN, causal);
      EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
    }
  std::vector<bfloat16> x(2 * 128 * 64);
  for (auto [BM, warps] : {std::pair{64, 4}, std::pair{128, 8}}) {
    CompiledKernel c = k.compile({x, x, x, x, 128, 256, 0.125f, 64, BM, 64, true},
                                 {.chip = "sm_90a", .num_warps = warps, .warp_specialize = true});
    EXPECT_EQ(c.producer_warps, 4);
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
    if (warps == 8 && !c.cubin.empty()) // the declared .maxnreg, whatever the code needs
      EXPECT_EQ(c.registers, 168);
    std::printf("[tegula test] warp-specialised attention %dx64, d 64, %d+4 warps: %d registers, %d spill bytes\n",
                BM, warps, c.registers, c.spill_bytes);
  }
}

/// overlap-chained-dots (sm_90a) rotates attention's loop - the next S =
/// Q K^T and this P V in flight together, the softmax between the waits -
/// without changing a single operation on any element: the output is the
/// same bits as with TEGULA_OVERLAP_DOTS=0, for plain TMA rings, warp
/// specialisation and ping-pong, ragged and causal, one key block or four.
TEST_P(TensorDescriptor, OverlappedAttentionComputesTheSameBits) {
  auto k = kernel("attention_fwd_descriptors", examples::attention_fwd_descriptors<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
  const int heads = 2, D = 64;
  for (int seq : {40, 200})
    for (bool causal : {false, true})
      for (int mode = 0; mode < 3; ++mode) { // plain, warp specialised, ping-pong
        SCOPED_TRACE(fmt::format("T={} causal={} {}", seq, causal, std::array{"plain", "ws", "pp"}[size_t(mode)]));
        const size_t n = size_t(heads * seq * D);
        auto q = random_vector<bfloat16>(n), kk = random_vector<bfloat16>(n), v = random_vector<bfloat16>(n);
        auto overlapped = poisoned<bfloat16>(n), serial = overlapped;
        LaunchOptions o = target({uint32_t(cdiv(seq, 64)), uint32_t(heads)}, 4);
        o.warp_specialize = mode > 0;
        o.ping_pong = mode == 2;
        k(o, q, kk, v, overlapped, seq, heads * seq, 0.125f, D, 64, 64, causal);
        {
          ScopedEnv off("TEGULA_OVERLAP_DOTS", "0");
          k(o, q, kk, v, serial, seq, heads * seq, 0.125f, D, 64, 64, causal);
        }
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(std::bit_cast<uint16_t>(overlapped[i]), std::bit_cast<uint16_t>(serial[i]))
              << "element " << i << ": " << float(overlapped[i]) << " vs " << float(serial[i]);
      }
}

/// Attention at 128 x 128, d = 128 (8 warps): Q, loop-invariant, is staged
/// once in shared memory (stage-invariant-wgmma-operands) and S = Q K^T
/// reads both operands from there, rotated or not. The rotated result is
/// the same bits as the unrotated one, and close to attention in double;
/// plain TMA and warp specialised, causal and not.
/// Warp specialised, its two warpgroups taking turns issuing their dots
/// (warpgroup-turns, TEGULA_WARPGROUP_TURNS=1) compute the same bits again.
TEST_P(TensorDescriptor, AttentionWithQInSharedMemoryComputesTheSameBits) {
  auto k = kernel("attention_fwd_descriptors", examples::attention_fwd_descriptors<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
  if (GetParam().chip != "sm_90a")
    GTEST_SKIP() << "wgmma (sm_90a) only: mma.sync reads Q from registers";
  const int heads = 1, D = 128, B = 128;
  std::vector<bfloat16> none(size_t(B * D));
  CompiledKernel c = k.compile({none, none, none, none, B, B, 0.1f, D, B, B, true},
                               {.chip = "sm_90a", .num_warps = 8, .assemble = false});
  EXPECT_THAT(c.ptx, HasSubstr("wgmma.wait_group.sync.aligned 1;")) << "the loop is not rotated";
  for (int seq : {200}) // the first program sees one key block, the second two (the last ragged)
    for (bool causal : {false, true})
      for (bool ws : {false, true}) {
        SCOPED_TRACE(fmt::format("T={} causal={} {}", seq, causal, ws ? "ws" : "plain"));
        const size_t n = size_t(heads * seq * D);
        auto q = random_vector<bfloat16>(n), kk = random_vector<bfloat16>(n), v = random_vector<bfloat16>(n);
        auto rotated = poisoned<bfloat16>(n), unrotated = rotated;
        LaunchOptions o = target({uint32_t(cdiv(seq, B)), uint32_t(heads)}, 8);
        o.warp_specialize = ws;
        k(o, q, kk, v, rotated, seq, heads * seq, 0.125f, D, B, B, causal);
        {
          ScopedEnv off("TEGULA_OVERLAP_DOTS", "0");
          k(o, q, kk, v, unrotated, seq, heads * seq, 0.125f, D, B, B, causal);
        }
        EXPECT_LT(rel_error(rotated, attention_reference(q, kk, v, heads, seq, D, 0.125, causal)),
                  tolerance<bfloat16>());
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(std::bit_cast<uint16_t>(rotated[i]), std::bit_cast<uint16_t>(unrotated[i]))
              << "element " << i << ": " << float(rotated[i]) << " vs " << float(unrotated[i]);
        if (!ws)
          continue;
        auto turns = poisoned<bfloat16>(n);
        {
          ScopedEnv on("TEGULA_WARPGROUP_TURNS", "1");
          k(o, q, kk, v, turns, seq, heads * seq, 0.125f, D, B, B, causal);
        }
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(std::bit_cast<uint16_t>(rotated[i]), std::bit_cast<uint16_t>(turns[i]))
              << "element " << i << ": " << float(rotated[i]) << " vs " << float(turns[i]) << " with turns";
      }
}

/// overlap-chained-dots beyond attention: the fused MLP rotated (checked in
/// the PTX) computes what the interpreter does and the same bits as
/// unrotated, for 0, 1, 2 and 5 chunks (0: the prologue and epilogue are
/// skipped and the accumulator's initial value comes out).
TEST_P(TensorDescriptor, OverlappedMlpChunksMatchTheInterpreter) {
  auto k = kernel("mlp_chunks", mlp_chunks, {"x", "w1", "w2", "out", "M", "rows", "hidden", "D", "BM", "BH"});
  const int M = 100, rows = 320, D = 64;
  auto x = random_vector<bfloat16>(size_t(M * D)), w1 = random_vector<bfloat16>(size_t(rows * D)),
       w2 = random_vector<bfloat16>(size_t(rows * D));
  if (GetParam().chip == "sm_90a") {
    CompiledKernel c = k.compile({x, w1, w2, std::vector<float>(size_t(M * D)), M, rows, rows, D, 64, 64},
                                 {.chip = "sm_90a", .assemble = false});
    EXPECT_THAT(c.ptx, HasSubstr("wgmma.wait_group.sync.aligned 1;")) << "the loop is not rotated";
  }
  for (int hidden : {0, 64, 100, 320}) {
    SCOPED_TRACE(fmt::format("hidden {}", hidden));
    std::vector<float> want(size_t(M * D), NAN), got = want, serial = want;
    const Grid g{uint32_t(cdiv(M, 64))};
    k({.grid = g, .backend = Backend::Interp}, x, w1, w2, want, M, rows, hidden, D, 64, 64);
    k(target(g, 4), x, w1, w2, got, M, rows, hidden, D, 64, 64);
    EXPECT_LT(rel_error(got, to_double(want)), 1e-2);
    if (hidden == 0)
      EXPECT_EQ(got, std::vector<float>(size_t(M * D), 0.0f));
    ScopedEnv off("TEGULA_OVERLAP_DOTS", "0");
    k(target(g, 4), x, w1, w2, serial, M, rows, hidden, D, 64, 64);
    EXPECT_EQ(got, serial);
  }
}

/// Flash attention with K and V through descriptors (TMA rings feeding
/// wgmma with A in registers on sm_90a: Q K^T with K transposed, P V)
/// against the pointer version in the interpreter.
TEST_P(TensorDescriptor, AttentionMatchesThePointerKernel) {
  auto ref = kernel("attention_fwd", examples::attention_fwd<bfloat16>,
                    {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
  auto k = kernel("attention_fwd_descriptors", examples::attention_fwd_descriptors<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
  const int heads = 2;
  for (int seq : {40, 130})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(fmt::format("T={} causal={}", seq, causal));
      const size_t n = size_t(heads * seq * 64);
      auto q = random_vector<bfloat16>(n), kk = random_vector<bfloat16>(n), v = random_vector<bfloat16>(n);
      auto want = poisoned<bfloat16>(n), got = want;
      const float scale = 0.125f;
      Grid g{uint32_t(cdiv(seq, 64)), uint32_t(heads)};
      ref({.grid = g, .backend = Backend::Interp}, q, kk, v, want, seq, scale, 64, 64, 64, causal);
      LaunchOptions o = target();
      o.grid = g;
      k(o, q, kk, v, got, seq, heads * seq, scale, 64, 64, 64, causal);
      EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
    }
  // On sm_90a both dots read TMA rings.
  std::vector<bfloat16> x(2 * 128 * 64);
  std::string ptx = k.compile({x, x, x, x, 128, 256, 0.125f, 64, 64, 64, true},
                              {.chip = "sm_90a", .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("cp.async.bulk.tensor.2d.shared::cluster"));
  EXPECT_THAT(ptx, Not(HasSubstr("cp.async.cg")));
}

/// The persistent GEMM through descriptors: fewer programs than tiles, so
/// each runs several tiles' TMA rings (initialised, drained and released per
/// tile) and TMA stores.
TEST_P(TensorDescriptor, PersistentMatmul) {
  auto k = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  const int M = 200, N = 136, K = 160;
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  auto want = poisoned<bfloat16>(size_t(M * N)), got = want;
  k({.grid = {3}, .backend = Backend::Interp}, a, b, want, M, N, K, 64, 64, 32, 2);
  k(target({3}), a, b, got, M, N, K, 64, 64, 32, 2);
  EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
}

/// The epilogue's operand through TMA, bf16 (ldmatrix from the swizzled
/// tile on sm_90a) and f32 (vector reads), on ragged blocks (zeros outside).
template <class S> void checkScaledProduct(const LaunchOptions &target) {
  auto k = kernel("scaled_product", scaled_product<S>, {"a", "b", "scale", "c", "M", "N", "K", "BM", "BN", "BK"});
  const int M = 100, N = 72, K = 48;
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  auto scale = random_vector<S>(size_t(M * N));
  auto want = poisoned<float>(size_t(M * N)), got = want;
  LaunchOptions o = target;
  o.grid = {uint32_t(cdiv(M, 64)), uint32_t(cdiv(N, 64))};
  k(o, a, b, scale, got, M, N, K, 64, 64, 16);
  k({.grid = o.grid, .backend = Backend::Interp}, a, b, scale, want, M, N, K, 64, 64, 16);
  EXPECT_LT(rel_error(got, to_double(want)), 1e-5);
}
TEST_P(TensorDescriptor, EpilogueOperandBf16) { checkScaledProduct<bfloat16>(target()); }
TEST_P(TensorDescriptor, EpilogueOperandF32) { checkScaledProduct<float>(target()); }

TEST_P(TensorDescriptor, MatmulBf16) { checkMatmulDescriptors<bfloat16>(target(), tolerance<bfloat16>()); }
TEST_P(TensorDescriptor, MatmulF32) { checkMatmulDescriptors<float>(target(), 1e-5); }

TEGULA_INSTANTIATE_CHIP_TARGETS(TensorDescriptor);

//===----------------------------------------------------------------------===//
// What the compiler emits (no GPU needed; ptxas checks the code where present)
//===----------------------------------------------------------------------===//

TEST(TensorDescriptorPtx, LoadsUseTmaOnHopperAndMaskedLoadsElsewhere) {
  auto k = kernel("shifted_copy", shifted_copy<bfloat16>,
                  {"x", "out", "M", "N", "ldx", "ldo", "SHIFT", "BM", "BN"});
  std::vector<bfloat16> x(64 * 64), out(64 * 64);
  std::vector<Arg> args = {x, out, 64, 64, 64, 64, 1, 32, 64};
  CompiledKernel hopper = k.compile(args, {.chip = "sm_90a"});
  // The tensor map: a 128-byte, 64-byte aligned parameter after the kernel's own.
  EXPECT_THAT(hopper.ptx, HasSubstr(".param .align 64 .b8 shifted_copy_param_6[128]"));
  EXPECT_THAT(hopper.ptx, HasSubstr("cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                                    "mbarrier::complete_tx::bytes"));
  EXPECT_THAT(hopper.ptx, HasSubstr("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%rd"));
  EXPECT_THAT(hopper.ptx, HasSubstr("mbarrier.try_wait.parity.shared::cta.b64"));
  EXPECT_EQ(hopper.tensor_maps.empty(), false);
  if (!hopper.cubin.empty())
    EXPECT_EQ(hopper.spill_bytes, 0) << hopper.ptxas_log;
  CompiledKernel ampere = k.compile(args, {.chip = "sm_80"});
  EXPECT_THAT(ampere.ptx, Not(HasSubstr("cp.async.bulk")));
  EXPECT_TRUE(ampere.tensor_maps.empty());
}

/// A GEMM epilogue's operand loaded through TMA lands in a swizzled tile
/// (its map swizzled, a box per 128-byte block of columns) and is read with
/// ldmatrix straight into the accumulator's layout: the GELU backward's
/// pre block beside the accumulator took a 64 KiB conversion before.
TEST(TensorDescriptorPtx, EpilogueOperandsLoadIntoTheAccumulatorsLayout) {
  auto k = kernel("scaled_product", scaled_product<bfloat16>,
                  {"a", "b", "scale", "c", "M", "N", "K", "BM", "BN", "BK"});
  std::vector<bfloat16> x(128 * 128);
  std::vector<float> c(128 * 128);
  CompiledKernel hopper = k.compile({x, x, x, c, 128, 128, 128, 64, 128, 32}, {.chip = "sm_90a", .num_stages = 1});
  EXPECT_THAT(hopper.ptx, HasSubstr("wgmma.mma_async"));
  EXPECT_THAT(hopper.ptx, HasSubstr("ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
  // scale's map: box 64 x 64 (128-byte rows), swizzled 128 bytes.
  EXPECT_THAT(hopper.tensor_maps, HasSubstr(" 64 64 128"));
  if (!hopper.cubin.empty())
    EXPECT_EQ(hopper.spill_bytes, 0) << hopper.ptxas_log;
}

/// The TMA rings: per stage one mbarrier that A's and B's copies share -
/// one expect_tx of both tiles' bytes, a box per 128-byte-wide block (B's
/// 256-byte rows: two), one wait on the stage's phase; the tensor maps of
/// the rings are swizzled; the persistent kernel stages its C block with
/// stmatrix. ptxas: no spills.
TEST(TensorDescriptorPtx, PipelinedLoadsFillWgmmaTilesWithTma) {
  auto k = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  std::vector<bfloat16> x(256 * 256);
  for (auto [BN, warps] : {std::pair{128, 4}, std::pair{256, 8}}) {
    SCOPED_TRACE(fmt::format("128x{}x64, {} warps", BN, warps));
    std::vector<Arg> args = {x, x, x, 256, 256, 256, 256, 256, 256, 128, BN, 64};
    CompiledKernel c = k.compile(args, {.chip = "sm_90a", .num_warps = warps, .num_stages = 3});
    EXPECT_EQ(occurrences(c.ptx, "mbarrier.try_wait.parity.shared::cta.b64 %tegula_done, [%rd"), 1);
    EXPECT_THAT(c.ptx, HasSubstr("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%rd"));
    EXPECT_THAT(c.ptx, HasSubstr(fmt::format("], {};", 128 * 64 * 2 + 64 * BN * 2))); // A's and B's stage
    EXPECT_THAT(c.ptx, Not(HasSubstr(fmt::format("], {};", 128 * 64 * 2))));           // not A's alone
    EXPECT_THAT(c.ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n"));
    EXPECT_THAT(c.ptx, Not(HasSubstr("cp.async.cg")));
    // Two rings (A, B) of three stages plus the C tile's plain TMA-free store.
    // (Each record ends with its descriptor's line in examples/kernels.h.)
    EXPECT_THAT(c.tensor_maps, HasSubstr(" 128 64 128 @")); // A: 128 x 64 boxes, 128-byte swizzle
    EXPECT_THAT(c.tensor_maps, HasSubstr(" 64 64 128 @"));  // B: 64 x 64 boxes, 128-byte swizzle
    EXPECT_THAT(c.tensor_maps, HasSubstr("kernels.h:"));
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
    std::printf("[tegula test] TMA + wgmma 128x%dx64, %d warps, 3 stages: %d registers, %d spill "
                "bytes\n",
                BN, warps, c.registers, c.spill_bytes);
  }
  auto persistent = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
                           {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  for (auto [BN, warps] : {std::pair{128, 4}, std::pair{256, 8}}) {
    CompiledKernel c = persistent.compile({x, x, x, 256, 256, 256, 128, BN, 64, 8},
                                          {.chip = "sm_90a", .num_warps = warps, .num_stages = 3});
    EXPECT_THAT(c.ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"));
    // The bf16 C block is staged with stmatrix.x4: 128 elements a thread,
    // four words an instruction, no single-word stores.
    EXPECT_EQ(occurrences(c.ptx, "stmatrix.sync.aligned.m8n8.x4.shared.b16"), 16);
    EXPECT_THAT(c.ptx, Not(HasSubstr("st.shared.b32")));
    // Not warp specialised: each tile's rings reuse the bytes, so the store
    // waits for its copy's read right away (deferring it is for the
    // warp-specialised kernel below).
    EXPECT_EQ(occurrences(c.ptx, "cp.async.bulk.wait_group.read 0;"), 1);
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
    std::printf("[tegula test] persistent TMA + wgmma 128x%dx64, %d warps, 3 stages: %d registers, "
                "%d spill bytes\n",
                BN, warps, c.registers, c.spill_bytes);
  }
}

/// Warp specialisation in the PTX: the producer warpgroup (4 more warps in
/// .maxntid) gives registers up and waits on the release barriers; the
/// consumers raise their limit (8 warps: 232), wait once a stage (A's and
/// B's copies share its mbarrier), release it one arrival a warp (its lanes
/// meet, lane 0 arrives) and meet at bar.sync 1 over their own threads only.
/// ptxas: no spills.
TEST(TensorDescriptorPtx, WarpSpecializedRingsHaveAProducerWarpgroup) {
  auto k = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  std::vector<bfloat16> x(256 * 256);
  for (auto [BN, warps, stages] : {std::tuple{128, 4, 4}, std::tuple{256, 8, 3}}) {
    SCOPED_TRACE(fmt::format("128x{}x64, {} warps, {} stages", BN, warps, stages));
    std::vector<Arg> args = {x, x, x, 256, 256, 256, 256, 256, 256, 128, BN, 64};
    CompiledKernel c = k.compile(
        args, {.chip = "sm_90a", .num_warps = warps, .num_stages = stages, .warp_specialize = true});
    EXPECT_EQ(c.producer_warps, 4);
    EXPECT_THAT(c.ptx, HasSubstr(fmt::format(".maxntid {}, 1, 1", (warps + 4) * 32)));
    EXPECT_THAT(c.ptx, HasSubstr(fmt::format("bar.sync 1, {};", warps * 32)));
    EXPECT_THAT(c.ptx, HasSubstr("bar.warp.sync -1;\n@%p"));
    EXPECT_THAT(c.ptx, HasSubstr(" mbarrier.arrive.shared::cta.b64 _, [%rd"));
    // Release barriers: one arrival a consumer warp.
    EXPECT_THAT(c.ptx, ContainsRegex(fmt::format("mbarrier\\.init\\.shared::cta\\.b64 \\[%rd[0-9]+\\], {};", warps)));
    EXPECT_THAT(c.ptx,
                Not(ContainsRegex(fmt::format("mbarrier\\.init\\.shared::cta\\.b64 \\[%rd[0-9]+\\], {};", warps * 32))));
    // The consumers' stage wait and the producer's release wait: one each.
    EXPECT_EQ(occurrences(c.ptx, "mbarrier.try_wait.parity.shared::cta.b64 %tegula_done, [%rd"), 2);
    if (warps == 8) {
      EXPECT_THAT(c.ptx, HasSubstr("setmaxnreg.dec.sync.aligned.u32 40;"));
      EXPECT_THAT(c.ptx, HasSubstr("setmaxnreg.inc.sync.aligned.u32 232;"));
      // The pool setmaxnreg moves registers in: 384 threads x 168, the count
      // the kernel declares (.maxnreg) and ptxas then allocates, = 128 x 40 +
      // 256 x 232.
      EXPECT_THAT(c.ptx, HasSubstr(".maxnreg 168"));
      if (!c.cubin.empty())
        EXPECT_EQ(c.registers, 168);
    }
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
    std::printf("[tegula test] warp-specialised TMA + wgmma 128x%dx64, %d+4 warps, %d stages: %d registers, %d "
                "spill bytes\n",
                BN, warps, stages, c.registers, c.spill_bytes);
    // Persistent: the C block's TMA store waits for its copy's read before
    // the next tile stages its block, and once after the tile loop - not
    // right after the commit, which would hold warp 0 (and its warpgroup's
    // next wgmma) back (the simulator reports a missing first wait: the
    // persistent tests). At 128x256 the C block's four 128-byte column
    // blocks are staged two at a time (layout::tmaStoreStaging): each waits
    // for the copy two blocks back (wait_group.read 1), across tiles too.
    CompiledKernel persistent =
        kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
               {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"})
            .compile({x, x, x, 256, 256, 256, 128, BN, 64, 8},
                     {.chip = "sm_90a", .num_warps = warps, .num_stages = stages, .warp_specialize = true});
    const bool staged = BN == 256;
    EXPECT_EQ(occurrences(persistent.ptx, "cp.async.bulk.wait_group.read 0;"), staged ? 1 : 2);
    EXPECT_EQ(occurrences(persistent.ptx, "cp.async.bulk.wait_group.read 1;"), staged ? 4 : 0);
    EXPECT_THAT(persistent.ptx, Not(ContainsRegex(
                                    "cp\\.async\\.bulk\\.commit_group;\n@%p[0-9]+ cp\\.async\\.bulk\\.wait_group\\.read 0")));
    if (!persistent.cubin.empty())
      EXPECT_EQ(persistent.spill_bytes, 0) << persistent.ptxas_log;
    // Without the option: no producer.
    CompiledKernel plain = k.compile(args, {.chip = "sm_90a", .num_warps = warps, .num_stages = stages});
    EXPECT_EQ(plain.producer_warps, 0);
    EXPECT_THAT(plain.ptx, Not(HasSubstr("bar.sync 1,")));
  }
}

//===----------------------------------------------------------------------===//
// Mistakes: reported at the user's line (tracing), or naming the argument
//===----------------------------------------------------------------------===//

void innermost_stride_not_one(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  auto d = tl::make_tensor_descriptor(x, {n, n}, {1, n}, {16, 16});
  d.store({0, 0}, 0.0f);
}
void block_too_wide(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  auto d = tl::make_tensor_descriptor(x, {n, n}, {n, 1}, {4, 512});
  d.store({0, 0}, 0.0f);
}
void inner_block_under_16_bytes(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  auto d = tl::make_tensor_descriptor(x, {n, n}, {n, 1}, {16, 2});
  d.store({0, 0}, 0.0f);
}
void wrong_offset_count(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto d = tl::make_tensor_descriptor(x, {n, n}, {n, 1}, {16, 16});
  FAILS_ON_NEXT_LINE();
  d.store({0}, 0.0f);
}
void float_offset(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto d = tl::make_tensor_descriptor(x, {n, n}, {n, 1}, {16, 16});
  FAILS_ON_NEXT_LINE();
  d.store({0, 1.5}, 0.0f);
}
void shape_stride_mismatch(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  auto d = tl::make_tensor_descriptor(x, {n, n, n}, {n, 1}, {16, 16});
  d.store({0, 0}, 0.0f);
}

TEST(TensorDescriptorErrors, ReportedAtTheUsersLine) {
  struct Case {
    void (*fn)(tl::ptr<float>, tl::scalar<int32_t>);
    const char *what;
  };
  for (Case c : {Case{innermost_stride_not_one, "the innermost stride must be the literal 1"},
                 Case{block_too_wide, "at most 256"},
                 Case{inner_block_under_16_bytes, "multiple of 16 bytes"},
                 Case{wrong_offset_count, "needs 2 offsets (one per dimension), got 1"},
                 Case{float_offset, "offset 1 must be an integer, got a floating-point literal"},
                 Case{shape_stride_mismatch, "needs 2 extents and 2 strides, got 3 and 2"}}) {
    std::vector<float> x(256);
    auto k = kernel("bad_descriptor", c.fn, {"x", "n"});
    // Set by the kernel's FAILS_ON_NEXT_LINE while tracing.
    std::string err = errorOf(k, {x, 16});
    expectAtMarkedLine(err, "TensorDescriptorTest.cpp", c.what);
  }
}

/// TMA's run-time rules: a 16-byte aligned base and strides of whole 16-byte
/// units, checked by every backend.
/// TMA clips to a map's extents, not to the buffer: extents that reach past
/// the argument (64 rows of 40 floats over a 40 x 40 buffer) are refused
/// before any copy could read other memory on a GPU.
TEST(TensorDescriptorErrors, ExtentsPastTheBufferAreRefused) {
  auto k = kernel("shifted_copy", shifted_copy<float>,
                  {"x", "out", "M", "N", "ldx", "ldo", "SHIFT", "BM", "BN"});
  std::vector<float> x(40 * 40), out(64 * 40);
  try {
    k({.grid = {1, 1}, .backend = Backend::Sim, .chip = "sm_90a"}, x, out, 64, 40, 40, 40, 0, 16, 16);
    ADD_FAILURE() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("the tensor descriptor over argument 'x' (" __FILE__ ":33): its extents [64, 40] and "
                                    "strides [40, 1] (elements) reach byte 10240, past the 6400 bytes the "
                                    "argument holds"));
  }
}

TEST(TensorDescriptorErrors, MisalignedStridesAndBasesAreRefused) {
  auto k = kernel("shifted_copy", shifted_copy<float>,
                  {"x", "out", "M", "N", "ldx", "ldo", "SHIFT", "BM", "BN"});
  std::vector<float> x(40 * 40), out(40 * 40);
  // ldx = 37 floats = 148 bytes: refused by the interpreter, by the masked
  // code's assertion (sm_80) and by the tensor map's encoding (sm_90a).
  for (std::string chip : {"interp", "sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    Backend b = chip == "interp" ? Backend::Interp : Backend::Sim;
    try {
      k({.grid = {1, 1}, .backend = b, .chip = chip == "interp" ? "" : chip}, x, out, 16, 16, 37,
        40, 0, 16, 16);
      ADD_FAILURE() << "expected an error";
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), HasSubstr("stride 0")) << e.what();
      EXPECT_THAT(e.what(), HasSubstr("multiple of 16 bytes")) << e.what();
      // Every backend names the descriptor's line (sm_90a: the tensor map's).
      EXPECT_THAT(e.what(), HasSubstr("TensorDescriptorTest.cpp:33")) << e.what();
    }
  }
  std::span<float> shifted(x.data() + 1, x.size() - 1);
  try {
    k({.grid = {1, 1}, .backend = Backend::Interp}, shifted, out, 16, 16, 40, 40, 0, 16, 16);
    ADD_FAILURE() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("16-byte aligned")) << e.what();
  }
}

} // namespace
