//===- MmaLayouts.h - mma.sync fragments as linear layouts -------*- C++ -*-===//
//
// The register layouts of NVIDIA's warp-level mma.sync (m16n8kK) and of the
// ldmatrix loads that feed it, as linear layouts over GF(2) like every other
// layout (LinearLayout.h). They are written once from the PTX ISA's fragment
// tables ("Matrix fragments for mma.m16n8k16 / m16n8k8 / m16n8k32") and the
// rest is derived: which lane addresses which row for ldmatrix, the
// shared-memory swizzle (SharedSwizzle.h), conversions between them.
//
// Every operand fragment is built from 8-row x 16-byte "core matrices": in a
// core matrix lane l holds row l/4 and the 4 bytes at column 4*(l%4). With
// e = 32 / elementBits elements per 32-bit register:
//
//   A (M x K):  register bits: log2(e) element bits along K, then M+8, K+4e
//               lane bits:     K+e, K+2e, M+1, M+2, M+4
//   B (K x N):  register bits: log2(e) element bits along K, then K+4e
//               lane bits:     K+e, K+2e, N+1, N+2, N+4
//   C (M x N):  register bits: N+1, M+8;  lane bits: N+2, N+4, M+1, M+2, M+4
//
// e.g. bf16 A (m16n8k16): thread 5 holds a0,a1 = A[1][2..3], a2,a3 = A[9][2..3],
// a4,a5 = A[1][10..11], a6,a7 = A[9][10..11]:
//
//          k: 0 1 2 3 4 5 6 7 | 8 ...15
//   m=0     t0  t1  t2  t3    | t0  t1  t2  t3      (two k per thread and register)
//   m=1     t4  t5  t6  t7    | t4  t5 ...
//   ...
//   m=8     t0  t1  t2  t3    | ...                 (rows 8-15: the next register)
//
// Warps tile the CTA row-major (warp = wm * warpsN + wn): their low bits walk
// N, the high bits M. A tile larger than one instruction per warp repeats it
// in more registers (along K first for operands, then along M or N; along N
// first for the accumulator, then M). A's fragment is the same in every warp
// of a row of warps (the N warp bits are free), B's in every warp of a column.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/layout/LinearLayout.h"

#include <cstdint>
#include <vector>

namespace tegula::layout {

/// One mma.sync instruction: m16 n8 and k = 256 / elementBits
/// (16 for f16/bf16, 8 for tf32, 32 for i8).
struct MmaShape {
  int32_t m = 16, n = 8, k = 16;
};
MmaShape mmaInstructionShape(int elementBits);

/// The accumulator (C and D) of mma.sync over an [M, N] tile (f32 or i32).
/// M must be a multiple of 16 and N of 8, or 1 (a row or column to
/// broadcast: each thread holds the elements of its rows or columns);
/// throws tegula::Error otherwise.
LinearLayout mmaAccumulatorLayout(const std::vector<int32_t> &shape,
                                  const std::vector<int32_t> &warpsPerCTA);

/// Operand `operand` of the same mma (0: A, [M, K]; 1: B, [K, N]) with
/// elements of `elementBits` (8, 16 or 32): the registers mma.sync reads.
LinearLayout mmaOperandLayout(int operand, const std::vector<int32_t> &shape, int elementBits,
                              const std::vector<int32_t> &warpsPerCTA);

/// Which row ldmatrix.x`numMatrices` (1, 2, 4) reads for each lane of a
/// warp, to produce the first `numMatrices` 32-bit registers of
/// `operandLayout` (16-bit elements): the map from lane to the tile
/// coordinates of the first element of the 16-byte row that lane addresses.
/// Lanes 8j..8j+7 address the rows of matrix j, which lands in register j;
/// lanes past the last matrix map to the origin (their addresses are
/// unused). Without `trans` a row's 16 bytes run along K (the operand is
/// K-contiguous in shared memory); with `trans` they run along M (A) or N
/// (B), and ldmatrix transposes. Derived from the operand layout: the rows
/// are its lane bits 2-4 (with trans: its element bit and lane bits 0-1),
/// the matrices its register bits 1 and 2.
LinearLayout ldmatrixAddressLayout(const LinearLayout &operandLayout, int numMatrices, bool trans);

} // namespace tegula::layout
