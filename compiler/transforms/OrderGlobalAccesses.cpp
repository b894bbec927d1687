//===- OrderGlobalAccesses.cpp - a barrier where a load reads others' stores ===//
//
// Pass `order-global-accesses`: a tile program reads what it stored - one
// thread of control. Its GPU threads each store and load their own elements
// of a tile, in the tile's layout: when a load's elements belong to other
// threads than a store's (the same buffer read back in another layout, or
// through other pointers), nothing orders the two. Before such an access
// the pass puts a `tilegpu.barrier` (bar.sync: every thread's earlier
// accesses are visible to the others after it).
//
// A load waits for a store when their pointers may alias - traced back to
// the same kernel argument, or to something the trace cannot name (pointers
// from different arguments are taken not to alias) - and they are not the
// same pointer tile in the same layout that holds each element in one
// thread (a scalar, or a layout with copies, is stored by its owner and
// read by all), in the same iteration of any loop the pointer is made in.
// A store waits for a load through the same pointer tile in one iteration
// where the layout has copies (the owner would overwrite what the others
// have yet to read: a scalar read-modify-write). Stores into other parts of
// a buffer a load read or a store wrote are taken not to overlap (the next
// row a loop moves on to; another column range) - else every streaming
// loop would wait at a barrier each iteration. A barrier already between them (another tilegpu.barrier, or a scalar
// atomic's, whose lowering orders the whole program) suffices. A loop is
// walked twice: its second pass sees the accesses of the iteration before;
// each arm of an `scf.if` starts from what was pending before the `if`, and
// what any arm left pending stays pending after it. A warp-specialised
// kernel's producer branch (no tile loads or stores; its threads take other
// branches than the consumers') and branches only warp leaders take are not
// walked: a barrier there would not be met.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "dialects/tile/TileDialect.h"
#include "dialects/tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace tegula {
#define GEN_PASS_DEF_ORDERGLOBALACCESSES
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// The kernel argument pointer `v` is derived from (through pointer
/// arithmetic, splats, broadcasts, conversions and loop-carried pointers
/// that advance from themselves); `self` when the chain leads back to it
/// (the loop-carried pointer being traced); null when it cannot tell.
Value rootOf(Value v, Value self = Value(), int depth = 0) {
  for (; depth < 32; ++depth) {
    if (v == self)
      return self;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (isa<func::FuncOp>(owner))
        return v;
      auto loop = dyn_cast<scf::ForOp>(owner);
      if (!loop || arg.getArgNumber() == 0 || self)
        return Value(); // a nested loop's pointer inside another's: not followed
      const unsigned i = arg.getArgNumber() - 1;
      Value init = rootOf(loop.getInitArgs()[i], Value(), depth + 1);
      Value next = rootOf(loop.getBody()->getTerminator()->getOperand(i), arg, depth + 1);
      return init && (next == arg || next == init) ? init : Value();
    }
    Operation *def = v.getDefiningOp();
    if (auto add = dyn_cast_or_null<tile::AddPtrOp>(def))
      v = add.getPtr();
    else if (auto splat = dyn_cast_or_null<tile::SplatOp>(def))
      v = splat.getSrc();
    else if (auto bcast = dyn_cast_or_null<tile::BroadcastOp>(def))
      v = bcast.getSrc();
    else if (auto expand = dyn_cast_or_null<tile::ExpandDimsOp>(def))
      v = expand.getSrc();
    else if (auto convert = dyn_cast_or_null<tilegpu::ConvertLayoutOp>(def))
      v = convert.getSrc();
    else
      return Value();
  }
  return Value();
}

/// Whether every element of a tile of type `t` lives in one thread (no
/// copies in other lanes or warps, whose stores the owner alone makes).
bool oneThreadAnElement(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.getEncoding() &&
         tilegpu::toLinearLayout(tensor.getEncoding(), tensor.getShape()).isInjective();
}

/// A load or store not yet ordered before what follows; `around`: the loop
/// whose previous iteration made it (its pointers may name other addresses
/// now), or null.
struct Access {
  Operation *op;
  Operation *around = nullptr;
};
using Pending = SmallVector<Access, 8>;

Value pointerOf(Operation *op) {
  return isa<tile::StoreOp>(op) ? cast<tile::StoreOp>(op).getPtr() : cast<tile::LoadOp>(op).getPtr();
}
Type tileOf(Operation *op) {
  return isa<tile::StoreOp>(op) ? cast<tile::StoreOp>(op).getValue().getType() : op->getResult(0).getType();
}

/// Whether `v` is made inside `loop` (in an iteration, possibly differently).
bool madeInside(Value v, Operation *loop) {
  Operation *owner = v.getDefiningOp() ? v.getDefiningOp() : v.getParentBlock()->getParentOp();
  return loop->isAncestor(owner);
}

