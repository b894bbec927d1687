//===- TmaToLLVM.cpp - tensor-descriptor loads through TMA (sm_90a) -------===//
//
// A `tile.descriptor_load` marked `tilegpu.tma` (use-tma) becomes one bulk
// tensor copy into its shared-memory buffer, completed through an mbarrier
// that follows the block:
//
//   all:    fence.proxy.async (earlier generic writes to the buffer come
//           first), bar.sync
//   thread 0: mbarrier.init [bar], 1; fence.mbarrier_init
//   all:    bar.sync
//   thread 0: mbarrier.arrive.expect_tx [bar], <block bytes>
//             cp.async.bulk.tensor.Nd [buffer], [tensor map, {coords}], [bar]
//             (a swizzled map: a box per swizzle-wide block of columns)
//   all:    mbarrier.try_wait.parity [bar], 0 until it succeeds
//           read their elements of the block (row-major, unswizzled; or
//           from the swizzled tile, ldmatrix into mma fragments)
//           bar.sync; thread 0: mbarrier.inval [bar]
//
// A `tile.descriptor_store` so marked goes the other way: the block's
// owners write it into the buffer, fence.proxy.async, bar.sync; thread 0
// issues cp.async.bulk.tensor global <- shared (a bulk group, clipped to
// the tensor) and waits until the buffer has been read - or, deferred (a
// warp-specialised persistent kernel's tile loop), waits before the next
// store stages and at tilegpu.tma_store_wait after the loop. A store whose map
// use-tma swizzled (`tilegpu.tma_swizzle`) stages the block in a swizzled
// tile (layout::tmaStoreTile) - vector stores, no bank conflicts - and
// copies it out one box per swizzle-wide block of columns; with more than
// two such blocks (layout::tmaStoreStaging) only two are resident, each
// written once the copy out of its slot has read the block before.
//
// TMA fills the parts of the box outside the tensor with zeros. The tensor
// map is the kernel parameter use-tma added (`tilegpu.tensor_map`).
//
// Rings that pipeline-dot-operands fills with TMA (tma_init / tma_load /
// tma_wait / tma_release) keep one mbarrier per stage after the tiles of
// the first ring of those waited for together: thread 0 initialises them
// once and issues each stage's boxes (one per block of 128-byte rows) after
// one expect_tx of the whole stage's bytes (all the rings'); every thread
// waits for the stage's phase, then a barrier (warp specialised: each
// consumer waits for itself, and each consumer warp releases the stage). Inline PTX
// throughout; the simulator runs the same text (simulator/Tma.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/SharedSwizzle.h"
#include "compiler/layout/WgmmaOperands.h"
#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"

#include <fmt/format.h>

using namespace mlir;

