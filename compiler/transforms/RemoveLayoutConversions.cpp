//===- RemoveLayoutConversions.cpp - compute cheap values where needed ----===//
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tegula {
#define GEN_PASS_DEF_REMOVELAYOUTCONVERSIONS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

RankedTensorType withEncodingOf(Type t, RankedTensorType like) {
  auto tensor = cast<RankedTensorType>(t);
  return RankedTensorType::get(tensor.getShape(), tensor.getElementType(), like.getEncoding());
}

/// Values that cost the same to produce in any layout.
bool isCheap(Value v, int depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 8)
    return false;
  if (isa<tile::SplatOp, tile::MakeRangeOp>(op))
    return true;
  if (auto cst = dyn_cast<arith::ConstantOp>(op))
    return isa<SplatElementsAttr>(cst.getValue());
  if (isa<tile::BroadcastOp, tile::ExpandDimsOp>(op) || (op->hasTrait<OpTrait::Elementwise>() &&
                                     isa<arith::ArithDialect>(op->getDialect()) &&
                                     op->getNumResults() == 1))
    return llvm::all_of(op->getOperands(), [&](Value o) {
      return !isa<RankedTensorType>(o.getType()) || isCheap(o, depth + 1);
    });
  return false;
}

/// convert(cheap op) -> the op computed in the target layout, its tile
/// operands converted (which this pattern then removes in turn).
struct RematerialiseCheapSource : OpRewritePattern<tilegpu::ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp op,
                                PatternRewriter &rewriter) const override {
    Value src = op.getSrc();
    Operation *def = src.getDefiningOp();
    if (!def || !isCheap(src))
      return failure();
    auto target = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    if (auto cst = dyn_cast<arith::ConstantOp>(def)) {
      auto splat = cast<SplatElementsAttr>(cst.getValue());
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(
          op, target, SplatElementsAttr::get(target, splat.getSplatValue<Attribute>()));
      return success();
    }
    if (auto range = dyn_cast<tile::MakeRangeOp>(def)) {
      rewriter.replaceOpWithNewOp<tile::MakeRangeOp>(op, target, range.getStart(), range.getEnd());
      return success();
    }
    if (auto splat = dyn_cast<tile::SplatOp>(def)) {
      rewriter.replaceOpWithNewOp<tile::SplatOp>(op, target, splat.getSrc());
      return success();
    }
    if (auto bcast = dyn_cast<tile::BroadcastOp>(def)) {
      // The source shares the broadcast's layout (see convert-tile-to-tilegpu).
      Value in = tilegpu::ConvertLayoutOp::create(
          rewriter, loc, withEncodingOf(bcast.getSrc().getType(), target), bcast.getSrc());
      rewriter.replaceOpWithNewOp<tile::BroadcastOp>(op, target, in);
      return success();
    }
    if (auto expand = dyn_cast<tile::ExpandDimsOp>(def)) {
      // The source is the slice of the result's layout along the new axis.
      auto srcType = cast<RankedTensorType>(expand.getSrc().getType());
      auto sliced = RankedTensorType::get(
          srcType.getShape(), srcType.getElementType(),
          tilegpu::SliceEncodingAttr::get(rewriter.getContext(), expand.getAxis(),
                                          target.getEncoding()));
      Value in = tilegpu::ConvertLayoutOp::create(rewriter, loc, sliced, expand.getSrc());
      rewriter.replaceOpWithNewOp<tile::ExpandDimsOp>(op, target, in, expand.getAxis());
      return success();
    }
    // Elementwise: convert the tile operands, recompute in the target layout.
    SmallVector<Value> operands;
    for (Value o : def->getOperands()) {
      if (auto t = dyn_cast<RankedTensorType>(o.getType()))
        o = tilegpu::ConvertLayoutOp::create(rewriter, loc, withEncodingOf(t, target), o);
      operands.push_back(o);
    }
    OperationState state(loc, def->getName().getStringRef(), operands,
                         {withEncodingOf(def->getResult(0).getType(), target)}, def->getAttrs());
    rewriter.replaceOp(op, rewriter.create(state)->getResults());
    return success();
  }
};

struct RemoveLayoutConversionsPass
    : tegula::impl::RemoveLayoutConversionsBase<RemoveLayoutConversionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RematerialiseCheapSource>(&getContext());
    tilegpu::ConvertLayoutOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
