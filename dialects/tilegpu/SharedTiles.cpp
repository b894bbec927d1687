//===- SharedTiles.cpp - rings of shared tiles and their async ops --------===//
#include "dialects/tilegpu/TileGPUDialect.h"
#include "compiler/layout/WgmmaOperands.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace tegula;
using namespace tegula::tilegpu;

LogicalResult SharedTilesType::verify(function_ref<InFlightDiagnostic()> emitError, unsigned stages,
                                      ArrayRef<int64_t> shape, Type elementType,
                                      unsigned contiguousDim, ArrayRef<int32_t> swizzle,
                                      int32_t blockElements) {
  if (stages < 1)
    return emitError() << "a ring has at least one stage";
  if (shape.size() != 2 || !llvm::all_of(shape, [](int64_t d) { return d > 0 && llvm::isPowerOf2_64(uint64_t(d)); }))
    return emitError() << "shared tiles are 2-D with power-of-two sizes";
  if (!elementType.isIntOrFloat() || elementType.getIntOrFloatBitWidth() < 8)
    return emitError() << "shared tiles hold integers or floats of 8 bits or more, not " << elementType;
  if (contiguousDim > 1)
    return emitError() << "contiguousDim is 0 or 1";
  if (blockElements < 0 || (blockElements > 0 && !llvm::isPowerOf2_64(uint64_t(blockElements))))
    return emitError() << "blockElements is 0 or a power of two, got " << blockElements;
  const int64_t rowElements =
      blockElements ? std::min<int64_t>(blockElements, shape[contiguousDim]) : shape[contiguousDim];
  const int64_t chunks = rowElements * elementType.getIntOrFloatBitWidth() / 8 / 16;
  for (int32_t s : swizzle)
    if (s < 0 || (s > 0 && s >= chunks))
      return emitError() << "swizzle flips chunk bits " << s << " but a row has " << chunks
                         << " 16-byte chunks";
  return success();
}

layout::SharedTile SharedTilesType::tile() const {
  return layout::SharedTile{{int32_t(getShape()[0]), int32_t(getShape()[1])}, int(getContiguousDim()),
                            int(getElementType().getIntOrFloatBitWidth()),
                            std::vector<int32_t>(getSwizzle().begin(), getSwizzle().end()),
                            getBlockElements()};
}

int64_t SharedTilesType::tileBytes() const {
  return getShape()[0] * getShape()[1] * getElementType().getIntOrFloatBitWidth() / 8;
}

LogicalResult AllocSharedOp::verify() {
  if (getTf32() && !getResult().getType().getElementType().isF32())
    return emitOpError() << "tf32: only rings of f32 tiles are rounded to tf32, not "
                         << getResult().getType().getElementType();
  return success();
}

LogicalResult AsyncLoadOp::verify() {
  auto ptrs = cast<RankedTensorType>(getPtr().getType());
  auto ptr = dyn_cast<tile::PtrType>(ptrs.getElementType());
  SharedTilesType dst = getDst().getType();
  if (!ptr || ptr.getPointeeType() != dst.getElementType())
    return emitOpError() << "copies " << dst.getElementType() << " elements, from pointers "
                         << ptrs.getElementType();
  if (ptrs.getShape() != dst.getShape() || !ptrs.getEncoding())
    return emitOpError() << "needs a laid-out pointer tile of the ring's tile shape";
  if (getMask()) {
    auto mask = cast<RankedTensorType>(getMask().getType());
    if (mask.getShape() != ptrs.getShape() || !mask.getElementType().isInteger(1) ||
        mask.getEncoding() != ptrs.getEncoding())
      return emitOpError() << "mask must be i1 in the pointers' shape and layout";
  }
  return success();
}

LogicalResult TmaLoadOp::verify() {
  const std::optional<int64_t> bytes =
      getExpectBytesAttr() ? std::optional(getExpectBytesAttr().getInt()) : std::nullopt;
  if (bytes && *bytes < 0)
    return emitOpError() << "expects " << *bytes << " bytes: a count of bytes is never negative";
  // The signalled ring's mbarrier counts one arrival a phase: its own load's.
  const bool own = !getSignals() || getSignals() == getRing();
  if (!own && bytes.value_or(1) != 0)
    return emitOpError() << "signals another ring's mbarrier, so it announces no bytes there "
                            "(expectBytes = 0): that ring's own load announces the group's";
  if (!own && getSignals().getType().getStages() != getRing().getType().getStages())
    return emitOpError() << "signals the mbarriers of a ring with " << getSignals().getType().getStages()
                         << " stages from a ring with " << getRing().getType().getStages()
                         << " stages: rings that share mbarriers have one stage each per mbarrier";
  // Its own mbarrier's one arrival a phase, with at least its own bytes (a
  // phase that completed before those land would let readers in early).
  if (own && bytes && *bytes < getRing().getType().tileBytes())
    return emitOpError() << "announces " << *bytes << " bytes on its own mbarrier, fewer than the "
                         << getRing().getType().tileBytes() << " its copies bring";
  if (auto ctas = getMulticastAttr(); ctas && !layout::multicastSliceRows(getRing().getType().tile(), int(ctas.getInt())))
    return emitOpError() << "multicasts to " << ctas.getInt() << " CTAs a tile whose "
                         << getRing().getType().tile().shape[0]
                         << " rows do not split into that many slices of whole 8-row swizzle periods";
  return success();
}

