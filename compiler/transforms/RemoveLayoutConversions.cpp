//===- RemoveLayoutConversions.cpp - compute cheap values where needed ----===//
#include "compiler/transforms/Passes.h"

#include "compiler/transforms/LayoutRewriting.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/SetVector.h"

#include <array>

namespace tegula {
#define GEN_PASS_DEF_REMOVELAYOUTCONVERSIONS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// convert(cheap op) -> the op computed in the target layout, its tile
/// operands converted (which this pattern then removes in turn).
struct RematerialiseCheapSource : OpRewritePattern<tilegpu::ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp op,
                                PatternRewriter &rewriter) const override {
    Value src = op.getSrc();
    Operation *def = src.getDefiningOp();
    if (!def || !isCheap(src))
      return failure();
    auto target = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    if (auto cst = dyn_cast<arith::ConstantOp>(def)) {
      auto splat = cast<SplatElementsAttr>(cst.getValue());
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(
          op, target, SplatElementsAttr::get(target, splat.getSplatValue<Attribute>()));
      return success();
    }
    if (auto range = dyn_cast<tile::MakeRangeOp>(def)) {
      rewriter.replaceOpWithNewOp<tile::MakeRangeOp>(op, target, range.getStart(), range.getEnd());
      return success();
    }
    if (auto splat = dyn_cast<tile::SplatOp>(def)) {
      rewriter.replaceOpWithNewOp<tile::SplatOp>(op, target, splat.getSrc());
      return success();
    }
    if (auto bcast = dyn_cast<tile::BroadcastOp>(def)) {
      // The source shares the broadcast's layout (see convert-tile-to-tilegpu).
      Value in = tilegpu::ConvertLayoutOp::create(
          rewriter, loc, withEncodingOf(bcast.getSrc().getType(), target), bcast.getSrc());
      rewriter.replaceOpWithNewOp<tile::BroadcastOp>(op, target, in);
      return success();
    }
    if (auto expand = dyn_cast<tile::ExpandDimsOp>(def)) {
      // The source is the slice of the result's layout along the new axis.
      auto srcType = cast<RankedTensorType>(expand.getSrc().getType());
      auto sliced = RankedTensorType::get(
          srcType.getShape(), srcType.getElementType(),
          tilegpu::SliceEncodingAttr::get(rewriter.getContext(), expand.getAxis(),
                                          target.getEncoding()));
      Value in = tilegpu::ConvertLayoutOp::create(rewriter, loc, sliced, expand.getSrc());
      rewriter.replaceOpWithNewOp<tile::ExpandDimsOp>(op, target, in, expand.getAxis());
      return success();
    }
    // Elementwise: convert the tile operands, recompute in the target layout.
    SmallVector<Value> operands;
    for (Value o : def->getOperands()) {
      if (auto t = dyn_cast<RankedTensorType>(o.getType()))
        o = tilegpu::ConvertLayoutOp::create(rewriter, loc, withEncodingOf(t, target), o);
      operands.push_back(o);
    }
    OperationState state(loc, def->getName().getStringRef(), operands,
                         {withEncodingOf(def->getResult(0).getType(), target)}, def->getAttrs());
    rewriter.replaceOp(op, rewriter.create(state)->getResults());
    return success();
  }
};


//===----------------------------------------------------------------------===//
// Moving conversions across elementwise ops (loaded or reduced data).
//===----------------------------------------------------------------------===//

/// What a set of conversions costs, compared lexicographically: shared-memory
/// trips first, then the bytes they move (converting a result narrower than
/// its operand, e.g. after a truncf, halves the scratch), then shuffles,
/// then register moves. A rewrite is taken only
/// when it strictly lowers this, so shared-memory conversions never increase
/// and the rewrites cannot cycle. Conversions that are identities of the
/// linear layout (encodings may still differ) cost nothing: they lower to
/// register renaming.
struct Cost {
  std::array<int64_t, 4> n{}; // shared, shared bytes, warp, registers
  void add(const Cost &o) {
    for (size_t i = 0; i < n.size(); ++i)
      n[i] += o.n[i];
  }
  bool operator<(const Cost &o) const { return n < o.n; }
};

Cost conversionCost(Type from, Attribute toEncoding) {
  auto src = cast<RankedTensorType>(from);
  Cost c;
  if (src.getEncoding() == toEncoding)
    return c;
  auto kind = layout::classifyConversion(tilegpu::toLinearLayout(src.getEncoding(), src.getShape()),
                                         tilegpu::toLinearLayout(toEncoding, src.getShape()));
  if (kind == layout::ConversionKind::SharedMem) {
    c.n[0] = 1;
    Type elem = src.getElementType();
    c.n[1] = src.getNumElements() * (elem.isIntOrFloat() ? (elem.getIntOrFloatBitWidth() + 7) / 8 : 8);
  } else if (kind == layout::ConversionKind::Warp) {
    c.n[2] = 1;
  } else if (kind == layout::ConversionKind::Registers) {
    c.n[3] = 1;
  }
  return c;
}

