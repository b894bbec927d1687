//===- Arithmetic.cpp - tl:: creation, shape, elementwise and cast ops ----===//
//
// Binary operators follow one recipe: pick the result element type (C++
// literals are "weak" and adopt the other operand's type), broadcast both
// operands to a common shape, then emit an `arith`/`math` op on tensors.
//
//===----------------------------------------------------------------------===//
#include "compiler/dsl/TraceState.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <bit>

using namespace mlir;
using tegula::tl::operand;
using tegula::tl::tensor;

namespace tegula::dsl {
namespace {

bool isPtr(Type elem) { return isa<tile::PtrType>(elem); }

/// Usual arithmetic conversions between two element types.
Type promote(Builder &b, Type x, Type y) {
  if (x == y)
    return x;
  bool fx = isa<FloatType>(x), fy = isa<FloatType>(y);
  if (fx && fy) {
    if (x.isF64() || y.isF64())
      return b.getF64Type();
    return b.getF32Type(); // f32 with anything, or f16 with bf16
  }
  if (fx)
    return x;
  if (fy)
    return y;
  return x.getIntOrFloatBitWidth() >= y.getIntOrFloatBitWidth() ? x : y;
}

bool fitsIn(int64_t v, unsigned width) {
  return width >= 64 || (v >= -(int64_t(1) << (width - 1)) && v < (int64_t(1) << (width - 1)));
}

/// The element type a literal takes next to a tile of element type `other`:
/// the tile's type when the literal fits (Triton's "weak" scalars), else the
/// smallest of i32/i64 that holds it, which then promotes the tile.
Type literalType(Builder &b, const operand &lit, Type other) {
  Type intType = fitsIn(lit.i, 32) ? b.getI32Type() : b.getI64Type();
  if (isPtr(other))
    return intType;
  if (isa<FloatType>(other))
    return other;
  if (lit.kind == operand::Kind::Float)
    return b.getF32Type();
  if (lit.kind == operand::Kind::Bool)
    return other;
  if (other.isInteger(1) || !fitsIn(lit.i, other.getIntOrFloatBitWidth()))
    return intType.getIntOrFloatBitWidth() > other.getIntOrFloatBitWidth() ? intType : other;
  return other;
}

struct Operands {
  Value a, b;
  Type elem; // common element type (for pointer arithmetic: the pointer type)
  std::vector<int64_t> shape;
};

/// Resolve two operands to values of one element type and shape. With
/// `allowPtr`, a pointer operand keeps its type and the other stays integer.
Operands prepare(TraceState &ts, const operand &x, const operand &y, llvm::StringRef what,
                 bool allowPtr = false) {
  const std::source_location &loc = x.loc;
  Location l = toLoc(ts.ctx, loc);
  bool tx = x.kind == operand::Kind::Tensor, ty = y.kind == operand::Kind::Tensor;
  if (!tx && !ty)
    fail(loc, fmt::format("{} needs at least one tile operand", what.str()));
  Value vx = tx ? unwrap(x.t, loc) : Value();
  Value vy = ty ? unwrap(y.t, loc) : Value();
  Type ex = tx ? elementOf(vx) : Type(), ey = ty ? elementOf(vy) : Type();
  if (!tx)
    ex = literalType(ts.builder, x, ey);
  if (!ty)
    ey = literalType(ts.builder, y, ex);

  Operands out;
  if (isPtr(ex) || isPtr(ey)) {
    if (!allowPtr || (isPtr(ex) && isPtr(ey)))
      fail(loc, fmt::format("{} is not defined for {} and {}", what.str(),
                            describeType(ex), describeType(ey)));
    Type other = isPtr(ex) ? ey : ex;
    if (!isa<IntegerType>(other) || other.isInteger(1))
      fail(loc, fmt::format("pointer offsets must be integers, got {}", describeType(other)));
    out.elem = isPtr(ex) ? ex : ey;
    if (!tx) vx = materializeLiteral(ts, x, ex, l);
    if (!ty) vy = materializeLiteral(ts, y, ey, l);
  } else {
    out.elem = promote(ts.builder, ex, ey);
    rejectFp8(out.elem, loc, what);
    vx = tx ? castTo(ts, vx, out.elem, l) : materializeLiteral(ts, x, out.elem, l);
    vy = ty ? castTo(ts, vy, out.elem, l) : materializeLiteral(ts, y, out.elem, l);
  }
  out.shape = commonShape(shapeOf(vx), shapeOf(vy), loc, what);
  out.a = broadcastTo(ts, vx, out.shape, loc, what);
  out.b = broadcastTo(ts, vy, out.shape, loc, what);
  return out;
}

template <typename IntOp, typename FloatOp>
tensor arith2(const operand &x, const operand &y, llvm::StringRef what) {
  TraceState &ts = current(x.loc);
  Operands o = prepare(ts, x, y, what);
  Location l = toLoc(ts.ctx, x.loc);
  if (isa<FloatType>(o.elem)) {
    if constexpr (std::is_void_v<FloatOp>)
      fail(x.loc, fmt::format("{} needs integer operands, got {}", what.str(),
                              describeType(o.elem)));
    else
      return wrap(FloatOp::create(ts.builder, l, o.a, o.b));
  }
  if constexpr (std::is_void_v<IntOp>)
    fail(x.loc, fmt::format("{} needs floating-point operands, got {}", what.str(),
                            describeType(o.elem)));
  else
    return wrap(IntOp::create(ts.builder, l, o.a, o.b));
}

arith::CmpIPredicate unsignedPredicate(arith::CmpIPredicate p) {
  switch (p) {
  case arith::CmpIPredicate::slt: return arith::CmpIPredicate::ult;
  case arith::CmpIPredicate::sle: return arith::CmpIPredicate::ule;
  case arith::CmpIPredicate::sgt: return arith::CmpIPredicate::ugt;
  case arith::CmpIPredicate::sge: return arith::CmpIPredicate::uge;
  default: return p;
  }
}

tensor compare(const operand &x, const operand &y, arith::CmpIPredicate ip,
               arith::CmpFPredicate fp, llvm::StringRef what) {
  TraceState &ts = current(x.loc);
  Operands o = prepare(ts, x, y, what);
  Location l = toLoc(ts.ctx, x.loc);
  if (isa<FloatType>(o.elem))
    return wrap(arith::CmpFOp::create(ts.builder, l, fp, o.a, o.b));
  if (o.elem.isInteger(1)) // booleans order false < true: compare unsigned
    ip = unsignedPredicate(ip);
  return wrap(arith::CmpIOp::create(ts.builder, l, ip, o.a, o.b));
}

/// pointer +/- integer -> tile.addptr.
tensor pointerOffset(TraceState &ts, Operands &o, bool negate, const std::source_location &loc) {
  Location l = toLoc(ts.ctx, loc);
  Value ptr = isPtr(elementOf(o.a)) ? o.a : o.b;
  Value off = ptr == o.a ? o.b : o.a;
  if (negate) {
    if (ptr != o.a)
      fail(loc, "cannot subtract a pointer from an integer");
    Value zero = materializeLiteral(ts, operand(0, loc), elementOf(off), l);
    zero = broadcastTo(ts, zero, shapeOf(off), loc, "operator-");
    off = arith::SubIOp::create(ts.builder, l, zero, off);
  }
  return wrap(tile::AddPtrOp::create(ts.builder, l, ptr.getType(), ptr, off));
}

Value floatOperand(TraceState &ts, const tensor &x, const std::source_location &loc,
                   llvm::StringRef fn) {
  Value v = unwrap(x, loc);
  if (!isa<FloatType>(elementOf(v)))
    fail(loc, fmt::format("tl::{} needs a floating-point tile, got {}; convert it "
                          "with .to(tl::f32)",
                          fn.str(), describeType(elementOf(v))));
  rejectFp8(elementOf(v), loc, "tl::" + fn.str());
  return v;
}

template <typename MathOp>
tensor unaryFloat(const tensor &x, const std::source_location &loc, llvm::StringRef fn) {
  TraceState &ts = current(loc);
  Value v = floatOperand(ts, x, loc, fn);
  return wrap(MathOp::create(ts.builder, toLoc(ts.ctx, loc), v));
}

} // namespace
} // namespace tegula::dsl

