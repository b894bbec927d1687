// MathFunctionsTest.cpp - the libdevice functions beyond exp/log/sin/...
// (Triton's triton.language.extra.libdevice): trigonometric and hyperbolic
// functions and their inverses, expm1/log1p/log10/erfc/cbrt, the roundings,
// pow/atan2/copysign - against the host's libm in double on fresh random
// inputs (edges included), in f32, f16 and bf16, in the interpreter, the
// simulator (libdevice's calls served by the host's libm) and on the GPU when
// there is one (libdevice itself: within a few ulp); ptxas assembles them
// for sm_80 and sm_90a; an integer tile is refused at the line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

using namespace tegula;
using ::testing::HasSubstr;
using tegula::testing::backendsWithTheGpu;

namespace {

constexpr int kN = 256, kFunctions = 20;

/// out[f * kN + i] = function f of x[i] (and y[i] for the binary ones; z[i]
/// in [1, 4] for acosh).
template <class T> void functions(tl::ptr<T> x, tl::ptr<T> y, tl::ptr<T> z, tl::ptr<T> out) {
  tl::tensor i = tl::arange(0, kN);
  tl::tensor v = tl::load(x + i), w = tl::load(y + i);
  const std::vector<tl::tensor> results = {
      tl::tan(v),   tl::asin(v),  tl::acos(v),  tl::atan(v),  tl::sinh(v),     tl::cosh(v),  tl::asinh(v),
      tl::acosh(tl::load(z + i)),               tl::atanh(v), tl::expm1(v),    tl::log1p(v), tl::log10(tl::abs(v)),
      tl::erfc(v),  tl::cbrt(v),  tl::trunc(v * 4.0f),      tl::round(v * 4.0f), tl::rint(v * 4.0f),
      tl::pow(tl::abs(v), w),   tl::atan2(v, w),            tl::copysign(v, w)};
  for (int f = 0; f < kFunctions; ++f)
    tl::store(out + f * kN + i, results[size_t(f)]);
}

double roundHalfEven(double x) { return std::nearbyint(x); } // the default rounding mode: ties to even

const std::vector<std::function<double(double, double, double)>> &references() {
  static const std::vector<std::function<double(double, double, double)>> r = {
      [](double x, double, double) { return std::tan(x); },
      [](double x, double, double) { return std::asin(x); },
      [](double x, double, double) { return std::acos(x); },
      [](double x, double, double) { return std::atan(x); },
      [](double x, double, double) { return std::sinh(x); },
      [](double x, double, double) { return std::cosh(x); },
      [](double x, double, double) { return std::asinh(x); },
      [](double, double, double z) { return std::acosh(z); },
      [](double x, double, double) { return std::atanh(x); },
      [](double x, double, double) { return std::expm1(x); },
      [](double x, double, double) { return std::log1p(x); },
      [](double x, double, double) { return std::log10(std::fabs(x)); },
      [](double x, double, double) { return std::erfc(x); },
      [](double x, double, double) { return std::cbrt(x); },
      [](double x, double, double) { return std::trunc(x * 4); },
      [](double x, double, double) { return std::round(x * 4); }, // halves away from zero
      [](double x, double, double) { return roundHalfEven(x * 4); },
      [](double x, double y, double) { return std::pow(std::fabs(x), y); },
      [](double x, double y, double) { return std::atan2(x, y); },
      [](double x, double y, double) { return std::copysign(x, y); }};
  return r;
}

const char *kNames[kFunctions] = {"tan",  "asin", "acos",  "atan",  "sinh",  "cosh", "asinh",
                                  "acosh", "atanh", "expm1", "log1p", "log10", "erfc", "cbrt",
                                  "trunc", "round", "rint",  "pow",   "atan2", "copysign"};

template <class T> void checkFunctions(double ulps) {
  // Inside (-1, 1) for asin/acos/atanh; halves (x * 4 = k + 0.5) for the roundings.
  std::vector<T> x = tegula::testing::random_vector<T>(kN, -0.99f, 0.99f), y = tegula::testing::random_vector<T>(kN, -2, 2),
                 z = tegula::testing::random_vector<T>(kN, 1, 4);
  x[0] = T(0.125f), x[1] = T(-0.375f), x[2] = T(0.0f), x[3] = T(-0.0f); // 0.5, -1.5: ties; signed zeros
  y[0] = T(-1.0f), y[1] = T(0.0f), y[2] = T(-0.0f), y[3] = T(2.0f);
  auto k = kernel("functions", functions<T>);
  for (Backend backend : backendsWithTheGpu("libdevice functions")) {
    SCOPED_TRACE(backend == Backend::Interp ? "interpreter" : backend == Backend::Sim ? "simulator" : "GPU");
    std::vector<T> out = tegula::testing::poisoned<T>(size_t(kFunctions) * kN);
    k({.grid = {1}, .backend = backend}, x, y, z, out);
    for (int f = 0; f < kFunctions; ++f)
      for (int i = 0; i < kN; ++i) {
        const double want = double(float(T(float(references()[size_t(f)](
            double(float(x[size_t(i)])), double(float(y[size_t(i)])), double(float(z[size_t(i)])))))));
        const double got = double(float(out[size_t(f) * kN + size_t(i)]));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << kNames[f] << " " << i;
          continue;
        }
        ASSERT_FALSE(std::isnan(got)) << kNames[f] << " of " << float(x[size_t(i)]) << ", " << float(y[size_t(i)]);
        if (std::isinf(want)) {
          ASSERT_EQ(got, want) << kNames[f] << " " << i;
          continue;
        }
        // A few ulp of the element type (f32: libdevice's documented bounds; 16-bit: one rounding more).
        const double ulp = std::max(std::abs(want), 1e-30) * ulps;
        ASSERT_LE(std::abs(got - want), ulp + 1e-37)
            << kNames[f] << " of " << float(x[size_t(i)]) << ", " << float(y[size_t(i)]) << ": " << got << " vs "
            << want;
        if ((f >= 14 && f <= 16) || f == 19) // roundings and copysign are exact, signs of zeros included
          ASSERT_EQ(std::signbit(got), std::signbit(want)) << kNames[f] << " " << i;
      }
  }
}

void ofIntegers(tl::ptr<int32_t> o) {
  tl::tensor i = tl::arange(0, 8);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::pow(i, 2).to(tl::i32));
}

} // namespace

TEST(MathFunctions, F32MatchesLibmWithinLibdevicesBounds) { checkFunctions<float>(16 * 1.2e-7); }
TEST(MathFunctions, HalvesRoundOnce) {
  checkFunctions<float16>(2 * 9.8e-4);
  checkFunctions<bfloat16>(2 * 7.9e-3);
}

TEST(MathFunctions, PtxasAssemblesThemAndIntegersAreRefused) {
  std::vector<float> f(size_t(kFunctions) * kN);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    auto c = kernel("functions", functions<float>).compile({f, f, f, f}, {.chip = chip});
    EXPECT_THAT(c.ptx, HasSubstr(".entry functions"));
    if (tegula::testing::have_ptxas())
      EXPECT_FALSE(c.cubin.empty()) << chip << ": " << c.ptxas_log;
  }
  std::vector<int32_t> o(8);
  tegula::testing::expectAtMarkedLine(tegula::testing::errorOf(kernel("k", ofIntegers), {o}), "MathFunctionsTest.cpp",
                                      "tl::pow needs floating-point operands, got i32");
}
