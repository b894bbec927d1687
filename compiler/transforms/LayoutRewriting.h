//===- LayoutRewriting.h - helpers of the passes that move layouts -*- C++ -*-===//
//
// Shared by the tilegpu-level passes that choose where tiles live
// (remove-layout-conversions, propagate-mma-layout): which ops may compute in
// any layout, and retyping a tile into another layout.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialects/tile/TileDialect.h"
#include "dialects/tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tegula {

/// `t` (a ranked tensor) with the encoding of `like`.
inline mlir::RankedTensorType withEncodingOf(mlir::Type t, mlir::RankedTensorType like) {
  auto tensor = mlir::cast<mlir::RankedTensorType>(t);
  return mlir::RankedTensorType::get(tensor.getShape(), tensor.getElementType(),
                                     like.getEncoding());
}

/// `t` (a ranked tensor) with encoding `encoding`.
inline mlir::RankedTensorType withEncoding(mlir::Type t, mlir::Attribute encoding) {
  auto tensor = mlir::cast<mlir::RankedTensorType>(t);
  return mlir::RankedTensorType::get(tensor.getShape(), tensor.getElementType(), encoding);
}

/// Ops that compute each element from the same element of their operands, so
/// they can run in any layout: pure elementwise ops (arith, math, ...) and
/// addptr, with every tile the shape of the single result.
inline bool isElementwise(mlir::Operation *op) {
  if (!op || op->getNumResults() != 1 || op->getNumRegions() != 0 || !mlir::isPure(op))
    return false;
  if (!op->hasTrait<mlir::OpTrait::Elementwise>() && !mlir::isa<tile::AddPtrOp>(op))
    return false;
  auto result = mlir::dyn_cast<mlir::RankedTensorType>(op->getResult(0).getType());
  if (!result || !result.getEncoding())
    return false;
  return llvm::all_of(op->getOperands(), [&](mlir::Value o) {
    auto t = mlir::dyn_cast<mlir::RankedTensorType>(o.getType());
    return !t || (t.getShape() == result.getShape() && t.getEncoding());
  });
}

/// Values that cost the same to produce in any layout: splats, ranges, splat
/// constants, and broadcasts, expand_dims, pointer arithmetic, promises
/// (tile.assume) and arith elementwise ops of those (a pointer tile is converted through shared
/// memory at 8 bytes an element, recomputed in a few adds).
inline bool isCheap(mlir::Value v, int depth = 0) {
  mlir::Operation *op = v.getDefiningOp();
  if (!op || depth > 8)
    return false;
  if (mlir::isa<tile::SplatOp, tile::MakeRangeOp>(op))
    return true;
  if (auto cst = mlir::dyn_cast<mlir::arith::ConstantOp>(op))
    return mlir::isa<mlir::SplatElementsAttr>(cst.getValue());
  if (mlir::isa<tile::BroadcastOp, tile::ExpandDimsOp, tile::AddPtrOp, tile::AssumeOp>(op) ||
      (op->hasTrait<mlir::OpTrait::Elementwise>() && mlir::isa<mlir::arith::ArithDialect>(op->getDialect()) &&
       op->getNumResults() == 1))
    return llvm::all_of(op->getOperands(), [&](mlir::Value o) {
      return !mlir::isa<mlir::RankedTensorType>(o.getType()) || isCheap(o, depth + 1);
    });
  return false;
}

/// A 2-D access of elements of 32 bits or more: from the accumulator's
/// layout each thread reads or writes its pairs (8 bytes; the four lanes of
/// a quad fill a 32-byte sector), where a conversion to a blocked layout
/// moves the tile through shared memory between two barriers (a 128x256 f32
/// tile: 128 KiB beside a persistent kernel's rings). 16-bit tiles keep
/// the conversion: their 4-byte pairs would half-fill the sectors each
/// instruction writes.
inline bool accessesWellFromAccumulator(mlir::RankedTensorType value) {
  return value.getRank() == 2 && value.getElementType().isIntOrFloat() &&
         value.getElementType().getIntOrFloatBitWidth() >= 32;
}

/// convert(cheap tile) -> the tile computed in the target layout
/// (remove-layout-conversions' rematerialisation, with the conversions'
/// canonicalisations): for passes that convert address computations.
void populateRematerialiseCheapPatterns(mlir::RewritePatternSet &patterns);

} // namespace tegula
