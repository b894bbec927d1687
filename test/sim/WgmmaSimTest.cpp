// WgmmaSimTest.cpp - Hopper's wgmma in the simulator: the compiler's
// shared-memory placement of wgmma operands (layout/WgmmaOperands.h) read
// back through the simulator's independent decoding of matrix descriptors
// (simulator/Wgmma.h, written from the PTX ISA's canonical layouts).
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "compiler/layout/WgmmaOperands.h"
#include "examples/kernels.h"
#include "kernels/TestKernels.h"
#include "simulator/Simulator.h"
#include "simulator/Wgmma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <functional>
#include <fmt/format.h>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

/// Every element of every instruction operand (m64 x k16 slices of A, k16 x
/// N slices of B) is where the descriptor says it is.
TEST(WgmmaSim, DescriptorsAddressTheCompilersTiles) {
  struct Case { int operand; std::vector<int32_t> shape; int contiguous; };
  const std::vector<Case> cases = {
      {0, {64, 16}, 1},  {0, {64, 32}, 1},  {0, {128, 64}, 1}, {0, {64, 128}, 1}, // A K-major
      {0, {64, 32}, 0},  {0, {128, 64}, 0},                                        // A M-major
      {1, {16, 32}, 1},  {1, {32, 64}, 1},  {1, {64, 128}, 1}, {1, {16, 256}, 1}, // B N-major
      {1, {32, 64}, 0},  {1, {64, 128}, 0}, {1, {128, 32}, 0},                     // B K-major
  };
  for (const Case &c : cases) {
    auto plan = layout::planWgmmaOperandTile(c.operand, c.shape, c.contiguous, 16);
    ASSERT_TRUE(plan) << c.operand << " " << c.shape[0] << "x" << c.shape[1];
    SCOPED_TRACE(fmt::format("{} {} -> {}", c.operand ? "B" : "A", plan->tile.toString(),
                             plan->kMajor ? "K-major" : "MN-major"));
    const int kDim = c.operand == 0 ? 1 : 0, mnDim = 1 - kDim;
    const int32_t K = c.shape[size_t(kDim)], MN = c.shape[size_t(mnDim)];
    const int32_t instrMN = c.operand == 0 ? 64 : std::min(MN, 256);
    const int64_t base = 4096; // a multiple of the swizzle period
    int checked = 0;
    for (int32_t mn0 = 0; mn0 < MN; mn0 += instrMN)
      for (int32_t k0 = 0; k0 < K; k0 += 16) {
        const uint64_t desc =
            plan->descriptorBase() | uint64_t((base + plan->instructionOffset(mn0, k0)) >> 4);
        for (int32_t mn = 0; mn < instrMN; ++mn)
          for (int32_t k = 0; k < 16; ++k) {
            const int32_t d0 = kDim == 0 ? k0 + k : mn0 + mn, d1 = kDim == 0 ? mn0 + mn : k0 + k;
            const int64_t want = base + plan->tile.offset(d0, d1);
            const int64_t got = sim::wgmmaElementOffset(desc, plan->kMajor, 2, mn, k);
            ASSERT_EQ(got, want) << "element (" << d0 << ", " << d1 << ") of the instruction at "
                                 << mn0 << ", " << k0;
            ++checked;
          }
      }
    EXPECT_EQ(checked, MN * K);
  }
}

/// The lowering adds each instruction's offset / 16 to the tile's address
/// field (shared addresses stay below 2^18); a field that overflowed sets the
/// reserved bits 14-15, which the model reports instead of reading wrapped
/// addresses.
TEST(WgmmaSim, AnOverflowedStartAddressIsReported) {
  auto plan = layout::planWgmmaOperandTile(1, {16, 64}, 1, 16);
  ASSERT_TRUE(plan);
  const uint64_t last = plan->descriptorBase() | 0x3fff; // the window's last 16 bytes
  EXPECT_NO_THROW(sim::wgmmaElementOffset(last, plan->kMajor, 2, 0, 0));
  EXPECT_THAT(error_of([&] { sim::wgmmaElementOffset(last + 1, plan->kMajor, 2, 0, 0); }),
              ::testing::HasSubstr("reserved bits 14-15 are set"));
}

