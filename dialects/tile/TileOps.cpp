//===- TileOps.cpp - tile op verifiers and folders ------------------------===//
#include "dialects/tile/TileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace tegula::tile;

#define GET_OP_CLASSES
#include "dialects/tile/TileOps.cpp.inc"

namespace {
/// A splat constant keeps its value under any shape change.
OpFoldResult reshapedSplat(Attribute src, RankedTensorType type) {
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(src))
    return SplatElementsAttr::get(type, splat.getSplatValue<Attribute>());
  return {};
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "," : "") + std::to_string(d);
  return s + "]";
}
} // namespace

//===----------------------------------------------------------------------===//
// make_range
//===----------------------------------------------------------------------===//

LogicalResult MakeRangeOp::verify() {
  // I32Attr getters are unsigned; the attribute holds a signed i32.
  int64_t start = int32_t(getStart()), end = int32_t(getEnd());
  if (end <= start)
    return emitOpError() << "end (" << end << ") must be greater than start ("
                         << start << ")";
  if (!llvm::isPowerOf2_64(end - start))
    return emitOpError() << "range length " << end - start
                         << " must be a power of two";
  auto type = getType();
  if (type.getRank() != 1 || type.getDimSize(0) != end - start)
    return emitOpError() << "result must be tensor<" << end - start
                         << "xi32>, got " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// splat
//===----------------------------------------------------------------------===//

OpFoldResult SplatOp::fold(FoldAdaptor adaptor) {
  if (auto value = dyn_cast_if_present<TypedAttr>(adaptor.getSrc()))
    if (!isa<PtrType>(value.getType()))
      return SplatElementsAttr::get(getType(), value);
  return {};
}

//===----------------------------------------------------------------------===//
// broadcast
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  auto src = getSrc().getType(), dst = getType();
  if (src.getRank() != dst.getRank())
    return emitOpError() << "source rank " << src.getRank()
                         << " differs from result rank " << dst.getRank()
                         << "; use expand_dims first";
  for (int64_t i = 0; i < src.getRank(); ++i)
    if (src.getDimSize(i) != 1 && src.getDimSize(i) != dst.getDimSize(i))
      return emitOpError() << "cannot broadcast shape " << shapeStr(src.getShape())
                           << " to " << shapeStr(dst.getShape())
                           << ": dimension " << i << " is neither 1 nor equal";
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return reshapedSplat(adaptor.getSrc(), getType());
}

namespace {
/// broadcast(splat x) -> splat x, and the same for expand_dims/reshape:
/// a splat has no shape to preserve.
template <typename OpTy>
struct ShapeOpOfSplat : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    auto splat = op.getSrc().template getDefiningOp<SplatOp>();
    if (!splat)
      return failure();
    rewriter.replaceOpWithNewOp<SplatOp>(op, op.getType(), splat.getSrc());
    return success();
  }
};
} // namespace

void BroadcastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ShapeOpOfSplat<BroadcastOp>>(context);
}

//===----------------------------------------------------------------------===//
// expand_dims
//===----------------------------------------------------------------------===//

LogicalResult ExpandDimsOp::verify() {
  auto src = getSrc().getType();
  int64_t axis = int32_t(getAxis());
  if (axis < 0 || axis > src.getRank())
    return emitOpError() << "axis " << axis << " out of range for a rank-"
                         << src.getRank() << " source";
  SmallVector<int64_t> shape(src.getShape());
  shape.insert(shape.begin() + axis, 1);
  if (getType().getShape() != ArrayRef<int64_t>(shape))
    return emitOpError() << "result shape must be " << shapeStr(shape)
                         << ", got " << shapeStr(getType().getShape());
  return success();
}

OpFoldResult ExpandDimsOp::fold(FoldAdaptor adaptor) {
  return reshapedSplat(adaptor.getSrc(), getType());
}

void ExpandDimsOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                               MLIRContext *context) {
  results.add<ShapeOpOfSplat<ExpandDimsOp>>(context);
}

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto src = getSrc().getType(), dst = getType();
  if (src.getNumElements() != dst.getNumElements())
    return emitOpError() << "cannot reshape " << shapeStr(src.getShape()) << " ("
                         << src.getNumElements() << " elements) to "
                         << shapeStr(dst.getShape()) << " ("
                         << dst.getNumElements() << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return reshapedSplat(adaptor.getSrc(), getType());
}

