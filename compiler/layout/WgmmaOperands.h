//===- WgmmaOperands.h - wgmma's operands in shared memory -------*- C++ -*-===//
//
// Hopper's warpgroup MMA (wgmma.mma_async, sm_90a) reads A and B straight
// from shared memory, described by 64-bit matrix descriptors. The tile must
// be in one of the layouts the descriptors can express: rows of exactly one
// swizzle width (32, 64 or 128 bytes) along the contiguous dimension, 8-row
// groups one after another, the 16-byte chunks of a row XORed with address
// bits 7.. (so the tile starts on the swizzle's 256/512/1024-byte period),
// and a tile wider than one swizzle width stored as blocks of that width.
// This is a layout::SharedTile with rowXor and blockElements set, so every
// other user of shared tiles (the stores that fill it, cp.async rings) places
// elements the same way.
//
//   K-major (K contiguous): an instruction's K (32 bytes) lies in one row;
//     SBO = stride of 8-row groups along M/N (8 * swizzle), LBO unused.
//   MN-major (M or N contiguous; 16-bit types only, the .trans form):
//     rows run along K; SBO = stride of 8-row groups along K (8 * swizzle),
//     LBO = stride of the blocks along M/N.
//
// Descriptor bits (PTX ISA, "Matrix Descriptor Format"): [0,14) start
// address >> 4, [16,30) LBO >> 4, [32,46) SBO >> 4, [49,52) base offset (0:
// tiles start on the swizzle period), [62,64) swizzle: 1 = 128 B, 2 = 64 B,
// 3 = 32 B, 0 = none.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/SharedSwizzle.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace tegula::layout {

struct WgmmaOperandTile {
  SharedTile tile;
  bool kMajor = true;
  int32_t swizzleBytes = 128;
  int64_t leadingByteOffset = 0, strideByteOffset = 0;

  /// The descriptor without its start address (add `(address >> 4) & 0x3fff`).
  uint64_t descriptorBase() const;
  /// Byte offset from the tile's start of the instruction operand whose
  /// first row along M (A) or N (B) is `mnStart` and first K is `kStart`.
  int64_t instructionOffset(int32_t mnStart, int32_t kStart) const;
  /// Bytes the tile's start must be aligned to (the swizzle's period).
  int64_t alignment() const { return 8 * int64_t(swizzleBytes); }
};

/// Placement of operand `operand` (0: A [M, K], 1: B [K, N]) with elements of
/// `elementBits`, contiguous along `contiguousDim` (0 or 1) in shared memory;
/// nullopt when wgmma cannot read it that way (32-bit operands MN-major, a
/// contiguous extent under 32 bytes, dimensions not powers of two).
std::optional<WgmmaOperandTile> planWgmmaOperandTile(int operand, const std::vector<int32_t> &shape,
                                                     int contiguousDim, int elementBits);

/// The TMA swizzle mode (32, 64 or 128 bytes) that writes a box of `tile`'s
/// rows (one block of them: [rows, blockElements]) exactly where `tile`
/// places its elements, when the tile is 1024-byte aligned: rows of that
/// many bytes whose 16-byte chunks are XORed with the address bits from 7
/// up (CUTLASS's Swizzle<log2(bytes/16), 4, 3>). nullopt when none does
/// (an unswizzled tile, or rows of another width).
std::optional<int> tmaSwizzleBytes(const SharedTile &tile);

/// The tile a TMA store stages a row-major [rows, cols] block of
/// `elementBits` in: wgmma's K-major A placement (rows of the widest swizzle,
/// up to 128 bytes, the columns fill; their 16-byte chunks XORed by row as
/// TMA's swizzle reads them; blocks of that many columns one after another),
/// so the threads' stores of an mma accumulator hit every bank once, and
/// the copy out is one swizzled box per block. nullopt where no swizzle
/// applies (dimensions not powers of two, rows under 32 bytes or fewer than 8).
std::optional<SharedTile> tmaStoreTile(const std::vector<int32_t> &shape, int elementBits);

/// `tile` (tmaStoreTile's) with two resident blocks - a double buffer that
/// holds 2 of its blocks, each copied out while the next is written - when
/// it has more than two and the stored `values` (their distributed layout,
/// dims "dim0"/"dim1") let the threads write block by block: every lane's and
/// warp's column, and a stmatrix group's (registers 0-7), stays inside a
/// block, so which block a register's element lands in is the same in every
/// thread. Else `tile` as it is (the whole C block staged at once). A 128x256
/// f32 C block then takes 32 KiB instead of 128 (the rings beside it in a
/// persistent warp-specialised GEMM get the rest).
SharedTile tmaStoreStaging(SharedTile tile, const LinearLayout &values);

/// The rows of each block of a TMA-filled `tile` that each of `ctas` CTAs
/// of a cluster copies when a multicast fetches it once for all of them: the
/// CTA of rank r copies rows [r, r + 1) * slice, landing at the same offset
/// in every CTA. nullopt unless the rows split evenly into slices that are
/// whole periods of the tile's swizzle (8 rows of its width: each slice then
/// lands exactly where the whole box would put it) and `ctas` is 2 or 4.
std::optional<int32_t> multicastSliceRows(const SharedTile &tile, int ctas);

/// The block (along dim1) register `reg` of `values` lands in, for a tile
/// tmaStoreStaging gave resident blocks.
int32_t tmaStoreBlockOf(const LinearLayout &values, const SharedTile &tile, int32_t reg);

} // namespace tegula::layout
