// DslCornerCasesTest.cpp - corner cases of the DSL and interpreter semantics
// (each once a bug): literal ranges, i1 ordering, signed zeros, saturation,
// mask broadcasting, small-type sums, and mistakes caught with the user's line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using tegula::testing::errorOf;
using ::testing::HasSubstr;

namespace {

void expectAtMarkedLine(const std::string &err, const std::string &what) {
  tegula::testing::expectAtMarkedLine(err, "DslCornerCasesTest.cpp", what);
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

void wide_literals(tl::ptr<int8_t> x, tl::ptr<int32_t> out, tl::ptr<int64_t> big) {
  tl::tensor offs = tl::arange(0, 4);
  tl::tensor v = tl::load(x + offs);
  tl::store(out + offs, (v < 300).to(tl::i32));          // 300 promotes, not truncates
  tl::store(big + offs, offs + 5000000000LL);             // i32 tile + i64 literal -> i64
}

TEST(DslCornerCases, IntegerLiteralsThatDoNotFitPromote) {
  auto k = kernel("wide", wide_literals);
  std::vector<int8_t> x = {1, 50, 100, -5};
  std::vector<int32_t> out(4);
  std::vector<int64_t> big(4);
  k({.grid = {1}}, x, out, big);
  EXPECT_EQ(out, (std::vector<int32_t>{1, 1, 1, 1}));
  EXPECT_EQ(big[3], 5000000003LL);
}

void narrow_fill(tl::ptr<int8_t> x) {
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 2), tl::full({2}, 300, tl::i8));
}

TEST(DslCornerCases, ExplicitTypeThatCannotHoldTheLiteralIsAnError) {
  std::vector<int8_t> x(2);
  expectAtMarkedLine(errorOf(kernel("narrow", narrow_fill), {x}), "the integer 300 does not fit in i8");
}

void f16_times_a_million(tl::ptr<float16> x) {
  tl::tensor v = tl::load(x + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 4), v * 1e6);
}
void f16_masked_by_minus_1e30(tl::ptr<float16> x) {
  tl::tensor v = tl::load(x + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 4), tl::where(v > 0.0f, v, -1e30f));
}
void f16_plus_an_integer(tl::ptr<float16> x) {
  tl::tensor v = tl::load(x + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 4), v + 100000);
}
void e4m3_fill(tl::ptr<float> x) {
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 4), tl::full({4}, 1000.0f, tl::f8e4m3).to(tl::f32));
}
/// What does fit: the largest finite f16, infinities, a literal that rounds
/// to zero or to the largest finite value rather than past it.
void f16_edges(tl::ptr<float16> x) {
  tl::tensor v = tl::load(x + tl::arange(0, 4));
  tl::tensor r = tl::where(tl::arange(0, 4) == 0, v + 65504.0f, v * 1e-10);
  r = tl::where(tl::arange(0, 4) == 2, -INFINITY, r);
  r = tl::where(tl::arange(0, 4) == 3, tl::full({4}, 65519.0, tl::f16), r);
  tl::store(x + tl::arange(0, 4), r);
}

TEST(DslCornerCases, FloatLiteralsTheTileTypeCannotHoldAreErrors) {
  std::vector<float16> h(4, float16(1.0f));
  std::vector<float> f(4);
  expectAtMarkedLine(errorOf(kernel("k", f16_times_a_million), {h}),
                     "the literal 1e+06 is out of range for f16 (largest finite value 65504): it would become inf; "
                     "compute in a wider type (x.to(tl::f32)) or write INFINITY if that is meant");
  expectAtMarkedLine(errorOf(kernel("k", f16_masked_by_minus_1e30), {h}),
                     "the literal -1e+30 is out of range for f16 (largest finite value 65504): it would become inf; "
                     "compute in a wider type (x.to(tl::f32)) or write -INFINITY if that is meant");
  expectAtMarkedLine(errorOf(kernel("k", f16_plus_an_integer), {h}), "the literal 100000 is out of range for f16");
  expectAtMarkedLine(errorOf(kernel("k", e4m3_fill), {f}),
                     "the literal 1000 is out of range for f8e4m3 (largest finite value 448): it would become NaN");
  auto edges = kernel("k", f16_edges);
  std::vector<float16> x = {float16(-1.0f), float16(3.0f), float16(0.0f), float16(0.0f)};
  edges({.grid = {1}}, x);
  EXPECT_EQ(float(x[0]), 65504.0f); // -1 + 65504 rounds to it
  EXPECT_EQ(float(x[1]), 0.0f);
  EXPECT_EQ(float(x[2]), -INFINITY);
  EXPECT_EQ(float(x[3]), 65504.0f);
}

void far_pointer(tl::ptr<int32_t> x, tl::ptr<int32_t> out) {
  FAILS_ON_NEXT_LINE();
  tl::store(out, tl::load(x + 4294967297LL));
}

