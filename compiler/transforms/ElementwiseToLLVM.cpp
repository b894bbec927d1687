//===- ElementwiseToLLVM.cpp - arith/math on tiles, register by register --===//
//
// An elementwise arith or math op on a tile becomes one scalar op per
// register the thread holds (the arith/math-to-LLVM and libdevice patterns
// then lower those), except where the GPU has something better:
//   - f32 -> bf16/f16 truncations whose result leaves its block convert two
//     registers at a time (carry-packed-pairs then carries the pair whole);
//   - f32 exp2 is ex2.approx.ftz (one MUFU.EX2);
//   - tl::fdiv's f32 quotient is div.full.f32;
//   - tl::rcp's f32 reciprocal is rcp.approx.ftz.f32 (one MUFU.RCP).
// tile.assume (tl::multiple_of, tl::max_contiguous) is its operand.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace tegula::lowering {
namespace {

/// Any elementwise arith/math op on tiles becomes one scalar op per register
/// (which the arith/math-to-LLVM patterns then lower).
struct ElementwisePattern : ConversionPattern {
  ElementwisePattern(const TypeConverter &tc, MLIRContext *ctx)
      : ConversionPattern(tc, MatchAnyOpTypeTag(), /*benefit=*/2, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, ArrayRef<ValueRange> operands,
                                ConversionPatternRewriter &rw) const override {
    if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumResults() != 1 ||
        !isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
      return failure();
    auto tensor = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!tensor)
      return failure();
    Type scalar = getTypeConverter()->convertType(tensor.getElementType());
    size_t n = size_t(layoutOf(tensor).inDimSize("register"));
    SmallVector<Value> results;
    for (size_t k = 0; k < n; ++k) {
      SmallVector<Value> args;
      for (ValueRange v : operands)
        args.push_back(v.size() == 1 ? v[0] : v[k]);
      OperationState state(op->getLoc(), op->getName().getStringRef(), args, {scalar},
                           op->getAttrs());
      results.push_back(rw.create(state)->getResult(0));
    }
    rw.replaceOpWithMultiple(op, {results});
    return success();
  }
};

/// tl::multiple_of / tl::max_contiguous: the value itself (the promise was
/// for the axis analysis, which has run).
struct AssumePattern : OpConversionPattern<tile::AssumeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::AssumeOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    rw.replaceOpWithMultiple(op, {adaptor.getSrc()});
    return success();
  }
};

/// f32 → bf16 / f16 two registers at a time where the result leaves its
/// block (a P tile carried round a rotated attention loop): one
/// `fptrunc <2 x f32>` is one cvt.rn.{bf16,f16}x2.f32, and carry-packed-pairs
/// then carries the pair whole. Conversions used in their own block pair at
/// instruction selection already, next to the pack that takes them, where
/// the scheduler keeps them (pairing them here hoists them all above the
/// dots and costs registers: sm_80's attention then spills).
struct PairedTruncPattern : OpConversionPattern<arith::TruncFOp> {
  /// Whether `v`, or a layout conversion of it, is used outside `block`:
  /// by another block's op, the terminator, or a loop or branch it enters.
  static bool leavesBlock(Value v, Block *block) {
    return llvm::any_of(v.getUsers(), [&](Operation *user) {
      if (auto convert = dyn_cast<tilegpu::ConvertLayoutOp>(user))
        return leavesBlock(convert.getResult(), block);
      return user->getBlock() != block || user->hasTrait<OpTrait::IsTerminator>() ||
             user->getNumRegions() > 0;
    });
  }

