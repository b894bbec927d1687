// HalfAtomicsTest.cpp - 16-bit atomics: tl::atomic_add on f16 memory (PTX
// atom.add.noftz.f16, every chip Tegula targets) and bf16 memory
// (atom.add.noftz.bf16 on sm_90, a cas.b16 loop on sm_80) - scatter-adds
// whose sums are exact in the element type, so every order of arrival gives
// the same bits; f16/bf16 max, min (NaN-propagating), xchg and cas, and
// every kind on i16 (cas.b16 loops); f64 max/min (a cas.b64 loop: PTX has no
// max.NaN.f64).
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace tegula;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

// A block of 128: one element a thread at 4 warps (a used result of a tile
// atomic needs each element in one thread).
constexpr int kBins = 16, kValues = 256, kBlock = 128;

/// Adds each value into its bin twice: the old values unused (a reduction)
/// and used (stored); and each program's largest value into `total`.
template <class T>
void scatter_add(tl::ptr<T> bins, tl::ptr<int32_t> index, tl::ptr<T> values, tl::ptr<T> olds,
                 tl::ptr<T> total) {
  tl::tensor offs = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
  tl::tensor v = tl::load(values + offs);
  tl::atomic_add(bins + tl::load(index + offs), v, tl::memory_order::relaxed);
  tl::store(olds + offs, tl::atomic_add(bins + kBins + tl::load(index + offs), v));
  tl::atomic_add(total, tl::max(v, 0)); // a scalar atomic: thread 0's
}

struct Target {
  Backend backend;
  const char *chip;
};

std::string describe(const Target &r) {
  return fmt::format("{} {}", r.backend == Backend::Interp ? "interpreter" : r.backend == Backend::Sim ? "simulator" : "GPU",
                     r.chip);
}

/// The interpreter, the simulator as sm_80 and sm_90a, and the GPU when there is one.
std::vector<Target> everyChip(const char *what) {
  std::vector<Target> runs = {{Backend::Interp, ""}, {Backend::Sim, "sm_80"}, {Backend::Sim, "sm_90a"}};
  if (gpu_available())
    runs.push_back({Backend::GPU, ""});
  else
    std::printf("[tegula test] no CUDA driver: %s checked in the interpreter and simulator only\n", what);
  return runs;
}

template <class T> void checkScatterAdd(const std::vector<Target> &runs) {
  std::vector<int32_t> index(kValues);
  std::vector<T> values(kValues);
  std::vector<double> want(kBins, 0.0);
  double wantTotal = 0;
  std::mt19937 &rng = tegula::testing::rng();
  // Multiples of 1/8 up to 1/2: a bin's sum (about 16 values) stays exact in
  // bf16's 8 bits up to 32, so every order of arrival gives the same bits.
  for (int i = 0; i < kValues; ++i) {
    index[i] = int32_t(rng() % kBins);
    values[i] = T(0.125f * float(1 + rng() % 4));
    want[size_t(index[i])] += float(values[i]);
  }
  for (int p = 0; p < kValues / kBlock; ++p) {
    float largest = 0;
    for (int i = kBlock * p; i < kBlock * p + kBlock; ++i)
      largest = std::max(largest, float(values[i]));
    wantTotal += largest;
  }
  for (double w : want)
    ASSERT_LE(w, 32.0) << "an unlucky draw: a bin past bf16's exact range";
  auto k = kernel("scatter_add", scatter_add<T>, {"bins", "index", "values", "olds", "total"});
  for (const Target &r : runs) {
    SCOPED_TRACE(describe(r));
    std::vector<T> bins(2 * kBins, T(0.0f)), olds(kValues, T(-1.0f)), total(1, T(0.0f));
    k({.grid = {kValues / kBlock}, .backend = r.backend, .chip = r.chip}, bins, index, values, olds, total);
    for (int b = 0; b < kBins; ++b) {
      EXPECT_EQ(float(bins[b]), want[size_t(b)]) << "bin " << b;
      EXPECT_EQ(float(bins[kBins + b]), want[size_t(b)]) << "bin " << b << " (results used)";
    }
    // Each old value is what its bin held before: from 0 up to the total less the value.
    for (int i = 0; i < kValues; ++i) {
      EXPECT_GE(float(olds[i]), 0.0f) << i;
      EXPECT_LE(float(olds[i]) + float(values[i]), want[size_t(index[i])]) << i;
    }
    EXPECT_EQ(float(total[0]), wantTotal);
  }
}