namespace {
/// reshape(reshape(x)) -> reshape(x): row-major reshapes compose.
struct ReshapeOfReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getSrc().getDefiningOp<ReshapeOp>();
    if (!inner)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getSrc());
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<ShapeOpOfSplat<ReshapeOp>, ReshapeOfReshape>(context);
}

//===----------------------------------------------------------------------===//
// trans
//===----------------------------------------------------------------------===//

LogicalResult TransOp::verify() {
  auto src = getSrc().getType();
  ArrayRef<int32_t> order = getOrder();
  if (static_cast<int64_t>(order.size()) != src.getRank())
    return emitOpError() << "order has " << order.size()
                         << " entries but the source has rank " << src.getRank();
  SmallVector<bool> seen(order.size(), false);
  SmallVector<int64_t> shape;
  for (int32_t d : order) {
    if (d < 0 || d >= src.getRank() || seen[d])
      return emitOpError() << "order must be a permutation of [0, "
                           << src.getRank() << ")";
    seen[d] = true;
    shape.push_back(src.getDimSize(d));
  }
  if (getType().getShape() != ArrayRef<int64_t>(shape))
    return emitOpError() << "result shape must be " << shapeStr(shape) << ", got "
                         << shapeStr(getType().getShape());
  return success();
}

LogicalResult GatherOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  auto index = cast<RankedTensorType>(getIndex().getType());
  const int64_t axis = getAxis();
  if (src.getRank() == 0 || index.getRank() != src.getRank())
    return emitOpError() << "index " << shapeStr(index.getShape()) << " must have the rank of the source "
                         << shapeStr(src.getShape());
  if (axis < 0 || axis >= src.getRank())
    return emitOpError() << "axis " << axis << " is out of range for a " << shapeStr(src.getShape()) << " source";
  if (!index.getElementType().isInteger(32))
    return emitOpError() << "index must hold i32, got " << index.getElementType();
  for (int64_t d = 0; d < src.getRank(); ++d)
    if (d != axis && index.getDimSize(d) != src.getDimSize(d))
      return emitOpError() << "index " << shapeStr(index.getShape()) << " must match the source "
                           << shapeStr(src.getShape()) << " in every dimension but " << axis;
  if (getType().getShape() != index.getShape() || getType().getElementType() != src.getElementType())
    return emitOpError() << "result must be the index's shape with the source's element type";
  return success();
}

LogicalResult HistogramOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  auto result = cast<RankedTensorType>(getType());
  if (src.getRank() != 1 || !src.getElementType().isInteger(32))
    return emitOpError() << "source must be a 1-D tile of i32, got " << src;
  if (result.getRank() != 1 || !result.getElementType().isInteger(32) || result.getDimSize(0) < 1)
    return emitOpError() << "result must be a 1-D tile of i32 counts, got " << result;
  return success();
}

OpFoldResult TransOp::fold(FoldAdaptor adaptor) {
  if (llvm::equal(getOrder(), llvm::seq<int32_t>(0, getOrder().size())))
    return getSrc();
  return reshapedSplat(adaptor.getSrc(), getType());
}

namespace {
/// trans(trans(x, p), q) -> trans(x, p o q).
struct TransOfTrans : OpRewritePattern<TransOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getSrc().getDefiningOp<TransOp>();
    if (!inner)
      return failure();
    SmallVector<int32_t> order;
    for (int32_t d : op.getOrder())
      order.push_back(inner.getOrder()[d]);
    rewriter.replaceOpWithNewOp<TransOp>(op, op.getType(), inner.getSrc(), order);
    return success();
  }
};

/// The transpose of a tile built from broadcast ranges, splats and
/// constants by elementwise ops (a mask `rm[:, None] < M & rn[None, :] < N`,
/// offsets) is built transposed instead: on the GPU a transpose crosses
/// shared memory, and the rebuilt tile keeps what the axis analysis knows
/// of it (so `store(p, v.trans(), mask.trans())` stores in vectors).
struct TransOfCheapTile : OpRewritePattern<TransOp> {
  using OpRewritePattern::OpRewritePattern;