namespace tegula::lowering {
namespace {

/// Every thread spins until the mbarrier at `bar` completes the phase of
/// parity `phase` (i32). `label` names the loop (tegula_wait: copies landed;
/// tegula_wait_release: a warp-specialised producer waits for a stage). A
/// multicast ring's release comes from other CTAs of the cluster too; the
/// wait stays at the default (.acquire.cta) scope, as CUTLASS's cluster
/// pipelines wait: what it orders - the consumers' wgmma reads of the stage
/// - completed (wgmma.wait_group) before they arrived.
void waitForPhase(OpBuilder &b, Location loc, Value bar, Value phase, const char *label = "tegula_wait") {
  inlinePtx(b, loc, Type(), {bar, phase},
            fmt::format("{{\n.reg .pred %tegula_done;\n{0}:\n"
                        "mbarrier.try_wait.parity.shared::cta.b64 %tegula_done, [$0], $1;\n"
                        "@!%tegula_done bra {0};\n}}",
                        label),
            "l,r");
}

/// The calling thread's CTA's rank in its thread-block cluster (i32).
Value clusterRank(OpBuilder &b, Location loc) {
  return inlinePtx(b, loc, b.getI32Type(), {}, "mov.u32 $0, %cluster_ctarank;", "=r");
}

/// `leader` (i1) initialises the mbarrier at `bar` for one arrival.
void initBarrier(OpBuilder &b, Location loc, Value bar, Value leader) {
  inlinePtx(b, loc, Type(), {bar, leader}, "@$1 mbarrier.init.shared::cta.b64 [$0], 1;", "l,b");
}

void invalidateBarrier(OpBuilder &b, Location loc, Value bar, Value leader) {
  inlinePtx(b, loc, Type(), {bar, leader}, "@$1 mbarrier.inval.shared::cta.b64 [$0];", "l,b");
}


/// For each register of `type` (a tile with a layout), the address of its
/// element in a row-major copy of the tile at `buffer` (shared memory).
SmallVector<Value> rowMajorAddresses(OpBuilder &b, Location loc, RankedTensorType type, Value buffer) {
  const int64_t rank = type.getRank();
  SmallVector<int64_t> rowStride(size_t(rank), 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    rowStride[size_t(d)] = rowStride[size_t(d + 1)] * type.getDimSize(d + 1);
  Type ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  SmallVector<Value> out;
  for (const SmallVector<Value> &at : coordinates(b, loc, layoutOf(type))) {
    Value index = i32Const(b, loc, 0);
    for (int64_t d = 0; d < rank; ++d)
      index = LLVM::AddOp::create(
          b, loc, index, LLVM::MulOp::create(b, loc, at[size_t(d)], i32Const(b, loc, rowStride[size_t(d)])));
    out.push_back(LLVM::GEPOp::create(b, loc, ptr3, memoryType(type.getElementType()), buffer,
                                      ValueRange{index}));
  }
  return out;
}

/// The single value each of a 1:N adaptor's ranges holds (scalar operands).
SmallVector<Value> firstOfEach(ArrayRef<ValueRange> ranges) {
  SmallVector<Value> out;
  for (ValueRange r : ranges)
    out.push_back(r.front());
  return out;
}

/// "$4, $5": the operands for a TMA box's coordinates - `offsets` (outermost
/// first) appended to `args` innermost first, as PTX wants them - and their
/// constraints appended to `constraints`.
std::string appendCoordinates(SmallVector<Value> &args, std::string &constraints, ArrayRef<Value> offsets) {
  std::string coords;
  for (size_t d = offsets.size(); d-- > 0;) {
    coords += fmt::format("{}${}", d + 1 == offsets.size() ? "" : ", ", args.size());
    args.push_back(offsets[d]);
    constraints += ",r";
  }
  return coords;
}

/// A box's coordinates (outermost first) with the innermost `columnShift`
/// further on: the box of a swizzle-wide block of columns.
SmallVector<Value> shiftColumn(OpBuilder &b, Location loc, ValueRange offsetsIn, int64_t columnShift) {
  SmallVector<Value> offsets(offsetsIn);
  if (columnShift) {
    Value column = i32Const(b, loc, columnShift);
    Value inner = offsets.back();
    if (inner.getType() != column.getType())
      column = LLVM::SExtOp::create(b, loc, inner.getType(), column);
    offsets.back() = LLVM::AddOp::create(b, loc, inner, column);
  }
  return offsets;
}

/// A TMA descriptor is the tensor map parameter use-tma added.
struct MakeTensorMapPattern : OpConversionPattern<tile::MakeTensorDescriptorOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::MakeTensorDescriptorOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    auto argNo = op->getAttrOfType<IntegerAttr>("tilegpu.tensor_map");
    if (!argNo)
      return rw.notifyMatchFailure(op, "not a TMA descriptor: run lower-tensor-descriptors");
    auto fn = op->getParentOfType<FunctionOpInterface>();
    rw.replaceOp(op, fn.getArgument(unsigned(argNo.getInt())));
    return success();
  }
};

struct TmaLoadPattern : OpConversionPattern<tile::DescriptorLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::DescriptorLoadOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!analysis::isTmaLoad(op))
      return rw.notifyMatchFailure(op, "not a TMA load: run lower-tensor-descriptors");
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    const int64_t rank = type.getRank();
    // A swizzled map (use-tma): the boxes land in tmaLoadTile's tile, one
    // per block of columns as wide as the swizzle; else row-major, one box.
    std::optional<layout::SharedTile> tile = analysis::tmaLoadTile(op);
    if (auto swizzle = op->getAttrOfType<IntegerAttr>("tilegpu.tma_swizzle"))
      if (!tile || tile->rowBytes() != swizzle.getInt())
        return rw.notifyMatchFailure(op, "the load's swizzle does not match its tile");
    const int64_t blockBytes = analysis::tmaBlockBytes(op);
    const int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    Type ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
    Value buffer = sharedBuffer(rw, loc, op);
    Value bar = LLVM::GEPOp::create(rw, loc, ptr3, rw.getI8Type(), buffer,
                                    ValueRange{i32Const(rw, loc, blockBytes)});
    Value leader = isProgramLeader(rw, loc);

    // Earlier users of these bytes (generic proxy) are done before TMA writes.
    inlinePtx(rw, loc, Type(), {}, "fence.proxy.async.shared::cta;", "");
    ctaBarrier(rw, loc);
    initBarrier(rw, loc, bar, leader);
    inlinePtx(rw, loc, Type(), {leader}, "@$0 fence.mbarrier_init.release.cluster;", "b");
    ctaBarrier(rw, loc);
    // One expect_tx of the whole block's bytes, then its boxes (TMA
    // coordinates run innermost first).
    inlinePtx(rw, loc, Type(), {bar, leader},
              fmt::format("@$1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {};", bytes), "l,b");
    const int64_t blocks = tile && tile->blockElements ? type.getDimSize(1) / tile->blockElements : 1;
    for (int64_t j = 0; j < blocks; ++j) {
      // Block j: columns j * blockElements on, rows x rowBytes further in.
      Value to = buffer;
      if (j)
        to = LLVM::GEPOp::create(rw, loc, buffer.getType(), rw.getI8Type(), buffer,
                                 ValueRange{i32Const(rw, loc, j * type.getDimSize(0) * tile->rowBytes())});
      SmallVector<Value> args = {to, adaptor.getDesc().front(), bar, leader};
      std::string constraints = "l,l,l,b";
      std::string coords = appendCoordinates(
          args, constraints, shiftColumn(rw, loc, firstOfEach(adaptor.getOffsets()), j ? j * tile->blockElements : 0));
      inlinePtx(rw, loc, Type(), args,
                fmt::format("@$3 cp.async.bulk.tensor.{}d.shared::cluster.global.tile."
                            "mbarrier::complete_tx::bytes [$0], [$1, {{{}}}], [$2];",
                            rank, coords),
                constraints);
    }
    waitForPhase(rw, loc, bar, i32Const(rw, loc, 0));

    // Each thread reads its elements of the block.
    Type elem = memoryType(type.getElementType());
    SmallVector<Value> values;
    if (tile)
      values = loadSharedTile(rw, loc, type, elem, *tile, buffer);
    else
      for (Value p : rowMajorAddresses(rw, loc, type, buffer))
        values.push_back(LLVM::LoadOp::create(rw, loc, elem, p));
    // Everyone has passed the wait before the barrier is invalidated (its
    // bytes may serve another purpose next).
    ctaBarrier(rw, loc);
    invalidateBarrier(rw, loc, bar, leader);
    rw.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// A `tile.descriptor_store` marked `tilegpu.tma`: the block's owners write
