//===- OperandStaging.cpp - mma operands staged in shared memory ----------===//
#include "compiler/layout/OperandStaging.h"

#include "compiler/layout/MmaLayouts.h"
#include "tegula/error.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

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

/// `l` with every coordinate along out dim `dim` multiplied by mul / div
/// (the same elements counted in units of another width). `dropFirstRegister`:
/// register bit 0 steps within one unit of the new width and goes.
LinearLayout rescaleDim(const LinearLayout &l, int dim, int32_t mul, int32_t div,
                        bool dropFirstRegister = false) {
  std::vector<std::pair<std::string, std::vector<std::vector<int32_t>>>> ins;
  for (const LinearLayout::Dim &d : l.inDims()) {
    std::vector<std::vector<int32_t>> bases;
    for (int bit = d.name == "register" && dropFirstRegister ? 1 : 0; bit < d.log2Size; ++bit) {
      std::vector<int32_t> b = l.basis(d.name, bit);
      if (b[size_t(dim)] * mul % div)
        throw Error(fmt::format("operand layout: {} bit {} steps dim {} by {}, not a whole number "
                                "of {}/{} units",
                                d.name, bit, dim, b[size_t(dim)], div, mul));
      b[size_t(dim)] = b[size_t(dim)] * mul / div;
      bases.push_back(std::move(b));
    }
    ins.push_back({d.name, std::move(bases)});
  }
  std::vector<std::pair<std::string, int32_t>> outs = outsOf(l);
  outs[size_t(dim)].second = outs[size_t(dim)].second * mul / div;
  return LinearLayout::fromBases(ins, outs);
}

} // namespace

LinearLayout sixteenBitView(const LinearLayout &operand, bool isA, int elementBits) {
  const int kDim = isA ? 1 : 0;
  if (elementBits == 16)
    return operand;
  // A fragment of e elements per register: its register bits 0.. log2(e)-1
  // step K by 1, 2, ..., its lane bit 0 by e (MmaLayouts.h).
  auto alongK = [&](int32_t step) {
    std::vector<int32_t> c(operand.outDims().size(), 0);
    c[size_t(kDim)] = step;
    return c;
  };
  if (elementBits == 8) { // bytes 0-1 and 2-3 of a register: two 16-bit elements
    if (operand.inDimSize("register") < 4 || operand.basis("register", 0) != alongK(1) ||
        operand.basis("register", 1) != alongK(2) || operand.basis("lane", 0) != alongK(4))
      throw Error("sixteenBitView: not an 8-bit mma operand fragment");
    return rescaleDim(operand, kDim, 1, 2, /*dropFirstRegister=*/true);
  }
  if (elementBits != 32)
    throw Error(fmt::format("sixteenBitView: mma operands are 8-, 16- or 32-bit, not {}-bit", elementBits));
  if (operand.basis("lane", 0) != alongK(1))
    throw Error("sixteenBitView: not a 32-bit mma operand fragment");
  // A 32-bit register is two 16-bit halves: a new register bit 0 steps K by one.
  LinearLayout scaled = rescaleDim(operand, kDim, 2, 1);
  std::vector<std::pair<std::string, std::vector<std::vector<int32_t>>>> ins;
  for (const LinearLayout::Dim &d : scaled.inDims()) {
    std::vector<std::vector<int32_t>> bases = basesOf(scaled, d.name);
    if (d.name == "register") {
      std::vector<int32_t> half(scaled.outDims().size(), 0);
      half[size_t(kDim)] = 1;
      bases.insert(bases.begin(), half);
    }
    ins.push_back({d.name, std::move(bases)});
  }
  return LinearLayout::fromBases(ins, outsOf(scaled));
}

bool ldmatrixReads(bool isA, int contiguousDim, int elementBits) {
  return elementBits == 16 || ((elementBits == 8 || elementBits == 32) && contiguousDim == (isA ? 1 : 0));
}

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