  static RankedTensorType permuted(RankedTensorType t, ArrayRef<int32_t> order) {
    SmallVector<int64_t> shape;
    for (int32_t d : order)
      shape.push_back(t.getDimSize(d));
    return RankedTensorType::get(shape, t.getElementType());
  }

  /// Whether `v` can be rebuilt transposed by `order` without a transpose.
  static bool rebuildable(Value v, ArrayRef<int32_t> order, int depth) {
    Operation *def = v.getDefiningOp();
    if (!def || depth > 8 || !isa<RankedTensorType>(v.getType()))
      return false;
    SplatElementsAttr constant;
    if (isa<SplatOp>(def) || matchPattern(v, m_Constant(&constant)))
      return true;
    if (auto broadcast = dyn_cast<BroadcastOp>(def))
      return rebuildable(broadcast.getSrc(), order, depth + 1);
    if (isa<ExpandDimsOp>(def))
      return order.size() == 2; // a 1-D tile made a row or a column
    if (def->hasTrait<OpTrait::Elementwise>() && def->getNumResults() == 1 && def->getNumRegions() == 0 &&
        isMemoryEffectFree(def))
      return llvm::all_of(def->getOperands(), [&](Value o) {
        return isa<RankedTensorType>(o.getType()) && rebuildable(o, order, depth + 1);
      });
    return false;
  }

  static Value rebuild(PatternRewriter &rw, Value v, ArrayRef<int32_t> order) {
    auto type = permuted(cast<RankedTensorType>(v.getType()), order);
    Operation *def = v.getDefiningOp();
    Location loc = def->getLoc();
    if (auto splat = dyn_cast<SplatOp>(def))
      return SplatOp::create(rw, loc, type, splat.getSrc());
    SplatElementsAttr constant;
    if (matchPattern(v, m_Constant(&constant)))
      return arith::ConstantOp::create(rw, loc, type, SplatElementsAttr::get(type, constant.getSplatValue<Attribute>()));
    if (auto broadcast = dyn_cast<BroadcastOp>(def))
      return BroadcastOp::create(rw, loc, type, rebuild(rw, broadcast.getSrc(), order));
    if (auto expand = dyn_cast<ExpandDimsOp>(def))
      return ExpandDimsOp::create(rw, loc, type, expand.getSrc(), rw.getI32IntegerAttr(1 - int32_t(expand.getAxis())));
    SmallVector<Value> operands;
    for (Value o : def->getOperands())
      operands.push_back(rebuild(rw, o, order));
    OperationState state(loc, def->getName(), operands, TypeRange{type}, def->getAttrs());
    return rw.create(state)->getResult(0);
  }

  LogicalResult matchAndRewrite(TransOp op, PatternRewriter &rewriter) const override {
    Operation *def = op.getSrc().getDefiningOp();
    // A splat or constant folds; a bare range is no cheaper transposed.
    if (!def || isa<SplatOp, arith::ConstantOp>(def) || !rebuildable(op.getSrc(), op.getOrder(), 0))
      return failure();
    rewriter.replaceOp(op, rebuild(rewriter, op.getSrc(), op.getOrder()));
    return success();
  }
};
} // namespace

void TransOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<TransOfTrans, TransOfCheapTile>(context);
}

//===----------------------------------------------------------------------===//
// addptr
//===----------------------------------------------------------------------===//

LogicalResult AddPtrOp::verify() {
  auto ptrT = dyn_cast<RankedTensorType>(getPtr().getType());
  auto offT = dyn_cast<RankedTensorType>(getOffset().getType());
  if (bool(ptrT) != bool(offT))
    return emitOpError() << "pointer and offset must both be scalars or both be "
                            "tiles; splat the scalar first";
  if (ptrT && ptrT.getShape() != offT.getShape())
    return emitOpError() << "pointer shape " << shapeStr(ptrT.getShape())
                         << " differs from offset shape "
                         << shapeStr(offT.getShape());
  return success();
}

OpFoldResult AddPtrOp::fold(FoldAdaptor adaptor) {
  if (matchPattern(adaptor.getOffset(), m_Zero()) ||
      matchPattern(getOffset(), m_Zero()))
    return getPtr();
  return {};
}