TEST(DslCornerCases, SixtyFourBitOffsetsAreNotTruncated) {
  std::vector<int32_t> x = {10, 11, 12}, out(1);
  std::string err = errorOf(kernel("far", far_pointer, {"x", "out"}), {x, out});
  EXPECT_THAT(err, HasSubstr("reads element 4294967297 of argument 'x'"));
}

void long_loop(tl::ptr<int64_t> out) {
  tl::tensor c = tl::scalar_const(0, tl::i64);
  for (auto i : tl::range(0, 5000000000LL, 1000000000, c))
    c = c + 1 + i * 0;
  tl::store(out, c);
}

TEST(DslCornerCases, LoopBoundsBeyondI32UseI64) {
  std::vector<int64_t> out(1);
  kernel("long_loop", long_loop)({.grid = {1}}, out);
  EXPECT_EQ(out[0], 5);
}

void saturate(tl::ptr<float> x, tl::ptr<int64_t> out, tl::ptr<int64_t> big) {
  tl::tensor offs = tl::arange(0, 4);
  tl::store(out + offs, tl::load(x + offs).to(tl::i64));
  tl::store(big + offs, tl::load(out + offs).to(tl::f32).to(tl::i64));
}

TEST(DslCornerCases, FloatToI64Saturates) {
  std::vector<float> x = {1e30f, -1e30f, NAN, -2.75f};
  std::vector<int64_t> out(4), big(4);
  kernel("saturate", saturate)({.grid = {1}}, x, out, big);
  EXPECT_EQ(out, (std::vector<int64_t>{INT64_MAX, INT64_MIN, 0, -2}));
}

void int_to_float(tl::ptr<int64_t> x, tl::ptr<float> out) {
  tl::store(out + tl::arange(0, 2), tl::load(x + tl::arange(0, 2)).to(tl::f32));
}

TEST(DslCornerCases, I64ToF32RoundsOnce) {
  std::vector<int64_t> x = {(int64_t(1) << 62) + (int64_t(1) << 38) + 1, -3};
  std::vector<float> out(2);
  kernel("i2f", int_to_float)({.grid = {1}}, x, out);
  EXPECT_EQ(out[0], float(x[0])); // C++'s conversion is correctly rounded
  EXPECT_EQ(out[1], -3.0f);
}

void bool_order(tl::ptr<int32_t> x, tl::ptr<int32_t> out) {
  tl::tensor offs = tl::arange(0, 4);
  tl::tensor v = tl::load(x + offs);
  tl::tensor a = v > 0, b = v > 1;
  tl::store(out + offs, (a > b).to(tl::i32));
  tl::store(out + 4 + offs, tl::maximum(a, b).to(tl::i32));
  tl::tensor t = tl::full({4}, true, tl::i1), f = tl::full({4}, false, tl::i1);
  tl::store(out + 8 + offs, (t > f).to(tl::i32));          // constant-folded
  tl::store(out + 12 + offs, tl::maximum(t, f).to(tl::i32));
  tl::store(out + 16, tl::max(a, 0).to(tl::i32));          // any
  tl::store(out + 17, tl::min(a, 0).to(tl::i32));          // all
}

TEST(DslCornerCases, BooleansOrderFalseBeforeTrueFoldedOrNot) {
  std::vector<int32_t> x = {0, 1, 2, 3}, out(18);
  kernel("bool_order", bool_order)({.grid = {1}}, x, out);
  EXPECT_EQ(std::vector<int32_t>(out.begin(), out.begin() + 4), (std::vector<int32_t>{0, 1, 0, 0}));
  EXPECT_EQ(std::vector<int32_t>(out.begin() + 4, out.begin() + 8), (std::vector<int32_t>{0, 1, 1, 1}));
  EXPECT_EQ(out[8], 1);
  EXPECT_EQ(out[12], 1);
  EXPECT_EQ(out[16], 1);
  EXPECT_EQ(out[17], 0);
}

// `~mask` flips the mask (Triton's spelling); C++ would promote it to int.
void not_mask(tl::ptr<int32_t> x, tl::ptr<int32_t> out) {
  tl::tensor offs = tl::arange(0, 4);
  tl::tensor big = tl::load(x + offs) > 1;
  tl::tensor small = ~big;
  tl::store(out + offs, tl::where(small, 10, 20));
  tl::store(out + 4 + offs, 7, ~(offs < 2)); // a store mask
  tl::store(out + 8 + offs, (~small).to(tl::i32));
  tl::store(out + 12 + offs, (~tl::full({4}, true, tl::i1)).to(tl::i32)); // constant-folded
}

