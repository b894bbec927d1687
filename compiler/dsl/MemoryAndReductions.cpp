//===- MemoryAndReductions.cpp - tl:: load/store/atomics, dot, reduce -----===//
#include "compiler/dsl/TraceState.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using tegula::tl::operand;
using tegula::tl::tensor;

namespace tegula::dsl {
namespace {

/// Pointer tile, mask and (optional) value brought to one shape; the value
/// converted to the pointee type.
struct Access {
  Value ptr, mask, value;
};

Access prepareAccess(TraceState &ts, const tensor &ptrs, const tensor *mask,
                     const operand *value, const std::source_location &loc,
                     llvm::StringRef what) {
  Location l = toLoc(ts.ctx, loc);
  Access acc;
  acc.ptr = unwrap(ptrs, loc);
  auto ptrType = dyn_cast<tile::PtrType>(elementOf(acc.ptr));
  if (!ptrType)
    fail(loc, fmt::format("{} needs a pointer or a tile of pointers, got {} of {}",
                          what.str(), shapeOf(acc.ptr).empty() ? "a scalar" : "a " + shapeString(shapeOf(acc.ptr)),
                          describeType(elementOf(acc.ptr))));
  std::vector<int64_t> shape(shapeOf(acc.ptr).begin(), shapeOf(acc.ptr).end());
  if (mask) {
    acc.mask = unwrap(*mask, loc); // an empty tensor is an error, not "no mask"
    if (!elementOf(acc.mask).isInteger(1))
      fail(loc, fmt::format("{} mask must be boolean (i1), got {}", what.str(),
                            describeType(elementOf(acc.mask))));
    // Pointers and mask broadcast to their common shape.
    shape = commonShape(shape, shapeOf(acc.mask), loc, what);
    acc.ptr = broadcastTo(ts, acc.ptr, shape, loc, what);
    acc.mask = broadcastTo(ts, acc.mask, shape, loc, what);
  }
  if (value) {
    Type pointee = ptrType.getPointeeType();
    if (value->kind == operand::Kind::Tensor) {
      Value v = unwrap(value->t, loc);
      if (isa<tile::PtrType>(elementOf(v)))
        fail(loc, fmt::format("{} cannot write pointers to memory", what.str()));
      auto vs = shapeOf(v);
      bool fits = vs.size() <= shape.size();
      for (size_t i = 0; fits && i < vs.size(); ++i) {
        int64_t want = shape[shape.size() - vs.size() + i];
        fits = vs[i] == 1 || vs[i] == want;
      }
      if (!fits)
        fail(loc, fmt::format("{}: value shape {} does not match pointer shape {}",
                              what.str(), shapeString(vs), shapeString(shape)));
      acc.value = broadcastTo(ts, castTo(ts, v, pointee, l), shape, loc, what);
    } else {
      acc.value = broadcastTo(ts, materializeLiteral(ts, *value, pointee, l), shape, loc,
                              what);
    }
  }
  return acc;
}

/// Build a tile.reduce (or, `scan`, a tile.scan: `reverse` from the end)
/// of `srcs` along `axis`; `combine` fills the combiner region.
ValueRange buildCombining(TraceState &ts, ValueRange srcs, int axis, const std::source_location &loc,
                          llvm::function_ref<SmallVector<Value>(OpBuilder &, Location, ArrayRef<BlockArgument>)>
                              combine,
                          bool scan = false, bool reverse = false) {
  Location l = toLoc(ts.ctx, loc);
  auto shape = shapeOf(srcs[0]);
  SmallVector<int64_t> out(shape);
  if (!scan)
    out.erase(out.begin() + axis);
  SmallVector<Type> resultTypes, argTypes;
  for (Value s : srcs)
    resultTypes.push_back(out.empty() ? elementOf(s) : Type(RankedTensorType::get(out, elementOf(s))));
  for (int k = 0; k < 2; ++k)
    for (Value s : srcs)
      argTypes.push_back(elementOf(s));
  Operation *op;
  Region *combiner;
  if (scan) {
    auto s = tile::ScanOp::create(ts.builder, l, resultTypes, srcs, ts.builder.getI32IntegerAttr(axis),
                                  reverse ? ts.builder.getUnitAttr() : UnitAttr());
    op = s, combiner = &s.getCombiner();
  } else {
    auto r = tile::ReduceOp::create(ts.builder, l, resultTypes, srcs, ts.builder.getI32IntegerAttr(axis));
    op = r, combiner = &r.getCombiner();
  }
  OpBuilder::InsertionGuard guard(ts.builder);
  Block *body = ts.builder.createBlock(combiner, {}, argTypes, SmallVector<Location>(argTypes.size(), l));
  ts.builder.setInsertionPointToStart(body);
  SmallVector<Value> results;
  try {
    results = combine(ts.builder, l, body->getArguments());
  } catch (...) { // a mistake in a user's combine function: no half-built op left behind
    op->erase();
    throw;
  }
  tile::ReduceReturnOp::create(ts.builder, l, results);
  return op->getResults();
}

ValueRange buildReduce(TraceState &ts, ValueRange srcs, int axis, const std::source_location &loc,
                       llvm::function_ref<SmallVector<Value>(OpBuilder &, Location, ArrayRef<BlockArgument>)>
                           combine) {
  return buildCombining(ts, srcs, axis, loc, combine);
}

int normalizeAxis(int axis, Value v, const std::source_location &loc, llvm::StringRef fn) {
  int rank = int(shapeOf(v).size());
  if (rank == 0)
    fail(loc, fmt::format("tl::{} needs a tile, got a scalar", fn.str()));
  int given = axis;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    fail(loc, fmt::format("tl::{} axis {} is out of range for a {} tile", fn.str(), given,
                          shapeString(shapeOf(v))));
  return axis;
}

enum class Reduction { Sum, Max, Min };

tensor reduceSimple(const tensor &x, int axis, Reduction kind, const std::source_location &loc,
                    llvm::StringRef fn) {
  TraceState &ts = current(loc);
  Value v = unwrap(x, loc);
  axis = normalizeAxis(axis, v, loc, fn);
  Type elem = elementOf(v);
  if (isa<tile::PtrType>(elem))
    fail(loc, fmt::format("tl::{} is not defined for pointers", fn.str()));
  rejectFp8(elem, loc, "tl::" + fn.str());
  // Sums accumulate small types in 32 bits: counting booleans, adding bytes,
  // and bf16/f16 sums that would otherwise lose all precision.
  if (kind == Reduction::Sum && isa<IntegerType>(elem) && elem.getIntOrFloatBitWidth() < 32)
    v = castTo(ts, v, ts.builder.getI32Type(), toLoc(ts.ctx, loc)), elem = elementOf(v);
  if (kind == Reduction::Sum && (elem.isBF16() || elem.isF16()))
    v = castTo(ts, v, ts.builder.getF32Type(), toLoc(ts.ctx, loc)), elem = elementOf(v);
  bool isF = isa<FloatType>(elem), isBool = elem.isInteger(1);
  auto results = buildReduce(
      ts, v, axis, loc,
      [&](OpBuilder &b, Location l, ArrayRef<BlockArgument> args) -> SmallVector<Value> {
        Value a = args[0], c = args[1];
        switch (kind) {
        case Reduction::Sum:
          return {isF ? Value(arith::AddFOp::create(b, l, a, c))
                      : Value(arith::AddIOp::create(b, l, a, c))};
        case Reduction::Max:
          if (isF)
            return {arith::MaximumFOp::create(b, l, a, c)};
          if (isBool) // "any"
            return {arith::MaxUIOp::create(b, l, a, c)};
          return {arith::MaxSIOp::create(b, l, a, c)};
        case Reduction::Min:
          if (isF)
            return {arith::MinimumFOp::create(b, l, a, c)};
          if (isBool) // "all"
            return {arith::MinUIOp::create(b, l, a, c)};
          return {arith::MinSIOp::create(b, l, a, c)};
        }
        llvm_unreachable("reduction kind");
      });
  return wrap(results[0]);
}

/// argmax/argmin: reduce (value, index) pairs; ties and NaNs resolve to the
/// smallest index, and a NaN wins over numbers (like torch.argmax).
tensor reduceArg(const tensor &x, int axis, bool isMax, const std::source_location &loc,
                 llvm::StringRef fn) {
  TraceState &ts = current(loc);
  Value v = unwrap(x, loc);
  axis = normalizeAxis(axis, v, loc, fn);
  Type elem = elementOf(v);
  if (isa<tile::PtrType>(elem) || elem.isInteger(1))
    fail(loc, fmt::format("tl::{} needs a numeric tile", fn.str()));
  rejectFp8(elem, loc, "tl::" + fn.str());
  Location l = toLoc(ts.ctx, loc);
  auto shape = shapeOf(v);
  // Index tile: arange along `axis`, broadcast to the full shape.
  Value idx = tile::MakeRangeOp::create(
      ts.builder, l, RankedTensorType::get({shape[axis]}, ts.builder.getI32Type()), 0,
      int32_t(shape[axis]));
  for (int d = 0; d < int(shape.size()); ++d) {
    if (d == axis)
      continue;
    SmallVector<int64_t> s(shapeOf(idx));
    int pos = d < axis ? d : int(s.size());
    s.insert(s.begin() + pos, 1);
    idx = tile::ExpandDimsOp::create(ts.builder, l,
                                     RankedTensorType::get(s, ts.builder.getI32Type()), idx,
                                     ts.builder.getI32IntegerAttr(pos));
  }
  std::vector<int64_t> full(shape.begin(), shape.end());
  idx = broadcastTo(ts, idx, full, loc, fn);
  bool isF = isa<FloatType>(elem);
  auto results = buildReduce(
      ts, ValueRange{v, idx}, axis, loc,
      [&](OpBuilder &b, Location l, ArrayRef<BlockArgument> args) -> SmallVector<Value> {
        Value va = args[0], ia = args[1], vb = args[2], ib = args[3];
        Value better, equal;
        if (isF) {
          better = arith::CmpFOp::create(
              b, l, isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, vb, va);
          equal = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, vb, va);
          // NaN handling: a NaN b beats a number a; two NaNs tie.
          Value bNan = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, vb, vb);
          Value aNan = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, va, va);
          Value aNum = arith::XOrIOp::create(
              b, l, aNan, arith::ConstantOp::create(b, l, b.getBoolAttr(true)));
          better = arith::OrIOp::create(b, l, better,
                                        arith::AndIOp::create(b, l, bNan, aNum));
          equal = arith::OrIOp::create(b, l, equal, arith::AndIOp::create(b, l, bNan, aNan));
        } else {
          better = arith::CmpIOp::create(
              b, l, isMax ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt, vb, va);
          equal = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, vb, va);
        }
        Value smallerIdx = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, ib, ia);
        Value takeB = arith::OrIOp::create(b, l, better,
                                           arith::AndIOp::create(b, l, equal, smallerIdx));
        return {arith::SelectOp::create(b, l, takeB, vb, va),
                arith::SelectOp::create(b, l, takeB, ib, ia)};
      });
  return wrap(results[1]);
}

} // namespace
} // namespace tegula::dsl

