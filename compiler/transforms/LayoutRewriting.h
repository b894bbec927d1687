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

} // namespace tegula