TEST(DslCornerCases, TildeOnABoolTileIsLogicalNot) {
  for (Backend backend : {Backend::Interp, Backend::Sim}) {
    SCOPED_TRACE(backend == Backend::Sim ? "sim" : "interp");
    std::vector<int32_t> x = {0, 1, 2, 3}, out(16, -1);
    kernel("not_mask", not_mask)({.grid = {1}, .backend = backend}, x, out);
    EXPECT_EQ(out, (std::vector<int32_t>{10, 10, 20, 20, -1, -1, 7, 7, 0, 0, 1, 1, 0, 0, 0, 0}));
  }
}

void signed_zero(tl::ptr<float> x, tl::ptr<float> out) {
  tl::tensor offs = tl::arange(0, 2);
  tl::tensor v = tl::load(x + offs);
  tl::store(out + offs, tl::maximum(v, 0.0f));
  tl::store(out + 2 + offs, tl::minimum(v, 0.0f));
  tl::store(out + 4, tl::max(v, 0));
}

TEST(DslCornerCases, MaximumPrefersPositiveZero) {
  std::vector<float> x = {-0.0f, 0.0f}, out(5, NAN);
  kernel("signed_zero", signed_zero)({.grid = {1}}, x, out);
  EXPECT_FALSE(std::signbit(out[0]));
  EXPECT_FALSE(std::signbit(out[1]));
  EXPECT_TRUE(std::signbit(out[2]));  // min(-0, +0) = -0
  EXPECT_FALSE(std::signbit(out[3])); // min(+0, +0) = +0
  EXPECT_FALSE(std::signbit(out[4]));
}

void fused(tl::ptr<float> x, tl::ptr<float> c, tl::ptr<float> out) {
  tl::tensor offs = tl::arange(0, 4);
  tl::tensor v = tl::load(x + offs);
  tl::store(out + offs, tl::fma(v, v, tl::load(c + offs)));
  tl::store(out + 4 + offs, v * v + tl::load(c + offs));
  tl::store(out + 8 + offs, tl::fma(2.0f, v, 1.0f)); // literals broadcast
}

/// (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24: tl::fma rounds once and keeps it,
/// a product and a sum round the product to 1 + 2^-11 first (nothing fuses
/// them) - in the interpreter and in the simulator's GPU code alike.
TEST(DslCornerCases, FmaRoundsOnce) {
  const float a = 1.0f + std::ldexp(1.0f, -12), c = -(1.0f + std::ldexp(1.0f, -11));
  std::vector<float> x = {a, a, 3.0f, -0.5f}, cs = {c, c, 1.0f, 0.25f};
  for (Backend backend : {Backend::Interp, Backend::Sim}) {
    SCOPED_TRACE(backend == Backend::Interp ? "interpreter" : "simulator");
    std::vector<float> out(12, NAN);
    kernel("fused", fused)({.grid = {1}, .backend = backend}, x, cs, out);
    EXPECT_EQ(out[0], std::ldexp(1.0f, -24));
    EXPECT_EQ(out[4], 0.0f);
    EXPECT_EQ(out[2], 10.0f);
    EXPECT_EQ(out[3], 0.5f);
    EXPECT_EQ(std::vector<float>(out.begin() + 8, out.end()), (std::vector<float>{2 * a + 1, 2 * a + 1, 7.0f, 0.0f}));
  }
}

void exp2_of(tl::ptr<float> x, tl::ptr<float> out) {
  tl::tensor offs = tl::arange(0, 16);
  tl::store(out + offs, tl::exp2(tl::load(x + offs)));
}

/// tl::exp2 on f32 is the GPU's ex2.approx.ftz: one MUFU.EX2 an element
/// (libdevice's exp2f keeps subnormal results at three more instructions),
/// so results below 2^-126 are +0 - in the interpreter and the simulator
/// too. On the GPU the approximation is within 2^-22 relative.
TEST(DslCornerCases, Exp2FlushesSubnormalResultsToZero) {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<float> x = {-130.0f, -126.5f, -149.0f, -125.0f, -100.0f, 0.0f, tiny, -tiny,
                                -INFINITY, INFINITY, NAN, 10.0f, 0.5f, -1.0f, 3.0f, -0.0f};
  const std::vector<float> want = {0.0f, 0.0f, 0.0f, std::ldexp(1.0f, -125), std::ldexp(1.0f, -100), 1.0f,
                                   1.0f, 1.0f, 0.0f, INFINITY, NAN, 1024.0f, float(std::exp2(0.5)), 0.5f,
                                   8.0f, 1.0f};
  for (Backend backend : backendsWithTheGpu("exp2")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> out(16, 42.0f);
    kernel("exp2_of", exp2_of)({.grid = {1}, .backend = backend}, x, out);
    for (size_t i = 0; i < x.size(); ++i) {
      SCOPED_TRACE(fmt::format("exp2({})", x[i]));
      if (std::isnan(want[i]))
        EXPECT_TRUE(std::isnan(out[i])) << out[i];
      else if (backend == Backend::GPU && std::isfinite(want[i]) && want[i] != 0.0f)
        EXPECT_NEAR(out[i], want[i], want[i] * std::ldexp(1.0f, -22));
      else
        EXPECT_EQ(out[i], want[i]);
    }
  }
  const std::string ptx = kernel("exp2_of", exp2_of).compile({x, x}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("ex2.approx.ftz.f32"));
  EXPECT_THAT(ptx, ::testing::Not(HasSubstr("ex2.approx.f32")));
}

