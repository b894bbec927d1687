//===- LdmatrixOperand.h - an mma operand staged through shared memory ----===//
//
// Internal to compiler/transforms. A 16-bit tile in any distributed layout
// becomes mma.sync operand registers (layout::mmaOperandLayout) by way of
// shared memory: its owners store it in vectors of up to 16 bytes into a
// swizzled tile (layout::deriveSwizzle: no bank conflicts for the stores
// nor for the reads), and ldmatrix reads the fragments back, 2 * x operand
// registers per ldmatrix.x (x = 4, or 2 / 1 for small operands).
//
// The dot lowering reads fragments on demand, k-slice by k-slice, so that
// only one slice of each operand is live next to the accumulator.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/OperandStaging.h"
#include "compiler/transforms/LoweringCommon.h"

namespace tegula::lowering {

class LdmatrixOperand {
public:
  /// Whether `source` (16-bit elements) can be staged as operand `opIdx`.
  static bool applies(mlir::RankedTensorType source, const layout::LinearLayout &operand);

  /// `values`: the registers of `source`; `operand`: the fragment layout to
  /// produce; `base`: the tile's place in shared memory (!llvm.ptr<3>,
  /// tileBytes() long). Derives the swizzle; emits nothing yet.
  LdmatrixOperand(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange values,
                  mlir::RankedTensorType source, const layout::LinearLayout &operand,
                  bool isA, mlir::Value base);
  /// An operand already in shared memory at `base`, placed as `tile` says
  /// (a stage of a tilegpu.shared ring): reads only.
  LdmatrixOperand(mlir::OpBuilder &b, mlir::Location loc, const layout::SharedTile &tile,
                  const layout::LinearLayout &operand, bool isA, mlir::Value base,
                  mlir::Type elem);

  /// The owners' vector stores (no barriers: the caller places them).
  void store();
  /// Operand register `r`; the first request of an ldmatrix group emits it.
  mlir::Value reg(int32_t r);
  int32_t registers() const { return reads_.operand.inDimSize("register"); }
  const layout::SharedTile &tile() const { return tile_; }

private:
  mlir::Value at(mlir::Value elementOffset); // shared address of an element

  mlir::OpBuilder &b_;
  mlir::Location loc_;
  mlir::SmallVector<mlir::Value> values_; // the source's registers (staging only)
  layout::LinearLayout source_;
  mlir::Type elem_;
  mlir::Value base_;
  layout::SharedTile tile_;
  layout::LdmatrixReads reads_;
  int32_t vector_ = 1; // elements per store
  mlir::SmallVector<mlir::Value> loaded_; // by renumbered register; null until read
  mlir::SmallVector<mlir::Value> rowOffsets_;
};

} // namespace tegula::lowering
