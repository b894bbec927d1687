//===- SharedMemoryLiveness.cpp - live ranges and offsets of shared buffers ===//
#include "compiler/analysis/SharedMemoryLiveness.h"

#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <functional>
#include <numeric>

using namespace mlir;

namespace tegula::analysis {

ProgramOrder::ProgramOrder(Operation *root) {
  int64_t next = 0;
  // Pre-order numbering; an op's extent closes after its regions.
  std::function<void(Operation *)> visit = [&](Operation *op) {
    int64_t first = next++;
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &inner : block)
          visit(&inner);
    extents_[op] = {first, next - 1};
  };
  visit(root);
}

LiveInterval ProgramOrder::extent(Operation *op) const {
  auto it = extents_.find(op);
  assert(it != extents_.end() && "op outside the ordered root");
  return it->second;
}

LiveInterval ProgramOrder::liveRange(Operation *def, ArrayRef<Operation *> users) const {
  LiveInterval defExtent = extent(def), range = defExtent;
  bool carried = false;
  auto widen = [&](LiveInterval e) {
    range.first = std::min(range.first, e.first);
    range.last = std::max(range.last, e.last);
  };
  for (Operation *user : users) {
    LiveInterval e = extent(user);
    carried |= e.first < defExtent.first;
    widen(e);
  }
  auto enclosesAll = [&](Operation *loop) {
    return loop->isProperAncestor(def) &&
           llvm::all_of(users, [&](Operation *u) { return loop->isProperAncestor(u); });
  };
  // A loop that runs some of the points but not all of them: the buffer
  // lives through all of its iterations.
  SmallVector<Operation *> points = {def};
  points.append(users.begin(), users.end());
  for (Operation *point : points)
    for (auto loop = point->getParentOfType<LoopLikeOpInterface>(); loop;
         loop = loop->getParentOfType<LoopLikeOpInterface>())
      if (!enclosesAll(loop))
        widen(extent(loop));
  // Used before it is made: carried around the innermost loop holding both.
  if (carried)
    for (auto loop = def->getParentOfType<LoopLikeOpInterface>(); loop;
         loop = loop->getParentOfType<LoopLikeOpInterface>())
      if (enclosesAll(loop)) {
        widen(extent(loop));
        break;
      }
  return range;
}

int64_t packSharedBuffers(std::vector<SharedBuffer> &buffers, int64_t alignment) {
  auto alignUp = [](int64_t x, int64_t a) { return (x + a - 1) / a * a; };
  // Largest first (then in program order), so big buffers take low offsets
  // and small ones fill the gaps; deterministic for tests.
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].live.first < buffers[b].live.first;
  });
  std::vector<size_t> placed;
  int64_t total = 0;
  for (size_t i : order) {
    SharedBuffer &buffer = buffers[i];
    std::vector<const SharedBuffer *> live; // placed, overlapping in time
    for (size_t j : placed)
      if (buffers[j].live.overlaps(buffer.live))
        live.push_back(&buffers[j]);
    std::sort(live.begin(), live.end(),
              [](const SharedBuffer *a, const SharedBuffer *b) { return a->offset < b->offset; });
    const int64_t align = std::max(alignment, buffer.alignment);
    int64_t offset = 0;
    for (const SharedBuffer *other : live) {
      if (offset + buffer.bytes <= other->offset)
        break; // fits in the gap below `other`
      offset = std::max(offset, alignUp(other->offset + other->bytes, align));
    }
    buffer.offset = offset;
    total = std::max(total, offset + buffer.bytes);
    placed.push_back(i);
  }
  return total;
}

} // namespace tegula::analysis
