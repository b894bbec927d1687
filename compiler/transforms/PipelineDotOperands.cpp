//===- PipelineDotOperands.cpp - cp.async rings for a loop's dot operands --===//
//
// Iteration i of a GEMM's K loop waits for its own operand tiles only: the
// tiles of iterations i+1 .. i+S-1 are already on their way (cp.async into
// the other stages of a ring), so global-memory latency hides behind the
// mma.sync of the current stage. See Passes.td for the conditions; the rest
// of the compiler sees three new ops (alloc_shared, async_load, async_wait)
// and dot_shared in place of the dot. TMA rings wait on mbarriers instead
// (tma_init / tma_load / tma_wait / tma_release); warp-specialised ones are
// built in WarpSpecializeRings.cpp. Which loads qualify, and the rings'
// tiles: DotOperandPlans.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/DotOperandRings.h"
#include "compiler/transforms/LayoutRewriting.h"
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"

namespace tegula {
#define GEN_PASS_DEF_PIPELINEDOTOPERANDS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;
using namespace tegula::rings;

namespace tegula::rings {

// An iteration that does not exist (iv >= upper bound) is masked off; a
// TMA box past the tensor's end reads zeros.
SmallVector<StageSignal> stageSignals(ArrayRef<Value> group) {
  int64_t bytes = 0;
  for (Value ring : group)
    bytes += cast<tilegpu::SharedTilesType>(ring.getType()).tileBytes();
  SmallVector<StageSignal> signals;
  for (size_t i = 0; i < group.size(); ++i)
    signals.push_back({group.front(), i == 0 ? bytes : 0});
  return signals;
}

namespace {
/// Maps `loop`'s induction variable to `iv` and each affine carried value
/// of `slice` to its value at that iteration, init + k * delta with
/// k = (iv - lb) / step (unsigned).
void mapIteration(OpBuilder &b, Location loc, scf::ForOp loop, const AddressSlice &slice, Value iv, IRMapping &map) {
  map.map(loop.getInductionVar(), iv);
  for (const AffineCarried &c : slice.carried) {
    // iv - lb is k step exactly as an unsigned number, even where iv (a
    // look-ahead) has wrapped past INT32_MAX; k is not negative.
    Value k = arith::DivUIOp::create(b, loc, arith::SubIOp::create(b, loc, iv, loop.getLowerBound()),
                                     loop.getStep());
    IRMapping invariant;
    for (Operation *o : c.deltaOps)
      b.clone(*o, invariant);
    Value delta = invariant.lookupOrDefault(c.delta);
    Type deltaType = delta.getType();
    auto tensor = dyn_cast<RankedTensorType>(deltaType);
    Type elem = tensor ? tensor.getElementType() : deltaType;
    if (elem != k.getType())
      k = elem.getIntOrFloatBitWidth() > k.getType().getIntOrFloatBitWidth()
              ? Value(arith::ExtUIOp::create(b, loc, elem, k))
              : Value(arith::TruncIOp::create(b, loc, elem, k));
    if (tensor)
      k = tile::SplatOp::create(b, loc, tensor, k);
    Value offset = arith::MulIOp::create(b, loc, delta, k);
    Value at = isa<tile::PtrType>(getElementTypeOrSelf(c.init.getType()))
                   ? Value(tile::AddPtrOp::create(b, loc, c.init.getType(), c.init, offset))
                   : Value(arith::AddIOp::create(b, loc, c.init, offset));
    map.map(c.arg, at);
  }
}

/// Whether iteration `iv` = lb + k step (k >= 0; computed in the counter's
/// type, so a look-ahead near INT32_MAX has wrapped) is one `loop` runs:
/// k step < ub - lb as unsigned numbers, where neither side overflows (the
/// difference of two counters is exact modulo 2^32), and lb < ub - which
/// holds inside the loop. `iv < ub` took a wrapped look-ahead for an
/// iteration to run, and copied what lies past the operands' ends. With lb
/// a literal 0 it folds to `iv <u ub`, the compare it replaces.
Value runsIteration(OpBuilder &b, Location loc, scf::ForOp loop, Value iv) {
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound();
  Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, b.createOrFold<arith::SubIOp>(loc, iv, lb),
                                     b.createOrFold<arith::SubIOp>(loc, ub, lb));
  if (loop->isAncestor(b.getInsertionBlock()->getParentOp()))
    return runs;
  return arith::AndIOp::create(b, loc, runs, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub));
}
} // namespace

