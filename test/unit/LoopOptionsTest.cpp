// LoopOptionsTest.cpp - tl::loop_options on a tl::range (Triton's tl.range
// keywords): num_stages sets that loop's software-pipeline depth over the
// launch's - deeper rings, or none - and warp_specialize asks for (or
// refuses) the producer warpgroup of a TMA-fed loop whatever the launch
// says; the GEMMs stay right on every backend; a negative depth is an
// error at the user's line.
#include "ErrorTestUtil.h"
#include "F16GemmCheck.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

using namespace tegula;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

/// C = A B with the K loop's pipeline depth set to STAGES (0: the launch's).
template <int STAGES>
void stagedMatmul(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                  tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN,
                  tl::constant<int> BK) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM), rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, tl::loop_options{.num_stages = STAGES}, acc))
    acc = tegula::testing::accumulateKBlock(acc, a, b, rm, rn, k, rk, M, N, K);
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc, (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

const std::vector<std::string> kNames = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"};

/// The bytes of shared memory the PTX declares (the rings, and scratch).
int sharedBytes(const std::string &ptx) {
  std::smatch m;
  return std::regex_search(ptx, m, std::regex(R"(tegula_scratch\[(\d+)\])")) ? std::stoi(m[1]) : 0;
}

std::string ptxOf(Kernel &k, const char *chip, int launchStages) {
  std::vector<float16> a(128 * 96), b(96 * 192);
  std::vector<float> c(128 * 192);
  return k.compile({a, b, c, 128, 192, 96, 64, 64, 32}, {.chip = chip, .num_stages = launchStages, .assemble = false})
      .ptx;
}

} // namespace

TEST(LoopOptions, NumStagesSetsThisLoopsPipelineDepth) {
  auto deep = kernel("staged_matmul", stagedMatmul<4>, kNames);
  auto unpipelined = kernel("staged_matmul", stagedMatmul<1>, kNames);
  auto launchs = kernel("staged_matmul", stagedMatmul<0>, kNames);
  tegula::testing::expectF16GemmOnEveryBackend(deep, 100, 72, 96, 2);
  tegula::testing::expectF16GemmOnEveryBackend(unpipelined, 100, 72, 96, 3);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    // A stage holds a 64 x 32 and a 32 x 64 f16 tile: 8 KiB.
    const int two = sharedBytes(ptxOf(launchs, chip, 2)), four = sharedBytes(ptxOf(deep, chip, 2));
    std::printf("[loop options] %s: rings of the launch's 2 stages %d bytes, the loop's 4 stages %d\n", chip, two,
                four);
    EXPECT_GE(four - two, 2 * 8192);
    EXPECT_THAT(ptxOf(launchs, chip, 3), HasSubstr("cp.async.cg.shared.global"));
    EXPECT_THAT(ptxOf(unpipelined, chip, 3), Not(HasSubstr("cp.async")));
  }
}

namespace {
void negativeStages(tl::ptr<float> x, tl::scalar<int32_t> n) {
  tl::tensor total = tl::zeros({}, tl::f32);
  FAILS_ON_NEXT_LINE();
  for (auto i : tl::range(0, n, 1, tl::loop_options{.num_stages = -1}, total))
    total = total + tl::load(x + i);
  tl::store(x, total);
}
} // namespace

TEST(LoopOptions, ANegativeDepthIsAnErrorAtTheLoop) {
  std::vector<float> x(4);
  tegula::testing::expectAtMarkedLine(tegula::testing::errorOf(kernel("k", negativeStages), {x, 4}),
                                      "LoopOptionsTest.cpp",
                                      "tl::loop_options: num_stages is -1; 1 or more (1: not pipelined), or 0 for the "
                                      "launch's");
}

namespace {

enum class Ask { launchs, yes, no };

constexpr tl::loop_options warpSpecializeOption(Ask ask) {
  tl::loop_options o;
  if (ask != Ask::launchs)
    o.warp_specialize = ask == Ask::yes;
  return o;
}

/// C = A B through tensor descriptors (TMA rings on sm_90a), the K loop's
/// warp_specialize as ASK.
template <Ask ASK>
void descriptorMatmul(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                      tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN,
                      tl::constant<int> BK) {
  auto ad = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto bd = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  tl::tensor m0 = tl::program_id(0) * BM, n0 = tl::program_id(1) * BN;
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, warpSpecializeOption(ASK), acc))
    acc = tl::dot(ad.load({m0, k}), bd.load({k, n0}), acc);
  tl::store(tl::make_block_ptr(c, {M, N}, {N, 1}, {m0, n0}, {BM, BN}), acc, {0, 1});
}

