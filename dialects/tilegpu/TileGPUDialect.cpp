//===- TileGPUDialect.cpp - tilegpu dialect, layouts, convert_layout ------===//
#include "dialects/tilegpu/TileGPUDialect.h"

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
  else if (auto slice = dyn_cast<SliceEncodingAttr>(parent))
    return emitError() << "slice of a slice is not supported yet";
  else
    return emitError() << "slice parent must be a tilegpu layout, got " << parent;
  if (dim >= parentRank)
    return emitError() << "slice dim " << dim << " is out of range for a rank-" << parentRank
                       << " parent";
  return success();
}

namespace tegula::tilegpu {

layout::LinearLayout toLinearLayout(Attribute encoding, ArrayRef<int64_t> shape) {
  std::vector<int32_t> s(shape.begin(), shape.end());
  if (auto b = dyn_cast_if_present<BlockedEncodingAttr>(encoding)) {
    if (b.getRank() != shape.size())
      throw Error("blocked layout rank differs from the tile's rank");
    return layout::blockedLayout(s, b.getSizePerThread().vec(), b.getThreadsPerWarp().vec(),
                                 b.getWarpsPerCTA().vec(), b.getOrder().vec());
  }
  if (auto sl = dyn_cast_if_present<SliceEncodingAttr>(encoding)) {
    auto parent = cast<BlockedEncodingAttr>(sl.getParent());
    unsigned dim = sl.getDim();
    // The parent spans one CTA pass along `dim`; slicing makes those
    // threads hold the same elements.
    int32_t pass = parent.getSizePerThread()[dim] * parent.getThreadsPerWarp()[dim] *
                   parent.getWarpsPerCTA()[dim];
    std::vector<int32_t> parentShape = s;
    parentShape.insert(parentShape.begin() + dim, pass);
    layout::LinearLayout full = layout::blockedLayout(
        parentShape, parent.getSizePerThread().vec(), parent.getThreadsPerWarp().vec(),
        parent.getWarpsPerCTA().vec(), parent.getOrder().vec());
    layout::LinearLayout sliced = full.sliceOut(layout::dimName(int(dim)));
    std::vector<std::string> names;
    for (size_t d = 0; d < shape.size(); ++d)
      names.push_back(layout::dimName(int(d)));
    return sliced.renameOuts(names);
  }
  throw Error("tile has no tilegpu layout encoding");
}

BlockedEncodingAttr defaultBlockedEncoding(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                           int numWarps) {
  constexpr int kThreadsPerWarp = 32;
  size_t rank = shape.size();
  SmallVector<int32_t> spt(rank, 1), tpw(rank, 1), wpc(rank, 1), order;
  for (size_t i = 0; i < rank; ++i)
    order.push_back(int32_t(rank - 1 - i));
  // Up to 4 contiguous elements per thread along the fastest dim (128-bit
  // f32 accesses) when the tile has that many per thread.
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  int64_t perThread = std::max<int64_t>(1, numel / (int64_t(kThreadsPerWarp) * numWarps));
  spt[size_t(order[0])] =
      int32_t(std::min<int64_t>({4, perThread, shape[size_t(order[0])]}));
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
    if (!isa_and_present<BlockedEncodingAttr, SliceEncodingAttr>(t.getEncoding()))
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
