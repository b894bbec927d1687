//===- LinearLayout.cpp - layouts as linear maps over GF(2) ---------------===//
#include "compiler/layout/LinearLayout.h"

#include "tegula/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace tegula::layout {
namespace {

int log2Exact(int32_t size, const char *what) {
  if (size <= 0 || !std::has_single_bit(uint32_t(size)))
    throw Error(fmt::format("layout {} size {} is not a power of two", what, size));
  return std::countr_zero(uint32_t(size));
}

uint64_t lowMask(int bits) { return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1; }

/// Row-echelon basis of a set of GF(2) vectors, remembering for each pivot
/// which input columns combine into it.
struct Echelon {
  // pivot bit -> (vector, combination of input columns)
  std::vector<std::pair<uint64_t, uint64_t>> rows;
  std::vector<int> pivotOf; // vector index by pivot bit (or -1)

  explicit Echelon(int outBits) : pivotOf(size_t(outBits), -1) {}

  /// Reduce `v` (with combination `c`) by the current pivots.
  std::pair<uint64_t, uint64_t> reduce(uint64_t v, uint64_t c) const {
    while (v) {
      int top = 63 - std::countl_zero(v);
      int r = pivotOf[size_t(top)];
      if (r < 0)
        break;
      v ^= rows[size_t(r)].first;
      c ^= rows[size_t(r)].second;
    }
    return {v, c};
  }
  bool insert(uint64_t v, uint64_t c) {
    auto [rv, rc] = reduce(v, c);
    if (!rv)
      return false;
    pivotOf[size_t(63 - std::countl_zero(rv))] = int(rows.size());
    rows.push_back({rv, rc});
    return true;
  }
  /// Fully reduce v to zero; returns the combination, or nullopt when v is
  /// outside the span.
  std::optional<uint64_t> solve(uint64_t v) const {
    uint64_t c = 0;
    while (v) {
      int top = 63 - std::countl_zero(v);
      int r = pivotOf[size_t(top)];
      if (r < 0)
        return std::nullopt;
      v ^= rows[size_t(r)].first;
      c ^= rows[size_t(r)].second;
    }
    return c;
  }
};

Echelon echelonOf(const std::vector<uint64_t> &cols, int outBits) {
  Echelon e(std::max(outBits, 1));
  for (size_t k = 0; k < cols.size(); ++k)
    e.insert(cols[k], uint64_t(1) << k);
  return e;
}

} // namespace

std::string dimName(int d) { return fmt::format("dim{}", d); }

//===----------------------------------------------------------------------===//
// Construction
//===----------------------------------------------------------------------===//

LinearLayout LinearLayout::identity1D(int32_t size, const std::string &inDim,
                                      const std::string &outDim) {
  LinearLayout l;
  int bits = log2Exact(size, "identity");
  l.ins_ = {{inDim, bits}};
  l.outs_ = {{outDim, bits}};
  for (int i = 0; i < bits; ++i)
    l.columns_.push_back(uint64_t(1) << i);
  return l;
}

LinearLayout LinearLayout::zeros1D(int32_t size, const std::string &inDim,
                                   const std::string &outDim, int32_t outSize) {
  LinearLayout l;
  l.ins_ = {{inDim, log2Exact(size, "input")}};
  l.outs_ = {{outDim, log2Exact(outSize, "output")}};
  l.columns_.assign(size_t(l.ins_[0].log2Size), 0);
  return l;
}

LinearLayout LinearLayout::fromBases(
    const std::vector<std::pair<std::string, std::vector<std::vector<int32_t>>>> &bases,
    const std::vector<std::pair<std::string, int32_t>> &outDims) {
  LinearLayout l;
  for (auto &[name, size] : outDims)
    l.outs_.push_back({name, log2Exact(size, "output")});
  if (l.totalOutBits() > 64)
    throw Error("layout has more than 64 output bits");
  for (auto &[name, vecs] : bases) {
    l.ins_.push_back({name, int(vecs.size())});
    for (const auto &v : vecs) {
      if (v.size() != outDims.size())
        throw Error(fmt::format("basis of '{}' has {} coordinates, expected {}", name,
                                v.size(), outDims.size()));
      for (size_t d = 0; d < v.size(); ++d)
        if (v[d] < 0 || v[d] >= outDims[d].second)
          throw Error(fmt::format("basis coordinate {} of '{}' is outside {} (size {})", v[d],
                                  name, outDims[d].first, outDims[d].second));
      l.columns_.push_back(l.joinOut(v));
    }
  }
  if (l.totalInBits() > 64)
    throw Error("layout has more than 64 input bits");
  return l;
}

