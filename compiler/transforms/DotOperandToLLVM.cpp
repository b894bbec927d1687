//===- DotOperandToLLVM.cpp - operands into mma fragments via ldmatrix ----===//
//
// The convert_layout into a #tilegpu.dot_operand, through SharedOperand
// (SharedOperand.h) - the generic exchange's scalar shared accesses
// replaced by 16-byte stores and ldmatrix:
//
//   1. the source's owners store it in vectors of up to 16 bytes into a tile
//      whose rows run along the source's contiguous dimension, with a
//      swizzle derived from the two access patterns (layout::deriveSwizzle)
//      so that neither the stores nor the reads conflict on banks;
//   2. each warp reads its fragments back with ldmatrix.x4 (.x2 / .x1 for
//      small operands; .trans when the rows of a 16-bit tile do not run
//      along K), 4 operand words per instruction; tf32 / i8 tiles whose
//      rows run along M or N are read element by element.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/SharedOperand.h"

#include "compiler/analysis/SharedMemoryUsage.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace tegula::lowering {

namespace {

/// A convert_layout into a dot operand: all fragments, in order.
struct ConvertToDotOperandViaShared : OpConversionPattern<tilegpu::ConvertLayoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto srcT = cast<RankedTensorType>(op.getSrc().getType());
    auto dstT = cast<RankedTensorType>(op.getType());
    auto operandEnc = dyn_cast_if_present<tilegpu::DotOperandEncodingAttr>(dstT.getEncoding());
    if (!operandEnc || !SharedOperand::applies(srcT, layoutOf(dstT), operandEnc.getOpIdx() == 0))
      return failure(); // the generic exchange takes it
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    Location loc = op.getLoc();
    SharedOperand operand(rw, loc, adaptor.getSrc(), srcT, layoutOf(dstT),
                          operandEnc.getOpIdx() == 0, sharedBuffer(rw, loc, op));
    leadingBarrier(rw, loc, op); // earlier users of the scratch are done
    operand.store();
    ctaBarrier(rw, loc);
    SmallVector<Value> out;
    for (int32_t r = 0; r < operand.registers(); ++r)
      out.push_back(operand.reg(r));
    rw.replaceOpWithMultiple(op, {out});
    return success();
  }
};

} // namespace

void populateDotOperandPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  // Above the generic exchange (1), below in-thread register moves (3).
  patterns.add<ConvertToDotOperandViaShared>(types, patterns.getContext(), /*benefit=*/2);
}

} // namespace tegula::lowering