std::optional<LinearLayout> stmatrixRows(const LinearLayout &source, const SharedTile &tile) {
  if (tile.elementBits != 16 || source.inDimSize("register") < 8 || source.inDimSize("lane") != 32 ||
      !source.isInjective())
    return std::nullopt;
  const LinearLayout offsets = source.compose(tile.offsetLayout());
  // A matrix row: register bit 0 and lane bits 0, 1 step through 8
  // consecutive elements; nothing else touches an offset's low 3 bits.
  if (offsets.basis("register", 0)[0] != 1 || offsets.basis("lane", 0)[0] != 2 ||
      offsets.basis("lane", 1)[0] != 4)
    return std::nullopt;
  for (const LinearLayout::Dim &d : offsets.inDims())
    for (int bit = 0; bit < d.log2Size; ++bit) {
      const bool rowBit = (d.name == "register" && bit == 0) || (d.name == "lane" && bit < 2);
      if (!rowBit && offsets.basis(d.name, bit)[0] & 7)
        return std::nullopt;
    }
  // ldmatrix.x4's addressing: lanes 8j..8j+7 the rows of matrix j
  // (registers 2j, 2j + 1); register bits 3 and up pick the group.
  LinearLayout rows;
  try {
    rows = ldmatrixAddressLayout(source, 4, false);
  } catch (const Error &) {
    return std::nullopt; // not a 16-bit fragment
  }
  std::vector<std::vector<int32_t>> lane, group, warp;
  for (int bit = 0; bit < 5; ++bit)
    lane.push_back(rows.basis("lane", bit));
  for (int bit = 3; bit < std::countr_zero(uint32_t(source.inDimSize("register"))); ++bit)
    group.push_back(source.basis("register", bit));
  if (source.hasInDim("warp"))
    for (int bit = 0; bit < std::countr_zero(uint32_t(source.inDimSize("warp"))); ++bit)
      warp.push_back(source.basis("warp", bit));
  std::vector<std::pair<std::string, int32_t>> outs;
  for (const LinearLayout::Dim &d : source.outDims())
    outs.push_back({d.name, 1 << d.log2Size});
  return LinearLayout::fromBases({{"register", group}, {"lane", lane}, {"warp", warp}}, outs);
}

LdmatrixReads planLdmatrixReads(const LinearLayout &operand, bool isA, int contiguousDim,
                                int elementBits) {
  if (elementBits != 16) {
    if (!ldmatrixReads(isA, contiguousDim, elementBits))
      throw Error(fmt::format("ldmatrix reads {}-bit {} fragments only from tiles whose rows run "
                              "along K",
                              elementBits, isA ? "A" : "B"));
    LdmatrixReads r = planLdmatrixReads(sixteenBitView(operand, isA, elementBits), isA, contiguousDim);
    r.elementBits = elementBits;
    r.rows = rescaleDim(r.rows, isA ? 1 : 0, 16, elementBits); // back to elements of the tile
    return r;
  }
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
                           int32_t vectorElements, int elementBits) {
  int contiguous = contiguousDimOf(source);
  if (contiguous < 0)
    contiguous = isA ? 1 : 0;
  SharedTile tile{{source.outDimSize("dim0"), source.outDimSize("dim1")}, contiguous, elementBits, {}};
  SharedAccess read =
      ldmatrixReads(isA, contiguous, elementBits)
          ? SharedAccess{"ldmatrix", planLdmatrixReads(operand, isA, contiguous, elementBits).rows, kChunkBytes}
          : vectorAccess("ld.shared", operand, 1, elementBits);
  return deriveSwizzle(tile, {read, vectorAccess("store", source, vectorElements, elementBits)});
}

std::optional<ScatterCopy> planScatterCopy(const std::vector<int32_t> &shape, int contiguous, int32_t warps,
                                           const SharedTile &tile) {
  const size_t c = size_t(contiguous), o = size_t(1 - contiguous);
  std::optional<ScatterCopy> best;
  for (int32_t along = 32; along >= 1; along /= 2) {
    ScatterCopy copy{{0, 0}, {0, 0}, {int32_t(c), int32_t(o)}};
    copy.threadsPerWarp[c] = along;
    copy.threadsPerWarp[o] = 32 / along;
    if (copy.threadsPerWarp[0] > shape[0] || copy.threadsPerWarp[1] > shape[1])
      continue;
    // Warps along the other dimension first (K: the ring's rows), the rest
    // along the contiguous one.
    copy.warpsPerCTA[o] = std::min(warps, shape[o] / copy.threadsPerWarp[o]);
    copy.warpsPerCTA[c] = warps / copy.warpsPerCTA[o];
    if (copy.threadsPerWarp[c] * copy.warpsPerCTA[c] > shape[c])
      continue;
    const LinearLayout ll = blockedLayout(shape, {1, 1}, copy.threadsPerWarp, copy.warpsPerCTA, copy.order);
    if (!ll.freeBits("register").empty() || !ll.freeBits("lane").empty() || !ll.freeBits("warp").empty())
      continue;
    copy.extraWavefronts = bankConflicts(tile, vectorAccess("cp.async", ll, 1, 32)).extraWavefronts;
    if (!best || copy.extraWavefronts < best->extraWavefronts)
      best = copy;
  }
  return best;
}

} // namespace tegula::layout