/// it row-major into the op's shared buffer, fence the async proxy, meet at
/// a barrier; thread 0 issues the bulk copy out (TMA clips it to the
/// tensor) and waits until it has read the buffer, which may then be reused.
/// The program leader waits until its TMA stores have read their blocks.
void waitForStoreReads(OpBuilder &b, Location loc) {
  inlinePtx(b, loc, Type(), {isProgramLeader(b, loc)}, "@$0 cp.async.bulk.wait_group.read 0;", "b");
}

/// One box of a TMA store, staged at `from`: the store's coordinates with
/// the innermost `columnShift` further on (its j-th column block), issued by
/// the leader into the current bulk group.
void issueStoreBox(OpBuilder &b, Location loc, Value map, ValueRange offsetsIn, Value from, Value leader,
                   int64_t rank, int64_t columnShift) {
  SmallVector<Value> offsets = shiftColumn(b, loc, offsetsIn, columnShift);
  SmallVector<Value> args = {map, from, leader};
  std::string constraints = "l,l,b";
  std::string coords = appendCoordinates(args, constraints, offsets);
  inlinePtx(b, loc, Type(), args,
            fmt::format("@$2 cp.async.bulk.tensor.{}d.global.shared::cta.bulk_group [$0, {{{}}}], [$1];", rank,
                        coords),
            constraints);
}

