//===- Composite.cpp - DSL functions made of other DSL functions -----------===//
//
// tl::clamp, sigmoid, softmax, umulhi, cdiv, swizzle2d, zeros_like, full_like,
// join, split, interleave, cat, flip:
// what Triton's standard library offers beside its primitives, written with
// the DSL's own ops (so every backend runs them as it runs those), each op
// at the caller's line.
//
//===----------------------------------------------------------------------===//
#include "compiler/dsl/TraceState.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace tegula::tl {

namespace {

/// `v` as an operand located at the caller's line.
operand at(const tensor &v, const Loc &loc) { return operand(v, loc); }

void needFloat(const tensor &x, const char *fn, const Loc &loc) {
  if (x.is_pointer(loc) || !is_float(x.dtype(loc)))
    dsl::fail(loc, fmt::format("{} needs a floating-point tile, got {}", fn, x.type_str(loc)));
}

} // namespace

tensor clamp(operand x, operand lo, operand hi) {
  return minimum(operand(maximum(x, lo), x.loc), hi);
}

tensor sigmoid(const tensor &x, Loc loc) {
  needFloat(x, "tl::sigmoid", loc);
  return operand(1.0f, loc) / at(operand(1.0f, loc) + at(exp(-tile_operand(x, loc), loc), loc), loc);
}

tensor softmax(const tensor &x, int axis, Loc loc) {
  needFloat(x, "tl::softmax", loc);
  const int rank = x.rank(loc);
  if (rank == 0)
    dsl::fail(loc, "tl::softmax needs a tile, got a scalar");
  // Along `axis`, as a tile of the input's rank (a 1-D tile's reduction is
  // a scalar, which broadcasts as it is).
  tensor e = exp(at(x, loc) - at(max(x, axis, /*keep_dims=*/rank > 1, loc), loc), loc);
  return at(e, loc) / at(sum(e, axis, /*keep_dims=*/rank > 1, loc), loc);
}

tensor umulhi(const tensor &a, const tensor &b, Loc loc) {
  for (const tensor *t : {&a, &b})
    if (t->is_pointer(loc) || t->dtype(loc) != i32)
      dsl::fail(loc, fmt::format("tl::umulhi takes i32 tiles (unsigned words' bits), got {}", t->type_str(loc)));
  auto word = [&](const tensor &t) { return operand(t.to(i64, loc), loc) & operand(0xffffffffLL, loc); };
  tensor product = at(word(a), loc) * at(word(b), loc);
  return (at(product, loc) >> operand(32LL, loc)).to(i32, loc);
}

tensor cdiv(operand a, operand b) {
  const Loc loc = a.kind == operand::Kind::Tensor ? a.loc : b.loc;
  for (const operand *o : {&a, &b})
    if (o->kind == operand::Kind::Float ||
        (o->kind == operand::Kind::Tensor && (o->t.is_pointer(loc) || !is_int(o->t.dtype(loc)))))
      dsl::fail(loc, "tl::cdiv divides integers");
  if (a.kind != operand::Kind::Tensor && b.kind != operand::Kind::Tensor)
    dsl::fail(loc, "tl::cdiv needs at least one tile or scalar operand (for two numbers, use tegula::cdiv)");
  return operand(operand(a + b, loc) - operand(1, loc), loc) / b;
}

std::pair<tensor, tensor> swizzle2d(operand i, operand j, operand size_i, operand size_j, operand size_g, Loc loc) {
  const operand *all[] = {&i, &j, &size_i, &size_j, &size_g};
  for (const operand *o : all)
    if (o->kind == operand::Kind::Float || o->kind == operand::Kind::Bool ||
        (o->kind == operand::Kind::Tensor && (o->t.is_pointer(loc) || !is_int(o->t.dtype(loc)))))
      dsl::fail(loc, "tl::swizzle2d takes integers");
  if (size_g.kind == operand::Kind::Int && size_g.i <= 0)
    dsl::fail(loc, fmt::format("tl::swizzle2d: size_g must be positive, got {}", size_g.i));
  if (std::none_of(std::begin(all), std::end(all), [](const operand *o) { return o->kind == operand::Kind::Tensor; }))
    dsl::fail(loc, "tl::swizzle2d needs at least one tile or scalar operand (all are numbers)");
  auto at = [&](tensor v) { return operand(v, loc); };
  // Literals as i32 scalars (i64 past its range), so that every step below
  // has a tile or scalar operand.
  auto value = [&](const operand &o) {
    if (o.kind == operand::Kind::Tensor)
      return at(o.t);
    return at(full({}, operand(o.i, loc), o.i < INT32_MIN || o.i > INT32_MAX ? i64 : i32, loc));
  };
  // The linear index, its group (size_g rows of size_j), the group's first
  // row and height, and the index within the group, walked column-major.
  tensor ij = at(value(i) * value(size_j)) + value(j);
  tensor groupSize = value(size_g) * value(size_j);
  tensor firstRow = at(at(ij) / at(groupSize)) * value(size_g);
  tensor rows = minimum(at(value(size_i) - at(firstRow)), value(size_g));
  tensor inGroup = at(ij) % at(groupSize);
  return {at(firstRow) + at(at(inGroup) % at(rows)), at(inGroup) / at(rows)};
}

