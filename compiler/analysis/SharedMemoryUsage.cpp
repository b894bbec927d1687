//===- SharedMemoryUsage.cpp - which ops need shared memory, and how much -===//
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/WgmmaOperands.h"

#include "dialects/tile/TileDialect.h"
#include "dialects/tilegpu/TileGPUDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

#include <algorithm>
#include <bit>

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::analysis {
namespace {

LinearLayout layoutOf(RankedTensorType t) {
  return tilegpu::toLinearLayout(t.getEncoding(), t.getShape());
}

RankedTensorType encodedTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.getEncoding() ? tensor : RankedTensorType();
}

int64_t bytesOf(Type t) { return (int64_t(t.getIntOrFloatBitWidth()) + 7) / 8; }

/// Partials of each operand, one per result element and warp along the
/// axis (ReduceToLLVM's step 3).
/// tile.scan's warp totals (ScanToLLVM's step 3) take the same room.
template <class Combining> int64_t reduceBytes(Combining op) {
  RankedTensorType src = encodedTensor(op.getSrcs()[0].getType());
  if (!src)
    return 0;
  LinearLayout ll = layoutOf(src);
  int warpBits = 0;
  for (int i = 0; i < std::countr_zero(uint32_t(ll.inDimSize("warp"))); ++i)
    warpBits += ll.basis("warp", i)[op.getAxis()] != 0;
  if (warpBits == 0)
    return 0; // lanes and registers suffice
  int64_t slots = (src.getNumElements() / src.getDimSize(int64_t(op.getAxis()))) << warpBits;
  int64_t bytes = 0;
  for (Value s : op.getSrcs())
    bytes += slots * reducePartialBytes(cast<RankedTensorType>(s.getType()).getElementType());
  return bytes;
}

/// The whole result tile, row-major (ExchangeToLLVM), unless a
/// convert_layout only moves registers within each thread.
int64_t exchangeBytes(Operation *op) {
  RankedTensorType dst = encodedTensor(op->getResult(0).getType());
  if (!dst)
    return 0;
  if (auto convert = dyn_cast<tilegpu::ConvertLayoutOp>(op)) {
    RankedTensorType src = encodedTensor(convert.getSrc().getType());
    if (!src)
      return 0;
    if (inThreadRegisterMap(layoutOf(src), layoutOf(dst), [](std::vector<int32_t> c) { return c; }))
      return 0;
  }
  return dst.getNumElements() * exchangeSlotBytes(dst.getElementType());
}

int64_t alignTo(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// The operand tiles that pass through shared memory, a then b: both on the
/// FMA path; on mma.sync those not already in fragments (ldmatrix staging).
int64_t dotBytes(tile::DotOp op) {
  RankedTensorType a = encodedTensor(op.getA().getType());
  if (!a)
    return 0;
  auto b = cast<RankedTensorType>(op.getB().getType());
  if (isWgmmaDot(op)) { // B staged, and A unless in registers; B on the swizzle period after A
    const int64_t aBytes = isa<tilegpu::DotOperandEncodingAttr>(a.getEncoding())
                               ? 0
                               : a.getNumElements() * bytesOf(a.getElementType());
    return alignTo(aBytes, kWgmmaTileAlignment) + b.getNumElements() * bytesOf(b.getElementType());
  }
  auto staged = [](RankedTensorType t) {
    return isa<tilegpu::DotOperandEncodingAttr>(t.getEncoding())
               ? 0
               : t.getNumElements() * bytesOf(t.getElementType());
  };
  return staged(a) + staged(b);
}

/// A scalar atomic runs in thread 0, which shares the old value when it is
/// used; so does the owner of a tile element that other threads hold copies
/// of, through a slot per element (AtomicsToLLVM).
int64_t atomicBytes(Operation *op) {
  Value old = op->getResult(0);
  if (old.use_empty())
    return 0;
  if (RankedTensorType t = encodedTensor(old.getType()))
    return layoutOf(t).isInjective() ? 0 : t.getNumElements() * bytesOf(t.getElementType());
  if (isa<RankedTensorType>(old.getType()))
    return 0;
  return bytesOf(old.getType());
}

} // namespace

bool isWgmmaDot(Operation *op) {
  auto dot = dyn_cast<tile::DotOp>(op);
  auto mma = dot ? dyn_cast_if_present<tilegpu::MmaEncodingAttr>(
                       cast<RankedTensorType>(dot.getType()).getEncoding())
                 : nullptr;
  return mma && mma.isWgmma();
}

bool isTmaLoad(Operation *op) {
  return isa<tile::DescriptorLoadOp>(op) && op->hasAttr("tilegpu.tma");
}

bool isTmaStore(Operation *op) {
  return isa<tile::DescriptorStoreOp>(op) && op->hasAttr("tilegpu.tma");
}

Operation *deferredTmaStoreLoop(Operation *op) {
  if (!isTmaStore(op) || !op->hasAttr(kTmaStoreDeferredAttr))
    return nullptr;
  Operation *outermost = nullptr;
  for (auto loop = op->getParentOfType<LoopLikeOpInterface>(); loop; loop = loop->getParentOfType<LoopLikeOpInterface>())
    outermost = loop;
  return outermost;
}

std::optional<layout::SharedTile> tmaStoreStagingTile(Operation *op) {
  if (!isTmaStore(op) || !op->hasAttr("tilegpu.tma_swizzle"))
    return std::nullopt;
  auto t = cast<RankedTensorType>(op->getOperands().back().getType());
  std::optional<layout::SharedTile> tile =
      t.getRank() == 2 ? layout::tmaStoreTile({int32_t(t.getDimSize(0)), int32_t(t.getDimSize(1))},
                                              int(t.getElementTypeBitWidth()))
                       : std::nullopt;
  if (!tile || !t.getEncoding())
    return tile;
  return layout::tmaStoreStaging(*tile, tilegpu::toLinearLayout(t.getEncoding(), t.getShape()));
}

std::optional<layout::SharedTile> tmaLoadTile(Operation *op) {
  if (!isTmaLoad(op) || !op->hasAttr("tilegpu.tma_swizzle"))
    return std::nullopt;
  auto t = cast<RankedTensorType>(op->getResult(0).getType());
  if (t.getRank() != 2)
    return std::nullopt;
  return layout::tmaStoreTile({int32_t(t.getDimSize(0)), int32_t(t.getDimSize(1))}, int(t.getElementTypeBitWidth()));
}

int64_t tmaBlockBytes(Operation *op) {
  auto t = cast<RankedTensorType>(isTmaStore(op) ? op->getOperands().back().getType()
                                                 : op->getResult(0).getType());
  int64_t bytes = t.getNumElements() * bytesOf(t.getElementType());
  if (std::optional<layout::SharedTile> staging = tmaStoreStagingTile(op))
    bytes = staging->bytes();
  else if (std::optional<layout::SharedTile> tile = tmaLoadTile(op))
    bytes = tile->bytes();
  return (bytes + kTmaAlignment - 1) / kTmaAlignment * kTmaAlignment;
}

int64_t sharedScratchAlignment(Operation *op) {
  // wgmma dots and rings (whose stages wgmma may read), and the swizzled
  // tiles TMA stores copy out and swizzled loads land in, start on the
  // swizzle period.
  if ((isTmaStore(op) || isTmaLoad(op)) && op->hasAttr("tilegpu.tma_swizzle"))
    return kWgmmaTileAlignment;
  if (isTmaLoad(op) || isTmaStore(op))
    return kTmaAlignment;
  return isWgmmaDot(op) || isa<tilegpu::AllocSharedOp>(op) ? kWgmmaTileAlignment : kSharedAlignment;
}

int64_t reducePartialBytes(Type elem) { return std::max<int64_t>(4, bytesOf(elem)); }

int64_t exchangeSlotBytes(Type elem) {
  return isa<tile::PtrType>(elem) ? 8 : std::max<int64_t>(1, bytesOf(elem));
}

int64_t sharedScratchBytes(Operation *op) {
  if (auto reduce = dyn_cast<tile::ReduceOp>(op))
    return reduceBytes(reduce);
  if (auto scan = dyn_cast<tile::ScanOp>(op))
    return reduceBytes(scan);
  if (isa<tilegpu::ConvertLayoutOp, tile::TransOp, tile::ReshapeOp>(op))
    return exchangeBytes(op);
  if (auto histogram = dyn_cast<tile::HistogramOp>(op)) // the counts
    return histogram.getType().getNumElements() * 4;
  if (auto gather = dyn_cast<tile::GatherOp>(op)) // the whole source, row-major
    return gather.getSrc().getType().getNumElements() * exchangeSlotBytes(gather.getSrc().getType().getElementType());
  if (auto dot = dyn_cast<tile::DotOp>(op))
    return dotBytes(dot);
  if (isa<tile::AtomicRMWOp, tile::AtomicCASOp>(op))
    return atomicBytes(op);
  if (auto ring = dyn_cast<tilegpu::AllocSharedOp>(op)) // mbarriers after the tiles (two: released)
    return int64_t(ring.getType().getStages()) *
           (ring.getType().tileBytes() +
            (ring.getMbarriers() ? kTmaBarrierBytes * (ring.getReleased() ? 2 : 1) : 0));
  if (isa<tilegpu::OrderInitOp>(op)) // the turn and retirement mbarriers
    return 2 * kTmaBarrierBytes;
  if (isTmaLoad(op)) // the block, then its mbarrier
    return tmaBlockBytes(op) + kTmaBarrierBytes;
  if (isTmaStore(op)) // the block on its way out
    return tmaBlockBytes(op);
  return 0;
}

std::optional<std::vector<int32_t>>
inThreadRegisterMap(const LinearLayout &src, const LinearLayout &dst,
                    const std::function<std::vector<int32_t>(std::vector<int32_t>)> &project) {
  // The thread-dependent parts must agree, or elements move between threads.
  for (const char *dim : {"lane", "warp"}) {
    int srcBits = std::countr_zero(uint32_t(src.inDimSize(dim)));
    int dstBits = std::countr_zero(uint32_t(dst.inDimSize(dim)));
    for (int i = 0; i < std::max(srcBits, dstBits); ++i) {
      std::vector<int32_t> s =
          i < srcBits ? src.basis(dim, i) : std::vector<int32_t>(src.outDims().size(), 0);
      std::vector<int32_t> d =
          i < dstBits ? dst.basis(dim, i) : std::vector<int32_t>(dst.outDims().size(), 0);
      if (project(d) != s)
        return std::nullopt;
    }
  }
  std::vector<int32_t> map;
  for (int32_t r = 0; r < dst.inDimSize("register"); ++r) {
    std::vector<int32_t> want = project(dst.apply({{"register", r}}));
    int32_t found = -1;
    for (int32_t s = 0; s < src.inDimSize("register") && found < 0; ++s)
      if (src.apply({{"register", s}}) == want)
        found = s;
    if (found < 0)
      return std::nullopt;
    map.push_back(found);
  }
  return map;
}

std::optional<int64_t> sharedOffset(Operation *op) {
  if (auto offset = op->getAttrOfType<IntegerAttr>(kSharedOffsetAttr))
    return offset.getInt();
  return std::nullopt;
}

} // namespace tegula::analysis
