// StreamKSimTest.cpp - the compiled stream-K GEMM (examples::matmul_stream_k,
// sm_90a, warp specialised: K loops whose trip counts change from tile to
// tile, partial tiles handed between CTAs through global memory and an
// acq_rel counter) in the simulator in every thread order and both CTA
// orders: each tile is finished once, by its last arrival, with every share
// in it, and the same bits whichever program that is.
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Pipeline.h"
#include "examples/stream_k.h"
#include "simulator/Simulator.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace tegula;
using namespace tegula::testing;

namespace {

TEST(StreamKSim, TheWarpSpecialisedGemmIsHazardFreeInEveryThreadOrder) {
  // 3 x 2 tiles of 64 x 64, 5 K steps of 32: 30 units over 7 programs, so
  // runs start and end inside tiles and five of the six tiles have two contributors.
  constexpr int M = 150, N = 128, K = 160, BM = 64, BN = 64, BK = 32, PROGRAMS = 7, TILES = 6;
  const std::vector<std::string> names = {"a", "b", "c", "partials", "arrivals", "M",
                                          "N", "K", "BM", "BN", "BK", "GROUP_M"};
  Kernel k = kernel("matmul_stream_k", examples::matmul_stream_k<bfloat16>, names);
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  std::vector<float> partials(size_t(examples::streamKPartialFloats(PROGRAMS, BM, BN)), std::nanf(""));
  std::vector<int32_t> arrivals(TILES, 0);
  auto ref = poisoned<bfloat16>(size_t(M * N));
  auto args = [&](std::vector<bfloat16> &c) -> std::vector<Arg> {
    return {a, b, c, partials, arrivals, M, N, K, BM, BN, BK, 2};
  };
  k.launch({.grid = {PROGRAMS}, .backend = Backend::Interp}, args(ref));
  LoadedContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(args(ref), "tile", true), &ctx);
  ASSERT_TRUE(module && mlir::succeeded(runGpuPipeline(
                            *module, {.numWarps = 4, .numStages = 3, .chip = "sm_90a", .warpSpecialize = true})));
  ASSERT_TRUE(module->getOperation()->hasAttr("tilegpu.producer_warps"));
  auto simulated = sim::SimKernel::prepare(module->getOperation(), "matmul_stream_k");
  auto parked = [&] { // the partials' floats written since they were poisoned
    return std::count_if(partials.begin(), partials.end(), [](float v) { return !std::isnan(v); });
  };
  std::vector<bfloat16> first;
  for (sim::Schedule s : {sim::Schedule::RoundRobin, sim::Schedule::LowestFirst, sim::Schedule::HighestFirst,
                          sim::Schedule::Shuffled}) {
    SCOPED_TRACE(int(s));
    std::fill(partials.begin(), partials.end(), std::nanf(""));
    auto out = poisoned<bfloat16>(size_t(M * N));
    simulated->run({PROGRAMS}, k.params(), names, args(out), {.schedule = s});
    EXPECT_LT(rel_error(out, to_double(ref)), tolerance<bfloat16>());
    EXPECT_EQ(arrivals, std::vector<int32_t>(TILES, 0));
    // First to last, every share of a split tile is parked (30 units on 7
    // programs: 5 tiles in 2 shares each, the finishers' included; the
    // last tile whole).
    EXPECT_EQ(parked(), 10 * BM * BN);
    if (first.empty())
      first = out;
    else
      EXPECT_EQ(std::memcmp(out.data(), first.data(), out.size() * sizeof(bfloat16)), 0);
  }
  // Last to first, each tile's first contributor arrives last and sees every
  // other share in: it finishes from its registers, parking nothing - the
  // same bits.
  for (sim::Schedule s : {sim::Schedule::RoundRobin, sim::Schedule::Shuffled}) {
    SCOPED_TRACE(int(s));
    std::fill(partials.begin(), partials.end(), std::nanf(""));
    auto out = poisoned<bfloat16>(size_t(M * N));
    simulated->run({PROGRAMS}, k.params(), names, args(out), {.schedule = s, .lastCtaFirst = true});
    EXPECT_EQ(arrivals, std::vector<int32_t>(TILES, 0));
    EXPECT_EQ(parked(), 5 * BM * BN);
    EXPECT_EQ(std::memcmp(out.data(), first.data(), out.size() * sizeof(bfloat16)), 0) << "another order, other bits";
  }
}

} // namespace
