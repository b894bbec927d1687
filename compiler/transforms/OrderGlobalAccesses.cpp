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
// The async proxy adds two cases. A TMA store (a descriptor store use-tma
// marked) writes the tensor at some moment until its issuing thread waits
// for its writes (cp.async.bulk.wait_group, not .read): a later load of the
// buffer waits for that (`tma_store_wait {writes}`) and a barrier, and a
// barrier alone does not order it. A TMA load (a descriptor load, or a
// ring's copies) sees the threads' ordinary stores only after they fence
// the async proxy: after such stores the barrier comes with
// `fenceAsyncProxy` (fence.proxy.async.global). Descriptor accesses name
// their buffer through the descriptor's base pointer, a ring's copies
// through the tensor map's.
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
#include "runtime/TensorMap.h"

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

/// How an access reaches global memory, for ordering: through the threads
/// (a pointer or descriptor load or store, a cp.async copy), or through the
/// async proxy - a TMA store (its writes land at some moment until the
/// issuing thread waits for them) or a TMA load (it sees the threads'
/// stores only after a proxy fence).
enum class Kind { Load, Store, BulkStore, AsyncProxyLoad };

bool isAccess(Operation *op) {
  return isa<tile::LoadOp, tile::StoreOp, tile::DescriptorLoadOp, tile::DescriptorStoreOp, tilegpu::AsyncLoadOp,
             tilegpu::TmaLoadOp>(op);
}

Kind kindOf(Operation *op) {
  const bool tma = op->hasAttr("tilegpu.tma");
  if (isa<tile::StoreOp>(op))
    return Kind::Store;
  if (isa<tile::DescriptorStoreOp>(op))
    return tma ? Kind::BulkStore : Kind::Store;
  if (isa<tilegpu::TmaLoadOp>(op) || (isa<tile::DescriptorLoadOp>(op) && tma))
    return Kind::AsyncProxyLoad;
  return Kind::Load;
}
bool stores(Kind k) { return k == Kind::Store || k == Kind::BulkStore; }

/// A load or store not yet ordered before what follows; `around`: the loop
/// whose previous iteration made it (its pointers may name other addresses
/// now), or null.
struct Access {
  Operation *op;
  Operation *around = nullptr;
  /// A store a barrier without the async-proxy fence has ordered: the
  /// threads see it, a TMA load would not yet.
  bool unfenced = false;
};
using Pending = SmallVector<Access, 8>;

/// The pointer tile of a pointer access (null for descriptor and TMA ones).
Value pointerOf(Operation *op) {
  if (auto store = dyn_cast<tile::StoreOp>(op))
    return store.getPtr();
  if (auto load = dyn_cast<tile::LoadOp>(op))
    return load.getPtr();
  if (auto copy = dyn_cast<tilegpu::AsyncLoadOp>(op))
    return copy.getPtr();
  return Value();
}
Type tileOf(Operation *op) {
  if (auto store = dyn_cast<tile::StoreOp>(op))
    return store.getValue().getType();
  if (auto copy = dyn_cast<tilegpu::AsyncLoadOp>(op))
    return copy.getPtr().getType();
  return op->getResult(0).getType();
}

/// The kernel argument an access's buffer comes from: its pointers', a
/// descriptor's base pointer, a TMA ring's tensor map's buffer (the
/// parameter its spec names); null when it cannot tell.
Value rootOfAccess(Operation *op) {
  if (Value p = pointerOf(op))
    return rootOf(p);
  Value desc;
  if (auto load = dyn_cast<tile::DescriptorLoadOp>(op))
    desc = load.getDesc();
  else if (auto store = dyn_cast<tile::DescriptorStoreOp>(op))
    desc = store.getDesc();
  if (desc) {
    auto make = desc.getDefiningOp<tile::MakeTensorDescriptorOp>();
    return make ? rootOf(make.getBase()) : Value();
  }
  auto copy = cast<tilegpu::TmaLoadOp>(op);
  auto arg = dyn_cast<BlockArgument>(copy.getMap());
  auto fn = op->getParentOfType<func::FuncOp>();
  auto text = fn ? fn->getParentOfType<ModuleOp>()->getAttrOfType<StringAttr>("tilegpu.tensor_maps") : StringAttr();
  if (!arg || !text || arg.getOwner() != &fn.getBody().front())
    return Value();
  const std::vector<runtime::TensorMapSpec> specs = runtime::parseTensorMaps(text.str());
  const int64_t index = int64_t(arg.getArgNumber()) - (int64_t(fn.getNumArguments()) - int64_t(specs.size()));
  if (index < 0 || index >= int64_t(specs.size()) || specs[size_t(index)].base >= int(fn.getNumArguments()))
    return Value();
  return fn.getArgument(unsigned(specs[size_t(index)].base));
}

/// Whether the two accesses may touch the same buffer.
bool mayAlias(Operation *a, Operation *b) {
  Value x = rootOfAccess(a), y = rootOfAccess(b);
  return !x || !y || x == y;
}

