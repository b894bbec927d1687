//===- MmaLayouts.cpp - mma.sync fragments as linear layouts --------------===//
#include "compiler/layout/MmaLayouts.h"

#include "tegula/error.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace tegula::layout {
namespace {

using Coords = std::vector<int32_t>;
using Bases = std::vector<Coords>;

int log2Of(int32_t v) { return std::countr_zero(uint32_t(v)); }

void requirePowerOfTwo(const std::vector<int32_t> &values, const char *what) {
  for (int32_t v : values)
    if (v <= 0 || !std::has_single_bit(uint32_t(v)))
      throw Error(fmt::format("mma layout: {} must be powers of two, got {}", what, v));
}

/// A 2-D layout from explicit bases; a basis that points outside `shape`
/// becomes zero (that slot holds a duplicate), as for blocked layouts.
LinearLayout build(const std::vector<int32_t> &shape, Bases reg, const Bases &lane, Bases warp) {
  auto clamp = [&](Bases &bases) {
    for (Coords &c : bases)
      if (c[0] >= shape[0] || c[1] >= shape[1])
        c = {0, 0};
  };
  Bases lanes = lane;
  clamp(reg);
  clamp(lanes);
  clamp(warp);
  return LinearLayout::fromBases({{"register", reg}, {"lane", lanes}, {"warp", warp}},
                                 {{dimName(0), shape[0]}, {dimName(1), shape[1]}});
}

/// Bases stepping `dim` by first, 2*first, ... up to (excluding) `limit`.
void appendSteps(Bases &bases, int dim, int32_t first, int32_t limit) {
  for (int32_t step = first; step < limit; step *= 2)
    bases.push_back(dim == 0 ? Coords{step, 0} : Coords{0, step});
}

} // namespace

MmaShape mmaInstructionShape(int elementBits) {
  if (elementBits != 8 && elementBits != 16 && elementBits != 32)
    throw Error(fmt::format("mma.sync takes 8-, 16- or 32-bit operands, not {}-bit", elementBits));
  return {16, 8, 256 / elementBits};
}

LinearLayout mmaAccumulatorLayout(const std::vector<int32_t> &shape,
                                  const std::vector<int32_t> &warpsPerCTA) {
  if (shape.size() != 2 || warpsPerCTA.size() != 2)
    throw Error("mma layout: the accumulator is 2-D ([M, N]) with 2-D warpsPerCTA");
  requirePowerOfTwo(shape, "tile sizes");
  requirePowerOfTwo(warpsPerCTA, "warp counts");
  // A dimension of 1 is a broadcast row or column (expand_dims of a slice
  // of this layout): every thread holds its element.
  if ((shape[0] % 16 && shape[0] != 1) || (shape[1] % 8 && shape[1] != 1))
    throw Error(fmt::format("mma layout: an accumulator tile is a multiple of 16 x 8 (or 1 "
                            "along a broadcast dimension), got {} x {}",
                            shape[0], shape[1]));
  const int32_t wm = warpsPerCTA[0], wn = warpsPerCTA[1];
  Bases reg = {{0, 1}, {8, 0}};
  Bases lane = {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}};
  Bases warp;
  appendSteps(warp, 1, 8, 8 * wn);
  appendSteps(warp, 0, 16, 16 * wm);
  appendSteps(reg, 1, 8 * wn, shape[1]);
  appendSteps(reg, 0, 16 * wm, shape[0]);
  return build(shape, reg, lane, warp);
}