TEST(HalfAtomics, F16AddOnEveryChip) { checkScatterAdd<float16>(everyChip("f16 atomics")); }

TEST(HalfAtomics, Bf16AddOnEveryChip) {
  // sm_90's atom.add.noftz.bf16; on sm_80 a cas.b16 loop around fma.rn.bf16.
  checkScatterAdd<bfloat16>(everyChip("bf16 atomics"));
}

namespace {

/// max, min, xchg and cas of 16-bit floats into a few bins: compare-and-swap
/// loops on 16-bit words (cas.b16 itself for cas).
template <class T>
void sixteenBitFloats(tl::ptr<T> maxes, tl::ptr<T> mins, tl::ptr<T> swaps, tl::ptr<T> swapOlds, tl::ptr<T> claims,
                      tl::ptr<T> claimOlds, tl::ptr<int32_t> index, tl::ptr<T> values, tl::ptr<T> ids) {
  tl::tensor offs = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
  tl::tensor bin = tl::load(index + offs), v = tl::load(values + offs);
  tl::atomic_max(maxes + bin, v);
  tl::atomic_min(mins + bin, v, tl::memory_order::relaxed);
  tl::store(swapOlds + offs, tl::atomic_xchg(swaps + bin, v));
  tl::store(claimOlds + offs, tl::atomic_cas(claims + bin, 0.0f, tl::load(ids + offs)));
}

/// i16: every kind through cas.b16 loops.
void sixteenBitIntegers(tl::ptr<int16_t> sums, tl::ptr<int16_t> maxes, tl::ptr<int16_t> mins, tl::ptr<int16_t> ands,
                        tl::ptr<int16_t> ors, tl::ptr<int16_t> xors, tl::ptr<int32_t> index, tl::ptr<int16_t> values) {
  tl::tensor offs = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
  tl::tensor bin = tl::load(index + offs), v = tl::load(values + offs);
  tl::atomic_add(sums + bin, v, tl::memory_order::relaxed);
  tl::atomic_max(maxes + bin, v);
  tl::atomic_min(mins + bin, v);
  tl::atomic_and(ands + bin, v);
  tl::atomic_or(ors + bin, v);
  tl::atomic_xor(xors + bin, v);
}

/// The bits of a 16-bit float, every NaN the same.
template <class T> uint16_t key(T x) { return std::isnan(float(x)) ? uint16_t(0x7e00) : x.bits; }

template <class T> void checkSixteenBitFloats(const std::vector<Target> &runs) {
  std::vector<int32_t> index(kValues);
  std::vector<T> values(kValues), ids(kValues);
  std::mt19937 &rng = tegula::testing::rng();
  for (int i = 0; i < kValues; ++i) {
    index[size_t(i)] = int32_t(rng() % kBins);
    values[size_t(i)] = T(0.125f * float(int(rng() % 64) - 32)); // exact in bf16
    ids[size_t(i)] = T(float(i + 1));                             // 1..256: exact in bf16
  }
  values[3] = T(NAN); // max and min propagate it into its bin
  auto k = kernel("sixteen_bit_floats", sixteenBitFloats<T>);
  for (const Target &r : runs) {
    SCOPED_TRACE(describe(r));
    std::vector<T> maxes(kBins, T(-INFINITY)), mins(kBins, T(INFINITY)), swaps(kBins, T(0.5f)), claims(kBins, T(0.0f));
    std::vector<T> swapOlds(kValues), claimOlds(kValues);
    k({.grid = {kValues / kBlock}, .backend = r.backend, .chip = r.chip}, maxes, mins, swaps, swapOlds, claims,
      claimOlds, index, values, ids);
    for (int b = 0; b < kBins; ++b) {
      std::vector<int> members;
      for (int i = 0; i < kValues; ++i)
        if (index[size_t(i)] == b)
          members.push_back(i);
      float hi = -INFINITY, lo = INFINITY;
      bool nan = false;
      std::vector<uint16_t> in = {key(T(0.5f))}, out = {key(swaps[size_t(b)])};
      int winners = 0;
      for (int i : members) {
        nan |= std::isnan(float(values[size_t(i)]));
        hi = std::max(hi, float(values[size_t(i)]));
        lo = std::min(lo, float(values[size_t(i)]));
        in.push_back(key(values[size_t(i)]));
        out.push_back(key(swapOlds[size_t(i)]));
        winners += float(claimOlds[size_t(i)]) == 0.0f;
      }
      if (nan) {
        EXPECT_TRUE(std::isnan(float(maxes[size_t(b)]))) << "bin " << b;
        EXPECT_TRUE(std::isnan(float(mins[size_t(b)]))) << "bin " << b;
      } else {
        EXPECT_EQ(float(maxes[size_t(b)]), hi) << "bin " << b;
        EXPECT_EQ(float(mins[size_t(b)]), lo) << "bin " << b;
      }
      // Each exchange took one value and left one: the same values overall.
      std::sort(in.begin(), in.end());
      std::sort(out.begin(), out.end());
      EXPECT_EQ(in, out) << "bin " << b;
      // One claim per bin won (saw 0); the others saw the winner's id.
      if (members.empty())
        continue;
      EXPECT_EQ(winners, 1) << "bin " << b;
      for (int i : members)
        if (float(claimOlds[size_t(i)]) != 0.0f)
          EXPECT_EQ(float(claimOlds[size_t(i)]), float(claims[size_t(b)])) << "bin " << b << ", element " << i;
    }
  }
}


} // namespace