void issue(OpBuilder &b, scf::ForOp loop, Operand &op, Value ring, Value iv, Value stage, const IRMapping *outer,
           std::optional<StageSignal> signal) {
  Location loc = op.loadOp()->getLoc();
  if (op.block) {
    // Only iterations the loop runs (a look-ahead past its end copies
    // nothing): such a copy would be a box wholly outside the tensor, and
    // waiting for it would rely on TMA crediting the bytes of a box it never
    // reads - not documented. A producer's loop (`outer`) runs only those.
    OpBuilder::InsertionGuard guard(b);
    if (!outer) {
      Value runs = runsIteration(b, loc, loop, iv);
      auto only = scf::IfOp::create(b, loc, TypeRange{}, runs, /*withElseRegion=*/false);
      b.setInsertionPointToStart(only.thenBlock());
    }
    IRMapping map = outer ? *outer : IRMapping();
    mapIteration(b, loc, loop, op.slice, iv, map);
    for (Operation *o : op.slice.ops)
      b.clone(*o, map);
    SmallVector<Value> coords;
    for (Value c : op.block.getOffsets())
      coords.push_back(map.lookupOrDefault(c));
    tilegpu::TmaLoadOp::create(b, loc, ring, stage, op.map, coords,
                               signal && signal->ring != ring ? signal->ring : Value(),
                               signal ? b.getI64IntegerAttr(signal->bytes) : IntegerAttr(),
                               op.multicastCtas > 1 ? b.getI64IntegerAttr(op.multicastCtas) : IntegerAttr());
    return;
  }
  IRMapping map;
  mapIteration(b, loc, loop, op.slice, iv, map);
  for (Operation *o : op.slice.ops)
    b.clone(*o, map);
  Value ptr = map.lookupOrDefault(op.load.getPtr());
  Value loadMask = op.load.getMask() ? map.lookupOrDefault(op.load.getMask()) : Value();
  // A scattering copy's pointers in its own layout: conversions that
  // rematerialiseScatteredAddresses turns into the address computation
  // itself, done in that layout - when it is all cheap to recompute (else
  // the copies keep the load's layout: bank conflicts, where a converted
  // pointer tile would cross shared memory every iteration).
  const bool relayout = op.scatterEncoding && isCheap(ptr) && (!loadMask || isCheap(loadMask));
  auto inCopyLayout = [&](Value v) -> Value {
    if (!relayout)
      return v;
    return tilegpu::ConvertLayoutOp::create(b, loc, withEncoding(v.getType(), op.scatterEncoding), v).getResult();
  };
  ptr = inCopyLayout(ptr);
  auto ptrType = cast<RankedTensorType>(ptr.getType());
  Value exists = runsIteration(b, loc, loop, iv);
  Value mask = tile::SplatOp::create(
      b, loc, RankedTensorType::get(ptrType.getShape(), b.getI1Type(), ptrType.getEncoding()), exists);
  if (loadMask)
    mask = arith::AndIOp::create(b, loc, inCopyLayout(loadMask), mask);
  auto copy = tilegpu::AsyncLoadOp::create(b, loc, ring, stage, ptr, mask);
  if (auto w = op.load->getAttr("tilegpu.vector_width"))
    copy->setAttr("tilegpu.vector_width", w);
  // The load's L2 eviction priority rides on the copies (cp.async's
  // .L2::cache_hint); its cache operator does not: cp.async has .ca and .cg
  // alone, chosen by the copy's width.
  if (op.load.getEvict() != tile::EvictionPolicy::Normal)
    copy->setAttr("tilegpu.evict", op.load.getEvictAttr());
}

Value castCounter(OpBuilder &b, Location loc, Type to, Value v) {
  const Type from = v.getType();
  if (from == to)
    return v;
  if (from.isIndex() || to.isIndex())
    return arith::IndexCastOp::create(b, loc, to, v);
  if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
    return arith::TruncIOp::create(b, loc, to, v);
  return arith::ExtSIOp::create(b, loc, to, v);
}

std::optional<unsigned> carriedAccumulator(scf::ForOp loop, tile::DotOp dot) {
  auto arg = dyn_cast<BlockArgument>(dot.getAcc());
  if (!arg || arg.getOwner() != loop.getBody() || arg.getArgNumber() == 0 || !dot->hasOneUse())
    return std::nullopt;
  const unsigned i = arg.getArgNumber() - 1;
  auto yield = dyn_cast<scf::YieldOp>(*dot->getUsers().begin());
  if (!yield || yield->getParentOp() != loop || yield.getOperand(i) != dot.getResult())
    return std::nullopt;
  return i;
}

} // namespace tegula::rings