//===----------------------------------------------------------------------===//
// tensor descriptors
//===----------------------------------------------------------------------===//

LogicalResult MakeTensorDescriptorOp::verify() {
  RankedTensorType block = getType().getBlockType();
  if (getBase().getType().getPointeeType() != block.getElementType())
    return emitOpError() << "base points at " << getBase().getType().getPointeeType()
                         << " but the block holds " << block.getElementType();
  if (getShape().size() != size_t(block.getRank()) ||
      getStrides().size() != size_t(block.getRank()))
    return emitOpError() << "needs " << block.getRank() << " extents and strides for a rank-"
                         << block.getRank() << " block, got " << getShape().size() << " and "
                         << getStrides().size();
  APInt inner;
  if (matchPattern(getStrides().back(), m_ConstantInt(&inner)) && !inner.isOne())
    return emitOpError() << "the innermost stride must be 1, got " << inner.getSExtValue();
  return success();
}

namespace {
LogicalResult verifyDescriptorAccess(Operation *op, TensorDescType desc, size_t offsets,
                                     Type tile) {
  RankedTensorType block = desc.getBlockType();
  if (offsets != size_t(block.getRank()))
    return op->emitOpError() << "needs " << block.getRank() << " offsets, got " << offsets;
  // The tile may carry a layout (tilegpu); shape and elements must match.
  auto t = dyn_cast<RankedTensorType>(tile);
  if (!t || t.getShape() != block.getShape() || t.getElementType() != block.getElementType())
    return op->emitOpError() << "accesses " << tile << " through a descriptor of " << block
                             << " blocks";
  return success();
}
} // namespace

LogicalResult DescriptorLoadOp::verify() {
  return verifyDescriptorAccess(*this, getDesc().getType(), getOffsets().size(), getType());
}

LogicalResult DescriptorStoreOp::verify() {
  return verifyDescriptorAccess(*this, getDesc().getType(), getOffsets().size(),
                                getValue().getType());
}

//===----------------------------------------------------------------------===//
// load / store
//===----------------------------------------------------------------------===//

namespace {
/// The cache hints' rules: PTX takes a cache operator or an eviction
/// priority, and a volatile access neither.
LogicalResult verifyCacheHints(Operation *op, CacheModifier cache, EvictionPolicy evict, bool isVolatile,
                               bool isLoad) {
  const bool loadOperator = cache == CacheModifier::CA || cache == CacheModifier::CG ||
                            cache == CacheModifier::CS || cache == CacheModifier::CV;
  const bool storeOperator = cache == CacheModifier::WB || cache == CacheModifier::CG ||
                             cache == CacheModifier::CS || cache == CacheModifier::WT;
  if (cache != CacheModifier::None && !(isLoad ? loadOperator : storeOperator))
    return op->emitOpError() << "cache operator ." << stringifyCacheModifier(cache) << " is not one of a "
                             << (isLoad ? "load's (ca, cg, cs, cv)" : "store's (wb, cg, cs, wt)");
  if (cache != CacheModifier::None && evict != EvictionPolicy::Normal)
    return op->emitOpError() << "takes a cache operator or an eviction policy, not both";
  if (isVolatile && (cache != CacheModifier::None || evict != EvictionPolicy::Normal))
    return op->emitOpError() << "volatile takes no cache operator or eviction policy";
  return success();
}
} // namespace

LogicalResult LoadOp::verify() {
  if (getOther() && !getMask())
    return emitOpError() << "'other' needs a mask";
  return verifyCacheHints(*this, getCache(), getEvict(), getIsVolatile(), /*isLoad=*/true);
}

LogicalResult StoreOp::verify() {
  return verifyCacheHints(*this, getCache(), getEvict(), getIsVolatile(), /*isLoad=*/false);
}

void LoadOp::getEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), GlobalMemory::get());
  // A volatile load happens where it stands: a write keeps it from being
  // merged with another, moved or dropped.
  if (getIsVolatile())
    effects.emplace_back(MemoryEffects::Write::get(), GlobalMemory::get());
}

