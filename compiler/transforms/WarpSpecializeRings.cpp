//===- WarpSpecializeRings.cpp - a producer warpgroup for TMA rings -------===//
//
// pipeline-dot-operands' warp-specialize (sm_90a): a loop at the top of the
// kernel whose dot operands arrive by TMA gets its own producer. The kernel
// splits at its start (scf.if on tilegpu.is_producer_warp, marked
// tilegpu.warp_specialized): the producer warpgroup recomputes the loop's
// bounds and the copies' coordinates and, per iteration, waits for the
// stage's release and fills it; the tile program's warps (the consumers)
// wait for each stage, run the dot and release the stage once its wgmma
// group has completed. Lowering turns the consumers' barriers into
// `bar.sync 1` over their own warps.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/DotOperandRings.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace tegula::rings {
namespace {
/// The ops of the kernel's entry block that compute `roots` (in order),
/// when they are all pure, region-free and scalar - what a producer warp
/// can recompute on its own; nothing otherwise.
std::optional<SmallVector<Operation *>> scalarSlice(Block &entry, ArrayRef<Value> roots) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (isa<BlockArgument>(v) && cast<BlockArgument>(v).getOwner() == &entry)
      continue; // a kernel argument
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &entry || def->getNumRegions() || !isPure(def) ||
        llvm::any_of(def->getResultTypes(), [](Type t) { return isa<ShapedType>(t); }))
      return std::nullopt;
    if (slice.insert(def))
      work.append(def->operand_begin(), def->operand_end());
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : entry)
    if (slice.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

} // namespace