namespace tegula::tl {
using namespace tegula::dsl;

//===----------------------------------------------------------------------===//
// tensor
//===----------------------------------------------------------------------===//

// (The type alone: not a read of the value.)
DType tensor::dtype(Loc loc) const { return toDType(elementOf(unwrapForType(*this, loc))); }
bool tensor::is_pointer(Loc loc) const {
  return isa<tile::PtrType>(elementOf(unwrapForType(*this, loc)));
}
Shape tensor::shape(Loc loc) const {
  auto s = shapeOf(unwrapForType(*this, loc));
  return Shape(s.begin(), s.end());
}
std::string tensor::type_str(Loc loc) const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << unwrapForType(*this, loc).getType();
  return s;
}

tensor tensor::to(DType t, Loc loc) const { return cast(*this, t, loc); }

tensor tensor::bitcast(DType t, Loc loc) const {
  TraceState &ts = current(loc);
  Value v = unwrap(*this, loc);
  Type from = elementOf(v), to = toMlirType(ts.ctx, t);
  if (isPtr(from))
    fail(loc, "pointers cannot be bitcast to other element types");
  if (from == to)
    return *this;
  if (from.isInteger(1) || to.isInteger(1) || from.getIntOrFloatBitWidth() != to.getIntOrFloatBitWidth())
    fail(loc, fmt::format("bitcast needs element types of one width (i1 has none): {} is {} bits, {} is {}",
                          describeType(from), from.isInteger(1) ? 1 : from.getIntOrFloatBitWidth(),
                          describeType(to), to.isInteger(1) ? 1 : to.getIntOrFloatBitWidth()));
  return wrap(arith::BitcastOp::create(ts.builder, toLoc(ts.ctx, loc), withElement(v.getType(), to), v));
}

