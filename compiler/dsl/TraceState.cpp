//===- TraceState.cpp - trace context, types and shared helpers -----------===//
#include "compiler/dsl/TraceState.h"
#include "compiler/SourceLine.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"

#include <atomic>
#include <cmath>

using namespace mlir;

namespace tegula::dsl {

namespace {
thread_local TraceState *activeTrace = nullptr;
std::atomic<uint64_t> nextTraceId{1};
} // namespace

TraceState::TraceState(MLIRContext *c) : ctx(c), builder(c), id(nextTraceId++) {}

TraceState *activeTraceState() { return activeTrace; }

TraceState &current(const std::source_location &loc) {
  if (!activeTrace)
    fail(loc, "tl:: operations can only be used while a kernel is traced "
              "(call them from a function passed to tegula::kernel)");
  return *activeTrace;
}

TraceScope::TraceScope(TraceState *state) : previous(activeTrace) {
  activeTrace = state;
}
TraceScope::~TraceScope() { activeTrace = previous; }

void fail(const std::source_location &loc, const std::string &message) {
  throw Error(fmt::format("{}:{}: error: {}", loc.file_name(), loc.line(), message));
}

Location toLoc(MLIRContext *ctx, const std::source_location &loc) {
  return FileLineColLoc::get(ctx, loc.file_name(), loc.line(), loc.column());
}

Value unwrap(const tl::tensor &t, const std::source_location &loc) {
  Value v = unwrapForType(t, loc);
  tl::detail::note_read(t, loc);
  return v;
}

Value unwrapForType(const tl::tensor &t, const std::source_location &loc) {
  if (!t.impl())
    fail(loc, "use of an empty tl::tensor (declared but never assigned)");
  if (!activeTrace || t.trace_id() != activeTrace->id)
    fail(loc, "this tl::tensor belongs to another kernel trace (was it kept in a global "
              "or static variable?); tiles are only valid inside the kernel call that "
              "made them");
  Value v = Value::getFromOpaquePointer(t.impl());
  checkInScope(*activeTrace, v, loc);
  return v;
}

void openFrame(TraceState &ts, TraceFrame::Kind kind, Operation *op, const std::vector<tl::tensor *> *carried,
               const std::source_location &loc) {
  TraceFrame frame;
  frame.kind = kind, frame.serial = ts.nextFrameSerial++, frame.op = op, frame.carried = carried, frame.loc = loc;
  ts.frames.push_back(std::move(frame));
  openAssignScope(ts, ts.frames.back().serial);
}
void closeFrame(TraceState &ts) {
  if (ts.frames.empty())
    return;
  const TraceFrame &f = ts.frames.back();
  llvm::DenseMap<const tl::tensor *, void *> entered = closeAssignScope(ts);
  // An uncarried object the body gave a value from outside the loop holds
  // it after the loop only if the loop ran (AssignScope.cpp). Carried ones
  // become the loop's results.
  if (std::uncaught_exceptions() == 0) {
    Block *body = &f.op->getRegions().back().front(); // scf.for's body, scf.while's "after"
    for (auto [object, before] : entered) {
      if (object->impl() == before || !object->impl() || (f.carried && llvm::is_contained(*f.carried, object)))
        continue;
      Value now = Value::getFromOpaquePointer(object->impl());
      Operation *definedIn = now.getParentRegion() ? now.getParentRegion()->getParentOp() : nullptr;
      if (!definedIn || !f.op->isAncestor(definedIn)) // made inside: the scope check refuses it already
        makeUnusableAfter(ts, *object, now, body);
    }
  }
  ts.frames.pop_back();
}
std::string staleReadMessage(const TraceFrame &f, const std::string &where, const std::string &what) {
  const bool isRange = f.kind == TraceFrame::Kind::Range;
  return fmt::format("{}: error: this reads a variable from before the {} loop (line {}) that the loop then {} "
                     "without carrying it, so every iteration would read the value from before the loop; list it "
                     "as carried: {} (or give the loop a variable of its own)",
                     where, isRange ? "tl::range" : "tl::while_", f.loc.line(), what,
                     isRange ? "tl::range(lo, hi, step, var)" : "tl::while_(cond, body, var)");
}

namespace {
/// The same value, or equal constants (two tl::zeros of one shape), `a`
/// visible in `block` (a value made in an inner loop or branch is no reset:
/// that may not have run).
bool sameValue(void *a, void *b, Block *block) {
  if (a == b)
    return true;
  if (!a || !b)
    return false;
  Region *defined = Value::getFromOpaquePointer(a).getParentRegion();
  if (!block || !defined || !defined->isAncestor(block->getParent()))
    return false;
  auto ca = Value::getFromOpaquePointer(a).getDefiningOp<arith::ConstantOp>();
  auto cb = Value::getFromOpaquePointer(b).getDefiningOp<arith::ConstantOp>();
  return ca && cb && ca.getValue() == cb.getValue();
}
} // namespace

void throwIfStale(TraceState &ts) {
  if (ts.frames.empty())
    return;
  const TraceFrame &f = ts.frames.back();
  // The first in program order that does not hold its value again.
  const TraceFrame::Reassigned *first = nullptr;
  for (const auto &[object, r] : f.reassigned)
    if (!sameValue(object->impl(), r.before, ts.builder.getInsertionBlock()) && (!first || r.order < first->order))
      first = &r;
  if (first)
    throw Error(first->error);
  if (f.unjudged)
    throw Error(*f.unjudged);
  if (!f.replacedRead)
    return;
  const std::source_location &at = *f.replacedRead;
  const std::source_location &line = at.line() ? at : f.loc;
  throw Error(staleReadMessage(f, fmt::format("{}:{}", line.file_name(), line.line()),
                               "replaces as a whole (a std::vector<tl::tensor> move-assigned or cleared in the "
                               "loop)"));
}

FrameGuard::FrameGuard(TraceState &state, TraceFrame::Kind kind, Operation *op,
                       const std::vector<tl::tensor *> *carried, const std::source_location &loc)
    : ts(state) {
  openFrame(ts, kind, op, carried, loc);
}
FrameGuard::~FrameGuard() { closeFrame(ts); }

tl::tensor wrap(Value v) {
  return tl::tensor::from_impl(v.getAsOpaquePointer(), activeTrace ? activeTrace->id : 0);
}

void checkInScope(TraceState &ts, Value v, const std::source_location &loc) {
  Block *block = ts.builder.getInsertionBlock();
  if (!block)
    return;
  Region *defRegion = v.getParentRegion();
  if (!defRegion || defRegion->isAncestor(block->getParent()))
    return;
  // The value was made inside a loop body or branch that is now closed:
  // name the outermost closed construct (the one the user is now outside of).
  Operation *owner = defRegion->getParentOp();
  while (owner->getParentRegion() &&
         !owner->getParentRegion()->isAncestor(block->getParent()))
    owner = owner->getParentOp();
  std::string line;
  if (auto fileLoc = dyn_cast<FileLineColLoc>(owner->getLoc()))
    line = fmt::format(" (line {})", fileLoc.getLine());
  if (isa<scf::IfOp>(owner))
    fail(loc, fmt::format("this value was computed inside a tl::if_ branch{} and cannot be "
                          "used after it; return it from both branches: "
                          "x = tl::if_(c, [&] {{ return ...; }}, [&] {{ return ...; }})",
                          line));
  if (isa<scf::WhileOp>(owner))
    fail(loc, fmt::format("this value was computed inside a tl::while_ loop{} and cannot be used outside "
                          "its condition or body; list the variable as a carried value: "
                          "tl::while_(cond, body, var)",
                          line));
  fail(loc, fmt::format("this value was computed inside a tl::range loop body{} and cannot "
                        "be used after it; list the variable as a carried value: "
                        "tl::range(lo, hi, step, var)",
                        line));
}

Type toMlirType(MLIRContext *ctx, DType t) {
  Builder b(ctx);
  switch (t) {
  case DType::i1: return b.getI1Type();
  case DType::i8: return b.getI8Type();
  case DType::i16: return b.getI16Type();
  case DType::i32: return b.getI32Type();
  case DType::i64: return b.getI64Type();
  case DType::f16: return b.getF16Type();
  case DType::bf16: return b.getBF16Type();
  case DType::f32: return b.getF32Type();
  case DType::f64: return b.getF64Type();
  case DType::f8e4m3: return b.getType<Float8E4M3FNType>();
  case DType::f8e5m2: return b.getType<Float8E5M2Type>();
  }
  llvm_unreachable("unknown DType");
}

DType toDType(Type elem) {
  if (auto ptr = dyn_cast<tile::PtrType>(elem))
    elem = ptr.getPointeeType();
  if (elem.isInteger(1)) return DType::i1;
  if (elem.isInteger(8)) return DType::i8;
  if (elem.isInteger(16)) return DType::i16;
  if (elem.isInteger(32)) return DType::i32;
  if (elem.isInteger(64)) return DType::i64;
  if (elem.isF16()) return DType::f16;
  if (elem.isBF16()) return DType::bf16;
  if (elem.isF32()) return DType::f32;
  if (elem.isF64()) return DType::f64;
  if (isa<Float8E4M3FNType>(elem)) return DType::f8e4m3;
  if (isa<Float8E5M2Type>(elem)) return DType::f8e5m2;
  throw Error("internal error: no DType for an MLIR type");
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

llvm::ArrayRef<int64_t> shapeOf(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return t.getShape();
  return {};
}

Type elementOf(Value v) { return tile::getElementTypeOrSelf(v.getType()); }

Type withElement(Type like, Type elem) {
  if (auto t = dyn_cast<RankedTensorType>(like))
    return t.clone(elem);
  return elem;
}

std::string describeType(Type elem) {
  if (auto p = dyn_cast<tile::PtrType>(elem))
    return fmt::format("pointer to {}", dtype_name(toDType(p.getPointeeType())));
  return std::string(dtype_name(toDType(elem)));
}

std::vector<int64_t> commonShape(llvm::ArrayRef<int64_t> x, llvm::ArrayRef<int64_t> y,
                                 const std::source_location &loc, llvm::StringRef what) {
  size_t rank = std::max(x.size(), y.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t dx = i < rank - x.size() ? 1 : x[i - (rank - x.size())];
    int64_t dy = i < rank - y.size() ? 1 : y[i - (rank - y.size())];
    if (dx != dy && dx != 1 && dy != 1)
      fail(loc, fmt::format("shapes {} and {} are not compatible in {}: dimension "
                            "{} is {} vs {}",
                            shapeString(x), shapeString(y), what.str(), i, dx, dy));
    out[i] = dx == 1 ? dy : dx;
  }
  return out;
}

void checkTileShape(llvm::ArrayRef<int64_t> shape, const std::source_location &loc,
                    llvm::StringRef what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0 || !llvm::isPowerOf2_64(uint64_t(d)))
      fail(loc, fmt::format("{}: tile extents must be positive powers of two, got {}",
                            what.str(), shapeString(shape)));
    n *= d;
    if (n > kMaxTileElements)
      fail(loc, fmt::format("{}: a tile of shape {} has more than {} elements; split the "
                            "work over more programs",
                            what.str(), shapeString(shape), kMaxTileElements));
  }
}