namespace {

/// `v` in the type of `loop`'s induction variable.
Value ivConstant(OpBuilder &b, scf::ForOp loop, int64_t v) {
  return arith::ConstantOp::create(b, loop.getLoc(), IntegerAttr::get(loop.getInductionVar().getType(), v));
}

/// A stage or phase number as the ring ops take it (i32).
Value asI32(OpBuilder &b, Location loc, Value v) { return castCounter(b, loc, b.getI32Type(), v); }

/// The stage (`k` % stages) and the mbarrier phase ((`k` / stages) % 2) of
/// iteration number `k`: a stage's mbarrier completes once per use.
std::pair<Value, Value> stageAndPhase(OpBuilder &b, scf::ForOp loop, Value k, int stages) {
  Location loc = loop.getLoc();
  Value stage = asI32(b, loc, arith::RemSIOp::create(b, loc, k, ivConstant(b, loop, stages)));
  Value phase = asI32(b, loc, arith::RemSIOp::create(b, loc, arith::DivSIOp::create(b, loc, k, ivConstant(b, loop, stages)),
                                                     ivConstant(b, loop, 2)));
  return {stage, phase};
}

/// Pipelines B, and A too unless it is already this mma's fragments in
/// registers (`a` empty: attention's Q, or P from the previous dot).
void pipeline(scf::ForOp loop, tile::DotOp dot, std::optional<Operand> a, Operand bOp, int stages) {
  Location loc = dot.getLoc();
  // wgmma keeps one group in flight across iterations when the accumulator
  // is only carried and the ring has 3+ stages: its stage is then still
  // being read while the next iteration runs, so loads go one stage further
  // behind (look ahead stages - 2 iterations instead of stages - 1).
  const bool wgmma =
      cast<tilegpu::MmaEncodingAttr>(cast<RankedTensorType>(dot.getType()).getEncoding()).isWgmma();
  const std::optional<unsigned> carried = carriedAccumulator(loop, dot);
  const bool overlap = wgmma && stages >= 3 && carried;
  const int lookahead = overlap ? stages - 2 : stages - 1;
  OpBuilder b(loop);
  Type ivType = loop.getInductionVar().getType();
  auto constant = [&](OpBuilder &at, int64_t v) -> Value {
    return arith::ConstantOp::create(at, loc, IntegerAttr::get(ivType, v));
  };
  const bool tma = bool(bOp.block);
  // TMA: the stage's A and B copies complete on one mbarrier, A's (one wait
  // a stage).
  auto allocRing = [&](Operand &o, bool barriers) -> Value {
    auto ring = tilegpu::AllocSharedOp::create(b, loc, o.ring);
    ring.setTf32(o.roundedByTma());
    if (tma && barriers) {
      ring.setMbarriers(true);
      tilegpu::TmaInitOp::create(b, loc, ring);
    }
    return ring;
  };
  Value ringA = a ? allocRing(*a, true) : Value();
  Value ringB = allocRing(bOp, !a);
  std::optional<StageSignal> signalA, signalB;
  if (tma && a) {
    SmallVector<StageSignal> both = stageSignals({ringA, ringB});
    signalA = both[0], signalB = both[1];
  }
  const int groupsPerStage = a ? 2 : 1;
  auto stageConst = [&](OpBuilder &at, int64_t s) -> Value {
    return arith::ConstantOp::create(at, loc, at.getI32IntegerAttr(int32_t(s)));
  };
  // Prologue: iterations 0 .. lookahead-1 into stages 0 .. lookahead-1.
  Value lb = loop.getLowerBound(), step = loop.getStep();
  for (int s = 0; s < lookahead; ++s) {
    Value iv = arith::AddIOp::create(b, loc, lb, arith::MulIOp::create(b, loc, step, constant(b, s)));
    if (a)
      issue(b, loop, *a, ringA, iv, stageConst(b, s), nullptr, signalA);
    issue(b, loop, bOp, ringB, iv, stageConst(b, s), nullptr, signalB);
  }
  // In the loop: wait for this iteration's stage (two groups, A and B, per
  // stage; the later stages' may stay in flight), the dot on it, then the
  // loads of iteration i + stages - 1 into the stage iteration i - 1 read.
  OpBuilder in(dot);
  Value iter = arith::DivSIOp::create(in, loc, arith::SubIOp::create(in, loc, loop.getInductionVar(), lb), step);
  auto toI32 = [&](Value v) -> Value {
    if (ivType.isInteger(32))
      return v;
    OpBuilder at(v.getContext());
    at.setInsertionPointAfterValue(v);
    return castCounter(at, loc, at.getI32Type(), v);
  };
  Value stage = toI32(arith::RemSIOp::create(in, loc, iter, constant(in, stages)));
  SmallVector<Value> rings = {ringB};
  if (ringA)
    rings.insert(rings.begin(), ringA);
  // A stage's mbarrier completes once per use of the stage: the phase of
  // iteration i is (i / stages) % 2.
  auto phaseOf = [&](OpBuilder &at, Value k) {
    return toI32(arith::RemSIOp::create(
        at, loc, arith::DivSIOp::create(at, loc, k, constant(at, stages)), constant(at, 2)));
  };
  if (tma) {
    tilegpu::TmaWaitOp::create(in, loc, rings.front(), stage, phaseOf(in, iter));
  } else {
    // (Other pipelined dots of the loop add their groups between these:
    // waiting for all but this many is then only more conservative.)
    auto wait = tilegpu::AsyncWaitOp::create(in, loc, ValueRange{}, groupsPerStage * (lookahead - 1));
    if (cast<tilegpu::MmaEncodingAttr>(cast<RankedTensorType>(dot.getType()).getEncoding()).isWgmma())
      wait.setFenceAsyncProxy(true);
  }
  Operation *onShared;
  if (a) {
    auto both = tilegpu::DotSharedOp::create(in, loc, dot.getType(), ringA, stage, ringB, stage, dot.getAcc(),
                                             UnitAttr(), UnitAttr(), f32Precision(dot));
    both.setTransposeA(bool(a->trans));
    both.setTransposeB(bool(bOp.trans));
    onShared = both;
  } else {
    auto bOnly = tilegpu::DotSharedBOp::create(in, loc, dot.getType(), dot.getA(), ringB, stage, dot.getAcc(),
                                               UnitAttr(), f32Precision(dot));
    bOnly.setTransposeB(bool(bOp.trans));
    onShared = bOnly;
  }
  in.setInsertionPointAfter(onShared);
  Value result = onShared->getResult(0);
  if (wgmma) // all but this iteration's group (overlap), or all
    result = tilegpu::WgmmaWaitOp::create(in, loc, result.getType(), result,
                                          in.getI32IntegerAttr(overlap ? 1 : 0)).getResult();
  Value ahead = arith::AddIOp::create(in, loc, loop.getInductionVar(),
                                      arith::MulIOp::create(in, loc, step, constant(in, lookahead)));
  Value nextStage = toI32(arith::RemSIOp::create(
      in, loc, arith::AddIOp::create(in, loc, iter, constant(in, lookahead)), constant(in, stages)));
  if (a)
    issue(in, loop, *a, ringA, ahead, nextStage, nullptr, signalA);
  issue(in, loop, bOp, ringB, ahead, nextStage, nullptr, signalB);
  dot.replaceAllUsesWith(result);
  dot.erase();
  for (Operand *o : {a ? &*a : nullptr, &bOp}) {
    if (!o)
      continue;
    for (Operation *between : o->chain)
      between->erase();
    o->loadOp()->erase();
  }
  // After the loop: cp.async copies still in flight (past the end: zero
  // fills) land before the rings' memory is reused.
  b.setInsertionPointAfter(loop);
  if (tma) {
    tilegpu::TmaReleaseOp::create(b, loc, rings.front()); // the rings' mbarriers (the first's)
  } else {
    tilegpu::AsyncWaitOp::create(b, loc, rings, 0);
  }
  if (overlap) { // the last iteration's wgmma group
    Value acc = loop.getResult(*carried);
    auto done = tilegpu::WgmmaWaitOp::create(b, loc, acc.getType(), acc, b.getI32IntegerAttr(0));
    acc.replaceAllUsesExcept(done.getResult(), done);
  }
  // The original address computation is dead now.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*loop.getBody())))
    if (isOpTriviallyDead(&op))
      op.erase();
}

} // namespace