tensor tensor::expand_dims(int axis, Loc loc) const {
  TraceState &ts = current(loc);
  Value v = unwrap(*this, loc);
  auto shape = shapeOf(v);
  int rank = int(shape.size());
  int given = axis;
  if (axis < 0)
    axis += rank + 1;
  if (axis < 0 || axis > rank)
    fail(loc, fmt::format("expand_dims axis {} is out of range for a {} value", given,
                          shapeString(shape)));
  if (rank == 0)
    return wrap(tile::SplatOp::create(ts.builder, toLoc(ts.ctx, loc),
                                      RankedTensorType::get({1}, v.getType()), v));
  SmallVector<int64_t> out(shape);
  out.insert(out.begin() + axis, 1);
  return wrap(tile::ExpandDimsOp::create(ts.builder, toLoc(ts.ctx, loc),
                                         RankedTensorType::get(out, elementOf(v)), v,
                                         ts.builder.getI32IntegerAttr(axis)));
}

tensor tensor::broadcast_to(const Shape &shape, Loc loc) const {
  TraceState &ts = current(loc);
  return wrap(broadcastTo(ts, unwrap(*this, loc), shape, loc, "broadcast_to"));
}

tensor tensor::reshape(const Shape &shape, Loc loc) const {
  TraceState &ts = current(loc);
  Value v = unwrap(*this, loc);
  if (shape.empty())
    fail(loc, "reshape needs at least one dimension (tiles cannot become scalars; "
              "reduce with tl::sum/max instead)");
  checkTileShape(shape, loc, "reshape");
  int64_t have = 1, want = 1;
  for (int64_t d : shapeOf(v)) have *= d;
  for (int64_t d : shape) want *= d;
  if (have != want)
    fail(loc, fmt::format("cannot reshape {} ({} elements) to {} ({} elements)",
                          shapeString(shapeOf(v)), have, shapeString(shape), want));
  if (shapeOf(v).empty())
    return wrap(broadcastTo(ts, v, shape, loc, "reshape"));
  return wrap(tile::ReshapeOp::create(ts.builder, toLoc(ts.ctx, loc),
                                      RankedTensorType::get(shape, elementOf(v)), v));
}

tensor tensor::trans(Loc loc) const {
  Value v = unwrap(*this, loc);
  if (shapeOf(v).size() != 2)
    fail(loc, fmt::format("trans() needs a 2-D tile, got {}; use permute() for other "
                          "ranks",
                          shapeString(shapeOf(v))));
  return permute({1, 0}, loc);
}

tensor tensor::permute(const std::vector<int> &order, Loc loc) const {
  TraceState &ts = current(loc);
  Value v = unwrap(*this, loc);
  auto shape = shapeOf(v);
  if (shape.empty())
    fail(loc, "permute needs a tile, got a scalar");
  std::vector<bool> seen(shape.size(), false);
  SmallVector<int64_t> out;
  SmallVector<int32_t> ord;
  if (order.size() != shape.size())
    fail(loc, fmt::format("permute order has {} entries, the tile {} has rank {}",
                          order.size(), shapeString(shape), shape.size()));
  for (int d : order) {
    if (d < 0 || d >= int(shape.size()) || seen[size_t(d)])
      fail(loc, fmt::format("permute order must be a permutation of 0..{} for a {} tile",
                            shape.size() - 1, shapeString(shape)));
    seen[d] = true;
    out.push_back(shape[d]);
    ord.push_back(d);
  }
  return wrap(tile::TransOp::create(ts.builder, toLoc(ts.ctx, loc),
                                    RankedTensorType::get(out, elementOf(v)), v, ord));
}