tensor zeros_like(const tensor &x, Loc loc) {
  if (x.is_pointer(loc))
    dsl::fail(loc, fmt::format("tl::zeros_like needs a tile of numbers, got {}", x.type_str(loc)));
  return zeros(x.shape(loc), x.dtype(loc), loc);
}

tensor full_like(const tensor &x, operand value, Loc loc) {
  if (x.is_pointer(loc))
    dsl::fail(loc, fmt::format("tl::full_like needs a tile of numbers, got {}", x.type_str(loc)));
  return full(x.shape(loc), value, x.dtype(loc), loc);
}

//===----------------------------------------------------------------------===//
// join, split, interleave, cat: a new last dimension of two, made and taken
// apart with selects (exact: no arithmetic on the values).
//===----------------------------------------------------------------------===//

namespace {

/// [1, ..., 1, 2] (i32): 0 and 1 along a last dimension of `rank` + 1.
tensor pairIndex(int rank, const Loc &loc) {
  Shape shape(size_t(rank), 1);
  shape.push_back(2);
  return arange(0, 2, loc).reshape(shape, loc);
}

/// join, split and sort move numbers and booleans: not pointers, and not
/// fp8 (which has no selects or compares of its own: widen it first).
void needValues(const tensor &x, const char *fn, const Loc &loc) {
  if (x.is_pointer(loc) || x.dtype(loc) == f8e4m3 || x.dtype(loc) == f8e5m2)
    dsl::fail(loc, fmt::format("{} takes numbers or booleans, got {}{}", fn, x.type_str(loc),
                               x.is_pointer(loc) ? "" : " (widen fp8 with .to(tl::f16) first)"));
}

} // namespace

tensor join(const tensor &a, const tensor &b, Loc loc) {
  needValues(a, "tl::join", loc);
  needValues(b, "tl::join", loc);
  if (a.shape(loc) != b.shape(loc) || a.type_str(loc) != b.type_str(loc))
    dsl::fail(loc, fmt::format("tl::join takes two tiles of one shape and type, got {} and {}", a.type_str(loc),
                               b.type_str(loc)));
  const int rank = a.rank(loc);
  Shape shape = a.shape(loc);
  shape.push_back(2);
  tensor first = at(pairIndex(rank, loc), loc) == operand(0, loc);
  return where(first.broadcast_to(shape, loc), at(a.expand_dims(rank, loc).broadcast_to(shape, loc), loc),
               at(b.expand_dims(rank, loc).broadcast_to(shape, loc), loc));
}

std::pair<tensor, tensor> split(const tensor &x, Loc loc) {
  needValues(x, "tl::split", loc);
  const Shape shape = x.shape(loc);
  if (shape.empty() || shape.back() != 2)
    dsl::fail(loc, fmt::format("tl::split takes a tile whose last dimension is 2, got {}", x.type_str(loc)));
  const int axis = int(shape.size()) - 1;
  tensor index = pairIndex(axis, loc).broadcast_to(shape, loc);
  // Each half is the element whose index is k: a pick that is the same in
  // any order the reduction combines its two elements.
  auto half = [&](int k) {
    return reduce(
        std::vector<tensor>{x, index}, axis,
        [&](const std::vector<tensor> &p, const std::vector<tensor> &q) {
          tensor mine = at(p[1], loc) == operand(k, loc);
          return std::vector<tensor>{where(mine, at(p[0], loc), at(q[0], loc)),
                                     where(mine, at(p[1], loc), at(q[1], loc))};
        },
        /*keep_dims=*/false, loc)[0];
  };
  return {half(0), half(1)};
}

tensor interleave(const tensor &a, const tensor &b, Loc loc) {
  Shape shape = a.shape(loc);
  if (shape.empty())
    dsl::fail(loc, "tl::interleave takes tiles, got scalars (tl::join makes a pair of them)");
  tensor pairs = join(a, b, loc);
  shape.back() *= 2;
  return pairs.reshape(shape, loc);
}

