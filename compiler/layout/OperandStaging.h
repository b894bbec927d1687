//===- OperandStaging.h - mma operands staged in shared memory ---*- C++ -*-===//
//
// How a 16-bit mma.sync operand passes through shared memory: the tile's
// placement (rows along the source's contiguous dimension, a swizzle derived
// from the stores that fill it and the ldmatrix reads that drain it) and the
// reads (ldmatrix.x4/x2/x1, .trans or not, which operand registers each one
// produces). Plain layout algebra, no MLIR: the lowering of a dot
// (registers -> shared -> fragments) and the software pipeliner (cp.async
// into a ring of such tiles) make the same choices from here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/LinearLayout.h"
#include "compiler/layout/SharedSwizzle.h"

namespace tegula::layout {

/// The dimension that register bit 0 of `ll` steps by one element, or -1.
int contiguousDimOf(const LinearLayout &ll);

/// Elements per vector access of a layout composed with a tile's offsets
/// (out dim "offset"): register bits stepping the offset by 1, 2, 4, ...,
/// no other basis breaking the alignment, at most `maxElements`.
int32_t vectorElementsOf(const LinearLayout &offsets, int32_t maxElements);

/// The ldmatrix reads of 16-bit operand fragments from a tile.
struct LdmatrixReads {
  bool trans = false; // rows in shared memory run along M (A) or N (B)
  int matrices = 4;   // ldmatrix.x4 (x2, x1 for small operands)
  /// The operand layout with register bit `swapBit` exchanged with bit 2,
  /// so that one x4 covers two n-tiles of one k-slice for B (2: none).
  int swapBit = 2;
  LinearLayout operand;
  /// (register group, lane, warp) -> tile coordinates of the row each lane
  /// addresses; group g yields operand registers [2 * matrices * g, ...).
  LinearLayout rows;
};
LdmatrixReads planLdmatrixReads(const LinearLayout &operand, bool isA, int contiguousDim);

/// The tile for staging `source` (a distributed layout, 16-bit elements
/// moved `vectorElements` at a time) as operand `operand`: rows along the
/// source's contiguous dimension (K when it has none), swizzle derived so
/// that neither the stores nor the reads conflict.
SharedTile planOperandTile(const LinearLayout &source, const LinearLayout &operand, bool isA,
                           int32_t vectorElements);

/// Register `r` of the operand layout as numbered in `reads.operand`.
inline int32_t renumberedRegister(const LdmatrixReads &reads, int32_t r) {
  const int32_t hi = r >> reads.swapBit & 1, lo = r >> 2 & 1;
  return hi == lo ? r : r ^ (1 << reads.swapBit | 1 << 2);
}

} // namespace tegula::layout
