//===- ExchangeToLLVM.cpp - moving tiles between threads ------------------===//
//
// convert_layout, trans and reshape all move elements between threads when
// their layouts disagree (and gather reads them back by index). They share
// one lowering: every element's owner
// writes it to shared memory at the row-major index of where it goes, a
// barrier, every thread reads the elements its destination registers hold,
// a barrier. (Conversions that stay within a thread are register moves,
// handled with higher priority elsewhere; swizzling and shuffles come later.)
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LoweringCommon.h"

#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/OperandStaging.h"
#include "compiler/layout/SharedSwizzle.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

#include <bit>
#include <optional>

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::lowering {
namespace {

/// Row-major linear index of `coords` in `shape`.
Value linearIndex(OpBuilder &b, Location loc, ArrayRef<Value> coords, ArrayRef<int64_t> shape) {
  Value idx = i32Const(b, loc, 0);
  int64_t stride = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    idx = LLVM::AddOp::create(
        b, loc, idx, LLVM::MulOp::create(b, loc, coords[size_t(d)], i32Const(b, loc, stride)));
    stride *= shape[size_t(d)];
  }
  return idx;
}

/// Write `values` (layout `src`) through `op`'s shared-memory buffer and
/// read back, for each register of layout `dst`, the element at the
/// coordinates (in `dstShape`) `readCoords` gives for that register's own.
/// `destCoords` maps a source element's coordinates to the coordinates (in
/// `dstShape`) it must land at.
SmallVector<Value>
exchange(ConversionPatternRewriter &rw, Operation *op, ValueRange values, Type elem,
         const LinearLayout &src, const LinearLayout &dst, ArrayRef<int64_t> dstShape,
         llvm::function_ref<SmallVector<Value>(ArrayRef<Value>)> destCoords,
         llvm::function_ref<SmallVector<Value>(int32_t, ArrayRef<Value>)> readCoords = nullptr) {
  Location loc = op->getLoc();
  Type ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
  bool isPtr = isa<LLVM::LLVMPointerType>(elem);
  // Slot widths as analysis::exchangeSlotBytes counts them (pointers as
  // i64, i1 as a byte).
  Type slot = isPtr ? rw.getI64Type() : memoryType(elem);
  Value scratch = sharedBuffer(rw, loc, op);
  // Owners: registers and threads that are not copies of others.
  Owners owners = ownersOf(rw, loc, src);
  int32_t dupRegs = owners.duplicateRegisters;
  Value owner = owners.threadOwns;

  leadingBarrier(rw, loc, op); // earlier users of the scratch are done
  auto srcCoords = coordinates(rw, loc, src);
  for (int32_t r = 0; r < src.inDimSize("register"); ++r) {
    if (r & dupRegs)
      continue;
    Value idx = linearIndex(rw, loc, destCoords(srcCoords[size_t(r)]), dstShape);
    Value p = LLVM::GEPOp::create(rw, loc, ptr3, slot, scratch, ValueRange{idx});
    Value v = values[size_t(r)];
    if (elem.isInteger(1))
      v = LLVM::ZExtOp::create(rw, loc, slot, v);
    if (isPtr)
      v = LLVM::PtrToIntOp::create(rw, loc, slot, v);
    predicatedStore(rw, loc, p, v, owner, "shared");
  }
  ctaBarrier(rw, loc);
  SmallVector<Value> out;
  auto dstCoords = coordinates(rw, loc, dst);
  for (int32_t r = 0; r < dst.inDimSize("register"); ++r) {
    Value idx = linearIndex(rw, loc, readCoords ? readCoords(r, dstCoords[size_t(r)]) : dstCoords[size_t(r)],
                            dstShape);
    Value p = LLVM::GEPOp::create(rw, loc, ptr3, slot, scratch, ValueRange{idx});
    Value v = LLVM::LoadOp::create(rw, loc, slot, p);
    if (elem.isInteger(1))
      v = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::ne, v,
                               LLVM::ConstantOp::create(rw, loc, slot, rw.getIntegerAttr(slot, 0)));
    if (isPtr)
      v = LLVM::IntToPtrOp::create(rw, loc, elem, v);
    out.push_back(v);
  }
  return out;
}

Type convertedElement(const TypeConverter *tc, RankedTensorType t) {
  return tc->convertType(t.getElementType());
}

struct ConvertLayoutThroughShared : OpConversionPattern<tilegpu::ConvertLayoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    auto srcT = cast<RankedTensorType>(op.getSrc().getType());
    auto dstT = cast<RankedTensorType>(op.getType());
    auto values = exchange(rw, op, adaptor.getSrc(), convertedElement(getTypeConverter(), srcT),
                           layoutOf(srcT), layoutOf(dstT), dstT.getShape(),
                           [](ArrayRef<Value> c) { return SmallVector<Value>(c); });
    rw.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// A 2-D exchange whose source or destination holds several contiguous