LinearLayout mmaOperandLayout(int operand, const std::vector<int32_t> &shape, int elementBits,
                              const std::vector<int32_t> &warpsPerCTA) {
  if (operand != 0 && operand != 1)
    throw Error(fmt::format("mma layout: operand is 0 (A) or 1 (B), not {}", operand));
  if (shape.size() != 2 || warpsPerCTA.size() != 2)
    throw Error("mma layout: operands are 2-D with 2-D warpsPerCTA");
  requirePowerOfTwo(shape, "tile sizes");
  requirePowerOfTwo(warpsPerCTA, "warp counts");
  const MmaShape instr = mmaInstructionShape(elementBits);
  const bool isA = operand == 0;
  // Coordinates are [M, K] for A and [K, N] for B: K is dim 1 of A, dim 0 of B.
  const int kDim = isA ? 1 : 0, rowDim = isA ? 0 : 1;
  const int32_t rows = isA ? instr.m : instr.n, kTile = shape[size_t(kDim)];
  const int32_t rowTile = shape[size_t(rowDim)];
  if (rowTile % rows || kTile % instr.k)
    throw Error(fmt::format("mma layout: operand {} tile {} x {} is not a multiple of {} x {}",
                            isA ? "A" : "B", shape[0], shape[1], isA ? instr.m : instr.k,
                            isA ? instr.k : instr.n));
  auto at = [&](int dim, int32_t step) { return dim == 0 ? Coords{step, 0} : Coords{0, step}; };
  const int32_t e = 32 / elementBits; // elements per 32-bit register

  Bases reg;
  appendSteps(reg, kDim, 1, e); // the elements packed in one register
  if (isA)
    reg.push_back(at(rowDim, 8)); // the second core matrix along M
  reg.push_back(at(kDim, 4 * e)); // the second core matrix along K
  Bases lane = {at(kDim, e), at(kDim, 2 * e), at(rowDim, 1), at(rowDim, 2), at(rowDim, 4)};
  // Warps: low bits along N, high bits along M; the other operand's warps
  // hold the same fragment.
  const int32_t wm = warpsPerCTA[0], wn = warpsPerCTA[1];
  const int32_t warpsAlongRows = isA ? wm : wn;
  Bases warp;
  for (int32_t w = 1; w < wn; w *= 2)
    warp.push_back(isA ? Coords{0, 0} : at(rowDim, rows * w));
  for (int32_t w = 1; w < wm; w *= 2)
    warp.push_back(isA ? at(rowDim, rows * w) : Coords{0, 0});
  appendSteps(reg, kDim, instr.k, kTile);
  appendSteps(reg, rowDim, rows * warpsAlongRows, rowTile);
  return build(shape, reg, lane, warp);
}

LinearLayout ldmatrixAddressLayout(const LinearLayout &operandLayout, int numMatrices, bool trans) {
  if (numMatrices != 1 && numMatrices != 2 && numMatrices != 4)
    throw Error(fmt::format("ldmatrix loads 1, 2 or 4 matrices, not {}", numMatrices));
  if (operandLayout.inDimSize("lane") != 32 || operandLayout.inDimSize("register") < 2 * numMatrices)
    throw Error(fmt::format("ldmatrix.x{}: the operand layout needs 32 lanes and at least {} "
                            "registers of 16-bit elements",
                            numMatrices, 2 * numMatrices));
  // 16-bit fragments only: lane bit 0 steps K by e = 32 / elementBits = 2.
  const Coords lane0 = operandLayout.basis("lane", 0);
  if (*std::max_element(lane0.begin(), lane0.end()) != 2)
    throw Error(fmt::format("ldmatrix.x{}: the operand layout is not a 16-bit mma fragment "
                            "(ldmatrix moves 16-bit elements)",
                            numMatrices));
  auto lane = [&](int bit) { return operandLayout.basis("lane", bit); };
  auto reg = [&](int bit) { return operandLayout.basis("register", bit); };
  // The 8 rows of one 8x8 matrix: the fragment's row bits, or with .trans
  // the bits along its 16-byte direction (element bit, lane bits 0-1).
  Bases bases = trans ? Bases{reg(0), lane(0), lane(1)} : Bases{lane(2), lane(3), lane(4)};
  // Matrix j lands in 32-bit register j: element-layout register bits 1, 2.
  const Coords none(operandLayout.outDims().size(), 0);
  for (int bit = 0; bit < 2; ++bit)
    bases.push_back((1 << bit) < numMatrices ? reg(1 + bit) : none); // unused lanes
  std::vector<std::pair<std::string, int32_t>> outs;
  for (const LinearLayout::Dim &d : operandLayout.outDims())
    outs.push_back({d.name, 1 << d.log2Size});
  return LinearLayout::fromBases({{"lane", bases}}, outs);
}

} // namespace tegula::layout
