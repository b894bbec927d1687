//===- Fp8ToLLVM.cpp - conversions to and from the fp8 formats ------------===//
//
// fp8 tiles (f8E4M3FN, f8E5M2) are bytes in registers (the type converter
// makes them i8); `arith.extf` from and `arith.truncf` to them are integer
// code, per register, so they run on every GPU and in the simulator:
//   decode: sign, exponent and mantissa fields moved into an f32 (subnormals
//     scaled from the mantissa; E4M3FN's S.1111.111 is NaN, E5M2's
//     all-ones exponent Inf/NaN);
//   encode: round to nearest even on the f32 bits, subnormals by roundeven
//     of the value scaled to the subnormal step, saturating to the largest
//     finite value (Inf included, as cvt.rn.satfinite does), NaN to 0x7f -
//     bit for bit what the interpreter does (tegula/dtype.h, fp8_format).
// Other widths go through f32 (both directions are exact there except the
// final rounding).
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace tegula::lowering {
namespace {

struct Fp8Format {
  int exponentBits, mantissaBits, bias;
  bool hasInf;
  int maxCode; // largest finite, positive
};

std::optional<Fp8Format> fp8Format(Type t) {
  if (isa<Float8E4M3FNType>(t))
    return Fp8Format{4, 3, 7, false, 0x7e};
  if (isa<Float8E5M2Type>(t))
    return Fp8Format{5, 2, 15, true, 0x7b};
  return std::nullopt;
}

Value c32(OpBuilder &b, Location loc, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, b.getI32Type(), b.getI32IntegerAttr(int32_t(v)));
}
Value f32c(OpBuilder &b, Location loc, double v) {
  return LLVM::ConstantOp::create(b, loc, b.getF32Type(), b.getF32FloatAttr(float(v)));
}

/// fp8 bits (i8) -> f32.
Value decode(OpBuilder &b, Location loc, Value bits, const Fp8Format &f) {
  Type i32 = b.getI32Type();
  Value x = LLVM::ZExtOp::create(b, loc, i32, bits);
  auto band = [&](Value v, int64_t m) { return LLVM::AndOp::create(b, loc, v, c32(b, loc, m)).getResult(); };
  auto shr = [&](Value v, int64_t s) { return LLVM::LShrOp::create(b, loc, v, c32(b, loc, s)).getResult(); };
  auto shl = [&](Value v, int64_t s) { return LLVM::ShlOp::create(b, loc, v, c32(b, loc, s)).getResult(); };
  auto eq = [&](Value v, int64_t k) {
    return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, v, c32(b, loc, k)).getResult();
  };
  Value sign = shl(band(x, 0x80), 24);
  Value e = band(shr(x, f.mantissaBits), (1 << f.exponentBits) - 1);
  Value m = band(x, (1 << f.mantissaBits) - 1);
  Value normal = LLVM::OrOp::create(
      b, loc, sign,
      LLVM::OrOp::create(b, loc, shl(LLVM::AddOp::create(b, loc, e, c32(b, loc, 127 - f.bias)), 23),
                         shl(m, 23 - f.mantissaBits)));
  // Subnormal: m * 2^(1 - bias - M), exact in f32.
  Value sub = LLVM::FMulOp::create(b, loc, LLVM::UIToFPOp::create(b, loc, b.getF32Type(), m),
                                   f32c(b, loc, std::ldexp(1.0, 1 - f.bias - f.mantissaBits)));
  Value subBits = LLVM::OrOp::create(b, loc, LLVM::BitcastOp::create(b, loc, i32, sub), sign);
  Value out = LLVM::SelectOp::create(b, loc, eq(e, 0), subBits, normal);
  const int allOnes = (1 << f.exponentBits) - 1;
  if (f.hasInf) {
    Value special = eq(e, allOnes);
    Value inf = LLVM::OrOp::create(b, loc, sign, c32(b, loc, 0x7f800000));
    Value value = LLVM::SelectOp::create(b, loc, eq(m, 0), inf, c32(b, loc, 0x7fc00000));
    out = LLVM::SelectOp::create(b, loc, special, value, out);
  } else {
    out = LLVM::SelectOp::create(b, loc, eq(band(x, 0x7f), 0x7f), c32(b, loc, 0x7fc00000), out);
  }
  return LLVM::BitcastOp::create(b, loc, b.getF32Type(), out);
}

