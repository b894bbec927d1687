// WarpgroupTurnsSimTest.cpp - warpgroup-turns in the simulator: flash
// attention (examples::attention_fwd_descriptors) warp specialised for
// sm_90a, its two consumer warpgroups taking turns at each burst of wgmma
// issues, run in every thread order the simulator has - and with a piece of
// the turn protocol removed, which must be reported.
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Pipeline.h"
#include "examples/kernels.h"
#include "simulator/Simulator.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Parser/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <functional>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

/// Attention lowered for sm_90a, warp specialised: `BM` x 64 blocks, d 64,
/// causal, T = 300 over two heads. 8 warps: one program, two warpgroups;
/// 4 warps with ping-pong: two programs a CTA - 5 query blocks, so the last
/// CTA's second program is past the end and the others' key blocks differ
/// by one (causal), one program taking a turn more than its partner.
struct LoweredAttention {
  static constexpr int kHeads = 2, kSeq = 300, kD = 64;
  int BM, warps;
  bool pingPong;
  Kernel k = kernel("attention_fwd_descriptors", examples::attention_fwd_descriptors<bfloat16>, names());
  std::vector<bfloat16> q, kk, v, want;
  LoadedContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  static std::vector<std::string> names() {
    return {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"};
  }
  std::vector<Arg> args(std::vector<bfloat16> &out) {
    return {q, kk, v, out, kSeq, kHeads * kSeq, 0.125f, kD, BM, 64, true};
  }
  Grid grid() const { return {uint32_t(cdiv(kSeq, BM)), kHeads}; }

  LoweredAttention(int bm, int w, bool pp)
      : BM(bm), warps(w), pingPong(pp), q(random_vector<bfloat16>(size_t(kHeads * kSeq * kD))),
        kk(random_vector<bfloat16>(q.size())), v(random_vector<bfloat16>(q.size())), want(poisoned<bfloat16>(q.size())) {
    k.launch({.grid = grid(), .backend = Backend::Interp}, args(want));
    module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(args(want), "tile", true), &ctx);
    if (!module || mlir::failed(runGpuPipeline(*module, {.numWarps = warps,
                                                          .chip = "sm_90a",
                                                          .warpSpecialize = true,
                                                          .pingPong = pingPong,
                                                          .warpgroupTurns = true})))
      module = {};
  }

  /// Calls `f` on each inline PTX statement; how many there were.
  int forEachAsm(const std::function<void(mlir::LLVM::InlineAsmOp)> &f) {
    int n = 0;
    module->walk([&](mlir::LLVM::InlineAsmOp op) {
      ++n;
      f(op);
    });
    return n;
  }

  /// The simulator's error, or "" when it ran and matched the interpreter.
  std::string run(sim::Schedule schedule, uint64_t seed = 1) {
    auto simulated = sim::SimKernel::prepare(module->getOperation(), "attention_fwd_descriptors");
    auto got = poisoned<bfloat16>(q.size());
    try {
      simulated->run(grid(), k.params(), names(), args(got), {.schedule = schedule, .scheduleSeed = seed});
    } catch (const Error &e) {
      return e.what();
    }
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
    return "";
  }
};

struct Case {
  int BM, warps;
  bool pingPong;
};
constexpr Case kCases[] = {{128, 8, false}, {64, 4, true}};

std::string describe(const Case &c) {
  return fmt::format("{}x64 at {} warps{}", c.BM, c.warps, c.pingPong ? ", ping-pong" : "");
}

/// Consumer warpgroups drift apart on a GPU: in the round-robin, lowest-
/// and highest-first orders, and three shuffled ones (the warps of one
/// warpgroup drifting apart too), the turns stay deadlock-free and
/// hazard-free, and the result is the interpreter's.
TEST(WarpgroupTurnsSim, AttentionIsHazardFreeInEveryThreadOrder) {
  for (const Case &c : kCases) {
    LoweredAttention a(c.BM, c.warps, c.pingPong);
    ASSERT_TRUE(a.module) << describe(c) << " did not compile for sm_90a";
    int turns = 0;
    a.forEachAsm([&](mlir::LLVM::InlineAsmOp op) { turns += op.getAsmString().contains("tegula_turn:"); });
    EXPECT_EQ(turns, 3) << describe(c) << ": the prologue's, the loop's and the epilogue's bursts";
    for (sim::Schedule s : {sim::Schedule::RoundRobin, sim::Schedule::LowestFirst, sim::Schedule::HighestFirst}) {
      SCOPED_TRACE(fmt::format("{}, schedule {}", describe(c), int(s)));
      EXPECT_EQ(a.run(s), "");
    }
    for (uint64_t seed : {1, 2, 3}) {
      SCOPED_TRACE(fmt::format("{}, shuffled:{}", describe(c), seed));
      EXPECT_EQ(a.run(sim::Schedule::Shuffled, seed), "");
    }
  }
}

/// Without the warpgroup's barrier after its arrival, the lowest-first
/// order lets a warp reach its next turn while a sibling warp has not yet
/// ended the last one: its wait, which sees only the phase's parity, takes
/// that open phase's predecessor for the other warpgroup's turn and the
/// warp arrives in the open phase again.
TEST(WarpgroupTurnsSim, ATurnEndedWithoutTheWarpgroupsBarrierIsReported) {
  LoweredAttention a(128, 8, false);
  ASSERT_TRUE(a.module);
  int changed = 0;
  a.forEachAsm([&](mlir::LLVM::InlineAsmOp op) {
    llvm::StringRef text = op.getAsmString();
    if (auto at = text.find("\nbar.sync $1"); at != llvm::StringRef::npos) {
      op.setAsmString(text.take_front(at));
      ++changed;
    }
  });
  ASSERT_EQ(changed, 3);
  EXPECT_THAT(a.run(sim::Schedule::LowestFirst), ::testing::AnyOf(HasSubstr("deadlock"), HasSubstr("more arrivals")));
  for (uint64_t seed : {1, 2, 3})
    EXPECT_THAT(a.run(sim::Schedule::Shuffled, seed), ::testing::AnyOf(HasSubstr("deadlock"), HasSubstr("more arrivals")))
        << "shuffled:" << seed;
}

/// Turns never ended: warpgroup 1 waits for a turn that never comes while
/// warpgroup 0, having run on, waits for it at the consumers' barrier
/// before the store. (Ping-pong programs would not deadlock: each waits at
/// most until its partner retires.)
TEST(WarpgroupTurnsSim, TurnsNeverEndedAreADeadlock) {
  LoweredAttention a(128, 8, false);
  ASSERT_TRUE(a.module);
  std::vector<mlir::LLVM::InlineAsmOp> arrivals;
  a.forEachAsm([&](mlir::LLVM::InlineAsmOp op) {
    if (op.getAsmString().contains("\nbar.sync $1"))
      arrivals.push_back(op);
  });
  ASSERT_EQ(arrivals.size(), 3u);
  for (mlir::LLVM::InlineAsmOp op : arrivals)
    op.erase();
  EXPECT_THAT(a.run(sim::Schedule::RoundRobin), HasSubstr("deadlock"));
}

} // namespace
