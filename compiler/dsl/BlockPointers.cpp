//===- BlockPointers.cpp - tl::make_block_ptr, advance, load, store -------===//
//
// Triton's block pointers, written as what Triton rewrites them into: a
// tile of pointers base + sum_d (offset_d + i_d) * stride_d and, along the
// dimensions whose bounds are checked, the mask 0 <= offset_d + i_d <
// extent_d. The scalar part (offsets times strides) is added to the base
// once; the axis analysis then sees runs where a stride is 1 and masks
// constant over a vector where offsets and extents divide by its width, so
// the accesses vectorise as hand-written ones do. Offsets and products are
// i64, as Triton's: a block of a large tensor does not wrap.
//
//===----------------------------------------------------------------------===//
#include "compiler/dsl/TraceState.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;

namespace tegula::tl {
using namespace tegula::dsl;

namespace {

operand at(const tensor &v, const Loc &loc) { return operand(v, loc); }

void checkMade(const block_ptr &p, const Loc &loc, const char *fn) {
  if (p.block_shape().empty())
    fail(loc, fmt::format("{} on a tl::block_ptr that was never made (use tl::make_block_ptr)", fn));
}

/// Dimensions named by `boundary_check`: each within the rank, none twice.
std::vector<bool> checkedDimensions(const block_ptr &p, const std::vector<int> &boundary_check, const Loc &loc,
                                    const char *fn) {
  std::vector<bool> checked(size_t(p.rank()), false);
  for (int d : boundary_check) {
    if (d < 0 || d >= p.rank())
      fail(loc, fmt::format("{}: boundary_check names dimension {}, but the block has {} (0 to {})", fn, d,
                            p.rank(), p.rank() - 1));
    if (checked[size_t(d)])
      fail(loc, fmt::format("{}: boundary_check names dimension {} twice", fn, d));
    checked[size_t(d)] = true;
  }
  return checked;
}

/// `v` (a 1-D tile along `dim`) shaped to broadcast along the block's other
/// dimensions: by expand_dims (Triton's v[:, None]), whose layouts cost
/// nothing, where a reshape would exchange the elements.
tensor alongDimension(tensor v, int dim, int rank, const Loc &loc) {
  for (int d = 0; d < dim; ++d)
    v = v.expand_dims(0, loc);
  for (int d = dim + 1; d < rank; ++d)
    v = v.expand_dims(d, loc);
  return v;
}

struct BlockAccess {
  tensor pointers;
  tensor mask; // empty when no bound is checked
};

BlockAccess blockAccess(const block_ptr &p, const std::vector<int> &boundary_check, const Loc &loc,
                        const char *fn) {
  checkMade(p, loc, fn);
  const std::vector<bool> checked = checkedDimensions(p, boundary_check, loc, fn);
  const int rank = p.rank();
  // base + sum_d offset_d * stride_d: once, as a scalar.
  tensor start = p.base(loc);
  for (int d = 0; d < rank; ++d)
    start = at(start, loc) + at(at(p.offset(d, loc).to(i64, loc), loc) * at(p.stride(d, loc), loc), loc);
  BlockAccess access{start, tensor()};
  std::vector<std::pair<int, tensor>> unchecked; // (dimension, inside along it)
  for (int d = 0; d < rank; ++d) {
    tensor i = alongDimension(arange(0, int(p.block_shape()[size_t(d)]), loc).to(i64, loc), d, rank, loc);
    access.pointers = at(access.pointers, loc) + at(at(i, loc) * at(p.stride(d, loc), loc), loc);
    tensor index = at(p.offset(d, loc).to(i64, loc), loc) + at(i, loc);
    tensor inside = at(at(index, loc) >= operand(0, loc), loc) & at(at(index, loc) < at(p.extent(d, loc), loc), loc);
    if (checked[size_t(d)]) {
      access.mask = access.mask.impl() ? at(access.mask, loc) & at(inside, loc) : inside;
      continue;
    }
    unchecked.emplace_back(d, inside);
  }
  access.pointers = access.pointers.broadcast_to(p.block_shape(), loc);
  if (access.mask.impl())
    access.mask = access.mask.broadcast_to(p.block_shape(), loc);
  // Unchecked, the block must stay inside the tensor where it is accessed
  // (Triton's rule; elements the checked dimensions mask off are not):
  // past it, compiled code reads the next row's elements or another
  // tensor's. The interpreter says so; the GPU pipeline drops the check.
  TraceState &ts = current(loc);
  for (auto &[d, inside] : unchecked) {
    tensor holds = inside.broadcast_to(p.block_shape(), loc);
    if (access.mask.impl())
      holds = at(holds, loc) | at(!tile_operand(access.mask, loc), loc);
    tile::AssertOp::create(
        ts.builder, toLoc(ts.ctx, loc), unwrap(holds, loc),
        fmt::format("{} through a tl::block_ptr: the block reaches outside the tensor along dimension {}, which "
                    "boundary_check does not name (offset + index must lie in [0, extent)); name {} in "
                    "boundary_check to mask it, or keep the block inside",
                    fn, d, d),
        /*interpreter_only=*/true);
  }
  return access;
}

} // namespace

const tensor &block_ptr::part(size_t i, const char *what, int dim, const Loc &loc) const {
  if (block_.empty())
    fail(loc, fmt::format("tl::block_ptr::{} on a block pointer that was never made (use tl::make_block_ptr)", what));
  if (dim < 0 || dim >= rank())
    fail(loc, fmt::format("tl::block_ptr::{}({}): the block has {} dimensions", what, dim, rank()));
  return values_[i];
}

const tensor &block_ptr::base(Loc loc) const { return part(0, "base", 0, loc); }
const tensor &block_ptr::extent(int dim, Loc loc) const { return part(1 + size_t(dim), "extent", dim, loc); }
const tensor &block_ptr::stride(int dim, Loc loc) const {
  return part(1 + size_t(rank()) + size_t(dim), "stride", dim, loc);
}
const tensor &block_ptr::offset(int dim, Loc loc) const {
  return part(1 + 2 * size_t(rank()) + size_t(dim), "offset", dim, loc);
}

block_ptr make_block_ptr(const tensor &base, const std::vector<operand> &shape, const std::vector<operand> &strides,
                         const std::vector<operand> &offsets, const Shape &block_shape, const std::vector<int> &order,
                         Loc loc) {
  TraceState &ts = current(loc);
  Value b = unwrap(base, loc);
  checkInScope(ts, b, loc);
  if (!isa<tile::PtrType>(elementOf(b)) || !shapeOf(b).empty())
    fail(loc, fmt::format("tl::make_block_ptr needs a pointer scalar as its base, got {}",
                          shapeOf(b).empty() ? describeType(elementOf(b)) : "a " + shapeString(shapeOf(b)) + " tile"));
  const size_t rank = block_shape.size();
  if (rank == 0)
    fail(loc, "tl::make_block_ptr needs a block of at least one dimension");
  if (shape.size() != rank || strides.size() != rank || offsets.size() != rank)
    fail(loc, fmt::format("tl::make_block_ptr: a {}-dimensional block needs {} extents, strides and offsets, got "
                          "{}, {} and {}",
                          rank, rank, shape.size(), strides.size(), offsets.size()));
  checkTileShape(block_shape, loc, "tl::make_block_ptr block");
  block_ptr p;
  p.block_ = block_shape;
  if (order.empty()) {
    p.order_.resize(rank);
    std::iota(p.order_.rbegin(), p.order_.rend(), 0);
  } else {
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> identity(rank);
    std::iota(identity.begin(), identity.end(), 0);
    if (sorted != identity)
      fail(loc, fmt::format("tl::make_block_ptr: order [{}] is not a permutation of the block's {} dimensions",
                            fmt::join(order, ", "), rank));
    p.order_ = order;
  }
  Type i64 = ts.builder.getI64Type(), i32 = ts.builder.getI32Type();
  p.values_.push_back(base);
  for (size_t d = 0; d < rank; ++d)
    p.values_.push_back(wrap(integerScalar(ts, shape[d], i64, fmt::format("tl::make_block_ptr extent {}", d))));
  for (size_t d = 0; d < rank; ++d)
    p.values_.push_back(wrap(integerScalar(ts, strides[d], i64, fmt::format("tl::make_block_ptr stride {}", d))));
  for (size_t d = 0; d < rank; ++d)
    p.values_.push_back(wrap(integerScalar(ts, offsets[d], i32, fmt::format("tl::make_block_ptr offset {}", d))));
  return p;
}

block_ptr advance(const block_ptr &p, const std::vector<operand> &offsets, Loc loc) {
  checkMade(p, loc, "tl::advance");
  TraceState &ts = current(loc);
  if (int(offsets.size()) != p.rank())
    fail(loc, fmt::format("tl::advance: a {}-dimensional block pointer moves by {} offsets, got {}", p.rank(),
                          p.rank(), offsets.size()));
  block_ptr moved = p;
  for (int d = 0; d < p.rank(); ++d) {
    const operand &by = offsets[size_t(d)];
    if (by.kind == operand::Kind::Int && by.i == 0)
      continue; // keeps the offset's value: loop-invariant where it was
    tensor step = wrap(integerScalar(ts, by, ts.builder.getI32Type(), fmt::format("tl::advance offset {}", d)));
    moved.values_[1 + 2 * size_t(p.rank()) + size_t(d)] = at(p.offset(d, loc), loc) + at(step, loc);
  }
  return moved;
}

tensor load(const block_ptr &p, const std::vector<int> &boundary_check, padding pad, const access_hints &hints,
            Loc loc) {
  BlockAccess access = blockAccess(p, boundary_check, loc, "tl::load");
  const DType type = p.base(loc).dtype(loc);
  if (pad == padding::nan && !is_float(type))
    fail(loc, fmt::format("tl::load: padding::nan needs a floating-point block, got {}", dtype_name(type)));
  if (!access.mask.impl())
    return load(access.pointers, hints, loc);
  return load(access.pointers, access.mask, pad == padding::nan ? operand(std::nan(""), loc) : operand(0, loc),
              hints);
}

void store(const block_ptr &p, operand value, const std::vector<int> &boundary_check, const access_hints &hints,
           Loc loc) {
  BlockAccess access = blockAccess(p, boundary_check, loc, "tl::store");
  TraceState &ts = current(loc);
  auto block = RankedTensorType::get(p.block_shape(), cast<tile::PtrType>(elementOf(unwrap(p.base(loc), loc))).getPointeeType());
  const tensor v = wrap(valueToStore(ts, value, block, loc, "tl::store to a tl::block_ptr"));
  if (access.mask.impl())
    store(access.pointers, operand(v, loc), access.mask, hints);
  else
    store(access.pointers, operand(v, loc), hints);
}

} // namespace tegula::tl
