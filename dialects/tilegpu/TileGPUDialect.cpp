//===- TileGPUDialect.cpp - tilegpu dialect, layouts, convert_layout ------===//
#include "dialects/tilegpu/TileGPUDialect.h"

#include "compiler/layout/MmaLayouts.h"
#include "tegula/error.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace tegula;
using namespace tegula::tilegpu;

#include "dialects/tilegpu/TileGPUDialect.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/tilegpu/TileGPUAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "dialects/tilegpu/TileGPUTypes.cpp.inc"
#define GET_OP_CLASSES
#include "dialects/tilegpu/TileGPUOps.cpp.inc"

namespace {
/// Print layouts as #blocked, #slice aliases: IR stays readable.
struct TileGPUOpAsmInterface : OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (isa<BlockedEncodingAttr>(attr)) {
      os << "blocked";
      return AliasResult::FinalAlias;
    }
    if (isa<SliceEncodingAttr>(attr)) {
      os << "slice";
      return AliasResult::FinalAlias;
    }
    if (isa<MmaEncodingAttr>(attr)) {
      os << "mma";
      return AliasResult::FinalAlias;
    }
    if (isa<DotOperandEncodingAttr>(attr)) {
      os << "dot_op";
      return AliasResult::FinalAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void TileGPUDialect::initialize() {
  addInterfaces<TileGPUOpAsmInterface>();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/tilegpu/TileGPUAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/tilegpu/TileGPUTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/tilegpu/TileGPUOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Encodings
//===----------------------------------------------------------------------===//

LogicalResult BlockedEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          ArrayRef<int32_t> sizePerThread,
                                          ArrayRef<int32_t> threadsPerWarp,
                                          ArrayRef<int32_t> warpsPerCTA,
                                          ArrayRef<int32_t> order) {
  size_t rank = order.size();
  if (rank == 0 || sizePerThread.size() != rank || threadsPerWarp.size() != rank ||
      warpsPerCTA.size() != rank)
    return emitError() << "sizePerThread, threadsPerWarp, warpsPerCTA and order need one "
                          "entry per dimension";
  int64_t lanes = 1;
  for (auto list : {sizePerThread, threadsPerWarp, warpsPerCTA})
    for (int32_t v : list)
      if (v <= 0 || !llvm::isPowerOf2_32(uint32_t(v)))
        return emitError() << "layout sizes must be positive powers of two, got " << v;
  for (int32_t t : threadsPerWarp)
    lanes *= t;
  if (lanes != 32)
    return emitError() << "threadsPerWarp must multiply to 32 (a warp), got " << lanes;
  SmallVector<bool> seen(rank, false);
  for (int32_t d : order) {
    if (d < 0 || size_t(d) >= rank || seen[size_t(d)])
      return emitError() << "order must be a permutation of 0.." << rank - 1;
    seen[size_t(d)] = true;
  }
  return success();
}

int32_t BlockedEncodingAttr::getNumWarps() const {
  int32_t n = 1;
  for (int32_t w : getWarpsPerCTA())
    n *= w;
  return n;
}

LogicalResult SliceEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                        unsigned dim, Attribute parent) {
  unsigned parentRank = 0;
  if (auto blocked = dyn_cast<BlockedEncodingAttr>(parent))
    parentRank = blocked.getRank();
  else if (isa<MmaEncodingAttr>(parent))
    parentRank = 2;
  else if (auto slice = dyn_cast<SliceEncodingAttr>(parent))
    return emitError() << "slice of a slice is not supported yet";
  else
    return emitError() << "slice parent must be a tilegpu layout, got " << parent;
  if (dim >= parentRank)
    return emitError() << "slice dim " << dim << " is out of range for a rank-" << parentRank
                       << " parent";
  return success();
}

LogicalResult MmaEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      ArrayRef<int32_t> warpsPerCTA, unsigned version) {
  if (version != 2 && version != 3)
    return emitError() << "mma version is 2 (mma.sync) or 3 (wgmma), got " << version;
  if (version == 3 && warpsPerCTA.size() == 2 && (warpsPerCTA[1] != 1 || warpsPerCTA[0] % 4))
    return emitError() << "a wgmma accumulator has whole warpgroups along M: warpsPerCTA = [4k, 1], "
                          "got ["
                       << warpsPerCTA[0] << ", " << warpsPerCTA[1] << "]";
  if (warpsPerCTA.size() != 2)
    return emitError() << "mma layouts are 2-D: warpsPerCTA needs 2 entries, got "
                       << warpsPerCTA.size();
  for (int32_t w : warpsPerCTA)
    if (w <= 0 || !llvm::isPowerOf2_32(uint32_t(w)))
      return emitError() << "warpsPerCTA must be positive powers of two, got " << w;
  return success();
}

int32_t MmaEncodingAttr::getNumWarps() const {
  return getWarpsPerCTA()[0] * getWarpsPerCTA()[1];
}

LogicalResult DotOperandEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                             unsigned opIdx, Attribute parent,
                                             unsigned elementBits) {
  if (opIdx > 1)
    return emitError() << "opIdx is 0 (A) or 1 (B), got " << opIdx;
  if (!isa<MmaEncodingAttr>(parent))
    return emitError() << "dot_operand parent must be an mma layout, got " << parent;
  if (elementBits != 8 && elementBits != 16 && elementBits != 32)
    return emitError() << "mma.sync operands have 8, 16 or 32 bits, got " << elementBits;
  return success();
}

