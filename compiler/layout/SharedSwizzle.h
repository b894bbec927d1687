//===- SharedSwizzle.h - swizzled shared memory, derived ---------*- C++ -*-===//
//
// A 2-D tile in shared memory is stored row by row along its contiguous
// dimension, in 16-byte chunks; a swizzle XORs each row's chunk index with a
// linear function of the row index, so that the rows a warp touches at once
// fall in different banks. Shared memory has 32 banks of 4 bytes: a 16-byte
// access covers 4 banks, and 8 such accesses (a "phase", 128 bytes) run in
// one wavefront when their chunks land in 8 different bank groups.
//
// The swizzle is not tabled: deriveSwizzle() takes the accesses the kernel
// makes - the stores that fill the tile (from the distributed layout of the
// global load, 16 bytes per thread) and the ldmatrix reads that drain it
// (ldmatrixAddressLayout) - and picks the simplest XOR function of the row
// bits under which every phase of every access is conflict-free.
// bankConflicts() counts what any layout costs, swizzled or not.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/LinearLayout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tegula::layout {

struct SharedTile {
  std::vector<int32_t> shape; // [dim0, dim1]
  int contiguousDim = 1;      // 1: rows are dim0 (row-major); 0: column-major
  int elementBits = 16;
  /// rowXor[i]: the chunk-index bits that bit i of the row index flips
  /// (empty: no swizzle). Each entry is below the number of chunks per row.
  std::vector<int32_t> rowXor;
  /// Elements of a row per block (0: the whole row). A tile whose rows are
  /// wider is stored as consecutive [rows x blockElements] sub-tiles, each
  /// swizzled alike - the swizzle atoms wgmma reads (WgmmaOperands.h).
  int32_t blockElements = 0;
  /// Blocks resident at once (0: all): block b lives in slot b % residentBlocks
  /// - a TMA store's C block staged a few blocks at a time, each copied out
  /// before its slot takes the next (tmaStoreStaging).
  int32_t residentBlocks = 0;

  /// Bytes of one row of one block.
  int32_t rowBytes() const;
  /// Byte offset of the element at (dim0, dim1).
  int64_t offset(int32_t d0, int32_t d1) const;
  /// Blocks along the contiguous dimension (1 without blocks).
  int32_t blocks() const;
  /// Bytes the tile takes in shared memory (its resident blocks').
  int64_t bytes() const;
  /// e.g. "row-major 128x32 bf16, chunk ^= row[0:3] -> {1, 2, 4}".
  std::string toString() const;
  /// The same bytes seen with the dimensions swapped: element (d1, d0) of
  /// the result is element (d0, d1) of this tile.
  SharedTile transposed() const {
    return SharedTile{{shape[1], shape[0]}, 1 - contiguousDim, elementBits, rowXor, blockElements, residentBlocks};
  }
  /// The same placement as a linear layout from (dim0, dim1) to the element
  /// index "offset" (offset(d0, d1) = its value * elementBits / 8): swizzling
  /// only XORs chunk bits, so it composes with any distributed layout.
  /// Requires power-of-two dimensions.
  LinearLayout offsetLayout() const;
};

/// One kind of access of `bytes` (1 to 16) per lane: a layout from (lane,
/// and any of register, warp) to the tile coordinates of each access's first
/// element. Lanes run in phases of 128 / bytes (8 lanes of 16 bytes, 16 of
/// 8, the whole warp below that), the unit of a shared-memory wavefront.
struct SharedAccess {
  std::string name;
  LinearLayout starts;
  int32_t bytes = 16;
};

/// The accesses of a distributed layout that moves `vectorElements`
/// contiguous elements of `elementBits` per thread and register group (its
/// register bits below log2(vectorElements) form the vector).
SharedAccess vectorAccess(const std::string &name, const LinearLayout &distributed,
                          int32_t vectorElements, int elementBits);

struct ConflictCount {
  int64_t phases = 0;        // phases of 8 accesses examined
  int64_t extraWavefronts = 0; // summed over phases: wavefronts - 1
  int32_t worst = 0;         // wavefronts of the worst phase (1: conflict-free)
};
/// Simulates every phase of `access` against 32 banks of 4 bytes.
ConflictCount bankConflicts(const SharedTile &tile, const SharedAccess &access);

/// The swizzle (tile.rowXor) with the fewest row bits, then the fewest
/// flipped chunk bits, under which every access is conflict-free; when none
/// is, the one with the fewest extra wavefronts. `tile.rowXor` is ignored.
SharedTile deriveSwizzle(SharedTile tile, const std::vector<SharedAccess> &accesses);

} // namespace tegula::layout
