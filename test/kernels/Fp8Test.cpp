// Fp8Test.cpp - the fp8 storage types (f8e4m3 = OCP E4M3FN, f8e5m2): the
// host conversions against the formats' definitions, conversions in kernels
// bit for bit against the interpreter on every backend (the compiled code
// converts with integer arithmetic, the interpreter with tegula/dtype.h),
// dots on fp8 operands, and the mistakes the DSL refuses.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "examples/kernels.h"
#include "kernels/ChipTargets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

uint32_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }

TEST(Fp8Host, KnownValuesAndRounding) {
  // E4M3FN: bias 7, no infinities, 448 the largest finite value.
  EXPECT_EQ(float8_e4m3(1.0f).bits, 0x38);
  EXPECT_EQ(float8_e4m3(448.0f).bits, 0x7e);
  EXPECT_EQ(float8_e4m3(-448.0f).bits, 0xfe);
  EXPECT_EQ(float8_e4m3(1e6f).bits, 0x7e);      // saturates
  EXPECT_EQ(float8_e4m3(INFINITY).bits, 0x7e);  // satfinite
  EXPECT_EQ(float8_e4m3(NAN).bits, 0x7f);
  EXPECT_TRUE(std::isnan(float(float8_e4m3(NAN))));
  EXPECT_EQ(float8_e4m3(std::ldexp(1.0f, -9)).bits, 0x01); // smallest subnormal
  EXPECT_EQ(float8_e4m3(std::ldexp(1.0f, -10)).bits, 0x00); // half of it: ties to even
  EXPECT_EQ(float8_e4m3(1.0625f).bits, 0x38);              // 1 + 1/16: tie, to even (1.0)
  EXPECT_EQ(float8_e4m3(1.1875f).bits, 0x3a);              // 1 + 3/16: tie, to even (1.25)
  EXPECT_EQ(float8_e4m3(std::nextafter(1.0625f, 2.0f)).bits, 0x39);
  EXPECT_EQ(float8_e4m3(-0.0f).bits, 0x80);
  // E5M2: bias 15, IEEE-like, 57344 the largest finite value.
  EXPECT_EQ(float8_e5m2(1.0f).bits, 0x3c);
  EXPECT_EQ(float8_e5m2(57344.0f).bits, 0x7b);
  EXPECT_EQ(float8_e5m2(INFINITY).bits, 0x7b);
  EXPECT_EQ(float8_e5m2(std::ldexp(1.0f, -16)).bits, 0x01);
  float8_e5m2 inf;
  inf.bits = 0x7c;
  EXPECT_EQ(float(inf), INFINITY);
}

TEST(Fp8Host, EveryCodeRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    float8_e4m3 a;
    a.bits = uint8_t(c);
    float8_e5m2 b;
    b.bits = uint8_t(c);
    if (!std::isnan(float(a)))
      EXPECT_EQ(float8_e4m3(float(a)).bits, c) << c;
    if (!std::isnan(float(b)) && !std::isinf(float(b)))
      EXPECT_EQ(float8_e5m2(float(b)).bits, c) << c;
  }
}

/// Conversions in a kernel: out8 = x as fp8, back = out8 as f32 again.
template <class F8>
void convert(tl::ptr<float> x, tl::ptr<F8> out8, tl::ptr<float> back, tl::scalar<int32_t> n,
             tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::tensor v = tl::load(x + offs, mask, 0.0f);
  tl::store(out8 + offs, v.to(dtype_of_v<F8>), mask);
  tl::store(back + offs, tl::load(out8 + offs, mask).to(tl::f32), mask);
}

/// Every code's value, the midpoints between neighbours and one f32 ulp to
/// either side, values past the largest, Inf, NaN, tiny and random ones.
template <class F8> std::vector<float> interestingInputs() {
  std::vector<float> values;
  std::vector<float> codes;
  for (int c = 0; c < 128; ++c) {
    F8 f;
    f.bits = uint8_t(c);
    if (std::isfinite(float(f)))
      codes.push_back(float(f));
  }
  for (size_t i = 0; i + 1 < codes.size(); ++i) {
    float mid = (codes[i] + codes[i + 1]) / 2;
    for (float v : {codes[i], mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)})
      values.push_back(v), values.push_back(-v);
  }
  for (float v : {1e9f, 600.0f, 70000.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f, 0.0f, -0.0f})
    values.push_back(v);
  for (float v : random_vector<float>(500, -500.0f, 500.0f))
    values.push_back(v);
  return values;
}

