//===- StageInvariantWgmmaOperands.cpp - loop-invariant A tiles to shared ---===//
//
// Pass `stage-invariant-wgmma-operands` (sm_90a). A wgmma may read its A
// operand from registers (`tilegpu.dot_shared_b`): right for a tile made in
// the loop (attention's P), wrong on the hardware for one made before it
// (attention's Q, the backward's K and V, an MLP's input rows). ptxas 13.0
// gives such loop-invariant fragment registers to other values inside the
// loop - the softmax of the same iteration writes into Q's registers and the
// next iteration's wgmma multiplies garbage. The PTX is correct and the
// simulator (which runs it) agrees with the interpreter; the H100 run of
// 2026-11-26 (benchmarks/results/2026-11-26-h100-80gb-hbm3/) and the SASS
// (test/kernels/SassTest.cpp) show the clobber.
//
// So such an operand is stored once, before the outermost loop it is
// invariant in, into a one-stage ring in wgmma's K-major layout
// (`tilegpu.store_shared`: barriers around the stores, an async-proxy fence)
// and the dot reads both operands from shared memory
// (`tilegpu.dot_shared`) - as FlashAttention-3 keeps Q. It also frees the
// registers the fragments held for the whole loop. A tile that several dots
// of a loop read is stored once. Where shared memory has no room beside
// the rings live during the loop (227 KiB), the kernel is rejected with
// the sizes: smaller tiles or fewer stages fit.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "compiler/analysis/SharedMemoryLiveness.h"
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/WgmmaOperands.h"
#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/MathExtras.h"

#include <fmt/format.h>

namespace tegula {
#define GEN_PASS_DEF_STAGEINVARIANTWGMMAOPERANDS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// Shared memory a CTA may opt in to on sm_90a (227 KiB).
constexpr int64_t kHopperSharedBytes = 227 * 1024;

/// The outermost loop around `dot` for which its A operand is invariant (A
/// is stored before it: once, or once per iteration of a loop around it).
scf::ForOp outermostInvariantLoop(tilegpu::DotSharedBOp dot) {
  auto loop = dot->getParentOfType<scf::ForOp>();
  while (auto outer = loop->getParentOfType<scf::ForOp>()) {
    if (!outer.isDefinedOutsideOfLoop(dot.getA()))
      break;
    loop = outer;
  }
  return loop;
}

/// The one-stage ring that holds `dot`'s A operand as wgmma reads it
/// (K-major), and the bytes of it and every ring live during the dot's loop
/// (those of an earlier or later loop share their bytes: allocate-shared-
/// memory places buffers by live range; in a ping-pong kernel, beside all
/// of them). Other shared scratch (reductions, layout exchanges) lives only
/// while its op runs.
std::optional<std::pair<tilegpu::SharedTilesType, int64_t>> stagingRing(tilegpu::DotSharedBOp dot,
                                                                       scf::ForOp loop) {
  auto type = cast<RankedTensorType>(dot.getA().getType());
  const int bits = int(type.getElementTypeBitWidth());
  auto plan = layout::planWgmmaOperandTile(0, {int32_t(type.getDimSize(0)), int32_t(type.getDimSize(1))},
                                           /*contiguousDim=*/1, bits);
  if (!plan)
    return std::nullopt;
  auto ring = tilegpu::SharedTilesType::get(dot.getContext(), 1, type.getShape(), type.getElementType(), 1,
                                            plan->tile.rowXor, plan->tile.blockElements);
  // Per program in a ping-pong kernel's consumers; the rings before the
  // split already hold both programs' stages.
  auto perProgram = [](Operation *op) {
    return lowering::warpRoleAt(op->getBlock()) == lowering::WarpRole::Consumer ? lowering::programsPerCta(op) : 1;
  };
  auto aligned = [](int64_t n) { return int64_t(llvm::alignTo(n, analysis::kWgmmaTileAlignment)); };
  int64_t bytes = aligned(ring.tileBytes()) * perProgram(dot);
  auto module = dot->getParentOfType<ModuleOp>();
  analysis::ProgramOrder order(module);
  const analysis::LiveInterval during = order.extent(loop);
  const bool everyRing = lowering::programsPerCta(dot) > 1;
  module.walk([&](tilegpu::AllocSharedOp alloc) {
    SmallVector<Operation *> users = llvm::to_vector(alloc->getUsers());
    if (everyRing || order.liveRange(alloc, users).overlaps(during))
      bytes += aligned(analysis::sharedScratchBytes(alloc)) * perProgram(alloc);
  });
  return std::pair{ring, bytes};
}

struct StageInvariantWgmmaOperandsPass
    : tegula::impl::StageInvariantWgmmaOperandsBase<StageInvariantWgmmaOperandsPass> {
  void runOnOperation() override {
    SmallVector<tilegpu::DotSharedBOp> dots;
    getOperation().walk([&](tilegpu::DotSharedBOp dot) {
      auto loop = dot->getParentOfType<scf::ForOp>();
      if (lowering::isWgmmaDot(dot) && loop && loop.isDefinedOutsideOfLoop(dot.getA()))
        dots.push_back(dot);
    });
    // (A tile, loop) -> its ring: stored once for every dot of the loop.
    DenseMap<std::pair<Value, Operation *>, Value> rings;
    for (tilegpu::DotSharedBOp dot : dots) {
      scf::ForOp loop = outermostInvariantLoop(dot);
      Location loc = dot.getLoc();
      Value a = dot.getA();
      Value &ring = rings[{a, loop.getOperation()}];
      if (!ring) {
        auto staging = stagingRing(dot, loop);
        if (!staging) {
          dot.emitError("stage-invariant-wgmma-operands: the loop-invariant A operand ")
              << a.getType() << " has no wgmma shared-memory layout";
          return signalPassFailure();
        }
        auto [type, bytes] = *staging;
        if (bytes > kHopperSharedBytes) {
          dot.emitError(fmt::format(
              "the loop-invariant A operand of this dot ({} bytes) must be kept in shared memory on sm_90a "
              "(wgmma cannot keep it in registers across the loop), and with the rings live during the "
              "loop that needs {} bytes, more than the {} a CTA may use: use smaller tiles or fewer "
              "stages",
              type.tileBytes(), bytes, kHopperSharedBytes));
          return signalPassFailure();
        }
        OpBuilder b(loop);
        // The tile as it was loaded stores in wider vectors than its
        // fragments.
        auto convert = a.getDefiningOp<tilegpu::ConvertLayoutOp>();
        Value src = convert && a.hasOneUse() ? convert.getSrc() : a;
        ring = tilegpu::AllocSharedOp::create(b, loc, type);
        Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
        tilegpu::StoreSharedOp::create(b, loc, src, ring, zero, /*fenceAsyncProxy=*/true);
      }
      OpBuilder b(dot);
      Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
      auto both = tilegpu::DotSharedOp::create(b, loc, dot.getType(), ring, zero, dot.getB(), dot.getBStage(),
                                               dot.getAcc(), UnitAttr(), dot.getTransposeBAttr(),
                                               dot.getPrecisionAttr());
      dot.replaceAllUsesWith(both.getResult());
      dot.erase();
      if (auto convert = a.getDefiningOp<tilegpu::ConvertLayoutOp>(); convert && convert->use_empty())
        convert.erase();
    }
  }
};

} // namespace
