// TmaSimTest.cpp - TMA and mbarriers in the simulator: a tensor-descriptor
// load lowered for sm_90a (cp.async.bulk.tensor completing on an mbarrier),
// run as compiled, then with one of its synchronisation steps removed from
// the LLVM module: each hazard must be reported at the user's line.
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "kernels/TestKernels.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "examples/kernels.h"
#include "simulator/Simulator.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SetVector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <array>
#include <functional>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

/// out = x + 1 over an M x N row-major tensor, one 32 x 32 block per program.
void add_one(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> M, tl::scalar<int32_t> N) {
  auto desc = tl::make_tensor_descriptor(x, {M, N}, {N, 1}, {32, 32});
  tl::tensor rows = tl::program_id(0) * 32 + tl::arange(0, 32);
  tl::tensor cols = tl::program_id(1) * 32 + tl::arange(0, 32);
  tl::tensor block = desc.load({tl::program_id(0) * 32, tl::program_id(1) * 32});
  tl::store(out + rows.expand_dims(1) * N + cols.expand_dims(0), block + 1.0f,
            (rows.expand_dims(1) < M) & (cols.expand_dims(0) < N));
}

/// out = x + 1 again, written through a descriptor: a TMA store.
void add_one_store(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> M, tl::scalar<int32_t> N) {
  auto desc = tl::make_tensor_descriptor(out, {M, N}, {N, 1}, {32, 32});
  tl::tensor rows = tl::program_id(0) * 32 + tl::arange(0, 32);
  tl::tensor cols = tl::program_id(1) * 32 + tl::arange(0, 32);
  tl::tensor mask = (rows.expand_dims(1) < M) & (cols.expand_dims(0) < N);
  tl::tensor block = tl::load(x + rows.expand_dims(1) * N + cols.expand_dims(0), mask, 0.0f);
  desc.store({tl::program_id(0) * 32, tl::program_id(1) * 32}, block + 1.0f);
}

/// Lower add_one for sm_90a, drop the inline PTX containing `drop` (none:
/// keep all), and run it on a 40 x 48 tensor (2 x 2 programs, ragged).
void runWithout(const std::string &drop, const std::string &expectedError, bool store = false) {
  auto k = store ? kernel("add_one_store", add_one_store, {"x", "out", "M", "N"})
                 : kernel("add_one", add_one, {"x", "out", "M", "N"});
  const int M = 40, N = 48;
  auto x = random_vector<float>(size_t(M * N));
  auto ref = poisoned<float>(x.size());
  k({.grid = {2, 2}, .backend = Backend::Interp}, x, ref, M, N);

  LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(k.ir({x, ref, M, N}, "tile", true), &ctx);
  ASSERT_TRUE(module);
  ASSERT_TRUE(mlir::succeeded(runGpuPipeline(*module, {.numWarps = 4, .numStages = 1, .chip = "sm_90a"})));
  int dropped = 0, copies = 0;
  module->walk([&](mlir::LLVM::InlineAsmOp op) {
    copies += op.getAsmString().contains(store ? "cp.async.bulk.tensor.2d.global.shared::cta"
                                               : "cp.async.bulk.tensor.2d.shared::cluster");
    if (!drop.empty() && op.getAsmString().contains(drop)) {
      op.erase();
      ++dropped;
    }
  });
  ASSERT_EQ(copies, 1) << "the access did not become a TMA copy";
  if (!drop.empty())
    ASSERT_GT(dropped, 0) << "no inline PTX contains " << drop;
  auto simulated = sim::SimKernel::prepare(module->getOperation(), store ? "add_one_store" : "add_one");
  auto out = poisoned<float>(x.size());
  std::vector<Arg> args = {Arg(x), Arg(out), Arg(M), Arg(N)};
  if (expectedError.empty()) {
    simulated->run({2, 2}, k.params(), {"x", "out", "M", "N"}, args);
    EXPECT_EQ(out, ref);
    return;
  }
  try {
    simulated->run({2, 2}, k.params(), {"x", "out", "M", "N"}, args);
    ADD_FAILURE() << "expected the hazard to be reported";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr(expectedError));
    EXPECT_THAT(e.what(), HasSubstr("TmaSimTest.cpp:")); // the user's load
  }
}

TEST(TmaSim, TheLoweringIsHazardFree) { runWithout("", ""); }

/// Without the wait, threads read the block before the copy is known to
/// have landed.
TEST(TmaSim, AMissingMbarrierWaitIsReported) {
  runWithout("mbarrier.try_wait", "before waiting for it (mbarrier.try_wait on the mbarrier");
}

