//===- OperandStaging.cpp - mma operands staged in shared memory ----------===//
#include "compiler/layout/OperandStaging.h"

#include "compiler/layout/MmaLayouts.h"

#include <algorithm>
#include <bit>

namespace tegula::layout {
namespace {

constexpr int kChunkBytes = 16;

std::vector<std::pair<std::string, int32_t>> outsOf(const LinearLayout &l) {
  std::vector<std::pair<std::string, int32_t>> outs;
  for (const LinearLayout::Dim &d : l.outDims())
    outs.push_back({d.name, 1 << d.log2Size});
  return outs;
}

std::vector<std::vector<int32_t>> basesOf(const LinearLayout &l, const std::string &dim, int from = 0) {
  std::vector<std::vector<int32_t>> bases;
  for (int bit = from; bit < std::countr_zero(uint32_t(l.inDimSize(dim))); ++bit)
    bases.push_back(l.basis(dim, bit));
  return bases;
}

} // namespace

int contiguousDimOf(const LinearLayout &ll) {
  if (ll.inDimSize("register") < 2)
    return -1;
  std::vector<int32_t> b = ll.basis("register", 0);
  for (size_t d = 0; d < b.size(); ++d)
    if (b[d] == 1 && std::count(b.begin(), b.end(), 0) == std::ptrdiff_t(b.size() - 1))
      return int(d);
  return -1;
}

int32_t vectorElementsOf(const LinearLayout &offsets, int32_t maxElements) {
  int32_t v = 1;
  while (v < maxElements && 2 * v <= offsets.inDimSize("register") &&
         offsets.basis("register", std::countr_zero(uint32_t(v)))[0] == v)
    v *= 2;
  for (const LinearLayout::Dim &d : offsets.inDims())
    for (int bit = d.name == "register" ? std::countr_zero(uint32_t(v)) : 0; bit < d.log2Size; ++bit)
      while (offsets.basis(d.name, bit)[0] % v)
        v /= 2;
  return v;
}

LdmatrixReads planLdmatrixReads(const LinearLayout &operand, bool isA, int contiguousDim) {
  LdmatrixReads r;
  r.trans = isA ? contiguousDim == 0 : contiguousDim == 1;
  r.matrices = int(std::min<int32_t>(4, operand.inDimSize("register") / 2));
  // B's registers run along K first: an x4 over register bits 1 and 2 would
  // span two k-slices. Its first register bit along N takes bit 2's place
  // (two n-tiles of one k-slice) in a renumbered copy of the layout.
  const int regBits = std::countr_zero(uint32_t(operand.inDimSize("register")));
  for (int bit = 2; !isA && bit < regBits && r.swapBit == 2; ++bit)
    if (operand.basis("register", bit)[1] != 0)
      r.swapBit = bit;
  std::vector<std::vector<int32_t>> regs;
  for (int bit = 0; bit < regBits; ++bit)
    regs.push_back(operand.basis("register", bit == 2 ? r.swapBit : bit == r.swapBit ? 2 : bit));
  r.operand = LinearLayout::fromBases(
      {{"register", regs}, {"lane", basesOf(operand, "lane")}, {"warp", basesOf(operand, "warp")}},
      outsOf(operand));
  // Rows: register bits above one ldmatrix's group, the derived lane
  // addresses, the operand's warps.
  LinearLayout lanes = ldmatrixAddressLayout(r.operand, r.matrices, r.trans);
  r.rows = LinearLayout::fromBases(
      {{"register", basesOf(r.operand, "register", std::countr_zero(uint32_t(2 * r.matrices)))},
       {"lane", basesOf(lanes, "lane")},
       {"warp", basesOf(r.operand, "warp")}},
      outsOf(operand));
  return r;
}

SharedTile planOperandTile(const LinearLayout &source, const LinearLayout &operand, bool isA,
                           int32_t vectorElements) {
  int contiguous = contiguousDimOf(source);
  if (contiguous < 0)
    contiguous = isA ? 1 : 0;
  SharedTile tile{{source.outDimSize("dim0"), source.outDimSize("dim1")}, contiguous, 16, {}};
  LdmatrixReads reads = planLdmatrixReads(operand, isA, contiguous);
  return deriveSwizzle(tile, {{"ldmatrix", reads.rows, kChunkBytes},
                              vectorAccess("store", source, vectorElements, 16)});
}

} // namespace tegula::layout
