//===- AllocateSharedMemory.cpp - offsets of shared-memory buffers --------===//
//
// One buffer per op that needs shared memory (SharedMemoryUsage), live over
// an interval of the module's program order (SharedMemoryLiveness), packed
// so that buffers live at the same time never share bytes. A scratch
// exchange's buffer lives until the next one (ScratchBarriers), which can
// then skip its leading barrier, where that adds no bytes in all - or, for
// a small one, while the kernel stays within static shared memory. The lowering
// reads each op's offset and the module's total.
//
// A ping-pong kernel (two programs per CTA) runs its consumer code once per
// program, each at its own pace: one program may be storing its result
// while the other is in its loop. The consumers' buffers are packed among
// themselves into an arena, which gets one copy per program
// (tilegpu.shared_slot_stride bytes apart); the rings, allocated before
// the split, hold both programs' stages and live to the kernel's end.
//
//===----------------------------------------------------------------------===//
#include "compiler/analysis/ScratchBarriers.h"
#include "compiler/analysis/SharedMemoryLiveness.h"
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/transforms/LoweringCommon.h"
#include "compiler/transforms/Passes.h"

#include "llvm/Support/MathExtras.h"

namespace tegula {
#define GEN_PASS_DEF_ALLOCATESHAREDMEMORY
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;
using namespace tegula::analysis;

namespace {

struct AllocateSharedMemoryPass
    : tegula::impl::AllocateSharedMemoryBase<AllocateSharedMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // One order for the whole module: kernels do not call each other, so
    // buffers of different functions never overlap in time and reuse the
    // same bytes, as they may (each launch runs one kernel).
    ProgramOrder order(module);
    const int64_t programs = lowering::programsPerCta(module);
    std::vector<Operation *> owners, programOwners; // the latter: per-program (ping-pong consumers)
    std::vector<SharedBuffer> buffers, programBuffers;
    // Exchanges that could live until the next one: (index in `buffers`,
    // that live range), taken where they cost no bytes (or, for small ones,
    // a few in a kernel that needs little).
    std::vector<std::pair<size_t, LiveInterval>> apartIfCheap;
    module.walk([&](Operation *op) {
      op->removeAttr(kSkipLeadingBarrierAttr); // placed anew: elide-scratch-barriers decides again
      int64_t bytes = sharedScratchBytes(op);
      if (!bytes)
        return;
      // A ring of shared tiles lives from its allocation to its last user
      // (across the whole loop that fills and reads it); every other user
      // needs its buffer only while it runs.
      SmallVector<Operation *> users;
      if (isa<tilegpu::AllocSharedOp>(op))
        users = llvm::to_vector(op->getUsers());
      // An exchange's reads stay pending until the next one's second
      // barrier: apart from its buffer, that one needs no leading barrier.
      if (programs == 1 && isScratchExchange(op))
        apartIfCheap.push_back({buffers.size(), order.liveRange(op, nextScratchExchanges(op))});
      const bool perProgram = programs > 1 && lowering::warpRoleAt(op->getBlock()) == lowering::WarpRole::Consumer;
      // Read by either program until the end; the order's mbarriers, which
      // order_wait / order_arrive / order_retire use without naming them,
      // until the consumers' end in any kernel (8 warps taking turns too).
      if ((programs > 1 && !perProgram && isa<tilegpu::AllocSharedOp>(op)) || isa<tilegpu::OrderInitOp>(op))
        users.push_back(op->getBlock()->getTerminator());
      if (Operation *loop = deferredTmaStoreLoop(op)) // read until the next store, or after the loop
        users.push_back(loop->getNextNode());
      (perProgram ? programOwners : owners).push_back(op);
      (perProgram ? programBuffers : buffers)
          .push_back({order.liveRange(op, users), bytes, -1, sharedScratchAlignment(op)});
    });
    int64_t arenaBytes = 0;
    if (!programBuffers.empty()) {
      arenaBytes = int64_t(llvm::alignTo(packSharedBuffers(programBuffers, kSharedAlignment), kWgmmaTileAlignment));
      LiveInterval live = programBuffers.front().live;
      for (const SharedBuffer &b : programBuffers)
        live = {std::min(live.first, b.live.first), std::max(live.last, b.live.last)};
      buffers.push_back({live, arenaBytes * programs, -1, kWgmmaTileAlignment});
    }
    int64_t total = packSharedBuffers(buffers, kSharedAlignment);
    // One at a time, in program order: kept where the total stays, or for a
    // small buffer (a reduction's partials) while the kernel stays within
    // static shared memory - there bytes do not limit how many CTAs fit.
    for (auto [i, live] : apartIfCheap) {
      std::vector<SharedBuffer> apart = buffers;
      apart[i].live = live;
      const int64_t bytes = packSharedBuffers(apart, kSharedAlignment);
      if (bytes <= total || (apart[i].bytes <= kSmallScratchBytes && bytes <= kMaxStaticSharedBytes))
        buffers = std::move(apart), total = bytes;
    }

    Builder b(&getContext());
    for (auto [op, buffer] : llvm::zip(owners, buffers))
      op->setAttr(kSharedOffsetAttr, b.getI32IntegerAttr(int32_t(buffer.offset)));
    if (!programBuffers.empty()) {
      const int64_t arena = buffers.back().offset;
      for (auto [op, buffer] : llvm::zip(programOwners, programBuffers)) {
        op->setAttr(kSharedOffsetAttr, b.getI32IntegerAttr(int32_t(arena + buffer.offset)));
        op->setAttr(kSharedSlotStrideAttr, b.getI32IntegerAttr(int32_t(arenaBytes)));
      }
    }
    module->setAttr(kSharedBytesAttr, b.getI32IntegerAttr(int32_t(total)));
  }
};

} // namespace