void quotients(tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> out, tl::ptr<double> d) {
  tl::tensor offs = tl::arange(0, 16);
  tl::tensor x = tl::load(a + offs), y = tl::load(b + offs);
  tl::store(out + offs, tl::fdiv(x, y));
  tl::store(out + 16 + offs, tl::fdiv(1.0f, y)); // a literal broadcasts
  tl::store(d + offs, tl::fdiv(x.to(tl::f64), y.to(tl::f64)));
}

/// tl::fdiv: the GPU's div.full.f32 for f32 (within 2 ulp over the full
/// range - huge and tiny divisors, infinities), exact division for f64 and
/// in the interpreter and the simulator.
TEST(DslCornerCases, FdivIsTheQuotientWithin2Ulp) {
  const std::vector<float> a = {1.0f, 2.0f, -7.0f, 3.0f, 1e30f, 1e-30f, 5.0f, 0.0f,
                                1.0f, -1.0f, INFINITY, 6.0f, 1.0f, 10.0f, 123.456f, -0.5f};
  const std::vector<float> b = {3.0f, 7.0f, 9.0f, 1e38f, 1e-8f, 3e37f, INFINITY, 2.0f,
                                0.0f, -0.0f, 2.0f, NAN, 2e-38f, 3.0f, 0.1f, 1.5f};
  for (Backend backend : backendsWithTheGpu("fdiv")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> out(32, 42.0f);
    std::vector<double> d(16, 42.0);
    kernel("quotients", quotients)({.grid = {1}, .backend = backend}, a, b, out, d);
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(fmt::format("{} / {}", a[i], b[i]));
      for (auto [got, want] : {std::pair{out[i], a[i] / b[i]}, std::pair{out[16 + i], 1.0f / b[i]}}) {
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(got)) << got;
        else if (backend == Backend::GPU && std::isfinite(want) && want != 0.0f)
          EXPECT_NEAR(got, want, std::fabs(want) * 2 * std::numeric_limits<float>::epsilon());
        else
          EXPECT_EQ(got, want);
      }
      const double exact = double(a[i]) / double(b[i]);
      if (std::isnan(exact))
        EXPECT_TRUE(std::isnan(d[i]));
      else
        EXPECT_EQ(d[i], exact);
    }
  }
  const std::string ptx =
      kernel("quotients", quotients).compile({a, b, a, std::vector<double>(16)}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("div.full.f32"));
  EXPECT_THAT(ptx, ::testing::Not(HasSubstr("div.rn.f32")));
  EXPECT_THAT(ptx, HasSubstr("div.rn.f64"));
}

void reciprocals(tl::ptr<float> a, tl::ptr<float> out, tl::ptr<double> d) {
  tl::tensor offs = tl::arange(0, 16);
  tl::tensor x = tl::load(a + offs);
  tl::store(out + offs, tl::rcp(x));
  tl::store(d + offs, tl::rcp(x.to(tl::f64)));
}

/// tl::rcp: the GPU's rcp.approx.ftz.f32 for f32 (within 1 ulp), flushing
/// subnormal inputs (to a signed infinity) and results (to a signed zero) on
/// every backend; exact division for f64.
TEST(DslCornerCases, RcpIsTheReciprocalWithin1UlpFlushingSubnormals) {
  const std::vector<float> a = {3.0f, -7.0f, 0.1f, 1e-8f, 1e38f, -3e37f, 1e-39f, -1e-40f,
                                0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.5f, 123.456f, 2e-38f};
  auto want = [](float x) -> float {
    const float in = std::fabs(x) < std::numeric_limits<float>::min() ? std::copysign(0.0f, x) : x;
    const float r = 1.0f / in;
    return std::fabs(r) < std::numeric_limits<float>::min() ? std::copysign(0.0f, r) : r;
  };
  EXPECT_EQ(want(1e38f), 0.0f);
  EXPECT_TRUE(std::signbit(want(-3e37f)));
  EXPECT_EQ(want(-1e-40f), -INFINITY);
  for (Backend backend : backendsWithTheGpu("rcp")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> out(16, 42.0f);
    std::vector<double> d(16, 42.0);
    kernel("reciprocals", reciprocals)({.grid = {1}, .backend = backend}, a, out, d);
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(fmt::format("1 / {}", a[i]));
      const float w = want(a[i]);
      if (std::isnan(w))
        EXPECT_TRUE(std::isnan(out[i])) << out[i];
      else if (backend == Backend::GPU && std::isfinite(w) && w != 0.0f)
        EXPECT_NEAR(out[i], w, std::fabs(w) * std::numeric_limits<float>::epsilon());
      else {
        EXPECT_EQ(out[i], w);
        EXPECT_EQ(std::signbit(out[i]), std::signbit(w));
      }
      const double exact = 1.0 / double(a[i]);
      if (std::isnan(exact))
        EXPECT_TRUE(std::isnan(d[i]));
      else
        EXPECT_EQ(d[i], exact);
    }
  }
  const std::string ptx =
      kernel("reciprocals", reciprocals).compile({a, a, std::vector<double>(16)}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("rcp.approx.ftz.f32"));
  EXPECT_THAT(ptx, ::testing::Not(HasSubstr("div.full.f32")));
  EXPECT_THAT(ptx, HasSubstr("rcp.rn.f64")); // IEEE, rounded
}