namespace tegula::rings {

void waitForWgmmaWhereNeeded(scf::ForOp loop, ArrayRef<Operation *> issued) {
  llvm::DenseSet<Operation *> ours(issued.begin(), issued.end());
  bool others = false;
  loop.getBody()->walk([&](Operation *op) {
    others |= isa<tile::DotOp, tilegpu::DotSharedOp, tilegpu::DotSharedBOp>(op) && !ours.contains(op);
  });
  auto waitFor = [&](ArrayRef<Operation *> done, int pending, Operation *before) {
    OpBuilder b(before);
    for (Operation *dot : done) {
      Value r = dot->getResult(0);
      auto wait = tilegpu::WgmmaWaitOp::create(b, dot->getLoc(), r.getType(), r, b.getI32IntegerAttr(pending));
      r.replaceAllUsesExcept(wait.getResult(), wait);
    }
  };
  if (others) {
    for (Operation *dot : issued)
      waitFor({dot}, 0, dot->getNextNode());
    return;
  }
  SmallVector<Operation *> inFlight;
  SmallVector<Operation *> body;
  for (Operation &op : *loop.getBody())
    body.push_back(&op);
  for (Operation *op : body) {
    int latest = -1; // the last in-flight dot whose result `op` reads
    for (int i = 0; i < int(inFlight.size()); ++i) {
      const Value r = inFlight[size_t(i)]->getResult(0);
      bool reads = false;
      op->walk([&](Operation *inner) { reads |= llvm::is_contained(inner->getOperands(), r); });
      if (reads)
        latest = i;
    }
    if (latest >= 0) {
      waitFor(ArrayRef<Operation *>(inFlight).take_front(size_t(latest) + 1), int(inFlight.size()) - 1 - latest, op);
      inFlight.erase(inFlight.begin(), inFlight.begin() + latest + 1);
    }
    if (ours.contains(op))
      inFlight.push_back(op);
  }
  // A result nothing reads still completes within its iteration: the next
  // iteration refills the stage it reads.
  if (!inFlight.empty())
    waitFor(inFlight, 0, loop.getBody()->getTerminator());
}

} // namespace tegula::rings

