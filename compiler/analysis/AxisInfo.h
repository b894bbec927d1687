//===- AxisInfo.h - contiguity, divisibility, constancy of tiles -*- C++ -*-===//
//
// Per dimension of a tile of integers or pointers:
//   contiguity  - elements come in runs of this many consecutive values
//                 (+1 per step; pointers: +1 element);
//   divisibility - the first value of each run is a multiple of this
//                 (powers of two; bytes for pointers);
//   constancy   - elements come in runs of this many equal values.
// Scalars are rank-0: divisibility only. This is what decides how wide a
// memory access may be: a run of 4 contiguous f32 pointers whose first is
// 16-byte aligned, under a mask constant over those 4, is one 128-bit access.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cstdint>
#include <vector>

namespace tegula::analysis {

struct AxisInfo {
  std::vector<int64_t> contiguity, divisibility, constancy;
  /// Divisibility of a scalar (or the first element), in elements or bytes.
  int64_t scalarDivisibility = 1;
  std::string toString() const;
};

class AxisInfoAnalysis {
public:
  /// Analyse every value in `root` (forward, in program order). Loop-carried
  /// values are unknown, except pointers advanced by the same offset every
  /// iteration (init + k * offset).
  explicit AxisInfoAnalysis(mlir::Operation *root);
  const AxisInfo &get(mlir::Value v);

private:
  void analyse(mlir::Operation *root);
  AxisInfo compute(mlir::Operation *op, mlir::Value result);
  llvm::DenseMap<mlir::Value, AxisInfo> info_;
  llvm::DenseSet<mlir::Value> carried_; // loop-carried pointers set by the constructor
};

/// The widest vector (in elements, a power of two, at most 16 bytes) that a
/// load/store of `ptr` (with optional `mask`) may use along its fastest
/// dimension `dim`, as far as the analysis can prove.
int64_t maxVectorWidth(AxisInfoAnalysis &axis, mlir::Value ptr, mlir::Value mask, unsigned dim);

} // namespace tegula::analysis