/// Whether `later` (a load or store) must wait for `earlier`:
/// - a load after a store it may read (pointers that may alias), unless one
///   pointer tile in a layout that keeps each element in one thread does
///   both in one iteration (then one thread stores and loads, in order);
/// - a store after a load through the same pointer tile in one iteration,
///   where the layout has copies (a scalar; a reduction's result): the owner
///   would overwrite what the other copies have yet to read.
/// Stores through other pointers into the buffer a load read, or another
/// store wrote (other column ranges, the row a loop moved on to), are taken
/// not to overlap; two stores through one pointer tile have one owner an
/// element.
bool conflicts(const Access &earlier, Operation *later) {
  if (isa<tile::StoreOp>(later) == isa<tile::StoreOp>(earlier.op)) // two loads, or two stores
    return false;
  Value p = pointerOf(earlier.op), q = pointerOf(later);
  const bool sameIteration = !(earlier.around && madeInside(p, earlier.around));
  if (isa<tile::StoreOp>(later))
    return p == q && sameIteration && !oneThreadAnElement(tileOf(later));
  if (p == q && tileOf(earlier.op) == tileOf(later) && oneThreadAnElement(tileOf(later)) && sameIteration)
    return false;
  Value a = rootOf(p), b = rootOf(q);
  return !a || !b || a == b;
}

/// A scalar atomic whose lowering puts a CTA barrier beside it (release or
/// acquire order, or an old value broadcast to the program).
bool orders(Operation *op) {
  auto ordered = [](auto atomic) {
    return !isa<RankedTensorType>(atomic.getPtr().getType()) &&
           (atomic.getSem() != tile::MemoryOrder::Relaxed || !atomic->use_empty());
  };
  if (auto rmw = dyn_cast<tile::AtomicRMWOp>(op))
    return ordered(rmw);
  if (auto cas = dyn_cast<tile::AtomicCASOp>(op))
    return ordered(cas);
  return isa<tilegpu::BarrierOp>(op);
}

/// Whether `cond` (an scf.if's) involves `Op` - a warp role, which differs
/// between the program's threads.
template <class Op> bool involves(Value cond) {
  Operation *def = cond.getDefiningOp();
  if (!def)
    return false;
  if (isa<Op>(def))
    return true;
  return isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(def) &&
         llvm::any_of(def->getOperands(), [](Value o) { return involves<Op>(o); });
}

/// Adds `from`'s accesses that `into` lacks.
void merge(Pending &into, const Pending &from) {
  for (const Access &a : from)
    if (llvm::none_of(into, [&](const Access &b) { return b.op == a.op && b.around == a.around; }))
      into.push_back(a);
}

void visit(Block &block, Pending &pending);

/// The regions of `op` that the program's threads run alike, each from what
/// was pending before it: a warp-specialised kernel's consumer side only
/// (the producer makes no tile loads or stores, and its threads take other
/// branches: a barrier there would not be met); nothing of a branch only
/// warp leaders take.
void visitRegions(Operation &op, Pending &pending) {
  SmallVector<Region *> regions;
  if (auto branch = dyn_cast<scf::IfOp>(op)) {
    if (involves<tilegpu::IsWarpLeaderOp>(branch.getCondition()))
      return;
    if (!involves<tilegpu::IsProducerWarpOp>(branch.getCondition()))
      regions.push_back(&branch.getThenRegion());
    regions.push_back(&branch.getElseRegion());
  } else {
    for (Region &r : op.getRegions())
      regions.push_back(&r);
  }
  const Pending before = pending;
  for (int pass = 0; pass < (isa<scf::WhileOp>(op) ? 2 : 1); ++pass) // a while loop: around again
    for (Region *region : regions)
      for (Block &b : *region) {
        Pending arm = pass ? pending : before;
        visit(b, arm);
        merge(pending, arm);
      }
}

void visit(Block &block, Pending &pending) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (isa<tile::StoreOp, tile::LoadOp>(op)) {
      if (llvm::any_of(pending, [&](const Access &a) { return conflicts(a, &op); })) {
        OpBuilder b(&op);
        tilegpu::BarrierOp::create(b, op.getLoc());
        pending.clear();
      }
      pending.push_back({&op});
    } else if (orders(&op)) {
      pending.clear();
    } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
      // The first iteration, then the others: after the accesses of the one
      // before (made around the loop: their pointers may have moved on). The
      // loop may also run no iteration.
      Pending first = pending;
      visit(*loop.getBody(), first);
      Pending later = pending, carried;
      for (const Access &a : first)
        carried.push_back({a.op, loop});
      merge(later, carried);
      visit(*loop.getBody(), later);
      merge(pending, first);
      merge(pending, later);
    } else if (op.getNumRegions()) {
      visitRegions(op, pending);
    }
  }
}

struct OrderGlobalAccessesPass : tegula::impl::OrderGlobalAccessesBase<OrderGlobalAccessesPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp fn) {
      if (fn.isExternal())
        return;
      Pending pending;
      visit(fn.getBody().front(), pending);
    });
  }
};

} // namespace
