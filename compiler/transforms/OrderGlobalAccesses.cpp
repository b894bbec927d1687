//===- OrderGlobalAccesses.cpp - a barrier where a load reads others' stores ===//
//
// Pass `order-global-accesses`: a tile program reads what it stored - one
// thread of control. Its GPU threads each store and load their own elements
// of a tile, in the tile's layout: when a load's elements belong to other
// threads than the store's (the same buffer read back in another layout, or
// through other pointers), nothing orders the two. Before such a load the
// pass puts a `tilegpu.barrier` (bar.sync: every thread's earlier accesses
// are visible to the others after it).
//
// A store and a later load conflict when their pointers may alias - traced
// back to the same kernel argument, or to something the trace cannot name
// (pointers from different arguments are taken not to alias) - and they are
// not the same pointer tile in the same layout that holds each element in
// one thread (a scalar, or a layout with copies, is stored by one owner
// and read by all). A barrier already between them (another tilegpu.barrier, or a
// scalar atomic's, whose lowering orders the whole program) suffices. A
// loop is walked twice: its second pass sees the stores of the iteration
// before, so a store late in the body and a load early in it get a barrier
// too; both arms of an `scf.if` are walked, and what either left pending
// stays pending after it.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "dialects/tile/TileDialect.h"
#include "dialects/tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/SetVector.h"

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

/// Whether `load` may read, in other threads, what `store` wrote.
bool conflicts(tile::StoreOp store, tile::LoadOp load) {
  if (store.getPtr() == load.getPtr() && store.getValue().getType() == load.getType() &&
      oneThreadAnElement(load.getType()))
    return false; // every element stored and loaded by one thread
  Value a = rootOf(store.getPtr()), b = rootOf(load.getPtr());
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

/// The stores a later load may need a barrier after.
using Pending = llvm::SmallSetVector<Operation *, 8>;

void visit(Block &block, Pending &pending) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (isa<tile::StoreOp>(op)) {
      pending.insert(&op);
    } else if (orders(&op)) {
      pending.clear();
    } else if (auto load = dyn_cast<tile::LoadOp>(op)) {
      if (llvm::any_of(pending, [&](Operation *s) { return conflicts(cast<tile::StoreOp>(s), load); })) {
        OpBuilder b(load);
        tilegpu::BarrierOp::create(b, load.getLoc());
        pending.clear();
      }
    } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
      // The first iteration, then the others (after the stores of the one
      // before); the loop may also run no iteration.
      Pending first = pending;
      visit(*loop.getBody(), first);
      Pending later = pending;
      later.insert(first.begin(), first.end());
      visit(*loop.getBody(), later);
      pending.insert(first.begin(), first.end());
      pending.insert(later.begin(), later.end());
    } else if (op.getNumRegions()) {
      // Each arm (scf.if; an scf.while's regions, walked twice) from what
      // was pending before it.
      Pending after = pending;
      for (int pass = 0; pass < (isa<scf::WhileOp>(op) ? 2 : 1); ++pass)
        for (Region &region : op.getRegions())
          for (Block &b : region) {
            Pending arm = after;
            visit(b, arm);
            after.insert(arm.begin(), arm.end());
          }
      pending = after;
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