LinearLayout LinearLayout::operator*(const LinearLayout &o) const {
  LinearLayout r;
  auto merge = [](const std::vector<Dim> &a, const std::vector<Dim> &b) {
    std::vector<Dim> out = a;
    for (const Dim &d : b) {
      auto it = std::find_if(out.begin(), out.end(), [&](const Dim &x) { return x.name == d.name; });
      if (it == out.end())
        out.push_back(d);
      else
        it->log2Size += d.log2Size;
    }
    return out;
  };
  r.ins_ = merge(ins_, o.ins_);
  r.outs_ = merge(outs_, o.outs_);
  if (r.totalInBits() > 64 || r.totalOutBits() > 64)
    throw Error("layout product has more than 64 input or output bits");
  auto logOf = [](const std::vector<Dim> &dims, const std::string &n) {
    for (const Dim &x : dims)
      if (x.name == n)
        return x.log2Size;
    return 0;
  };
  // Move an operand's output mask into the product's output bit positions;
  // the second operand's bits sit above the first's in shared dims.
  auto remap = [&](const LinearLayout &src, uint64_t col, bool second) {
    uint64_t out = 0;
    int off = 0;
    for (const Dim &d : src.outs_) {
      uint64_t bits = (col >> off) & lowMask(d.log2Size);
      out |= bits << (r.outBitOffset(d.name) + (second ? logOf(outs_, d.name) : 0));
      off += d.log2Size;
    }
    return out;
  };
  for (const Dim &d : r.ins_) {
    for (int i = 0, n = logOf(ins_, d.name), off = inBitOffset(d.name); i < n; ++i)
      r.columns_.push_back(remap(*this, columns_[size_t(off + i)], false));
    for (int i = 0, n = logOf(o.ins_, d.name), off = o.inBitOffset(d.name); i < n; ++i)
      r.columns_.push_back(remap(o, o.columns_[size_t(off + i)], true));
  }
  return r;
}

bool LinearLayout::operator==(const LinearLayout &o) const {
  auto same = [](const std::vector<Dim> &a, const std::vector<Dim> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].name != b[i].name || a[i].log2Size != b[i].log2Size)
        return false;
    return true;
  };
  return same(ins_, o.ins_) && same(outs_, o.outs_) && columns_ == o.columns_;
}

//===----------------------------------------------------------------------===//
// Queries
//===----------------------------------------------------------------------===//

bool LinearLayout::hasInDim(const std::string &name) const {
  return std::any_of(ins_.begin(), ins_.end(), [&](const Dim &d) { return d.name == name; });
}
bool LinearLayout::hasOutDim(const std::string &name) const {
  return std::any_of(outs_.begin(), outs_.end(), [&](const Dim &d) { return d.name == name; });
}

int32_t LinearLayout::inDimSize(const std::string &name) const {
  for (const Dim &d : ins_)
    if (d.name == name)
      return int32_t(1) << d.log2Size;
  return 1;
}
int32_t LinearLayout::outDimSize(const std::string &name) const {
  for (const Dim &d : outs_)
    if (d.name == name)
      return int32_t(1) << d.log2Size;
  return 1;
}

int LinearLayout::totalInBits() const {
  int n = 0;
  for (const Dim &d : ins_) n += d.log2Size;
  return n;
}
int LinearLayout::totalOutBits() const {
  int n = 0;
  for (const Dim &d : outs_) n += d.log2Size;
  return n;
}

int LinearLayout::inBitOffset(const std::string &name) const {
  int off = 0;
  for (const Dim &d : ins_) {
    if (d.name == name)
      return off;
    off += d.log2Size;
  }
  return -1;
}
int LinearLayout::outBitOffset(const std::string &name) const {
  int off = 0;
  for (const Dim &d : outs_) {
    if (d.name == name)
      return off;
    off += d.log2Size;
  }
  return -1;
}

std::vector<int32_t> LinearLayout::splitOut(uint64_t bits) const {
  std::vector<int32_t> coords;
  for (const Dim &d : outs_) {
    coords.push_back(int32_t(bits & lowMask(d.log2Size)));
    bits >>= d.log2Size;
  }
  return coords;
}

uint64_t LinearLayout::joinOut(const std::vector<int32_t> &coords) const {
  uint64_t bits = 0;
  int off = 0;
  for (size_t i = 0; i < outs_.size(); ++i) {
    bits |= uint64_t(coords[i]) << off;
    off += outs_[i].log2Size;
  }
  return bits;
}

