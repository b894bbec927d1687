// CacheHintsTest.cpp - tl::access_hints on tl::load and tl::store (Triton's
// cache_modifier, eviction_policy and volatile): the PTX qualifiers they
// become on sm_80 and sm_90a (assembled by ptxas), the same values on every
// backend, volatile loads neither merged nor dropped, and misuse named at
// the user's line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace tegula;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using tegula::testing::backendsWithTheGpu;

namespace {

/// y = 2 x + w over n elements (ragged), with a hint on each access: x
/// streamed (cg), w kept (evict_last, loaded unmasked), y written streaming
/// (cs), and a flag read and written volatile.
void hinted(tl::ptr<float> x, tl::ptr<float> w, tl::ptr<float> y, tl::ptr<int32_t> flag, tl::scalar<int32_t> n) {
  tl::tensor i = tl::program_id(0) * 512 + tl::arange(0, 512);
  tl::tensor in = i < n;
  tl::tensor xs = tl::load(x + i, in, 0.0f, {.cache = tl::cache_modifier::cg});
  tl::tensor ws = tl::load(w + i, {.eviction = tl::eviction_policy::evict_last});
  tl::store(y + i, xs * 2.0f + ws, in, {.cache = tl::cache_modifier::cs});
  tl::tensor seen = tl::load(flag, {.is_volatile = true});
  tl::store(flag, seen + 1, {.is_volatile = true});
}

} // namespace

TEST(CacheHints, BecomePtxQualifiersThatPtxasAssembles) {
  auto k = kernel("hinted", hinted, {"x", "w", "y", "flag", "n"});
  std::vector<float> x(1024), w(1024), y(1024);
  std::vector<int32_t> flag(1);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    const CompiledKernel c = k.compile({x, w, y, flag, 1024}, {.chip = chip}); // n % 16 == 0: vectors
    EXPECT_THAT(c.ptx, AllOf(HasSubstr("ld.global.cg.v4.b32"),
                             HasSubstr("createpolicy.fractional.L2::evict_last.b64"),
                             HasSubstr("ld.global.L1::evict_last.L2::cache_hint.v4.b32"),
                             HasSubstr("st.global.cs.v4.b32"), HasSubstr("ld.volatile.global.b32"),
                             HasSubstr("st.volatile.global.b32")));
    std::printf("[cache hints] %s: ptxas %s\n", chip, c.cubin.empty() ? "absent (PTX only)" : "assembled it");
  }
}

TEST(CacheHints, ChangeNoValueOnAnyBackend) {
  const int n = 1000;
  const std::vector<float> x = tegula::testing::random_vector<float>(1024), w = tegula::testing::random_vector<float>(1024);
  auto k = kernel("hinted", hinted, {"x", "w", "y", "flag", "n"});
  for (Backend backend : backendsWithTheGpu("cache hints")) {
    for (const char *chip : {"sm_80", "sm_90a"}) {
      if (backend != Backend::Sim && std::string(chip) == "sm_90a")
        continue;
      SCOPED_TRACE(fmt::format("{} {}", tegula::testing::backend_name(backend), chip));
      std::vector<float> y = tegula::testing::poisoned<float>(1024);
      std::vector<int32_t> flag = {41};
      k({.grid = {2}, .backend = backend, .chip = backend == Backend::Sim ? chip : ""}, x, w, y, flag, n);
      for (int i = 0; i < 1024; ++i)
        if (i < n)
          ASSERT_EQ(y[size_t(i)], x[size_t(i)] * 2.0f + w[size_t(i)]) << i;
        else
          ASSERT_TRUE(std::isnan(y[size_t(i)])) << "masked off: " << i;
      // Each program read the flag and wrote it plus one; which reads
      // first is the launch's, but at least one program's write is there.
      EXPECT_TRUE(flag[0] == 42 || flag[0] == 43) << flag[0];
    }
  }
}

namespace {

/// Two loads of one address: merged into one unless volatile; a volatile
/// load whose value is unused is still made.
template <bool VOLATILE> void twice(tl::ptr<int32_t> p, tl::ptr<int32_t> out) {
  const tl::access_hints hints{.is_volatile = VOLATILE};
  tl::tensor a = tl::load(p, hints), b = tl::load(p, hints);
  tl::load(p + 1, hints);
  tl::store(out, a + b);
}

size_t loadsIn(const std::string &ir) {
  size_t count = 0;
  for (size_t at = 0; (at = ir.find("tile.load", at)) != std::string::npos; ++at)
    ++count;
  return count;
}

} // namespace

TEST(CacheHints, VolatileLoadsAreNeitherMergedNorDropped) {
  std::vector<int32_t> p = {5, 6}, out(1);
  EXPECT_EQ(loadsIn(kernel("twice", twice<false>).ir({p, out})), 1u);
  EXPECT_EQ(loadsIn(kernel("twice", twice<true>).ir({p, out})), 3u);
  const std::string ptx = kernel("twice", twice<true>).compile({p, out}, {.chip = "sm_80", .assemble = false}).ptx;
  size_t volatileLoads = 0;
  for (size_t at = 0; (at = ptx.find("ld.volatile.global", at)) != std::string::npos; ++at)
    ++volatileLoads;
  EXPECT_EQ(volatileLoads, 3u);
  for (Backend backend : backendsWithTheGpu("volatile loads")) {
    out[0] = 0;
    kernel("twice", twice<true>)({.grid = {1}, .backend = backend}, p, out);
    EXPECT_EQ(out[0], 10) << tegula::testing::backend_name(backend);
  }
}