Cost conversionCost(tilegpu::ConvertLayoutOp cvt) {
  return conversionCost(cvt.getSrc().getType(),
                        cast<RankedTensorType>(cvt.getType()).getEncoding());
}

/// A cheap tile, or a conversion of one, or of a conversion of one (about
/// to be rematerialised): free in any layout. Every pattern must agree on
/// this, or one counts as saved a conversion that another made for free,
/// and the two undo each other forever.
bool isCheapTile(Value v) {
  while (auto cvt = v.getDefiningOp<tilegpu::ConvertLayoutOp>())
    v = cvt.getSrc();
  return isCheap(v);
}

/// True when every use of `cvt` is by `user` (it dies with the old user).
bool onlyUsedBy(tilegpu::ConvertLayoutOp cvt, Operation *user) {
  return llvm::all_of(cvt->getUsers(), [&](Operation *u) { return u == user; });
}

/// A small load (a row statistic: at most kReloadElements) whose only use
/// is a conversion and whose pointers, mask and fill are cheap: loaded again
/// in the conversion's layout instead (ReloadInTargetLayout), so converting
/// it costs nothing. Lanes that share an element then read it twice, from L1
/// - where the conversion is a shared-memory round trip between two CTA
/// barriers, and waits for the load where it stands.
constexpr int64_t kReloadElements = 256;
bool isReloadable(Value v) {
  auto load = v.getDefiningOp<tile::LoadOp>();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!load || !type || !v.hasOneUse() || type.getNumElements() > kReloadElements)
    return false;
  return llvm::all_of(load->getOperands(), isCheapTile);
}

/// A wide load (accessesWellFromAccumulator) whose only use converts it into
/// an mma layout, with cheap pointers, mask and fill: loaded in the mma
/// layout instead (ReloadInTargetLayout) - a stream-K fixup's partial
/// blocks, a weight gradient's sum so far.
bool reloadsIntoAccumulator(tile::LoadOp load) {
  if (!load->hasOneUse())
    return false;
  auto cvt = dyn_cast<tilegpu::ConvertLayoutOp>(*load->user_begin());
  return cvt && isa<tilegpu::MmaEncodingAttr>(cast<RankedTensorType>(cvt.getType()).getEncoding()) &&
         accessesWellFromAccumulator(cast<RankedTensorType>(load.getType())) &&
         llvm::all_of(load->getOperands(), isCheapTile);
}

/// A row - a 1-D load of at most kReloadRowElements (a weight or bias
/// vector) with cheap pointers, mask and fill - whose only use converts it
/// into a slice layout, where it meets a 2-D tile (expand_dims, broadcast):
/// loaded in that slice instead (ReloadInTargetLayout). The threads that
/// share an element (a LayerNorm's weight in a warp-a-row layout: every
/// warp) read it from L1, where the conversion would move the row through
/// shared memory between two CTA barriers.
/// Only where each thread reads its elements in vectors as wide as the
/// load's (coalesce's width), at most kReloadRowAccesses of them: a row
/// statistic in an mma layout's slice (a thread's rows strided) stays
/// converted.
constexpr int64_t kReloadRowElements = 4096, kReloadRowAccesses = 16;
bool reloadsAsRow(tile::LoadOp load) {
  auto type = dyn_cast<RankedTensorType>(load.getType()); // a scalar load is no row
  auto width = load->getAttrOfType<IntegerAttr>("tilegpu.vector_width");
  if (!type || !load->hasOneUse() || type.getRank() != 1 || type.getNumElements() > kReloadRowElements || !width ||
      width.getInt() < 2 || !llvm::all_of(load->getOperands(), isCheapTile))
    return false;
  auto cvt = dyn_cast<tilegpu::ConvertLayoutOp>(*load->user_begin());
  auto target = cvt ? cast<RankedTensorType>(cvt.getType()) : RankedTensorType();
  if (!target || !isa<tilegpu::SliceEncodingAttr>(target.getEncoding()))
    return false;
  layout::LinearLayout ll = tilegpu::toLinearLayout(target.getEncoding(), target.getShape());
  const int64_t registers = ll.inDimSize("register");
  return ll.contiguousRegisters(layout::dimName(0)) >= width.getInt() &&
         registers / width.getInt() <= kReloadRowAccesses;
}