std::vector<int32_t>
LinearLayout::apply(const std::vector<std::pair<std::string, int32_t>> &ins) const {
  uint64_t out = 0;
  for (auto &[name, value] : ins) {
    int off = inBitOffset(name);
    if (off < 0) {
      if (value != 0)
        throw Error(fmt::format("layout has no input dimension '{}'", name));
      continue;
    }
    if (value < 0 || value >= inDimSize(name))
      throw Error(fmt::format("input {}={} is outside its size {}", name, value, inDimSize(name)));
    for (int i = 0; (value >> i) != 0; ++i)
      if ((value >> i) & 1)
        out ^= columns_[size_t(off + i)];
  }
  return splitOut(out);
}

std::vector<int32_t> LinearLayout::basis(const std::string &inDim, int bit) const {
  int off = inBitOffset(inDim);
  if (off < 0 || bit < 0 || bit >= std::countr_zero(uint32_t(inDimSize(inDim))))
    throw Error(fmt::format("layout has no bit {} of input '{}'", bit, inDim));
  return splitOut(columns_[size_t(off + bit)]);
}

int LinearLayout::rank(std::vector<uint64_t> cols) {
  Echelon e(64);
  int r = 0;
  for (uint64_t c : cols)
    r += e.insert(c, 0);
  return r;
}

bool LinearLayout::isSurjective() const { return rank(columns_) == totalOutBits(); }
bool LinearLayout::isInjective() const { return rank(columns_) == totalInBits(); }

std::vector<int> LinearLayout::freeBits(const std::string &inDim) const {
  std::vector<int> out;
  int off = inBitOffset(inDim);
  if (off < 0)
    return out;
  for (int i = 0; i < std::countr_zero(uint32_t(inDimSize(inDim))); ++i)
    if (columns_[size_t(off + i)] == 0)
      out.push_back(i);
  return out;
}

int32_t LinearLayout::contiguousRegisters(const std::string &outDim) const {
  int regOff = inBitOffset("register"), outOff = outBitOffset(outDim);
  if (regOff < 0 || outOff < 0)
    return 1;
  int regBits = std::countr_zero(uint32_t(inDimSize("register")));
  int k = 0;
  while (k < regBits && columns_[size_t(regOff + k)] == (uint64_t(1) << (outOff + k)) &&
         k < std::countr_zero(uint32_t(outDimSize(outDim))))
    ++k;
  return int32_t(1) << k;
}

//===----------------------------------------------------------------------===//
// Algebra
//===----------------------------------------------------------------------===//

LinearLayout LinearLayout::compose(const LinearLayout &outer) const {
  if (outs_.size() != outer.ins_.size())
    throw Error("compose: output dims of the first layout must be the inputs of the second");
  for (size_t i = 0; i < outs_.size(); ++i)
    if (outs_[i].name != outer.ins_[i].name || outs_[i].log2Size != outer.ins_[i].log2Size)
      throw Error(fmt::format("compose: output '{}' (size {}) does not match input '{}' (size {})",
                              outs_[i].name, 1 << outs_[i].log2Size, outer.ins_[i].name,
                              1 << outer.ins_[i].log2Size));
  LinearLayout r;
  r.ins_ = ins_;
  r.outs_ = outer.outs_;
  for (uint64_t c : columns_) {
    uint64_t out = 0;
    for (int k = 0; c; ++k, c >>= 1)
      if (c & 1)
        out ^= outer.columns_[size_t(k)];
    r.columns_.push_back(out);
  }
  return r;
}

LinearLayout LinearLayout::invert() const {
  if (!isInjective() || !isSurjective())
    throw Error("invert: the layout is not a bijection (it duplicates or misses elements)");
  LinearLayout identity;
  identity.ins_ = outs_;
  identity.outs_ = outs_;
  for (int k = 0; k < totalOutBits(); ++k)
    identity.columns_.push_back(uint64_t(1) << k);
  return identity.invertAndCompose(*this);
}

LinearLayout LinearLayout::invertAndCompose(const LinearLayout &b) const {
  if (outs_.size() != b.outs_.size())
    throw Error("invertAndCompose: layouts have different output dimensions");
  for (size_t i = 0; i < outs_.size(); ++i)
    if (outs_[i].name != b.outs_[i].name || outs_[i].log2Size != b.outs_[i].log2Size)
      throw Error(fmt::format("invertAndCompose: output '{}' differs between the layouts",
                              outs_[i].name));
  if (!b.isSurjective())
    throw Error("invertAndCompose: the target layout does not cover every element");
  Echelon e = echelonOf(b.columns_, b.totalOutBits());
  LinearLayout r;
  r.ins_ = ins_;
  r.outs_ = b.ins_;
  for (uint64_t c : columns_)
    r.columns_.push_back(*e.solve(c));
  return r;
}

