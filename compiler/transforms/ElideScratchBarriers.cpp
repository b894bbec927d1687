//===- ElideScratchBarriers.cpp - drop leading barriers nothing needs -----===//
//
// Pass `elide-scratch-barriers`: a cross-warp reduction, a scan's warp
// totals and a convert_layout through shared memory each lower to barrier,
// writes, barrier, reads. Once `allocate-shared-memory` has placed their
// buffers, the first barrier of each whose bytes nothing since the last
// barrier may still be reading (analysis::leadingBarrierIsRedundant) is
// marked `tilegpu.skip_leading_barrier`, and the lowering leaves it out.
// Kernels that run two programs a CTA (ping-pong) are left as they are.
//
//===----------------------------------------------------------------------===//
#include "compiler/analysis/ScratchBarriers.h"
#include "compiler/transforms/LoweringCommon.h"
#include "compiler/transforms/Passes.h"

namespace tegula {
#define GEN_PASS_DEF_ELIDESCRATCHBARRIERS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

struct ElideScratchBarriersPass : tegula::impl::ElideScratchBarriersBase<ElideScratchBarriersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (lowering::programsPerCta(module) > 1 || module->hasAttr("tegula.test.drop_reduce_barrier"))
      return;
    // Decide for every op first: the analysis reads only the second
    // barriers, so the marks do not depend on each other.
    SmallVector<Operation *> redundant;
    module.walk([&](Operation *op) {
      if (analysis::leadingBarrierIsRedundant(op))
        redundant.push_back(op);
    });
    for (Operation *op : redundant)
      op->setAttr(analysis::kSkipLeadingBarrierAttr, UnitAttr::get(&getContext()));
  }
};

} // namespace