/// A staging tile with resident blocks (layout::tmaStoreStaging): block j
/// is written into slot j % resident once the copy of the block there before
/// (j - resident, or a deferred store's previous block) has read it, and
/// leaves in a bulk group of its own while the next is written - a 128x256
/// f32 C block through 32 KiB instead of 128.
void stageBlockByBlock(OpBuilder &rw, Location loc, ValueRange values, Value map, ValueRange offsets,
                       RankedTensorType type, const layout::SharedTile &tile, Value buffer, bool deferred) {
  const int32_t resident = tile.residentBlocks;
  const int64_t slotBytes = type.getDimSize(0) * tile.rowBytes();
  Value leader = isProgramLeader(rw, loc);
  for (int32_t j = 0; j < tile.blocks(); ++j) {
    if (j >= resident || deferred)
      inlinePtx(rw, loc, Type(), {leader}, fmt::format("@$0 cp.async.bulk.wait_group.read {};", resident - 1), "b");
    ctaBarrier(rw, loc); // the slot's earlier users (and its last copy) are done
    storeSharedTile(rw, loc, values, type, tile, buffer, /*stmatrix=*/true, j);
    inlinePtx(rw, loc, Type(), {}, "fence.proxy.async.shared::cta;", "");
    ctaBarrier(rw, loc);
    Value from = buffer;
    if (j % resident)
      from = LLVM::GEPOp::create(rw, loc, buffer.getType(), rw.getI8Type(), buffer,
                                 ValueRange{i32Const(rw, loc, (j % resident) * slotBytes)});
    issueStoreBox(rw, loc, map, offsets, from, leader, type.getRank(), int64_t(j) * tile.blockElements);
    inlinePtx(rw, loc, Type(), {leader}, "@$0 cp.async.bulk.commit_group;", "b");
  }
  if (!deferred)
    inlinePtx(rw, loc, Type(), {leader}, "@$0 cp.async.bulk.wait_group.read 0;", "b");
}

struct TmaStorePattern : OpConversionPattern<tile::DescriptorStoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::DescriptorStoreOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!analysis::isTmaStore(op))
      return rw.notifyMatchFailure(op, "not a TMA store: run lower-tensor-descriptors");
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getValue().getType());
    const int64_t rank = type.getRank();
    // A swizzled map (use-tma): the block is staged in tmaStoreTile's tile,
    // written in vectors without bank conflicts, and leaves one box per
    // block of swizzle-wide rows; else row-major, one box.
    std::optional<layout::SharedTile> tile = analysis::tmaStoreStagingTile(op);
    if (auto swizzle = op->getAttrOfType<IntegerAttr>("tilegpu.tma_swizzle"))
      if (!tile || tile->rowBytes() != swizzle.getInt())
        return rw.notifyMatchFailure(op, "the store's swizzle does not match its staging tile");
    Value buffer = sharedBuffer(rw, loc, op);
    // Deferred (tilegpu.tma_store_wait): the previous store's copy may still
    // read the block; its leader waits for that here, not after issuing it.
    const bool deferred = op->hasAttr(analysis::kTmaStoreDeferredAttr);
    if (tile && tile->residentBlocks) {
      stageBlockByBlock(rw, loc, adaptor.getValue(), adaptor.getDesc().front(), firstOfEach(adaptor.getOffsets()),
                        type, *tile, buffer, deferred);
      rw.eraseOp(op);
      return success();
    }
    if (deferred)
      waitForStoreReads(rw, loc);
    ctaBarrier(rw, loc); // earlier users of the buffer are done
    ValueRange values = adaptor.getValue();
    if (tile) {
      storeSharedTile(rw, loc, values, type, *tile, buffer, /*stmatrix=*/true); // TMA: sm_90 code
    } else {
      Owners owners = ownersOf(rw, loc, layoutOf(type));
      for (auto [r, p] : llvm::enumerate(rowMajorAddresses(rw, loc, type, buffer)))
        if (!(int32_t(r) & owners.duplicateRegisters))
          predicatedStore(rw, loc, p, values[r], owners.threadOwns, "shared");
    }
    // Generic writes, read next by the async proxy.
    inlinePtx(rw, loc, Type(), {}, "fence.proxy.async.shared::cta;", "");
    ctaBarrier(rw, loc);
    const int64_t blocks = tile && tile->blockElements ? type.getDimSize(1) / tile->blockElements : 1;
    Value leader = isProgramLeader(rw, loc);
    for (int64_t j = 0; j < blocks; ++j) {
      // Block j: columns j * blockElements on, rows x rowBytes further in.
      Value from = buffer;
      if (j)
        from = LLVM::GEPOp::create(rw, loc, buffer.getType(), rw.getI8Type(), buffer,
                                   ValueRange{i32Const(rw, loc, j * type.getDimSize(0) * tile->rowBytes())});
      issueStoreBox(rw, loc, adaptor.getDesc().front(), firstOfEach(adaptor.getOffsets()), from, leader, rank,
                    j ? j * tile->blockElements : 0);
    }
    inlinePtx(rw, loc, Type(), {leader},
              deferred ? "@$0 cp.async.bulk.commit_group;"
                       : "@$0 cp.async.bulk.commit_group;\n@$0 cp.async.bulk.wait_group.read 0;",
              "b");
    rw.eraseOp(op);
    return success();
  }
};