namespace {

/// A loop whose next iterations' loads may go out ahead of time: a constant
/// positive step, and no store, atomic or barrier (tl::debug_barrier) in its
/// body - the early copies would jump the accesses those order (a loop that
/// stores what a later iteration loads reads it stale). Such loops keep
/// their loads where they are.
bool pipelinable(scf::ForOp loop) {
  APInt step;
  if (!matchPattern(loop.getStep(), m_ConstantInt(&step)) || !step.isStrictlyPositive())
    return false;
  // Test hook: a module marked `tegula.test.pipeline_past_stores` pipelines
  // such loops anyway, so the simulator must report the early copies.
  if (loop->getParentOfType<ModuleOp>()->hasAttr("tegula.test.pipeline_past_stores"))
    return true;
  const WalkResult ordered = loop.getBody()->walk([](Operation *op) {
    return isa<tile::StoreOp, tile::AtomicRMWOp, tile::AtomicCASOp, tile::DescriptorStoreOp, tilegpu::BarrierOp>(op)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return !ordered.wasInterrupted();
}

/// Rings of 32-bit elements that differ at most in their swizzle. A ring's
/// reads follow the ring's own tile (SharedOperand: one ld.shared an
/// element, or ldmatrix rows of four tf32 values, which every swizzle keeps
/// whole - it moves 16-byte chunks), so a load two dots read in different
/// orders (attention's backward in f32: q as B of S^T = k q^T and of dk +=
/// dS^T q) can fill one ring in either use's swizzle: the other's reads may
/// meet bank conflicts, never wrong values. 16-bit rings keep their own.
bool sameTileButSwizzle(tilegpu::SharedTilesType x, tilegpu::SharedTilesType y) {
  return x.getElementType().getIntOrFloatBitWidth() == 32 && x.getElementType() == y.getElementType() &&
         x.getStages() == y.getStages() && x.getShape() == y.getShape() &&
         x.getContiguousDim() == y.getContiguousDim();
}

/// Every tensor-core dot of `loop` at once, when a load feeds more than one
/// of them (attention's backward reads q as q^T in one dot and as q in
/// another, k likewise): one ring per load - cp.async, or TMA for
/// descriptor loads (all of one kind, each ring its own tensor map) - filled once per
/// iteration and read by each dot it feeds (dot_shared{,_b}, transposed or
/// not) - the plans of all its uses must agree on the ring's tile. A waits
/// before the first dot for this iteration's stage; the next loads go out
/// after the last dot (the barrier of the next wait orders them after every
/// read of the stage they refill); wgmma groups complete within their
/// iteration, each where its result is first needed. False, with nothing
/// changed, when there is no shared load or a dot or a use does not qualify
/// (the per-dot path then takes what it can).
bool pipelineSharedLoads(scf::ForOp loop, ArrayRef<tile::DotOp> dots, int stages) {
  struct Use {
    tile::DotOp dot;
    unsigned idx;
    Operand op;
  };
  std::vector<Use> uses;
  bool wgmma = false;
  for (tile::DotOp dot : dots) {
    auto mma = dyn_cast_if_present<tilegpu::MmaEncodingAttr>(
        cast<RankedTensorType>(dot.getType()).getEncoding());
    if (!mma)
      return false;
    wgmma |= mma.isWgmma();
    auto b = planOperand(loop, dot, 1, stages, /*sharedLoad=*/true);
    auto a = planOperand(loop, dot, 0, stages, /*sharedLoad=*/true);
    auto fragments = dyn_cast_if_present<tilegpu::DotOperandEncodingAttr>(
        cast<RankedTensorType>(dot.getA().getType()).getEncoding());
    const bool aInRegisters = fragments && fragments.getParent() == mma &&
                              (fragments.getElementBits() == 16 || fragments.getElementBits() == 32);
    if (!b || !(a || aInRegisters))
      return false;
    if (a)
      uses.push_back({dot, 0, std::move(*a)});
    uses.push_back({dot, 1, std::move(*b)});
  }
  // All rings of TMA (descriptor loads) or all of cp.async.
  const bool tma = bool(uses.front().op.block);
  if (llvm::any_of(uses, [&](const Use &u) { return bool(u.op.block) != tma; }))
    return false;
  // Per load, its uses: all of them dot operands here, on one ring.
  llvm::MapVector<Operation *, SmallVector<size_t>> byLoad;
  for (size_t i = 0; i < uses.size(); ++i)
    byLoad[uses[i].op.loadOp()].push_back(i);
  bool shared = false;
  for (auto &[load, indices] : byLoad) {
    const Value result = load->getResult(0);
    if (size_t(std::distance(result.use_begin(), result.use_end())) != indices.size())
      return false; // read by something that is not one of these operands
    for (size_t i : indices)
      if (uses[i].op.ring != uses[indices.front()].op.ring &&
          !(!wgmma && !tma && sameTileButSwizzle(uses[i].op.ring, uses[indices.front()].op.ring)))
        return false; // the uses want the tile stored differently
    for (size_t i : indices) // 32-bit on mma.sync: one ring, the first use's swizzle
      uses[i].op.ring = uses[indices.front()].op.ring;
    shared |= indices.size() > 1;
  }
  if (!shared)
    return false;
  if (tma) // each ring its own tensor map (its box and swizzle)
    for (auto &[load, indices] : byLoad)
      if (!(uses[indices.front()].op.map = addSwizzledTensorMap(uses[indices.front()].op)))
        return false;

  Location loc = loop.getLoc();
  auto constant = [&](OpBuilder &at, int64_t v) { return ivConstant(at, loop, v); };
  const int lookahead = stages - 1;
  OpBuilder b(loop);
  // TMA: every ring's copies of a stage complete on the first ring's
  // mbarrier (one wait a stage), which the first copy announces them on.
  SmallVector<Value> rings;
  for (auto &[load, indices] : byLoad) {
    auto ring = tilegpu::AllocSharedOp::create(b, loc, uses[indices.front()].op.ring);
    ring.setTf32(uses[indices.front()].op.roundedByTma());
    if (tma && rings.empty()) {
      ring.setMbarriers(true);
      tilegpu::TmaInitOp::create(b, loc, ring);
    }
    rings.push_back(ring);
  }
  const SmallVector<StageSignal> signals = tma ? stageSignals(rings) : SmallVector<StageSignal>();
  auto signalOf = [&](size_t r) -> std::optional<StageSignal> {
    return tma ? std::optional(signals[r]) : std::nullopt;
  };
  // Prologue: iterations 0 .. lookahead-1 into stages 0 .. lookahead-1.
  Value lb = loop.getLowerBound(), step = loop.getStep();
  for (int s = 0; s < lookahead; ++s) {
    Value iv = arith::AddIOp::create(b, loc, lb, arith::MulIOp::create(b, loc, step, constant(b, s)));
    Value stage = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(s));
    size_t r = 0;
    for (auto &[load, indices] : byLoad) {
      issue(b, loop, uses[indices.front()].op, rings[r], iv, stage, nullptr, signalOf(r));
      ++r;
    }
  }
  // This iteration's stage, before the first dot.
  OpBuilder in(dots.front());
  Value iter = arith::DivSIOp::create(in, loc, arith::SubIOp::create(in, loc, loop.getInductionVar(), lb), step);
  auto [stage, phase] = stageAndPhase(in, loop, iter, stages);
  if (tma) {
    tilegpu::TmaWaitOp::create(in, loc, rings.front(), stage, phase);
  } else {
    auto wait = tilegpu::AsyncWaitOp::create(in, loc, ValueRange{}, int32_t(rings.size()) * (lookahead - 1));
    if (wgmma)
      wait.setFenceAsyncProxy(true);
  }
  auto ringOf = [&](Operand op) {
    return rings[size_t(std::distance(byLoad.begin(), byLoad.find(op.loadOp())))];
  };
  Operation *last = nullptr;
  SmallVector<Operation *> issued; // the dots on shared memory, in order
  for (tile::DotOp dot : dots) {
    in.setInsertionPoint(dot);
    const Operand *a = nullptr, *bOp = nullptr;
    for (const Use &u : uses)
      if (u.dot == dot)
        (u.idx == 0 ? a : bOp) = &u.op;
    Operation *onShared;
    const Location at = dot.getLoc(); // errors name the dot's line
    if (a) {
      auto both = tilegpu::DotSharedOp::create(in, at, dot.getType(), ringOf(*a), stage, ringOf(*bOp), stage,
                                               dot.getAcc(), UnitAttr(), UnitAttr(), f32Precision(dot));
      both.setTransposeA(bool(a->trans));
      both.setTransposeB(bool(bOp->trans));
      onShared = both;
    } else {
      auto bOnly = tilegpu::DotSharedBOp::create(in, at, dot.getType(), dot.getA(), ringOf(*bOp), stage,
                                                 dot.getAcc(), UnitAttr(), f32Precision(dot));
      bOnly.setTransposeB(bool(bOp->trans));
      onShared = bOnly;
    }
    last = onShared;
    issued.push_back(onShared);
    dot.replaceAllUsesWith(onShared->getResult(0));
  }
  // After the last dot: the loads of iteration i + lookahead.
  in.setInsertionPointAfter(last);
  Value ahead = arith::AddIOp::create(in, loc, loop.getInductionVar(),
                                      arith::MulIOp::create(in, loc, step, constant(in, lookahead)));
  Value nextStage = stageAndPhase(in, loop, arith::AddIOp::create(in, loc, iter, constant(in, lookahead)), stages).first;
  {
    size_t r = 0;
    for (auto &[load, indices] : byLoad) {
      issue(in, loop, uses[indices.front()].op, rings[r], ahead, nextStage, nullptr, signalOf(r));
      ++r;
    }
  }
  for (tile::DotOp dot : dots)
    dot.erase();
  for (Use &u : uses)
    for (Operation *between : u.op.chain)
      between->erase();
  for (auto &[load, indices] : byLoad)
    load->erase();
  if (wgmma)
    waitForWgmmaWhereNeeded(loop, issued);
  // After the loop: cp.async copies still in flight land before the rings' memory is reused.
  b.setInsertionPointAfter(loop);
  if (tma)
    tilegpu::TmaReleaseOp::create(b, loc, rings.front()); // the rings' mbarriers (the first's)
  else
    tilegpu::AsyncWaitOp::create(b, loc, rings, 0);
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*loop.getBody())))
    if (isOpTriviallyDead(&op))
      op.erase();
  return true;
}