bool pipelineWarpSpecialized(scf::ForOp loop, tile::DotOp dot, std::optional<Operand> &a, Operand &bOp,
                             int stages) {
  auto fn = dyn_cast<func::FuncOp>(loop->getParentOp());
  auto module = fn ? fn->getParentOfType<ModuleOp>() : ModuleOp();
  if (!fn || !bOp.block || module->hasAttr("tilegpu.producer_warps"))
    return false; // nested, not TMA, or the kernel already has a producer
  Block &entry = fn.getBody().front();
  SmallVector<Value> roots = {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()};
  auto outside = [&](Value v) {
    return v != loop.getInductionVar() && !loop->isAncestor(v.getParentRegion()->getParentOp());
  };
  for (Operand *o : {a ? &*a : nullptr, &bOp}) {
    if (!o)
      continue;
    for (Operation *op : o->slice.ops)
      llvm::append_range(roots, llvm::make_filter_range(op->getOperands(), outside));
    llvm::append_range(roots, llvm::make_filter_range(o->block.getOffsets(), outside));
  }
  auto outerSlice = scalarSlice(entry, roots);
  if (!outerSlice)
    return false;

  Location loc = dot.getLoc();
  MLIRContext *ctx = dot.getContext();
  const int64_t consumerWarps = module->getAttrOfType<IntegerAttr>("tilegpu.num_warps").getInt();
  constexpr int64_t kProducerWarps = 4, kProducerRegisters = 40;
  module->setAttr("tilegpu.producer_warps", IntegerAttr::get(IntegerType::get(ctx, 32), kProducerWarps));
  Type ivType = loop.getInductionVar().getType();
  auto constant = [&](OpBuilder &at, int64_t v) -> Value {
    return arith::ConstantOp::create(at, loc, IntegerAttr::get(ivType, v));
  };
  auto toI32 = [&](OpBuilder &at, Value v) -> Value {
    return ivType.isInteger(32) ? v : arith::IndexCastOp::create(at, loc, at.getI32Type(), v).getResult();
  };
  // The rings and their mbarriers (data and release), before the split:
  // every thread takes part in the initialisation's barrier.
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  auto allocRing = [&](Operand &o) -> Value {
    auto ring = tilegpu::AllocSharedOp::create(b, loc, o.ring);
    ring.setMbarriers(true);
    ring.setReleased(true);
    tilegpu::TmaInitOp::create(b, loc, ring);
    return ring;
  };
  Value ringA = a ? allocRing(*a) : Value();
  Value ringB = allocRing(bOp);
  SmallVector<Value> rings = {ringB};
  if (ringA)
    rings.insert(rings.begin(), ringA);
  auto split = scf::IfOp::create(b, loc, TypeRange{}, tilegpu::IsProducerWarpOp::create(b, loc, b.getI1Type()), true);
  split->setAttr("tilegpu.warp_specialized", UnitAttr::get(ctx)); // its else region: the consumers
  // The consumers: the rest of the kernel.
  Block *consumer = split.elseBlock();
  for (Operation &op : llvm::make_early_inc_range(llvm::make_range(std::next(split->getIterator()),
                                                                    std::prev(entry.end()))))
    op.moveBefore(consumer->getTerminator());
  // Registers move from the producer warpgroup to the consumers when the
  // launch's per-thread share (64K / threads) is below what a thread may hold.
  const int64_t threads = (consumerWarps + kProducerWarps) * 32;
  const int64_t consumerRegisters =
      std::min<int64_t>(256, (65536 - kProducerWarps * 32 * kProducerRegisters) / (consumerWarps * 32) / 8 * 8);
  const bool moveRegisters = 65536 / threads < 255;
  if (moveRegisters) {
    OpBuilder atConsumer = OpBuilder::atBlockBegin(consumer);
    tilegpu::SetMaxRegistersOp::create(atConsumer, loc, int32_t(consumerRegisters), true);
  }

  // The producer: the loop's bounds and addresses recomputed, then per
  // iteration: wait until the stage is released (from its second use on),
  // and fill it.
  OpBuilder p = OpBuilder::atBlockBegin(split.thenBlock());
  if (moveRegisters)
    tilegpu::SetMaxRegistersOp::create(p, loc, int32_t(kProducerRegisters), false);
  IRMapping outer;
  for (Operation *op : *outerSlice)
    p.clone(*op, outer);
  Value lb = outer.lookupOrDefault(loop.getLowerBound()), ub = outer.lookupOrDefault(loop.getUpperBound()),
        step = outer.lookupOrDefault(loop.getStep());
  auto producerLoop = scf::ForOp::create(p, loc, lb, ub, step);
  {
    OpBuilder in = OpBuilder::atBlockBegin(producerLoop.getBody());
    Value iv = producerLoop.getInductionVar();
    Value i = arith::DivSIOp::create(in, loc, arith::SubIOp::create(in, loc, iv, lb), step);
    Value stage = toI32(in, arith::RemSIOp::create(in, loc, i, constant(in, stages)));
    Value reuse = arith::CmpIOp::create(in, loc, arith::CmpIPredicate::sge, i, constant(in, stages));
    auto wait = scf::IfOp::create(in, loc, TypeRange{}, reuse, false);
    {
      // Use u = i / stages of the stage needs the release of use u - 1:
      // that release completes phase u - 1 of the release barrier.
      OpBuilder w = OpBuilder::atBlockBegin(wait.thenBlock());
      Value use = arith::DivSIOp::create(w, loc, i, constant(w, stages));
      Value phase = toI32(w, arith::RemSIOp::create(w, loc, arith::SubIOp::create(w, loc, use, constant(w, 1)),
                                                    constant(w, 2)));
      auto released = tilegpu::TmaWaitOp::create(w, loc, rings, stage, phase);
      released.setReleased(true);
    }
    if (a)
      issue(in, loop, *a, ringA, iv, stage, &outer);
    issue(in, loop, bOp, ringB, iv, stage, &outer);
  }

  // The consumers' loop: wait for this iteration's stage, the dot, and once
  // the previous iteration's wgmma group is complete, release its stage.
  const std::optional<unsigned> carried = carriedAccumulator(loop, dot);
  const bool overlap = stages >= 3 && carried;
  OpBuilder in(dot);
  Value clb = loop.getLowerBound(), cstep = loop.getStep();
  Value iter = arith::DivSIOp::create(in, loc, arith::SubIOp::create(in, loc, loop.getInductionVar(), clb), cstep);
  Value stage = toI32(in, arith::RemSIOp::create(in, loc, iter, constant(in, stages)));
  Value phase = toI32(in, arith::RemSIOp::create(in, loc, arith::DivSIOp::create(in, loc, iter, constant(in, stages)),
                                                 constant(in, 2)));
  tilegpu::TmaWaitOp::create(in, loc, rings, stage, phase);
  Operation *onShared;
  if (a) {
    auto both = tilegpu::DotSharedOp::create(in, loc, dot.getType(), ringA, stage, ringB, stage, dot.getAcc());
    both.setTransposeA(bool(a->trans));
    both.setTransposeB(bool(bOp.trans));
    onShared = both;
  } else {
    auto bOnly = tilegpu::DotSharedBOp::create(in, loc, dot.getType(), dot.getA(), ringB, stage, dot.getAcc());
    bOnly.setTransposeB(bool(bOp.trans));
    onShared = bOnly;
  }
  in.setInsertionPointAfter(onShared);
  Value result = tilegpu::WgmmaWaitOp::create(in, loc, onShared->getResult(0).getType(), onShared->getResult(0),
                                              in.getI32IntegerAttr(overlap ? 1 : 0))
                     .getResult();
  Value hasPrevious = arith::CmpIOp::create(in, loc, arith::CmpIPredicate::sge, iter, constant(in, 1));
  auto release = scf::IfOp::create(in, loc, TypeRange{}, hasPrevious, false);
  {
    OpBuilder r = OpBuilder::atBlockBegin(release.thenBlock());
    Value previous = toI32(r, arith::RemSIOp::create(r, loc, arith::AddIOp::create(r, loc, iter, constant(r, stages - 1)),
                                                     constant(r, stages)));
    tilegpu::TmaArriveOp::create(r, loc, rings, previous);
  }
  dot.replaceAllUsesWith(result);
  dot.erase();
  for (Operand *o : {a ? &*a : nullptr, &bOp}) {
    if (!o)
      continue;
    for (Operation *between : o->chain)
      between->erase();
    o->loadOp()->erase();
  }
  // After the loop every copy has been waited for (the producer issues
  // exactly the loop's iterations): the mbarriers go, the rings' bytes may
  // be reused.
  OpBuilder after(loop->getContext());
  after.setInsertionPointAfter(loop);
  for (Value ring : rings)
    tilegpu::TmaReleaseOp::create(after, loc, ring);
  if (overlap) { // the last iteration's wgmma group
    Value acc = loop.getResult(*carried);
    auto done = tilegpu::WgmmaWaitOp::create(after, loc, acc.getType(), acc, after.getI32IntegerAttr(0));
    acc.replaceAllUsesExcept(done.getResult(), done);
  }
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*loop.getBody())))
    if (isOpTriviallyDead(&op))
      op.erase();
  return true;
}
} // namespace tegula::rings
