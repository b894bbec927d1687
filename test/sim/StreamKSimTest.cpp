// StreamKSimTest.cpp - the compiled stream-K GEMM (examples::matmul_stream_k,
// sm_90a, warp specialised: K loops whose trip counts change from tile to
// tile, partial tiles handed between CTAs through global memory and an
// acq_rel counter) in the simulator in every thread order: the CTAs drift
// apart, each tile is still finished once, by its last arrival, with every
// partial in it.
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
  // runs start and end inside tiles and tiles have two or three contributors.
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
  for (sim::Schedule s : {sim::Schedule::RoundRobin, sim::Schedule::LowestFirst, sim::Schedule::HighestFirst,
                          sim::Schedule::Shuffled}) {
    SCOPED_TRACE(int(s));
    auto simulated = sim::SimKernel::prepare(module->getOperation(), "matmul_stream_k");
    auto out = poisoned<bfloat16>(size_t(M * N));
    simulated->run({PROGRAMS}, k.params(), names, args(out), {.schedule = s});
    EXPECT_LT(rel_error(out, to_double(ref)), tolerance<bfloat16>());
    EXPECT_EQ(arrivals, std::vector<int32_t>(TILES, 0));
  }
}

} // namespace
