//===- OperandStaging.h - mma operands staged in shared memory ---*- C++ -*-===//
//
// How an mma.sync operand passes through shared memory: the tile's
// placement (rows along the source's contiguous dimension, a swizzle derived
// from the stores that fill it and the reads that drain it) and the reads
// (ldmatrix.x4/x2/x1, .trans or not, which operand registers each one
// produces). Plain layout algebra, no MLIR: the lowering of a dot
// (registers -> shared -> fragments) and the software pipeliner (cp.async
// into a ring of such tiles) make the same choices from here.
//
// ldmatrix moves 16-bit elements. A tf32 or i8 fragment whose tile rows run
// along K is, byte for byte, the 16-bit fragment of a tile with K scaled by
// elementBits / 16 (sixteenBitView), so ldmatrix reads it too, without
// .trans; with rows along M or N (e.g. a row-major B) each thread reads its
// elements one by one (ld.shared), which the swizzle keeps conflict-free.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/LinearLayout.h"
#include "compiler/layout/SharedSwizzle.h"

#include <optional>

namespace tegula::layout {

/// The dimension that register bit 0 of `ll` steps by one element, or -1.
int contiguousDimOf(const LinearLayout &ll);

/// Elements per vector access of a layout composed with a tile's offsets
/// (out dim "offset"): register bits stepping the offset by 1, 2, 4, ...,
/// no other basis breaking the alignment, at most `maxElements`.
int32_t vectorElementsOf(const LinearLayout &offsets, int32_t maxElements);

/// An 8- or 32-bit operand fragment (operand `isA` ? A : B, mmaOperandLayout)
/// seen as 16-bit elements: K coordinates scaled by elementBits / 16, a
/// 32-bit register's two halves as two registers, an 8-bit register's four
/// bytes as two pairs. Equal to the 16-bit fragment of the scaled tile.
LinearLayout sixteenBitView(const LinearLayout &operand, bool isA, int elementBits);

/// Whether ldmatrix reads operand fragments of `elementBits` from a tile
/// whose rows run along `contiguousDim`: 16-bit ones always (.trans when the
/// rows do not run along K), 8- and 32-bit ones when they run along K.
bool ldmatrixReads(bool isA, int contiguousDim, int elementBits);

/// The ldmatrix reads of operand fragments from a tile (ldmatrixReads).
struct LdmatrixReads {
  bool trans = false; // rows in shared memory run along M (A) or N (B)
  int matrices = 4;   // ldmatrix.x4 (x2, x1 for small operands)
  /// The operand layout with register bit `swapBit` exchanged with bit 2,
  /// so that one x4 covers two n-tiles of one k-slice for B (2: none).
  int swapBit = 2;
  int elementBits = 16;
  /// The (16-bit view of the) operand layout, renumbered.
  LinearLayout operand;
  /// (register group, lane, warp) -> tile coordinates (in elements of
  /// `elementBits`) of the row each lane addresses; group g yields words
  /// [matrices * g, matrices * (g + 1)) in load order.
  LinearLayout rows;
};
LdmatrixReads planLdmatrixReads(const LinearLayout &operand, bool isA, int contiguousDim,
                                int elementBits = 16);

/// The tile for staging `source` (a distributed layout, elements of
/// `elementBits` moved `vectorElements` at a time) as operand `operand`:
/// rows along the source's contiguous dimension (K when it has none),
/// swizzle derived so that neither the stores nor the reads conflict.
SharedTile planOperandTile(const LinearLayout &source, const LinearLayout &operand, bool isA,
                           int32_t vectorElements, int elementBits = 16);

/// A blocked layout's thread arrangement (one element a thread and register).
struct ScatterCopy {
  std::vector<int32_t> threadsPerWarp, warpsPerCTA, order;
  int64_t extraWavefronts = 0; // bank conflicts of the copies, summed over phases
};

/// How `warps` warps copy a [shape] tile of 32-bit elements, contiguous in
/// global memory along `contiguous`, one element (4 bytes) a copy into
/// `tile` (the same coordinates) laid out across that dimension - a tf32
/// wgmma operand loaded along M or N into its K-major ring: of the
/// arrangements with one element a thread and register and no duplicates,
/// the one with the fewest extra shared-memory wavefronts, ties to more
/// lanes along `contiguous` (fewer global sectors a warp). Lanes along the
/// rows alone would write the same few banks: in a K-major tile the rows'
/// elements lie a row apart. Nothing when no arrangement covers the shape.
std::optional<ScatterCopy> planScatterCopy(const std::vector<int32_t> &shape, int contiguous, int32_t warps,
                                           const SharedTile &tile);

/// stmatrix.x4 (sm_90) storing `source` (16-bit elements, e.g. an mma or
/// wgmma accumulator converted to bf16) into `tile`: each group of 8
/// registers is four 8x8 matrices, registers 2j, 2j + 1 holding matrix j's
/// row-pair fragment exactly as ldmatrix.x4 would load it, and lanes
/// 8j..8j+7 address matrix j's rows. Returns (register: group, lane, warp)
/// -> the tile coordinates of the 16-byte row each lane addresses, or
/// nothing when `source` has duplicates or fewer than 8 registers, or a
/// matrix row - register bit 0, lane bits 0 and 1 - is not 16 contiguous,
/// aligned bytes of `tile` (every other bit must leave offsets' low 3 bits
/// alone).
std::optional<LinearLayout> stmatrixRows(const LinearLayout &source, const SharedTile &tile);

/// Register `r` of the 16-bit view as numbered in `reads.operand`.
inline int32_t renumberedRegister(const LdmatrixReads &reads, int32_t r) {
  const int32_t hi = r >> reads.swapBit & 1, lo = r >> 2 & 1;
  return hi == lo ? r : r ^ (1 << reads.swapBit | 1 << 2);
}

/// The 32-bit word, in ldmatrix load order, that holds operand register
/// `r` (registers numbered as in the operand layout of `reads.elementBits`).
inline int32_t wordOfRegister(const LdmatrixReads &reads, int32_t r) {
  const int32_t perWord = 32 / reads.elementBits;
  return renumberedRegister(reads, r / perWord * 2) / 2;
}

/// The first operand register word `w` holds (the inverse of wordOfRegister;
/// it holds 32 / elementBits consecutive ones).
inline int32_t firstRegisterOfWord(const LdmatrixReads &reads, int32_t w) {
  return renumberedRegister(reads, 2 * w) / 2 * (32 / reads.elementBits);
}

} // namespace tegula::layout