/// f32 -> fp8 bits (i8): nearest even, saturating, NaN to 0x7f.
Value encode(OpBuilder &b, Location loc, Value f, const Fp8Format &fmt8) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  const int M = fmt8.mantissaBits;
  Value u = LLVM::BitcastOp::create(b, loc, i32, f);
  Value sign = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, u, c32(b, loc, 24)), c32(b, loc, 0x80));
  Value a = LLVM::AndOp::create(b, loc, u, c32(b, loc, 0x7fffffff));
  Value af = LLVM::BitcastOp::create(b, loc, f32, a);
  // Normal: round the f32 mantissa to M bits (ties to even), then rebias.
  const int shift = 23 - M;
  Value odd = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, a, c32(b, loc, shift)), c32(b, loc, 1));
  Value r = LLVM::AddOp::create(b, loc, a, LLVM::AddOp::create(b, loc, odd, c32(b, loc, (1 << (shift - 1)) - 1)));
  Value normal = LLVM::SubOp::create(b, loc, LLVM::LShrOp::create(b, loc, r, c32(b, loc, shift)),
                                     c32(b, loc, (127 - fmt8.bias) << M));
  // Subnormal: the value in units of 2^(1 - bias - M), rounded to even.
  Value scaled = LLVM::FMulOp::create(b, loc, af, f32c(b, loc, std::ldexp(1.0, fmt8.bias - 1 + M)));
  Value sub = LLVM::FPToUIOp::create(b, loc, i32, LLVM::RoundEvenOp::create(b, loc, f32, scaled));
  auto fcmp = [&](LLVM::FCmpPredicate p, double k) {
    return LLVM::FCmpOp::create(b, loc, p, af, f32c(b, loc, k)).getResult();
  };
  Value code = LLVM::SelectOp::create(b, loc, fcmp(LLVM::FCmpPredicate::olt, std::ldexp(1.0, 1 - fmt8.bias)),
                                      sub, normal);
  const double maxFinite = std::ldexp(double((1 << M) + (fmt8.maxCode & ((1 << M) - 1))),
                                      (fmt8.maxCode >> M) - fmt8.bias - M);
  code = LLVM::SelectOp::create(b, loc, fcmp(LLVM::FCmpPredicate::oge, maxFinite), c32(b, loc, fmt8.maxCode), code);
  code = LLVM::UMinOp::create(b, loc, code, c32(b, loc, fmt8.maxCode));
  code = LLVM::OrOp::create(b, loc, code, sign);
  Value nan = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ugt, a, c32(b, loc, 0x7f800000));
  code = LLVM::SelectOp::create(b, loc, nan, c32(b, loc, 0x7f), code);
  return LLVM::TruncOp::create(b, loc, b.getI8Type(), code);
}

Value toF32(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  if (t.isF32())
    return v;
  if (t.getIntOrFloatBitWidth() < 32)
    return LLVM::FPExtOp::create(b, loc, b.getF32Type(), v);
  return LLVM::FPTruncOp::create(b, loc, b.getF32Type(), v);
}

Value fromF32(OpBuilder &b, Location loc, Value v, Type to) {
  if (to.isF32())
    return v;
  if (to.getIntOrFloatBitWidth() < 32)
    return LLVM::FPTruncOp::create(b, loc, to, v);
  return LLVM::FPExtOp::create(b, loc, to, v);
}

/// arith.extf / arith.truncf with an fp8 side (and sitofp / uitofp to fp8:
/// through f32, exact below 2^24 and saturating above), on tiles (one
/// conversion per register) and scalars. Beats the generic elementwise
/// lowering.
struct Fp8ConvertPattern : ConversionPattern {
  Fp8ConvertPattern(const TypeConverter &tc, MLIRContext *ctx)
      : ConversionPattern(tc, MatchAnyOpTypeTag(), /*benefit=*/5, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, ArrayRef<ValueRange> operands,
                                ConversionPatternRewriter &rw) const override {
    // Integer to fp8 too: the DSL's int -> f32 -> fp8, which the
    // canonicalizer folds into one sitofp / uitofp.
    const bool fromInt = isa<arith::SIToFPOp, arith::UIToFPOp>(op);
    if (!isa<arith::ExtFOp, arith::TruncFOp>(op) && !fromInt)
      return failure();
    Type from = getElementTypeOrSelf(op->getOperand(0).getType());
    Type to = getElementTypeOrSelf(op->getResult(0).getType());
    std::optional<Fp8Format> src = fp8Format(from), dst = fp8Format(to);
    if (!src && !dst)
      return failure();
    Location loc = op->getLoc();
    SmallVector<Value> results;
    for (Value v : operands[0]) {
      Value f = fromInt ? (isa<arith::SIToFPOp>(op) ? Value(LLVM::SIToFPOp::create(rw, loc, rw.getF32Type(), v))
                                                    : Value(LLVM::UIToFPOp::create(rw, loc, rw.getF32Type(), v)))
                : src   ? decode(rw, loc, v, *src)
                        : toF32(rw, loc, v);
      results.push_back(dst ? encode(rw, loc, f, *dst) : fromF32(rw, loc, f, to));
    }
    if (isa<RankedTensorType>(op->getResult(0).getType()))
      rw.replaceOpWithMultiple(op, {results});
    else
      rw.replaceOp(op, results[0]);
    return success();
  }
};

} // namespace

void populateFp8Patterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<Fp8ConvertPattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
