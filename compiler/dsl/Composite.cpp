//===- Composite.cpp - DSL functions made of other DSL functions -----------===//
//
// tl::clamp, sigmoid, softmax, umulhi, cdiv: what Triton's standard library
// offers beside its primitives, written with the DSL's own ops (so every
// backend runs them as it runs those), each op at the caller's line.
//
//===----------------------------------------------------------------------===//
#include "compiler/dsl/TraceState.h"

#include <fmt/format.h>

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
  auto keep = [&](const tensor &reduced) { return rank == 1 ? reduced : reduced.expand_dims(axis < 0 ? axis + rank : axis, loc); };
  tensor e = exp(at(x, loc) - at(keep(max(x, axis, loc)), loc), loc);
  return at(e, loc) / at(keep(sum(e, axis, loc)), loc);
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

} // namespace tegula::tl