void requireNumber(Value v, const std::source_location &loc, llvm::StringRef what) {
  if (isa<tile::PtrType>(elementOf(v)))
    fail(loc, fmt::format("{} must be a number, got a {}", what.str(),
                          describeType(elementOf(v))));
}

void checkLiteralFits(const tl::operand &o, Type type) {
  if (auto ft = dyn_cast<FloatType>(type)) {
    // A finite literal the type cannot hold would silently become inf (NaN
    // in fp8 e4m3, which has no inf): -1e30 as a fill that f16 makes -inf
    // turns exp(x - max) of a fully masked row into NaN.
    if (o.kind != tl::operand::Kind::Float && o.kind != tl::operand::Kind::Int)
      return;
    const double v = o.kind == tl::operand::Kind::Float ? o.f : double(o.i);
    if (!std::isfinite(v))
      return;
    llvm::APFloat converted(v);
    bool lost = false;
    converted.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    if (converted.isFinite())
      return;
    llvm::APFloat largest = llvm::APFloat::getLargest(ft.getFloatSemantics());
    bool ignored = false;
    largest.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &ignored);
    fail(o.loc, fmt::format("the literal {:g} is out of range for {} (largest finite value {:g}): it would become "
                            "{}; compute in a wider type (x.to(tl::f32)) or write {} if that is meant",
                            v, describeType(type), largest.convertToDouble(), converted.isNaN() ? "NaN" : "inf",
                            v < 0 ? "-INFINITY" : "INFINITY"));
  }
  unsigned w = type.getIntOrFloatBitWidth();
  int64_t v = o.i;
  if (o.kind == tl::operand::Kind::Int && w > 1 && w < 64 &&
      (v < -(int64_t(1) << (w - 1)) || v >= (int64_t(1) << (w - 1))))
    fail(o.loc, fmt::format("the integer {} does not fit in {}", v, describeType(type)));
}