TEST(TmaSim, AnUninitialisedMbarrierIsReported) {
  runWithout("mbarrier.init", "which no mbarrier.init initialised");
}

/// No copy and no arrival: the phase never completes and every thread waits.
TEST(TmaSim, APhaseThatNeverCompletesIsADeadlock) {
  runWithout("cp.async.bulk.tensor", "deadlock: the mbarrier at shared offset");
}

/// A TMA store: the block goes out of shared memory through the bulk copy,
/// clipped to the 40 x 48 tensor (its padding rows and columns untouched).
TEST(TmaSim, TheStoreIsHazardFree) { runWithout("", "", /*store=*/true); }

/// The block was written by ordinary stores; without the fence the bulk
/// copy (async proxy) may read the old bytes.
TEST(TmaSim, AStoreWithoutItsProxyFenceIsReported) {
  runWithout("fence.proxy.async", "without a fence.proxy.async.shared::cta since", /*store=*/true);
}

/// examples::matmul_descriptors (bf16) lowered for sm_90a at 3 stages, its
/// result from the interpreter, and a simulator run of the lowered module
/// once the caller has changed it.
struct LoweredGemm {
  int M, N, K, BM, BN, BK;
  Kernel k = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>, names());
  std::vector<bfloat16> a, b, ref;
  LoadedContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  bool compiled = false; // the GPU pipeline ran

  static std::vector<std::string> names() {
    return {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"};
  }
  LoweredGemm(int m, int n, int kk, int bm, int bn, int bk, int warps, bool warpSpecialize, bool pingPong = false)
      : M(m), N(n), K(kk), BM(bm), BN(bn), BK(bk), a(random_vector<bfloat16>(size_t(m * kk))),
        b(random_vector<bfloat16>(size_t(kk * n))), ref(poisoned<bfloat16>(size_t(m * n))) {
    std::vector<Arg> args = {a, b, ref, M, N, K, K, N, N, BM, BN, BK};
    k.launch({.grid = {uint32_t(cdiv(M, BM)), uint32_t(cdiv(N, BN))}, .backend = Backend::Interp}, args);
    lower(k.ir(args, "tile", true), warps, warpSpecialize, pingPong);
  }
  void lower(const std::string &tileIr, int warps, bool warpSpecialize, bool pingPong) {
    module = mlir::parseSourceString<mlir::ModuleOp>(tileIr, &ctx);
    ASSERT_TRUE(module);
    ASSERT_TRUE(mlir::succeeded(runGpuPipeline(
        *module, {.numWarps = warps, .chip = "sm_90a", .warpSpecialize = warpSpecialize || pingPong,
                  .pingPong = pingPong})));
    EXPECT_EQ(module->getOperation()->hasAttr("tilegpu.producer_warps"), warpSpecialize || pingPong);
    EXPECT_EQ(module->getOperation()->hasAttr("tilegpu.programs_per_cta"), pingPong);
    compiled = true;
  }
  /// The simulator's error, or "" when it ran and matched the interpreter.
  std::string run(sim::Schedule schedule = sim::Schedule::RoundRobin) {
    if (!compiled)
      return "not compiled"; // the constructor reported why
    auto simulated = sim::SimKernel::prepare(module->getOperation(), "matmul_descriptors");
    auto out = poisoned<bfloat16>(size_t(M * N));
    std::vector<Arg> args = {a, b, out, M, N, K, K, N, N, BM, BN, BK};
    try {
      simulated->run({uint32_t(cdiv(M, BM)), uint32_t(cdiv(N, BN))}, k.params(), names(), args,
                     {.schedule = schedule});
    } catch (const Error &e) {
      return e.what();
    }
    EXPECT_LT(rel_error(out, to_double(ref)), tolerance<bfloat16>());
    return "";
  }
};