struct TmaStoreWaitPattern : OpConversionPattern<tilegpu::TmaStoreWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::TmaStoreWaitOp op, OpAdaptor, ConversionPatternRewriter &rw) const override {
    if (op.getWrites())
      inlinePtx(rw, op.getLoc(), Type(), {isProgramLeader(rw, op.getLoc())}, "@$0 cp.async.bulk.wait_group 0;", "b");
    else
      waitForStoreReads(rw, op.getLoc());
    rw.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Rings filled by TMA (pipeline-dot-operands): one mbarrier per stage after
// the tiles; thread 0 produces, every thread waits.
//===----------------------------------------------------------------------===//

Value stageBarrier(OpBuilder &b, Location loc, Value ring, Value stage, tilegpu::SharedTilesType type,
                   bool released = false) {
  Type ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  // The stages' data barriers, then (warp specialisation) their release barriers.
  const int64_t first = int64_t(type.getStages()) * (type.tileBytes() + (released ? analysis::kTmaBarrierBytes : 0));
  Value offset = LLVM::AddOp::create(b, loc, i32Const(b, loc, first),
                                     LLVM::MulOp::create(b, loc, stage, i32Const(b, loc, analysis::kTmaBarrierBytes)));
  return LLVM::GEPOp::create(b, loc, ptr3, b.getI8Type(), ring, ValueRange{offset});
}

/// The module's warp specialisation: the consumer threads (32 * num_warps)
/// when it has producer warps, else 0.
int64_t consumerThreads(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  if (!module || !module->hasAttr("tilegpu.producer_warps"))
    return 0;
  return module->getAttrOfType<IntegerAttr>("tilegpu.num_warps").getInt() * 32;
}

/// The thread that issues a ring's copies: thread 0, or in a
/// warp-specialised kernel's producer branch the first thread of the
/// producer warp serving the program (program_slot; the first producer
/// warp unless the kernel is ping-pong).
Value ringLeader(OpBuilder &b, Location loc, Operation *op) {
  if (warpRoleAt(op->getBlock()) != WarpRole::Producer)
    return isProgramLeader(b, loc);
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  Value leader = LLVM::AddOp::create(
      b, loc, i32Const(b, loc, consumerThreads(op) * programsPerCta(op)),
      LLVM::MulOp::create(b, loc, programSlot(b, loc), i32Const(b, loc, kWarpSize)));
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, tid, leader);
}

struct TmaInitPattern : OpConversionPattern<tilegpu::TmaInitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::TmaInitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    tilegpu::SharedTilesType type = op.getRing().getType();
    auto alloc = op.getRing().getDefiningOp<tilegpu::AllocSharedOp>();
    const bool released = alloc && alloc.getReleased();
    Value leader = isProgramLeader(rw, loc);
    for (unsigned s = 0; s < type.getStages(); ++s) {
      initBarrier(rw, loc, stageBarrier(rw, loc, adaptor.getRing(), i32Const(rw, loc, s), type), leader);
      if (released) // every consumer warp releases the stage (tilegpu.tma_arrive)
        inlinePtx(rw, loc, Type(),
                  {stageBarrier(rw, loc, adaptor.getRing(), i32Const(rw, loc, s), type, true), leader},
                  fmt::format("@$1 mbarrier.init.shared::cta.b64 [$0], {};",
                              consumerThreads(op) / kWarpSize * clusterSize(op)),
                  "l,b");
    }
    inlinePtx(rw, loc, Type(), {leader}, "@$0 fence.mbarrier_init.release.cluster;", "b");
    // The ring's bytes may be scratch that ordinary stores used before (a
    // layout conversion's exchange): each thread orders its own such writes
    // before the copies of the async proxy that will land there.
    inlinePtx(rw, loc, Type(), {}, "fence.proxy.async.shared::cta;", "");
    ctaBarrier(rw, loc); // every thread before a warp-specialised kernel splits, else the consumers
    rw.eraseOp(op);
    return success();
  }
};