void hyperbolic_tangents(tl::ptr<float> a, tl::ptr<float> out, tl::ptr<double> d) {
  tl::tensor offs = tl::arange(0, 16);
  tl::tensor x = tl::load(a + offs);
  tl::store(out + offs, tl::tanh_approx(x));
  tl::store(d + offs, tl::tanh_approx(x.to(tl::f64)));
}

/// tl::tanh_approx: the GPU's tanh.approx.f32 for f32 (relative error about
/// 2^-11; the interpreter and the simulator compute tanh exactly, rounded),
/// saturating to +-1, NaN through; f64 takes the exact tanh.
TEST(DslCornerCases, TanhApproxIsTanhWithin2ToTheMinus10) {
  const std::vector<float> a = {0.0f, -0.0f, 1e-6f, -3e-4f, 0.25f, -0.5f, 0.9f, 1.0f,
                                -2.0f, 3.5f, 9.0f, -20.0f, 1e30f, INFINITY, -INFINITY, NAN};
  for (Backend backend : backendsWithTheGpu("tanh_approx")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> out(16, 42.0f);
    std::vector<double> d(16, 42.0);
    kernel("hyperbolic_tangents", hyperbolic_tangents)({.grid = {1}, .backend = backend}, a, out, d);
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(fmt::format("tanh({})", a[i]));
      const double exact = std::tanh(double(a[i]));
      if (std::isnan(exact)) {
        EXPECT_TRUE(std::isnan(out[i])) << out[i];
        EXPECT_TRUE(std::isnan(d[i])) << d[i];
        continue;
      }
      if (backend == Backend::GPU)
        EXPECT_NEAR(out[i], exact, std::ldexp(std::fabs(exact), -10));
      else
        EXPECT_EQ(out[i], float(exact));
      EXPECT_EQ(std::signbit(out[i]), std::signbit(exact));
      EXPECT_NEAR(d[i], exact, 1e-15 * std::fabs(exact));
    }
  }
  const std::string ptx = kernel("hyperbolic_tangents", hyperbolic_tangents)
                              .compile({a, a, std::vector<double>(16)}, {.chip = "sm_80", .assemble = false})
                              .ptx;
  EXPECT_THAT(ptx, HasSubstr("tanh.approx.f32"));
}

void row_mask(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> rows) {
  tl::tensor r = tl::arange(0, 4).expand_dims(1), c = tl::arange(0, 8).expand_dims(0);
  tl::tensor m = r < rows; // [4, 1] against [4, 8] pointers
  tl::store(out + r * 8 + c, tl::load(x + r * 8 + c, m, -1.0f), m);
}

TEST(DslCornerCases, MasksBroadcastAgainstPointers) {
  std::vector<float> x(32, 2.0f), out(32, 0.0f);
  kernel("row_mask", row_mask)({.grid = {1}}, x, out, 3);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(out[size_t(i)], i < 24 ? 2.0f : 0.0f) << i;
}

/// p = x, x + r, x + 2r, ... (r = 0..511): the pointer tile is a run of
/// consecutive elements only at the second iteration. The axis analysis
/// once took "a run plus a run" for a run in every iteration and read 16
/// bytes from x at the first.
void spreading_pointers(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> steps) {
  tl::tensor r = tl::arange(0, 512);
  tl::tensor p = x + tl::zeros({512}, tl::i32), acc = tl::zeros({512}, tl::f32);
  for ([[maybe_unused]] auto i : tl::range(0, steps, 1, p, acc)) {
    acc = acc + tl::load(p);
    p = p + r;
  }
  tl::store(out + r, acc);
}

TEST(DslCornerCases, APointerTileAdvancedByARunIsNotARunEveryIteration) {
  const int steps = 3;
  std::vector<float> x = tegula::testing::random_vector<float>(512 * steps);
  auto k = kernel("spreading_pointers", spreading_pointers);
  for (Backend backend : backendsWithTheGpu("pointers advanced by a run")) {
    std::vector<float> out(512, NAN);
    k({.grid = {1}, .backend = backend}, x, out, steps);
    for (int i = 0; i < 512; ++i) {
      float want = 0;
      for (int s = 0; s < steps; ++s)
        want += x[size_t(s * i)];
      ASSERT_EQ(out[size_t(i)], want) << i;
    }
  }
}

