//===- OverlapChainedDots.cpp - the work between two dots under the second --===//
//
// Pass `overlap-chained-dots` (sm_90a). Flash attention's loop issues
// S = Q K^T, waits for it, runs the online softmax on it and issues
// O = P V + alpha O, then waits again: while the softmax runs (a thousand
// cycles of exp at 128 x 128) the tensor cores idle. FlashAttention-3
// rotates the loop by half an iteration so that the softmax of block j+1
// runs while the tensor cores compute P_j V_j:
//
//   prologue:  S_0 = Q K_0^T; wait; softmax_0                       (A_0)
//   loop j:    issue S_{j+1} = Q K_{j+1}^T                          (A_{j+1} up to its dot)
//              issue O_j = P_j V_j + acc_j                          (B_j up to its dot)
//              wait_group 1 (S_{j+1} done, O_j in flight); softmax_{j+1}
//              wait_group 0 (O_j done); acc_{j+1} = alpha_{j+1} O_j (A_{j+1}'s part that needs O_j)
//   epilogue:  O = P_{n-1} V_{n-1} + acc_{n-1}; wait                (B_{n-1})
//
// The body splits at the second dot's ring wait into A (before) and B (the
// rest). Iter args whose next value B computes are "late"; the ops of A
// that depend on them (the rescale) are A2, the rest A1. A1 of iteration
// j+1 depends only on iteration j's A, so it may run before B_j; A2 waits
// for B_j. What crosses from A_j to B_j (P, the rescaled accumulator, the
// stage index) is carried by the rotated loop.
//
// Moving A_{j+1}'s side effects above B_j's is safe when they touch
// different TMA rings: a ring's waits, releases and refills keep their
// order and each stage is refilled only after every thread's wait for the
// wgmma reading it (the waits move with their dots). cp.async rings are
// left alone: their wait counts are in issue order across rings.
//
// Registers decide whether it pays: during the softmax both accumulators,
// the P being made and the P the tensor cores read are live. A
// loop-invariant first A operand (attention's Q) is in shared memory by
// now (stage-invariant-wgmma-operands): wgmma cannot keep it in registers.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "compiler/layout/WgmmaOperands.h"
#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tegula {
#define GEN_PASS_DEF_OVERLAPCHAINEDDOTS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// The wgmma_wait 0 that is the only user of `dot`, if any.
tilegpu::WgmmaWaitOp soleWait(Operation *dot) {
  if (!dot->getResult(0).hasOneUse())
    return {};
  auto wait = dyn_cast<tilegpu::WgmmaWaitOp>(*dot->getResult(0).getUsers().begin());
  if (!wait || wait.getPending() != 0 || wait->getBlock() != dot->getBlock())
    return {};
  return wait;
}

/// Whether the rotation may move `op` (and what it nests) across the ops
/// of the other half: no memory effects, global loads, or the ring and
/// wgmma operations whose rings the halves keep to themselves.
bool movable(Operation *op) {
  WalkResult r = op->walk([](Operation *inner) {
    if (isa<tilegpu::TmaWaitOp, tilegpu::TmaArriveOp, tilegpu::TmaLoadOp, tilegpu::DotSharedOp,
            tilegpu::DotSharedBOp, tilegpu::WgmmaWaitOp, tile::LoadOp, scf::IfOp, scf::YieldOp>(inner))
      return WalkResult::advance();
    if (inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() || isMemoryEffectFree(inner))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !r.wasInterrupted();
}

/// The rings (shared tiles) `op` and what it nests use.
void ringsOf(Operation *op, DenseSet<Value> &rings) {
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (isa<tilegpu::SharedTilesType>(v.getType()))
        rings.insert(v);
  });
}

/// Calls `f` for every value `op` and its nested ops use.
template <class F> void forEachUse(Operation *op, F f) {
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      f(v);
  });
}

/// 32-bit registers a thread holds of tensor `v` over `warps` warps.
int64_t registersOf(Value v, int64_t warps) {
  auto t = cast<RankedTensorType>(v.getType());
  const int64_t bits = t.getNumElements() * t.getElementType().getIntOrFloatBitWidth();
  return (bits + 32 * 32 * warps - 1) / (32 * 32 * warps);
}