struct TmaArrivePattern : OpConversionPattern<tilegpu::TmaArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::TmaArriveOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    // The warp's lanes are done with the stage once they all got here (their
    // wgmma waits or reads before): lane 0 arrives for the warp.
    Value lane0 = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq,
                                       NVVM::LaneIdOp::create(rw, loc, rw.getI32Type()), i32Const(rw, loc, 0));
    const int64_t ctas = clusterSize(op);
    for (auto [ring, lowered] : llvm::zip(op.getRings(), adaptor.getRings())) {
      Value bar = stageBarrier(rw, loc, lowered, adaptor.getStage(), cast<tilegpu::SharedTilesType>(ring.getType()), true);
      if (ctas == 1) {
        inlinePtx(rw, loc, Type(), {lane0, bar}, "bar.warp.sync -1;\n@$0 mbarrier.arrive.shared::cta.b64 _, [$1];",
                  "b,l");
        continue;
      }
      // A cluster's producers each write the stage in every CTA: the warp
      // releases it in all of them (its own included, by the same path). At
      // the default .release.cta semantics, as CUTLASS's cluster barriers
      // arrive: the stage's reads completed before (wgmma.wait_group), so no
      // cluster-scope release is needed to order them - and one a warp a
      // stage was the suspected cause of the clustered GEMMs running 2.4-4x
      // slower than unclustered on the H100 of 2026-11-27 (not yet re-timed).
      inlinePtx(rw, loc, Type(), {}, "bar.warp.sync -1;", "");
      for (int64_t r = 0; r < ctas; ++r) {
        Type i64 = rw.getI64Type();
        Value local = LLVM::PtrToIntOp::create(rw, loc, i64, bar);
        Value remote = inlinePtx(rw, loc, i64, {local, i32Const(rw, loc, r)}, "mapa.shared::cluster.u64 $0, $1, $2;",
                                 "=l,l,r");
        inlinePtx(rw, loc, Type(), {lane0, remote},
                  "@$0 mbarrier.arrive.shared::cluster.b64 _, [$1];", "b,l");
      }
    }
    rw.eraseOp(op);
    return success();
  }
};

