//===- Hints.cpp - tl::multiple_of and tl::max_contiguous ------------------===//
//
// Promises about a tile's values the compiler cannot prove (an offset loaded
// from memory, a modulo that loses the analysis), so that loads and stores
// through them may use 16-byte vectors. Both build one tile.assume (a hint
// on a hint merges into one op over the original value); the interpreter
// checks the promise on every launch, the compiled code relies on it.
//
//===----------------------------------------------------------------------===//
#include "compiler/dsl/TraceState.h"

#include "dialects/tile/TileDialect.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

using namespace mlir;

namespace tegula::tl {

namespace {

enum class Hint { Divisibility, Contiguity };

/// `x` with `values` (one per dimension, or one for all; a scalar takes one)
/// merged into the promise `which`.
tensor hint(const tensor &x, std::vector<int> values, Hint which, const char *fn, const Loc &loc) {
  dsl::TraceState &ts = dsl::current(loc);
  Value v = dsl::unwrap(x, loc);
  Type elem = dsl::elementOf(v);
  if (!isa<IntegerType>(elem) || elem.isInteger(1))
    dsl::fail(loc, fmt::format("{} describes integer offsets, got {}", fn, dsl::describeType(elem)));
  const auto shape = dsl::shapeOf(v);
  const size_t rank = shape.size();
  if (values.size() == 1 && rank > 1)
    values.assign(rank, values[0]);
  if (values.size() != std::max<size_t>(rank, 1))
    dsl::fail(loc, fmt::format("{} takes one value or one per dimension of {}, got {} values", fn,
                               x.type_str(loc), values.size()));
  for (size_t d = 0; d < values.size(); ++d) {
    if (values[d] < 1 || (values[d] & (values[d] - 1)) != 0)
      dsl::fail(loc, fmt::format("{}'s values are powers of two, got {}", fn, values[d]));
    if (which == Hint::Contiguity && (rank == 0 || values[d] > shape[d]))
      dsl::fail(loc, fmt::format("{}: a run of {} along dimension {} does not fit {}", fn, values[d], d,
                                 x.type_str(loc)));
  }
  // Merge with a hint already on x: one op over the hinted value.
  SmallVector<int64_t> divisibility(std::max<size_t>(rank, 1), 1), contiguity(rank, 1);
  if (auto prior = v.getDefiningOp<tile::AssumeOp>()) {
    divisibility.assign(prior.getDivisibility().begin(), prior.getDivisibility().end());
    contiguity.assign(prior.getContiguity().begin(), prior.getContiguity().end());
    v = prior.getSrc();
  }
  auto &target = which == Hint::Divisibility ? divisibility : contiguity;
  for (size_t d = 0; d < values.size(); ++d)
    target[d] = std::max<int64_t>(target[d], values[d]);
  return dsl::wrap(tile::AssumeOp::create(ts.builder, dsl::toLoc(ts.ctx, loc), v,
                                          ts.builder.getDenseI64ArrayAttr(divisibility),
                                          ts.builder.getDenseI64ArrayAttr(contiguity)));
}

} // namespace

tensor multiple_of(const tensor &x, int value, Loc loc) {
  return hint(x, {value}, Hint::Divisibility, "tl::multiple_of", loc);
}
tensor multiple_of(const tensor &x, const std::vector<int> &values, Loc loc) {
  return hint(x, values, Hint::Divisibility, "tl::multiple_of", loc);
}
tensor max_contiguous(const tensor &x, int value, Loc loc) {
  return hint(x, {value}, Hint::Contiguity, "tl::max_contiguous", loc);
}
tensor max_contiguous(const tensor &x, const std::vector<int> &values, Loc loc) {
  return hint(x, values, Hint::Contiguity, "tl::max_contiguous", loc);
}

} // namespace tegula::tl
