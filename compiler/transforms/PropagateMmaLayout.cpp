//===- PropagateMmaLayout.cpp - compute on a dot's result where it lies ---===//
//
// accelerate-dot leaves each tensor-core dot's result converted back to the
// blocked layout its users had. When those users are elementwise math,
// reductions and broadcasts (attention's scaling, masking and online
// softmax; a GEMM epilogue), converting first moves the whole tile through
// shared memory for nothing: they can run on the accumulator registers as
// they are. This pass moves them into the mma layout (reductions into its
// slices), following the data forward from every such conversion, and
// converts only where the data leaves: into stores, loads, loop yields - and
// into the A operand of a following dot, as a dot_operand, which with warps
// along M only is the accumulator's own register layout (a dot chain costs
// no data movement; see MmaLayouts.h). Values from outside (a loop's running
// max, a bias) are converted in; remove-layout-conversions then
// rematerialises the cheap ones, moves conversions to the narrow side of
// broadcasts and carries loop values in the layout they are produced in.
//
// An scf.if whose branches both yield a moved value (attention's scores,
// masked on the blocks that need it, as they are elsewhere) yields it in the
// mma layout, and the data follows from there too; so does a loop that
// carries moved data (a stream-K fixup adding partial blocks to a tile). A
// store of 32-bit data whose addresses and mask are cheap stores from the
// mma layout (accessesWellFromAccumulator), and remove-layout-conversions
// then loads such data there too.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "compiler/transforms/LayoutRewriting.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace tegula {
#define GEN_PASS_DEF_PROPAGATEMMALAYOUT
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// True for the ops this pass may move into the mma layout family: layout
/// conversions (they disappear), elementwise math on value tiles, 2-D
/// reductions, and broadcasting a row or column back to 2-D.
bool isMovable(Operation *op) {
  if (isa<tilegpu::ConvertLayoutOp>(op))
    return true;
  if (auto store = dyn_cast<tile::StoreOp>(op))
    return accessesWellFromAccumulator(cast<RankedTensorType>(store.getValue().getType())) &&
           isCheap(store.getPtr()) && (!store.getMask() || isCheap(store.getMask()));
  if (auto reduce = dyn_cast<tile::ReduceOp>(op))
    return cast<RankedTensorType>(reduce.getSrcs()[0].getType()).getRank() == 2;
  if (auto expand = dyn_cast<tile::ExpandDimsOp>(op))
    return cast<RankedTensorType>(expand.getType()).getRank() == 2;
  if (auto bcast = dyn_cast<tile::BroadcastOp>(op))
    return cast<RankedTensorType>(bcast.getType()).getRank() == 2;
  if (!isElementwise(op) || isa<tile::AddPtrOp>(op))
    return false;
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  return result.getRank() <= 2 && !isa<tile::PtrType>(result.getElementType());
}

/// The layout `op` computes in when its operand `from` (already moved) has
/// layout `enc`, or null when the op cannot follow it there.
Attribute layoutFollowing(Operation *op, Attribute enc) {
  auto mma = dyn_cast<tilegpu::MmaEncodingAttr>(enc);
  auto slice = dyn_cast<tilegpu::SliceEncodingAttr>(enc);
  if (slice && !isa<tilegpu::MmaEncodingAttr>(slice.getParent()))
    return {};
  if (auto reduce = dyn_cast<tile::ReduceOp>(op))
    return mma ? tilegpu::SliceEncodingAttr::get(op->getContext(), reduce.getAxis(), mma)
               : Attribute();
  if (auto expand = dyn_cast<tile::ExpandDimsOp>(op))
    return slice && slice.getDim() == expand.getAxis() ? slice.getParent() : Attribute();
  if (isa<tile::BroadcastOp, tile::StoreOp>(op))
    return mma;
  // Elementwise and conversions keep the layout; 1-D values live in slices.
  return cast<RankedTensorType>(op->getResult(0).getType()).getRank() == 2 ? Attribute(mma)
                                                                           : Attribute(slice);
}