void small_sums(tl::ptr<int8_t> x, tl::ptr<bfloat16> b, tl::ptr<int32_t> si, tl::ptr<float> sf) {
  tl::tensor offs = tl::arange(0, 512);
  tl::store(si, tl::sum(tl::load(x + offs), 0));
  tl::store(sf, tl::sum(tl::load(b + offs), 0));
}

TEST(DslCornerCases, SumsOfSmallTypesAccumulateIn32Bits) {
  std::vector<int8_t> x(512, 100);
  std::vector<bfloat16> b(512, bfloat16(1.0f));
  std::vector<int32_t> si(1);
  std::vector<float> sf(1);
  kernel("sums", small_sums)({.grid = {1}}, x, b, si, sf);
  EXPECT_EQ(si[0], 51200);
  EXPECT_EQ(sf[0], 512.0f);
}

void where_literals(tl::ptr<float> out) {
  tl::tensor offs = tl::arange(0, 4);
  tl::store(out + offs, tl::where(offs < 2, 1.0f, 0.0f));
}

TEST(DslCornerCases, WhereWithTwoLiterals) {
  std::vector<float> out(4);
  kernel("where", where_literals)({.grid = {1}}, out);
  EXPECT_EQ(out, (std::vector<float>{1, 1, 0, 0}));
}

void unary_on_constants(tl::ptr<int32_t> out, tl::constant<bool> flag, tl::constant<int> B) {
  if (!flag) // plain C++ on constants: specialises the trace
    tl::store(out, -B + ~B);
  else
    tl::store(out, 1);
}

TEST(DslCornerCases, UnaryOperatorsOnConstantsAreCpp) {
  std::vector<int32_t> out(1);
  auto k = kernel("unary", unary_on_constants);
  k({.grid = {1}}, out, false, 5);
  EXPECT_EQ(out[0], -5 + ~5);
  k({.grid = {1}}, out, true, 5);
  EXPECT_EQ(out[0], 1);
}

TEST(DslCornerCases, LaunchScalarsAreRangeChecked) {
  auto k = kernel("simple", +[](tl::ptr<int32_t> out, tl::scalar<int32_t> n, tl::scalar<bool> b) {
    tl::store(out, n + b.to(tl::i32));
  }, {"out", "n", "b"});
  std::vector<int32_t> out(1);
  EXPECT_THAT(errorOf(k, {out, 5000000000L, true}),
              HasSubstr("argument 'n' (#1) of kernel 'simple' is 5000000000, which does not fit "
                        "in i32"));
  k({.grid = {1}}, out, 3, 2); // any nonzero bool is true
  EXPECT_EQ(out[0], 4);
  // On every backend: compiled code reads the low bit of the bool's byte
  // (2 was false there, 5 true), so the launch makes it 0 or 1 first.
  for (Backend backend : {Backend::Interp, Backend::Sim})
    for (long b : {2L, 5L, 256L, -1L, 0L}) {
      out[0] = -7;
      k({.grid = {1}, .num_warps = 1, .backend = backend}, out, 3, b);
      EXPECT_EQ(out[0], b ? 4 : 3) << "bool " << b << (backend == Backend::Sim ? " (simulator)" : "");
    }
}

//===----------------------------------------------------------------------===//
// Mistakes caught by the DSL with the user's line
//===----------------------------------------------------------------------===//

void pointer_fill(tl::ptr<int32_t> o) {
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::full({4}, o, tl::i32));
}
void pointer_other(tl::ptr<int32_t> o) {
  tl::tensor a = tl::arange(0, 4);
  FAILS_ON_NEXT_LINE();
  tl::store(o + a, tl::load(o + a, a < 2, o));
}
void i8_dot(tl::ptr<int8_t> x) {
  tl::tensor r = tl::arange(0, 16).expand_dims(1) * 16 + tl::arange(0, 16).expand_dims(0);
  tl::tensor v = tl::load(x + r);
  FAILS_ON_NEXT_LINE();
  tl::dot(v, v, tl::zeros({16, 16}, tl::f32));
}
void i8_atomic(tl::ptr<int8_t> x) {
  FAILS_ON_NEXT_LINE();
  tl::atomic_xchg(x, 3);
}
void empty_mask(tl::ptr<float> o) {
  tl::tensor m;
  FAILS_ON_NEXT_LINE();
  tl::store(o, 1.0f, m);
}
void bad_broadcast(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), v.broadcast_to({3}).reshape({4}));
}
void huge_tile(tl::ptr<float> o) {
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::sum(tl::zeros({int64_t(1) << 40}, tl::f32), 0));
}
void scalar_reshape(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 1));
  FAILS_ON_NEXT_LINE();
  tl::store(o, v.reshape({}));
}
void escapes_if(tl::ptr<float> o, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::zeros({4}, tl::f32);
  for (auto i : tl::range(0, n, 1, acc)) {
    tl::if_(i > 2, [&] { acc = acc + 1.0f; }); // reassigned in a branch, not returned
    FAILS_ON_NEXT_LINE();
    acc = acc * 2.0f;
  }
  tl::store(o + tl::arange(0, 4), acc);
}
void pointer_mask(tl::ptr<bool> p) {
  FAILS_ON_NEXT_LINE();
  tl::store(p, true, p);
}
void query_empty(tl::ptr<float> o) {
  tl::tensor t;
  FAILS_ON_NEXT_LINE();
  if (t.dtype() == tl::f32)
    tl::store(o, 1.0f);
}
void bad_axis(tl::ptr<float> o) {
  tl::tensor v = tl::zeros({4, 4}, tl::f32);
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::sum(tl::sum(v, -3), 0));
}