Value materializeLiteral(TraceState &ts, const tl::operand &o, Type type, Location loc) {
  OpBuilder &b = ts.builder;
  if (auto ft = dyn_cast<FloatType>(type)) {
    checkLiteralFits(o, ft);
    double v = o.kind == tl::operand::Kind::Float ? o.f : double(o.i);
    return arith::ConstantOp::create(b, loc, ft, b.getFloatAttr(ft, v));
  }
  auto it = cast<IntegerType>(type);
  if (o.kind == tl::operand::Kind::Float)
    fail(o.loc, fmt::format("cannot use the floating-point literal {} as {}", o.f,
                            dtype_name(toDType(type))));
  checkLiteralFits(o, type);
  int64_t v = it.getWidth() == 1 ? o.i != 0 : o.i;
  return arith::ConstantOp::create(b, loc, it, b.getIntegerAttr(it, v));
}

Value broadcastTo(TraceState &ts, Value v, llvm::ArrayRef<int64_t> shape,
                  const std::source_location &loc, llvm::StringRef what) {
  OpBuilder &b = ts.builder;
  Location l = toLoc(ts.ctx, loc);
  auto src = shapeOf(v);
  if (src == shape)
    return v;
  Type elem = elementOf(v);
  auto target = RankedTensorType::get(shape, elem);
  if (src.empty())
    return tile::SplatOp::create(b, l, target, v);
  checkTileShape(shape, loc, what);
  if (src.size() > shape.size())
    fail(loc, fmt::format("cannot broadcast shape {} to {} in {}", shapeString(src),
                          shapeString(shape), what.str()));
  // Left-pad with size-1 dimensions (NumPy rule), then repeat size-1 dims.
  SmallVector<int64_t> cur(src);
  while (cur.size() < shape.size()) {
    cur.insert(cur.begin(), 1);
    v = tile::ExpandDimsOp::create(b, l, RankedTensorType::get(cur, elem), v,
                                   b.getI32IntegerAttr(0));
  }
  for (size_t i = 0; i < shape.size(); ++i)
    if (cur[i] != shape[i] && cur[i] != 1)
      fail(loc, fmt::format("cannot broadcast shape {} to {} in {}: dimension {} "
                            "is {}, expected 1 or {}",
                            shapeString(src), shapeString(shape), what.str(), i,
                            cur[i], shape[i]));
  if (llvm::ArrayRef<int64_t>(cur) == shape)
    return v;
  return tile::BroadcastOp::create(b, l, target, v);
}