//===----------------------------------------------------------------------===//
// Creation
//===----------------------------------------------------------------------===//

tensor program_id(int axis, Loc loc) {
  TraceState &ts = current(loc);
  if (axis < 0 || axis > 2)
    fail(loc, fmt::format("program_id axis must be 0, 1 or 2, got {}", axis));
  return wrap(tile::ProgramIdOp::create(ts.builder, toLoc(ts.ctx, loc),
                                        tile::ProgramAxis(axis)));
}

tensor num_programs(int axis, Loc loc) {
  TraceState &ts = current(loc);
  if (axis < 0 || axis > 2)
    fail(loc, fmt::format("num_programs axis must be 0, 1 or 2, got {}", axis));
  return wrap(tile::NumProgramsOp::create(ts.builder, toLoc(ts.ctx, loc),
                                          tile::ProgramAxis(axis)));
}

tensor cluster_size(Loc loc) {
  TraceState &ts = current(loc);
  return wrap(tile::ClusterSizeOp::create(ts.builder, toLoc(ts.ctx, loc), ts.builder.getI32Type()).getResult());
}

tensor arange(int start, int end, Loc loc) {
  TraceState &ts = current(loc);
  int64_t n = int64_t(end) - int64_t(start);
  if (n <= 0)
    fail(loc, fmt::format("arange({}, {}) is empty", start, end));
  if (!std::has_single_bit(uint64_t(n)))
    fail(loc, fmt::format("arange({}, {}) has {} elements; tile extents must be powers "
                          "of two (round up and mask the tail)",
                          start, end, n));
  checkTileShape({n}, loc, "arange");
  auto type = RankedTensorType::get({n}, ts.builder.getI32Type());
  return wrap(tile::MakeRangeOp::create(ts.builder, toLoc(ts.ctx, loc), type, start, end));
}

tensor scalar_const(operand value, DType dtype, Loc loc) {
  TraceState &ts = current(loc);
  if (value.kind == operand::Kind::Tensor)
    return cast(value.t, dtype, loc);
  return wrap(materializeLiteral(ts, value, toMlirType(ts.ctx, dtype), toLoc(ts.ctx, loc)));
}

tensor full(const Shape &shape, operand value, DType dtype, Loc loc) {
  TraceState &ts = current(loc);
  if (shape.empty()) // a rank-0 "tile" is a scalar
    return scalar_const(value, dtype, loc);
  checkTileShape(shape, loc, "tl::full");
  Type elem = toMlirType(ts.ctx, dtype);
  Location l = toLoc(ts.ctx, loc);
  if (value.kind == operand::Kind::Tensor) {
    Value raw = unwrap(value.t, loc);
    requireNumber(raw, loc, "the tl::full value");
    Value v = castTo(ts, raw, elem, l);
    if (!shapeOf(v).empty())
      fail(loc, "tl::full needs a scalar value");
    return wrap(broadcastTo(ts, v, shape, loc, "tl::full"));
  }
  auto type = RankedTensorType::get(shape, elem);
  TypedAttr attr = isa<FloatType>(elem)
                       ? TypedAttr(ts.builder.getFloatAttr(
                             elem, value.kind == operand::Kind::Float ? value.f
                                                                      : double(value.i)))
                       : TypedAttr(ts.builder.getIntegerAttr(
                             elem, elem.isInteger(1) ? int64_t(value.i != 0)
                                                     : int64_t(value.i)));
  if (isa<IntegerType>(elem) && value.kind == operand::Kind::Float)
    fail(loc, fmt::format("cannot fill a {} tile with {}", dtype_name(dtype), value.f));
  checkLiteralFits(value, elem);
  return wrap(arith::ConstantOp::create(ts.builder, l, type,
                                        SplatElementsAttr::get(type, attr)));
}

tensor zeros(const Shape &shape, DType dtype, Loc loc) { return full(shape, 0, dtype, loc); }

//===----------------------------------------------------------------------===//
// Operators
//===----------------------------------------------------------------------===//

