//===- Coalesce.cpp - choose the vector width of loads and stores ---------===//
#include "compiler/analysis/AxisInfo.h"
#include "compiler/transforms/Passes.h"

namespace tegula {
#define GEN_PASS_DEF_COALESCE
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

struct CoalescePass : tegula::impl::CoalesceBase<CoalescePass> {
  void runOnOperation() override {
    analysis::AxisInfoAnalysis axis(getOperation());
    Builder b(&getContext());
    getOperation().walk([&](Operation *op) {
      Value ptr, mask;
      if (auto load = dyn_cast<tile::LoadOp>(op))
        ptr = load.getPtr(), mask = load.getMask();
      else if (auto store = dyn_cast<tile::StoreOp>(op))
        ptr = store.getPtr(), mask = store.getMask();
      else
        return;
      auto type = dyn_cast<RankedTensorType>(ptr.getType());
      if (!type || !type.getEncoding())
        return;
      layout::LinearLayout ll = tilegpu::toLinearLayout(type.getEncoding(), type.getShape());
      int64_t best = 1, bestDim = 0;
      for (unsigned d = 0; d < type.getRank(); ++d) {
        int64_t w = std::min<int64_t>(ll.contiguousRegisters(layout::dimName(int(d))),
                                      analysis::maxVectorWidth(axis, ptr, mask, d));
        if (w > best)
          best = w, bestDim = d;
      }
      op->setAttr("tilegpu.vector_width", b.getI32IntegerAttr(int32_t(best)));
      op->setAttr("tilegpu.vector_dim", b.getI32IntegerAttr(int32_t(bestDim)));
    });
  }
};

} // namespace