/// The descriptor GEMM pipelined for sm_90a: TMA rings (3 stages, an
/// mbarrier each that A's and B's copies share) feeding wgmma, K = 160 (5 iterations: the ring wraps and
/// the phases flip), run with `drop` removed. `warpSpecialize`: a producer
/// warpgroup fills the rings.
void runPipelinedWithout(const std::string &drop, const std::string &expectedError, bool warpSpecialize = false,
                         bool pingPong = false) {
  // Ping-pong: 3 x 2 programs on 2 x 2 CTAs, the last column's second
  // program past the end.
  LoweredGemm g(pingPong ? 150 : 64, 64, 160, 64, 64, 32, 4, warpSpecialize, pingPong);
  int dropped = 0, waits = 0;
  g.module->walk([&](mlir::LLVM::InlineAsmOp op) {
    waits += op.getAsmString().contains("mbarrier.try_wait.parity.shared::cta.b64 %tegula_done, [$0], $1");
    if (!drop.empty() && op.getAsmString().contains(drop)) {
      op.erase();
      ++dropped;
    }
  });
  ASSERT_GE(waits, 1) << "the loads did not become a TMA ring";
  int stmatrix = 0; // the epilogue stages C (bf16) for its TMA store
  g.module->walk([&](mlir::Operation *op) { stmatrix += op->getName().getStringRef() == "nvvm.stmatrix"; });
  ASSERT_GT(stmatrix, 0) << "C is not staged with stmatrix";
  if (!drop.empty())
    ASSERT_GT(dropped, 0) << "no inline PTX contains " << drop;
  const std::string error = g.run();
  if (expectedError.empty())
    EXPECT_EQ(error, "");
  else
    EXPECT_THAT(error, HasSubstr(expectedError)) << "expected the hazard to be reported";
}

TEST(TmaSim, ThePipelinedRingIsHazardFree) { runPipelinedWithout("", ""); }

/// Without the stage waits, wgmma reads a stage before its copies are known
/// to have landed (the tensor cores' read is checked like any other).
TEST(TmaSim, APipelinedRingWithoutItsWaitsIsReported) {
  runPipelinedWithout("mbarrier.try_wait", "before waiting for it");
}

/// Warp specialised: the producer warpgroup waits for each stage's release
/// before refilling it, the consumers release stages once their wgmma
/// group completed.
TEST(TmaSim, AWarpSpecializedRingIsHazardFree) { runPipelinedWithout("", "", true); }

/// A producer that does not wait for the release overwrites stages the
/// consumers have not read yet.
TEST(TmaSim, AProducerThatDoesNotWaitForTheReleaseIsReported) {
  runPipelinedWithout("tegula_wait_release:", "no thread has waited for yet", true);
}

/// Consumers that do not wait for their stage issue wgmma on it while the
/// producer's copies are still landing there (reported as a read of bytes
/// the copy writes before its mbarrier was waited for).
TEST(TmaSim, AConsumerThatDoesNotWaitForItsStageIsReported) {
  runPipelinedWithout("tegula_wait:", "before waiting for it", true);
}

/// Consumers that never release: the producer waits forever.
TEST(TmaSim, ConsumersThatNeverReleaseAStageDeadlock) {
  runPipelinedWithout("mbarrier.arrive.shared::cta.b64", "deadlock: the mbarrier at shared offset", true);
}

/// Ping-pong: two programs per CTA, each on its own consumer warpgroup with
/// its own stages of the rings, its own barrier and its own scratch; the
/// producer's warps 0 and 1 fill one program's stages each.
TEST(TmaSim, APingPongKernelIsHazardFree) { runPipelinedWithout("", "", true, true); }

/// Threads that synchronise only through mbarriers and barriers of their
/// own drift apart on a GPU. Run so that the lowest- (highest-) numbered
/// threads get ahead, or in a shuffled order, the warp-specialised and
/// ping-pong GEMMs stay hazard-free: these orders found a program's epilogue reusing ring
/// bytes the other program still read, and producer lanes still waiting on
/// release mbarriers the consumers had invalidated.
TEST(TmaSim, WarpSpecializedKernelsAreHazardFreeInOtherThreadOrders) {
  for (sim::Schedule schedule : {sim::Schedule::LowestFirst, sim::Schedule::HighestFirst, sim::Schedule::Shuffled})
    for (bool pingPong : {false, true}) {
      SCOPED_TRACE(fmt::format("{}{}",
                               std::array{"round-robin", "lowest-first", "highest-first", "shuffled"}[size_t(schedule)],
                               pingPong ? ", ping-pong" : ""));
      LoweredGemm g(pingPong ? 150 : 64, 64, 160, 64, 64, 32, 4, true, pingPong);
      EXPECT_EQ(g.run(schedule), "");
    }
}