/// Whether `v` is made inside `loop` (in an iteration, possibly differently).
bool madeInside(Value v, Operation *loop) {
  Operation *owner = v.getDefiningOp() ? v.getDefiningOp() : v.getParentBlock()->getParentOp();
  return loop->isAncestor(owner);
}

/// Whether `later` must wait for `earlier`:
/// - a load after a TMA store of a buffer it may read (the store's writes
///   land at some moment until the issuing thread waits for them);
/// - a load after a store it may read (pointers that may alias), unless one
///   pointer tile in a layout that keeps each element in one thread does
///   both in one iteration (then one thread stores and loads, in order);
/// - a store after a load through the same pointer tile in one iteration,
///   where the layout has copies (a scalar; a reduction's result): the owner
///   would overwrite what the other copies have yet to read.
/// Stores through other pointers into the buffer a load read, or another
/// store wrote (other column ranges, the row a loop moved on to), are taken
/// not to overlap; two stores through one pointer tile have one owner an
/// element. A descriptor or TMA load has finished when its tile is there.
bool conflicts(const Access &earlier, Operation *later) {
  const Kind e = kindOf(earlier.op), l = kindOf(later);
  if (e == Kind::BulkStore) // stores into other parts of the buffer, as below, are taken not to overlap
    return !stores(l) && mayAlias(earlier.op, later);
  if (earlier.unfenced)
    return l == Kind::AsyncProxyLoad && mayAlias(earlier.op, later);
  if (stores(e) == stores(l)) // two loads, or two stores
    return false;
  Value p = pointerOf(earlier.op), q = pointerOf(later);
  if (!p || !q) // a descriptor or TMA access: a store then a load of the same buffer
    return stores(e) && mayAlias(earlier.op, later);
  const bool sameIteration = !(earlier.around && madeInside(p, earlier.around));
  if (stores(l))
    return p == q && sameIteration && !oneThreadAnElement(tileOf(later));
  if (p == q && tileOf(earlier.op) == tileOf(later) && oneThreadAnElement(tileOf(later)) && sameIteration)
    return false;
  return mayAlias(earlier.op, later);
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
    if (llvm::none_of(into, [&](const Access &b) {
          return b.op == a.op && b.around == a.around && b.unfenced == a.unfenced;
        }))
      into.push_back(a);
}

/// What a barrier leaves pending: not the threads' loads; their stores as
/// unfenced unless the barrier fenced the async proxy (a TMA load must
/// still wait for such a fence); TMA stores unless the leader has waited
/// for their writes (a barrier does not order those).
void afterBarrier(Pending &pending, bool fencedAsyncProxy, bool waitedForBulkWrites) {
  Pending kept;
  for (Access a : pending) {
    const Kind k = kindOf(a.op);
    if (k == Kind::BulkStore ? waitedForBulkWrites : k != Kind::Store || fencedAsyncProxy)
      continue;
    if (k == Kind::Store)
      a.unfenced = true;
    kept.push_back(a);
  }
  pending = std::move(kept);
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
    if (isAccess(&op)) {
      // A TMA store it waits for: the leader first waits for the store's
      // writes. A TMA load after the threads' stores: they fence the async
      // proxy before the barrier.
      bool afterBulkStore = false, fenceAsyncProxy = false, conflict = false;
      for (const Access &a : pending)
        if (conflicts(a, &op)) {
          conflict = true;
          afterBulkStore |= kindOf(a.op) == Kind::BulkStore;
          fenceAsyncProxy |= kindOf(a.op) == Kind::Store && kindOf(&op) == Kind::AsyncProxyLoad;
        }
      if (conflict) {
        OpBuilder b(&op);
        if (afterBulkStore) // cp.async.bulk.wait_group 0: all the leader's stores so far
          tilegpu::TmaStoreWaitOp::create(b, op.getLoc(), /*writes=*/true);
        tilegpu::BarrierOp::create(b, op.getLoc(), fenceAsyncProxy);
        afterBarrier(pending, fenceAsyncProxy, afterBulkStore);
      }
      pending.push_back({&op});
    } else if (auto wait = dyn_cast<tilegpu::TmaStoreWaitOp>(op); wait && wait.getWrites()) {
      // The leader's TMA stores have landed (a barrier follows: a loop's
      // second walk meets the pair this pass put there).
      llvm::erase_if(pending, [](const Access &a) { return kindOf(a.op) == Kind::BulkStore; });
    } else if (orders(&op)) {
      auto barrier = dyn_cast<tilegpu::BarrierOp>(op);
      afterBarrier(pending, barrier && barrier.getFenceAsyncProxy(), false);
    } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
      // The first iteration, then the others: after the accesses of the one
      // before (made around the loop: their pointers may have moved on). The
      // loop may also run no iteration.
      Pending first = pending;
      visit(*loop.getBody(), first);
      Pending later = pending, carried;
      for (const Access &a : first)
        carried.push_back({a.op, loop, a.unfenced});
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