namespace tegula::tl {
using namespace tegula::dsl;

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

namespace {
/// The hints checked (PTX's rules, at the caller's line) and set on `op`.
void setHints(Operation *op, const access_hints &hints, bool isLoad, const Loc &loc) {
  const char *fn = isLoad ? "tl::load" : "tl::store";
  const cache_modifier c = hints.cache;
  const bool forLoads = c == cache_modifier::ca || c == cache_modifier::cg || c == cache_modifier::cs ||
                        c == cache_modifier::cv;
  const bool forStores = c == cache_modifier::wb || c == cache_modifier::cg || c == cache_modifier::cs ||
                         c == cache_modifier::wt;
  static constexpr const char *names[] = {"none", "ca", "cg", "cs", "cv", "wb", "wt"};
  if (c != cache_modifier::none && !(isLoad ? forLoads : forStores))
    fail(loc, fmt::format("{}: cache_modifier::{} is for {}; {} take {}", fn, names[int(c)],
                          isLoad ? "stores" : "loads", isLoad ? "loads" : "stores",
                          isLoad ? "ca, cg, cs or cv" : "wb, cg, cs or wt"));
  if (c != cache_modifier::none && hints.eviction != eviction_policy::normal)
    fail(loc, fmt::format("{}: a cache_modifier or an eviction_policy, not both (PTX takes one or the other)", fn));
  if (hints.is_volatile && (c != cache_modifier::none || hints.eviction != eviction_policy::normal))
    fail(loc, fmt::format("{}: a volatile access takes no cache_modifier or eviction_policy", fn));
  MLIRContext *ctx = op->getContext();
  static constexpr tile::CacheModifier modifiers[] = {
      tile::CacheModifier::None, tile::CacheModifier::CA, tile::CacheModifier::CG, tile::CacheModifier::CS,
      tile::CacheModifier::CV,   tile::CacheModifier::WB, tile::CacheModifier::WT};
  if (c != cache_modifier::none)
    op->setAttr("cache", tile::CacheModifierAttr::get(ctx, modifiers[int(c)]));
  if (hints.eviction != eviction_policy::normal)
    op->setAttr("evict", tile::EvictionPolicyAttr::get(ctx, hints.eviction == eviction_policy::evict_first
                                                                ? tile::EvictionPolicy::EvictFirst
                                                                : tile::EvictionPolicy::EvictLast));
  if (hints.is_volatile)
    op->setAttr("isVolatile", UnitAttr::get(ctx));
}
} // namespace

static tensor loadImpl(const tensor &ptrs, const tensor *mask, const operand *other, const Loc &loc,
                       const access_hints &hints = {}) {
  TraceState &ts = current(loc);
  Access a = prepareAccess(ts, ptrs, mask, nullptr, loc, "tl::load");
  Location l = toLoc(ts.ctx, loc);
  Value otherV;
  if (other) {
    Type resultType = tile::getPointeeLikeType(a.ptr.getType());
    Type pointee = elementOf(Value(a.ptr));
    pointee = cast<tile::PtrType>(pointee).getPointeeType();
    std::vector<int64_t> shape(shapeOf(a.ptr).begin(), shapeOf(a.ptr).end());
    if (other->kind == operand::Kind::Tensor) {
      otherV = unwrap(other->t, loc);
      requireNumber(otherV, loc, "the 'other' value of tl::load");
      otherV = castTo(ts, otherV, pointee, l);
    }
    else
      otherV = materializeLiteral(ts, *other, pointee, l);
    otherV = broadcastTo(ts, otherV, shape, loc, "tl::load other");
    (void)resultType;
  }
  auto op = tile::LoadOp::create(ts.builder, l, a.ptr, a.mask, otherV);
  setHints(op, hints, /*isLoad=*/true, loc);
  return wrap(op.getResult());
}

tensor load(const tensor &ptrs, Loc loc) { return loadImpl(ptrs, nullptr, nullptr, loc); }
tensor load(const tensor &ptrs, const tensor &mask, Loc loc) {
  return loadImpl(ptrs, &mask, nullptr, loc);
}
tensor load(const tensor &ptrs, const tensor &mask, operand other) {
  return loadImpl(ptrs, &mask, &other, other.loc);
}
tensor load(const tensor &ptrs, const access_hints &hints, Loc loc) {
  return loadImpl(ptrs, nullptr, nullptr, loc, hints);
}
tensor load(const tensor &ptrs, const tensor &mask, operand other, const access_hints &hints) {
  return loadImpl(ptrs, &mask, &other, other.loc, hints);
}

static void storeImpl(const tensor &ptrs, const operand &value, const tensor *mask, const access_hints &hints = {}) {
  TraceState &ts = current(value.loc);
  Access a = prepareAccess(ts, ptrs, mask, &value, value.loc, "tl::store");
  auto op = tile::StoreOp::create(ts.builder, toLoc(ts.ctx, value.loc), a.ptr, a.value, a.mask);
  setHints(op, hints, /*isLoad=*/false, value.loc);
}

void store(const tensor &ptrs, operand value) { storeImpl(ptrs, value, nullptr); }
void store(const tensor &ptrs, operand value, const tensor &mask) {
  storeImpl(ptrs, value, &mask);
}
void store(const tensor &ptrs, operand value, const access_hints &hints) { storeImpl(ptrs, value, nullptr, hints); }
void store(const tensor &ptrs, operand value, const tensor &mask, const access_hints &hints) {
  storeImpl(ptrs, value, &mask, hints);
}

/// What the GPU can do atomically (PTX `atom`, or a compare-and-swap loop:
/// float max/min, which propagate NaN, and every 16-bit atomic but f16 add
/// and sm_90's bf16 add), refused alike on every backend: elements of 16, 32
/// or 64 bits (PTX's smallest compare-and-swap is 16 bits: no 8-bit or fp8
/// atomics), every kind on integers, all but the bitwise ones on floats.
static void checkAtomicElement(Type elem, tile::AtomicRMWKind kind, const Loc &loc) {
  const unsigned w = elem.getIntOrFloatBitWidth();
  const char *name = "";
  switch (kind) {
  case tile::AtomicRMWKind::Add: name = "atomic_add"; break;
  case tile::AtomicRMWKind::Max: name = "atomic_max"; break;
  case tile::AtomicRMWKind::Min: name = "atomic_min"; break;
  case tile::AtomicRMWKind::Xchg: name = "atomic_xchg"; break;
  case tile::AtomicRMWKind::And: name = "atomic_and"; break;
  case tile::AtomicRMWKind::Or: name = "atomic_or"; break;
  case tile::AtomicRMWKind::Xor: name = "atomic_xor"; break;
  }
  if (w < 16)
    fail(loc, fmt::format("tl::{} on {} memory is not supported: atomics need elements of 16, 32 or 64 bits "
                          "(PTX's smallest compare-and-swap is 16 bits)",
                          name, describeType(elem)));
  if (isa<IntegerType>(elem))
    return;
  const bool bitwise = kind == tile::AtomicRMWKind::And || kind == tile::AtomicRMWKind::Or ||
                       kind == tile::AtomicRMWKind::Xor;
  if (bitwise)
    fail(loc, fmt::format("tl::{} needs integer memory (i16, i32 or i64), got {}", name, describeType(elem)));
}

static tile::MemoryOrder memoryOrder(memory_order sem) {
  switch (sem) {
  case memory_order::relaxed: return tile::MemoryOrder::Relaxed;
  case memory_order::acquire: return tile::MemoryOrder::Acquire;
  case memory_order::release: return tile::MemoryOrder::Release;
  case memory_order::acq_rel: break;
  }
  return tile::MemoryOrder::AcqRel;
}

static tensor atomicImpl(atomic_op op, const tensor &ptrs, const operand &value,
                         const tensor *mask, memory_order sem) {
  const Loc &loc = value.loc;
  TraceState &ts = current(loc);
  Access a = prepareAccess(ts, ptrs, mask, &value, loc, "atomic");
  tile::AtomicRMWKind kind = tile::AtomicRMWKind::Add;
  switch (op) {
  case atomic_op::add: kind = tile::AtomicRMWKind::Add; break;
  case atomic_op::max: kind = tile::AtomicRMWKind::Max; break;
  case atomic_op::min: kind = tile::AtomicRMWKind::Min; break;
  case atomic_op::xchg: kind = tile::AtomicRMWKind::Xchg; break;
  case atomic_op::and_: kind = tile::AtomicRMWKind::And; break;
  case atomic_op::or_: kind = tile::AtomicRMWKind::Or; break;
  case atomic_op::xor_: kind = tile::AtomicRMWKind::Xor; break;
  }
  checkAtomicElement(elementOf(a.value), kind, loc);
  return wrap(tile::AtomicRMWOp::create(ts.builder, toLoc(ts.ctx, loc), a.value.getType(),
                                        kind, a.ptr, a.value, a.mask, memoryOrder(sem)));
}

tensor atomic_rmw(atomic_op op, const tensor &ptrs, operand value, memory_order sem) {
  return atomicImpl(op, ptrs, value, nullptr, sem);
}
tensor atomic_rmw(atomic_op op, const tensor &ptrs, operand value, const tensor &mask, memory_order sem) {
  return atomicImpl(op, ptrs, value, &mask, sem);
}

tensor atomic_cas(const tensor &ptrs, operand cmp, operand value, memory_order sem) {
  const Loc &loc = cmp.loc;
  TraceState &ts = current(loc);
  Access a = prepareAccess(ts, ptrs, nullptr, &value, loc, "tl::atomic_cas");
  Access c = prepareAccess(ts, ptrs, nullptr, &cmp, loc, "tl::atomic_cas");
  unsigned width = elementOf(a.value).getIntOrFloatBitWidth();
  if (width != 16 && width != 32 && width != 64)
    fail(loc, fmt::format("tl::atomic_cas needs 16-, 32- or 64-bit elements, got {}", describeType(elementOf(a.value))));
  return wrap(tile::AtomicCASOp::create(ts.builder, toLoc(ts.ctx, loc), a.value.getType(),
                                        a.ptr, c.value, a.value, memoryOrder(sem)));
}

//===----------------------------------------------------------------------===//
// dot
//===----------------------------------------------------------------------===//

tensor dot(const tensor &a, const tensor &b, Loc loc) {
  TraceState &ts = current(loc);
  Value va = unwrap(a, loc), vb = unwrap(b, loc);
  auto sa = shapeOf(va), sb = shapeOf(vb);
  if (sa.size() != 2 || sb.size() != 2)
    fail(loc, fmt::format("tl::dot needs 2-D tiles, got {} and {}", shapeString(sa),
                          shapeString(sb)));
  DType accType = elementOf(va).isInteger(8) ? DType::i32 : DType::f32;
  if (elementOf(va).isF64())
    accType = DType::f64;
  return dot(a, b, zeros({sa[0], sb[1]}, accType, loc), precision::ieee, loc);
}

tensor dot(const tensor &a, const tensor &b, const tensor &acc, precision p, Loc loc) {
  TraceState &ts = current(loc);
  Value va = unwrap(a, loc), vb = unwrap(b, loc), vc = unwrap(acc, loc);
  auto sa = shapeOf(va), sb = shapeOf(vb), sc = shapeOf(vc);
  if (sa.size() != 2 || sb.size() != 2)
    fail(loc, fmt::format("tl::dot needs 2-D tiles, got {} and {}", shapeString(sa),
                          shapeString(sb)));
  if (sa[1] != sb[0])
    fail(loc, fmt::format("tl::dot inner dimensions differ: a is {}, b is {}",
                          shapeString(sa), shapeString(sb)));
  if (sa[0] < 16 || sb[1] < 16 || sa[1] < 16)
    fail(loc, fmt::format("tl::dot needs every dimension >= 16 (tensor-core tiles), got "
                          "a {} and b {}",
                          shapeString(sa), shapeString(sb)));
  if (sc.size() != 2 || sc[0] != sa[0] || sc[1] != sb[1])
    fail(loc, fmt::format("tl::dot accumulator must be [{}, {}], got {}", sa[0], sb[1],
                          shapeString(sc)));
  Type ea = elementOf(va), eb = elementOf(vb), ec = elementOf(vc);
  for (Type t : {ea, eb, ec})
    if (isa<tile::PtrType>(t))
      fail(loc, fmt::format("tl::dot operands must be numbers, got {}", describeType(t)));
  // fp8 operands: one format on both sides stays fp8 (wgmma reads it on
  // sm_90a; elsewhere the compiler widens it to f16, exactly); mixed formats
  // are widened here.
  if (isFp8(ea) || isFp8(eb)) {
    if (!isFp8(ea) || !isFp8(eb))
      fail(loc, fmt::format("tl::dot of {} and {}: both operands must be fp8, or neither",
                            describeType(ea), describeType(eb)));
    if (!ec.isF32())
      fail(loc, fmt::format("tl::dot of fp8 operands accumulates in f32, got {}", describeType(ec)));
    if (ea != eb) {
      Location l = toLoc(ts.ctx, loc);
      va = castTo(ts, va, ts.builder.getF16Type(), l);
      vb = castTo(ts, vb, ts.builder.getF16Type(), l);
      ea = eb = ts.builder.getF16Type();
    }
  }
  if (ea != eb)
    fail(loc, fmt::format("tl::dot operands must have the same element type, got {} and "
                          "{}; convert one with .to()",
                          dtype_name(toDType(ea)), dtype_name(toDType(eb))));
  if (isa<FloatType>(ea) && !ec.isF32() && ec != ea)
    fail(loc, fmt::format("tl::dot accumulator must be f32, got {}", dtype_name(toDType(ec))));
  if (ea.isInteger(8) && !ec.isInteger(32))
    fail(loc, fmt::format("tl::dot of i8 operands accumulates in i32, got {}",
                          dtype_name(toDType(ec))));
  if (!isa<FloatType>(ea) && !ea.isInteger(8))
    fail(loc, fmt::format("tl::dot operands must be floating-point or i8, got {}",
                          dtype_name(toDType(ea))));
  if (p != precision::ieee && !ea.isF32())
    fail(loc, "tf32 precision applies to f32 operands only");
  tile::DotPrecision prec = p == precision::ieee   ? tile::DotPrecision::IEEE
                            : p == precision::tf32 ? tile::DotPrecision::TF32
                                                   : tile::DotPrecision::TF32x3;
  Location l = toLoc(ts.ctx, loc);
  // A 16-bit accumulator sums in f32 and is rounded to its type once, at the
  // end: as the interpreter defines it, and on the tensor cores (an FMA
  // chain rounding every product to bf16 answered otherwise).
  if (ec == ea && (ea.isF16() || ea.isBF16())) {
    Value wide = castTo(ts, vc, ts.builder.getF32Type(), l);
    Value sum = tile::DotOp::create(ts.builder, l, wide.getType(), va, vb, wide, prec);
    return wrap(castTo(ts, sum, ec, l));
  }
  return wrap(tile::DotOp::create(ts.builder, l, vc.getType(), va, vb, vc, prec));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// `r` (x reduced along `axis`, which the reduction checked) with that axis
/// kept as a dimension of 1 when `keepDims` (a 1-D x's scalar becomes [1]).
static tensor kept(const tensor &r, const tensor &x, int axis, bool keepDims, const Loc &loc) {
  if (!keepDims)
    return r;
  const int rank = x.rank(loc);
  if (rank == 1)
    return full({1}, operand(r, loc), r.dtype(loc), loc);
  return r.expand_dims(axis < 0 ? axis + rank : axis, loc);
}

/// x as one dimension of all its elements (row-major), for the reductions
/// over every element.
static tensor flattened(const tensor &x, const char *fn, const Loc &loc) {
  const Shape shape = x.shape(loc);
  if (shape.empty())
    fail(loc, fmt::format("tl::{} needs a tile, got a scalar", fn));
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return shape.size() == 1 ? x : x.reshape({n}, loc);
}

tensor sum(const tensor &x, int axis, bool keep_dims, Loc loc) {
  return kept(reduceSimple(x, axis, Reduction::Sum, loc, "sum"), x, axis, keep_dims, loc);
}
tensor max(const tensor &x, int axis, bool keep_dims, Loc loc) {
  return kept(reduceSimple(x, axis, Reduction::Max, loc, "max"), x, axis, keep_dims, loc);
}
tensor min(const tensor &x, int axis, bool keep_dims, Loc loc) {
  return kept(reduceSimple(x, axis, Reduction::Min, loc, "min"), x, axis, keep_dims, loc);
}
tensor argmax(const tensor &x, int axis, bool keep_dims, Loc loc) {
  return kept(reduceArg(x, axis, true, loc, "argmax"), x, axis, keep_dims, loc);
}
tensor argmin(const tensor &x, int axis, bool keep_dims, Loc loc) {
  return kept(reduceArg(x, axis, false, loc, "argmin"), x, axis, keep_dims, loc);
}
tensor sum(const tensor &x, Loc loc) { return reduceSimple(flattened(x, "sum", loc), 0, Reduction::Sum, loc, "sum"); }
tensor max(const tensor &x, Loc loc) { return reduceSimple(flattened(x, "max", loc), 0, Reduction::Max, loc, "max"); }
tensor min(const tensor &x, Loc loc) { return reduceSimple(flattened(x, "min", loc), 0, Reduction::Min, loc, "min"); }
tensor argmax(const tensor &x, Loc loc) { return reduceArg(flattened(x, "argmax", loc), 0, true, loc, "argmax"); }
tensor argmin(const tensor &x, Loc loc) { return reduceArg(flattened(x, "argmin", loc), 0, false, loc, "argmin"); }

using TileCombine =
    std::function<std::vector<tensor>(const std::vector<tensor> &, const std::vector<tensor> &)>;

/// tl::reduce or (`scan`) tl::associative_scan of `xs` with a combine
/// function of the user's, checked: one shape, no pointers, the function
/// returning one scalar of each tile's element type, made of elementwise
/// operations on its arguments and literals.
static std::vector<tensor> combineTiles(const std::vector<tensor> &xs, int axis, const TileCombine &combine,
                                        const Loc &loc, bool scan, bool reverse) {
  const std::string fn = scan ? "tl::associative_scan" : "tl::reduce";
  TraceState &ts = current(loc);
  if (xs.empty())
    fail(loc, fmt::format("{} needs at least one tile", fn));
  SmallVector<Value> srcs;
  for (const tensor &x : xs)
    srcs.push_back(unwrap(x, loc));
  axis = normalizeAxis(axis, srcs[0], loc, scan ? "associative_scan" : "reduce");
  for (auto [k, v] : llvm::enumerate(srcs)) {
    if (shapeOf(v) != shapeOf(srcs[0]))
      fail(loc, fmt::format("{}: tile {} has shape {}, tile 0 {}: the tiles combined together need one shape", fn,
                            k, shapeString(shapeOf(v)), shapeString(shapeOf(srcs[0]))));
    if (isa<tile::PtrType>(elementOf(v)))
      fail(loc, fmt::format("{}: tile {} holds pointers", fn, k));
    rejectFp8(elementOf(v), loc, fn);
  }
  const size_t n = srcs.size();
  Block *body = nullptr;
  ValueRange results = buildCombining(
      ts, srcs, axis, loc,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument> args) -> SmallVector<Value> {
        body = args.front().getOwner();
        std::vector<tensor> acc, next;
        for (size_t k = 0; k < n; ++k)
          acc.push_back(wrap(args[k])), next.push_back(wrap(args[n + k]));
        const std::vector<tensor> combined = combine(acc, next);
        if (combined.size() != n)
          fail(loc, fmt::format("{}: the combine function returned {} value{} for {} tiles", fn, combined.size(),
                                combined.size() == 1 ? "" : "s", n));
        SmallVector<Value> values;
        for (size_t k = 0; k < n; ++k) {
          Value v = unwrap(combined[k], loc);
          if (!shapeOf(v).empty())
            fail(loc, fmt::format("{}: the combine function returned a {} tile where a scalar was due "
                                  "(it combines one element of each tile at a time)",
                                  fn, shapeString(shapeOf(v))));
          if (v.getType() != elementOf(srcs[k])) {
            std::string got, want;
            llvm::raw_string_ostream(got) << v.getType();
            llvm::raw_string_ostream(want) << elementOf(srcs[k]);
            fail(loc, fmt::format("{}: the combine function returned {} for tile {} of {}: return its "
                                  "element type (cast with .to())",
                                  fn, got, k, want));
          }
          values.push_back(v);
        }
        return values;
      },
      scan, reverse);
  // What the combiner may hold: pure scalar operations on its arguments and
  // literals - what the interpreter evaluates and the GPU lowering copies to
  // each step of the reduction or scan (ops with regions - a tl::range or
  // an if - are refused before what is inside them).
  for (Operation &op : *body) {
    const bool scalar = llvm::none_of(op.getResultTypes(), [](Type t) { return isa<ShapedType>(t); }) &&
                        llvm::none_of(op.getOperandTypes(), [](Type t) { return isa<ShapedType>(t); });
    if (!isa<tile::ReduceReturnOp>(&op) && (!scalar || op.getNumRegions() || !isMemoryEffectFree(&op)))
      fail(loc, fmt::format("{}: the combine function may use only elementwise operations on its "
                            "arguments, not '{}'",
                            fn, op.getName().getStringRef().str()));
    for (Value operand : op.getOperands())
      if (operand.getParentBlock() != body)
        fail(loc, fmt::format("{}: the combine function uses a value from outside it; {} that value as one "
                              "more tile, or make it a literal",
                              fn, scan ? "scan" : "reduce"));
  }
  std::vector<tensor> out;
  for (Value r : results)
    out.push_back(wrap(r));
  return out;
}

std::vector<tensor> reduce(const std::vector<tensor> &xs, int axis, const TileCombine &combine, bool keep_dims,
                           Loc loc) {
  std::vector<tensor> out = combineTiles(xs, axis, combine, loc, /*scan=*/false, false);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = kept(out[i], xs[i], axis, keep_dims, loc);
  return out;
}

tensor reduce(const tensor &x, int axis, const std::function<tensor(tensor, tensor)> &combine, bool keep_dims,
              Loc loc) {
  return reduce(
      std::vector<tensor>{x}, axis,
      [&](const std::vector<tensor> &acc, const std::vector<tensor> &next) {
        return std::vector<tensor>{combine(acc[0], next[0])};
      },
      keep_dims, loc)[0];
}

//===----------------------------------------------------------------------===//
// Scans
//===----------------------------------------------------------------------===//

std::vector<tensor> associative_scan(const std::vector<tensor> &xs, int axis, const TileCombine &combine,
                                     bool reverse, Loc loc) {
  return combineTiles(xs, axis, combine, loc, /*scan=*/true, reverse);
}

tensor associative_scan(const tensor &x, int axis, const std::function<tensor(tensor, tensor)> &combine,
                        bool reverse, Loc loc) {
  return associative_scan(
      std::vector<tensor>{x}, axis,
      [&](const std::vector<tensor> &acc, const std::vector<tensor> &next) {
        return std::vector<tensor>{combine(acc[0], next[0])};
      },
      reverse, loc)[0];
}

/// cumsum / cumprod: small integers scan in i32 and f16/bf16 in f32, as
/// tl::sum accumulates (counting booleans: a running index of the true ones).
static tensor scanSimple(const tensor &x, int axis, bool product, bool reverse, const Loc &loc) {
  const char *fn = product ? "cumprod" : "cumsum";
  TraceState &ts = current(loc);
  Value v = unwrap(x, loc);
  axis = normalizeAxis(axis, v, loc, fn);
  Type elem = elementOf(v);
  if (isa<tile::PtrType>(elem))
    fail(loc, fmt::format("tl::{} is not defined for pointers", fn));
  rejectFp8(elem, loc, std::string("tl::") + fn);
  if (isa<IntegerType>(elem) && elem.getIntOrFloatBitWidth() < 32)
    v = castTo(ts, v, ts.builder.getI32Type(), toLoc(ts.ctx, loc)), elem = elementOf(v);
  if (elem.isBF16() || elem.isF16())
    v = castTo(ts, v, ts.builder.getF32Type(), toLoc(ts.ctx, loc)), elem = elementOf(v);
  const bool isF = isa<FloatType>(elem);
  auto results = buildCombining(
      ts, v, axis, loc,
      [&](OpBuilder &b, Location l, ArrayRef<BlockArgument> args) -> SmallVector<Value> {
        Value a = args[0], c = args[1];
        if (product)
          return {isF ? Value(arith::MulFOp::create(b, l, a, c)) : Value(arith::MulIOp::create(b, l, a, c))};
        return {isF ? Value(arith::AddFOp::create(b, l, a, c)) : Value(arith::AddIOp::create(b, l, a, c))};
      },
      /*scan=*/true, reverse);
  return wrap(results[0]);
}

tensor cumsum(const tensor &x, int axis, bool reverse, Loc loc) { return scanSimple(x, axis, false, reverse, loc); }
tensor cumprod(const tensor &x, int axis, bool reverse, Loc loc) { return scanSimple(x, axis, true, reverse, loc); }

tensor histogram(const tensor &x, int bins, Loc loc) {
  TraceState &ts = current(loc);
  Value v = unwrap(x, loc);
  const auto shape = shapeOf(v);
  Type elem = elementOf(v);
  if (shape.size() != 1 || !isa<IntegerType>(elem) || elem.isInteger(1))
    fail(loc, fmt::format("tl::histogram counts a 1-D integer tile, got {} of {}", shapeString(shape),
                          describeType(elem)));
  if (elem.getIntOrFloatBitWidth() > 32) // truncated, a value past 2^32 would land in a bin
    fail(loc, fmt::format("tl::histogram counts values of at most 32 bits, got {} (narrow them with .to(tl::i32) "
                          "once they are known to fit)",
                          describeType(elem)));
  if (bins < 1 || (bins & (bins - 1)) != 0)
    fail(loc, fmt::format("tl::histogram's bins are a power of two (a tile extent), not {}", bins));
  if (!elem.isInteger(32))
    v = castTo(ts, v, ts.builder.getI32Type(), toLoc(ts.ctx, loc));
  return wrap(tile::HistogramOp::create(ts.builder, toLoc(ts.ctx, loc),
                                        RankedTensorType::get({bins}, ts.builder.getI32Type()), v));
}

tensor gather(const tensor &src, const tensor &index, int axis, Loc loc) {
  TraceState &ts = current(loc);
  Value v = unwrap(src, loc), idx = unwrap(index, loc);
  axis = normalizeAxis(axis, v, loc, "gather");
  const auto shape = shapeOf(v), indexShape = shapeOf(idx);
  Type indexElem = elementOf(idx);
  if (!isa<IntegerType>(indexElem) || indexElem.isInteger(1))
    fail(loc, fmt::format("tl::gather needs an integer index tile, got {}", describeType(indexElem)));
  if (indexElem.getIntOrFloatBitWidth() > 32) // truncated, an index past 2^32 would pick another element
    fail(loc, fmt::format("tl::gather takes indices of at most 32 bits, got {} (narrow them with .to(tl::i32) "
                          "once they are known to fit)",
                          describeType(indexElem)));
  bool matches = indexShape.size() == shape.size();
  for (size_t d = 0; matches && d < shape.size(); ++d)
    matches = int(d) == axis || indexShape[d] == shape[d];
  if (!matches)
    fail(loc, fmt::format("tl::gather along axis {}: the index {} must have the rank of the source {} and match it "
                          "in every other dimension",
                          axis, shapeString(indexShape), shapeString(shape)));
  if (!indexElem.isInteger(32))
    idx = castTo(ts, idx, ts.builder.getI32Type(), toLoc(ts.ctx, loc));
  return wrap(tile::GatherOp::create(ts.builder, toLoc(ts.ctx, loc),
                                     RankedTensorType::get(indexShape, elementOf(v)), v, idx,
                                     ts.builder.getI32IntegerAttr(axis)));
}

//===----------------------------------------------------------------------===//
// Debugging
//===----------------------------------------------------------------------===//

void print(const std::string &prefix, std::initializer_list<tensor> values, Loc loc) {
  TraceState &ts = current(loc);
  SmallVector<Value> vals;
  for (const tensor &t : values)
    vals.push_back(unwrap(t, loc));
  tile::PrintOp::create(ts.builder, toLoc(ts.ctx, loc), prefix, vals);
}

void debug_barrier(Loc loc) {
  TraceState &ts = current(loc);
  tile::DebugBarrierOp::create(ts.builder, toLoc(ts.ctx, loc));
}

void device_assert(const tensor &cond, const std::string &message, Loc loc) {
  TraceState &ts = current(loc);
  Value c = unwrap(cond, loc);
  if (!elementOf(c).isInteger(1))
    fail(loc, "tl::device_assert needs a boolean (i1) condition");
  tile::AssertOp::create(ts.builder, toLoc(ts.ctx, loc), c, message);
}

} // namespace tegula::tl