/// elements per thread (an mma accumulator's pairs, a blocked layout's
/// 16-byte rows - the GEMM epilogue before its 128-bit global stores; a
/// transpose's loaded rows) moves them as vectors of up to 16 bytes, through
/// a tile of the destination's shape swizzled so that neither side's
/// accesses conflict on banks (layout::deriveSwizzle, as for dot operands).
/// `src` maps the source registers to destination coordinates. Nothing when
/// it does not apply (the scalar exchange above takes those).
std::optional<SmallVector<Value>> swizzledExchange(ConversionPatternRewriter &rw, Operation *op, ValueRange values,
                                                   Type elem, const LinearLayout &src, const LinearLayout &dst,
                                                   ArrayRef<int64_t> shape) {
  const unsigned bits = elem.isIntOrFloat() ? elem.getIntOrFloatBitWidth() : 0;
  if (shape.size() != 2 || (bits != 8 && bits != 16 && bits != 32) ||
      !llvm::all_of(shape, [](int64_t d) { return llvm::isPowerOf2_64(uint64_t(d)); }) ||
      shape[1] * bits < 128) // rows of whole 16-byte chunks
    return std::nullopt;
  layout::SharedTile tile{{int32_t(shape[0]), int32_t(shape[1])}, 1, int(bits), {}};
  const int32_t maxVector = int32_t(128 / bits);
  const int32_t vw = layout::vectorElementsOf(src.compose(tile.offsetLayout()), maxVector);
  const int32_t vr = layout::vectorElementsOf(dst.compose(tile.offsetLayout()), maxVector);
  if (vw == 1 && vr == 1)
    return std::nullopt;
  tile = layout::deriveSwizzle(tile, {layout::vectorAccess("store", src, vw, int(bits)),
                                      layout::vectorAccess("load", dst, vr, int(bits))});
  Location loc = op->getLoc();
  Type ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
  Value scratch = sharedBuffer(rw, loc, op);
  auto at = [&](Value offset) {
    return LLVM::GEPOp::create(rw, loc, ptr3, elem, scratch, ValueRange{offset});
  };
  leadingBarrier(rw, loc, op); // earlier users of the scratch are done
  Owners owners = ownersOf(rw, loc, src);
  auto storeOffsets = coordinates(rw, loc, src.compose(tile.offsetLayout()));
  SmallVector<Value> in(values);
  for (int32_t r = 0; r < src.inDimSize("register"); r += vw) {
    if (r & owners.duplicateRegisters)
      continue;
    predicatedStore(rw, loc, at(storeOffsets[size_t(r)][0]), ArrayRef<Value>(in).slice(size_t(r), size_t(vw)),
                    owners.threadOwns, "shared");
  }
  ctaBarrier(rw, loc);
  // Loads of whole 32-bit words where the vector has them (ld.shared.v4.b32
  // for 8 x bf16), unpacked into elements.
  auto loadOffsets = coordinates(rw, loc, dst.compose(tile.offsetLayout()));
  const int32_t words = vr * int32_t(bits) / 32;
  SmallVector<Value> out;
  for (int32_t r = 0; r < dst.inDimSize("register"); r += vr) {
    Value p = at(loadOffsets[size_t(r)][0]);
    if (words == 0) { // narrower than a word: one element, or a vector of 2 bytes
      if (vr == 1) {
        out.push_back(LLVM::LoadOp::create(rw, loc, elem, p));
        continue;
      }
      Value vec = LLVM::LoadOp::create(rw, loc, VectorType::get({vr}, elem), p,
                                       /*alignment=*/unsigned(vr * int32_t(bits) / 8));
      for (int32_t i = 0; i < vr; ++i)
        out.push_back(LLVM::ExtractElementOp::create(rw, loc, vec, i32Const(rw, loc, i)));
      continue;
    }
    auto vecType = VectorType::get({words}, rw.getI32Type());
    Value vec = LLVM::LoadOp::create(rw, loc, vecType, p, /*alignment=*/unsigned(words * 4));
    SmallVector<Value> loaded;
    for (int32_t w = 0; w < words; ++w)
      loaded.push_back(LLVM::ExtractElementOp::create(rw, loc, vec, i32Const(rw, loc, w)));
    if (bits == 32)
      for (Value w : loaded)
        out.push_back(LLVM::BitcastOp::create(rw, loc, elem, w));
    else
      llvm::append_range(out, unpackWords(rw, loc, loaded, elem));
  }
  return out;
}

struct ConvertLayoutThroughSwizzledTile : OpConversionPattern<tilegpu::ConvertLayoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto srcT = cast<RankedTensorType>(op.getSrc().getType());
    auto dstT = cast<RankedTensorType>(op.getType());
    auto operand = dyn_cast_if_present<tilegpu::DotOperandEncodingAttr>(dstT.getEncoding());
    if (operand && operand.getElementBits() == 16)
      return failure(); // ldmatrix (DotOperandToLLVM.cpp)
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    auto out = swizzledExchange(rw, op, adaptor.getSrc(), convertedElement(getTypeConverter(), srcT),
                                layoutOf(srcT), layoutOf(dstT), dstT.getShape());
    if (!out)
      return failure();
    rw.replaceOpWithMultiple(op, {*out});
    return success();
  }
};