tensor operator+(operand a, operand b) {
  TraceState &ts = current(a.loc);
  Operands o = prepare(ts, a, b, "operator+", /*allowPtr=*/true);
  if (isPtr(o.elem))
    return pointerOffset(ts, o, false, a.loc);
  Location l = toLoc(ts.ctx, a.loc);
  if (isa<FloatType>(o.elem))
    return wrap(arith::AddFOp::create(ts.builder, l, o.a, o.b));
  return wrap(arith::AddIOp::create(ts.builder, l, o.a, o.b));
}

tensor operator-(operand a, operand b) {
  TraceState &ts = current(a.loc);
  Operands o = prepare(ts, a, b, "operator-", /*allowPtr=*/true);
  if (isPtr(o.elem))
    return pointerOffset(ts, o, true, a.loc);
  Location l = toLoc(ts.ctx, a.loc);
  if (isa<FloatType>(o.elem))
    return wrap(arith::SubFOp::create(ts.builder, l, o.a, o.b));
  return wrap(arith::SubIOp::create(ts.builder, l, o.a, o.b));
}

tensor operator*(operand a, operand b) {
  return arith2<arith::MulIOp, arith::MulFOp>(a, b, "operator*");
}
tensor operator/(operand a, operand b) {
  return arith2<arith::DivSIOp, arith::DivFOp>(a, b, "operator/");
}
tensor operator%(operand a, operand b) {
  return arith2<arith::RemSIOp, arith::RemFOp>(a, b, "operator%");
}
tensor operator&(operand a, operand b) { return arith2<arith::AndIOp, void>(a, b, "operator&"); }
tensor operator|(operand a, operand b) { return arith2<arith::OrIOp, void>(a, b, "operator|"); }
tensor operator^(operand a, operand b) { return arith2<arith::XOrIOp, void>(a, b, "operator^"); }
tensor operator<<(operand a, operand b) { return arith2<arith::ShLIOp, void>(a, b, "operator<<"); }
tensor operator>>(operand a, operand b) {
  return arith2<arith::ShRSIOp, void>(a, b, "operator>>");
}

tensor operator<(operand a, operand b) {
  return compare(a, b, arith::CmpIPredicate::slt, arith::CmpFPredicate::OLT, "operator<");
}
tensor operator<=(operand a, operand b) {
  return compare(a, b, arith::CmpIPredicate::sle, arith::CmpFPredicate::OLE, "operator<=");
}
tensor operator>(operand a, operand b) {
  return compare(a, b, arith::CmpIPredicate::sgt, arith::CmpFPredicate::OGT, "operator>");
}
tensor operator>=(operand a, operand b) {
  return compare(a, b, arith::CmpIPredicate::sge, arith::CmpFPredicate::OGE, "operator>=");
}
tensor operator==(operand a, operand b) {
  return compare(a, b, arith::CmpIPredicate::eq, arith::CmpFPredicate::OEQ, "operator==");
}
tensor operator!=(operand a, operand b) {
  return compare(a, b, arith::CmpIPredicate::ne, arith::CmpFPredicate::UNE, "operator!=");
}

tensor operator-(tile_operand a) {
  TraceState &ts = current(a.loc);
  Value v = unwrap(a.t, a.loc);
  Location l = toLoc(ts.ctx, a.loc);
  rejectFp8(elementOf(v), a.loc, "operator-");
  if (isa<FloatType>(elementOf(v)))
    return wrap(arith::NegFOp::create(ts.builder, l, v));
  if (isPtr(elementOf(v)))
    fail(a.loc, "cannot negate a pointer");
  return operand(0, a.loc) - operand(a.t, a.loc);
}

tensor operator!(tile_operand a) {
  current(a.loc);
  Value v = unwrap(a.t, a.loc);
  if (!elementOf(v).isInteger(1))
    fail(a.loc, fmt::format("operator! needs a boolean (i1) tile, got {}; compare "
                            "with 0 first",
                            describeType(elementOf(v))));
  return operand(a.t, a.loc) ^ operand(true, a.loc);
}

tensor operator~(tile_operand a) {
  current(a.loc);
  Value v = unwrap(a.t, a.loc);
  if (!isa<IntegerType>(elementOf(v)))
    fail(a.loc, fmt::format("operator~ needs an integer tile, got {}",
                            describeType(elementOf(v))));
  // A mask's one bit flipped: logical not, as Triton's `~mask` (C++ would
  // promote to int, ~true == -2, which is no mask at all).
  if (elementOf(v).isInteger(1))
    return operand(a.t, a.loc) ^ operand(true, a.loc);
  return operand(a.t, a.loc) ^ operand(-1, a.loc);
}

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

