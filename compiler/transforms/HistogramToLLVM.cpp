//===- HistogramToLLVM.cpp - tile.histogram by shared-memory atomics ------===//
//
// The counts live in the op's shared-memory buffer (one i32 a bin): the
// program's threads zero them, meet, and each owner of an element in range
// adds one to its bin (atom.shared.add: elements of one bin from many
// threads); after a second barrier every thread reads the bins its result
// registers hold. Copies of an element (a tile smaller than the program)
// count once: only its owner adds.
//
//===----------------------------------------------------------------------===//
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace tegula::lowering {
namespace {

struct HistogramThroughShared : OpConversionPattern<tile::HistogramOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::HistogramOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    Location loc = op.getLoc();
    auto srcT = cast<RankedTensorType>(op.getSrc().getType());
    auto dstT = cast<RankedTensorType>(op.getType());
    const layout::LinearLayout src = layoutOf(srcT), dst = layoutOf(dstT);
    const int64_t bins = dstT.getDimSize(0), threads = 32 * int64_t(src.inDimSize("warp"));
    Type i32 = rw.getI32Type(), ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
    Value counts = sharedBuffer(rw, loc, op);
    auto at = [&](OpBuilder &b, Value bin) {
      return LLVM::GEPOp::create(b, loc, ptr3, i32, counts, ValueRange{bin}).getResult();
    };
    // Only where `cond` holds (bounds of the zeroing, an element in range).
    auto onlyIf = [&](Value cond, llvm::function_ref<void(OpBuilder &)> body) {
      OpBuilder::InsertionGuard guard(rw);
      auto branch = scf::IfOp::create(rw, loc, TypeRange{}, cond, /*withElseRegion=*/false);
      rw.setInsertionPointToStart(branch.thenBlock());
      body(rw);
    };
    ctaBarrier(rw, loc); // earlier users of the buffer are done
    Value tid = programThreadIndex(rw, loc);
    for (int64_t first = 0; first < bins; first += threads) {
      Value bin = LLVM::AddOp::create(rw, loc, tid, i32Const(rw, loc, first));
      Value inside = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::ult, bin, i32Const(rw, loc, bins));
      onlyIf(inside, [&](OpBuilder &b) { LLVM::StoreOp::create(b, loc, i32Const(b, loc, 0), at(b, bin)); });
    }
    ctaBarrier(rw, loc);
    const Owners owners = ownersOf(rw, loc, src);
    ValueRange values = adaptor.getSrc();
    for (int32_t r = 0; r < src.inDimSize("register"); ++r) {
      if (r & owners.duplicateRegisters)
        continue;
      Value v = values[size_t(r)];
      // Unsigned: negative values compare above every bin.
      Value counted = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::ult, v, i32Const(rw, loc, bins));
      if (owners.threadOwns)
        counted = LLVM::AndOp::create(rw, loc, counted, owners.threadOwns);
      onlyIf(counted, [&](OpBuilder &b) {
        LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add, at(b, v), i32Const(b, loc, 1),
                                  LLVM::AtomicOrdering::monotonic);
      });
    }
    ctaBarrier(rw, loc);
    SmallVector<Value> out;
    auto coords = coordinates(rw, loc, dst);
    for (int32_t r = 0; r < dst.inDimSize("register"); ++r)
      out.push_back(LLVM::LoadOp::create(rw, loc, i32, at(rw, coords[size_t(r)][0])));
    rw.replaceOpWithMultiple(op, {out});
    return success();
  }
};

} // namespace

void populateHistogramPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<HistogramThroughShared>(types, patterns.getContext());
}

} // namespace tegula::lowering