/// The same as a persistent kernel: the programs walk the output tiles, and
/// the warp_specialize option is on the tile loop (as in Triton's
/// persistent tutorial), not on the K loop inside it.
template <Ask ASK>
void persistentDescriptorMatmul(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                                tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                                tl::constant<int> BN, tl::constant<int> BK) {
  auto ad = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto bd = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  tl::tensor tiles_n = (N + (BN.value - 1)) / BN, tiles = (M + (BM.value - 1)) / BM * tiles_n;
  for (auto t : tl::range(tl::program_id(0), tiles, tl::num_programs(0), warpSpecializeOption(ASK))) {
    tl::tensor m0 = t / tiles_n * BM, n0 = t % tiles_n * BN;
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc))
      acc = tl::dot(ad.load({m0, k}), bd.load({k, n0}), acc);
    tl::store(tl::make_block_ptr(c, {M, N}, {N, 1}, {m0, n0}, {BM, BN}), acc, {0, 1});
  }
}

int producerWarps(Kernel &k, const char *chip, bool launchWarpSpecializes) {
  std::vector<float16> a(128 * 96), b(96 * 192);
  std::vector<float> c(128 * 192);
  return k.compile({a, b, c, 128, 192, 96, 64, 64, 32},
                   {.chip = chip, .num_stages = 3, .warp_specialize = launchWarpSpecializes, .assemble = false})
      .producer_warps;
}

} // namespace

/// The loop's option wins over the launch's either way; unset, the launch
/// decides; on sm_80 (no TMA rings) nothing changes. The loops asking for it
/// compute the right product on every backend (the simulator as sm_90a runs
/// the producer warpgroup), and so does a persistent kernel whose tile loop
/// asks for it.
TEST(LoopOptions, WarpSpecializeGivesTheLoopAProducerWhateverTheLaunch) {
  const std::vector<std::string> names = kNames;
  auto yes = kernel("ws_matmul", descriptorMatmul<Ask::yes>, names);
  auto no = kernel("ws_matmul", descriptorMatmul<Ask::no>, names);
  auto launchs = kernel("ws_matmul", descriptorMatmul<Ask::launchs>, names);
  auto persistent = kernel("ws_persistent_matmul", persistentDescriptorMatmul<Ask::yes>, names);
  EXPECT_EQ(producerWarps(yes, "sm_90a", false), 4);
  EXPECT_EQ(producerWarps(no, "sm_90a", true), 0);
  EXPECT_EQ(producerWarps(launchs, "sm_90a", true), 4);
  EXPECT_EQ(producerWarps(launchs, "sm_90a", false), 0);
  EXPECT_EQ(producerWarps(yes, "sm_80", false), 0);
  EXPECT_EQ(producerWarps(persistent, "sm_90a", false), 4);
  EXPECT_EQ(producerWarps(persistent, "sm_80", false), 0);
  tegula::testing::expectF16GemmOnEveryBackend(yes, 100, 72, 96, 3);
  tegula::testing::expectF16GemmOnEveryBackend(no, 100, 72, 96, 3);

  // Persistent: 3 programs for 2 x 3 tiles, K loops of 5 iterations (the
  // rings wrap within and across tiles).
  const int M = 100, N = 136, K = 160;
  const std::vector<float16> a = tegula::testing::random_vector<float16>(size_t(M) * K),
                             b = tegula::testing::random_vector<float16>(size_t(K) * N);
  std::vector<float> want(size_t(M) * N, NAN);
  persistent({.grid = {3}, .backend = Backend::Interp}, a, b, want, M, N, K, 64, 64, 32);
  std::vector<LaunchOptions> targets = {{.grid = {3}, .num_stages = 3, .backend = Backend::Sim, .chip = "sm_90a"}};
  if (gpu_available())
    targets.push_back({.grid = {3}, .num_stages = 3, .backend = Backend::GPU});
  for (const LaunchOptions &o : targets) {
    SCOPED_TRACE(tegula::testing::backend_name(*o.backend));
    std::vector<float> got(size_t(M) * N, NAN);
    persistent(o, a, b, got, M, N, K, 64, 64, 32);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-3) << i;
  }
}