  PairedTruncPattern(const TypeConverter &tc, MLIRContext *ctx)
      : OpConversionPattern(tc, ctx, /*benefit=*/3) {}
  LogicalResult matchAndRewrite(arith::TruncFOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto tensor = dyn_cast<RankedTensorType>(op.getType());
    if (!tensor || !getElementTypeOrSelf(op.getIn().getType()).isF32() ||
        !isa<BFloat16Type, Float16Type>(tensor.getElementType()) || op.getRoundingmodeAttr() ||
        op.getFastmathAttr())
      return failure();
    if (!leavesBlock(op.getResult(), op->getBlock()))
      return failure();
    ValueRange in = adaptor.getIn();
    if (in.size() % 2 != 0)
      return failure();
    Location loc = op.getLoc();
    Type narrow = tensor.getElementType();
    auto wideVector = VectorType::get({2}, rw.getF32Type());
    auto narrowVector = VectorType::get({2}, narrow);
    auto index = [&](int32_t i) { return LLVM::ConstantOp::create(rw, loc, rw.getI32Type(), i); };
    Value zero = index(0), one = index(1);
    SmallVector<Value> results;
    for (size_t k = 0; k < in.size(); k += 2) {
      Value pair = LLVM::PoisonOp::create(rw, loc, wideVector);
      pair = LLVM::InsertElementOp::create(rw, loc, pair, in[k], zero);
      pair = LLVM::InsertElementOp::create(rw, loc, pair, in[k + 1], one);
      Value narrowed = LLVM::FPTruncOp::create(rw, loc, narrowVector, pair);
      results.push_back(LLVM::ExtractElementOp::create(rw, loc, narrowed, zero));
      results.push_back(LLVM::ExtractElementOp::create(rw, loc, narrowed, one));
    }
    rw.replaceOpWithMultiple(op, {results});
    return success();
  }
};

/// `op` (f32 results) becomes the f32 NVVM `intrinsic` on each register of
/// its operands - tiles of one layout, or scalars.
void replaceWithIntrinsicPerRegister(Operation *op, StringRef intrinsic, ArrayRef<ValueRange> operands,
                                     ConversionPatternRewriter &rw) {
  size_t n = 1;
  for (ValueRange v : operands)
    n = std::max(n, v.size());
  SmallVector<Value> results;
  for (size_t k = 0; k < n; ++k) {
    SmallVector<Value> args;
    for (ValueRange v : operands)
      args.push_back(v.size() == 1 ? v[0] : v[k]);
    results.push_back(LLVM::CallIntrinsicOp::create(rw, op->getLoc(), rw.getF32Type(),
                                                    rw.getStringAttr(intrinsic), args)
                          ->getResult(0));
  }
  rw.replaceOpWithMultiple(op, {results});
}

/// f32 exp2 is the hardware's approximation with flush to zero: one
/// MUFU.EX2. libdevice's __nv_exp2f is the same approximation without the
/// flush, which ptxas wraps in a compare and two scaling multiplies for
/// subnormal results - three more instructions on every softmax element.
/// Subnormal results (below 2^-126) become +0; the interpreter and the
/// simulator flush them alike.
struct Exp2ApproxPattern : OpConversionPattern<math::Exp2Op> {
  static constexpr const char *kEx2ApproxFtz = "llvm.nvvm.ex2.approx.ftz.f32";
  Exp2ApproxPattern(const TypeConverter &tc, MLIRContext *ctx)
      : OpConversionPattern(tc, ctx, /*benefit=*/20) {} // above libdevice's
  LogicalResult matchAndRewrite(math::Exp2Op op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!getElementTypeOrSelf(op.getType()).isF32())
      return failure();
    replaceWithIntrinsicPerRegister(op, kEx2ApproxFtz, {adaptor.getOperand()}, rw);
    return success();
  }
};