TEST(HalfAtomics, MaxMinXchgAndCasOfHalves) {
  checkSixteenBitFloats<float16>(everyChip("f16 max/min/xchg/cas"));
  checkSixteenBitFloats<bfloat16>(everyChip("bf16 max/min/xchg/cas"));
}

TEST(HalfAtomics, EveryKindOnI16) {
  std::vector<int32_t> index(kValues);
  std::vector<int16_t> values(kValues);
  std::mt19937 &rng = tegula::testing::rng();
  for (int i = 0; i < kValues; ++i) {
    index[size_t(i)] = int32_t(rng() % kBins);
    values[size_t(i)] = int16_t(int(rng() % 2000) - 1000); // sums stay within i16
  }
  auto k = kernel("sixteen_bit_integers", sixteenBitIntegers);
  for (const Target &r : everyChip("i16 atomics")) {
    SCOPED_TRACE(describe(r));
    std::vector<int16_t> sums(kBins, 0), maxes(kBins, INT16_MIN), mins(kBins, INT16_MAX), ands(kBins, -1),
        ors(kBins, 0), xors(kBins, 0);
    k({.grid = {kValues / kBlock}, .backend = r.backend, .chip = r.chip}, sums, maxes, mins, ands, ors, xors, index,
      values);
    for (int b = 0; b < kBins; ++b) {
      int sum = 0;
      int16_t hi = INT16_MIN, lo = INT16_MAX, a = -1, o = 0, x = 0;
      for (int i = 0; i < kValues; ++i)
        if (index[size_t(i)] == b) {
          const int16_t v = values[size_t(i)];
          sum += v, hi = std::max(hi, v), lo = std::min(lo, v);
          a = int16_t(a & v), o = int16_t(o | v), x = int16_t(x ^ v);
        }
      ASSERT_LE(std::abs(sum), 32767) << "an unlucky draw";
      EXPECT_EQ(sums[size_t(b)], sum) << "bin " << b;
      EXPECT_EQ(maxes[size_t(b)], hi) << "bin " << b;
      EXPECT_EQ(mins[size_t(b)], lo) << "bin " << b;
      EXPECT_EQ(ands[size_t(b)], a) << "bin " << b;
      EXPECT_EQ(ors[size_t(b)], o) << "bin " << b;
      EXPECT_EQ(xors[size_t(b)], x) << "bin " << b;
    }
  }
}

namespace {

/// f64 max and min into 8 bins: PTX has no max.NaN.f64, so the loop makes a
/// NaN operand's result NaN itself (an add).
void f64_atomic_max_min(tl::ptr<double> maxes, tl::ptr<double> mins, tl::ptr<int32_t> bins, tl::ptr<double> x) {
  tl::tensor offs = tl::arange(0, 256);
  tl::tensor bin = tl::load(bins + offs), v = tl::load(x + offs);
  tl::atomic_max(maxes + bin, v);
  tl::atomic_min(mins + bin, v, tl::memory_order::relaxed);
}

} // namespace