namespace {

/// C = A B (f16 in, f32 out) over a K loop the pipeliner turns into cp.async
/// rings: A streamed (evict_first), B, which every row block re-reads, kept
/// (evict_last).
void hinted_gemm(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                 tl::scalar<int32_t> N, tl::scalar<int32_t> K) {
  tl::tensor rm = tl::program_id(0) * 64 + tl::arange(0, 64), rn = tl::program_id(1) * 64 + tl::arange(0, 64);
  tl::tensor rk = tl::arange(0, 32);
  tl::tensor acc = tl::zeros({64, 64}, tl::f32);
  for (auto k : tl::range(0, K, 32, acc)) {
    tl::tensor ka = k + rk;
    tl::tensor x = tl::load(a + rm.expand_dims(1) * K + ka.expand_dims(0),
                            (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f,
                            {.eviction = tl::eviction_policy::evict_first});
    tl::tensor y = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                            (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f,
                            {.eviction = tl::eviction_policy::evict_last});
    acc = tl::dot(x, y, acc);
  }
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc, (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

} // namespace

/// Loads the pipeliner turns into cp.async keep their eviction priority:
/// an L2 cache policy on every copy (cp.async...L2::cache_hint), which
/// ptxas assembles and the simulator runs (its PTX subset has the form);
/// the product is the same on every backend.
TEST(CacheHints, PipelinedLoadsKeepTheirEvictionPriority) {
  auto k = kernel("hinted_gemm", hinted_gemm, {"a", "b", "c", "M", "N", "K"});
  std::vector<float16> a16(128 * 128), b16(128 * 128);
  std::vector<float> c32(128 * 128);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    const CompiledKernel c = k.compile({a16, b16, c32, 128, 128, 128}, {.chip = chip});
    EXPECT_THAT(c.ptx, AllOf(HasSubstr("createpolicy.fractional.L2::evict_first.b64"),
                             HasSubstr("createpolicy.fractional.L2::evict_last.b64"),
                             HasSubstr("cp.async.cg.shared.global.L2::cache_hint")));
    EXPECT_THAT(c.ptx, Not(HasSubstr("ld.global.L1::evict"))) << "the operands are not loaded into registers";
    std::printf("[cache hints] pipelined GEMM %s: ptxas %s\n", chip,
                c.cubin.empty() ? "absent (PTX only)" : "assembled it");
  }
  const int M = 100, N = 72, K = 200; // ragged in every dimension
  const auto a = tegula::testing::random_vector<float16>(size_t(M * K));
  const auto b = tegula::testing::random_vector<float16>(size_t(K * N));
  std::vector<double> want(size_t(M * N));
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int q = 0; q < K; ++q)
        s += double(float(a[size_t(i * K + q)])) * double(float(b[size_t(q * N + j)]));
      want[size_t(i * N + j)] = s;
    }
  for (Backend backend : backendsWithTheGpu("pipelined loads with eviction hints"))
    for (const char *chip : {"sm_80", "sm_90a"}) {
      if (backend != Backend::Sim && std::string(chip) == "sm_90a")
        continue;
      SCOPED_TRACE(fmt::format("{} {}", tegula::testing::backend_name(backend), chip));
      std::vector<float> c = tegula::testing::poisoned<float>(size_t(M * N));
      k({.grid = {2, 2}, .backend = backend, .chip = backend == Backend::Sim ? chip : ""}, a, b, c, M, N, K);
      EXPECT_LT(tegula::testing::rel_error(c, want), 1e-5);
    }
}

// ---- mistakes, named at the user's line ----------------------------------

namespace {

void bothHints(tl::ptr<float> x) {
  FAILS_ON_NEXT_LINE();
  tl::store(x, tl::load(x, {.cache = tl::cache_modifier::cg, .eviction = tl::eviction_policy::evict_first}));
}
void storeOperatorOnALoad(tl::ptr<float> x) {
  FAILS_ON_NEXT_LINE();
  tl::store(x, tl::load(x, {.cache = tl::cache_modifier::wt}));
}
void loadOperatorOnAStore(tl::ptr<float> x) {
  FAILS_ON_NEXT_LINE();
  tl::store(x, 1.0f, {.cache = tl::cache_modifier::cv});
}
void volatileWithAHint(tl::ptr<float> x) {
  FAILS_ON_NEXT_LINE();
  tl::store(x, 1.0f, {.eviction = tl::eviction_policy::evict_last, .is_volatile = true});
}

} // namespace

TEST(CacheHints, MisuseIsNamedAtTheUsersLine) {
  using tegula::testing::errorOf;
  using tegula::testing::expectAtMarkedLine;
  std::vector<float> f(4);
  const std::string file = "CacheHintsTest.cpp";
  expectAtMarkedLine(errorOf(kernel("k", bothHints), {f}), file,
                     "tl::load: a cache_modifier or an eviction_policy, not both (PTX takes one or the other)");
  expectAtMarkedLine(errorOf(kernel("k", storeOperatorOnALoad), {f}), file,
                     "tl::load: cache_modifier::wt is for stores; loads take ca, cg, cs or cv");
  expectAtMarkedLine(errorOf(kernel("k", loadOperatorOnAStore), {f}), file,
                     "tl::store: cache_modifier::cv is for loads; stores take wb, cg, cs or wt");
  expectAtMarkedLine(errorOf(kernel("k", volatileWithAHint), {f}), file,
                     "tl::store: a volatile access takes no cache_modifier or eviction_policy");
}