/// Registers a thread may use in `loop`: what a warp-specialised consumer
/// raised its limit to, else the most a thread has.
int64_t registerBudget(scf::ForOp loop) {
  for (Operation *p = loop->getParentOp(); p; p = p->getParentOp()) {
    auto branch = dyn_cast<scf::IfOp>(p);
    if (!branch)
      continue;
    for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()}) {
      if (region->empty() || !region->isAncestor(loop->getParentRegion()))
        continue;
      for (auto limit : region->front().getOps<tilegpu::SetMaxRegistersOp>())
        return limit.getCount();
    }
  }
  return 255;
}

/// Registers for addresses, indices, the softmax's row statistics and
/// masks beside the tiles (ptxas's counts for attention, 2026-11-25).
constexpr int64_t kOtherRegisters = 32;

constexpr const char *kNotTwoDots = "not two wgmma dots";

/// One loop's plan: the halves and what crosses between them.
struct Rotation {
  scf::ForOp loop;
  Operation *dot1 = nullptr, *dot2 = nullptr;
  tilegpu::WgmmaWaitOp wait1, wait2;
  SmallVector<Operation *> a1, a2, b; // in body order
  SmallVector<unsigned> early, late;  // iter arg numbers
  SmallVector<unsigned> earlyUsedByB;
  SmallVector<Value> crossing; // A's results that B uses
};

/// The plan for `loop`, or a reason why it is left as it is.
FailureOr<Rotation> plan(scf::ForOp loop, std::string &why) {
  Rotation r;
  r.loop = loop;
  Block *body = loop.getBody();
  SmallVector<Operation *> dots; // nested ones too: each commits a group
  body->walk([&](Operation *op) {
    if (lowering::isWgmmaDot(op))
      dots.push_back(op);
  });
  if (dots.size() != 2)
    return why = kNotTwoDots, failure();
  if (dots[0]->getBlock() != body || dots[1]->getBlock() != body)
    return why = "a dot under control flow", failure();
  r.dot1 = dots[0];
  r.dot2 = dots[1];
  r.wait1 = soleWait(r.dot1);
  r.wait2 = soleWait(r.dot2);
  if (!r.wait1 || !r.wait2)
    return why = "a dot is not waited for at once (wgmma_wait 0)", failure();
  // B starts at the second dot's ring wait, if it comes right before it.
  Operation *bStart = r.dot2;
  if (auto ringWait = dyn_cast_or_null<tilegpu::TmaWaitOp>(r.dot2->getPrevNode()))
    bStart = ringWait;
  bool inB = false;
  DenseSet<Operation *> bSet;
  SmallVector<Operation *> aOps;
  for (Operation &op : body->without_terminator()) {
    inB = inB || &op == bStart;
    if (!movable(&op))
      return why = "an operation with side effects the rotation cannot reorder", failure();
    if (inB) {
      r.b.push_back(&op);
      bSet.insert(&op);
    } else {
      aOps.push_back(&op);
    }
  }
  if (!llvm::is_contained(aOps, r.wait1))
    return why = "the first dot's wait comes after the second dot", failure();
  DenseSet<Value> ringsA, ringsB;
  for (Operation *op : aOps)
    ringsOf(op, ringsA);
  for (Operation *op : r.b)
    ringsOf(op, ringsB);
  for (Value ring : ringsA)
    if (ringsB.contains(ring))
      return why = "both dots use one ring", failure();

  // Late iter args: their next value comes from B.
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  auto topOf = [&](Value v) -> Operation * {
    Operation *def = v.getDefiningOp();
    return def ? body->findAncestorOpInBlock(*def) : nullptr;
  };
  DenseSet<Value> lateArgs;
  for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i) {
    Value next = yield.getOperand(i);
    if (Operation *def = topOf(next); def && bSet.contains(def)) {
      r.late.push_back(i);
      lateArgs.insert(loop.getRegionIterArgs()[i]);
    }
  }
  if (r.late.empty())
    return why = "the second dot feeds no later iteration", failure();
  for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i) {
    if (llvm::is_contained(r.late, i))
      continue;
    if (lateArgs.contains(yield.getOperand(i)))
      return why = "an iter arg passes a late one on", failure();
    r.early.push_back(i);
  }
  // A2: A's operations that depend on a late iter arg.
  DenseSet<Operation *> a2Set;
  for (Operation *op : aOps) {
    bool late = false;
    forEachUse(op, [&](Value v) {
      Operation *def = topOf(v);
      late |= lateArgs.contains(v) || (def && a2Set.contains(def));
    });
    if (!late) {
      r.a1.push_back(op);
      continue;
    }
    if (!isMemoryEffectFree(op) && !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return why = "work that needs the second dot's result has side effects", failure();
    a2Set.insert(op);
    r.a2.push_back(op);
  }
  if (a2Set.contains(r.dot1) || a2Set.contains(r.wait1.getOperation()))
    return why = "the first dot depends on the second", failure();
  // While the first dot's result is worked on, the second's accumulator and
  // A fragments are in flight and the next A fragments are being made: more
  // than the budget, and ptxas would spill or serialise the wgmmas (C7512).
  auto warps = loop->getParentOfType<ModuleOp>()->getAttrOfType<IntegerAttr>("tilegpu.num_warps");
  if (!warps)
    return why = "no tilegpu.num_warps", failure();
  const int64_t w = warps.getInt();
  int64_t live = registersOf(r.dot1->getResult(0), w) + registersOf(r.dot2->getResult(0), w) + kOtherRegisters;
  if (auto chained = dyn_cast<tilegpu::DotSharedBOp>(r.dot2))
    live += 2 * registersOf(chained.getA(), w);
  const int64_t budget = registerBudget(loop);
  if (auto first = dyn_cast<tilegpu::DotSharedBOp>(r.dot1))
    live += registersOf(first.getA(), w);
  if (live > budget)
    return why = "too many registers", failure();
  // What B reads from A and from the early iter args.
  DenseSet<Value> crossing;
  DenseSet<unsigned> earlyUsed;
  for (Operation *op : r.b)
    forEachUse(op, [&](Value v) {
      if (Operation *def = topOf(v); def && !bSet.contains(def) && crossing.insert(v).second)
        r.crossing.push_back(v);
      if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == body && arg.getArgNumber() > 0) {
        unsigned i = arg.getArgNumber() - 1;
        if (!lateArgs.contains(v) && earlyUsed.insert(i).second)
          r.earlyUsedByB.push_back(i);
      }
    });
  return r;
}