/// The vector width a load or store chosen by coalesce keeps when it moves
/// to `type`'s layout: at most its old width (which the addresses allow)
/// and what the new layout holds contiguously along the same dimension.
void keepVectorWidth(Operation *from, Operation *to, RankedTensorType type) {
  auto width = from->getAttrOfType<IntegerAttr>("tilegpu.vector_width");
  auto dim = from->getAttrOfType<IntegerAttr>("tilegpu.vector_dim");
  if (!width || !dim || dim.getInt() >= type.getRank())
    return;
  const int64_t contiguous = tilegpu::toLinearLayout(type.getEncoding(), type.getShape())
                                 .contiguousRegisters(layout::dimName(int(dim.getInt())));
  Builder b(to->getContext());
  to->setAttr("tilegpu.vector_width", b.getI32IntegerAttr(int32_t(std::min<int64_t>(width.getInt(), contiguous))));
  to->setAttr("tilegpu.vector_dim", dim);
}

/// Layouts any op may compute in: blocked, mma and their slices (not a dot
/// operand's, which only conversions produce).
bool computesIn(Attribute encoding) {
  if (auto slice = dyn_cast<tilegpu::SliceEncodingAttr>(encoding))
    return computesIn(slice.getParent());
  return isa<tilegpu::BlockedEncodingAttr, tilegpu::MmaEncodingAttr>(encoding);
}

/// A small value computed only for this use from cheap tiles and
/// reloadable loads - through elementwise ops, expand_dims, broadcasts and
/// conversions (attention's scaled row statistic, expanded and negated):
/// the other rewrites bring the whole chain into the user's layout, so
/// converting it costs nothing.
bool isRematerialisable(Value v, int depth = 0) {
  if (isCheapTile(v))
    return true;
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (depth > 8 || !type || !v.hasOneUse() || type.getNumElements() > kReloadElements)
    return false;
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (isa<tile::LoadOp>(def))
    return isReloadable(v);
  if (!isa<tilegpu::ConvertLayoutOp, tile::ExpandDimsOp, tile::BroadcastOp>(def) && !isElementwise(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value o) {
    return !isa<RankedTensorType>(o.getType()) || isRematerialisable(o, depth + 1);
  });
}

/// Plans `op` (elementwise) recomputed in layout `encoding`: for each tile
/// operand the value to convert (a conversion operand is looked through), and
/// what the plan adds and what it removes among the operand conversions.
struct Plan {
  SmallVector<Value> sources; // per operand: value to bring into `encoding`
  Cost added, removed;
};

Plan planIn(Operation *op, Attribute encoding) {
  Plan plan;
  for (Value o : op->getOperands()) {
    if (!isa<RankedTensorType>(o.getType()) || isCheapTile(o) || (computesIn(encoding) && isRematerialisable(o))) {
      plan.sources.push_back(o); // cheap tiles are rematerialised, small loads reloaded: free
      continue;
    }
    Value src = o;
    if (auto cvt = o.getDefiningOp<tilegpu::ConvertLayoutOp>()) {
      src = cvt.getSrc();
      if (onlyUsedBy(cvt, op))
        plan.removed.add(conversionCost(cvt));
    }
    plan.added.add(conversionCost(src.getType(), encoding));
    plan.sources.push_back(src);
  }
  return plan;
}

/// Builds `op` over `sources` in layout `encoding` (operands converted where
/// their layout differs; the other patterns then fold or remove those).
Value buildIn(PatternRewriter &rewriter, Operation *op, ArrayRef<Value> sources,
              Attribute encoding) {
  auto target = cast<RankedTensorType>(op->getResult(0).getType());
  auto like = RankedTensorType::get(target.getShape(), target.getElementType(), encoding);
  SmallVector<Value> operands;
  for (Value s : sources) {
    if (auto t = dyn_cast<RankedTensorType>(s.getType()); t && t.getEncoding() != encoding)
      s = tilegpu::ConvertLayoutOp::create(rewriter, op->getLoc(), withEncodingOf(t, like), s);
    operands.push_back(s);
  }
  OperationState state(op->getLoc(), op->getName().getStringRef(), operands, {like},
                       op->getAttrs());
  return rewriter.create(state)->getResult(0);
}

/// convert_L(elementwise(convert(a), b, ...)) -> elementwise(a', b', ...) in
/// L: hoisting the conversion onto the operands pays when operand
/// conversions then cancel (a already in L) or merge, e.g. data converted for
/// an add and converted straight back.
struct HoistConversionAboveElementwise : OpRewritePattern<tilegpu::ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp op,
                                PatternRewriter &rewriter) const override {
    Operation *def = op.getSrc().getDefiningOp();
    if (!isElementwise(def) || !op.getSrc().hasOneUse() || isCheap(op.getSrc()))
      return failure();
    Attribute encoding = cast<RankedTensorType>(op.getType()).getEncoding();
    Plan plan = planIn(def, encoding);
    plan.removed.add(conversionCost(op));
    if (!(plan.added < plan.removed))
      return failure();
    rewriter.replaceOp(op, buildIn(rewriter, def, plan.sources, encoding));
    return success();
  }
};

