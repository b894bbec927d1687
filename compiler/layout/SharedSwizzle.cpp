//===- SharedSwizzle.cpp - swizzled shared memory, derived ----------------===//
#include "compiler/layout/SharedSwizzle.h"

#include "tegula/error.h"

#include <algorithm>
#include <array>
#include <bit>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tegula::layout {
namespace {

constexpr int kAccessBytes = 16, kPhaseBytes = 128, kBanks = 32, kBankBytes = 4;
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
  const int32_t row = shape[size_t(contiguousDim)];
  return int32_t(int64_t(blockElements ? std::min(blockElements, row) : row) * elementBits / 8);
}

int64_t SharedTile::offset(int32_t d0, int32_t d1) const {
  const int32_t row = contiguousDim == 1 ? d0 : d1;
  int32_t col = contiguousDim == 1 ? d1 : d0;
  int64_t block = 0;
  if (blockElements && col >= blockElements)
    block = col / blockElements, col %= blockElements;
  const int64_t byte = int64_t(col) * elementBits / 8;
  int64_t chunk = byte / kAccessBytes;
  for (size_t i = 0; i < rowXor.size(); ++i)
    if (row >> i & 1)
      chunk ^= rowXor[i];
  const int64_t rows = shape[size_t(1 - contiguousDim)];
  if (residentBlocks)
    block %= residentBlocks;
  return (block * rows + row) * rowBytes() + chunk * kAccessBytes + byte % kAccessBytes;
}

int32_t SharedTile::blocks() const {
  const int32_t row = shape[size_t(contiguousDim)];
  return blockElements && row > blockElements ? row / blockElements : 1;
}

int64_t SharedTile::bytes() const {
  const int64_t resident = residentBlocks ? std::min(residentBlocks, blocks()) : blocks();
  return resident * shape[size_t(1 - contiguousDim)] * rowBytes();
}

std::string SharedTile::toString() const {
  std::string s = fmt::format("{} {}x{} {}-bit", contiguousDim == 1 ? "row-major" : "column-major",
                              shape[0], shape[1], elementBits);
  if (blockElements)
    s += fmt::format(" in blocks of {} elements per row", blockElements);
  if (residentBlocks)
    s += fmt::format(" ({} resident)", residentBlocks);
  if (rowXor.empty())
    return s + ", unswizzled";
  return s + fmt::format(", 16-byte chunk ^= row bits 0..{} -> {{{}}}", rowXor.size() - 1,
                         fmt::join(rowXor, ", "));
}

LinearLayout SharedTile::offsetLayout() const {
  for (int32_t extent : shape)
    if (!std::has_single_bit(uint32_t(extent)))
      throw Error(fmt::format("shared tile {}: dimensions must be powers of two", toString()));
  const int chunkBits = log2Of(kAccessBytes * 8 / elementBits); // elements in a chunk
  const int32_t fullRow = shape[size_t(contiguousDim)];
  const int32_t rowElements = blockElements ? std::min(blockElements, fullRow) : fullRow;
  if (!std::has_single_bit(uint32_t(rowElements)))
    throw Error(fmt::format("shared tile {}: blocks must be powers of two", toString()));
  std::vector<std::vector<int32_t>> bases[2];
  // Along the contiguous dimension: the element index within the row, then
  // (past a block) whole blocks of rows x rowElements.
  const int32_t rows = shape[size_t(1 - contiguousDim)];
  // Resident blocks: a block's slot is its index modulo their count, so the
  // index bits from log2(residentBlocks) up place nothing.
  if (residentBlocks && !std::has_single_bit(uint32_t(residentBlocks)))
    throw Error(fmt::format("shared tile {}: resident blocks must be a power of two", toString()));
  const int slotBits = residentBlocks ? log2Of(residentBlocks) : 31;
  for (int bit = 0; bit < log2Of(fullRow); ++bit) {
    const int blockBit = bit - log2Of(rowElements);
    bases[contiguousDim].push_back({blockBit < 0       ? int32_t(1) << bit
                                    : blockBit < slotBits ? (rows * rowElements) << blockBit
                                                          : 0});
  }
  // Along the other: a whole row, with its swizzle's chunk flips.
  for (int bit = 0; bit < log2Of(shape[size_t(1 - contiguousDim)]); ++bit) {
    int32_t flip = size_t(bit) < rowXor.size() ? rowXor[size_t(bit)] : 0;
    bases[1 - contiguousDim].push_back({(rowElements << bit) ^ (flip << chunkBits)});
  }
  return LinearLayout::fromBases({{"dim0", bases[0]}, {"dim1", bases[1]}},
                                 {{"offset", shape[0] * shape[1]}});
}