namespace {
bool isConstantMask(Value mask, bool value) {
  if (!mask)
    return false;
  return value ? matchPattern(mask, m_One()) : matchPattern(mask, m_Zero());
}

/// load with an all-true mask -> unmasked load.
struct LoadWithTrueMask : OpRewritePattern<LoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LoadOp op, PatternRewriter &rewriter) const override {
    if (!isConstantMask(op.getMask(), true))
      return failure();
    rewriter.replaceOpWithNewOp<LoadOp>(op, op.getPtr(), Value(), Value(), op.getCache(), op.getEvict(),
                                        op.getIsVolatile());
    return success();
  }
};

/// load with an all-false mask -> `other`, or zero when there is none.
struct LoadWithFalseMask : OpRewritePattern<LoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LoadOp op, PatternRewriter &rewriter) const override {
    if (!isConstantMask(op.getMask(), false))
      return failure();
    if (op.getOther()) {
      rewriter.replaceOp(op, op.getOther());
      return success();
    }
    Type type = op.getType();
    Type elem = getElementTypeOrSelf(type);
    TypedAttr zero = isa<FloatType>(elem) ? TypedAttr(rewriter.getFloatAttr(elem, 0.0))
                                          : TypedAttr(rewriter.getIntegerAttr(elem, 0));
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      zero = SplatElementsAttr::get(tensor, zero);
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type, zero);
    return success();
  }
};

/// store with an all-true mask -> unmasked; all-false -> erased.
struct StoreWithConstantMask : OpRewritePattern<StoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StoreOp op, PatternRewriter &rewriter) const override {
    if (isConstantMask(op.getMask(), false)) {
      rewriter.eraseOp(op);
      return success();
    }
    if (!isConstantMask(op.getMask(), true))
      return failure();
    rewriter.replaceOpWithNewOp<StoreOp>(op, op.getPtr(), op.getValue(), Value(), op.getCache(), op.getEvict(),
                                         op.getIsVolatile());
    return success();
  }
};
} // namespace

void LoadOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<LoadWithTrueMask, LoadWithFalseMask>(context);
}

void StoreOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<StoreWithConstantMask>(context);
}

//===----------------------------------------------------------------------===//
// atomics
//===----------------------------------------------------------------------===//

LogicalResult AtomicRMWOp::verify() {
  Type elem = getElementTypeOrSelf(getValue().getType());
  // What GPUs can do: 16- to 64-bit elements (the smallest compare-and-swap
  // is 16 bits; the lowering loops on it where PTX has no atom).
  if (elem.getIntOrFloatBitWidth() < 16)
    return emitOpError() << "atomics need 16-, 32- or 64-bit elements, got " << elem;
  switch (getKind()) {
  case AtomicRMWKind::And:
  case AtomicRMWKind::Or:
  case AtomicRMWKind::Xor:
    if (isa<FloatType>(elem))
      return emitOpError() << stringifyAtomicRMWKind(getKind())
                           << " needs an integer element, got " << elem;
    return success();
  default:
    return success();
  }
}

LogicalResult AtomicCASOp::verify() {
  Type elem = getElementTypeOrSelf(getValue().getType());
  unsigned width = elem.getIntOrFloatBitWidth();
  if (width != 32 && width != 64 && width != 16)
    return emitOpError() << "compare-and-swap needs 16-, 32- or 64-bit elements, got "
                         << elem;
  return success();
}

//===----------------------------------------------------------------------===//
// dot
//===----------------------------------------------------------------------===//