/// elementwise(convert(a), convert(b), ...) in L -> convert_L(elementwise(a,
/// b, ...)) in a's layout: two conversions of the operands become one of the
/// result (which may then cancel against a conversion of the result's users).
struct SinkConversionBelowElementwise : RewritePattern {
  SinkConversionBelowElementwise(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isElementwise(op) || isCheapTile(op->getResult(0)))
      return failure();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    // Candidate layouts: those the operand conversions come from.
    SmallVector<Attribute> candidates;
    for (Value o : op->getOperands())
      if (auto cvt = o.getDefiningOp<tilegpu::ConvertLayoutOp>())
        if (!isCheapTile(o) && !llvm::is_contained(candidates, cvt.getSrc().getType().getEncoding()))
          candidates.push_back(cvt.getSrc().getType().getEncoding());
    for (Attribute encoding : candidates) {
      Plan plan = planIn(op, encoding);
      plan.added.add(conversionCost(
          RankedTensorType::get(resultType.getShape(), resultType.getElementType(), encoding),
          resultType.getEncoding()));
      if (!(plan.added < plan.removed))
        continue;
      Value computed = buildIn(rewriter, op, plan.sources, encoding);
      rewriter.replaceOpWithNewOp<tilegpu::ConvertLayoutOp>(op, resultType, computed);
      return success();
    }
    return failure();
  }
};

/// convert(broadcast(x)) -> broadcast(convert(x)) and convert(expand_dims(x))
/// -> expand_dims(convert(x)): the source has fewer elements to move (a row
/// statistic, a bias), so the conversion is never dearer there.
struct ConvertBeforeBroadcast : OpRewritePattern<tilegpu::ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp op,
                                PatternRewriter &rewriter) const override {
    auto target = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    // Only blocked and mma layouts hold a size-1 dimension or have slices.
    if (!isa<tilegpu::BlockedEncodingAttr, tilegpu::MmaEncodingAttr>(target.getEncoding()))
      return failure();
    if (auto bcast = op.getSrc().getDefiningOp<tile::BroadcastOp>()) {
      Value in = tilegpu::ConvertLayoutOp::create(
          rewriter, loc, withEncodingOf(bcast.getSrc().getType(), target), bcast.getSrc());
      rewriter.replaceOpWithNewOp<tile::BroadcastOp>(op, target, in);
      return success();
    }
    auto expand = op.getSrc().getDefiningOp<tile::ExpandDimsOp>();
    if (!expand)
      return failure();
    auto sliced = withEncoding(expand.getSrc().getType(),
                               tilegpu::SliceEncodingAttr::get(rewriter.getContext(),
                                                               expand.getAxis(), target.getEncoding()));
    Value in = tilegpu::ConvertLayoutOp::create(rewriter, loc, sliced, expand.getSrc());
    rewriter.replaceOpWithNewOp<tile::ExpandDimsOp>(op, target, in, expand.getAxis());
    return success();
  }
};

