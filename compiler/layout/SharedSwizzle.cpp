//===- SharedSwizzle.cpp - swizzled shared memory, derived ----------------===//
#include "compiler/layout/SharedSwizzle.h"

#include "tegula/error.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tegula::layout {
namespace {

constexpr int kAccessBytes = 16, kPhaseLanes = 8, kBanks = 32, kBankBytes = 4;
// Row bits a swizzle may use: 4 covers every pattern of 8 rows x 16 bytes
// and keeps the search at 8^4 candidates.
constexpr int kMaxSwizzleRowBits = 4;

int log2Of(int32_t v) { return std::countr_zero(uint32_t(v)); }

/// Every (name, index) assignment of the layout's input dims except lanes.
std::vector<std::vector<std::pair<std::string, int32_t>>> nonLaneInputs(const LinearLayout &l) {
  std::vector<std::vector<std::pair<std::string, int32_t>>> all = {{}};
  for (const LinearLayout::Dim &d : l.inDims()) {
    if (d.name == "lane")
      continue;
    std::vector<std::vector<std::pair<std::string, int32_t>>> next;
    for (auto &partial : all)
      for (int32_t i = 0; i < (1 << d.log2Size); ++i) {
        next.push_back(partial);
        next.back().push_back({d.name, i});
      }
    all = std::move(next);
  }
  return all;
}

} // namespace

int32_t SharedTile::rowBytes() const {
  return int32_t(int64_t(shape[size_t(contiguousDim)]) * elementBits / 8);
}

int64_t SharedTile::offset(int32_t d0, int32_t d1) const {
  const int32_t row = contiguousDim == 1 ? d0 : d1, col = contiguousDim == 1 ? d1 : d0;
  const int64_t byte = int64_t(col) * elementBits / 8;
  int64_t chunk = byte / kAccessBytes;
  for (size_t i = 0; i < rowXor.size(); ++i)
    if (row >> i & 1)
      chunk ^= rowXor[i];
  return int64_t(row) * rowBytes() + chunk * kAccessBytes + byte % kAccessBytes;
}

std::string SharedTile::toString() const {
  std::string s = fmt::format("{} {}x{} {}-bit", contiguousDim == 1 ? "row-major" : "column-major",
                              shape[0], shape[1], elementBits);
  if (rowXor.empty())
    return s + ", unswizzled";
  return s + fmt::format(", 16-byte chunk ^= row bits 0..{} -> {{{}}}", rowXor.size() - 1,
                         fmt::join(rowXor, ", "));
}

SharedAccess vectorAccess(const std::string &name, const LinearLayout &distributed,
                          int32_t vectorElements) {
  const int vecBits = log2Of(vectorElements);
  if (!std::has_single_bit(uint32_t(vectorElements)) ||
      distributed.inDimSize("register") < vectorElements)
    throw Error(fmt::format("{}: a vector of {} elements needs as many registers", name,
                            vectorElements));
  std::vector<std::pair<std::string, std::vector<std::vector<int32_t>>>> bases;
  for (const LinearLayout::Dim &d : distributed.inDims()) {
    std::vector<std::vector<int32_t>> dimBases;
    for (int bit = d.name == "register" ? vecBits : 0; bit < d.log2Size; ++bit)
      dimBases.push_back(distributed.basis(d.name, bit));
    bases.push_back({d.name, dimBases});
  }
  // The vector's registers must step one dimension by 1, 2, 4, ...
  for (int bit = 0; bit < vecBits; ++bit) {
    std::vector<int32_t> b = distributed.basis("register", bit);
    if (std::count(b.begin(), b.end(), 0) != std::ptrdiff_t(b.size() - 1) ||
        *std::max_element(b.begin(), b.end()) != (1 << bit))
      throw Error(fmt::format("{}: registers 0..{} are not contiguous elements", name,
                              vectorElements - 1));
  }
  std::vector<std::pair<std::string, int32_t>> outs;
  for (const LinearLayout::Dim &d : distributed.outDims())
    outs.push_back({d.name, 1 << d.log2Size});
  return {name, LinearLayout::fromBases(bases, outs)};
}

ConflictCount bankConflicts(const SharedTile &tile, const SharedAccess &access) {
  const LinearLayout &l = access.starts;
  if (l.outDims().size() != 2)
    throw Error(fmt::format("{}: shared tiles are 2-D", access.name));
  const int32_t lanes = l.hasInDim("lane") ? l.inDimSize("lane") : 1;
  ConflictCount count;
  for (auto &others : nonLaneInputs(l))
    for (int32_t first = 0; first < lanes; first += kPhaseLanes) {
      std::map<int, std::set<int64_t>> wordsPerBank;
      for (int32_t lane = first; lane < std::min(lanes, first + kPhaseLanes); ++lane) {
        auto in = others;
        in.push_back({"lane", lane});
        std::vector<int32_t> c = l.apply(in);
        const int64_t byte = tile.offset(c[0], c[1]);
        for (int64_t word = byte / kBankBytes; word < (byte + kAccessBytes) / kBankBytes; ++word)
          wordsPerBank[int(word % kBanks)].insert(word);
      }
      int32_t wavefronts = 1;
      for (auto &[bank, words] : wordsPerBank)
        wavefronts = std::max(wavefronts, int32_t(words.size()));
      ++count.phases;
      count.extraWavefronts += wavefronts - 1;
      count.worst = std::max(count.worst, wavefronts);
    }
  return count;
}

SharedTile deriveSwizzle(SharedTile tile, const std::vector<SharedAccess> &accesses) {
  auto cost = [&](const SharedTile &t) {
    int64_t extra = 0;
    for (const SharedAccess &a : accesses)
      extra += bankConflicts(t, a).extraWavefronts;
    return extra;
  };
  tile.rowXor.clear();
  const int32_t chunks = tile.rowBytes() / kAccessBytes;
  if (chunks <= 1)
    return tile; // one chunk per row: nothing to permute
  const int maskBits = std::min(log2Of(chunks), 3); // 8 bank groups
  const int rowBits = std::min(log2Of(tile.shape[size_t(1 - tile.contiguousDim)]), kMaxSwizzleRowBits);
  SharedTile best = tile;
  int64_t bestCost = cost(tile);
  for (int used = 1; used <= rowBits && bestCost > 0; ++used) {
    // Every assignment of masks to row bits 0..used-1 whose last is nonzero,
    // fewest flipped bits first.
    std::vector<std::vector<int32_t>> candidates;
    const int32_t perBit = 1 << maskBits;
    for (int64_t code = 0; code < (int64_t(1) << (maskBits * used)); ++code) {
      std::vector<int32_t> masks;
      for (int i = 0; i < used; ++i)
        masks.push_back(int32_t(code >> (maskBits * i)) & (perBit - 1));
      if (masks.back() != 0)
        candidates.push_back(masks);
    }
    auto ones = [](const std::vector<int32_t> &m) {
      int n = 0;
      for (int32_t v : m)
        n += std::popcount(uint32_t(v));
      return n;
    };
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](const auto &a, const auto &b) { return ones(a) < ones(b); });
    for (auto &masks : candidates) {
      SharedTile t = tile;
      t.rowXor = masks;
      const int64_t c = cost(t);
      if (c < bestCost) {
        best = t, bestCost = c;
        if (c == 0)
          break;
      }
    }
  }
  return best;
}

} // namespace tegula::layout