namespace tegula::tilegpu {

namespace {
/// How many elements along `dim` one pass of the CTA covers under `parent`
/// (the extent a slice along `dim` collapses).
int32_t passAlong(Attribute parent, unsigned dim) {
  if (auto b = dyn_cast<BlockedEncodingAttr>(parent))
    return b.getSizePerThread()[dim] * b.getThreadsPerWarp()[dim] * b.getWarpsPerCTA()[dim];
  // A slice of a slice (a 3-D tile built from 1-D ranges): the parent's
  // dimension `dim` is its own parent's dimension past the one it removed.
  if (auto sl = dyn_cast<SliceEncodingAttr>(parent))
    return passAlong(sl.getParent(), dim >= sl.getDim() ? dim + 1 : dim);
  auto mma = cast<MmaEncodingAttr>(parent);
  return (dim == 0 ? 16 : 8) * mma.getWarpsPerCTA()[dim];
}
} // namespace

layout::LinearLayout toLinearLayout(Attribute encoding, ArrayRef<int64_t> shape) {
  std::vector<int32_t> s(shape.begin(), shape.end());
  if (auto b = dyn_cast_if_present<BlockedEncodingAttr>(encoding)) {
    if (b.getRank() != shape.size())
      throw Error("blocked layout rank differs from the tile's rank");
    return layout::blockedLayout(s, b.getSizePerThread().vec(), b.getThreadsPerWarp().vec(),
                                 b.getWarpsPerCTA().vec(), b.getOrder().vec());
  }
  if (auto mma = dyn_cast_if_present<MmaEncodingAttr>(encoding))
    return layout::mmaAccumulatorLayout(s, mma.getWarpsPerCTA().vec());
  if (auto op = dyn_cast_if_present<DotOperandEncodingAttr>(encoding))
    return layout::mmaOperandLayout(int(op.getOpIdx()), s, int(op.getElementBits()),
                                    cast<MmaEncodingAttr>(op.getParent()).getWarpsPerCTA().vec());
  if (auto sl = dyn_cast_if_present<SliceEncodingAttr>(encoding)) {
    unsigned dim = sl.getDim();
    // The parent spans one CTA pass along `dim`; slicing makes those
    // threads hold the same elements.
    std::vector<int64_t> parentShape(shape.begin(), shape.end());
    parentShape.insert(parentShape.begin() + dim, passAlong(sl.getParent(), dim));
    layout::LinearLayout full = toLinearLayout(sl.getParent(), parentShape);
    layout::LinearLayout sliced = full.sliceOut(layout::dimName(int(dim)));
    std::vector<std::string> names;
    for (size_t d = 0; d < shape.size(); ++d)
      names.push_back(layout::dimName(int(d)));
    return sliced.renameOuts(names);
  }
  throw Error("tile has no tilegpu layout encoding");
}

BlockedEncodingAttr defaultBlockedEncoding(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                           int numWarps, int vectorElements,
                                           ArrayRef<int32_t> givenOrder) {
  constexpr int kThreadsPerWarp = 32;
  size_t rank = shape.size();
  SmallVector<int32_t> spt(rank, 1), tpw(rank, 1), wpc(rank, 1), order(givenOrder);
  if (order.empty())
    for (size_t i = 0; i < rank; ++i)
      order.push_back(int32_t(rank - 1 - i));
  // Up to `vectorElements` contiguous elements per thread along the fastest
  // dim (128-bit accesses) when the tile has that many per thread.
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  int64_t perThread = std::max<int64_t>(1, numel / (int64_t(kThreadsPerWarp) * numWarps));
  spt[size_t(order[0])] =
      int32_t(std::min<int64_t>({vectorElements, perThread, shape[size_t(order[0])]}));
  // Lanes along the fastest dims first, as far as the tile reaches; the
  // rest go to the slowest dim (as duplicates if the tile is small).
  int32_t lanes = 32;
  for (int32_t d : order) {
    int32_t take = int32_t(std::min<int64_t>(lanes, shape[size_t(d)] / spt[size_t(d)]));
    tpw[size_t(d)] = take;
    lanes /= take;
  }
  tpw[size_t(order.back())] *= lanes;
  // Warps along the slowest dims first.
  int32_t warps = numWarps;
  for (int32_t d : llvm::reverse(order)) {
    int64_t room = std::max<int64_t>(1, shape[size_t(d)] / (tpw[size_t(d)] * spt[size_t(d)]));
    int32_t take = int32_t(std::min<int64_t>(warps, room));
    wpc[size_t(d)] = take;
    warps /= take;
  }
  wpc[size_t(order.back())] *= warps;
  return BlockedEncodingAttr::get(ctx, spt, tpw, wpc, order);
}

} // namespace tegula::tilegpu

//===----------------------------------------------------------------------===//
// convert_layout
//===----------------------------------------------------------------------===//

LogicalResult ConvertLayoutOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  auto dst = cast<RankedTensorType>(getType());
  for (auto t : {src, dst})
    if (!isa_and_present<BlockedEncodingAttr, SliceEncodingAttr, MmaEncodingAttr, DotOperandEncodingAttr>(
            t.getEncoding()))
      return emitOpError() << "operand and result need tilegpu layouts, got " << t;
  return success();
}

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return {};
}

namespace {
/// convert(convert(x)) -> convert(x): only the final placement matters.
struct ConvertOfConvert : OpRewritePattern<ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvertLayoutOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getSrc().getDefiningOp<ConvertLayoutOp>();
    if (!inner)
      return failure();
    rewriter.replaceOpWithNewOp<ConvertLayoutOp>(op, op.getType(), inner.getSrc());
    return success();
  }
};
} // namespace

void ConvertLayoutOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                  MLIRContext *context) {
  results.add<ConvertOfConvert>(context);
}