/// A loop-carried tile that the body only converts, and that the loop yields
/// as a conversion from layout L: carried in L instead. The conversion of the
/// yielded value leaves the loop (once before it, once after), and the uses
/// convert from L - taken when that costs less per iteration (e.g. a row
/// statistic produced and consumed in the mma layout).
struct CarryInYieldedLayout : OpRewritePattern<scf::ForOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(scf::ForOp loop, PatternRewriter &rewriter) const override {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs()))
      if (succeeded(carryPrefetchedInUsersLayout(loop, unsigned(i), rewriter)))
        return success();
    for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
      auto cvt = yield.getOperand(unsigned(i)).getDefiningOp<tilegpu::ConvertLayoutOp>();
      if (!cvt || !cvt->hasOneUse() || cvt->getParentOp() != loop.getOperation())
        continue;
      Type carried = cvt.getSrc().getType(), original = arg.getType();
      if (carried == original ||
          !llvm::all_of(arg.getUsers(), [](Operation *u) { return isa<tilegpu::ConvertLayoutOp>(u); }))
        continue;
      Cost before = conversionCost(cvt), after;
      for (Operation *u : arg.getUsers()) {
        Attribute to = cast<RankedTensorType>(u->getResult(0).getType()).getEncoding();
        before.add(conversionCost(original, to));
        after.add(conversionCost(carried, to));
      }
      if (!(after < before))
        continue;
      Location loc = loop.getLoc();
      rewriter.setInsertionPoint(loop);
      Value init = tilegpu::ConvertLayoutOp::create(rewriter, loc, carried, loop.getInitArgs()[i]);
      Value result = loop.getResult(unsigned(i));
      rewriter.modifyOpInPlace(loop, [&] {
        loop.getInitArgsMutable()[unsigned(i)].set(init);
        arg.setType(carried);
        result.setType(carried);
      });
      rewriter.modifyOpInPlace(yield, [&] { yield->setOperand(unsigned(i), cvt.getSrc()); });
      rewriter.eraseOp(cvt);
      rewriter.setInsertionPointAfter(loop);
      auto back = tilegpu::ConvertLayoutOp::create(rewriter, loc, original, result);
      rewriter.replaceAllUsesExcept(result, back, back);
      return success();
    }
    return failure();
  }

  /// A small tile loaded for the next iteration (a row statistic fetched a
  /// block ahead: reloadable, its one use the yield) that the body only
  /// converts, every use into one layout L through shared memory: carried
  /// in L - the yield converts the load, which is then reloaded in L, and
  /// the uses' conversions fold; the initial value is converted once before
  /// the loop, the result back after it.
  static LogicalResult carryPrefetchedInUsersLayout(scf::ForOp loop, unsigned i, PatternRewriter &rewriter) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    BlockArgument arg = loop.getRegionIterArgs()[i];
    auto load = yield.getOperand(i).getDefiningOp<tile::LoadOp>();
    auto original = dyn_cast<RankedTensorType>(arg.getType());
    if (!load || !original || load->getParentOp() != loop.getOperation() || !isReloadable(load.getResult()) ||
        arg.use_empty())
      return failure();
    Attribute target;
    for (Operation *u : arg.getUsers()) {
      auto cvt = dyn_cast<tilegpu::ConvertLayoutOp>(u);
      if (!cvt)
        return failure();
      Attribute to = cast<RankedTensorType>(cvt.getType()).getEncoding();
      if (target && target != to)
        return failure();
      target = to;
    }
    if (!computesIn(target) || conversionCost(original, target).n[0] == 0)
      return failure();
    const RankedTensorType carried = withEncoding(original, target);
    Location loc = loop.getLoc();
    rewriter.setInsertionPoint(loop);
    Value init = tilegpu::ConvertLayoutOp::create(rewriter, loc, carried, loop.getInitArgs()[i]);
    rewriter.setInsertionPoint(yield);
    Value next = tilegpu::ConvertLayoutOp::create(rewriter, loc, carried, load.getResult());
    Value result = loop.getResult(i);
    rewriter.modifyOpInPlace(loop, [&] {
      loop.getInitArgsMutable()[i].set(init);
      arg.setType(carried);
      result.setType(carried);
    });
    rewriter.modifyOpInPlace(yield, [&] { yield->setOperand(i, next); });
    rewriter.setInsertionPointAfter(loop);
    auto back = tilegpu::ConvertLayoutOp::create(rewriter, loc, original, result);
    rewriter.replaceAllUsesExcept(result, back, back);
    return success();
  }
};

/// convert_L(load(p, mask, other)) of a reloadable load -> load(p', mask',
/// other') in L, where it stood (the operands' conversions then become
/// recomputations). Rooted at the load: it has its single use only once the
/// rewrite that converted it has erased the old user.
struct ReloadInTargetLayout : OpRewritePattern<tile::LoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::LoadOp load, PatternRewriter &rewriter) const override {
    if (!isReloadable(load.getResult()) && !reloadsIntoAccumulator(load) && !reloadsAsRow(load))
      return failure();
    auto cvt = dyn_cast<tilegpu::ConvertLayoutOp>(*load->user_begin());
    if (!cvt || conversionCost(cvt).n[0] == 0) // only shared-memory conversions are worth a reload
      return failure();
    auto target = cast<RankedTensorType>(cvt.getType());
    if (!computesIn(target.getEncoding()))
      return failure();
    auto in = [&](Value v) -> Value {
      if (!v)
        return v;
      return tilegpu::ConvertLayoutOp::create(rewriter, load.getLoc(),
                                              withEncodingOf(cast<RankedTensorType>(v.getType()), target), v);
    };
    rewriter.setInsertionPoint(load);
    auto reloaded = tile::LoadOp::create(rewriter, load.getLoc(), target, in(load.getPtr()), in(load.getMask()),
                                         in(load.getOther()));
    // Vector widths were chosen for the old layout (coalesce): kept where
    // the new one holds as many elements contiguously.
    for (NamedAttribute a : load->getAttrs())
      if (!a.getName().strref().starts_with("tilegpu.vector_"))
        reloaded->setAttr(a.getName(), a.getValue());
    keepVectorWidth(load, reloaded, target);
    rewriter.replaceOp(cvt, reloaded.getResult());
    rewriter.eraseOp(load);
    return success();
  }
};