/// A consumer warp releases a stage once its lanes meet after their wgmma
/// waits (bar.warp.sync), lane 0 arriving for the warp. Without the meeting,
/// lane 0 may release the stage while other lanes' wgmma groups still read
/// it, and the producer refills it under them. (Only the shuffled order lets
/// a warp's lanes drift apart; the others run them in step.)
TEST(TmaSim, AWarpThatReleasesBeforeItsLanesAreDoneIsReported) {
  LoweredGemm g(64, 64, 160, 64, 64, 32, 4, true, false);
  int released = 0;
  g.module->walk([&](mlir::LLVM::InlineAsmOp op) {
    const std::string text = op.getAsmString().str(), meet = "bar.warp.sync -1;\n";
    if (text.starts_with(meet + "@$0 mbarrier.arrive.shared::cta.b64")) {
      op.setAsmString(text.substr(meet.size()));
      ++released;
    }
  });
  ASSERT_GT(released, 0) << "no warp's release found";
  EXPECT_THAT(g.run(sim::Schedule::Shuffled),
              HasSubstr("the shared memory this wgmma.mma_async reads changed between its issue and the "
                        "wgmma.wait_group"));
}

/// The ping-pong persistent GEMM on 3 programs (2 CTAs) over 6 tiles:
/// program 2 has two tiles (turns 0 and 2), its partner program 3 is past
/// the end and retires at once. Without the retirement, program 2's second
/// turn waits for a turn that never comes.
std::string runPingPongTurnsWithout(const std::string &drop) {
  const int M = 128, N = 192, K = 96, B = 64, BK = 32;
  const std::vector<std::string> names = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"};
  Kernel k = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>, names);
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  auto want = poisoned<bfloat16>(size_t(M * N)), got = want;
  k.launch({.grid = {3}, .backend = Backend::Interp}, {a, b, want, M, N, K, B, B, BK, 2});
  LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(k.ir({a, b, want, M, N, K, B, B, BK, 2}, "tile", true), &ctx);
  if (!module || mlir::failed(runGpuPipeline(*module, {.chip = "sm_90a", .warpSpecialize = true, .pingPong = true}))) {
    ADD_FAILURE() << "the persistent GEMM did not compile for sm_90a";
    return "not compiled";
  }
  int turns = 0, dropped = 0;
  module->walk([&](mlir::LLVM::InlineAsmOp op) {
    turns += op.getAsmString().contains("tegula_turn:");
    if (!drop.empty() && op.getAsmString().contains(drop)) {
      op.erase();
      ++dropped;
    }
  });
  EXPECT_GT(turns, 0) << "the loops take no turns";
  if (!drop.empty())
    EXPECT_GT(dropped, 0) << "no inline PTX contains " << drop;
  auto simulated = sim::SimKernel::prepare(module->getOperation(), "matmul_persistent_descriptors");
  try {
    simulated->run({3}, k.params(), names, {a, b, got, M, N, K, B, B, BK, 2});
  } catch (const Error &e) {
    return e.what();
  }
  EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
  return "";
}

TEST(TmaSim, PingPongTurnsAreHazardFree) { EXPECT_EQ(runPingPongTurnsWithout(""), ""); }

/// A C block of more than two 128-byte column blocks (bf16, 256 columns: 4)
/// is staged two blocks at a time (layout::tmaStoreStaging): block j waits
/// for the copy of block j - 2 out of its slot. One program a tile (64 x 256
/// output), or - `persistent`, warp specialised - 2 programs over 4 tiles,
/// whose stores wait for the previous tile's copies only when they reuse a
/// slot (deferred). Returns the simulator's error, "" when it matched the
/// interpreter.
std::string runStagedStoreWithout(const std::string &drop, bool persistent) {
  const int M = persistent ? 128 : 64, N = persistent ? 512 : 256, K = 64, BM = 64, BN = 256, BK = 32;
  const std::vector<std::string> names =
      persistent ? std::vector<std::string>{"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"}
                 : std::vector<std::string>{"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"};
  const std::string name = persistent ? "matmul_persistent_descriptors" : "matmul_descriptors";
  Kernel k = persistent ? kernel(name, examples::matmul_persistent_descriptors<bfloat16>, names)
                        : kernel(name, examples::matmul_descriptors<bfloat16>, names);
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  auto want = poisoned<bfloat16>(size_t(M * N)), got = want;
  auto argsFor = [&](std::vector<bfloat16> &c) {
    return persistent ? std::vector<Arg>{a, b, c, M, N, K, BM, BN, BK, 2}
                      : std::vector<Arg>{a, b, c, M, N, K, K, N, N, BM, BN, BK};
  };
  const Grid grid = persistent ? Grid{2} : Grid{uint32_t(M / BM), uint32_t(N / BN)};
  k.launch({.grid = grid, .backend = Backend::Interp}, argsFor(want));
  LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(argsFor(want), "tile", true), &ctx);
  if (!module || mlir::failed(runGpuPipeline(*module, {.numWarps = 4, .chip = "sm_90a", .warpSpecialize = persistent}))) {
    ADD_FAILURE() << "the GEMM did not compile for sm_90a";
    return "not compiled";
  }
  int slotWaits = 0, boxes = 0, dropped = 0;
  module->walk([&](mlir::LLVM::InlineAsmOp op) {
    slotWaits += op.getAsmString().contains("cp.async.bulk.wait_group.read 1;");
    boxes += op.getAsmString().contains("cp.async.bulk.tensor.2d.global.shared::cta");
    if (!drop.empty() && op.getAsmString().contains(drop)) {
      op.erase();
      ++dropped;
    }
  });
  EXPECT_EQ(boxes, 4) << "C does not leave one box per 128-byte column block";
  EXPECT_EQ(slotWaits, persistent ? 4 : 2) << "the blocks are not staged two at a time";
  if (!drop.empty())
    EXPECT_GT(dropped, 0) << "no inline PTX contains " << drop;
  auto simulated = sim::SimKernel::prepare(module->getOperation(), name);
  try {
    simulated->run(grid, k.params(), names, argsFor(got));
  } catch (const Error &e) {
    return e.what();
  }
  EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
  return "";
}

