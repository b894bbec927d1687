// HalfAtomicsTest.cpp - tl::atomic_add on f16 memory (PTX atom.add.noftz.f16,
// every chip Tegula targets) and bf16 memory (atom.add.noftz.bf16, sm_90 on;
// refused at the line when compiled for sm_80): scatter-adds whose sums are
// exact in the element type, so every order of arrival gives the same bits.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace tegula;
using ::testing::AllOf;
using ::testing::HasSubstr;

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
    SCOPED_TRACE(fmt::format("{} {}", r.backend == Backend::Interp ? "interpreter" : r.backend == Backend::Sim ? "simulator" : "GPU", r.chip));
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

TEST(HalfAtomics, F16AddOnEveryChip) {
  std::vector<Target> runs = {{Backend::Interp, ""}, {Backend::Sim, "sm_80"}, {Backend::Sim, "sm_90a"}};
  if (gpu_available())
    runs.push_back({Backend::GPU, ""});
  else
    std::printf("[tegula test] no CUDA driver: f16 atomics checked in the interpreter and simulator only\n");
  checkScatterAdd<float16>(runs);
}

TEST(HalfAtomics, Bf16AddFromSm90) {
  std::vector<Target> runs = {{Backend::Interp, ""}, {Backend::Sim, "sm_90a"}};
  if (gpu_available() && device_info().chip.rfind("sm_9", 0) == 0)
    runs.push_back({Backend::GPU, ""});
  else
    std::printf("[tegula test] no sm_90 GPU: bf16 atomics checked in the interpreter and simulator only\n");
  checkScatterAdd<bfloat16>(runs);
}

TEST(HalfAtomics, Bf16AddIsRefusedForSm80AtTheLine) {
  std::vector<bfloat16> bins(2 * kBins), values(kValues), olds(kValues), total(1);
  std::vector<int32_t> index(kValues);
  auto k = kernel("scatter_add", scatter_add<bfloat16>, {"bins", "index", "values", "olds", "total"});
  const std::string err = tegula::testing::error_of(
      [&] { k({.grid = {1}, .backend = Backend::Sim, .chip = "sm_80"}, bins, index, values, olds, total); });
  EXPECT_THAT(err, AllOf(HasSubstr("HalfAtomicsTest.cpp:"),
                         HasSubstr("tl::atomic_add on bf16 memory needs sm_90 (atom.add.bf16), not sm_80")));
  EXPECT_THAT(tegula::testing::error_of([&] { (void)k.compile({bins, index, values, olds, total}); }),
              HasSubstr("needs sm_90"));
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
  if (!tegula::testing::have_ptxas()) {
    std::printf("[tegula test] no ptxas: the PTX above was not assembled\n");
    return;
  }
  EXPECT_FALSE(kernel("scatter_add", scatter_add<float16>).compile({h, index, h, h, h}, {.chip = "sm_80"}).cubin.empty());
  EXPECT_FALSE(
      kernel("scatter_add", scatter_add<bfloat16>).compile({g, index, g, g, g}, {.chip = "sm_90a"}).cubin.empty());
}

} // namespace