/// A TMA store writes its registers to shared memory in whatever layout
/// they are (each thread its own elements), so a conversion feeding one only
/// moves data twice: the store takes the conversion's source.
struct StoreThroughTmaInAnyLayout : OpRewritePattern<tile::DescriptorStoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::DescriptorStoreOp op, PatternRewriter &rw) const override {
    auto convert = op.getValue().getDefiningOp<tilegpu::ConvertLayoutOp>();
    if (!op->hasAttr("tilegpu.tma") || !convert)
      return failure();
    rw.modifyOpInPlace(op, [&] { op.getValueMutable().assign(convert.getSrc()); });
    return success();
  }
};

/// The elementwise ops `v` is computed from, down to cheap tiles, values in
/// one layout `source` and conversions from it (the first conversion found
/// sets `source` when it is null): added to `tree` in program order, all in
/// `block`. `throughShared`: one of those conversions is a shared-memory
/// trip. False when anything else feeds `v`.
bool collectConvertedTree(Value v, Block *block, Attribute &source, llvm::SetVector<Operation *> &tree,
                          bool &throughShared) {
  llvm::SetVector<Operation *> reached;
  SmallVector<Value> work = {v}, others;
  while (!work.empty()) {
    Value w = work.pop_back_val();
    if (isCheapTile(w))
      continue;
    Operation *def = w.getDefiningOp();
    if (auto cvt = dyn_cast_or_null<tilegpu::ConvertLayoutOp>(def)) {
      Attribute from = cvt.getSrc().getType().getEncoding();
      if (source && source != from)
        return false;
      source = from;
      throughShared |= conversionCost(cvt).n[0] > 0;
      continue;
    }
    if (!def || !isElementwise(def) || isa<tile::AddPtrOp>(def) || def->getBlock() != block || reached.size() > 16) {
      others.push_back(w); // acceptable only if already in `source`
      continue;
    }
    if (reached.insert(def))
      for (Value o : def->getOperands())
        if (isa<RankedTensorType>(o.getType()))
          work.push_back(o);
  }
  if (!source || !computesIn(source) ||
      llvm::any_of(others, [&](Value o) { return cast<RankedTensorType>(o.getType()).getEncoding() != source; }))
    return false;
  SmallVector<Operation *> ordered(reached.begin(), reached.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  tree.insert(ordered.begin(), ordered.end());
  return true;
}

/// `v` (a cheap tile, a conversion from `encoding`, a value in it) in
/// `encoding`: the conversion's source, or a conversion (which
/// rematerialisation then removes).
Value bringInto(PatternRewriter &rw, Value v, Attribute encoding) {
  auto t = dyn_cast_or_null<RankedTensorType>(v ? v.getType() : Type());
  if (!t || t.getEncoding() == encoding)
    return v;
  if (auto cvt = v.getDefiningOp<tilegpu::ConvertLayoutOp>(); cvt && cvt.getSrc().getType().getEncoding() == encoding)
    return cvt.getSrc();
  return tilegpu::ConvertLayoutOp::create(rw, v.getLoc(), withEncoding(t, encoding), v);
}

/// The ops of `tree` (collectConvertedTree) built again in `encoding`, each
/// after its original: what each original result maps to.
IRMapping recomputeIn(PatternRewriter &rw, const llvm::SetVector<Operation *> &tree, Attribute encoding) {
  IRMapping computed;
  for (Operation *op : tree) {
    rw.setInsertionPointAfter(op);
    SmallVector<Value> operands;
    for (Value o : op->getOperands())
      operands.push_back(computed.contains(o) ? computed.lookup(o) : bringInto(rw, o, encoding));
    OperationState state(op->getLoc(), op->getName().getStringRef(), operands,
                         {withEncoding(op->getResult(0).getType(), encoding)}, op->getAttrs());
    computed.map(op->getResult(0), rw.create(state)->getResult(0));
  }
  return computed;
}

/// convert_L(f(g(convert(x)), ...)) with x in L, through elementwise ops on
/// cheap tiles: f and g computed again in L, so no conversion remains - the
/// chain's conversion from L cancels. Moves the ops (their only users are
/// the chain and this conversion) or, for a small tile (at most
/// kReloadElements: a row statistic, its rstd from the mean of squares),
/// duplicates them where other users still need them in their layout.
/// HoistConversionAboveElementwise moves one op at a time, and a step that
/// only moves the conversion up is no cheaper, so it stops at a chain.
struct RecomputeChainInTargetLayout : OpRewritePattern<tilegpu::ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp cvt, PatternRewriter &rw) const override {
    auto target = cast<RankedTensorType>(cvt.getType());
    Attribute encoding = target.getEncoding();
    if (!computesIn(encoding) || conversionCost(cvt).n[0] == 0 || !isElementwise(cvt.getSrc().getDefiningOp()) ||
        isCheapTile(cvt.getSrc()))
      return failure();
    llvm::SetVector<Operation *> tree;
    bool throughShared = false;
    if (!collectConvertedTree(cvt.getSrc(), cvt->getBlock(), encoding, tree, throughShared) || tree.empty())
      return failure();
    const bool moves = llvm::all_of(tree, [&](Operation *op) {
      return llvm::all_of(op->getUsers(), [&](Operation *u) { return u == cvt.getOperation() || tree.contains(u); });
    });
    if (!moves && target.getNumElements() > kReloadElements)
      return failure();
    IRMapping computed = recomputeIn(rw, tree, encoding);
    rw.replaceOp(cvt, computed.lookup(cvt.getSrc()));
    return success();
  }
};