LinearLayout LinearLayout::transposeOuts(const std::vector<std::string> &order) const {
  if (order.size() != outs_.size())
    throw Error("transposeOuts: order must name every output dimension once");
  LinearLayout r;
  r.ins_ = ins_;
  for (const std::string &n : order) {
    if (!hasOutDim(n))
      throw Error(fmt::format("transposeOuts: no output dimension '{}'", n));
    r.outs_.push_back({n, std::countr_zero(uint32_t(outDimSize(n)))});
  }
  for (uint64_t c : columns_) {
    std::vector<int32_t> coords = splitOut(c), reordered;
    for (const std::string &n : order)
      for (size_t i = 0; i < outs_.size(); ++i)
        if (outs_[i].name == n)
          reordered.push_back(coords[i]);
    r.columns_.push_back(r.joinOut(reordered));
  }
  return r;
}

LinearLayout LinearLayout::transposeIns(const std::vector<std::string> &order) const {
  if (order.size() != ins_.size())
    throw Error("transposeIns: order must name every input dimension once");
  LinearLayout r;
  r.outs_ = outs_;
  for (const std::string &n : order) {
    int off = inBitOffset(n);
    if (off < 0)
      throw Error(fmt::format("transposeIns: no input dimension '{}'", n));
    int bits = std::countr_zero(uint32_t(inDimSize(n)));
    r.ins_.push_back({n, bits});
    for (int i = 0; i < bits; ++i)
      r.columns_.push_back(columns_[size_t(off + i)]);
  }
  return r;
}

LinearLayout LinearLayout::renameOuts(const std::vector<std::string> &names) const {
  if (names.size() != outs_.size())
    throw Error("renameOuts: one name per output dimension is needed");
  LinearLayout r = *this;
  for (size_t i = 0; i < names.size(); ++i)
    r.outs_[i].name = names[i];
  return r;
}

LinearLayout LinearLayout::sliceOut(const std::string &name) const {
  int off = outBitOffset(name);
  if (off < 0)
    throw Error(fmt::format("sliceOut: no output dimension '{}'", name));
  int bits = std::countr_zero(uint32_t(outDimSize(name)));
  LinearLayout r;
  r.ins_ = ins_;
  for (const Dim &d : outs_)
    if (d.name != name)
      r.outs_.push_back(d);
  for (uint64_t c : columns_) {
    uint64_t low = c & lowMask(off), high = c >> (off + bits);
    r.columns_.push_back(low | (high << off));
  }
  return r;
}

LinearLayout LinearLayout::clampOuts(const std::vector<int32_t> &shape) const {
  if (shape.size() != outs_.size())
    throw Error("clampOuts: shape must have one extent per output dimension");
  LinearLayout r;
  r.ins_ = ins_;
  for (size_t i = 0; i < outs_.size(); ++i)
    r.outs_.push_back({outs_[i].name, std::min(outs_[i].log2Size, log2Exact(shape[i], "shape"))});
  for (uint64_t c : columns_) {
    std::vector<int32_t> coords = splitOut(c);
    bool inside = true;
    for (size_t i = 0; i < coords.size(); ++i)
      inside &= coords[i] < shape[i];
    r.columns_.push_back(inside ? r.joinOut(coords) : 0);
  }
  return r;
}

std::string LinearLayout::toString() const {
  std::string s;
  int off = 0;
  for (const Dim &d : ins_) {
    s += fmt::format("{}:", d.name);
    for (int i = 0; i < d.log2Size; ++i) {
      std::vector<int32_t> c = splitOut(columns_[size_t(off + i)]);
      s += " (";
      for (size_t k = 0; k < c.size(); ++k)
        s += fmt::format("{}{}", k ? "," : "", c[k]);
      s += ")";
    }
    off += d.log2Size;
    s += "\n";
  }
  s += "->";
  for (const Dim &d : outs_)
    s += fmt::format(" {}[{}]", d.name, 1 << d.log2Size);
  return s;
}

//===----------------------------------------------------------------------===//
// Conversions and constructors
//===----------------------------------------------------------------------===//