LogicalResult DotOp::verify() {
  auto a = getA().getType(), b = getB().getType(), acc = getAcc().getType();
  if (a.getRank() != 2 || b.getRank() != 2 || acc.getRank() != 2)
    return emitOpError() << "operands must be 2-D tiles";
  if (a.getDimSize(1) != b.getDimSize(0))
    return emitOpError() << "inner dimensions differ: a is "
                         << shapeStr(a.getShape()) << ", b is "
                         << shapeStr(b.getShape());
  if (acc.getDimSize(0) != a.getDimSize(0) || acc.getDimSize(1) != b.getDimSize(1))
    return emitOpError() << "accumulator shape " << shapeStr(acc.getShape())
                         << " must be [" << a.getDimSize(0) << ","
                         << b.getDimSize(1) << "]";
  Type ea = a.getElementType(), eb = b.getElementType(), ec = acc.getElementType();
  if (ea != eb)
    return emitOpError() << "a and b element types differ: " << ea << " vs " << eb;
  if (isa<FloatType>(ea)) {
    if (!ec.isF32() && ec != ea)
      return emitOpError() << "accumulator must be f32"
                           << (ea.isF32() ? "" : " or the operand type") << ", got " << ec;
  } else if (ea.isInteger(8)) {
    if (!ec.isInteger(32))
      return emitOpError() << "i8 operands accumulate in i32, got " << ec;
  } else {
    return emitOpError() << "unsupported operand element type " << ea;
  }
  if (getPrecision() != DotPrecision::IEEE && !ea.isF32())
    return emitOpError() << "precision "
                         << stringifyDotPrecision(getPrecision())
                         << " applies to f32 operands only, got " << ea;
  return success();
}

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

/// A reduce's or scan's combiner: 2N scalar arguments of the operands'
/// element types (N so far, N new), returning N of those types.
static LogicalResult verifyCombiner(Operation *op, Region &combiner, ValueRange srcs) {
  Block &body = combiner.front();
  size_t n = srcs.size();
  if (body.getNumArguments() != 2 * n)
    return op->emitOpError() << "combiner must take " << 2 * n << " arguments, takes "
                             << body.getNumArguments();
  for (size_t i = 0; i < 2 * n; ++i) {
    Type elem = cast<RankedTensorType>(srcs[i % n].getType()).getElementType();
    if (body.getArgument(i).getType() != elem)
      return op->emitOpError() << "combiner argument " << i << " must be " << elem;
  }
  auto ret = dyn_cast<ReduceReturnOp>(body.getTerminator());
  if (!ret)
    return op->emitOpError() << "combiner must end with tile.reduce.return";
  if (ret.getResults().size() != n)
    return op->emitOpError() << "combiner must return " << n << (n == 1 ? " value" : " values");
  for (size_t i = 0; i < n; ++i)
    if (ret.getResults()[i].getType() != body.getArgument(i).getType())
      return op->emitOpError() << "combiner result " << i << " must be " << body.getArgument(i).getType();
  return success();
}

LogicalResult ReduceOp::verifyRegions() {
  if (getSrcs().empty())
    return emitOpError() << "needs at least one operand";
  auto first = cast<RankedTensorType>(getSrcs()[0].getType());
  int64_t axis = int32_t(getAxis());
  if (axis < 0 || axis >= first.getRank())
    return emitOpError() << "axis " << axis << " out of range for a rank-"
                         << first.getRank() << " tile";
  SmallVector<int64_t> shape(first.getShape());
  shape.erase(shape.begin() + axis);
  if (getResults().size() != getSrcs().size())
    return emitOpError() << "needs one result per operand";
  for (auto [src, res] : llvm::zip(getSrcs(), getResults())) {
    auto srcT = cast<RankedTensorType>(src.getType());
    if (srcT.getShape() != first.getShape())
      return emitOpError() << "all operands must have the same shape";
    // Layout encodings (tilegpu) may differ; shape and element type may not.
    Type expected = shape.empty() ? srcT.getElementType()
                                  : Type(RankedTensorType::get(shape, srcT.getElementType()));
    auto resT = dyn_cast<RankedTensorType>(res.getType());
    bool matches = resT ? !shape.empty() && resT.getShape() == ArrayRef<int64_t>(shape) &&
                              resT.getElementType() == srcT.getElementType()
                        : res.getType() == expected;
    if (!matches)
      return emitOpError() << "result type must be " << expected << ", got "
                           << res.getType();
  }
  return verifyCombiner(*this, getCombiner(), getSrcs());
}

//===----------------------------------------------------------------------===//
// scan
//===----------------------------------------------------------------------===//