/// A 1-D row stored straight from a conversion (column sums reduced into a
/// slice layout) as well from the conversion's source `from`: as
/// reloadsAsRow, each thread writes its elements in vectors as wide as the
/// store's, at most kReloadRowAccesses of them (duplicates store once).
bool storesAsRow(tile::StoreOp store, RankedTensorType from) {
  auto width = store->getAttrOfType<IntegerAttr>("tilegpu.vector_width");
  if (from.getRank() != 1 || from.getNumElements() > kReloadRowElements || !width)
    return false;
  layout::LinearLayout ll = tilegpu::toLinearLayout(from.getEncoding(), from.getShape());
  return ll.contiguousRegisters(layout::dimName(0)) >= width.getInt() &&
         ll.inDimSize("register") / width.getInt() <= kReloadRowAccesses;
}

/// store(p, f(convert(x), ...), mask) of a small tile (a row statistic: at
/// most kReloadElements) with cheap pointers and mask, where a conversion on
/// the way moves data through shared memory: f computed in x's layout and
/// stored from there, the pointers and mask recomputed in it. A warp-a-row
/// LayerNorm's mean and rstd, reduced into a slice layout, are stored from
/// it instead of travelling to the pointers' default layout between CTA
/// barriers. A wider value only when stored straight from a conversion, as
/// a row whose vectors the source layout keeps (storesAsRow: column sums
/// reduced into a slice); other wide stores keep coalesce's layout.
struct StoreInSourceLayout : OpRewritePattern<tile::StoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::StoreOp store, PatternRewriter &rw) const override {
    auto type = dyn_cast<RankedTensorType>(store.getValue().getType());
    if (!type || !isCheapTile(store.getPtr()) || (store.getMask() && !isCheapTile(store.getMask())))
      return failure();
    Attribute source;
    llvm::SetVector<Operation *> tree;
    bool throughShared = false;
    if (!collectConvertedTree(store.getValue(), store->getBlock(), source, tree, throughShared) || !throughShared)
      return failure();
    if (type.getNumElements() > kReloadElements && !(tree.empty() && storesAsRow(store, withEncoding(type, source))))
      return failure();
    IRMapping computed = recomputeIn(rw, tree, source);
    rw.setInsertionPoint(store);
    Value value = computed.contains(store.getValue()) ? computed.lookup(store.getValue())
                                                      : bringInto(rw, store.getValue(), source);
    auto moved = tile::StoreOp::create(rw, store.getLoc(), bringInto(rw, store.getPtr(), source), value,
                                       bringInto(rw, store.getMask(), source));
    for (NamedAttribute a : store->getAttrs())
      if (!a.getName().strref().starts_with("tilegpu.vector_"))
        moved->setAttr(a.getName(), a.getValue());
    keepVectorWidth(store, moved, cast<RankedTensorType>(value.getType()));
    rw.eraseOp(store);
    return success();
  }
};

