//===- Combining.h - what tile.reduce and tile.scan lower with --*- C++ -*-===//
//
// Both walk a layout's basis vectors along their axis (registers, then
// lanes, then warps), run the op's combiner region on scalars, and move
// values between lanes with shfl.sync (ReduceToLLVM.cpp, ScanToLLVM.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/LinearLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Region.h"

#include <string>
#include <vector>

namespace tegula::lowering {

/// The bits of `inDim` whose basis vectors move along `axis`, ascending.
std::vector<int> bitsAlong(const layout::LinearLayout &ll, const std::string &inDim, size_t axis);

/// True when every basis of `inDim` moves along `axis` only, or not along it
/// at all: lanes and warps then split into groups along the axis.
bool separable(const layout::LinearLayout &ll, const std::string &inDim, size_t axis);

/// The combiner region's body on (acc, next), cloned at `b`'s insertion
/// point; returns the combined values.
llvm::SmallVector<mlir::Value> applyCombiner(mlir::OpBuilder &b, mlir::Region &combiner, mlir::ValueRange acc,
                                             mlir::ValueRange next);

/// shfl.sync of a scalar of up to 64 bits (through i32 pieces), every lane
/// of the warp taking part: from lane `lane` (an i32), or with `butterfly`
/// from this lane XOR `lane`.
mlir::Value shuffleLane(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, mlir::Value lane, bool butterfly);

} // namespace tegula::lowering
