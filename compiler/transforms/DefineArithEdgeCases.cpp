//===- DefineArithEdgeCases.cpp - one answer for arith's undefined cases --===//
//
// Pass `define-arith-edge-cases`: `arith` leaves some inputs undefined (LLVM
// makes them poison or immediate UB): an integer division or remainder by
// zero, INT_MIN / -1, a shift by the element's width or more, a float
// converted to an integer it does not fit. The DSL defines them, as the
// interpreter computes them and the GPU's own instructions give them:
//   x / 0 = -1 (all ones)    x % 0 = x    INT_MIN / -1 = INT_MIN, % -1 = 0
//   shifts by >= width (or a negative count): 0, or the sign for `>>` of
//   a signed value
//   float -> int saturates; NaN gives 0 (PTX cvt.rzi)
// Left as they were, LLVM folds a literal divisor of 0 to anything, the
// simulator's host JIT dies of SIGFPE on a runtime one, and x86 shifts and
// conversions answer otherwise than the GPU. This pass rewrites the user's
// ops (it runs first, on tile IR, so the compiler's own index arithmetic is
// left alone) into selects around a divisor, count or value made safe. A
// constant operand that cannot hit a case needs nothing; one that always
// does becomes the answer.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace tegula {
#define GEN_PASS_DEF_DEFINEARITHEDGECASES
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;

namespace {

/// A constant of `type` (an integer or float, or a tensor of them) holding
/// `value` in every element.
Value splat(OpBuilder &b, Location loc, Type type, TypedAttr value) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    return arith::ConstantOp::create(b, loc, shaped, SplatElementsAttr::get(shaped, value));
  return arith::ConstantOp::create(b, loc, type, value);
}
Value intSplat(OpBuilder &b, Location loc, Type type, const APInt &value) {
  return splat(b, loc, type, b.getIntegerAttr(getElementTypeOrSelf(type), value));
}

/// The integer operand's value when it is a constant (or a splat of one).
std::optional<APInt> constantOf(Value v) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return c;
  return std::nullopt;
}

Value cmp(OpBuilder &b, Location loc, arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
}
Value select(OpBuilder &b, Location loc, Value cond, Value yes, Value no) {
  return arith::SelectOp::create(b, loc, cond, yes, no);
}

/// divsi / remsi / divui / remui: x / 0 = -1, x % 0 = x, and (signed)
/// INT_MIN / -1 = INT_MIN (wrapped), INT_MIN % -1 = 0.
void defineDivision(Operation *op, bool isSigned, bool isRem) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value x = op->getOperand(0), y = op->getOperand(1);
  Type type = x.getType();
  const unsigned width = getElementTypeOrSelf(type).getIntOrFloatBitWidth();
  const APInt zero = APInt::getZero(width), allOnes = APInt::getAllOnes(width);
  auto answerForZero = [&] { return isRem ? x : intSplat(b, loc, type, allOnes); };
  // -1 as a signed divisor: the quotient is 0 - x (wrapping), the remainder 0.
  auto answerForMinusOne = [&]() -> Value {
    if (isRem)
      return intSplat(b, loc, type, zero);
    return arith::SubIOp::create(b, loc, intSplat(b, loc, type, zero), x);
  };
  if (std::optional<APInt> c = constantOf(y)) {
    if (c->isZero())
      op->getResult(0).replaceAllUsesWith(answerForZero());
    else if (isSigned && c->isAllOnes())
      op->getResult(0).replaceAllUsesWith(answerForMinusOne());
    else
      return; // defined for every x
    op->erase();
    return;
  }
  Value isZero = cmp(b, loc, arith::CmpIPredicate::eq, y, intSplat(b, loc, type, zero));
  Value unsafe = isZero, isMinusOne;
  if (isSigned && width > 1) {
    isMinusOne = cmp(b, loc, arith::CmpIPredicate::eq, y, intSplat(b, loc, type, allOnes));
    unsafe = arith::OrIOp::create(b, loc, isZero, isMinusOne);
  }
  Value safeY = select(b, loc, unsafe, intSplat(b, loc, type, APInt(width, 1)), y);
  Operation *safe = b.clone(*op);
  safe->setOperand(1, safeY);
  Value result = safe->getResult(0);
  if (isMinusOne)
    result = select(b, loc, isMinusOne, answerForMinusOne(), result);
  result = select(b, loc, isZero, answerForZero(), result);
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
}