tensor exp(const tensor &x, Loc loc) { return unaryFloat<math::ExpOp>(x, loc, "exp"); }
tensor exp2(const tensor &x, Loc loc) { return unaryFloat<math::Exp2Op>(x, loc, "exp2"); }
tensor log(const tensor &x, Loc loc) { return unaryFloat<math::LogOp>(x, loc, "log"); }
tensor log2(const tensor &x, Loc loc) { return unaryFloat<math::Log2Op>(x, loc, "log2"); }
tensor sqrt(const tensor &x, Loc loc) { return unaryFloat<math::SqrtOp>(x, loc, "sqrt"); }
tensor rsqrt(const tensor &x, Loc loc) { return unaryFloat<math::RsqrtOp>(x, loc, "rsqrt"); }
tensor tanh(const tensor &x, Loc loc) { return unaryFloat<math::TanhOp>(x, loc, "tanh"); }
tensor erf(const tensor &x, Loc loc) { return unaryFloat<math::ErfOp>(x, loc, "erf"); }
tensor sin(const tensor &x, Loc loc) { return unaryFloat<math::SinOp>(x, loc, "sin"); }
tensor cos(const tensor &x, Loc loc) { return unaryFloat<math::CosOp>(x, loc, "cos"); }
tensor floor(const tensor &x, Loc loc) { return unaryFloat<math::FloorOp>(x, loc, "floor"); }
tensor ceil(const tensor &x, Loc loc) { return unaryFloat<math::CeilOp>(x, loc, "ceil"); }
tensor tan(const tensor &x, Loc loc) { return unaryFloat<math::TanOp>(x, loc, "tan"); }
tensor asin(const tensor &x, Loc loc) { return unaryFloat<math::AsinOp>(x, loc, "asin"); }
tensor acos(const tensor &x, Loc loc) { return unaryFloat<math::AcosOp>(x, loc, "acos"); }
tensor atan(const tensor &x, Loc loc) { return unaryFloat<math::AtanOp>(x, loc, "atan"); }
tensor sinh(const tensor &x, Loc loc) { return unaryFloat<math::SinhOp>(x, loc, "sinh"); }
tensor cosh(const tensor &x, Loc loc) { return unaryFloat<math::CoshOp>(x, loc, "cosh"); }
tensor asinh(const tensor &x, Loc loc) { return unaryFloat<math::AsinhOp>(x, loc, "asinh"); }
tensor acosh(const tensor &x, Loc loc) { return unaryFloat<math::AcoshOp>(x, loc, "acosh"); }
tensor atanh(const tensor &x, Loc loc) { return unaryFloat<math::AtanhOp>(x, loc, "atanh"); }
tensor expm1(const tensor &x, Loc loc) { return unaryFloat<math::ExpM1Op>(x, loc, "expm1"); }
tensor log1p(const tensor &x, Loc loc) { return unaryFloat<math::Log1pOp>(x, loc, "log1p"); }
tensor log10(const tensor &x, Loc loc) { return unaryFloat<math::Log10Op>(x, loc, "log10"); }
tensor erfc(const tensor &x, Loc loc) { return unaryFloat<math::ErfcOp>(x, loc, "erfc"); }
tensor cbrt(const tensor &x, Loc loc) { return unaryFloat<math::CbrtOp>(x, loc, "cbrt"); }
tensor trunc(const tensor &x, Loc loc) { return unaryFloat<math::TruncOp>(x, loc, "trunc"); }
tensor round(const tensor &x, Loc loc) { return unaryFloat<math::RoundOp>(x, loc, "round"); }
tensor rint(const tensor &x, Loc loc) { return unaryFloat<math::RoundEvenOp>(x, loc, "rint"); }

namespace {
/// A two-operand float function: operands broadcast and promoted like `+`.
template <typename MathOp> tensor binaryFloat(operand a, operand b, const char *fn) {
  const Loc &loc = a.kind == operand::Kind::Tensor ? a.loc : b.loc;
  TraceState &ts = current(loc);
  if (a.kind != operand::Kind::Tensor && b.kind != operand::Kind::Tensor)
    fail(loc, fmt::format("{} needs at least one tile operand", fn));
  Operands o = prepare(ts, a, b, fn);
  if (!isa<FloatType>(o.elem))
    fail(loc, fmt::format("{} needs floating-point operands, got {}", fn, describeType(o.elem)));
  rejectFp8(o.elem, loc, fn);
  return wrap(MathOp::create(ts.builder, toLoc(ts.ctx, loc), o.a, o.b));
}
} // namespace