/// Bit patterns through bitcast and back: f32 <-> i32, bf16 / f16 <-> i16,
/// f64 <-> i64, fp8 <-> i8.
void bitcasts(tl::ptr<float> f, tl::ptr<int32_t> fi, tl::ptr<float> back, tl::ptr<bfloat16> h,
              tl::ptr<int16_t> hi, tl::ptr<float16> g, tl::ptr<int16_t> gi, tl::ptr<double> d,
              tl::ptr<int64_t> di, tl::ptr<float8_e4m3> q, tl::ptr<int8_t> qi, tl::ptr<int32_t> bits_in,
              tl::ptr<float> from_bits) {
  tl::tensor i = tl::arange(0, 8);
  tl::tensor x = tl::load(f + i);
  tl::store(fi + i, x.bitcast(tl::i32));
  tl::store(back + i, x.bitcast(tl::i32).bitcast(tl::f32));
  tl::store(hi + i, tl::load(h + i).bitcast(tl::i16));
  tl::store(gi + i, tl::load(g + i).bitcast(tl::i16));
  tl::store(di + i, tl::load(d + i).bitcast(tl::i64));
  tl::store(qi + i, tl::load(q + i).bitcast(tl::i8));
  tl::store(from_bits + i, tl::load(bits_in + i).bitcast(tl::f32));
}

TEST(DslCornerCases, BitcastKeepsTheBits) {
  const std::vector<float> f = {1.0f, -0.0f, INFINITY, -2.5f, std::numeric_limits<float>::denorm_min(), 3.0e38f,
                                -1e-20f, 0.15625f};
  std::vector<bfloat16> h;
  std::vector<float16> g;
  std::vector<double> d;
  std::vector<float8_e4m3> q;
  for (float v : f) {
    h.push_back(bfloat16(v));
    g.push_back(float16(std::isfinite(v) && std::abs(v) < 60000 ? v : 1.0f));
    d.push_back(double(v) * 3);
    q.push_back(float8_e4m3(std::isfinite(v) && std::abs(v) < 400 ? v : -1.0f));
  }
  const std::vector<int32_t> bitsIn = {0x3f800000, int32_t(0x80000000u), 0x7f800000, 0x00000001, 0x40490fdb,
                                       int32_t(0xbf000000u), 0x00800000, 0x7f7fffff};
  auto k = kernel("bitcasts", bitcasts);
  for (Backend backend : backendsWithTheGpu("bitcast")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<int32_t> fi(8);
    std::vector<float> back(8, NAN), fromBits(8, NAN);
    std::vector<int16_t> hi(8), gi(8);
    std::vector<int64_t> di(8);
    std::vector<int8_t> qi(8);
    k({.grid = {1}, .backend = backend}, f, fi, back, h, hi, g, gi, d, di, q, qi, bitsIn, fromBits);
    for (size_t j = 0; j < 8; ++j) {
      EXPECT_EQ(uint32_t(fi[j]), std::bit_cast<uint32_t>(f[j])) << j;
      EXPECT_EQ(std::bit_cast<uint32_t>(back[j]), std::bit_cast<uint32_t>(f[j])) << j;
      EXPECT_EQ(uint16_t(hi[j]), h[j].bits) << j;
      EXPECT_EQ(uint16_t(gi[j]), g[j].bits) << j;
      EXPECT_EQ(uint64_t(di[j]), std::bit_cast<uint64_t>(d[j])) << j;
      EXPECT_EQ(uint8_t(qi[j]), q[j].bits) << j;
      EXPECT_EQ(std::bit_cast<uint32_t>(fromBits[j]), uint32_t(bitsIn[j])) << j;
    }
  }
}

void bad_bitcast(tl::ptr<float> o) {
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::load(o).bitcast(tl::i16));
}

