//===- AccelerateDot.cpp - tile.dot onto mma.sync layouts -----------------===//
#include "compiler/transforms/Passes.h"

namespace tegula {
#define GEN_PASS_DEF_ACCELERATEDOT
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// The operand element width mma.sync m16n8k16 takes, or 0.
unsigned mmaOperandBits(RankedTensorType a, RankedTensorType b, RankedTensorType c) {
  Type ea = a.getElementType(), eb = b.getElementType();
  if (ea != eb || !c.getElementType().isF32())
    return 0;
  return ea.isF16() || ea.isBF16() ? 16 : 0;
}

struct AccelerateDotPass : tegula::impl::AccelerateDotBase<AccelerateDotPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto warpsAttr = module->getAttrOfType<IntegerAttr>("tilegpu.num_warps");
    const int64_t numWarps = warpsAttr ? warpsAttr.getInt() : 4;
    MLIRContext *ctx = &getContext();
    module.walk([&](tile::DotOp dot) {
      auto aT = cast<RankedTensorType>(dot.getA().getType());
      auto bT = cast<RankedTensorType>(dot.getB().getType());
      auto cT = cast<RankedTensorType>(dot.getType());
      if (!cT.getEncoding() || isa<tilegpu::MmaEncodingAttr>(cT.getEncoding()))
        return;
      const unsigned bits = mmaOperandBits(aT, bT, cT);
      const int64_t M = cT.getDimSize(0), N = cT.getDimSize(1), K = aT.getDimSize(1);
      if (!bits || M % 16 || N % 8 || K % 16)
        return; // the FMA lowering takes it
      // Warps along M while there are 16-row blocks for them, the rest along N.
      int32_t wm = 1;
      while (wm < numWarps && 16 * wm * 2 <= M)
        wm *= 2;
      const int32_t wn = int32_t(numWarps) / wm;
      auto mma = tilegpu::MmaEncodingAttr::get(ctx, {wm, wn});
      auto retype = [](RankedTensorType t, Attribute enc) {
        return RankedTensorType::get(t.getShape(), t.getElementType(), enc);
      };
      OpBuilder b(dot);
      Location loc = dot.getLoc();
      auto convert = [&](Value v, RankedTensorType to) -> Value {
        return tilegpu::ConvertLayoutOp::create(b, loc, to, v);
      };
      Value a = convert(dot.getA(), retype(aT, tilegpu::DotOperandEncodingAttr::get(ctx, 0, mma, bits)));
      Value bv = convert(dot.getB(), retype(bT, tilegpu::DotOperandEncodingAttr::get(ctx, 1, mma, bits)));
      Value acc = convert(dot.getAcc(), retype(cT, mma));
      auto onTensorCores =
          tile::DotOp::create(b, loc, retype(cT, mma), a, bv, acc, dot.getPrecisionAttr());
      dot.replaceAllUsesWith(convert(onTensorCores.getResult(), cT));
      dot.erase();
    });
  }
};

} // namespace
