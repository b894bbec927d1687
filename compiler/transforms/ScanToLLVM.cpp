//===- ScanToLLVM.cpp - tile.scan as per-thread code ----------------------===//
//
// An inclusive scan along `axis` of a tile whose layout is ordered along it
// - position = register part + R * (lane part + L * warp part), which
// convert-tile-to-tilegpu gives every scan - runs in three steps:
//   1. each thread scans its own registers along the axis, in order;
//   2. the lanes along the axis scan their totals (Kogge-Stone: log2 L
//      rounds of shfl.sync.idx, each combining with the lane 2^j earlier),
//      and each lane combines the total of the lanes before it into its
//      registers;
//   3. the warps along the axis write their totals to shared memory; each
//      thread combines those of the warps before it into its registers.
// Combines keep the order (earlier elements on the left), so the combiner
// need not commute. `reverse` runs the same steps from the axis's end.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Combining.h"
#include "compiler/transforms/LoweringCommon.h"

#include "compiler/analysis/SharedMemoryUsage.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

#include <algorithm>
#include <map>

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::lowering {
namespace {

using Values = SmallVector<Value>;

Values select(OpBuilder &b, Location loc, Value cond, const Values &yes, const Values &no) {
  Values out;
  for (auto [y, n] : llvm::zip(yes, no))
    out.push_back(LLVM::SelectOp::create(b, loc, cond, y, n));
  return out;
}

/// The index (0 .. 2^bits.size() - 1) that the `bits` of `id` spell.
Value gatherBits(OpBuilder &b, Location loc, Value id, const std::vector<int> &bits) {
  Value out = i32Const(b, loc, 0);
  for (size_t j = 0; j < bits.size(); ++j) {
    Value bit = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, id, i32Const(b, loc, bits[j])),
                                    i32Const(b, loc, 1));
    out = LLVM::OrOp::create(b, loc, out, LLVM::ShlOp::create(b, loc, bit, i32Const(b, loc, int(j))));
  }
  return out;
}

/// `id` with its `bits` replaced by those of `index`.
Value scatterBits(OpBuilder &b, Location loc, Value id, Value index, const std::vector<int> &bits) {
  int32_t mask = 0;
  for (int bit : bits)
    mask |= 1 << bit;
  Value out = LLVM::AndOp::create(b, loc, id, i32Const(b, loc, ~mask));
  for (size_t j = 0; j < bits.size(); ++j) {
    Value bit = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, index, i32Const(b, loc, int(j))),
                                    i32Const(b, loc, 1));
    out = LLVM::OrOp::create(b, loc, out, LLVM::ShlOp::create(b, loc, bit, i32Const(b, loc, bits[j])));
  }
  return out;
}

/// An index along the axis in scan order: from the end when reversed.
Value inScanOrder(OpBuilder &b, Location loc, Value index, int64_t count, bool reverse) {
  return reverse ? LLVM::SubOp::create(b, loc, i32Const(b, loc, count - 1), index).getResult() : index;
}

/// Whether `ll` is ordered along `axis`: its register, then lane, then warp
/// bits along the axis step 1, 2, 4, ... there, and none of them moves
/// along another dimension too.
bool orderedAlong(const LinearLayout &ll, size_t axis) {
  int64_t expect = 1;
  for (const char *dim : {"register", "lane", "warp"}) {
    if (!separable(ll, dim, axis))
      return false;
    for (int bit : bitsAlong(ll, dim, axis)) {
      if (ll.basis(dim, bit)[axis] != expect)
        return false;
      expect *= 2;
    }
  }
  return true;
}