/// The type a value leaving the moved ops must have for `use`: a 16-bit A
/// operand of a tensor-core dot takes its dot_operand layout directly (free
/// when the layouts agree); everything else gets back its old type.
Type typeForUse(OpOperand &use, Type oldType) {
  auto dot = dyn_cast<tile::DotOp>(use.getOwner());
  auto tensor = cast<RankedTensorType>(oldType);
  if (!dot || use.getOperandNumber() != 0 || !tensor.getElementType().isIntOrFloat() ||
      tensor.getElementType().getIntOrFloatBitWidth() != 16)
    return oldType;
  auto mma = dyn_cast<tilegpu::MmaEncodingAttr>(cast<RankedTensorType>(dot.getType()).getEncoding());
  if (!mma)
    return oldType;
  return withEncoding(oldType,
                      tilegpu::DotOperandEncodingAttr::get(dot->getContext(), 0, mma, 16));
}

/// Moves the ops reachable from `anchor` (a conversion out of a dot's mma
/// result) into the mma layout family.
void propagateFrom(tilegpu::ConvertLayoutOp anchor) {
  // The ops the data reaches, through movable ops only.
  llvm::SetVector<Operation *> reached;
  reached.insert(anchor);
  for (size_t i = 0; i < reached.size(); ++i)
    for (Operation *user : reached[i]->getUsers()) // a store has none
      if (isMovable(user))
        reached.insert(user);

  // In program order (operands before users), each op takes the layout that
  // follows from its first moved operand; other operands are converted in.
  SmallVector<Operation *> order;
  anchor->getParentOfType<func::FuncOp>().walk([&](Operation *op) {
    if (reached.contains(op))
      order.push_back(op);
  });
  llvm::DenseMap<Value, Type> oldTypes; // moved results -> their old types
  llvm::SmallPtrSet<Operation *, 16> moved;
  for (Operation *op : order) {
    Attribute enc;
    for (Value o : op->getOperands())
      if (oldTypes.count(o) || (op == anchor.getOperation() && o == anchor.getSrc())) {
        enc = layoutFollowing(op, cast<RankedTensorType>(o.getType()).getEncoding());
        break;
      }
    if (!enc)
      continue; // stays; its moved operands are converted back below
    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands()) {
      auto t = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!t || isa<tilegpu::ConvertLayoutOp>(op))
        continue;
      // A reduction's operands, an elementwise op's and a broadcast's source
      // share the layout the op computes in; an expand_dims source is its slice.
      Attribute want = enc;
      if (auto expand = dyn_cast<tile::ExpandDimsOp>(op))
        want = tilegpu::SliceEncodingAttr::get(op->getContext(), expand.getAxis(), enc);
      else if (isa<tile::ReduceOp>(op))
        want = cast<tilegpu::SliceEncodingAttr>(enc).getParent();
      if (t.getEncoding() != want)
        operand.set(tilegpu::ConvertLayoutOp::create(b, op->getLoc(), withEncoding(t, want),
                                                     operand.get()));
    }
    for (Value r : op->getResults()) {
      oldTypes[r] = r.getType();
      r.setType(withEncoding(r.getType(), enc));
    }
    moved.insert(op);
  }

  // Where moved data leaves (users that did not move), convert it back:
  // once per value and type, right after it is computed.
  for (auto &[value, oldType] : oldTypes) {
    llvm::DenseMap<Type, Value> back;
    for (OpOperand &use : llvm::make_early_inc_range(value.getUses())) {
      if (moved.contains(use.getOwner()))
        continue;
      Type want = typeForUse(use, oldType);
      if (want == value.getType())
        continue;
      Value &converted = back[want];
      if (!converted) {
        OpBuilder b = OpBuilder::atBlockBegin(value.getParentBlock());
        b.setInsertionPointAfterValue(value);
        converted = tilegpu::ConvertLayoutOp::create(b, value.getLoc(), want, value);
      }
      use.set(converted);
    }
  }
}

/// Conversions out of the mma layout (a dot's result, or a loop's
/// accumulator carried in it): where propagation starts.
bool isAnchor(tilegpu::ConvertLayoutOp cvt) {
  return isa<tilegpu::MmaEncodingAttr>(cvt.getSrc().getType().getEncoding()) &&
         isa<tilegpu::BlockedEncodingAttr>(cast<RankedTensorType>(cvt.getType()).getEncoding());
}

