//===- WarpgroupTurns.cpp - consumer warpgroups take turns issuing wgmma ----===//
//
// Pass `warpgroup-turns` (sm_90a, warp-specialised kernels). Attention's
// loop keeps the tensor cores busy only while a warpgroup's dots run; its
// softmax leaves them idle unless another warpgroup's dots run meanwhile.
// Two consumer warpgroups that issue their dots at the same moment split
// the tensor cores and then both run their softmax on idle tensor cores.
// FlashAttention-3 orders them instead ("ping-pong"): warpgroup 0 issues
// its dots, then warpgroup 1 issues its own while warpgroup 0 runs its
// softmax, and so on, so the tensor cores always have one warpgroup's work.
//
// A burst is a run of wgmma dots in one block with nothing between them
// but scalar arithmetic and the consumers' ring waits (no wgmma wait, no
// barrier): attention's rotated loop issues S_{j+1} = Q K^T and
// O_j = P_j V_j as one. Before each burst the warpgroup waits for its turn
// (tilegpu.order_wait), after it ends the turn (order_arrive); turns
// alternate, warpgroup w holding w, w + 2, ... Every program retires at
// the end of the consumers' code (order_retire), so a ping-pong program
// with more key blocks than its partner is not left waiting.
//
// Deadlock-free: a burst holds no barrier, and a warpgroup waiting for its
// turn has released every ring stage of its earlier iterations, which is
// all the other warpgroup's ring waits inside its burst can need.
//
// Only kernels whose loops hold two wgmma dots (attention's forward) and
// exactly two consumer warpgroups (8 warps, or ping-pong's two programs of
// 4); a GEMM's ping-pong programs already take turns loop by loop.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tegula {
#define GEN_PASS_DEF_WARPGROUPTURNS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// What may sit between two dots of a burst: a consumer's ring wait (no
/// barrier) or scalar arithmetic - nothing that waits for the other
/// warpgroup or for a wgmma group.
bool fitsInBurst(Operation *op) {
  if (auto wait = dyn_cast<tilegpu::TmaWaitOp>(op))
    return wait.getNoBarrier();
  return op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
         llvm::none_of(op->getResultTypes(), [](Type t) { return isa<ShapedType>(t); });
}

/// The first and last dot of each burst in `region`, nested blocks too.
SmallVector<std::pair<Operation *, Operation *>> burstsIn(Region &region) {
  SmallVector<std::pair<Operation *, Operation *>> bursts;
  region.walk([&](Block *block) {
    Operation *first = nullptr, *last = nullptr;
    for (Operation &op : *block) {
      if (lowering::isWgmmaDot(&op)) {
        first = first ? first : &op;
        last = &op;
      } else if (first && !fitsInBurst(&op)) {
        bursts.emplace_back(first, last);
        first = last = nullptr;
      }
    }
    if (first)
      bursts.emplace_back(first, last);
  });
  return bursts;
}

/// Whether a loop of `region` holds two wgmma dots (attention's forward).
bool hasTwoDotLoop(Region &region) {
  bool found = false;
  region.walk([&](scf::ForOp loop) {
    int dots = 0;
    loop.getBody()->walk([&](Operation *op) { dots += lowering::isWgmmaDot(op); });
    found |= dots == 2;
  });
  return found;
}

struct WarpgroupTurnsPass : tegula::impl::WarpgroupTurnsBase<WarpgroupTurnsPass> {
  using WarpgroupTurnsBase::WarpgroupTurnsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!module->hasAttr("tilegpu.producer_warps")) // the consumers' ring waits hold barriers
      return why(module, "not warp specialised");
    auto attr = [&](const char *name) {
      auto a = module->getAttrOfType<IntegerAttr>(name);
      return a ? a.getInt() : 1;
    };
    if (attr("tilegpu.num_warps") * attr("tilegpu.programs_per_cta") != 8)
      return why(module, "not two consumer warpgroups");
    if (hasOrder(module))
      return why(module, "their loops take turns already (a ping-pong GEMM)");
    scf::IfOp split;
    module.walk([&](scf::IfOp op) {
      if (op->hasAttr("tilegpu.warp_specialized"))
        split = op;
    });
    if (!split)
      return;
    Region &consumers = split.getElseRegion();
    if (!hasTwoDotLoop(consumers))
      return why(split, "no loop of two wgmma dots");
    auto bursts = burstsIn(consumers);
    for (auto [first, last] : bursts) {
      OpBuilder b(first);
      tilegpu::OrderWaitOp::create(b, first->getLoc(), Value());
      b.setInsertionPointAfter(last);
      tilegpu::OrderArriveOp::create(b, last->getLoc());
    }
    OpBuilder b(split);
    tilegpu::OrderInitOp::create(b, split.getLoc());
    b.setInsertionPoint(split.elseBlock()->getTerminator());
    tilegpu::OrderRetireOp::create(b, split.getLoc());
  }

private:
  static bool hasOrder(ModuleOp module) {
    return module.walk([](tilegpu::OrderInitOp) { return WalkResult::interrupt(); }).wasInterrupted();
  }
  void why(Operation *at, const char *reason) {
    if (explain)
      at->emitRemark("warpgroup-turns: the warpgroups do not take turns: ") << reason;
  }
};

} // namespace