TEST(TmaSim, AStoreStagedTwoBlocksAtATimeIsHazardFree) {
  EXPECT_EQ(runStagedStoreWithout("", false), "");
  EXPECT_EQ(runStagedStoreWithout("", true), "");
}

/// Without the slot waits, block j's stores overwrite block j - 2 (or the
/// previous tile's) while its bulk copy may still be reading it.
TEST(TmaSim, AStagedStoreThatDoesNotWaitForItsSlotIsReported) {
  for (bool persistent : {false, true})
    EXPECT_THAT(runStagedStoreWithout("cp.async.bulk.wait_group.read 1;", persistent),
                HasSubstr("which the asynchronous read at"))
        << (persistent ? "persistent" : "one program a tile");
}

TEST(TmaSim, APingPongProgramThatNeverRetiresIsADeadlock) {
  EXPECT_THAT(runPingPongTurnsWithout("@$1 mbarrier.arrive.shared::cta.b64"), HasSubstr("deadlock"));
}

/// two_dots_tma (TestKernels.h: two dots reading one TMA-fed tile per
/// iteration, as it is and transposed), warp specialised for sm_90a: one ring that
/// both dots read, its stage released once both wgmma groups completed.
/// `mutate` changes the lowered module; the simulator's error, or "" when it
/// ran and matched the interpreter.
std::string runSharedRing(const std::function<void(mlir::ModuleOp)> &mutate) {
  const int K = 448, BK = 64; // 7 iterations over 3 stages: every stage is refilled
  const std::vector<std::string> names = {"a", "b", "c1", "c2", "K", "BK"};
  Kernel k = kernel("two_dots_tma", two_dots_tma, names);
  auto a = random_vector<bfloat16>(BK * BK), b = random_vector<bfloat16>(size_t(K) * BK);
  auto want1 = poisoned<float>(BK * BK), want2 = poisoned<float>(BK * BK);
  std::vector<Arg> args = {a, b, want1, want2, K, BK};
  k.launch({.grid = {1}, .backend = Backend::Interp}, args);
  LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(args, "tile", true), &ctx);
  if (!module || mlir::failed(runGpuPipeline(*module, {.chip = "sm_90a", .warpSpecialize = true}))) {
    ADD_FAILURE() << "two_dots_tma did not compile for sm_90a";
    return "not compiled";
  }
  EXPECT_TRUE(module->getOperation()->hasAttr("tilegpu.producer_warps"));
  mutate(*module);
  auto simulated = sim::SimKernel::prepare(module->getOperation(), "two_dots_tma");
  auto got1 = poisoned<float>(BK * BK), got2 = poisoned<float>(BK * BK);
  std::vector<Arg> run = {a, b, got1, got2, K, BK};
  try {
    simulated->run({1}, k.params(), names, run);
  } catch (const Error &e) {
    return e.what();
  }
  EXPECT_LT(rel_error(got1, to_double(want1)), 1e-5);
  EXPECT_LT(rel_error(got2, to_double(want2)), 1e-5);
  return "";
}