/// tl::fdiv's f32 quotient (an `afn` divf) is div.full.f32: within 2 ulp
/// over the full range, a reciprocal and a multiply with range scaling,
/// where div.rn.f32 refines the reciprocal and calls a slow path.
struct FastDivPattern : OpConversionPattern<arith::DivFOp> {
  static constexpr const char *kDivFull = "llvm.nvvm.div.full";
  FastDivPattern(const TypeConverter &tc, MLIRContext *ctx)
      : OpConversionPattern(tc, ctx, /*benefit=*/20) {} // above the elementwise scalarisation
  LogicalResult matchAndRewrite(arith::DivFOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!getElementTypeOrSelf(op.getType()).isF32() ||
        !bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn) ||
        bitEnumContainsAny(op.getFastmath(), arith::FastMathFlags::arcp)) // tl::rcp's (FastRcpPattern)
      return failure();
    replaceWithIntrinsicPerRegister(op, kDivFull, {adaptor.getLhs(), adaptor.getRhs()}, rw);
    return success();
  }
};

/// tl::rcp (an `afn arcp` divf, f32) - a times rcp.approx.ftz.f32 of b,
/// within 1 ulp: one MUFU.RCP (and a multiply that folds away for a = 1),
/// where div.full.f32 wraps it in range checks that scale huge and tiny
/// divisors - nine instructions, and predicates ptxas runs short of in a
/// tile's worth of GELUs. Subnormal inputs and results flush to zero; the
/// interpreter and the simulator flush alike.
struct FastRcpPattern : OpConversionPattern<arith::DivFOp> {
  static constexpr const char *kRcpApproxFtz = "llvm.nvvm.rcp.approx.ftz.f";
  FastRcpPattern(const TypeConverter &tc, MLIRContext *ctx)
      : OpConversionPattern(tc, ctx, /*benefit=*/21) {} // above FastDivPattern
  LogicalResult matchAndRewrite(arith::DivFOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!getElementTypeOrSelf(op.getType()).isF32() ||
        !bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn | arith::FastMathFlags::arcp))
      return failure();
    ValueRange lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    const size_t n = std::max(lhs.size(), rhs.size());
    SmallVector<Value> results;
    for (size_t k = 0; k < n; ++k) {
      Value r = LLVM::CallIntrinsicOp::create(rw, op.getLoc(), rw.getF32Type(), rw.getStringAttr(kRcpApproxFtz),
                                              ValueRange{rhs.size() == 1 ? rhs[0] : rhs[k]})
                    ->getResult(0);
      results.push_back(LLVM::FMulOp::create(rw, op.getLoc(), lhs.size() == 1 ? lhs[0] : lhs[k], r));
    }
    rw.replaceOpWithMultiple(op, {results});
    return success();
  }
};

/// tl::tanh_approx (an `afn` math.tanh, f32): llvm.tanh.f32 marked afn,
/// which NVPTX selects as tanh.approx.f32 - one MUFU.TANH, relative error
/// about 2^-11 - where libdevice's tanhf is ~20 instructions. The
/// simulator computes tanh exactly, as the interpreter does.
struct TanhApproxPattern : OpConversionPattern<math::TanhOp> {
  static constexpr const char *kTanh = "llvm.tanh.f32";
  TanhApproxPattern(const TypeConverter &tc, MLIRContext *ctx)
      : OpConversionPattern(tc, ctx, /*benefit=*/20) {} // above libdevice's
  LogicalResult matchAndRewrite(math::TanhOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!getElementTypeOrSelf(op.getType()).isF32() ||
        !bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn))
      return failure();
    auto afn = LLVM::FastmathFlagsAttr::get(rw.getContext(), LLVM::FastmathFlags::afn);
    SmallVector<Value> results;
    for (Value v : adaptor.getOperand())
      results.push_back(LLVM::CallIntrinsicOp::create(rw, op.getLoc(), TypeRange{rw.getF32Type()},
                                                      rw.getStringAttr(kTanh), ValueRange{v}, afn)
                            ->getResult(0));
    rw.replaceOpWithMultiple(op, {results});
    return success();
  }
};

} // namespace

void populateElementwisePatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<ElementwisePattern, AssumePattern, PairedTruncPattern, Exp2ApproxPattern, FastDivPattern, FastRcpPattern,
               TanhApproxPattern>(
      types, patterns.getContext());
}

} // namespace tegula::lowering