struct PipelineDotOperandsPass : tegula::impl::PipelineDotOperandsBase<PipelineDotOperandsPass> {
  using PipelineDotOperandsBase::PipelineDotOperandsBase;
  void runOnOperation() override {
    // tl::cluster_size() is the launch's, multicast or not: a constant from
    // here on (the producer's address slices and the lowering see a number).
    if (clusterSize > 1)
      getOperation()->setAttr("tilegpu.launch_cluster_size",
                              IntegerAttr::get(IntegerType::get(&getContext(), 32), clusterSize));
    getOperation().walk([&](tile::ClusterSizeOp op) {
      OpBuilder b(op);
      op.replaceAllUsesWith(arith::ConstantOp::create(b, op.getLoc(), b.getI32IntegerAttr(clusterSize)).getResult());
      op.erase();
    });
    SmallVector<tile::DotOp> dots;
    getOperation().walk([&](tile::DotOp dot) { dots.push_back(dot); });
    if (llvm::none_of(dots, [&](tile::DotOp dot) {
          auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
          return loop && stagesOf(loop) >= 2;
        }))
      return;
    if (llvm::any_of(dots, [&](tile::DotOp dot) {
          auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
          return loop && wantsWarpSpecialize(loop);
        })) {
      if (!warpSpecializeFirstLoop(dots))
        return signalPassFailure();
      // The specialised loop's dots are gone (erased: freed, so not asked
      // whether they still have a block - that read freed memory and crashed
      // now and then); it made tilegpu ops, no tile.dot, so the rest are these.
      dots.clear();
      getOperation().walk([&](tile::DotOp dot) { dots.push_back(dot); });
    }
    // Loops whose dots share loaded operands, all their dots together.
    llvm::MapVector<Operation *, SmallVector<tile::DotOp>> byLoop;
    for (tile::DotOp dot : dots)
      if (auto loop = dyn_cast<scf::ForOp>(dot->getParentOp()))
        byLoop[loop].push_back(dot);
    for (auto &[loop, loopDots] : byLoop) {
      auto forOp = cast<scf::ForOp>(loop);
      if (pipelinable(forOp) && stagesOf(forOp) >= 2)
        pipelineSharedLoads(forOp, loopDots, stagesOf(forOp));
    }
    // Which dots still exist, asked of the IR (shared rings and each rewrite
    // below erase dots, whose cleanup may erase others it left dead; no
    // rewrite makes a tile.dot, so a freed dot's address is never found).
    llvm::DenseSet<Operation *> alive;
    auto refresh = [&] {
      alive.clear();
      getOperation().walk([&](tile::DotOp d) { alive.insert(d); });
    };
    refresh();
    for (tile::DotOp dot : dots) {
      if (!alive.contains(dot))
        continue; // rewritten already
      auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
      auto result = cast<RankedTensorType>(dot.getType());
      auto mma = dyn_cast_if_present<tilegpu::MmaEncodingAttr>(result.getEncoding());
      if (!loop || !mma || !pipelinable(loop) || stagesOf(loop) < 2)
        continue;
      const int stages = stagesOf(loop);
      auto a = planOperand(loop, dot, 0, stages);
      auto b = planOperand(loop, dot, 1, stages);
      // A already in this mma's fragments (registers): B alone.
      auto fragments = dyn_cast_if_present<tilegpu::DotOperandEncodingAttr>(
          cast<RankedTensorType>(dot.getA().getType()).getEncoding());
      const bool aInRegisters = fragments && fragments.getParent() == mma &&
                              (fragments.getElementBits() == 16 || fragments.getElementBits() == 32);
      if (!b || !(a || aInRegisters))
        continue;
      if (a && bool(a->block) != bool(b->block))
        continue; // one ring of TMA, one of cp.async: not both
      if (b->block) {
        for (Operand *o : {a ? &*a : nullptr, &*b})
          if (o && !(o->map = addSwizzledTensorMap(*o)))
            return signalPassFailure();
      }
      pipeline(loop, dot, std::move(a), std::move(*b), stages);
      refresh();
    }
    if (failed(rematerialiseScatteredAddresses()))
      return signalPassFailure();
  }