SharedAccess vectorAccess(const std::string &name, const LinearLayout &distributed,
                          int32_t vectorElements, int elementBits) {
  const int vecBits = log2Of(vectorElements);
  const int64_t bytes = int64_t(vectorElements) * elementBits / 8;
  if (!std::has_single_bit(uint32_t(vectorElements)) ||
      distributed.inDimSize("register") < vectorElements || bytes < 1 || bytes > kAccessBytes)
    throw Error(fmt::format("{}: a vector of {} {}-bit elements needs as many registers and at "
                            "most 16 bytes",
                            name, vectorElements, elementBits));
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
  return {name, LinearLayout::fromBases(bases, outs), int32_t(bytes)};
}

namespace {

/// The tile coordinates each lane of each phase of `access` starts at:
/// computed once, then priced under any number of candidate swizzles.
struct Phases {
  int32_t bytes;
  std::vector<std::vector<std::pair<int32_t, int32_t>>> lanes;
};

Phases phasesOf(const SharedAccess &access) {
  const LinearLayout &l = access.starts;
  if (l.outDims().size() != 2)
    throw Error(fmt::format("{}: shared tiles are 2-D", access.name));
  if (access.bytes < 1 || access.bytes > kAccessBytes)
    throw Error(fmt::format("{}: accesses are 1 to 16 bytes, not {}", access.name, access.bytes));
  const int32_t lanes = l.hasInDim("lane") ? l.inDimSize("lane") : 1;
  const int32_t perPhase = std::max(1, kPhaseBytes / access.bytes);
  Phases p{access.bytes, {}};
  for (auto &others : nonLaneInputs(l))
    for (int32_t first = 0; first < lanes; first += perPhase) {
      auto &phase = p.lanes.emplace_back();
      for (int32_t lane = first; lane < std::min(lanes, first + perPhase); ++lane) {
        auto in = others;
        in.push_back({"lane", lane});
        std::vector<int32_t> c = l.apply(in);
        phase.push_back({c[0], c[1]});
      }
    }
  return p;
}

ConflictCount price(const SharedTile &tile, const Phases &p) {
  ConflictCount count;
  // The distinct 4-byte words each bank serves in one phase (same word:
  // a broadcast, not a conflict). Called thousands of times by
  // deriveSwizzle: plain arrays, no allocation per phase.
  std::array<std::array<int64_t, 32>, kBanks> words;
  std::array<int32_t, kBanks> used;
  for (auto &phase : p.lanes) {
    used.fill(0);
    int32_t wavefronts = 1;
    for (auto [d0, d1] : phase) {
      const int64_t byte = tile.offset(d0, d1);
      for (int64_t word = byte / kBankBytes; word <= (byte + p.bytes - 1) / kBankBytes; ++word) {
        const int bank = int(word % kBanks);
        auto first = words[size_t(bank)].begin(), last = first + used[size_t(bank)];
        if (std::find(first, last, word) == last && used[size_t(bank)] < 32) {
          words[size_t(bank)][size_t(used[size_t(bank)]++)] = word;
          wavefronts = std::max(wavefronts, used[size_t(bank)]);
        }
      }
    }
    ++count.phases;
    count.extraWavefronts += wavefronts - 1;
    count.worst = std::max(count.worst, wavefronts);
  }
  return count;
}

} // namespace

ConflictCount bankConflicts(const SharedTile &tile, const SharedAccess &access) {
  return price(tile, phasesOf(access));
}

SharedTile deriveSwizzle(SharedTile tile, const std::vector<SharedAccess> &accesses) {
  std::vector<Phases> phases;
  for (const SharedAccess &a : accesses)
    phases.push_back(phasesOf(a));
  auto cost = [&](const SharedTile &t) {
    int64_t extra = 0;
    for (const Phases &p : phases)
      extra += price(t, p).extraWavefronts;
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
