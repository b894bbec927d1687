//===- SharedOperand.h - an mma operand read from shared memory -----------===//
//
// Internal to compiler/transforms. A tile in any distributed layout becomes
// mma.sync operand registers (layout::mmaOperandLayout) by way of shared
// memory: its owners store it in vectors of up to 16 bytes into a swizzled
// tile (layout::planOperandTile: no bank conflicts for the stores nor for
// the reads); or it is already there, in a stage of a cp.async ring. The
// reads are ldmatrix where it applies (16-bit operands; tf32 and i8 ones
// whose rows run along K: 2 * x operand words per ldmatrix.x), else one
// ld.shared per element (tf32 / i8 rows along M or N).
//
// The dot lowering reads fragments on demand, k-slice by k-slice, so that
// only one slice of each operand is live next to the accumulator.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/OperandStaging.h"
#include "compiler/transforms/LoweringCommon.h"

#include <optional>

namespace tegula::lowering {

class SharedOperand {
public:
  /// Whether `source` (8-, 16- or 32-bit elements) can be staged as the
  /// A (`isA`) or B operand of layout `operand`: the swizzled tile and its
  /// reads can be planned (so the constructor cannot fail inside a
  /// conversion pattern).
  static bool applies(mlir::RankedTensorType source, const layout::LinearLayout &operand, bool isA);

  /// `values`: the registers of `source`; `operand`: the fragment layout to
  /// produce; `base`: the tile's place in shared memory (!llvm.ptr<3>, as
  /// many bytes as the source). Derives the swizzle; emits nothing yet.
  SharedOperand(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange values,
                mlir::RankedTensorType source, const layout::LinearLayout &operand, bool isA,
                mlir::Value base);
  /// An operand already in shared memory at `base`, placed as `tile` says
  /// (a stage of a tilegpu.shared ring): reads only.
  SharedOperand(mlir::OpBuilder &b, mlir::Location loc, const layout::SharedTile &tile,
                const layout::LinearLayout &operand, bool isA, mlir::Value base, mlir::Type elem);

  /// The owners' vector stores (no barriers: the caller places them).
  void store();
  /// Operand register `r`; the first request of a read emits it (an
  /// ldmatrix yields several registers at once).
  mlir::Value reg(int32_t r);
  int32_t registers() const { return operand_.inDimSize("register"); }
  const layout::SharedTile &tile() const { return tile_; }

private:
  /// What staging `source` takes: elements per store, the swizzled tile,
  /// the ldmatrix reads (absent: one ld.shared per element). Throws
  /// tegula::Error where the layouts allow no plan.
  struct Plan {
    int32_t vector = 1;
    layout::SharedTile tile;
    std::optional<layout::LdmatrixReads> reads;
  };
  static Plan plan(const layout::LinearLayout &source, mlir::RankedTensorType sourceType,
                   const layout::LinearLayout &operand, bool isA);

  mlir::Value at(mlir::Value elementOffset); // shared address of an element
  void readLdmatrixGroup(int32_t group);

  mlir::OpBuilder &b_;
  mlir::Location loc_;
  mlir::SmallVector<mlir::Value> values_; // the source's registers (staging only)
  layout::LinearLayout source_;
  layout::LinearLayout operand_;
  mlir::Type elem_;
  int bits_ = 16;
  mlir::Value base_;
  layout::SharedTile tile_;
  std::optional<layout::LdmatrixReads> reads_; // absent: one ld.shared per element
  int32_t vector_ = 1; // elements per store
  mlir::SmallVector<mlir::Value> loaded_; // by operand register; null until read
  mlir::SmallVector<mlir::Value> offsets_; // ldmatrix: each group's row; else each register's element
};

} // namespace tegula::lowering