struct ScanPattern : OpConversionPattern<tile::ScanOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(tile::ScanOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto srcType = cast<RankedTensorType>(op.getSrcs()[0].getType());
    const LinearLayout ll = layoutOf(srcType);
    const size_t axis = op.getAxis(), nOps = op.getSrcs().size();
    const bool reverse = op.getReverse();
    for (Value v : llvm::concat<Value>(op.getSrcs(), op.getResults()))
      if (layoutOf(v.getType()) != ll)
        return rw.notifyMatchFailure(op, "the operands and results do not share one layout");
    if (!orderedAlong(ll, axis))
      return rw.notifyMatchFailure(op, "the layout is not ordered along the scan's axis "
                                       "(convert-tile-to-tilegpu gives scans one that is)");
    const std::vector<int> laneBits = bitsAlong(ll, "lane", axis), warpBits = bitsAlong(ll, "warp", axis);
    if (!warpBits.empty() && !analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    auto combine = [&](ValueRange earlier, ValueRange later) {
      return applyCombiner(rw, op.getCombiner(), earlier, later);
    };

    // 1. Each thread's registers, grouped by their other coordinates (a
    // key), scanned in axis order.
    const int32_t nRegs = ll.inDimSize("register");
    int32_t duplicateRegs = 0; // registers repeating another one's element
    for (int b : ll.freeBits("register"))
      duplicateRegs |= 1 << b;
    std::map<std::vector<int32_t>, std::vector<std::pair<int32_t, int32_t>>> byKey; // key -> (position, register)
    for (int32_t r = 0; r < nRegs; ++r) {
      if (r & duplicateRegs)
        continue;
      std::vector<int32_t> key = ll.apply({{"register", r}});
      const int32_t pos = key[axis];
      key[axis] = 0;
      byKey[key].push_back({reverse ? -pos : pos, r});
    }
    std::vector<Values> scanned(static_cast<size_t>(nRegs));
    std::vector<std::vector<int32_t>> keyRegs; // each key's registers in scan order
    std::vector<Values> totals;               // each key's running total
    for (auto &[key, regs] : byKey) {
      std::sort(regs.begin(), regs.end());
      Values acc;
      std::vector<int32_t> order;
      for (auto [pos, r] : regs) {
        Values v;
        for (size_t o = 0; o < nOps; ++o)
          v.push_back(adaptor.getSrcs()[o][size_t(r)]);
        acc = acc.empty() ? v : combine(acc, v);
        scanned[size_t(r)] = acc;
        order.push_back(r);
      }
      keyRegs.push_back(order);
      totals.push_back(acc);
    }
    auto addPrefix = [&](size_t k, Value has, const Values &prefix) {
      for (int32_t r : keyRegs[k])
        scanned[size_t(r)] = select(rw, loc, has, combine(prefix, scanned[size_t(r)]), scanned[size_t(r)]);
    };

    auto [lane, warp] = laneAndWarp(rw, loc);
    // 2. Across the lanes along the axis.
    const int64_t laneGroups = int64_t(1) << laneBits.size();
    Value laneOrder = inScanOrder(rw, loc, gatherBits(rw, loc, lane, laneBits), laneGroups, reverse);
    if (!laneBits.empty()) {
      // The lane `back` places before this one in scan order (itself where
      // there is none: all lanes take part in every shuffle).
      auto laneBefore = [&](int64_t back) -> std::pair<Value, Value> {
        Value from = LLVM::SubOp::create(rw, loc, laneOrder, i32Const(rw, loc, back));
        Value exists = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::sge, from, i32Const(rw, loc, 0));
        from = LLVM::SelectOp::create(rw, loc, exists, from, laneOrder);
        Value index = inScanOrder(rw, loc, from, laneGroups, reverse);
        return {scatterBits(rw, loc, lane, index, laneBits), exists};
      };
      std::vector<Values> inclusive = totals;
      for (size_t j = 0; j < laneBits.size(); ++j) {
        auto [source, exists] = laneBefore(int64_t(1) << j);
        for (Values &v : inclusive) {
          Values earlier;
          for (Value x : v)
            earlier.push_back(shuffleLane(rw, loc, x, source, /*butterfly=*/false));
          v = select(rw, loc, exists, combine(earlier, v), v);
        }
      }
      auto [previous, hasPrevious] = laneBefore(1);
      for (size_t k = 0; k < totals.size(); ++k) {
        Values before;
        for (Value x : inclusive[k])
          before.push_back(shuffleLane(rw, loc, x, previous, /*butterfly=*/false));
        addPrefix(k, hasPrevious, before);
        totals[k] = inclusive[k]; // the last lane's: its warp's total
      }
    }

    // 3. Across the warps along the axis, through shared memory.
    if (!warpBits.empty()) {
      const int64_t warpGroups = int64_t(1) << warpBits.size();
      Value warpOrder = inScanOrder(rw, loc, gatherBits(rw, loc, warp, warpBits), warpGroups, reverse);
      // The writer of each warp's totals: its last lane in scan order, and
      // one of any copies (free lane and warp bits).
      int32_t laneFree = 0, warpFree = 0;
      for (int b : ll.freeBits("lane"))
        laneFree |= 1 << b;
      for (int b : ll.freeBits("warp"))
        warpFree |= 1 << b;
      Value lastLane =
          LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq, laneOrder, i32Const(rw, loc, laneGroups - 1));
      Value noCopy = LLVM::ICmpOp::create(
          rw, loc, LLVM::ICmpPredicate::eq,
          LLVM::OrOp::create(rw, loc, LLVM::AndOp::create(rw, loc, lane, i32Const(rw, loc, laneFree)),
                             LLVM::AndOp::create(rw, loc, warp, i32Const(rw, loc, warpFree))),
          i32Const(rw, loc, 0));
      Value writer = LLVM::AndOp::create(rw, loc, lastLane, noCopy);
      // Each key's row (its coordinates but the axis, row-major) times the
      // warp slots, plus the slot in scan order.
      auto coords = coordinates(rw, loc, ll, /*addDisjoint=*/true);
      SmallVector<int64_t> strides(size_t(srcType.getRank()), 0);
      int64_t stride = 1;
      for (int64_t d = srcType.getRank() - 1; d >= 0; --d)
        if (size_t(d) != axis)
          strides[size_t(d)] = stride, stride *= srcType.getDimSize(d);
      const int64_t rows = stride;
      Values rowBase;
      for (const std::vector<int32_t> &regs : keyRegs) {
        Value idx = i32Const(rw, loc, 0);
        for (size_t d = 0; d < strides.size(); ++d)
          if (strides[d])
            idx = LLVM::AddOp::create(
                rw, loc, idx,
                LLVM::MulOp::create(rw, loc, coords[size_t(regs.front())][d], i32Const(rw, loc, strides[d])));
        rowBase.push_back(LLVM::MulOp::create(rw, loc, idx, i32Const(rw, loc, warpGroups)));
      }
      Type ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
      Value scratch = sharedBuffer(rw, loc, op);
      auto slotOf = [&](size_t o, size_t k, Value slot) {
        int64_t base = 0;
        for (size_t p = 0; p < o; ++p)
          base += rows * warpGroups * analysis::reducePartialBytes(totals[0][p].getType());
        Value region =
            LLVM::GEPOp::create(rw, loc, ptr3, rw.getI8Type(), scratch, ValueRange{i32Const(rw, loc, base)});
        return LLVM::GEPOp::create(rw, loc, ptr3, totals[k][o].getType(), region,
                                   ValueRange{LLVM::AddOp::create(rw, loc, rowBase[k], slot)});
      };
      leadingBarrier(rw, loc, op); // earlier users of the scratch are done
      for (size_t k = 0; k < totals.size(); ++k)
        for (size_t o = 0; o < nOps; ++o)
          predicatedStore(rw, loc, slotOf(o, k, warpOrder), totals[k][o], writer, "shared");
      ctaBarrier(rw, loc);
      Value hasPrevious = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::sge, warpOrder, i32Const(rw, loc, 1));
      for (size_t k = 0; k < totals.size(); ++k) {
        // The running totals of warps 0 .. j in scan order; this warp takes
        // the one just before it.
        Values running, before;
        for (int64_t j = 0; j + 1 < warpGroups; ++j) {
          Values part;
          for (size_t o = 0; o < nOps; ++o)
            part.push_back(LLVM::LoadOp::create(rw, loc, totals[k][o].getType(),
                                                slotOf(o, k, i32Const(rw, loc, j))));
          running = j == 0 ? part : combine(running, part);
          Value mine = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq, warpOrder, i32Const(rw, loc, j + 1));
          before = j == 0 ? running : select(rw, loc, mine, running, before);
        }
        addPrefix(k, hasPrevious, before);
      }
    }

    // Every register of the result, a copy's from the one it repeats.
    SmallVector<SmallVector<Value>> results(nOps);
    for (int32_t r = 0; r < nRegs; ++r)
      for (size_t o = 0; o < nOps; ++o)
        results[o].push_back(scanned[size_t(r & ~duplicateRegs)][o]);
    rw.replaceOpWithMultiple(op, results);
    return success();
  }
};

} // namespace

void populateScanPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<ScanPattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