tensor pow(operand x, operand y) { return binaryFloat<math::PowFOp>(x, y, "tl::pow"); }
tensor atan2(operand y, operand x) { return binaryFloat<math::Atan2Op>(y, x, "tl::atan2"); }
tensor copysign(operand x, operand y) { return binaryFloat<math::CopySignOp>(x, y, "tl::copysign"); }

tensor abs(const tensor &x, Loc loc) {
  TraceState &ts = current(loc);
  Value v = unwrap(x, loc);
  rejectFp8(elementOf(v), loc, "tl::abs");
  if (isa<FloatType>(elementOf(v)))
    return wrap(math::AbsFOp::create(ts.builder, toLoc(ts.ctx, loc), v));
  if (isPtr(elementOf(v)))
    fail(loc, "tl::abs is not defined for pointers");
  return wrap(math::AbsIOp::create(ts.builder, toLoc(ts.ctx, loc), v));
}

/// max/min: NaN-propagating for floats, unsigned for booleans (true > false).
template <typename FOp, typename SIOp, typename UIOp>
tensor extremum(const operand &a, const operand &b, llvm::StringRef what) {
  TraceState &ts = current(a.loc);
  Operands o = prepare(ts, a, b, what);
  Location l = toLoc(ts.ctx, a.loc);
  if (isa<FloatType>(o.elem))
    return wrap(FOp::create(ts.builder, l, o.a, o.b));
  if (o.elem.isInteger(1))
    return wrap(UIOp::create(ts.builder, l, o.a, o.b));
  return wrap(SIOp::create(ts.builder, l, o.a, o.b));
}

tensor maximum(operand a, operand b) {
  return extremum<arith::MaximumFOp, arith::MaxSIOp, arith::MaxUIOp>(a, b, "tl::maximum");
}
tensor minimum(operand a, operand b) {
  return extremum<arith::MinimumFOp, arith::MinSIOp, arith::MinUIOp>(a, b, "tl::minimum");
}

tensor fma(operand a, operand b, operand c) {
  const Loc &loc = a.loc;
  TraceState &ts = current(loc);
  const operand *tile = a.kind == operand::Kind::Tensor   ? &a
                        : b.kind == operand::Kind::Tensor ? &b
                        : c.kind == operand::Kind::Tensor ? &c
                                                          : nullptr;
  if (!tile)
    fail(loc, "tl::fma needs at least one tile operand");
  // Each operand against a tile: then the element type and shape of all three.
  Operands pa = prepare(ts, *tile, a, "tl::fma"), pb = prepare(ts, *tile, b, "tl::fma"),
           pc = prepare(ts, *tile, c, "tl::fma");
  Type elem = promote(ts.builder, promote(ts.builder, pa.elem, pb.elem), pc.elem);
  if (!isa<FloatType>(elem))
    fail(loc, fmt::format("tl::fma needs floating-point operands, got {}", describeType(elem)));
  auto shape = commonShape(commonShape(pa.shape, pb.shape, loc, "tl::fma"), pc.shape, loc, "tl::fma");
  Location l = toLoc(ts.ctx, loc);
  auto ready = [&](Value v) { return broadcastTo(ts, castTo(ts, v, elem, l), shape, loc, "tl::fma"); };
  return wrap(math::FmaOp::create(ts.builder, l, ready(pa.b), ready(pb.b), ready(pc.b)));
}

tensor fdiv(operand a, operand b) {
  const Loc &loc = a.loc;
  TraceState &ts = current(loc);
  if (a.kind != operand::Kind::Tensor && b.kind != operand::Kind::Tensor)
    fail(loc, "tl::fdiv needs at least one tile operand");
  Operands o = prepare(ts, a, b, "tl::fdiv");
  if (!isa<FloatType>(o.elem))
    fail(loc, fmt::format("tl::fdiv needs floating-point operands, got {}", describeType(o.elem)));
  // afn: the lowering's mark for the approximate quotient - f32 only (NVPTX
  // would widen an afn f16/bf16 division to an approximate f32 one).
  auto approximate = arith::FastMathFlagsAttr::get(
      ts.ctx, o.elem.isF32() ? arith::FastMathFlags::afn : arith::FastMathFlags::none);
  return wrap(arith::DivFOp::create(ts.builder, toLoc(ts.ctx, loc), o.a, o.b, approximate));
}