/// The wgmma GEMM lowered for sm_90a (`stages` > 1: its operands pipelined
/// through cp.async rings), then one of its synchronisation steps removed
/// from the LLVM module (the inline PTX whose text contains `drop`; for the
/// wait, its results become its operands), and run.
void runWithout(const std::string &drop, const std::string &expectedError, int stages = 1) {
  auto mm = kernel("matmul", examples::matmul<bfloat16>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  const int M = 64, N = 64, K = 128; // 4 iterations: a 3-stage ring wraps around
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  auto ref = poisoned<bfloat16>(size_t(M * N));
  mm({.grid = {1, 1}, .backend = Backend::Interp}, a, b, ref, M, N, K, 64, 64, 32);

  LoadedContext ctx;
  std::vector<Arg> refArgs = {Arg(a), Arg(b), Arg(ref), Arg(M), Arg(N), Arg(K), Arg(64), Arg(64), Arg(32)};
  auto module = mlir::parseSourceString<mlir::ModuleOp>(mm.ir(refArgs, "tile", true), &ctx);
  ASSERT_TRUE(module);
  ASSERT_TRUE(mlir::succeeded(runGpuPipeline(*module, {.numStages = stages, .chip = "sm_90a"})));
  int fences = 0;
  module->walk([&](mlir::LLVM::InlineAsmOp op) {
    fences += op.getAsmString().contains("fence.proxy.async");
  });
  ASSERT_GT(fences, 0);
  int dropped = 0;
  if (!drop.empty())
    module->walk([&](mlir::LLVM::InlineAsmOp op) {
      if (op.getAsmString().find(drop) == llvm::StringRef::npos)
        return;
      if (op.getNumResults()) { // the wait: its operands stand for its results
        mlir::OpBuilder b(op);
        mlir::Value s = mlir::LLVM::UndefOp::create(b, op.getLoc(), op.getResult(0).getType());
        for (auto [i, v] : llvm::enumerate(op.getOperands()))
          s = mlir::LLVM::InsertValueOp::create(b, op.getLoc(), s, v, llvm::ArrayRef<int64_t>{int64_t(i)});
        op.getResult(0).replaceAllUsesWith(s);
      }
      op.erase();
      ++dropped;
    });
  if (!drop.empty())
    ASSERT_GT(dropped, 0) << "no inline PTX contains " << drop;
  auto simulated = sim::SimKernel::prepare(module->getOperation(), "matmul");
  auto out = poisoned<bfloat16>(size_t(M * N));
  std::vector<Arg> args = {Arg(a), Arg(b), Arg(out), Arg(M), Arg(N), Arg(K), Arg(64), Arg(64), Arg(32)};
  std::vector<std::string> names = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"};
  if (expectedError.empty()) {
    simulated->run({1, 1}, mm.params(), names, args);
    EXPECT_LT(rel_error(out, to_double(ref)), tolerance<bfloat16>());
    return;
  }
  try {
    simulated->run({1, 1}, mm.params(), names, args);
    ADD_FAILURE() << "expected the hazard to be reported";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr(expectedError));
    EXPECT_THAT(e.what(), HasSubstr("examples/kernels.h:")); // the user's dot
  }
}

TEST(WgmmaSim, TheLoweringIsHazardFree) { runWithout("", ""); }
TEST(WgmmaSim, ThePipelinedLoweringIsHazardFree) { runWithout("", "", /*stages=*/3); }

/// The pipelined loop keeps one wgmma group in flight (wait_group 1) and
/// loads two stages behind; without that wait the loads overwrite a stage
/// an earlier group may still read.
TEST(WgmmaSim, APipelinedLoopWithoutItsWaitIsReported) {
  runWithout("wgmma.wait_group.sync.aligned 1", "may still be reading (no wgmma.wait_group",
             /*stages=*/3);
}

/// cp.async writes through the generic proxy too: the pipelined loop's wait
/// fences before its barrier.
TEST(WgmmaSim, AMissingProxyFenceAfterCpAsyncIsReported) {
  runWithout("fence.proxy.async", "without a fence.proxy.async.shared::cta since", /*stages=*/3);
}

/// Without wgmma.wait_group the next iteration's operand stores overwrite
/// the shared memory the tensor cores may still be reading.
TEST(WgmmaSim, AMissingWaitIsReported) {
  runWithout("wgmma.wait_group", "may still be reading (no wgmma.wait_group");
}

/// Ordinary stores are not visible to the async proxy without a fence.
TEST(WgmmaSim, AMissingProxyFenceIsReported) {
  runWithout("fence.proxy.async", "without a fence.proxy.async.shared::cta since");
}

/// The accumulators were last written by ordinary instructions.
TEST(WgmmaSim, AMissingWgmmaFenceIsReported) {
  runWithout("wgmma.fence", "without a wgmma.fence.sync.aligned since");
}