LogicalResult StoreSharedOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  SharedTilesType dst = getDst().getType();
  if (src.getElementType() != dst.getElementType())
    return emitOpError() << "stores " << src.getElementType() << " elements into a ring of "
                         << dst.getElementType();
  if (src.getShape() != dst.getShape() || !src.getEncoding())
    return emitOpError() << "needs a laid-out tile of the ring's tile shape";
  return success();
}

namespace {

/// The operand types a dot on shared memory takes: 16-bit ones with an f32
/// accumulator, i8 ones with an i32 accumulator, f32 at tf32 precision (on
/// mma.sync also tf32x3); on wgmma also fp8 (mma.sync would take it as f16).
LogicalResult verifyOperandTypes(Operation *op, Type e, RankedTensorType acc,
                                 std::optional<tile::DotPrecision> precision) {
  const bool wgmma = cast<MmaEncodingAttr>(acc.getEncoding()).isWgmma();
  const bool f32Acc = acc.getElementType().isF32();
  const bool ok = ((e.isBF16() || e.isF16()) && f32Acc) ||
                  (isa<Float8E4M3FNType, Float8E5M2Type>(e) && wgmma && f32Acc) ||
                  (e.isF32() && f32Acc && precision &&
                   (wgmma ? *precision == tile::DotPrecision::TF32 : *precision != tile::DotPrecision::IEEE)) ||
                  (e.isInteger(8) && acc.getElementType().isInteger(32));
  if (!ok)
    return op->emitOpError() << "takes f16/bf16 operands with an f32 accumulator or i8 ones with an "
                                "i32 accumulator, f32 ones at tf32 precision (on mma.sync also "
                                "tf32x3); on wgmma fp8 ones; got "
                             << e << " operands, a " << acc.getElementType() << " accumulator";
  return success();
}

} // namespace

LogicalResult DotSharedOp::verify() {
  SharedTilesType a = getA().getType(), b = getB().getType();
  auto acc = cast<RankedTensorType>(getAcc().getType());
  if (acc != getType() || !isa_and_present<MmaEncodingAttr>(acc.getEncoding()))
    return emitOpError() << "accumulator and result are one tile type with an mma layout";
  // The operands as the dot sees them (a transposed ring holds them swapped).
  const int64_t am = a.getShape()[getTransposeA() ? 1 : 0], ak = a.getShape()[getTransposeA() ? 0 : 1];
  const int64_t bk = b.getShape()[getTransposeB() ? 1 : 0], bn = b.getShape()[getTransposeB() ? 0 : 1];
  if (ak != bk || am != acc.getDimSize(0) || bn != acc.getDimSize(1))
    return emitOpError() << "shapes do not multiply: [" << am << ", " << ak << "] x [" << bk << ", " << bn
                         << "] -> " << acc;
  if (a.getElementType() != b.getElementType())
    return emitOpError() << "takes A and B of one element type";
  return verifyOperandTypes(getOperation(), a.getElementType(), acc, getPrecision());
}

LogicalResult DotSharedBOp::verify() {
  auto a = cast<RankedTensorType>(getA().getType());
  SharedTilesType b = getB().getType();
  auto acc = cast<RankedTensorType>(getAcc().getType());
  auto mma = dyn_cast_if_present<MmaEncodingAttr>(acc.getEncoding());
  if (acc != getType() || !mma)
    return emitOpError() << "accumulator and result are one tile type with an mma layout";
  auto fragments = dyn_cast_if_present<DotOperandEncodingAttr>(a.getEncoding());
  if (!fragments || fragments.getOpIdx() != 0 || fragments.getParent() != mma)
    return emitOpError() << "A must be operand 0 fragments of the accumulator's mma, got " << a;
  const int64_t bk = b.getShape()[getTransposeB() ? 1 : 0], bn = b.getShape()[getTransposeB() ? 0 : 1];
  if (a.getDimSize(1) != bk || a.getDimSize(0) != acc.getDimSize(0) || bn != acc.getDimSize(1))
    return emitOpError() << "shapes do not multiply: " << a << " x [" << bk << ", " << bn << "] -> " << acc;
  if (a.getElementType() != b.getElementType())
    return emitOpError() << "takes A and B of one element type";
  return verifyOperandTypes(getOperation(), b.getElementType(), acc, getPrecision());
}
