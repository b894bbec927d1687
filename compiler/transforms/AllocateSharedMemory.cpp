//===- AllocateSharedMemory.cpp - offsets of shared-memory buffers --------===//
//
// One buffer per op that needs shared memory (SharedMemoryUsage), live over
// an interval of the module's program order (SharedMemoryLiveness), packed
// so that buffers live at the same time never share bytes. The lowering
// reads each op's offset and the module's total.
//
//===----------------------------------------------------------------------===//
#include "compiler/analysis/SharedMemoryLiveness.h"
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/transforms/Passes.h"

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
    std::vector<Operation *> owners;
    std::vector<SharedBuffer> buffers;
    module.walk([&](Operation *op) {
      if (int64_t bytes = sharedScratchBytes(op)) {
        owners.push_back(op);
        // A ring of shared tiles lives from its allocation to its last
        // user (across the whole loop that fills and reads it); every other
        // user needs its buffer only while it runs.
        SmallVector<Operation *> users;
        if (isa<tilegpu::AllocSharedOp>(op))
          users = llvm::to_vector(op->getUsers());
        buffers.push_back({order.liveRange(op, users), bytes, -1, sharedScratchAlignment(op)});
      }
    });
    int64_t total = packSharedBuffers(buffers, kSharedAlignment);

    Builder b(&getContext());
    for (auto [op, buffer] : llvm::zip(owners, buffers))
      op->setAttr(kSharedOffsetAttr, b.getI32IntegerAttr(int32_t(buffer.offset)));
    module->setAttr(kSharedBytesAttr, b.getI32IntegerAttr(int32_t(total)));
  }
};

} // namespace
