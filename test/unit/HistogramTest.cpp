// HistogramTest.cpp - tl::histogram (Triton's tl.histogram) against a host
// count: values in range, negative and past the last bin (not counted),
// more bins than elements and the reverse, a tile smaller than the program
// (its copies count once), i8 values; in the interpreter, the simulator as
// sm_80 and sm_90a code (shared-memory atomics, which the race detector lets
// meet on one bin) and on the GPU when there is one. Mistakes are named at
// the user's line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using tegula::testing::errorOf;
using tegula::testing::rng;

namespace {

template <class T>
void count(tl::ptr<T> x, tl::ptr<int32_t> counts, tl::constant<int> N, tl::constant<int> BINS) {
  tl::store(counts + tl::arange(0, BINS), tl::histogram(tl::load(x + tl::arange(0, N)), BINS.value));
}

template <class T>
void checkCounts(int n, int bins) {
  SCOPED_TRACE(fmt::format("{} values, {} bins", n, bins));
  std::vector<T> x(static_cast<size_t>(n));
  for (auto &v : x)
    v = T(int(rng()() % uint32_t(bins + 8)) - 4); // some below 0, some past the last bin
  std::vector<int32_t> want(static_cast<size_t>(bins), 0);
  for (T v : x)
    if (int(v) >= 0 && int(v) < bins)
      ++want[size_t(v)];
  auto k = kernel("count", count<T>, {"x", "counts", "N", "BINS"});
  for (Backend backend : backendsWithTheGpu("tl::histogram"))
    for (const char *chip : {"sm_80", "sm_90a"}) {
      if (backend != Backend::Sim && std::string(chip) == "sm_90a")
        continue;
      SCOPED_TRACE(fmt::format("backend {} {}", int(backend), chip));
      std::vector<int32_t> got(size_t(bins), -1);
      LaunchOptions o{.grid = {1}, .num_warps = 4, .backend = backend};
      if (backend == Backend::Sim)
        o.chip = chip;
      k(o, x, got, n, bins);
      EXPECT_EQ(got, want);
    }
}

TEST(Histogram, CountsEachBinOnce) {
  checkCounts<int32_t>(1024, 64);
  checkCounts<int32_t>(128, 256); // more bins than elements (and than threads)
  checkCounts<int32_t>(32, 8);    // a tile smaller than the program: its copies count once
  checkCounts<int8_t>(512, 16);
}

void floatHistogram(tl::ptr<float> o) {
  FAILS_ON_NEXT_LINE();
  tl::histogram(tl::load(o + tl::arange(0, 4)), 4);
}
void oddBins(tl::ptr<int32_t> o) {
  FAILS_ON_NEXT_LINE();
  tl::histogram(tl::load(o + tl::arange(0, 4)), 6);
}

TEST(Histogram, MistakesAreNamedAtTheUsersLine) {
  std::vector<float> f(4);
  std::vector<int32_t> i(4);
  tegula::testing::expectAtMarkedLine(errorOf(kernel("float_histogram", floatHistogram), {f}), "HistogramTest.cpp",
                                      "tl::histogram counts a 1-D integer tile, got [4] of f32");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("odd_bins", oddBins), {i}), "HistogramTest.cpp",
                                      "tl::histogram's bins are a power of two (a tile extent), not 6");
}

} // namespace