LogicalResult ScanOp::verifyRegions() {
  if (getSrcs().empty())
    return emitOpError() << "needs at least one operand";
  auto first = cast<RankedTensorType>(getSrcs()[0].getType());
  int64_t axis = int32_t(getAxis());
  if (axis < 0 || axis >= first.getRank())
    return emitOpError() << "axis " << axis << " out of range for a rank-" << first.getRank() << " tile";
  if (getResults().size() != getSrcs().size())
    return emitOpError() << "needs one result per operand";
  for (auto [src, res] : llvm::zip(getSrcs(), getResults())) {
    auto srcT = cast<RankedTensorType>(src.getType()), resT = cast<RankedTensorType>(res.getType());
    if (srcT.getShape() != first.getShape())
      return emitOpError() << "all operands must have the same shape";
    // Layout encodings (tilegpu) may differ; shape and element type may not.
    if (resT.getShape() != srcT.getShape() || resT.getElementType() != srcT.getElementType())
      return emitOpError() << "result type must be " << srcT << ", got " << resT;
  }
  return verifyCombiner(*this, getCombiner(), getSrcs());
}

//===----------------------------------------------------------------------===//
// ElementwiseInlineAsmOp
//===----------------------------------------------------------------------===//

LogicalResult ElementwiseInlineAsmOp::verify() {
  size_t outputs = 0, inputs = 0;
  for (StringRef c : llvm::split(getConstraints(), ',')) {
    c = c.trim();
    if (c.empty() || c.starts_with("~"))
      continue; // clobbers
    ++(c.starts_with("=") ? outputs : inputs);
  }
  if (getResults().empty())
    return emitOpError() << "has no results";
  if (outputs != getResults().size() || inputs != getArgs().size())
    return emitOpError() << "constraints \"" << getConstraints() << "\" name " << outputs << " outputs and "
                         << inputs << " inputs; the op has " << getResults().size() << " results and "
                         << getArgs().size() << " arguments";
  const int32_t pack = getPack();
  if (pack < 1 || !llvm::isPowerOf2_32(uint32_t(pack)))
    return emitOpError() << "pack must be a power of two, got " << pack;
  // One shape for every argument and result: the Elementwise trait checks it.
  for (Type t : llvm::concat<const Type>(getArgs().getTypes(), getResults().getTypes())) {
    Type elem = cast<RankedTensorType>(t).getElementType();
    if (!elem.isIntOrFloat() || elem.isInteger(1))
      return emitOpError() << "takes numbers (no pointers or i1), got " << elem;
    const unsigned bits = elem.getIntOrFloatBitWidth() * unsigned(pack);
    if (bits != 16 && bits != 32 && bits != 64)
      return emitOpError() << "passes " << pack << " x " << elem << " in a register of " << bits
                           << " bits; a register holds 16, 32 or 64 (pack "
                           << 32 / elem.getIntOrFloatBitWidth() << " fills 32)";
  }
  return success();
}

void ElementwiseInlineAsmOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if (getPure())
    return;
  effects.emplace_back(MemoryEffects::Read::get(), GlobalMemory::get());
  effects.emplace_back(MemoryEffects::Write::get(), GlobalMemory::get());
}

Speculation::Speculatability ElementwiseInlineAsmOp::getSpeculatability() {
  return getPure() ? Speculation::Speculatable : Speculation::NotSpeculatable;
}

//===----------------------------------------------------------------------===//
// AssumeOp
//===----------------------------------------------------------------------===//

LogicalResult AssumeOp::verify() {
  auto tensor = dyn_cast<RankedTensorType>(getSrc().getType());
  ArrayRef<int64_t> shape = tensor ? tensor.getShape() : ArrayRef<int64_t>{};
  if (getDivisibility().size() != std::max<size_t>(shape.size(), 1) || getContiguity().size() != shape.size())
    return emitOpError() << "takes a divisibility per dimension (one for a scalar) and a contiguity per dimension, "
                            "got "
                         << getDivisibility().size() << " and " << getContiguity().size() << " for "
                         << getSrc().getType();
  for (int64_t v : llvm::concat<const int64_t>(getDivisibility(), getContiguity()))
    if (v < 1 || !llvm::isPowerOf2_64(uint64_t(v)))
      return emitOpError() << "promises powers of two, got " << v;
  for (auto [d, c] : llvm::enumerate(getContiguity()))
    if (c > shape[d])
      return emitOpError() << "contiguity " << c << " along dimension " << d << " exceeds the extent " << shape[d];
  return success();
}