bool isFp8(Type elem) { return isa<Float8E4M3FNType, Float8E5M2Type>(elem); }

void rejectFp8(Type elem, const std::source_location &loc, llvm::StringRef what) {
  if (isFp8(elem))
    fail(loc, fmt::format("{} on {} tiles: fp8 is a storage type; convert with .to(tl::f32) "
                          "(or f16, bf16) first",
                          what.str(), describeType(elem)));
}

Value castTo(TraceState &ts, Value v, Type elem, Location loc) {
  OpBuilder &b = ts.builder;
  Type from = elementOf(v);
  if (from == elem)
    return v;
  // fp8 <-> integers go through f32 (the GPU converts fp8 only to and from floats).
  if ((isFp8(elem) && !isa<FloatType>(from)) || (isFp8(from) && !isa<FloatType>(elem)))
    return castTo(ts, castTo(ts, v, b.getF32Type(), loc), elem, loc);
  if (isa<tile::PtrType>(from) || isa<tile::PtrType>(elem))
    throw Error("internal error: castTo called with a pointer type");
  Type to = withElement(v.getType(), elem);
  auto zeroLike = [&](Type e) -> Value {
    TypedAttr attr = isa<FloatType>(e) ? TypedAttr(b.getFloatAttr(e, 0.0))
                                       : TypedAttr(b.getIntegerAttr(e, 0));
    Type t = withElement(v.getType(), e);
    if (auto tt = dyn_cast<RankedTensorType>(t))
      return arith::ConstantOp::create(b, loc, tt, SplatElementsAttr::get(tt, attr));
    return arith::ConstantOp::create(b, loc, t, attr);
  };
  bool fromF = isa<FloatType>(from), toF = isa<FloatType>(elem);
  if (fromF && toF) {
    unsigned fw = from.getIntOrFloatBitWidth(), tw = elem.getIntOrFloatBitWidth();
    if (fw == tw) { // f16 <-> bf16 goes through f32
      Value wide = arith::ExtFOp::create(b, loc, withElement(v.getType(), b.getF32Type()), v);
      return arith::TruncFOp::create(b, loc, to, wide);
    }
    if (fw < tw)
      return arith::ExtFOp::create(b, loc, to, v);
    return arith::TruncFOp::create(b, loc, to, v);
  }
  if (!fromF && !toF) {
    unsigned fw = from.getIntOrFloatBitWidth(), tw = elem.getIntOrFloatBitWidth();
    if (tw == 1)
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zeroLike(from));
    if (fw == 1)
      return arith::ExtUIOp::create(b, loc, to, v);
    if (fw < tw)
      return arith::ExtSIOp::create(b, loc, to, v);
    return arith::TruncIOp::create(b, loc, to, v);
  }
  if (!fromF) { // int -> float
    if (from.isInteger(1))
      return arith::UIToFPOp::create(b, loc, to, v);
    return arith::SIToFPOp::create(b, loc, to, v);
  }
  // float -> int
  if (elem.isInteger(1))
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zeroLike(from));
  return arith::FPToSIOp::create(b, loc, to, v);
}