  /// The conversions of scattering copies' pointers and masks (issue)
  /// become their address computation in the copy's layout: splats, ranges
  /// and adds cost the same in any layout, where a pointer tile converted
  /// would cross shared memory each iteration.
  LogicalResult rematerialiseScatteredAddresses() {
    SmallVector<Operation *> conversions;
    getOperation().walk([&](tilegpu::AsyncLoadOp copy) {
      for (Value v : {copy.getPtr(), copy.getMask()})
        if (auto cvt = v ? v.getDefiningOp<tilegpu::ConvertLayoutOp>() : tilegpu::ConvertLayoutOp())
          conversions.push_back(cvt);
      if (auto mask = copy.getMask() ? copy.getMask().getDefiningOp<arith::AndIOp>() : arith::AndIOp())
        for (Value v : mask->getOperands())
          if (auto cvt = v.getDefiningOp<tilegpu::ConvertLayoutOp>())
            conversions.push_back(cvt);
    });
    if (conversions.empty())
      return success();
    RewritePatternSet patterns(&getContext());
    populateRematerialiseCheapPatterns(patterns);
    return applyOpPatternsGreedily(conversions, std::move(patterns),
                                   GreedyRewriteConfig().setStrictness(GreedyRewriteStrictness::ExistingAndNewOps));
  }