/// TEGULA_WGMMA may change between two simulated launches of one kernel: the
/// second compiles again (mma.sync code), the third reuses the first.
TEST(WgmmaSim, SwitchingWgmmaOffBetweenLaunchesCompilesAgain) {
  ScopedEnv wgmma("TEGULA_WGMMA", nullptr);
  // The lowered module is printed only when it is compiled.
  ScopedEnv dump("TEGULA_DUMP", "llvm");
  auto mm = kernel("matmul_switch", examples::matmul<bfloat16>,
                   {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  const int M = 64, N = 64, K = 64;
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  auto ref = poisoned<bfloat16>(size_t(M * N));
  mm({.grid = {1, 1}, .backend = Backend::Interp}, a, b, ref, M, N, K, 64, 64, 32);
  auto launch = [&] {
    auto out = poisoned<bfloat16>(size_t(M * N));
    ::testing::internal::CaptureStderr();
    mm({.grid = {1, 1}, .num_warps = 4, .backend = Backend::Sim, .chip = "sm_90a"}, a, b, out, M,
       N, K, 64, 64, 32);
    std::string dumped = ::testing::internal::GetCapturedStderr();
    EXPECT_LT(rel_error(out, to_double(ref)), tolerance<bfloat16>());
    return dumped;
  };
  EXPECT_THAT(launch(), HasSubstr("wgmma.mma_async"));
  {
    ScopedEnv off("TEGULA_WGMMA", "0");
    const std::string dumped = launch();
    EXPECT_THAT(dumped, HasSubstr("after stage 'llvm'")) << "TEGULA_WGMMA=0 reused the wgmma code";
    EXPECT_THAT(dumped, ::testing::Not(HasSubstr("wgmma.mma_async")));
  }
  EXPECT_EQ(launch(), "") << "the wgmma code was compiled twice";
}

/// A tf32 GEMM lowered for sm_90a, `mutate` applied to its LLVM module, then
/// run in the simulator against the interpreter: the simulator's error, or
/// "" with the relative error in `relError`. `tma`: examples::matmul_tn
/// (TMA rings straight into wgmma k8, 3 stages); else the pointer-load
/// gemm with B K-major (cp.async rings, NT). `warpSpecialize`: TMA's
/// loop gets a producer warpgroup.
std::string runTf32(bool tma, const std::function<void(mlir::ModuleOp)> &mutate, double &relError,
                    bool warpSpecialize = false) {
  const std::vector<std::string> names = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"};
  auto k = tma ? kernel("matmul_tn_tf32", examples::matmul_tn<float, float, tl::precision::tf32>, names)
               : kernel("gemm_tf32_nt", gemm<float, float, tl::precision::tf32, Storage::NT>, names);
  // TMA: 5 iterations, the last half empty. cp.async: K a multiple of 16
  // (arguments that are not are taken as unaligned: no 16-byte copies).
  const int M = 64, N = 64, K = tma ? 72 : 80, BM = 64, BN = 64, BK = 16;
  auto a = random_vector<float>(size_t(M * K)), b = random_vector<float>(size_t(N * K));
  auto ref = poisoned<float>(size_t(M * N)), out = poisoned<float>(size_t(M * N));
  std::vector<Arg> refArgs = {a, b, ref, M, N, K, BM, BN, BK};
  k.launch({.grid = {1, 1}, .backend = Backend::Interp}, refArgs);
  LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(refArgs, "tile", true), &ctx);
  if (!module || mlir::failed(runGpuPipeline(
                     *module, {.numStages = 3, .chip = "sm_90a", .warpSpecialize = warpSpecialize}))) {
    ADD_FAILURE() << k.name() << " did not compile for sm_90a";
    return "not compiled";
  }
  mutate(*module);
  auto simulated = sim::SimKernel::prepare(module->getOperation(), k.name());
  std::vector<Arg> args = {a, b, out, M, N, K, BM, BN, BK};
  try {
    simulated->run({1, 1}, k.params(), names, args);
  } catch (const Error &e) {
    return e.what();
  }
  relError = rel_error(out, to_double(ref));
  return "";
}

/// The stores that round a tf32 stage in place (16-byte pieces of i32).
std::vector<mlir::LLVM::StoreOp> roundingStores(mlir::ModuleOp module) {
  std::vector<mlir::LLVM::StoreOp> stores;
  module->walk([&](mlir::LLVM::StoreOp op) {
    auto v = mlir::dyn_cast<mlir::VectorType>(op.getValue().getType());
    if (v && v.getNumElements() == 4 && v.getElementType().isInteger(32) &&
        mlir::cast<mlir::LLVM::LLVMPointerType>(op.getAddr().getType()).getAddressSpace() == 3)
      stores.push_back(op);
  });
  return stores;
}

/// tf32 through TMA rings: each tensor map rounds its f32 elements to tf32
/// as they land (TFLOAT32; the simulator rounds to nearest even as the
/// interpreter does), so wgmma - which would drop the low bits - reads the
/// stages as they are and matches the interpreter; no stage is rounded in
/// place. With the maps' rounding off, it does not match: the simulator
/// reads tf32 as the tensor cores do.
TEST(WgmmaSim, Tf32TmaRingsAreRoundedByTheirTensorMaps) {
  double rounded = 1, truncated = 0;
  for (bool ws : {false, true}) {
    SCOPED_TRACE(ws ? "warp specialised" : "one warpgroup");
    EXPECT_EQ(runTf32(
                  true,
                  [&](mlir::ModuleOp m) {
                    EXPECT_EQ(m->hasAttr("tilegpu.producer_warps"), ws);
                    EXPECT_TRUE(roundingStores(m).empty()) << "a TMA ring's stage was rounded in place";
                    auto maps = m->getAttrOfType<mlir::StringAttr>("tilegpu.tensor_maps");
                    ASSERT_TRUE(maps);
                    EXPECT_THAT(maps.str(), HasSubstr(" tf32 @")); // (then the descriptor's line)
                  },
                  rounded, ws),
              "");
    EXPECT_LT(rounded, 1e-6);
  }
  EXPECT_EQ(runTf32(true,
                    [](mlir::ModuleOp m) {
                      std::string maps = m->getAttrOfType<mlir::StringAttr>("tilegpu.tensor_maps").str();
                      for (size_t at; (at = maps.find(" tf32")) != std::string::npos;)
                        maps.erase(at, 5);
                      m->setAttr("tilegpu.tensor_maps", mlir::StringAttr::get(m.getContext(), maps));
                    },
                    truncated),
            "");
  EXPECT_GT(truncated, 1e-5) << "truncated tf32 operands matched the interpreter's rounding";
}

/// tf32 through cp.async rings: the copies land as stored, so the stages
/// are rounded in place before wgmma reads them, and match the interpreter;
/// without the rounding they do not.
TEST(WgmmaSim, Tf32CpAsyncRingStagesAreRoundedInPlace) {
  double rounded = 1, truncated = 0;
  EXPECT_EQ(runTf32(false, [](mlir::ModuleOp m) { ASSERT_FALSE(roundingStores(m).empty()); }, rounded), "");
  EXPECT_LT(rounded, 1e-6);
  EXPECT_EQ(runTf32(false,
                    [](mlir::ModuleOp m) {
                      for (mlir::LLVM::StoreOp op : roundingStores(m))
                        op.erase();
                    },
                    truncated),
            "");
  EXPECT_GT(truncated, 1e-5) << "truncated tf32 operands matched the interpreter's rounding";
}

/// The rounded stage is written by every thread and read by the tensor
/// cores: without the fence after the stores, or the barrier after the
/// fence, the simulator reports it.
TEST(WgmmaSim, Tf32RoundingWithoutItsFenceOrBarrierIsReported) {
  double unused = 0;
  // The op after the rounding stores: `step` ops on (0: the fence, 1: the barrier).
  auto dropAfterRounding = [](int step) {
    return [step](mlir::ModuleOp m) {
      std::vector<mlir::LLVM::StoreOp> stores = roundingStores(m);
      ASSERT_FALSE(stores.empty());
      mlir::Operation *op = stores.back()->getNextNode();
      while (op && !mlir::isa<mlir::LLVM::InlineAsmOp>(op))
        op = op->getNextNode();
      for (int i = 0; i < step && op; ++i)
        op = op->getNextNode();
      ASSERT_TRUE(op) << "no fence after the rounding stores";
      op->erase();
    };
  };
  EXPECT_THAT(runTf32(false, dropAfterRounding(0), unused),
              HasSubstr("without a fence.proxy.async.shared::cta since"));
  // Thread 0 reaches the wgmma first and stands for the tensor cores' read:
  // the other threads' rounding stores land under it.
  EXPECT_THAT(runTf32(false, dropAfterRounding(1), unused),
              HasSubstr("which the asynchronous read at inline PTX"));
}

} // namespace