/// The ops `v` is computed from through elementwise ops, when they reach
/// only cheap tiles and swizzled TMA loads (at least one), and nothing outside them
/// but `cvt` uses what they compute: added to `tree` in program order.
bool collectTmaLoadedTree(Value v, tilegpu::ConvertLayoutOp cvt, llvm::SetVector<Operation *> &tree) {
  llvm::SetVector<Operation *> reached;
  SmallVector<Value> work = {v};
  bool loads = false;
  while (!work.empty()) {
    Value w = work.pop_back_val();
    if (isCheapTile(w))
      continue;
    Operation *def = w.getDefiningOp();
    if (!def || reached.size() > 64)
      return false;
    if (reached.contains(def))
      continue;
    if (isa<tile::DescriptorLoadOp>(def) && def->hasAttr("tilegpu.tma_swizzle")) {
      // Swizzled (use-tma): read without bank conflicts in any layout. A
      // row-major block read in an mma layout puts a fragment's rows on
      // the same banks - the conversion is then no dearer.
      loads = true;
    } else if (!isElementwise(def) || isa<tile::AddPtrOp>(def)) {
      return false;
    } else {
      for (Value o : def->getOperands())
        if (isa<RankedTensorType>(o.getType()))
          work.push_back(o);
    }
    reached.insert(def);
  }
  for (Operation *op : reached)
    for (Operation *user : op->getUsers())
      if (user != cvt.getOperation() && !reached.contains(user))
        return false;
  if (!loads)
    return false;
  SmallVector<Operation *> ordered(reached.begin(), reached.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    return a->getBlock() == b->getBlock() ? a->isBeforeInBlock(b) : a->getBlock() < b->getBlock();
  });
  tree.insert(ordered.begin(), ordered.end());
  return llvm::all_of(tree, [&](Operation *op) { return op->getBlock() == cvt->getBlock(); });
}

/// convert_L(f(tma_load(d), ...)) -> f'(tma_load'(d), ...) in L: a TMA
/// load's threads read their elements from shared memory in any layout
/// (from a swizzled tile without bank conflicts, 16-bit mma fragments with
/// ldmatrix), so data loaded through TMA and computed on elementwise only
/// for this conversion is loaded and computed in its target layout - a GEMM
/// epilogue's operand (GELU's input beside the accumulator) never moves
/// through shared memory a second time. Cheap tiles among the operands are
/// converted (and then rematerialised).
struct LoadThroughTmaInTargetLayout : OpRewritePattern<tilegpu::ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tilegpu::ConvertLayoutOp cvt, PatternRewriter &rw) const override {
    auto target = cast<RankedTensorType>(cvt.getType());
    if (!computesIn(target.getEncoding()) || conversionCost(cvt).n[0] == 0)
      return failure();
    llvm::SetVector<Operation *> tree;
    if (!collectTmaLoadedTree(cvt.getSrc(), cvt, tree))
      return failure();
    for (Operation *op : tree) {
      rw.setInsertionPoint(op);
      rw.modifyOpInPlace(op, [&] {
        if (!isa<tile::DescriptorLoadOp>(op))
          for (OpOperand &o : op->getOpOperands()) {
            auto t = dyn_cast<RankedTensorType>(o.get().getType());
            if (t && t.getEncoding() != target.getEncoding() && !tree.contains(o.get().getDefiningOp()))
              o.set(tilegpu::ConvertLayoutOp::create(rw, op->getLoc(), withEncodingOf(t, target), o.get()));
          }
        op->getResult(0).setType(withEncodingOf(op->getResult(0).getType(), target));
      });
    }
    rw.replaceOp(cvt, cvt.getSrc());
    return success();
  }
};

} // namespace

void tegula::populateRematerialiseCheapPatterns(RewritePatternSet &patterns) {
  patterns.add<RematerialiseCheapSource>(patterns.getContext());
  tilegpu::ConvertLayoutOp::getCanonicalizationPatterns(patterns, patterns.getContext());
}

namespace {

struct RemoveLayoutConversionsPass
    : tegula::impl::RemoveLayoutConversionsBase<RemoveLayoutConversionsPass> {
  void runOnOperation() override {
    // Loop-carried values first, while their uses are still the conversions
    // propagate-mma-layout left (the other rewrites may move those).
    {
      RewritePatternSet carry(&getContext());
      carry.add<CarryInYieldedLayout>(&getContext());
      tilegpu::ConvertLayoutOp::getCanonicalizationPatterns(carry, &getContext());
      if (failed(applyPatternsGreedily(getOperation(), std::move(carry))))
        return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<RematerialiseCheapSource, ReloadInTargetLayout, LoadThroughTmaInTargetLayout,
                 RecomputeChainInTargetLayout>(&getContext(),
                                                                                             /*benefit=*/2);
    patterns.add<HoistConversionAboveElementwise, SinkConversionBelowElementwise,
                 ConvertBeforeBroadcast, CarryInYieldedLayout, StoreThroughTmaInAnyLayout, StoreInSourceLayout>(
        &getContext());
    tilegpu::ConvertLayoutOp::getCanonicalizationPatterns(patterns, &getContext());
    // Not settled after the rounds allowed: two rewrites that undo each
    // other on this program (a row mask computed from loaded data and
    // broadcast did, at 4 warps). Each keeps the program's meaning, so the
    // IR is right, at worst with a conversion to spare: it compiles rather
    // than fail without a word.
    GreedyRewriteConfig config;
    config.setMaxIterations(32);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
  }
};

} // namespace