Value integerScalar(TraceState &ts, const tl::operand &o, Type type, const std::string &what) {
  Location l = toLoc(ts.ctx, o.loc);
  if (o.kind == tl::operand::Kind::Int)
    return materializeLiteral(ts, o, type, l);
  if (o.kind != tl::operand::Kind::Tensor)
    fail(o.loc, fmt::format("{} must be an integer, got a {}", what,
                            o.kind == tl::operand::Kind::Bool ? "bool" : "floating-point literal"));
  Value v = unwrap(o.t, o.loc);
  checkInScope(ts, v, o.loc);
  if (!shapeOf(v).empty() || !isa<IntegerType>(elementOf(v)) || elementOf(v).isInteger(1))
    fail(o.loc, fmt::format("{} must be an integer scalar, got {}{}", what,
                            shapeOf(v).empty() ? "" : "a " + shapeString(shapeOf(v)) + " tile of ",
                            describeType(elementOf(v))));
  return castTo(ts, v, type, l);
}

Value valueToStore(TraceState &ts, const tl::operand &value, RankedTensorType block, const std::source_location &loc,
                   llvm::StringRef fn) {
  Location l = toLoc(ts.ctx, loc);
  Value v;
  if (value.kind == tl::operand::Kind::Tensor) {
    v = unwrap(value.t, value.loc);
    checkInScope(ts, v, value.loc);
    if (isa<tile::PtrType>(elementOf(v)))
      fail(value.loc, fmt::format("{} cannot write pointers to memory", fn));
    v = castTo(ts, v, block.getElementType(), l);
  } else {
    v = materializeLiteral(ts, value, block.getElementType(), l);
  }
  return broadcastTo(ts, v, block.getShape(), value.loc, fn);
}

} // namespace tegula::dsl

namespace tegula {

float16::float16(float f) {
  llvm::APFloat ap(f);
  bool lost;
  ap.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven, &lost);
  bits = uint16_t(ap.bitcastToAPInt().getZExtValue());
}

float16::operator float() const {
  llvm::APFloat ap(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
  bool lost;
  ap.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return ap.convertToFloat();
}

} // namespace tegula