tensor cat(const tensor &a, const tensor &b, Loc loc) {
  Shape shape = a.shape(loc);
  if (shape.empty())
    dsl::fail(loc, "tl::cat takes tiles, got scalars (tl::join makes a pair of them)");
  const int rank = int(shape.size());
  // [..., 2] -> [2, ...] -> [2 d0, d1, ...]: a's rows, then b's.
  std::vector<int> order = {rank};
  for (int d = 0; d < rank; ++d)
    order.push_back(d);
  shape.front() *= 2;
  return join(a, b, loc).permute(order, loc).reshape(shape, loc);
}

tensor flip(const tensor &x, int dim, Loc loc) {
  const Shape shape = x.shape(loc);
  const int rank = int(shape.size());
  if (rank == 0)
    dsl::fail(loc, "tl::flip takes a tile, got a scalar");
  if (dim < -rank || dim >= rank)
    dsl::fail(loc, fmt::format("tl::flip: dim {} is not a dimension of {}", dim, x.type_str(loc)));
  if (dim < 0)
    dim += rank;
  const int n = int(shape[size_t(dim)]);
  if (n == 1)
    return x;
  Shape along(size_t(rank), 1);
  along[size_t(dim)] = n;
  tensor reversed = operand(n - 1, loc) - at(arange(0, n, loc), loc);
  return gather(x, reversed.reshape(along, loc).broadcast_to(shape, loc), dim, loc);
}

//===----------------------------------------------------------------------===//
// sort: a bitonic network along the last dimension, each compare-and-swap
// step on pairs taken apart and put back with split / join (values move
// bit for bit).
//===----------------------------------------------------------------------===//

tensor sort(const tensor &x, int dim, bool descending, Loc loc) {
  const Shape shape = x.shape(loc);
  const int rank = int(shape.size());
  if (rank == 0)
    dsl::fail(loc, "tl::sort needs a tile, got a scalar");
  if (dim != -1 && dim != rank - 1)
    dsl::fail(loc, fmt::format("tl::sort sorts along the last dimension ({} of {}), not {}", rank - 1,
                               x.type_str(loc), dim));
  needValues(x, "tl::sort", loc);
  int64_t outer = 1;
  for (int d = 0; d + 1 < rank; ++d)
    outer *= shape[size_t(d)];
  const int64_t n = shape.back();
  int stages = 0;
  while ((int64_t(1) << stages) < n)
    ++stages;
  tensor y = x.reshape({outer, n}, loc);
  // a above b, with NaN above every number (as argmax's NaN wins, and
  // torch's sort): with `>` alone NaN compares with nothing, and a network
  // that meets one leaves the numbers around it out of order.
  const bool floats = is_float(x.dtype(loc));
  auto above = [&](const tensor &a, const tensor &b) {
    tensor gt = at(a, loc) > at(b, loc);
    if (!floats)
      return gt;
    tensor nanOverNumber = at(at(a, loc) != at(a, loc), loc) & at(at(b, loc) == at(b, loc), loc);
    return at(gt, loc) | at(nanOverNumber, loc);
  };
  // Merge runs of 2^s (s = 1 .. stages): partners `d` apart (d = 2^(s-1)
  // .. 1) compare; a pair in an odd run of 2^s sorts the other way, so the
  // next stage merges a rising and a falling run; the last stage goes the
  // asked way.
  for (int s = 1; s <= stages; ++s)
    for (int64_t d = int64_t(1) << (s - 1); d >= 1; d /= 2) {
      const int64_t groups = n / (2 * d), rows = outer * groups;
      // [rows, 2, d] -> [rows, d, 2]: element (r, k, q) is at r % groups * 2d + k d + q of its row.
      auto [a, b] = split(y.reshape({rows, 2, d}, loc).permute({0, 2, 1}, loc), loc);
      // Out of order: a above b on a rising run, below it on a falling one.
      tensor swap = descending ? above(b, a) : above(a, b);
      if (s < stages) {
        tensor row = at(arange(0, int(rows), loc), loc) % operand(int(groups), loc);
        tensor first = at(at(row.expand_dims(1, loc), loc) * operand(int(2 * d), loc), loc) +
                       at(arange(0, int(d), loc).expand_dims(0, loc), loc);
        tensor bit = at(at(first, loc) >> operand(s, loc), loc) & operand(1, loc);
        tensor falling = at(bit, loc) == operand(1, loc);
        swap = where(falling, at(above(b, a), loc), at(above(a, b), loc));
      }
      tensor lo = where(swap, at(b, loc), at(a, loc)), hi = where(swap, at(a, loc), at(b, loc));
      y = join(lo, hi, loc).permute({0, 2, 1}, loc).reshape({outer, n}, loc);
    }
  return y.reshape(shape, loc);
}

} // namespace tegula::tl
