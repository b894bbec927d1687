//===- ReduceToLLVM.cpp - tile.reduce as per-thread code ------------------===//
//
// A reduction along `axis` of a tile with layout L runs in up to three
// steps, each read off L's basis vectors:
//   1. registers of one thread that differ only along `axis` combine;
//   2. lane bits that move along `axis` combine with butterfly shuffles -
//      or, where step 3 follows, split the thread's partials between them
//      (reduce-scatter: each lane ends with the totals of some keys);
//   3. warp bits that move along `axis` exchange partials through shared
//      memory (barrier, write, barrier, every thread reads and combines).
// Every thread then holds the result for its slice of the tile, which is
// what the result's slice layout says.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Combining.h"
#include "compiler/transforms/LoweringCommon.h"

#include "compiler/analysis/SharedMemoryUsage.h"

#include "tegula/error.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/DialectConversion.h"

#include <bit>
#include <map>

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::lowering {
namespace {

int64_t resultElements(tile::ReduceOp op) {
  auto src = cast<RankedTensorType>(op.getSrcs()[0].getType());
  return src.getNumElements() / src.getDimSize(int64_t(op.getAxis()));
}

/// Run the combiner region on (acc, next), returning the combined values.
SmallVector<Value> combine(ConversionPatternRewriter &rw, tile::ReduceOp op, ValueRange acc, ValueRange next) {
  return applyCombiner(rw, op.getCombiner(), acc, next);
}

/// Butterfly shuffle of any scalar up to 64 bits.
Value shuffleXor(OpBuilder &b, Location loc, Value v, int laneMask) {
  return shuffleLane(b, loc, v, i32Const(b, loc, laneMask), /*butterfly=*/true);
}

struct ReducePattern : OpConversionPattern<tile::ReduceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(tile::ReduceOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto srcType = cast<RankedTensorType>(op.getSrcs()[0].getType());
    LinearLayout ll = layoutOf(srcType);
    size_t axis = op.getAxis(), nOps = op.getSrcs().size();
    if (!separable(ll, "lane", axis) || !separable(ll, "warp", axis))
      return rw.notifyMatchFailure(op, "lanes or warps move along several dims at once");
    if (!bitsAlong(ll, "warp", axis).empty() && !analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);

    // 1. Within each thread: one accumulator per distinct non-axis position.
    std::vector<std::vector<int32_t>> keys; // register-part coordinates, axis zeroed
    std::vector<int32_t> keyRegister;       // a register holding each key
    std::vector<SmallVector<Value>> acc;
    int32_t duplicateRegs = 0; // registers repeating another one's element
    for (int b : ll.freeBits("register"))
      duplicateRegs |= 1 << b;
    for (int32_t r = 0; r < ll.inDimSize("register"); ++r) {
      if (r & duplicateRegs)
        continue;
      std::vector<int32_t> key = ll.apply({{"register", r}});
      key[axis] = 0;
      SmallVector<Value> vals;
      for (size_t o = 0; o < nOps; ++o)
        vals.push_back(adaptor.getSrcs()[o][size_t(r)]);
      auto it = std::find(keys.begin(), keys.end(), key);
      if (it == keys.end()) {
        keys.push_back(key);
        keyRegister.push_back(r);
        acc.push_back(vals);
      } else {
        size_t k = size_t(it - keys.begin());
        acc[k] = combine(rw, op, acc[k], vals);
      }
    }
    std::vector<int> laneBits = bitsAlong(ll, "lane", axis);
    std::vector<int> warpBits = bitsAlong(ll, "warp", axis);
    // With partials going through shared memory anyway, the lanes along the
    // axis split a thread's keys between them (reduce-scatter): at each lane
    // bit a thread keeps half its partials and sends the other half, so k
    // keys over 3 lane bits take k/2 + k/4 + k/8 shuffles, not 3k (an
    // accumulator's column sums: 28 instead of 96), and each lane writes the
    // totals of the keys it ends with. Halving needs the key count to stay
    // even; the bits left over use the butterfly.
    size_t scatterBits = 0;
    if (!warpBits.empty())
      while (scatterBits < laneBits.size() && keys.size() % (size_t(2) << scatterBits) == 0)
        ++scatterBits;

    // 2. Across lanes: butterfly over the lane bits that move along axis
    // (with step 3 to follow, those the scatter leaves, after it: on fewer
    // partials).
    auto butterfly = [&](std::vector<SmallVector<Value>> &partials, size_t fromBit) {
      for (size_t i = fromBit; i < laneBits.size(); ++i)
        for (auto &vals : partials) {
          SmallVector<Value> other;
          for (Value v : vals)
            other.push_back(shuffleXor(rw, loc, v, 1 << laneBits[i]));
          vals = combine(rw, op, vals, other);
        }
    };
    if (warpBits.empty())
      butterfly(acc, 0);

    // 3. Across warps: partials through shared memory.
    if (!warpBits.empty()) {
      int64_t numWarpSlots = int64_t(1) << warpBits.size();
      auto [lane, warp] = laneAndWarp(rw, loc);
      // One writer per partial: lanes along the axis not scattered hold the
      // same value after step 2, and free lane/warp bits hold copies.
      int32_t laneMask = 0, warpMask = 0;
      for (size_t i = scatterBits; i < laneBits.size(); ++i)
        laneMask |= 1 << laneBits[i];
      for (int b : ll.freeBits("lane"))
        laneMask |= 1 << b;
      for (int b : ll.freeBits("warp"))
        warpMask |= 1 << b;
      Value writer = LLVM::ICmpOp::create(
          rw, loc, LLVM::ICmpPredicate::eq,
          LLVM::OrOp::create(rw, loc, LLVM::AndOp::create(rw, loc, lane, i32Const(rw, loc, laneMask)),
                             LLVM::AndOp::create(rw, loc, warp, i32Const(rw, loc, warpMask))),
          i32Const(rw, loc, 0));
      // This warp's index among the warps along the axis.
      Value warpSlot = i32Const(rw, loc, 0);
      for (size_t j = 0; j < warpBits.size(); ++j) {
        Value bit = LLVM::AndOp::create(
            rw, loc, LLVM::LShrOp::create(rw, loc, warp, i32Const(rw, loc, warpBits[j])),
            i32Const(rw, loc, 1));
        warpSlot = LLVM::OrOp::create(rw, loc, warpSlot,
                                      LLVM::ShlOp::create(rw, loc, bit, i32Const(rw, loc, int(j))));
      }
      // The linear index of each key's result element (axis removed): a
      // base and constant offsets where the layout allows.
      auto coords = coordinates(rw, loc, ll, /*addDisjoint=*/true);
      SmallVector<int64_t> strides;
      int64_t stride = 1;
      for (int64_t d = srcType.getRank() - 1; d >= 0; --d) {
        strides.insert(strides.begin(), size_t(d) == axis ? 0 : stride);
        if (size_t(d) != axis)
          stride *= srcType.getDimSize(d);
      }
      Type ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
      Value scratch = sharedBuffer(rw, loc, op);
      SmallVector<Value> slotIndex;
      for (size_t k = 0; k < keys.size(); ++k) {
        Value idx = i32Const(rw, loc, 0);
        for (size_t d = 0; d < strides.size(); ++d)
          if (strides[d])
            idx = LLVM::AddOp::create(
                rw, loc, idx,
                LLVM::MulOp::create(rw, loc, coords[size_t(keyRegister[k])][d],
                                    i32Const(rw, loc, strides[d])));
        slotIndex.push_back(idx);
      }
      // Warp-major slots (partial j of result i at j * results + i): a
      // warp's lanes write, and each thread's j-th reads fetch, the results
      // side by side - result-major slots (i * warps + j) put lanes holding
      // neighbouring results `warps` words apart, a bank conflict of that
      // many ways on both sides (the simulator's memory profile: attention's
      // column sums wrote 16 to a bank).
      const int64_t results = resultElements(op);
      // The reduce-scatter: partials held (with their keys' slots); at each
      // bit the lane with it set keeps the upper half.
      std::vector<SmallVector<Value>> held = acc;
      SmallVector<Value> heldSlot = slotIndex;
      for (size_t i = 0; i < scatterBits; ++i) {
        Value upper = LLVM::ICmpOp::create(
            rw, loc, LLVM::ICmpPredicate::ne,
            LLVM::AndOp::create(rw, loc, lane, i32Const(rw, loc, 1 << laneBits[i])), i32Const(rw, loc, 0));
        const size_t half = held.size() / 2;
        std::vector<SmallVector<Value>> kept;
        SmallVector<Value> keptSlot;
        for (size_t j = 0; j < half; ++j) {
          SmallVector<Value> mine, theirs;
          for (size_t o = 0; o < nOps; ++o) {
            Value lo = held[j][o], hi = held[j + half][o];
            mine.push_back(LLVM::SelectOp::create(rw, loc, upper, hi, lo));
            theirs.push_back(
                shuffleXor(rw, loc, LLVM::SelectOp::create(rw, loc, upper, lo, hi), 1 << laneBits[i]));
          }
          kept.push_back(combine(rw, op, mine, theirs));
          keptSlot.push_back(LLVM::SelectOp::create(rw, loc, upper, heldSlot[j + half], heldSlot[j]));
        }
        held = std::move(kept);
        heldSlot = std::move(keptSlot);
      }
      butterfly(held, scatterBits); // lanes that differ there hold the same keys
      leadingBarrier(rw, loc, op); // earlier users of the scratch are done
      int64_t base = 0;
      std::vector<int64_t> bases;
      for (size_t o = 0; o < nOps; ++o) {
        Type t = acc[0][o].getType();
        bases.push_back(base);
        Value region = LLVM::GEPOp::create(rw, loc, ptr3, rw.getI8Type(), scratch,
                                           ValueRange{i32Const(rw, loc, base)});
        for (size_t k = 0; k < held.size(); ++k) {
          Value slot = LLVM::AddOp::create(rw, loc, heldSlot[k],
                                           LLVM::MulOp::create(rw, loc, warpSlot, i32Const(rw, loc, results)));
          Value p = LLVM::GEPOp::create(rw, loc, ptr3, t, region, ValueRange{slot});
          predicatedStore(rw, loc, p, held[k][o], writer, "shared");
        }
        base += resultElements(op) * numWarpSlots * analysis::reducePartialBytes(t);
      }
      assert(base == analysis::sharedScratchBytes(op) && "layout disagrees with the allocation");
      // Test hook: a module marked `tegula.test.drop_reduce_barrier` loses
      // this barrier, so the simulator's race detector can be shown to work.
      if (!op->getParentOfType<ModuleOp>()->hasAttr("tegula.test.drop_reduce_barrier"))
        ctaBarrier(rw, loc);
      for (size_t k = 0; k < keys.size(); ++k) {
        SmallVector<Value> total;
        for (int64_t j = 0; j < numWarpSlots; ++j) {
          SmallVector<Value> part;
          for (size_t o = 0; o < nOps; ++o) {
            Type t = acc[k][o].getType();
            Value region = LLVM::GEPOp::create(rw, loc, ptr3, rw.getI8Type(), scratch,
                                               ValueRange{i32Const(rw, loc, bases[o])});
            Value slot = LLVM::AddOp::create(rw, loc, slotIndex[k], i32Const(rw, loc, j * results));
            Value p = LLVM::GEPOp::create(rw, loc, ptr3, t, region, ValueRange{slot});
            part.push_back(LLVM::LoadOp::create(rw, loc, t, p));
          }
          total = j == 0 ? part : combine(rw, op, total, part);
        }
        acc[k] = total;
      }
    }

    // 4. Results: scalars (1-D) or the registers of the slice layout.
    if (!isa<RankedTensorType>(op.getResult(0).getType())) {
      if (keys.size() != 1)
        return rw.notifyMatchFailure(op, "a scalar result needs one key");
      rw.replaceOp(op, acc[0]);
      return success();
    }
    LinearLayout resultLL = layoutOf(op.getResult(0).getType());
    SmallVector<SmallVector<Value>> results(nOps);
    for (int32_t r = 0; r < resultLL.inDimSize("register"); ++r) {
      std::vector<int32_t> want = resultLL.apply({{"register", r}});
      want.insert(want.begin() + std::ptrdiff_t(axis), 0);
      auto it = std::find(keys.begin(), keys.end(), want);
      if (it == keys.end())
        return rw.notifyMatchFailure(op, "result layout is not the slice of the operand's");
      for (size_t o = 0; o < nOps; ++o)
        results[o].push_back(acc[size_t(it - keys.begin())][o]);
    }
    rw.replaceOpWithMultiple(op, results);
    return success();
  }
};

} // namespace

void populateReducePatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<ReducePattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