  /// The dots of a loop whose operands can all come through TMA rings (A
  /// in registers or a ring), planned; nothing when one cannot. A load may
  /// feed several of them (one ring they share) when every use of it is one
  /// of these operands.
  std::optional<std::vector<RingDot>> planTmaLoop(scf::ForOp loop, ArrayRef<tile::DotOp> dots) {
    std::vector<RingDot> planned;
    llvm::DenseMap<Operation *, size_t> operandsOf; // by load
    for (tile::DotOp dot : dots) {
      auto mma = dyn_cast_if_present<tilegpu::MmaEncodingAttr>(cast<RankedTensorType>(dot.getType()).getEncoding());
      if (!mma || !mma.isWgmma())
        return std::nullopt;
      auto a = planOperand(loop, dot, 0, stagesOf(loop), /*sharedLoad=*/true);
      auto b = planOperand(loop, dot, 1, stagesOf(loop), /*sharedLoad=*/true);
      auto fragments = dyn_cast_if_present<tilegpu::DotOperandEncodingAttr>(
          cast<RankedTensorType>(dot.getA().getType()).getEncoding());
      const bool aInRegisters = fragments && fragments.getParent() == mma &&
                              (fragments.getElementBits() == 16 || fragments.getElementBits() == 32);
      if (!b || !b->block || (a && !a->block) || (!a && !aInRegisters))
        return std::nullopt;
      if (a)
        ++operandsOf[a->loadOp()];
      ++operandsOf[b->loadOp()];
      planned.push_back({dot, std::move(a), std::move(*b)});
    }
    for (auto [load, count] : operandsOf)
      if (size_t(std::distance(load->getResult(0).use_begin(), load->getResult(0).use_end())) != count)
        return std::nullopt; // read by something that is not one of these operands
    return planned;
  }

  /// A loop's pipeline depth: its tl::loop_options (`tile.num_stages`), or
  /// the pass's.
  int stagesOf(scf::ForOp loop) const {
    if (auto stages = loop->getAttrOfType<IntegerAttr>("tile.num_stages"))
      return int(stages.getInt());
    return numStages;
  }

  /// Whether a loop's dots are to have the kernel's producer warpgroup: as
  /// the nearest loop around them (it or one enclosing it, a persistent
  /// kernel's tile loop) with tl::loop_options' warp_specialize says
  /// (`tile.warp_specialize`), else as the pass's option (the launch's).
  bool wantsWarpSpecialize(scf::ForOp loop) const {
    for (Operation *op = loop; op; op = op->getParentOp())
      if (auto asked = op->getAttrOfType<BoolAttr>("tile.warp_specialize"))
        return asked.getValue();
    return warpSpecialize;
  }

  /// Warp specialisation: the first loop (in program order) that wants it
  /// and whose dots all take their operands from TMA rings gets the
  /// kernel's producer. False on an internal failure (a tensor map that
  /// cannot be added).
  bool warpSpecializeFirstLoop(ArrayRef<tile::DotOp> dots) {
    llvm::MapVector<Operation *, SmallVector<tile::DotOp>> byLoop;
    for (tile::DotOp dot : dots) {
      auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
      if (loop && pipelinable(loop) && stagesOf(loop) >= 2 && wantsWarpSpecialize(loop))
        byLoop[loop].push_back(dot);
    }
    for (auto &[op, loopDots] : byLoop) {
      auto loop = cast<scf::ForOp>(op);
      auto planned = planTmaLoop(loop, loopDots);
      if (!planned)
        continue;
      bool mapsAdded = true;
      if (pipelineWarpSpecialized(loop, *planned, stagesOf(loop), pingPong, clusterSize, [&](Operand &o) {
            return mapsAdded = bool(o.map = addSwizzledTensorMap(o));
          }))
        return true;
      if (!mapsAdded)
        return false;
    }
    return true;
  }
};

} // namespace