TEST(TmaSim, AWarpSpecializedSharedRingIsHazardFree) {
  EXPECT_EQ(runSharedRing([](mlir::ModuleOp) {}), "");
}

/// The consumers release the stage before its wgmma groups complete (the
/// release, with what computes its address, moved before the iteration's
/// first wgmma.wait_group): the producer may refill a stage the tensor cores
/// are still reading.
TEST(TmaSim, ASharedRingReleasedBeforeItsWgmmaGroupsCompleteIsReported) {
  const std::string error = runSharedRing([](mlir::ModuleOp module) {
    mlir::LLVM::InlineAsmOp arrive;
    module->walk([&](mlir::LLVM::InlineAsmOp op) {
      if (!arrive && op.getAsmString().contains("mbarrier.arrive.shared::cta.b64"))
        arrive = op;
    });
    ASSERT_TRUE(arrive) << "no release in the consumers";
    mlir::Operation *firstWait = nullptr;
    for (mlir::Operation *op = arrive->getPrevNode(); op; op = op->getPrevNode())
      if (auto asmOp = mlir::dyn_cast<mlir::LLVM::InlineAsmOp>(op))
        if (asmOp.getAsmString().contains("wgmma.wait_group"))
          firstWait = op;
    ASSERT_TRUE(firstWait) << "no wgmma wait before the release in its block";
    // The release's operands computed after the first wait move with it.
    llvm::SetVector<mlir::Operation *> slice;
    std::function<void(mlir::Operation *)> collect = [&](mlir::Operation *op) {
      for (mlir::Value v : op->getOperands())
        if (mlir::Operation *def = v.getDefiningOp())
          if (def->getBlock() == arrive->getBlock() && firstWait->isBeforeInBlock(def) && !slice.contains(def)) {
            collect(def);
            slice.insert(def);
          }
    };
    collect(arrive);
    slice.insert(arrive);
    for (mlir::Operation *op : slice)
      op->moveBefore(firstWait);
  });
  // The producer's refill lands under the wgmma still reading the stage:
  // at its completion the wgmma reads bytes the new copy owns.
  EXPECT_THAT(error, HasSubstr("which the cp.async.bulk.tensor at")) << "expected the early release to be reported";
  EXPECT_THAT(error, HasSubstr("before waiting for it"));
  EXPECT_THAT(error, HasSubstr("wgmma.mma_async"));
}

/// The warp-specialised GEMM at 8 + 4 warps - setmaxnreg 40 (producer) and
/// 232 (consumers) in a pool of 384 threads x .maxnreg 168 - its lowered
/// module changed by `mutate`, run in the simulator: the error, or "" when
/// it ran and matched the interpreter.
std::string runRegisterMoves(const std::function<void(mlir::ModuleOp)> &mutate) {
  LoweredGemm g(128, 128, 256, 128, 128, 64, 8, true);
  mutate(*g.module);
  return g.run();
}

/// Rewrites the immediate of every setmaxnreg.inc.
void consumersAskFor(mlir::ModuleOp module, int registers) {
  module->walk([&](mlir::LLVM::InlineAsmOp op) {
    if (op.getAsmString().starts_with("setmaxnreg.inc"))
      op.setAsmString(fmt::format("setmaxnreg.inc.sync.aligned.u32 {};", registers));
  });
}

TEST(TmaSim, RegistersMoveFromTheProducerToTheConsumers) {
  EXPECT_EQ(runRegisterMoves([](mlir::ModuleOp) {}), "");
}

/// 256 consumer threads x (248 - 168) > 128 producer threads x (168 - 40):
/// setmaxnreg.inc waits for registers nobody gives back.
TEST(TmaSim, ConsumersAskingForMoreRegistersThanThePoolHasDeadlock) {
  EXPECT_THAT(runRegisterMoves([](mlir::ModuleOp m) { consumersAskFor(m, 248); }),
              HasSubstr("waits in setmaxnreg.inc 248 for 10240 registers; the CTA's pool (384 threads x .maxnreg 168) has 6144 free"));
}

/// Without .maxnreg the pool setmaxnreg moves registers in is undefined.
TEST(TmaSim, SetmaxnregWithoutADeclaredRegisterCountIsReported) {
  EXPECT_THAT(runRegisterMoves([](mlir::ModuleOp m) {
                m->removeAttr("tilegpu.max_registers");
                m->walk([](mlir::LLVM::LLVMFuncOp fn) { fn->removeAttr("nvvm.maxnreg"); });
              }),
              HasSubstr("declares no per-thread register count (.maxnreg)"));
}

} // namespace
