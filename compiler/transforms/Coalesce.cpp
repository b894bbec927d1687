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

/// The access in a blocked layout whose fastest dimension is `dim` (Triton's
/// coalescing): its pointers, mask, `other` and stored value converted to
/// it, a load's result converted back for its users.
void relayout(Operation *op, unsigned dim, int numWarps) {
  auto type = cast<RankedTensorType>(op->getOperand(0).getType());
  SmallVector<int32_t> order = {int32_t(dim)};
  for (int d = int(type.getRank()) - 1; d >= 0; --d)
    if (d != int(dim))
      order.push_back(d);
  Type pointee = cast<tile::PtrType>(type.getElementType()).getPointeeType();
  const int bytes = std::max(1, int(pointee.getIntOrFloatBitWidth() / 8));
  Attribute encoding =
      tilegpu::defaultBlockedEncoding(op->getContext(), type.getShape(), numWarps, 16 / bytes, order);
  OpBuilder b(op);
  for (OpOperand &operand : op->getOpOperands()) {
    auto t = cast<RankedTensorType>(operand.get().getType());
    operand.set(tilegpu::ConvertLayoutOp::create(
        b, op->getLoc(), RankedTensorType::get(t.getShape(), t.getElementType(), encoding), operand.get()));
  }
  if (op->getNumResults()) {
    Value result = op->getResult(0);
    auto old = cast<RankedTensorType>(result.getType());
    result.setType(RankedTensorType::get(old.getShape(), old.getElementType(), encoding));
    b.setInsertionPointAfter(op);
    auto back = tilegpu::ConvertLayoutOp::create(b, op->getLoc(), old, result);
    result.replaceAllUsesExcept(back, back);
  }
}

struct CoalescePass : tegula::impl::CoalesceBase<CoalescePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    analysis::AxisInfoAnalysis axis(module);
    Builder b(&getContext());
    auto warps = module->getAttrOfType<IntegerAttr>("tilegpu.num_warps");
    const int numWarps = warps ? int(warps.getInt()) : 4;
    SmallVector<Operation *> accesses;
    module.walk([&](Operation *op) {
      if (isa<tile::LoadOp, tile::StoreOp>(op))
        accesses.push_back(op);
    });
    for (Operation *op : accesses) {
      Value ptr = op->getOperand(0);
      Value mask = isa<tile::LoadOp>(op) ? cast<tile::LoadOp>(op).getMask() : cast<tile::StoreOp>(op).getMask();
      auto type = dyn_cast<RankedTensorType>(ptr.getType());
      if (!type || !type.getEncoding())
        continue;
      // What the addresses allow along each dimension (the analysis saw the
      // original values: it is asked before any conversion is inserted).
      SmallVector<int64_t> allowed;
      for (unsigned d = 0; d < type.getRank(); ++d)
        allowed.push_back(analysis::maxVectorWidth(axis, ptr, mask, d));
      // A blocked access whose fastest dimension is not the one the
      // addresses run along (a transposed operand, Kᵀ) moves to a layout
      // that is: each thread a 16-byte vector, a warp's lanes along it.
      if (auto blocked = dyn_cast<tilegpu::BlockedEncodingAttr>(type.getEncoding());
          blocked && type.getRank() >= 2) {
        const unsigned fast = unsigned(blocked.getOrder()[0]);
        unsigned best = fast;
        for (unsigned d = 0; d < type.getRank(); ++d)
          if (allowed[d] > allowed[best])
            best = d;
        if (best != fast && allowed[fast] <= 1) {
          relayout(op, best, numWarps);
          type = cast<RankedTensorType>(op->getOperand(0).getType());
        }
      }
      layout::LinearLayout ll = tilegpu::toLinearLayout(type.getEncoding(), type.getShape());
      int64_t width = 1, widthDim = 0;
      for (unsigned d = 0; d < type.getRank(); ++d) {
        int64_t w = std::min<int64_t>(ll.contiguousRegisters(layout::dimName(int(d))), allowed[d]);
        if (w > width)
          width = w, widthDim = d;
      }
      op->setAttr("tilegpu.vector_width", b.getI32IntegerAttr(int32_t(width)));
      op->setAttr("tilegpu.vector_dim", b.getI32IntegerAttr(int32_t(widthDim)));
    }
  }
};

} // namespace
