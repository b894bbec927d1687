//===- AsyncCopyToLLVM.cpp - rings of shared tiles filled by cp.async -----===//
//
// alloc_shared is the ring's base address (allocate-shared-memory placed
// it). async_load: each thread copies its elements with cp.async - 16 bytes
// (.cg, bypassing L1) or 4/8 (.ca) at a time - into the stage's swizzled
// tile at the offsets the pointer layout composed with the tile's placement
// gives; a masked-off group reads nothing and zero-fills (source size 0);
// the load's eviction priority becomes an L2 cache policy on every copy;
// then one commit group. async_wait: cp.async.wait_group, then a barrier so
// every thread's copies are visible (and every thread is done reading the
// stage the next copies overwrite). store_shared fills a stage from
// registers instead (the owners' vector stores), then the same fence and
// barrier.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LoweringCommon.h"

#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/OperandStaging.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

#include <fmt/format.h>

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::lowering {
namespace {

struct AllocSharedPattern : OpConversionPattern<tilegpu::AllocSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::AllocSharedOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    // Like every user of shared memory, a ring begins with a barrier: earlier
    // users of the same bytes are done reading before cp.async writes them.
    ctaBarrier(rw, op.getLoc());
    rw.replaceOp(op, sharedBuffer(rw, op.getLoc(), op));
    return success();
  }
};

struct AsyncLoadPattern : OpConversionPattern<tilegpu::AsyncLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::AsyncLoadOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    tilegpu::SharedTilesType ring = op.getDst().getType();
    const int64_t elemBytes = ring.getElementType().getIntOrFloatBitWidth() / 8;
    const LinearLayout source = layoutOf(op.getPtr().getType());
    const LinearLayout offsets = source.compose(ring.tile().offsetLayout());
    // Elements per copy: what the pointers allow (coalesce) and the swizzled
    // placement keeps contiguous, at most 16 bytes.
    int32_t vec = layout::vectorElementsOf(offsets, int32_t(16 / elemBytes));
    if (auto w = op->getAttrOfType<IntegerAttr>("tilegpu.vector_width"))
      vec = std::min<int32_t>(vec, int32_t(w.getInt()));
    const int64_t bytes = vec * elemBytes;
    if (bytes != 4 && bytes != 8 && bytes != 16)
      return rw.notifyMatchFailure(op, "cp.async copies 4, 8 or 16 bytes");
    if (!source.freeBits("register").empty() || !source.freeBits("lane").empty() ||
        !source.freeBits("warp").empty())
      return rw.notifyMatchFailure(op, "async_load needs a layout without duplicates");
    Value stageBase = LLVM::GEPOp::create(
        rw, loc, LLVM::LLVMPointerType::get(rw.getContext(), 3), rw.getI8Type(),
        adaptor.getDst()[0],
        ValueRange{LLVM::MulOp::create(rw, loc, adaptor.getStage()[0],
                                       i32Const(rw, loc, ring.tileBytes()))});
    auto at = coordinates(rw, loc, offsets);
    ValueRange ptrs = adaptor.getPtr();
    const auto cache = bytes == 16 ? NVVM::LoadCacheModifierKind::CG : NVVM::LoadCacheModifierKind::CA;
    // An eviction priority (the load's evict_first / evict_last) is an L2
    // cache policy each copy takes (.L2::cache_hint; NVVM's cp.async has no
    // operand for it): made once, a pure instruction LLVM may share.
    Value policy;
    if (auto evict = op->getAttrOfType<tile::EvictionPolicyAttr>("tilegpu.evict")) {
      const std::string priority = tile::stringifyEvictionPolicy(evict.getValue()).str();
      policy = LLVM::InlineAsmOp::create(rw, loc, rw.getI64Type(), ValueRange{},
                                         fmt::format("createpolicy.fractional.L2::{}.b64 $0, 1.0;", priority), "=l",
                                         /*has_side_effects=*/false, /*is_align_stack=*/false,
                                         LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
                   .getResult(0);
    }
    for (int32_t r = 0; r < source.inDimSize("register"); r += vec) {
      Value dst = LLVM::GEPOp::create(
          rw, loc, stageBase.getType(), rw.getI8Type(), stageBase,
          ValueRange{LLVM::MulOp::create(rw, loc, at[size_t(r)][0], i32Const(rw, loc, elemBytes))});
      Value srcSize; // absent: all `bytes`
      if (op.getMask())
        srcSize = LLVM::SelectOp::create(rw, loc, adaptor.getMask()[size_t(r)],
                                         i32Const(rw, loc, bytes), i32Const(rw, loc, 0));
      if (policy) {
        inlinePtx(rw, loc, Type(), {dst, ptrs[size_t(r)], srcSize ? srcSize : i32Const(rw, loc, bytes), policy},
                  fmt::format("cp.async.{}.shared.global.L2::cache_hint [$0], [$1], {}, $2, $3;",
                              bytes == 16 ? "cg" : "ca", bytes),
                  "l,l,r,l");
        continue;
      }
      NVVM::CpAsyncOp::create(rw, loc, dst, ptrs[size_t(r)], uint32_t(bytes), cache, srcSize);
    }
    NVVM::CpAsyncCommitGroupOp::create(rw, loc);
    rw.eraseOp(op);
    return success();
  }
};

struct AsyncWaitPattern : OpConversionPattern<tilegpu::AsyncWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::AsyncWaitOp op, OneToNOpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    // Test hook: a module marked `tegula.test.drop_async_wait` loses the
    // wait (the barrier stays), so the simulator must report the early reads.
    if (!op->getParentOfType<ModuleOp>()->hasAttr("tegula.test.drop_async_wait"))
      NVVM::CpAsyncWaitGroupOp::create(rw, op.getLoc(), rw.getI32IntegerAttr(int32_t(op.getPending())));
    if (op.getFenceAsyncProxy()) // cp.async writes through the generic proxy; wgmma reads next
      inlinePtx(rw, op.getLoc(), Type(), {}, "fence.proxy.async.shared::cta;", "");
    ctaBarrier(rw, op.getLoc());
    rw.eraseOp(op);
    return success();
  }
};

struct StoreSharedPattern : OpConversionPattern<tilegpu::StoreSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::StoreSharedOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    tilegpu::SharedTilesType ring = op.getDst().getType();
    Value stage = ringStage(rw, loc, adaptor.getDst()[0], adaptor.getStage()[0], ring);
    // Inside a loop (a persistent kernel's tile loop) another warpgroup's
    // wgmmas of the previous iteration may still read the stage.
    ctaBarrier(rw, loc);
    storeSharedTile(rw, loc, adaptor.getSrc(), cast<RankedTensorType>(op.getSrc().getType()), ring.tile(), stage);
    if (op.getFenceAsyncProxy()) // the stores go through the generic proxy; wgmma reads next
      inlinePtx(rw, loc, Type(), {}, "fence.proxy.async.shared::cta;", "");
    ctaBarrier(rw, loc);
    rw.eraseOp(op);
    return success();
  }
};

} // namespace

void populateAsyncCopyPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<AllocSharedPattern, AsyncLoadPattern, AsyncWaitPattern, StoreSharedPattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