/// An scf.if result that both branches yield as conversions out of one
/// mma-family layout takes that layout; its users convert after the if (a
/// new anchor). False when there is none.
bool yieldIfResultsInMmaLayout(ModuleOp module) {
  bool changed = false;
  module.walk([&](scf::IfOp op) {
    if (op.getElseRegion().empty())
      return;
    scf::YieldOp thenYield = op.thenYield(), elseYield = op.elseYield();
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      auto a = thenYield.getOperand(unsigned(i)).getDefiningOp<tilegpu::ConvertLayoutOp>();
      auto b = elseYield.getOperand(unsigned(i)).getDefiningOp<tilegpu::ConvertLayoutOp>();
      if (!a || !b || a.getSrc().getType() != b.getSrc().getType() || !isAnchor(a))
        continue;
      Type original = result.getType();
      result.setType(a.getSrc().getType());
      thenYield->setOperand(unsigned(i), a.getSrc());
      elseYield->setOperand(unsigned(i), b.getSrc());
      for (tilegpu::ConvertLayoutOp c : {a, b}) // a branch's own, or one from before the if
        if (c->use_empty())
          c.erase();
      OpBuilder builder(op->getContext());
      builder.setInsertionPointAfter(op);
      auto back = tilegpu::ConvertLayoutOp::create(builder, op.getLoc(), original, result);
      result.replaceAllUsesExcept(back, back);
      changed = true;
    }
  });
  return changed;
}

/// A loop that takes data moved out of the mma layout (its init a
/// conversion out of it), uses it only in movable ops and yields what a
/// movable op computes: carried in the mma layout. The body's users convert
/// from the block argument and the loop's users from its result (new
/// anchors); the yielded value converts back in, which the next round's
/// propagation makes an identity. False when there is none.
bool carryLoopsInMmaLayout(ModuleOp module) {
  SmallVector<std::pair<scf::ForOp, unsigned>> carries;
  module.walk([&](scf::ForOp loop) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
      auto init = loop.getInitArgs()[i].getDefiningOp<tilegpu::ConvertLayoutOp>();
      Operation *yielded = yield.getOperand(unsigned(i)).getDefiningOp();
      if (init && isAnchor(init) && !arg.use_empty() && llvm::all_of(arg.getUsers(), isMovable) && yielded &&
          yielded->getParentOp() == loop.getOperation() && isMovable(yielded))
        carries.push_back({loop, unsigned(i)});
    }
  });
  for (auto [loop, i] : carries) {
    auto init = loop.getInitArgs()[i].getDefiningOp<tilegpu::ConvertLayoutOp>();
    BlockArgument arg = loop.getRegionIterArgs()[i];
    Value result = loop.getResult(i);
    Type original = arg.getType(), carried = init.getSrc().getType();
    Location loc = loop.getLoc();
    loop.getInitArgsMutable()[i].set(init.getSrc());
    if (init->use_empty())
      init.erase();
    arg.setType(carried);
    result.setType(carried);
    OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
    auto inside = tilegpu::ConvertLayoutOp::create(b, loc, original, arg);
    arg.replaceAllUsesExcept(inside, inside);
    Operation *yield = loop.getBody()->getTerminator();
    b.setInsertionPoint(yield);
    yield->setOperand(i, tilegpu::ConvertLayoutOp::create(b, loc, carried, yield->getOperand(i)));
    b.setInsertionPointAfter(loop);
    auto after = tilegpu::ConvertLayoutOp::create(b, loc, original, result);
    result.replaceAllUsesExcept(after, after);
  }
  return !carries.empty();
}

struct PropagateMmaLayoutPass : tegula::impl::PropagateMmaLayoutBase<PropagateMmaLayoutPass> {
  void runOnOperation() override {
    // Each round moves what the conversions reach; an if whose branches
    // then both yield moved data, or a loop that takes it, passes it on to
    // the next round.
    do {
      SmallVector<tilegpu::ConvertLayoutOp> anchors;
      getOperation().walk([&](tilegpu::ConvertLayoutOp cvt) {
        if (isAnchor(cvt))
          anchors.push_back(cvt);
      });
      for (tilegpu::ConvertLayoutOp anchor : anchors)
        propagateFrom(anchor);
    } while (yieldIfResultsInMmaLayout(getOperation()) | carryLoopsInMmaLayout(getOperation()));
    // Moved conversions are identities now.
    getOperation().walk([](tilegpu::ConvertLayoutOp cvt) {
      if (cvt.getSrc().getType() == cvt.getType()) {
        cvt.getResult().replaceAllUsesWith(cvt.getSrc());
        cvt.erase();
      }
    });
  }
};

} // namespace