struct TmaRingLoadPattern : OpConversionPattern<tilegpu::TmaLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::TmaLoadOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    tilegpu::SharedTilesType type = op.getRing().getType();
    const layout::SharedTile tile = type.tile();
    if (tile.contiguousDim != 1 || op.getCoords().size() != 2)
      return rw.notifyMatchFailure(op, "TMA fills row-major 2-D tiles");
    const int32_t blockCols = tile.rowBytes() * 8 / tile.elementBits;
    const int64_t blockBytes = int64_t(tile.shape[0]) * tile.rowBytes();
    const int64_t blocks = tile.shape[1] / blockCols;
    Value leader = ringLeader(rw, loc, op);
    // The stage's mbarrier: this ring's, or the one its group shares.
    Value bar = op.getSignals() ? stageBarrier(rw, loc, adaptor.getSignals(), adaptor.getStage(),
                                               op.getSignals().getType())
                                : stageBarrier(rw, loc, adaptor.getRing(), adaptor.getStage(), type);
    Value base = ringStage(rw, loc, adaptor.getRing(), adaptor.getStage(), type);
    Type ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
    // Multicast: this CTA's slice of each block's rows, landing in every CTA
    // of the cluster (ctaMask: all of them).
    const int64_t ctas = op.getMulticastAttr() ? op.getMulticastAttr().getInt() : 1;
    Value row = adaptor.getCoords()[0];
    if (ctas > 1) {
      const int32_t sliceRows = *layout::multicastSliceRows(tile, int(ctas));
      Value rank = clusterRank(rw, loc);
      row = LLVM::AddOp::create(rw, loc, row, LLVM::MulOp::create(rw, loc, rank, i32Const(rw, loc, sliceRows)));
      base = LLVM::GEPOp::create(rw, loc, ptr3, rw.getI8Type(), base,
                                 ValueRange{LLVM::MulOp::create(rw, loc, rank, i32Const(rw, loc, sliceRows * tile.rowBytes()))});
    }
    // The bytes to expect (none where the group's first load announced them),
    // then one box per block of columns.
    const int64_t expect = op.getExpectBytesAttr() ? op.getExpectBytesAttr().getInt() : type.tileBytes();
    std::string body =
        expect ? fmt::format("@$1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {};", expect) : std::string();
    SmallVector<Value> args = {bar, leader, adaptor.getMap(), row};
    std::string constraints = "l,b,l,r";
    std::string multicast;
    if (ctas > 1) {
      multicast = fmt::format(".multicast::cluster"), constraints += ",h";
      args.push_back(LLVM::ConstantOp::create(rw, loc, rw.getI16Type(), rw.getI16IntegerAttr(int16_t((1 << ctas) - 1))));
    }
    const size_t mask = args.size() - 1;
    for (int64_t k = 0; k < blocks; ++k) {
      Value dst = LLVM::GEPOp::create(rw, loc, ptr3, rw.getI8Type(), base,
                                      ValueRange{i32Const(rw, loc, k * blockBytes)});
      Value col = LLVM::AddOp::create(rw, loc, adaptor.getCoords()[1], i32Const(rw, loc, k * blockCols));
      body += fmt::format("{}@$1 cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                          "mbarrier::complete_tx::bytes{} [${}], [$2, {{${}, $3}}], [$0]{};",
                          body.empty() ? "" : "\n", multicast, args.size(), args.size() + 1,
                          ctas > 1 ? fmt::format(", ${}", mask) : "");
      args.push_back(dst);
      args.push_back(col);
      constraints += ",l,r";
    }
    inlinePtx(rw, loc, Type(), args, body, constraints);
    rw.eraseOp(op);
    return success();
  }
};

struct TmaWaitPattern : OpConversionPattern<tilegpu::TmaWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::TmaWaitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    for (auto [ring, lowered] : llvm::zip(op.getRings(), adaptor.getRings()))
      waitForPhase(rw, loc,
                   stageBarrier(rw, loc, lowered, adaptor.getStage(),
                                cast<tilegpu::SharedTilesType>(ring.getType()), op.getReleased()),
                   adaptor.getPhase(), op.getReleased() ? "tegula_wait_release" : "tegula_wait");
    if (!op.getReleased() && !op.getNoBarrier()) // warp specialised: each thread for itself
      ctaBarrier(rw, loc);
    rw.eraseOp(op);
    return success();
  }
};

struct TmaReleasePattern : OpConversionPattern<tilegpu::TmaReleaseOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::TmaReleaseOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    tilegpu::SharedTilesType type = op.getRing().getType();
    auto alloc = op.getRing().getDefiningOp<tilegpu::AllocSharedOp>();
    const bool released = alloc && alloc.getReleased();
    ctaBarrier(rw, loc); // every thread is past its last wait
    Value leader = isProgramLeader(rw, loc);
    for (unsigned s = 0; s < type.getStages(); ++s)
      for (bool which : {false, true})
        if (!which || released)
          invalidateBarrier(rw, loc, stageBarrier(rw, loc, adaptor.getRing(), i32Const(rw, loc, s), type, which),
                            leader);
    rw.eraseOp(op);
    return success();
  }
};

struct ClusterSyncPattern : OpConversionPattern<tilegpu::ClusterSyncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::ClusterSyncOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    // Not .aligned: a warp-specialised producer warp's lanes come from
    // different paths (lane 0 ran the copies).
    inlinePtx(rw, op.getLoc(), Type(), {}, "barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;", "");
    rw.eraseOp(op);
    return success();
  }
};

} // namespace

void populateTmaPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<MakeTensorMapPattern, TmaLoadPattern, TmaStorePattern, TmaStoreWaitPattern, TmaInitPattern,
               TmaRingLoadPattern, TmaWaitPattern, TmaReleasePattern, TmaArrivePattern, ClusterSyncPattern>(
      types, patterns.getContext());
}

} // namespace tegula::lowering