namespace {
/// Span of the basis vectors of the given input dims, as output masks.
std::vector<uint64_t> columnsOf(const LinearLayout &l, const std::vector<std::string> &dims) {
  std::vector<uint64_t> cols;
  for (const std::string &d : dims) {
    if (!l.hasInDim(d))
      continue;
    int bits = std::countr_zero(uint32_t(l.inDimSize(d)));
    for (int i = 0; i < bits; ++i) {
      std::vector<int32_t> v = l.basis(d, i);
      uint64_t mask = 0;
      int off = 0;
      for (size_t k = 0; k < v.size(); ++k) {
        mask |= uint64_t(v[k]) << off;
        off += std::countr_zero(uint32_t(l.outDimSize(l.outDims()[k].name)));
      }
      cols.push_back(mask);
    }
  }
  return cols;
}

/// Do src and dst hold the same element sets per unit, where a unit is
/// indexed by the input dims in `outer` and spans the dims in `inner`?
bool sameSetsPerUnit(const LinearLayout &src, const LinearLayout &dst,
                     const std::vector<std::string> &inner, const std::vector<std::string> &outer) {
  std::vector<uint64_t> a = columnsOf(src, inner), b = columnsOf(dst, inner);
  int outBits = src.totalOutBits();
  Echelon ea = echelonOf(a, outBits), eb = echelonOf(b, outBits);
  for (uint64_t v : b)
    if (!ea.solve(v)) return false;
  for (uint64_t v : a)
    if (!eb.solve(v)) return false;
  // Each unit's offset must agree modulo the inner span.
  for (const std::string &d : outer) {
    int bits = std::max(std::countr_zero(uint32_t(src.inDimSize(d))),
                        std::countr_zero(uint32_t(dst.inDimSize(d))));
    for (int i = 0; i < bits; ++i) {
      uint64_t va = i < std::countr_zero(uint32_t(src.inDimSize(d))) ? columnsOf(src, {d})[size_t(i)] : 0;
      uint64_t vb = i < std::countr_zero(uint32_t(dst.inDimSize(d))) ? columnsOf(dst, {d})[size_t(i)] : 0;
      if (!ea.solve(va ^ vb))
        return false;
    }
  }
  return true;
}
} // namespace

ConversionKind classifyConversion(const LinearLayout &src, const LinearLayout &dst) {
  if (src == dst)
    return ConversionKind::None;
  if (src.outDims().size() != dst.outDims().size())
    throw Error("classifyConversion: layouts describe tiles of different rank");
  for (size_t i = 0; i < src.outDims().size(); ++i)
    if (src.outDims()[i].name != dst.outDims()[i].name ||
        src.outDims()[i].log2Size != dst.outDims()[i].log2Size)
      throw Error("classifyConversion: layouts describe tiles of different shapes");
  if (sameSetsPerUnit(src, dst, {"register"}, {"lane", "warp"}))
    return ConversionKind::Registers;
  if (sameSetsPerUnit(src, dst, {"register", "lane"}, {"warp"}))
    return ConversionKind::Warp;
  return ConversionKind::SharedMem;
}

const char *toString(ConversionKind kind) {
  switch (kind) {
  case ConversionKind::None: return "none";
  case ConversionKind::Registers: return "registers";
  case ConversionKind::Warp: return "warp";
  case ConversionKind::SharedMem: return "shared-memory";
  }
  return "?";
}

LinearLayout blockedLayout(const std::vector<int32_t> &shape,
                           const std::vector<int32_t> &sizePerThread,
                           const std::vector<int32_t> &threadsPerWarp,
                           const std::vector<int32_t> &warpsPerCTA,
                           const std::vector<int32_t> &order) {
  size_t rank = shape.size();
  if (sizePerThread.size() != rank || threadsPerWarp.size() != rank ||
      warpsPerCTA.size() != rank || order.size() != rank)
    throw Error("blockedLayout: every parameter needs one entry per dimension");
  LinearLayout l;
  for (int32_t d : order)
    l = l * LinearLayout::identity1D(sizePerThread[size_t(d)], "register", dimName(d));
  for (int32_t d : order)
    l = l * LinearLayout::identity1D(threadsPerWarp[size_t(d)], "lane", dimName(d));
  for (int32_t d : order)
    l = l * LinearLayout::identity1D(warpsPerCTA[size_t(d)], "warp", dimName(d));
  // Larger tiles: repeat the pattern in more registers.
  for (int32_t d : order) {
    int32_t covered = sizePerThread[size_t(d)] * threadsPerWarp[size_t(d)] * warpsPerCTA[size_t(d)];
    if (shape[size_t(d)] > covered)
      l = l * LinearLayout::identity1D(shape[size_t(d)] / covered, "register", dimName(d));
  }
  std::vector<std::string> outs;
  for (size_t d = 0; d < rank; ++d)
    outs.push_back(dimName(int(d)));
  std::vector<std::string> ins;
  for (const char *n : {"register", "lane", "warp"})
    if (l.hasInDim(n))
      ins.push_back(n);
  // Smaller tiles: slots past the tile hold duplicates.
  return l.transposeIns(ins).transposeOuts(outs).clampOuts(shape);
}

} // namespace tegula::layout
