// LoopOptionsTest.cpp - tl::loop_options on a tl::range (Triton's tl.range
// keywords): num_stages sets that loop's software-pipeline depth over the
// launch's - deeper rings, or none - and the GEMM stays right on every
// backend; a negative depth is an error at the user's line.
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
