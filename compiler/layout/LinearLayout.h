//===- LinearLayout.h - layouts as linear maps over GF(2) -------*- C++ -*-===//
//
// A distributed layout says which hardware slot (register, lane, warp) holds
// which element of a tile. With power-of-two extents every layout Tegula uses
// is *linear over GF(2)*: the coordinate bits of the element held by a slot
// are the XOR of fixed "basis" vectors, one per set bit of the slot index.
//
//   coords(r, l, w) = XOR_{i: bit i of r} B_reg[i]
//                   ^ XOR_{i: bit i of l} B_lane[i]
//                   ^ XOR_{i: bit i of w} B_warp[i]
//
// Blocked, slice, mma and swizzled-shared layouts are constructors; index
// math, conversions, reductions and vector widths are derived from the
// matrix. A zero basis vector means the slot bit does not move the element:
// that slot holds a duplicate (broadcast).
//
// Input and output dimensions are named. The matrix is stored column per
// input bit, each column a bit set over the concatenated output bits.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tegula::layout {

class LinearLayout {
public:
  struct Dim {
    std::string name;
    int log2Size; // the dimension has 1 << log2Size indices
  };

  /// The empty layout: no inputs, no outputs (the unit of operator*).
  LinearLayout() = default;

  /// `inDim` index i maps to `outDim` coordinate i (size a power of two).
  static LinearLayout identity1D(int32_t size, const std::string &inDim,
                                 const std::string &outDim);
  /// Every `inDim` index maps to coordinate 0 of `outDim` (duplicates).
  static LinearLayout zeros1D(int32_t size, const std::string &inDim,
                              const std::string &outDim, int32_t outSize = 1);
  /// Build from explicit basis vectors: bases[in][bit] lists one coordinate
  /// per output dimension. Checks sizes; throws tegula::Error when invalid.
  static LinearLayout fromBases(
      const std::vector<std::pair<std::string, std::vector<std::vector<int32_t>>>> &bases,
      const std::vector<std::pair<std::string, int32_t>> &outDims);

  /// Direct product: input dims with the same name concatenate (this
  /// layout's bits least significant), likewise output dims.
  LinearLayout operator*(const LinearLayout &other) const;
  bool operator==(const LinearLayout &other) const;
  bool operator!=(const LinearLayout &other) const { return !(*this == other); }

  const std::vector<Dim> &inDims() const { return ins_; }
  const std::vector<Dim> &outDims() const { return outs_; }
  bool hasInDim(const std::string &name) const;
  bool hasOutDim(const std::string &name) const;
  int32_t inDimSize(const std::string &name) const;
  int32_t outDimSize(const std::string &name) const;
  int totalInBits() const;
  int totalOutBits() const;

  /// Coordinates (one per output dim, in outDims() order) of the element at
  /// the given input indices (one per input dim, missing ones are 0).
  std::vector<int32_t> apply(const std::vector<std::pair<std::string, int32_t>> &ins) const;
  /// The basis vector of input bit `bit` of `inDim` (one coord per out dim).
  std::vector<int32_t> basis(const std::string &inDim, int bit) const;

  /// this then `outer`: requires outDims() == outer.inDims() (names, sizes).
  LinearLayout compose(const LinearLayout &outer) const;
  /// Inverse of a bijective layout (square, full rank).
  LinearLayout invert() const;
  /// For layouts A (this) and B over the same outputs, the map from A's
  /// inputs to B's inputs that reaches the same element: B^-1 o A. B must be
  /// surjective; where B duplicates, the smallest preimage is chosen.
  LinearLayout invertAndCompose(const LinearLayout &b) const;

  /// Reorder output dims (e.g. to dim0, dim1, ... order).
  LinearLayout transposeOuts(const std::vector<std::string> &order) const;
  /// Reorder input dims.
  LinearLayout transposeIns(const std::vector<std::string> &order) const;
  /// Give the output dims new names (same order and sizes).
  LinearLayout renameOuts(const std::vector<std::string> &names) const;
  /// Drop output dim `name` (a reduction's result: the slice layout).
  LinearLayout sliceOut(const std::string &name) const;
  /// Zero the basis vectors that point outside `shape` (per output dim), so
  /// slots past a small tile hold duplicates instead of phantom elements.
  LinearLayout clampOuts(const std::vector<int32_t> &shape) const;

  /// Every output coordinate is reached by some input.
  bool isSurjective() const;
  /// No two inputs reach the same output (no duplicates).
  bool isInjective() const;
  /// Input bits of `inDim` whose basis is zero (they hold duplicates).
  std::vector<int> freeBits(const std::string &inDim) const;

  /// How many consecutive registers hold consecutive elements along output
  /// dim `outDim`, starting at register 0 (the widest vector access).
  int32_t contiguousRegisters(const std::string &outDim) const;

  std::string toString() const;

private:
  std::vector<Dim> ins_, outs_;
  /// columns_[k] = image of the k-th input bit (bits of all in dims, in
  /// ins_ order, least significant first) as a mask over the output bits.
  std::vector<uint64_t> columns_;

  int inBitOffset(const std::string &name) const;
  int outBitOffset(const std::string &name) const;
  std::vector<int32_t> splitOut(uint64_t bits) const;
  uint64_t joinOut(const std::vector<int32_t> &coords) const;
  static int rank(std::vector<uint64_t> cols);
};

/// Describes how data moves between two layouts of the same tile.
enum class ConversionKind {
  None,      // identical placement
  Registers, // only registers permute, within each thread
  Warp,      // lanes exchange (shuffles), warps keep their data
  SharedMem, // warps exchange: through shared memory
};
ConversionKind classifyConversion(const LinearLayout &src, const LinearLayout &dst);
const char *toString(ConversionKind kind);

/// Triton-style blocked layout over `shape` (row-major dims "dim0", ...):
/// each thread holds sizePerThread contiguous elements, threads and warps
/// tile the rest; `order[0]` is the fastest-varying dimension. Tiles smaller
/// than one pass get duplicates; larger ones get more registers.
LinearLayout blockedLayout(const std::vector<int32_t> &shape,
                           const std::vector<int32_t> &sizePerThread,
                           const std::vector<int32_t> &threadsPerWarp,
                           const std::vector<int32_t> &warpsPerCTA,
                           const std::vector<int32_t> &order);

/// The canonical output dim name for tile dimension d: "dim<d>".
std::string dimName(int d);

} // namespace tegula::layout
