//===- WgmmaOperands.cpp - wgmma's operands in shared memory --------------===//
#include "compiler/layout/WgmmaOperands.h"

#include <algorithm>
#include <bit>

namespace tegula::layout {

uint64_t WgmmaOperandTile::descriptorBase() const {
  const uint64_t mode = swizzleBytes == 128 ? 1 : swizzleBytes == 64 ? 2 : 3;
  return (uint64_t(leadingByteOffset >> 4) & 0x3fff) << 16 |
         (uint64_t(strideByteOffset >> 4) & 0x3fff) << 32 | mode << 62;
}

int64_t WgmmaOperandTile::instructionOffset(int32_t mnStart, int32_t kStart) const {
  const int mnDim = kMajor ? 1 - tile.contiguousDim : tile.contiguousDim;
  const int32_t rows = tile.shape[size_t(1 - tile.contiguousDim)];
  const int64_t bytes = tile.elementBits / 8, blockElements = swizzleBytes / bytes;
  (void)mnDim;
  if (kMajor) // rows along M/N; K in the row, blocks along K
    return (kStart / blockElements * rows + mnStart) * swizzleBytes +
           kStart % blockElements * bytes;
  // rows along K; M/N in the row, blocks along M/N (LBO apart)
  return (mnStart / blockElements * rows + kStart) * swizzleBytes + mnStart % blockElements * bytes;
}

std::optional<WgmmaOperandTile> planWgmmaOperandTile(int operand, const std::vector<int32_t> &shape,
                                                     int contiguousDim, int elementBits) {
  if (shape.size() != 2 || (contiguousDim != 0 && contiguousDim != 1) ||
      (elementBits != 8 && elementBits != 16 && elementBits != 32))
    return std::nullopt;
  for (int32_t d : shape)
    if (d <= 0 || !std::has_single_bit(uint32_t(d)))
      return std::nullopt;
  const int kDim = operand == 0 ? 1 : 0;
  WgmmaOperandTile t;
  t.kMajor = contiguousDim == kDim;
  if (!t.kMajor && elementBits != 16)
    return std::nullopt; // only f16/bf16 have the transposed forms
  const int64_t rowBytes = int64_t(shape[size_t(contiguousDim)]) * elementBits / 8;
  if (rowBytes < 32)
    return std::nullopt;
  t.swizzleBytes = int32_t(std::min<int64_t>(128, rowBytes));
  const int32_t rows = shape[size_t(1 - contiguousDim)];
  if (rows < 8)
    return std::nullopt;
  // Chunk bit c is XORed with address bit 7 + c; row bit i is address bit
  // i + log2(swizzle).
  const int logSwizzle = std::countr_zero(uint32_t(t.swizzleBytes)), chunkBits = logSwizzle - 4;
  std::vector<int32_t> rowXor;
  for (int i = 0; i + logSwizzle < 7 + chunkBits; ++i) {
    const int c = i + logSwizzle - 7;
    rowXor.push_back(c >= 0 ? int32_t(1) << c : 0);
  }
  t.tile = SharedTile{shape, contiguousDim, elementBits, rowXor,
                      int32_t(t.swizzleBytes * 8 / elementBits)};
  t.strideByteOffset = 8 * int64_t(t.swizzleBytes);
  // K-major: the instruction's K never leaves a row, LBO is unused (the ISA
  // assumes 1); MN-major: the distance between blocks along M/N.
  t.leadingByteOffset = t.kMajor ? 16 : int64_t(rows) * t.swizzleBytes;
  return t;
}

std::optional<int> tmaSwizzleBytes(const SharedTile &tile) {
  const int32_t rowBytes = tile.rowBytes();
  if (tile.rowXor.empty() || (rowBytes != 32 && rowBytes != 64 && rowBytes != 128))
    return std::nullopt;
  const int64_t chunkMask = rowBytes / 16 - 1;
  const int32_t rows = tile.shape[size_t(1 - tile.contiguousDim)];
  const int32_t perRow = rowBytes * 8 / tile.elementBits;
  // Every element of the first block: where the tile puts it, where TMA does.
  for (int32_t r = 0; r < rows; ++r)
    for (int32_t c = 0; c < perRow; ++c) {
      int64_t linear = int64_t(r) * rowBytes + int64_t(c) * tile.elementBits / 8;
      int64_t tma = linear ^ (((linear >> 7) & chunkMask) << 4);
      int64_t placed = tile.contiguousDim == 1 ? tile.offset(r, c) : tile.offset(c, r);
      if (tma != placed)
        return std::nullopt;
    }
  return rowBytes;
}

std::optional<SharedTile> tmaStoreTile(const std::vector<int32_t> &shape, int elementBits) {
  std::optional<WgmmaOperandTile> plan = planWgmmaOperandTile(0, shape, 1, elementBits);
  if (!plan || tmaSwizzleBytes(plan->tile) != plan->swizzleBytes)
    return std::nullopt;
  return plan->tile;
}

namespace {
/// Where "dim1" (a 2-D tile's column) is among the layout's outputs.
size_t columnIndex(const LinearLayout &values) {
  size_t i = 0;
  while (i < values.outDims().size() && values.outDims()[i].name != "dim1")
    ++i;
  return i;
}
} // namespace

std::optional<int32_t> multicastSliceRows(const SharedTile &tile, int ctas) {
  if ((ctas != 2 && ctas != 4) || tile.contiguousDim != 1 || tile.shape[0] % ctas != 0)
    return std::nullopt;
  const int32_t slice = tile.shape[0] / ctas;
  if (slice % 8 != 0) // a swizzle period is 8 rows of the tile's width
    return std::nullopt;
  return slice;
}

SharedTile tmaStoreStaging(SharedTile tile, const LinearLayout &values) {
  if (tile.contiguousDim != 1 || !tile.blockElements || tile.blocks() <= 2 || !values.hasOutDim("dim1") ||
      !values.hasInDim("register"))
    return tile;
  const size_t column = columnIndex(values);
  auto insideABlock = [&](const std::string &dim, int bits) {
    for (int bit = 0; bit < bits; ++bit)
      if (values.basis(dim, bit)[column] >= tile.blockElements)
        return false;
    return true;
  };
  for (const char *dim : {"lane", "warp"})
    if (values.hasInDim(dim) && !insideABlock(dim, std::countr_zero(uint32_t(values.inDimSize(dim)))))
      return tile;
  // The registers written together stay in one block too: a stmatrix group
  // (8 registers) or a 16-byte vector (16 8-bit elements).
  const int groupBits = std::max(3, std::countr_zero(uint32_t(128 / tile.elementBits)));
  if (!insideABlock("register", std::min(groupBits, std::countr_zero(uint32_t(values.inDimSize("register"))))))
    return tile;
  tile.residentBlocks = 2;
  return tile;
}

int32_t tmaStoreBlockOf(const LinearLayout &values, const SharedTile &tile, int32_t reg) {
  return values.apply({{"register", reg}})[columnIndex(values)] / tile.blockElements;
}

} // namespace tegula::layout