struct TransThroughShared : OpConversionPattern<tile::TransOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::TransOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    auto srcT = cast<RankedTensorType>(op.getSrc().getType());
    auto dstT = cast<RankedTensorType>(op.getType());
    SmallVector<int32_t> order(op.getOrder());
    // A 2-D transpose: the source's layout read as destination coordinates
    // is a conversion, vectorised and swizzled where one side has runs.
    if (dstT.getRank() == 2 && order[0] == 1) {
      const LinearLayout asDestination = layoutOf(srcT).transposeOuts({"dim1", "dim0"}).renameOuts({"dim0", "dim1"});
      if (auto out = swizzledExchange(rw, op, adaptor.getSrc(), convertedElement(getTypeConverter(), srcT),
                                      asDestination, layoutOf(dstT), dstT.getShape())) {
        rw.replaceOpWithMultiple(op, {*out});
        return success();
      }
    }
    // Result dim i is source dim order[i].
    auto values = exchange(rw, op, adaptor.getSrc(), convertedElement(getTypeConverter(), srcT),
                           layoutOf(srcT), layoutOf(dstT), dstT.getShape(),
                           [&](ArrayRef<Value> c) {
                             SmallVector<Value> d;
                             for (int32_t s : order)
                               d.push_back(c[size_t(s)]);
                             return d;
                           });
    rw.replaceOpWithMultiple(op, {values});
    return success();
  }
};

struct ReshapeThroughShared : OpConversionPattern<tile::ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::ReshapeOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    auto srcT = cast<RankedTensorType>(op.getSrc().getType());
    auto dstT = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    // Same row-major position: source coordinates -> linear -> result coordinates.
    auto values = exchange(rw, op, adaptor.getSrc(), convertedElement(getTypeConverter(), srcT),
                           layoutOf(srcT), layoutOf(dstT), dstT.getShape(),
                           [&](ArrayRef<Value> c) {
                             Value lin = linearIndex(rw, loc, c, srcT.getShape());
                             SmallVector<Value> d(size_t(dstT.getRank()));
                             for (int64_t k = dstT.getRank() - 1; k >= 0; --k) {
                               int64_t ext = dstT.getDimSize(k);
                               d[size_t(k)] = LLVM::URemOp::create(rw, loc, lin, i32Const(rw, loc, ext));
                               lin = LLVM::UDivOp::create(rw, loc, lin, i32Const(rw, loc, ext));
                             }
                             return d;
                           });
    rw.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// tile.gather: the source staged row-major as a conversion stages it; each
/// thread then reads, for each result element it holds, the source element
/// at its own coordinates with the axis one replaced by its index register
/// (the index shares the result's layout: same shape, and convert-tile-to-
/// tilegpu gives both the default layout) - clamped into the source, so a
/// bad index reads a neighbour, never outside the tile.
struct GatherThroughShared : OpConversionPattern<tile::GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::GatherOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    auto srcT = cast<RankedTensorType>(op.getSrc().getType());
    auto indexT = cast<RankedTensorType>(op.getIndex().getType());
    auto dstT = cast<RankedTensorType>(op.getType());
    if (layoutOf(indexT) != layoutOf(dstT)) // convert-tile-to-tilegpu makes them one
      return op.emitOpError("the index and the result must share a layout (convert-tile-to-tilegpu's)");
    Location loc = op.getLoc();
    const size_t axis = size_t(op.getAxis());
    ValueRange index = adaptor.getIndex();
    const int32_t last = int32_t(srcT.getDimSize(int64_t(axis)) - 1);
    auto values = exchange(
        rw, op, adaptor.getSrc(), convertedElement(getTypeConverter(), srcT), layoutOf(srcT), layoutOf(dstT),
        srcT.getShape(), [](ArrayRef<Value> c) { return SmallVector<Value>(c); },
        [&](int32_t r, ArrayRef<Value> c) {
          SmallVector<Value> at(c);
          Value i = index[size_t(r)];
          Value low = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::slt, i, i32Const(rw, loc, 0));
          i = LLVM::SelectOp::create(rw, loc, low, i32Const(rw, loc, 0), i);
          Value high = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::sgt, i, i32Const(rw, loc, last));
          at[axis] = LLVM::SelectOp::create(rw, loc, high, i32Const(rw, loc, last), i);
          return at;
        });
    rw.replaceOpWithMultiple(op, {values});
    return success();
  }
};

} // namespace

void populateExchangePatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  // Benefit 1: in-thread register moves (benefit 2 or more) win when possible.
  patterns.add<ConvertLayoutThroughShared, TransThroughShared, ReshapeThroughShared, GatherThroughShared>(
      types, patterns.getContext(), /*benefit=*/1);
  // Vectors through a swizzled tile where the layouts have them.
  patterns.add<ConvertLayoutThroughSwizzledTile>(types, patterns.getContext(), /*benefit=*/2);
}

} // namespace tegula::lowering