TEST(CasLoopAtomics, F64MaxMinPropagateNaN) {
  std::vector<int32_t> bins(256);
  std::vector<double> x(256);
  std::mt19937 &rng = tegula::testing::rng();
  for (size_t i = 0; i < x.size(); ++i) {
    bins[i] = int32_t(rng() % 8);
    x[i] = std::ldexp(double(int(rng() % 2001) - 1000), -7);
  }
  x[5] = -0.0, x[6] = NAN; // bin[6]'s max and min are NaN
  auto k = kernel("f64_atomic_max_min", f64_atomic_max_min);
  for (const Target &r : everyChip("f64 max/min")) {
    SCOPED_TRACE(describe(r));
    std::vector<double> maxes(8, -INFINITY), mins(8, INFINITY);
    k({.grid = {1}, .backend = r.backend, .chip = r.chip}, maxes, mins, bins, x);
    for (int b = 0; b < 8; ++b) {
      double hi = -INFINITY, lo = INFINITY;
      bool nan = false;
      for (size_t i = 0; i < x.size(); ++i)
        if (bins[i] == b) {
          nan |= std::isnan(x[i]);
          hi = std::isnan(x[i]) ? hi : std::max(hi, x[i]);
          lo = std::isnan(x[i]) ? lo : std::min(lo, x[i]);
        }
      if (nan) {
        EXPECT_TRUE(std::isnan(maxes[size_t(b)]) && std::isnan(mins[size_t(b)])) << "bin " << b;
      } else {
        EXPECT_EQ(maxes[size_t(b)], hi) << "bin " << b;
        EXPECT_EQ(mins[size_t(b)], lo) << "bin " << b;
      }
    }
  }
  std::vector<double> m(8);
  CompiledKernel c = k.compile({m, m, bins, x}, {.chip = "sm_80"});
  EXPECT_THAT(c.ptx, HasSubstr("setp.nan.f64"));
  EXPECT_THAT(c.ptx, HasSubstr("atom.acq_rel.gpu.global.cas.b64"));
  if (tegula::testing::have_ptxas())
    EXPECT_FALSE(c.cubin.empty()) << c.ptxas_log;
}

TEST(HalfAtomics, PtxasAssemblesThem) {
  std::vector<float16> h(2 * kBins + 2 * kValues);
  std::vector<bfloat16> g(2 * kBins + 2 * kValues);
  std::vector<int32_t> index(kValues);
  const std::string f16 = kernel("scatter_add", scatter_add<float16>)
                              .compile({h, index, h, h, h}, {.chip = "sm_80", .assemble = false})
                              .ptx;
  EXPECT_THAT(f16, HasSubstr("atom.relaxed.gpu.global.add.noftz.f16"));
  const std::string bf16 = kernel("scatter_add", scatter_add<bfloat16>)
                               .compile({g, index, g, g, g}, {.chip = "sm_90a", .assemble = false})
                               .ptx;
  EXPECT_THAT(bf16, HasSubstr("atom.acq_rel.gpu.global.add.noftz.bf16"));
  const std::string bf16Sm80 = kernel("scatter_add", scatter_add<bfloat16>)
                                   .compile({g, index, g, g, g}, {.chip = "sm_80", .assemble = false})
                                   .ptx;
  EXPECT_THAT(bf16Sm80, AllOf(HasSubstr("atom.relaxed.gpu.global.cas.b16"), HasSubstr("fma.rn.bf16"),
                              Not(HasSubstr("add.noftz.bf16"))));
  if (!tegula::testing::have_ptxas()) {
    std::printf("[tegula test] no ptxas: the PTX above was not assembled\n");
    return;
  }
  EXPECT_FALSE(kernel("scatter_add", scatter_add<float16>).compile({h, index, h, h, h}, {.chip = "sm_80"}).cubin.empty());
  EXPECT_FALSE(
      kernel("scatter_add", scatter_add<bfloat16>).compile({g, index, g, g, g}, {.chip = "sm_90a"}).cubin.empty());
  EXPECT_FALSE(
      kernel("scatter_add", scatter_add<bfloat16>).compile({g, index, g, g, g}, {.chip = "sm_80"}).cubin.empty());
  std::vector<int16_t> s16(2 * kValues);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    EXPECT_FALSE(kernel("sixteen_bit_floats", sixteenBitFloats<float16>)
                     .compile({h, h, h, h, h, h, index, h, h}, {.chip = chip})
                     .cubin.empty());
    EXPECT_FALSE(kernel("sixteen_bit_floats", sixteenBitFloats<bfloat16>)
                     .compile({g, g, g, g, g, g, index, g, g}, {.chip = chip})
                     .cubin.empty());
    EXPECT_FALSE(kernel("sixteen_bit_integers", sixteenBitIntegers)
                     .compile({s16, s16, s16, s16, s16, s16, index, s16}, {.chip = chip})
                     .cubin.empty());
  }
}

} // namespace