namespace tegula::tl::detail {
using dsl::activeTraceState;

uint32_t trace_scope() {
  dsl::TraceState *ts = activeTraceState();
  return ts && !ts->assignScopes.empty() ? ts->assignScopes.back().serial : 0; // loops' frames have one too
}

void note_read(const tensor &t) { note_read(t, std::source_location()); }

void note_read(const tensor &t, const std::source_location &loc) {
  dsl::TraceState *ts = activeTraceState();
  if (!ts || ts->frames.empty() || !t.impl() || t.trace_id() != ts->id)
    return;
  mlir::Region *defined = mlir::Value::getFromOpaquePointer(t.impl()).getParentRegion();
  mlir::Operation *definedIn = defined ? defined->getParentOp() : nullptr;
  for (dsl::TraceFrame &f : ts->frames)
    if (t.scope() < f.serial && !f.assigned.contains(&t) && !(definedIn && f.op->isAncestor(definedIn))) {
      auto [read, added] = f.reads.try_emplace(&t, loc);
      if (!added && !read->second.line()) // a copy's read first, then its operand's line
        read->second = loc;
    }
}

void note_assign(const tensor &to, const tensor &from) {
  dsl::TraceState *ts = activeTraceState();
  if (!ts || ts->rebinding)
    return;
  for (dsl::AssignScope &scope : ts->assignScopes) // its value before each construct that assigns it
    if (to.scope() < scope.serial)
      scope.entered.try_emplace(&to, to.impl());
  if (ts->frames.empty())
    return;
  // The same value again changes nothing (a block pointer's base and strides
  // when it is advanced), but is an assignment all the same (`acc = zero`
  // each iteration, acc made as zero before the loop).
  const bool same = to.impl() == from.impl();
  for (auto f = ts->frames.rbegin(); f != ts->frames.rend(); ++f) {
    if (to.scope() >= f->serial || (f->carried && llvm::is_contained(*f->carried, &to)))
      continue;
    auto read = f->reads.find(&to);
    if (same || read == f->reads.end()) {
      // Its reads from now on see this iteration's value - within the
      // branch that assigned it, if one did: the other branch and what
      // follows the if_ do not (its scope takes the insertion back).
      if (f->assigned.insert(&to).second && !ts->assignScopes.empty() &&
          ts->assignScopes.back().serial > f->serial)
        ts->assignScopes.back().assignedInFrames.push_back({size_t(ts->frames.rend() - f) - 1, &to});
      continue;
    }
    // Where: the first read's line, else the assigned value's (a loop's own
    // rebinding, its block argument or result: the loop's line).
    std::string made;
    if (from.impl() && from.trace_id() == ts->id) {
      mlir::Value v = mlir::Value::getFromOpaquePointer(from.impl());
      mlir::Location loc = v.getLoc();
      if (auto arg = dyn_cast<mlir::BlockArgument>(v); arg && arg.getOwner()->getParentOp())
        loc = arg.getOwner()->getParentOp()->getLoc();
      made = sourceLine(loc);
    }
    const std::source_location &at = read->second;
    std::string where = at.line() ? fmt::format("{}:{}", at.file_name(), at.line())
                                  : !made.empty() ? made : fmt::format("{}:{}", f->loc.file_name(), f->loc.line());
    const std::string reassigned = at.line() && !made.empty() ? fmt::format(" (to the value made at {})", made) : "";
    // Judged when the body ends: the first reassignment's error, unless the
    // object holds its value from before the loop again by then.
    std::string error = dsl::staleReadMessage(*f, where, "reassigns" + reassigned);
    if (f->stepValue && to.impl() == f->stepValue) // tl::range(0, n, acc): acc was taken for the step
      error += "; it is also this loop's step (its third argument): the carried variables follow the step, "
               "tl::range(lo, hi, step, vars...)";
    f->reassigned.try_emplace(&to, dsl::TraceFrame::Reassigned{to.impl(), std::move(error),
                                                                unsigned(f->reassigned.size())});
  }
}

void note_destroyed(const tensor &t, bool moved_from) noexcept {
  dsl::TraceState *ts = activeTraceState();
  if (!ts)
    return;
  for (dsl::AssignScope &scope : ts->assignScopes)
    scope.entered.erase(&t);
  if (ts->frames.empty())
    return;
  // Unwinding a failed trace, or a value moved on: only forget the object.
  const bool forget = moved_from || std::uncaught_exceptions() > 0;
  for (dsl::TraceFrame &f : ts->frames) {
    auto read = f.reads.find(&t);
    if (read == f.reads.end())
      continue;
    // Read while it held the value from before the loop, and now gone: the
    // holder was replaced as a whole. Said when the body ends.
    if (!forget && t.scope() < f.serial && !f.replacedRead && !(f.carried && llvm::is_contained(*f.carried, &t)))
      f.replacedRead = read->second;
    f.reads.erase(read); // the address may hold another tensor next
  }
  for (dsl::TraceFrame &f : ts->frames) {
    f.assigned.erase(&t);
    // Reassigned after a read, then gone (a vector's element moved on as the
    // vector grew): what it holds at the body's end cannot be judged, so
    // its error stands.
    if (auto pending = f.reassigned.find(&t); pending != f.reassigned.end()) {
      if (!f.unjudged && std::uncaught_exceptions() == 0)
        f.unjudged = pending->second.error;
      f.reassigned.erase(pending);
    }
  }
}
} // namespace tegula::tl::detail
