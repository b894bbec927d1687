// MulticastSimTest.cpp - the compiled clustered GEMM
// (examples::matmul_persistent_cluster, warp specialised, clusters of 2
// multicasting B) in the simulator with parts of its cluster protocol
// removed from the lowered code: each removal must be reported, and the
// whole protocol must be hazard-free in every thread order.
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Pipeline.h"
#include "examples/kernels.h"
#include "simulator/Simulator.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

/// The clustered persistent GEMM lowered for sm_90a (64x64x32 tiles, 4 + 4
/// warps, 3 stages, clusters of 2, 4 programs over 3 x 2 tiles: rings that
/// wrap within and across tiles), its result from the interpreter, and a
/// simulator run of the lowered module once the caller has changed it.
struct LoweredClusterGemm {
  static constexpr int M = 200, N = 128, K = 160, BM = 64, BN = 64, BK = 32, CLUSTER = 2, PROGRAMS = 4;
  Kernel k = kernel("matmul_persistent_cluster", examples::matmul_persistent_cluster<bfloat16>, names());
  std::vector<bfloat16> a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  std::vector<bfloat16> ref = poisoned<bfloat16>(size_t(M * N));
  LoadedContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  static std::vector<std::string> names() {
    return {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"};
  }
  std::vector<Arg> args(std::vector<bfloat16> &c) { return {a, b, c, M, N, K, BM, BN, BK, 2}; }

  LoweredClusterGemm() {
    k.launch({.grid = {PROGRAMS}, .backend = Backend::Interp, .cluster_size = CLUSTER}, args(ref));
    module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(args(ref), "tile", true), &ctx);
    EXPECT_TRUE(module && mlir::succeeded(runGpuPipeline(
                              *module, {.numWarps = 4, .chip = "sm_90a", .warpSpecialize = true, .clusterSize = CLUSTER})));
    EXPECT_TRUE(module->getOperation()->hasAttr("tilegpu.cluster_size"));
  }

  /// Removes the inline PTX containing `text`; how many it removed.
  int drop(const std::string &text) {
    int dropped = 0;
    module->walk([&](mlir::LLVM::InlineAsmOp op) {
      if (op.getAsmString().contains(text)) {
        op.erase();
        ++dropped;
      }
    });
    return dropped;
  }

  /// The simulator's error, or "" when it ran and matched the interpreter.
  std::string run(sim::Schedule schedule) {
    auto simulated = sim::SimKernel::prepare(module->getOperation(), "matmul_persistent_cluster");
    auto out = poisoned<bfloat16>(size_t(M * N));
    try {
      simulated->run({PROGRAMS}, k.params(), names(), args(out), {.schedule = schedule});
    } catch (const Error &e) {
      return e.what();
    }
    EXPECT_LT(rel_error(out, to_double(ref)), tolerance<bfloat16>());
    return "";
  }
};

constexpr sim::Schedule kSchedules[] = {sim::Schedule::RoundRobin, sim::Schedule::LowestFirst,
                                        sim::Schedule::HighestFirst, sim::Schedule::Shuffled};

/// Every order of the threads: the CTAs drift apart, the protocol holds.
TEST(MulticastSim, TheClusteredGemmIsHazardFreeInEveryThreadOrder) {
  LoweredClusterGemm g;
  for (sim::Schedule s : kSchedules)
    EXPECT_EQ(g.run(s), "") << "schedule " << int(s);
}

/// Without the cluster barriers a CTA's producer can multicast into, or its
/// consumers arrive on, the other CTA's mbarriers before that CTA has
/// initialised them (or after it has invalidated them and exited).
TEST(MulticastSim, AClusterWithoutItsBarriersIsReported) {
  LoweredClusterGemm g;
  ASSERT_EQ(g.drop("barrier.cluster.arrive"), 3);
  std::string errors;
  for (sim::Schedule s : kSchedules)
    errors += g.run(s);
  EXPECT_THAT(errors, ::testing::AnyOf(HasSubstr("which no mbarrier.init initialised"), HasSubstr("has exited")));
}

/// Consumer warps that release their stages in CTA 0 only (their arrivals
/// on rank 1's mbarriers dropped): CTA 1's producer, which refills its
/// stages in both CTAs, waits forever for their release.
TEST(MulticastSim, ReleasesMissingInOneCtaDeadlock) {
  LoweredClusterGemm g;
  llvm::SmallVector<mlir::LLVM::InlineAsmOp> toRankOne;
  g.module->walk([&](mlir::LLVM::InlineAsmOp op) {
    if (op.getAsmString().contains("mapa.shared::cluster"))
      if (auto rank = op.getOperand(1).getDefiningOp<mlir::LLVM::ConstantOp>())
        if (mlir::cast<mlir::IntegerAttr>(rank.getValue()).getInt() == 1)
          toRankOne.push_back(op);
  });
  ASSERT_EQ(toRankOne.size(), 2u);
  for (mlir::LLVM::InlineAsmOp mapa : toRankOne) {
    for (mlir::Operation *arrive : llvm::make_early_inc_range(mapa.getResult(0).getUsers()))
      arrive->erase();
    mapa.erase();
  }
  EXPECT_THAT(g.run(sim::Schedule::RoundRobin), HasSubstr("deadlock"));
}

/// A producer that does not wait for the stage's release runs ahead of the
/// consumers: it announces a stage's next bytes before the phase whose
/// data they have not read completed (or copies over that data).
TEST(MulticastSim, AProducerThatDoesNotWaitForTheClustersReleaseIsReported) {
  LoweredClusterGemm g;
  ASSERT_GT(g.drop("tegula_wait_release:"), 0);
  EXPECT_THAT(g.run(sim::Schedule::RoundRobin),
              ::testing::AnyOf(HasSubstr("no thread has waited for yet"),
                               HasSubstr("more arrivals than the mbarrier's count in one phase")));
}

} // namespace