void rotate(Rotation &r) {
  scf::ForOp loop = r.loop;
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound(), step = loop.getStep();
  Value iv = loop.getInductionVar();
  auto iterArgs = loop.getRegionIterArgs();
  auto inits = loop.getInitArgs();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  auto cloneAll = [&](ArrayRef<Operation *> ops, IRMapping &m) {
    for (Operation *op : ops)
      b.clone(*op, m);
  };

  // Nothing runs when the loop does not: the prologue and epilogue too.
  Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);
  auto guard = scf::IfOp::create(b, loc, loop.getResultTypes(), runs, /*withElseRegion=*/true);
  b.setInsertionPointToStart(&guard.getElseRegion().front());
  scf::YieldOp::create(b, loc, inits);
  b.setInsertionPointToStart(&guard.getThenRegion().front());

  // Prologue: A of the first iteration.
  IRMapping first;
  first.map(iv, lb);
  first.map(iterArgs, inits);
  SmallVector<Operation *> aInOrder;
  for (Operation &op : loop.getBody()->without_terminator())
    if (llvm::is_contained(r.a1, &op) || llvm::is_contained(r.a2, &op))
      aInOrder.push_back(&op);
  cloneAll(aInOrder, first);

  // The rotated loop's state: the early iter args of the next iteration,
  // the late ones and the early ones B reads of this iteration, and what
  // this iteration's A computed for its B.
  SmallVector<Value> state;
  for (unsigned i : r.early)
    state.push_back(first.lookupOrDefault(yield.getOperand(i)));
  for (unsigned i : r.late)
    state.push_back(inits[i]);
  for (unsigned i : r.earlyUsedByB)
    state.push_back(inits[i]);
  for (Value v : r.crossing)
    state.push_back(first.lookup(v));
  const size_t lateAt = r.early.size(), earlyBAt = lateAt + r.late.size(),
               crossingAt = earlyBAt + r.earlyUsedByB.size();
  // What B of the iteration at `at` reads, from the rotated loop's `values`
  // (its block arguments, or its results for the epilogue).
  auto mapForB = [&](IRMapping &m, Value at, ValueRange values) {
    m.map(iv, at);
    for (auto [k, i] : llvm::enumerate(r.late))
      m.map(iterArgs[i], values[lateAt + k]);
    for (auto [k, i] : llvm::enumerate(r.earlyUsedByB))
      m.map(iterArgs[i], values[earlyBAt + k]);
    for (auto [k, v] : llvm::enumerate(r.crossing))
      m.map(v, values[crossingAt + k]);
  };

  // Iterations 0 .. n-2 run B_j with A_{j+1}.
  Value lastStart = arith::SubIOp::create(b, loc, ub, step);
  auto rotated = scf::ForOp::create(b, loc, lb, lastStart, step, state);
  {
    OpBuilder::InsertionGuard g(b);
    Block *body = rotated.getBody();
    b.setInsertionPointToStart(body);
    auto args = rotated.getRegionIterArgs();
    Value here = rotated.getInductionVar();
    Value next = arith::AddIOp::create(b, loc, here, step);
    IRMapping mA, mB;
    mA.map(iv, next);
    for (auto [k, i] : llvm::enumerate(r.early))
      mA.map(iterArgs[i], args[k]);
    mapForB(mB, here, args);

    auto upTo = [](ArrayRef<Operation *> ops, Operation *last) {
      auto *it = llvm::find(ops, last);
      return std::make_pair(ops.take_front(size_t(it - ops.begin()) + 1),
                            ops.drop_front(size_t(it - ops.begin()) + 1));
    };
    auto [a1Issue, a1Rest] = upTo(r.a1, r.dot1);
    auto [bIssue, bRest] = upTo(r.b, r.dot2);
    cloneAll(a1Issue, mA);
    cloneAll(bIssue, mB);
    cloneAll(a1Rest, mA);
    // B's group was committed after A's: A's wait leaves it in flight.
    cast<tilegpu::WgmmaWaitOp>(mA.lookup(r.wait1.getResult()).getDefiningOp()).setPending(1);
    cloneAll(bRest, mB);
    auto wait2 = cast<tilegpu::WgmmaWaitOp>(mB.lookup(r.wait2.getResult()).getDefiningOp());
    if (isa<tilegpu::DotSharedBOp>(r.dot2))
      wait2.setKeepA(true); // its A fragments were read while A1 ran
    for (unsigned i : r.late)
      mA.map(iterArgs[i], mB.lookupOrDefault(yield.getOperand(i)));
    cloneAll(r.a2, mA);

    SmallVector<Value> out;
    for (unsigned i : r.early)
      out.push_back(mA.lookupOrDefault(yield.getOperand(i)));
    for (unsigned i : r.late)
      out.push_back(mB.lookupOrDefault(yield.getOperand(i)));
    for (unsigned i : r.earlyUsedByB)
      out.push_back(args[llvm::find(r.early, i) - r.early.begin()]);
    for (Value v : r.crossing)
      out.push_back(mA.lookup(v));
    scf::YieldOp::create(b, loc, out);
  }

  // Epilogue: B of the last iteration, lb + (ceil((ub - lb) / step) - 1) * step.
  Value one = arith::ConstantOp::create(b, loc, b.getIntegerAttr(iv.getType(), 1));
  Value span = arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, ub, lb), one);
  Value last = arith::AddIOp::create(
      b, loc, lb, arith::MulIOp::create(b, loc, arith::DivSIOp::create(b, loc, span, step), step));
  IRMapping mLast;
  auto results = rotated.getResults();
  mapForB(mLast, last, results);
  cloneAll(r.b, mLast);
  SmallVector<Value> finals(loop.getNumResults());
  for (auto [k, i] : llvm::enumerate(r.early))
    finals[i] = results[k];
  for (unsigned i : r.late)
    finals[i] = mLast.lookupOrDefault(yield.getOperand(i));
  scf::YieldOp::create(b, loc, finals);

  loop.replaceAllUsesWith(guard.getResults());
  loop.erase();
}

struct OverlapChainedDotsPass : tegula::impl::OverlapChainedDotsBase<OverlapChainedDotsPass> {
  using OverlapChainedDotsBase::OverlapChainedDotsBase;
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops) {
      std::string why;
      FailureOr<Rotation> r = plan(loop, why);
      if (succeeded(r))
        rotate(*r);
      else if (explain && why != kNotTwoDots)
        loop.emitRemark("overlap-chained-dots: not rotated: ") << why;
    }
  }
};

} // namespace