/// shli / shrui / shrsi by a count of the width or more (unsigned: a
/// negative count too): 0, or the sign (all ones or 0) for shrsi.
void defineShift(Operation *op, bool arithmeticRight) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value x = op->getOperand(0), n = op->getOperand(1);
  Type type = x.getType();
  const unsigned width = getElementTypeOrSelf(type).getIntOrFloatBitWidth();
  auto answerForWide = [&]() -> Value {
    Value zero = intSplat(b, loc, type, APInt::getZero(width));
    if (!arithmeticRight)
      return zero;
    // x >> (width - 1) is the sign: all ones or 0.
    return arith::ShRSIOp::create(b, loc, x, intSplat(b, loc, type, APInt(width, width - 1)));
  };
  if (std::optional<APInt> c = constantOf(n)) {
    if (c->ult(width))
      return;
    op->getResult(0).replaceAllUsesWith(answerForWide());
    op->erase();
    return;
  }
  Value wide = cmp(b, loc, arith::CmpIPredicate::uge, n, intSplat(b, loc, type, APInt(width, width)));
  Value safeN = select(b, loc, wide, intSplat(b, loc, type, APInt::getZero(width)), n);
  Operation *safe = b.clone(*op);
  safe->setOperand(1, safeN);
  op->getResult(0).replaceAllUsesWith(select(b, loc, wide, answerForWide(), safe->getResult(0)));
  op->erase();
}

/// fptosi: saturating, NaN -> 0. The bounds -2^(w-1) and 2^(w-1) are powers
/// of two, exact in every float type that can reach them (one that cannot
/// rounds the bound to infinity, which only an infinite input reaches).
void defineFloatToInt(arith::FPToSIOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value x = op.getIn();
  Type floatType = x.getType(), intType = op.getType();
  auto floatElem = cast<FloatType>(getElementTypeOrSelf(floatType));
  // fp8 sources convert through f32 (fp8-to-llvm), where the bounds apply.
  if (!floatElem.isF16() && !floatElem.isBF16() && !floatElem.isF32() && !floatElem.isF64())
    return;
  const unsigned width = getElementTypeOrSelf(intType).getIntOrFloatBitWidth();
  if (width == 1)
    return; // the DSL casts to bool with a compare; i1 has no range to leave
  auto bound = [&](bool negative) {
    APFloat v = APFloat(std::ldexp(negative ? -1.0 : 1.0, int(width) - 1));
    bool lost = false;
    v.convert(floatElem.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return splat(b, loc, floatType, b.getFloatAttr(floatElem, v));
  };
  auto cmpf = [&](arith::CmpFPredicate p, Value y) { return arith::CmpFOp::create(b, loc, p, x, y); };
  Value tooHigh = cmpf(arith::CmpFPredicate::OGE, bound(false));
  Value tooLow = cmpf(arith::CmpFPredicate::OLT, bound(true));
  Value isNaN = cmpf(arith::CmpFPredicate::UNO, x);
  Value unsafe = arith::OrIOp::create(b, loc, arith::OrIOp::create(b, loc, tooHigh, tooLow), isNaN);
  Value safeX = select(b, loc, unsafe, splat(b, loc, floatType, b.getFloatAttr(floatElem, 0.0)), x);
  Value converted = arith::FPToSIOp::create(b, loc, intType, safeX);
  Value result = select(b, loc, tooHigh, intSplat(b, loc, intType, APInt::getSignedMaxValue(width)), converted);
  result = select(b, loc, tooLow, intSplat(b, loc, intType, APInt::getSignedMinValue(width)), result);
  // NaN: the 0 `converted` already holds.
  op.getResult().replaceAllUsesWith(result);
  op.erase();
}

struct DefineArithEdgeCasesPass : tegula::impl::DefineArithEdgeCasesBase<DefineArithEdgeCasesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (!isa<arith::DivSIOp, arith::RemSIOp, arith::DivUIOp, arith::RemUIOp, arith::ShLIOp, arith::ShRSIOp,
               arith::ShRUIOp, arith::FPToSIOp>(op))
        return;
      // Integers only (index arithmetic has no width to leave).
      if (isa<IntegerType>(getElementTypeOrSelf(op->getResult(0).getType())))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (isa<arith::DivSIOp>(op))
        defineDivision(op, /*isSigned=*/true, /*isRem=*/false);
      else if (isa<arith::RemSIOp>(op))
        defineDivision(op, true, true);
      else if (isa<arith::DivUIOp>(op))
        defineDivision(op, false, false);
      else if (isa<arith::RemUIOp>(op))
        defineDivision(op, false, true);
      else if (isa<arith::ShLIOp, arith::ShRUIOp>(op))
        defineShift(op, /*arithmeticRight=*/false);
      else if (isa<arith::ShRSIOp>(op))
        defineShift(op, true);
      else
        defineFloatToInt(cast<arith::FPToSIOp>(op));
    }
  }
};

} // namespace