TEST(DslCornerCases, MistakesAreReportedAtTheUsersLine) {
  std::vector<int32_t> i(16);
  std::vector<int8_t> b(256);
  std::vector<float> f(16);
  std::vector<uint8_t> m(1);
  auto check = [](const std::string &expected, auto fn, std::vector<Arg> args) {
    expectAtMarkedLine(errorOf(kernel("k", fn), args), expected);
  };
  check("the tl::full value must be a number, got a pointer to i32", pointer_fill, {i});
  check("the 'other' value of tl::load must be a number, got a pointer to i32", pointer_other, {i});
  check("tl::dot of i8 operands accumulates in i32, got f32", i8_dot, {b});
  check("tl::atomic_xchg on i8 memory is not supported: atomics need elements of 16, 32 or 64 bits (PTX's smallest "
        "compare-and-swap is 16 bits)",
        i8_atomic, {b});
  check("use of an empty tl::tensor", empty_mask, {f});
  check("broadcast_to: tile extents must be positive powers of two, got [3]", bad_broadcast, {f});
  check("has more than 1048576 elements", huge_tile, {f});
  check("reshape needs at least one dimension", scalar_reshape, {f});
  check("computed inside a tl::if_ branch", escapes_if, {f, 4});
  check("mask must be boolean (i1), got pointer to i1", pointer_mask,
        {Arg::buffer(m.data(), 1, DType::i1)});
  check("use of an empty tl::tensor", query_empty, {f});
  check("tl::sum axis -3 is out of range for a [4, 4] tile", bad_axis, {f});
  check("bitcast needs element types of one width (i1 has none): f32 is 32 bits, i16 is 16", bad_bitcast, {f});
}

} // namespace

namespace {
/// y = x^T of an R x C tile of 8-bit elements (i8, or fp8 moved as its bits).
template <int R, int C> void narrow_transpose(tl::ptr<int8_t> x, tl::ptr<int8_t> y) {
  tl::tensor r = tl::arange(0, R), c = tl::arange(0, C);
  tl::tensor v = tl::load(x + r.expand_dims(1) * C + c.expand_dims(0));
  tl::store(y + c.expand_dims(1) * R + r.expand_dims(0), v.trans());
}
/// C = A B^T in i8 -> i32 with B stored [N, K] (its transposed load feeds the dot).
void i8_dot_bt(tl::ptr<int8_t> a, tl::ptr<int8_t> bt, tl::ptr<int32_t> c) {
  tl::tensor r = tl::arange(0, 16);
  tl::tensor at = r.expand_dims(1) * 16 + r.expand_dims(0);
  tl::store(c + at, tl::dot(tl::load(a + at), tl::load(bt + at).trans(), tl::zeros({16, 16}, tl::i32)));
}
template <int R, int C> void expectNarrowTranspose() {
  auto k = kernel("narrow_transpose", narrow_transpose<R, C>, {"x", "y"});
  std::vector<int8_t> x(size_t(R * C));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = int8_t(i * 37 + 11);
  for (const char *chip : {"sm_80", "sm_90a"})
    for (int warps : {1, 4, 8, 16}) {
      SCOPED_TRACE(fmt::format("{} x {} at {} warps, {}", R, C, warps, chip));
      std::vector<int8_t> y(x.size(), 0);
      k({.grid = {1}, .num_warps = warps, .backend = Backend::Sim, .chip = chip}, x, y);
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j)
          ASSERT_EQ(y[size_t(j * R + i)], x[size_t(i * C + j)]) << i << " " << j;
    }
}
} // namespace

/// Where each thread holds two 8-bit elements of a row the transpose reads
/// them back as one 2-byte vector (a 16 x 16 tile at 4 warps, 32 x 32 at
/// 16): that once returned one value for two registers and failed to
/// compile; so did an i8 dot of a transposed operand.
TEST(DslCornerCases, EightBitTransposesCompileAndRun) {
  expectNarrowTranspose<16, 16>();
  expectNarrowTranspose<2, 128>();
  expectNarrowTranspose<128, 2>();
  expectNarrowTranspose<32, 32>();
  expectNarrowTranspose<64, 16>();
  auto k = kernel("i8_dot_bt", i8_dot_bt, {"a", "bt", "c"});
  std::vector<int8_t> a(256), bt(256);
  for (size_t i = 0; i < 256; ++i)
    a[i] = int8_t(int(i % 7) - 3), bt[i] = int8_t(int(i % 5) - 2);
  for (Backend backend : backendsWithTheGpu("an i8 dot of a transposed operand")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> c(256, -1);
    k({.grid = {1}, .backend = backend}, a, bt, c);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        int32_t want = 0;
        for (int p = 0; p < 16; ++p)
          want += int32_t(a[size_t(i * 16 + p)]) * int32_t(bt[size_t(j * 16 + p)]);
        ASSERT_EQ(c[size_t(i * 16 + j)], want) << i << " " << j;
      }
  }
}