using Fp8 = ChipTargetTest;

template <class F8> void checkConversions(const LaunchOptions &base) {
  auto k = kernel("convert", convert<F8>, {"x", "out8", "back", "n", "BLOCK"});
  std::vector<float> x = interestingInputs<F8>();
  const int n = int(x.size());
  std::vector<F8> want8(x.size()), got8(x.size());
  std::vector<float> want(x.size()), got(x.size());
  Grid g{uint32_t(cdiv(n, 256))};
  k({.grid = g, .backend = Backend::Interp}, x, want8, want, n, 256);
  LaunchOptions o = base;
  o.grid = g;
  k(o, x, got8, got, n, 256);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(got8[i].bits, want8[i].bits) << "x = " << x[i] << " (bits " << std::hex << bitsOf(x[i]) << ")";
    ASSERT_EQ(bitsOf(got[i]), bitsOf(want[i])) << "x = " << x[i];
  }
  // And the interpreter is the definition.
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(want8[i].bits, F8(x[i]).bits) << x[i];
}

/// The integer conversion code assembles for both targets (ptxas, where
/// the CUDA toolkit is present) without spills.
TEST(Fp8Ptx, ConversionsAssemble) {
  auto k = kernel("convert", convert<float8_e4m3>, {"x", "out8", "back", "n", "BLOCK"});
  std::vector<float> x(256);
  std::vector<float8_e4m3> y(256);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    CompiledKernel c = k.compile({x, y, x, 256, 256}, {.chip = chip});
    EXPECT_THAT(c.ptx, HasSubstr("cvt.rni.f32.f32")); // roundeven of the subnormal path
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
  }
}

/// Integers (and booleans) to fp8: through f32, which the canonicalizer
/// folds into one sitofp / uitofp that the GPU lowering used to reject.
template <class F8> void from_ints(tl::ptr<int32_t> x, tl::ptr<F8> out) {
  tl::tensor offs = tl::arange(0, 16);
  tl::tensor v = tl::load(x + offs);
  tl::store(out + offs, v.to(dtype_of_v<F8>));
  tl::store(out + 16 + offs, (v > 0).to(dtype_of_v<F8>));
}

template <class F8> void checkIntegerConversions(const LaunchOptions &base) {
  std::vector<int32_t> x = {0, 1, -1, 7, 17, -33, 100, 300, 448, 460, 500, -1000, 57344, 70000, 1 << 30, INT32_MIN};
  std::vector<F8> got(32);
  LaunchOptions o = base;
  o.grid = {1};
  kernel("from_ints", from_ints<F8>)(o, x, got);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(got[i].bits, F8(float(x[i])).bits) << x[i]; // exact in f32 or saturated either way
    EXPECT_EQ(got[16 + i].bits, F8(x[i] > 0 ? 1.0f : 0.0f).bits) << x[i];
  }
}

TEST_P(Fp8, IntegersConvertE4M3) { checkIntegerConversions<float8_e4m3>(target({1})); }
TEST_P(Fp8, IntegersConvertE5M2) { checkIntegerConversions<float8_e5m2>(target({1})); }

TEST_P(Fp8, ConversionsAreBitExactE4M3) { checkConversions<float8_e4m3>(target({1})); }
TEST_P(Fp8, ConversionsAreBitExactE5M2) { checkConversions<float8_e5m2>(target({1})); }

