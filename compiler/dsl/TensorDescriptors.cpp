//===- TensorDescriptors.cpp - tl::make_tensor_descriptor, load, store ----===//
#include "compiler/dsl/TraceState.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using tegula::tl::operand;
using tegula::tl::tensor;

namespace tegula::dsl {
namespace {

SmallVector<Value> integerScalars(TraceState &ts, const std::vector<operand> &values, Type type,
                                  const std::source_location &loc, const char *what) {
  SmallVector<Value> out;
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back(integerScalar(ts, values[i], type, fmt::format("{} {}", what, i)));
  return out;
}

tile::TensorDescType descType(const tl::tensor_descriptor &d, const std::source_location &loc,
                              const char *fn) {
  if (!d.handle().impl())
    fail(loc, fmt::format("tl::tensor_descriptor::{} on a descriptor that was never made "
                          "(use tl::make_tensor_descriptor)",
                          fn));
  return cast<tile::TensorDescType>(unwrap(d.handle(), loc).getType());
}

SmallVector<Value> blockOffsets(TraceState &ts, const tl::tensor_descriptor &d,
                                const std::vector<operand> &offsets,
                                const std::source_location &loc, const char *fn) {
  int64_t rank = descType(d, loc, fn).getBlockType().getRank();
  if (int64_t(offsets.size()) != rank)
    fail(loc, fmt::format("tl::tensor_descriptor::{} needs {} offsets (one per dimension), "
                          "got {}",
                          fn, rank, offsets.size()));
  return integerScalars(ts, offsets, ts.builder.getI32Type(), loc, "offset");
}

} // namespace
} // namespace tegula::dsl

namespace tegula::tl {
using namespace tegula::dsl;

tensor_descriptor make_tensor_descriptor(const tensor &base, const std::vector<operand> &shape,
                                         const std::vector<operand> &strides,
                                         const Shape &block_shape, Loc loc) {
  TraceState &ts = current(loc);
  Value b = unwrap(base, loc);
  checkInScope(ts, b, loc);
  auto ptr = dyn_cast<tile::PtrType>(elementOf(b));
  if (!ptr || !shapeOf(b).empty())
    fail(loc, fmt::format("tl::make_tensor_descriptor needs a pointer scalar as its base, got {}",
                          shapeOf(b).empty() ? describeType(elementOf(b))
                                             : "a " + shapeString(shapeOf(b)) + " tile"));
  size_t rank = block_shape.size();
  if (rank < 1 || rank > 5)
    fail(loc, fmt::format("tl::make_tensor_descriptor: the block has {} dimensions; "
                          "descriptors have 1 to 5",
                          rank));
  if (shape.size() != rank || strides.size() != rank)
    fail(loc, fmt::format("tl::make_tensor_descriptor: a {}-dimensional block needs {} extents "
                          "and {} strides, got {} and {}",
                          rank, rank, rank, shape.size(), strides.size()));
  checkTileShape(block_shape, loc, "tl::make_tensor_descriptor block");
  const operand &inner = strides.back();
  if (inner.kind != operand::Kind::Int || inner.i != 1)
    fail(inner.loc, "tl::make_tensor_descriptor: the innermost stride must be the literal 1 "
                    "(TMA reads contiguous rows; transpose with .trans() after loading)");
  auto block = RankedTensorType::get(block_shape, ptr.getPointeeType());
  std::string why;
  {
    llvm::raw_string_ostream os(why);
    auto emit = [&] {
      return mlir::emitError(UnknownLoc::get(ts.ctx));
    };
    ScopedDiagnosticHandler capture(ts.ctx, [&](Diagnostic &diag) {
      os << diag.str();
      return success();
    });
    if (failed(tile::TensorDescType::verify(emit, block)))
      fail(loc, "tl::make_tensor_descriptor: " + why);
  }
  Type i64 = ts.builder.getI64Type();
  auto op = tile::MakeTensorDescriptorOp::create(
      ts.builder, toLoc(ts.ctx, loc), tile::TensorDescType::get(block), b,
      integerScalars(ts, shape, i64, loc, "extent"), integerScalars(ts, strides, i64, loc, "stride"));
  return tensor_descriptor(wrap(op.getResult()));
}

tensor tensor_descriptor::load(const std::vector<operand> &offsets, Loc loc) const {
  TraceState &ts = current(loc);
  auto type = descType(*this, loc, "load");
  SmallVector<Value> at = blockOffsets(ts, *this, offsets, loc, "load");
  return wrap(tile::DescriptorLoadOp::create(ts.builder, toLoc(ts.ctx, loc), type.getBlockType(),
                                             unwrap(handle(), loc), at)
                  .getResult());
}

tensor tensor_descriptor::load(const std::vector<operand> &offsets, multicast_t, Loc loc) const {
  tensor block = load(offsets, loc);
  TraceState &ts = current(loc);
  unwrap(block, loc).getDefiningOp()->setAttr("multicast", UnitAttr::get(ts.ctx));
  return block;
}

void tensor_descriptor::store(const std::vector<operand> &offsets, operand value, Loc loc) const {
  TraceState &ts = current(loc);
  Location l = toLoc(ts.ctx, loc);
  RankedTensorType block = descType(*this, loc, "store").getBlockType();
  SmallVector<Value> at = blockOffsets(ts, *this, offsets, loc, "store");
  Value v = valueToStore(ts, value, block, loc, "tl::tensor_descriptor::store");
  tile::DescriptorStoreOp::create(ts.builder, l, unwrap(handle(), loc), at, v);
}

Shape tensor_descriptor::block_shape(Loc loc) const {
  auto s = descType(*this, loc, "block_shape").getBlockType().getShape();
  return Shape(s.begin(), s.end());
}

DType tensor_descriptor::dtype(Loc loc) const {
  return toDType(descType(*this, loc, "dtype").getBlockType().getElementType());
}

} // namespace tegula::tl