tensor rcp(const tensor &x, Loc loc) {
  TraceState &ts = current(loc);
  Value v = floatOperand(ts, x, loc, "rcp");
  Location l = toLoc(ts.ctx, loc);
  TypedAttr one = ts.builder.getFloatAttr(elementOf(v), 1.0);
  Value ones = isa<RankedTensorType>(v.getType())
                   ? Value(arith::ConstantOp::create(ts.builder, l, v.getType(),
                                                     SplatElementsAttr::get(cast<ShapedType>(v.getType()), one)))
                   : Value(arith::ConstantOp::create(ts.builder, l, v.getType(), one));
  // afn + arcp: the lowering's mark for the approximate reciprocal - f32
  // only; other types divide exactly.
  auto approximate = arith::FastMathFlagsAttr::get(ts.ctx, elementOf(v).isF32()
                                                               ? arith::FastMathFlags::afn | arith::FastMathFlags::arcp
                                                               : arith::FastMathFlags::none);
  return wrap(arith::DivFOp::create(ts.builder, l, ones, v, approximate));
}

tensor tanh_approx(const tensor &x, Loc loc) {
  TraceState &ts = current(loc);
  Value v = floatOperand(ts, x, loc, "tanh_approx");
  // afn: the lowering's mark for tanh.approx.f32 - f32 only; other types
  // take tanh's exact lowering.
  auto approximate = arith::FastMathFlagsAttr::get(
      ts.ctx, elementOf(v).isF32() ? arith::FastMathFlags::afn : arith::FastMathFlags::none);
  return wrap(math::TanhOp::create(ts.builder, toLoc(ts.ctx, loc), v, approximate));
}

tensor where(const tensor &cond, operand a, operand b) {
  const Loc &loc = a.loc;
  TraceState &ts = current(loc);
  Value c = unwrap(cond, loc);
  if (!elementOf(c).isInteger(1))
    fail(loc, fmt::format("tl::where needs a boolean (i1) condition, got {}",
                          describeType(elementOf(c))));
  if (a.kind != operand::Kind::Tensor && b.kind != operand::Kind::Tensor) {
    // Two literals: f32 if either is a float, else i32 (i1 for two bools).
    DType t = a.kind == operand::Kind::Float || b.kind == operand::Kind::Float ? DType::f32
              : a.kind == operand::Kind::Bool && b.kind == operand::Kind::Bool ? DType::i1
                                                                              : DType::i32;
    return where(cond, operand(scalar_const(a, t, a.loc), a.loc), b);
  }
  // Two pointer tiles of one type choose per element between them (a load
  // from one of two buffers); a pointer beside a number is a mistake.
  if (a.kind == operand::Kind::Tensor && b.kind == operand::Kind::Tensor) {
    Value pa = unwrap(a.t, loc), pb = unwrap(b.t, loc);
    if (isPtr(elementOf(pa)) || isPtr(elementOf(pb))) {
      if (elementOf(pa) != elementOf(pb))
        fail(loc, fmt::format("tl::where picks between two pointer tiles of one type, got {} and {}",
                              describeType(elementOf(pa)), describeType(elementOf(pb))));
      auto shape = commonShape(commonShape(shapeOf(c), shapeOf(pa), loc, "tl::where"), shapeOf(pb), loc, "tl::where");
      return wrap(arith::SelectOp::create(ts.builder, toLoc(ts.ctx, loc), broadcastTo(ts, c, shape, loc, "tl::where"),
                                          broadcastTo(ts, pa, shape, loc, "tl::where"),
                                          broadcastTo(ts, pb, shape, loc, "tl::where")));
    }
  }
  Operands o = prepare(ts, a, b, "tl::where");
  auto shape = commonShape(shapeOf(c), o.shape, loc, "tl::where");
  c = broadcastTo(ts, c, shape, loc, "tl::where");
  Value x = broadcastTo(ts, o.a, shape, loc, "tl::where");
  Value y = broadcastTo(ts, o.b, shape, loc, "tl::where");
  return wrap(arith::SelectOp::create(ts.builder, toLoc(ts.ctx, loc), c, x, y));
}

tensor cast(const tensor &x, DType t, Loc loc) {
  TraceState &ts = current(loc);
  Value v = unwrap(x, loc);
  if (isPtr(elementOf(v)))
    fail(loc, "pointers cannot be converted to other element types");
  return wrap(castTo(ts, v, toMlirType(ts.ctx, t), toLoc(ts.ctx, loc)));
}

} // namespace tegula::tl