/// C (f32) = A B with fp8 operands of either format: the products are exact
/// in f16 (the tensor cores' input), sums in f32.
template <class FA, class FB>
void matmul_fp8(tl::ptr<FA> a, tl::ptr<FB> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                tl::constant<int> BN, tl::constant<int> BK) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, acc)) {
    tl::tensor ka = k + rk;
    tl::tensor at = tl::load(a + rm.expand_dims(1) * K + ka.expand_dims(0),
                             (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f);
    tl::tensor bt = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                             (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f);
    acc = tl::dot(at, bt, acc);
  }
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc,
            (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

template <class FA, class FB>
void checkMatmul(const LaunchOptions &base, int warps, int M = 70, int N = 40, int K = 72,
                 int BM = 64, int BN = 32, int BK = 32) {
  SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}, {} warps", M, N, K, BM, BN, BK, warps));
  auto k = kernel("matmul_fp8", matmul_fp8<FA, FB>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  std::vector<FA> a(size_t(M * K));
  std::vector<FB> b(size_t(K * N));
  std::vector<float> ra = random_vector<float>(a.size(), -4, 4), rb = random_vector<float>(b.size(), -4, 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = FA(ra[i]);
  for (size_t i = 0; i < b.size(); ++i) b[i] = FB(rb[i]);
  auto want = poisoned<float>(size_t(M * N)), got = want;
  Grid g{uint32_t(cdiv(M, BM)), uint32_t(cdiv(N, BN))};
  k({.grid = g, .backend = Backend::Interp}, a, b, want, M, N, K, BM, BN, BK);
  LaunchOptions o = base;
  o.grid = g;
  o.num_warps = warps;
  k(o, a, b, got, M, N, K, BM, BN, BK);
  // The interpreter and the simulator sum the products in double; the tensor
  // cores add fp8 products keeping fewer bits than f32 (cuBLASLt's FAST_ACCUM
  // documentation; DeepSeek-V3 measured about 14 on H800).
  EXPECT_LT(rel_error(got, to_double(want)), o.backend == Backend::GPU ? 2e-3 : 1e-6);
}

/// On sm_90a same-format fp8 dots run on wgmma (m64nNk32, both operands
/// K-major: B is stored transposed); elsewhere as f16.
TEST_P(Fp8, MatmulE4M3) {
  checkMatmul<float8_e4m3, float8_e4m3>(target({1}), 4);
  checkMatmul<float8_e4m3, float8_e4m3>(target({1}), 4, 130, 136, 200, 128, 128, 64);
  checkMatmul<float8_e4m3, float8_e4m3>(target({1}), 8, 100, 264, 136, 128, 256, 128);
}
TEST_P(Fp8, MatmulE5M2) { checkMatmul<float8_e5m2, float8_e5m2>(target({1}), 4, 100, 72, 96, 64, 64, 64); }
TEST_P(Fp8, MatmulMixedFormats) { checkMatmul<float8_e4m3, float8_e5m2>(target({1}), 4); }

TEGULA_INSTANTIATE_CHIP_TARGETS(Fp8);

//===----------------------------------------------------------------------===//
// Mistakes
//===----------------------------------------------------------------------===//

void add_fp8(tl::ptr<float8_e4m3> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 16), v + v);
  (void)n;
}
void exp_fp8(tl::ptr<float8_e4m3> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 16), tl::exp(v));
  (void)n;
}
void sum_fp8(tl::ptr<float8_e4m3> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  FAILS_ON_NEXT_LINE();
  tl::store(x, tl::sum(v, 0));
  (void)n;
}
void dot_fp8_f16(tl::ptr<float8_e4m3> x, tl::scalar<int32_t> n) {
  tl::tensor r = tl::arange(0, 16);
  tl::tensor v = tl::load(x + r.expand_dims(1) * 16 + r.expand_dims(0));
  FAILS_ON_NEXT_LINE();
  tl::tensor d = tl::dot(v, v.to(tl::f16));
  (void)d;
  (void)n;
}

void neg_fp8(tl::ptr<float8_e4m3> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 16), -v);
  (void)n;
}
void abs_fp8(tl::ptr<float8_e4m3> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 16), tl::abs(v));
  (void)n;
}
void argmax_fp8(tl::ptr<float8_e4m3> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  FAILS_ON_NEXT_LINE();
  tl::store(x, tl::argmax(v, 0).to(tl::f8e4m3));
  (void)n;
}

TEST(Fp8Errors, ArithmeticNeedsAConversionFirst) {
  struct Case {
    void (*fn)(tl::ptr<float8_e4m3>, tl::scalar<int32_t>);
    const char *what;
  };
  for (Case c : {Case{add_fp8, "fp8 is a storage type; convert with .to(tl::f32)"},
                 Case{exp_fp8, "tl::exp on f8e4m3 tiles"},
                 Case{sum_fp8, "tl::sum on f8e4m3 tiles"},
                 Case{dot_fp8_f16, "both operands must be fp8, or neither"},
                 // Once the interpreter ran these and the GPU lowering failed with IR.
                 Case{neg_fp8, "operator- on f8e4m3 tiles"}, Case{abs_fp8, "tl::abs on f8e4m3 tiles"},
                 Case{argmax_fp8, "tl::argmax on f8e4m3 tiles"}}) {
    std::vector<float8_e4m3> x(256);
    auto k = kernel("bad_fp8", c.fn, {"x", "n"});
    expectAtMarkedLine(errorOf(k, {x, 16}), "Fp8Test.cpp", c.what);
  }
}

} // namespace
