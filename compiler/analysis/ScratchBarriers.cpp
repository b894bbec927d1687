//===- ScratchBarriers.cpp - which scratch users need their leading barrier ===//
#include "compiler/analysis/ScratchBarriers.h"
#include "compiler/analysis/SharedMemoryUsage.h"

#include "dialects/tile/TileDialect.h"
#include "dialects/tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

using namespace mlir;

namespace tegula::analysis {
namespace {

/// Bytes [first, first + size) of the module's shared memory.
struct ByteRange {
  int64_t first = 0, size = 0;
  bool overlaps(const ByteRange &o) const { return first < o.first + o.size && o.first < first + size; }
};

/// The accesses a piece of code may leave pending (not yet ordered by a
/// barrier) at its end, and whether some path through it passes no barrier
/// at all (then what came before it is pending too).
struct Pending {
  SmallVector<ByteRange> ranges;
  bool open = true;
};

std::optional<ByteRange> bufferOf(Operation *op) {
  std::optional<int64_t> offset = sharedOffset(op);
  if (!offset || op->hasAttr(kSharedSlotStrideAttr)) // a ping-pong program's copy: not modelled
    return std::nullopt;
  return ByteRange{*offset, sharedScratchBytes(op)};
}

/// Ops that never touch shared memory.
bool isSharedFree(Operation *op) {
  StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  if (dialect == "arith" || dialect == "math")
    return true;
  if (isa<tile::ProgramIdOp, tile::NumProgramsOp, tile::ClusterSizeOp, tile::MakeRangeOp, tile::SplatOp,
          tile::BroadcastOp, tile::ExpandDimsOp, tile::AddPtrOp, tile::LoadOp, tile::StoreOp, scf::YieldOp,
          func::ReturnOp>(op))
    return true;
  // Reductions and scans within warps, register moves.
  return isa<tile::ReduceOp, tile::ScanOp, tilegpu::ConvertLayoutOp, tile::TransOp, tile::ReshapeOp,
             tile::GatherOp>(op) &&
         sharedScratchBytes(op) == 0;
}

std::optional<Pending> summarize(Block::iterator begin, Block::iterator end);

/// What `op` leaves pending, or nullopt for an op this analysis does not know.
std::optional<Pending> effectOf(Operation *op) {
  if (isScratchExchange(op)) { // its reads after its second barrier
    std::optional<ByteRange> buffer = bufferOf(op);
    if (!buffer)
      return std::nullopt;
    return Pending{{*buffer}, false};
  }
  if (isa<tilegpu::BarrierOp>(op)) // bar.sync: everything before it is done
    return Pending{{}, false};
  if (isSharedFree(op))
    return Pending{};
  // Through shared memory or within threads (the lowering picks): its own
  // bytes, with or without barriers.
  if (isa<tile::TransOp, tile::ReshapeOp, tile::GatherOp>(op)) {
    std::optional<ByteRange> buffer = bufferOf(op);
    if (!buffer)
      return std::nullopt;
    return Pending{{*buffer}, true};
  }
  if (auto branch = dyn_cast<scf::IfOp>(op)) {
    if (branch->hasAttr("tilegpu.warp_specialized"))
      return std::nullopt;
    Pending all;
    all.open = branch.getElseRegion().empty();
    for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()}) {
      if (region->empty())
        continue;
      std::optional<Pending> p = summarize(region->front().begin(), region->front().end());
      if (!p)
        return std::nullopt;
      all.ranges.append(p->ranges);
      all.open |= p->open;
    }
    return all;
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    // Every access of the body may be pending (the last iteration's), and
    // with no iteration at all, whatever came before.
    std::optional<Pending> body = summarize(loop.getBody()->begin(), loop.getBody()->end());
    if (!body)
      return std::nullopt;
    return Pending{body->ranges, true};
  }
  return std::nullopt;
}

/// [begin, end) of one block, walked backward to its last barrier.
std::optional<Pending> summarize(Block::iterator begin, Block::iterator end) {
  Pending all;
  for (auto it = end; it != begin;) {
    std::optional<Pending> p = effectOf(&*--it);
    if (!p)
      return std::nullopt;
    all.ranges.append(p->ranges);
    if (!p->open) {
      all.open = false;
      break;
    }
  }
  return all;
}

/// Appends to `out` what may be pending just before `op` on any path to it;
/// false where that is not known.
bool pendingBefore(Operation *op, SmallVector<ByteRange> &out) {
  Block *block = op->getBlock();
  std::optional<Pending> here = summarize(block->begin(), op->getIterator());
  if (!here)
    return false;
  out.append(here->ranges);
  if (!here->open)
    return true;
  Operation *parent = block->getParentOp();
  if (isa<func::FuncOp>(parent)) // the kernel's start: nothing before it
    return true;
  if (auto branch = dyn_cast<scf::IfOp>(parent))
    return !branch->hasAttr("tilegpu.warp_specialized") && pendingBefore(parent, out);
  if (isa<scf::ForOp>(parent)) {
    // The previous iteration's end (what follows `op` in the body, or `op`
    // itself), and the loop's entry.
    std::optional<Pending> previous = summarize(block->begin(), block->end());
    if (!previous)
      return false;
    out.append(previous->ranges);
    return pendingBefore(parent, out);
  }
  return false;
}

bool holdsScratchExchange(Operation *op) {
  return op->walk([](Operation *inner) {
            return isScratchExchange(inner) ? WalkResult::interrupt() : WalkResult::advance();
          }).wasInterrupted();
}

/// The next scratch exchanges after `from` (in `from`'s block, then past
/// its loop's back edge and exit, or its branch's end).
void collectNext(Operation *from, Operation *origin, SmallVector<Operation *> &out) {
  for (Operation *next = from->getNextNode(); next; next = next->getNextNode())
    if (holdsScratchExchange(next)) {
      out.push_back(next);
      if (!isa<scf::IfOp, scf::ForOp>(next)) // a branch or loop may pass its exchange by
        return;
    }
  Block *block = from->getBlock();
  Operation *parent = block->getParentOp();
  if (isa<scf::ForOp>(parent)) {
    for (Operation &next : *block)
      if (holdsScratchExchange(&next)) {
        if (&next != origin)
          out.push_back(&next);
        break;
      }
    collectNext(parent, origin, out);
  } else if (isa<scf::IfOp>(parent)) {
    collectNext(parent, origin, out);
  }
}

} // namespace

bool isScratchExchange(Operation *op) {
  return isa<tile::ReduceOp, tile::ScanOp, tilegpu::ConvertLayoutOp>(op) && sharedScratchBytes(op) > 0;
}

SmallVector<Operation *> nextScratchExchanges(Operation *op) {
  SmallVector<Operation *> out;
  collectNext(op, op, out);
  return out;
}

bool leadingBarrierIsRedundant(Operation *op) {
  std::optional<ByteRange> mine = isScratchExchange(op) ? bufferOf(op) : std::nullopt;
  SmallVector<ByteRange> pending;
  if (!mine || !pendingBefore(op, pending))
    return false;
  return llvm::none_of(pending, [&](const ByteRange &r) { return r.overlaps(*mine); });
}

} // namespace tegula::analysis
