//===- ControlFlow.cpp - tl::range, tl::while_ and tl::if_ (scf) ----------===//
//
// tl::range is a C++ range whose single "iteration" traces the loop body
// into an scf.for: begin() opens the loop and rebinds the carried variables
// to the loop's iteration arguments, operator++ yields their new values and
// rebinds them to the loop's results.
//
//===----------------------------------------------------------------------===//
#include "compiler/dsl/TraceState.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <fmt/ranges.h>

#include <exception>
#include <optional>

using namespace mlir;
using tegula::tl::operand;
using tegula::tl::tensor;

namespace tegula::tl::detail {

struct LoopState {
  enum class Phase { Created, InBody, Done } phase = Phase::Created;
  std::vector<tensor *> carried;
  std::vector<CarriedList::Vector> vectors; // their elements looked up afresh at each rebinding
  std::vector<CarriedList::BlockPtr> blockPtrs;
  SmallVector<Type> carriedTypes;
  Value lo, hi, step;
  void *stepValue = nullptr; // the step as given, when a tile: a stale-read error says so
  // A negative literal step: the scf.for counts u = -i upwards (scf.for
  // steps are positive) and the body sees index = -u.
  bool descending = false;
  // A descending loop with an i32 bound known only at launch counts u in
  // i64 (-INT32_MIN has no i32); the body's index is i32 again.
  Type indexType;
  Value index;
  scf::ForOp op;
  std::source_location loc;
  loop_options options;
};

} // namespace tegula::tl::detail

namespace tegula::tl {
using namespace tegula::dsl;

namespace {
/// Points the carried list at each carried vector's elements as they are
/// now (a body may swap or move-assign a vector); its size must not change,
/// nor a carried block pointer's block.
void refreshVectors(std::vector<tensor *> &carried, const std::vector<detail::CarriedList::Vector> &vectors,
                    const std::vector<detail::CarriedList::BlockPtr> &blockPtrs, const char *loop,
                    const std::source_location &loc, const char *where) {
  for (const detail::CarriedList::BlockPtr &b : blockPtrs) {
    if (b.block.empty())
      fail(loc, fmt::format("a tl::block_ptr carried by {} was never made; assign it tl::make_block_ptr(...) "
                            "before the loop",
                            loop));
    if (b.p->block_shape() != b.block)
      fail(loc, fmt::format("a tl::block_ptr carried by {} changed its block {} from [{}] to [{}]; a loop may "
                            "advance it, not reshape it",
                            loop, where, fmt::join(b.block, ", "), fmt::join(b.p->block_shape(), ", ")));
  }
  for (const detail::CarriedList::Vector &v : vectors) {
    if (v.vec->size() != v.size)
      fail(loc, fmt::format("a std::vector of {} tiles carried by {} was resized {} (now {}); assign "
                            "its elements instead",
                            v.size, loop, where, v.vec->size()));
    for (size_t i = 0; i < v.size; ++i)
      carried[v.first + i] = &(*v.vec)[i];
  }
}

void refreshVectors(detail::LoopState &st, const char *where) {
  refreshVectors(st.carried, st.vectors, st.blockPtrs, "tl::range", st.loc, where);
}

/// The carried variables' values, each checked against the type it had when
/// the loop began.
SmallVector<Value> carriedValues(const std::vector<tensor *> &carried, ArrayRef<Type> types, const char *loop,
                                 const std::source_location &loc, const char *where) {
  SmallVector<Value> values;
  for (auto [i, t] : llvm::enumerate(carried)) {
    Value v = unwrap(*t, loc);
    if (v.getType() != types[i]) {
      std::string was, now;
      llvm::raw_string_ostream(was) << types[i];
      llvm::raw_string_ostream(now) << v.getType();
      fail(loc, fmt::format("carried variable #{} of {} changed type {} from {} to {}; convert it back with .to() "
                            "or .broadcast_to()",
                            i, loop, where, was, now));
    }
    values.push_back(v);
  }
  return values;
}

/// `v` with widenings looked through.
Value unwidened(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<arith::ExtSIOp, arith::ExtUIOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// Whether `v` is positive whatever the launch: a positive constant, the
/// program count (a persistent loop's `num_programs(0)` step), or that
/// count over the cluster size (which divides it: launches are held to
/// that), widened or not.
bool knownPositive(Value v) {
  v = unwidened(v);
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return c.isStrictlyPositive();
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (isa<tile::NumProgramsOp>(def))
    return true;
  if (isa<arith::DivSIOp, arith::DivUIOp>(def)) { // clusters run along x
    auto programs = dyn_cast_or_null<tile::NumProgramsOp>(unwidened(def->getOperand(0)).getDefiningOp());
    return programs && programs.getAxis() == tile::ProgramAxis::X &&
           isa_and_nonnull<tile::ClusterSizeOp>(unwidened(def->getOperand(1)).getDefiningOp());
  }
  return false;
}

Value loopBound(TraceState &ts, const operand &o, const char *what) {
  if (o.kind == operand::Kind::Float)
    fail(o.loc, fmt::format("tl::range {} must be an integer, got {}", what, o.f));
  if (o.kind != operand::Kind::Tensor)
    return Value();
  Value v = unwrap(o.t, o.loc);
  if (!shapeOf(v).empty() || !isa<IntegerType>(v.getType()) || v.getType().isInteger(1))
    fail(o.loc, fmt::format("tl::range {} must be an integer scalar, got {}{}", what, tl::tensor(o.t).type_str(),
                            std::string_view(what) == "step"
                                ? " (the third argument is the step; the carried variables follow it: "
                                  "tl::range(lo, hi, step, vars...), e.g. tl::range(0, n, 1, acc))"
                                : ""));
  return v;
}
} // namespace

range::range(operand lo, operand hi, operand step, std::vector<tensor *> carried)
    : range(lo, hi, step, detail::CarriedList{std::move(carried), {}}) {}

range::range(operand lo, operand hi, operand step, detail::CarriedList carried, const loop_options &options)
    : state_(new detail::LoopState) {
  state_->loc = lo.loc;
  if (options.num_stages < 0)
    fail(lo.loc, fmt::format("tl::loop_options: num_stages is {}; 1 or more (1: not pipelined), or 0 for the "
                             "launch's",
                             options.num_stages));
  state_->options = options;
  state_->carried = std::move(carried.tensors);
  state_->vectors = std::move(carried.vectors);
  state_->blockPtrs = std::move(carried.blockPtrs);
  TraceState &ts = current(lo.loc);
  Location l = toLoc(ts.ctx, lo.loc);
  Value vlo = loopBound(ts, lo, "start"), vhi = loopBound(ts, hi, "end"),
        vstep = loopBound(ts, step, "step");
  // Bounds share one integer type: i64 if any bound is i64, else i32.
  Type type = ts.builder.getI32Type();
  for (Value v : {vlo, vhi, vstep})
    if (v && v.getType().getIntOrFloatBitWidth() > 32)
      type = ts.builder.getI64Type();
  for (const operand *o : {&lo, &hi, &step})
    if (o->kind == operand::Kind::Int && (o->i < INT32_MIN || o->i > INT32_MAX))
      type = ts.builder.getI64Type();
  auto resolve = [&](Value v, const operand &o) {
    return v ? castTo(ts, v, type, l) : materializeLiteral(ts, o, type, l);
  };
  if (step.kind == operand::Kind::Int && step.i == 0)
    fail(step.loc, "tl::range step must not be 0");
  if (step.kind == operand::Kind::Int && step.i == INT64_MIN)
    fail(step.loc, fmt::format("tl::range step {} has no negation", step.i));
  state_->lo = resolve(vlo, lo);
  state_->hi = resolve(vhi, hi);
  // `for (i = lo; i > hi; i += step)` with step < 0 (a literal: a runtime
  // step must be positive) runs as `for (u = -lo; u < -hi; u += -step)`.
  state_->descending = step.kind == operand::Kind::Int && step.i < 0;
  if (state_->descending) {
    // -INT32_MIN wraps: counting down to it (or from it) with an i32 counter
    // would run the wrong iterations. Literal bounds are checked here; with
    // a bound known only at launch the counter is i64 (its index i32).
    state_->indexType = type;
    if (type.isInteger(32) && (vlo || vhi)) {
      type = ts.builder.getI64Type();
      state_->lo = castTo(ts, state_->lo, type, l);
      state_->hi = castTo(ts, state_->hi, type, l);
    }
    for (const operand *o : {&lo, &hi})
      if (type.isInteger(32) && o->kind == operand::Kind::Int && o->i == INT32_MIN)
        fail(o->loc, "tl::range counting down from or to -2147483648: its i32 counter cannot negate it; give the "
                     "loop i64 bounds");
    Value zero = arith::ConstantOp::create(ts.builder, l, ts.builder.getIntegerAttr(type, 0));
    state_->lo = arith::SubIOp::create(ts.builder, l, zero, state_->lo);
    state_->hi = arith::SubIOp::create(ts.builder, l, zero, state_->hi);
    state_->step = materializeLiteral(ts, operand(-step.i, step.loc), type, l);
    return;
  }
  state_->step = resolve(vstep, step);
  state_->stepValue = vstep ? vstep.getAsOpaquePointer() : nullptr;
  // A step only known at run time is checked there: on the GPU a step of 0
  // would spin forever, a negative one run until the counter wrapped.
  if (vstep && !knownPositive(state_->step)) {
    Location sl = toLoc(ts.ctx, step.loc);
    Value positive = arith::CmpIOp::create(ts.builder, sl, arith::CmpIPredicate::sgt, state_->step,
                                           arith::ConstantOp::create(ts.builder, sl, ts.builder.getIntegerAttr(type, 0)));
    tile::AssertOp::create(ts.builder, sl, positive, "tl::range step must be positive");
  }
}

range::~range() noexcept(false) {
  std::unique_ptr<detail::LoopState> state(state_);
  if (state->phase != detail::LoopState::Phase::InBody)
    return;
  // Left early (an error, or break): its frame points at the carried list
  // destroyed here, so it closes first - later destructors consult frames.
  if (TraceState *ts = activeTraceState();
      ts && !ts->frames.empty() && ts->frames.back().op == state->op.getOperation())
    closeFrame(*ts);
  if (std::uncaught_exceptions())
    return;
  fail(state->loc, "the body of a tl::range loop was left early (break, continue, return "
                   "or goto); dynamic loops must run their body to the end");
}

range::iterator range::begin() {
  TraceState &ts = current(state_->loc);
  if (state_->phase != detail::LoopState::Phase::Created)
    fail(state_->loc, "a tl::range can be iterated only once");
  Location l = toLoc(ts.ctx, state_->loc);
  refreshVectors(*state_, "before the loop");
  SmallVector<Value> inits;
  for (auto [i, t] : llvm::enumerate(state_->carried)) {
    if (!t->impl())
      fail(state_->loc, fmt::format("carried variable #{} of tl::range is empty; assign "
                                    "it an initial tile before the loop",
                                    i));
    inits.push_back(unwrap(*t, state_->loc));
    state_->carriedTypes.push_back(inits.back().getType());
  }
  state_->op = scf::ForOp::create(ts.builder, l, state_->lo, state_->hi, state_->step, inits);
  if (state_->options.num_stages > 0)
    state_->op->setAttr("tile.num_stages", ts.builder.getI32IntegerAttr(state_->options.num_stages));
  if (state_->options.warp_specialize)
    state_->op->setAttr("tile.warp_specialize", ts.builder.getBoolAttr(*state_->options.warp_specialize));
  // Its counter runs on the negated bounds: messages about it say the user's.
  if (state_->descending)
    state_->op->setAttr("tile.descending", ts.builder.getUnitAttr());
  Block *body = state_->op.getBody();
  // The default builder adds a terminator only when there are no iter_args.
  if (!body->empty() && isa<scf::YieldOp>(body->back()))
    body->back().erase();
  ts.builder.setInsertionPointToEnd(body);
  openFrame(ts, TraceFrame::Kind::Range, state_->op, &state_->carried, state_->loc);
  ts.frames.back().stepValue = state_->stepValue;
  // In the body from here: ~range closes the frame if what follows throws.
  state_->phase = detail::LoopState::Phase::InBody;
  for (auto [t, arg] : llvm::zip(state_->carried, state_->op.getRegionIterArgs()))
    *t = wrap(arg);
  state_->index = state_->op.getInductionVar();
  if (state_->descending) {
    Type type = state_->index.getType();
    Value zero = arith::ConstantOp::create(ts.builder, l, ts.builder.getIntegerAttr(type, 0));
    state_->index = arith::SubIOp::create(ts.builder, l, zero, state_->index);
    if (state_->indexType != type) // i >= INT32_MIN: exact in i32
      state_->index = arith::TruncIOp::create(ts.builder, l, state_->indexType, state_->index);
  }
  return iterator{this};
}

tensor range::iterator::operator*() const { return wrap(r->state_->index); }

range::iterator &range::iterator::operator++() {
  detail::LoopState &st = *r->state_;
  TraceState &ts = current(st.loc);
  Location l = toLoc(ts.ctx, st.loc);
  refreshVectors(st, "in the loop body");
  SmallVector<Value> yields = carriedValues(st.carried, st.carriedTypes, "tl::range", st.loc, "in the loop body");
  throwIfStale(ts);
  scf::YieldOp::create(ts.builder, l, yields);
  closeFrame(ts);
  ts.builder.setInsertionPointAfter(st.op);
  for (auto [t, res] : llvm::zip(st.carried, st.op.getResults()))
    *t = wrap(res);
  st.phase = detail::LoopState::Phase::Done;
  return *this;
}

bool range::iterator::operator!=(const iterator &) const {
  return r && r->state_->phase == detail::LoopState::Phase::InBody;
}

namespace {
/// Whether `v`, computed in the condition block `before`, may differ from one
/// test to the next: it depends on a carried value (a block argument) or on
/// memory read in the loop. Ops with regions count as changing (not
/// followed).
bool mayChangeInTheLoop(Value v, Block *before, llvm::SmallPtrSetImpl<Value> &seen) {
  if (!seen.insert(v).second)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == before;
  Operation *op = v.getDefiningOp();
  if (!op || !before->getParent()->isAncestor(op->getParentRegion()))
    return false; // made before the loop
  if (op->getNumRegions() > 0 || !isMemoryEffectFree(op))
    return true;
  return llvm::any_of(op->getOperands(), [&](Value x) { return mayChangeInTheLoop(x, before, seen); });
}
} // namespace

namespace detail {

void trace_while(const WhileCondition &cond, const std::function<void()> &body, CarriedList list) {
  TraceState &ts = current(cond.loc);
  Location l = toLoc(ts.ctx, cond.loc);
  std::vector<tensor *> carried = std::move(list.tensors);
  const std::vector<CarriedList::Vector> vectors = std::move(list.vectors);
  const std::vector<CarriedList::BlockPtr> blockPtrs = std::move(list.blockPtrs);
  refreshVectors(carried, vectors, blockPtrs, "tl::while_", cond.loc, "before the loop");
  SmallVector<Value> inits;
  SmallVector<Type> types;
  for (auto [i, t] : llvm::enumerate(carried)) {
    if (!t->impl())
      fail(cond.loc, fmt::format("carried variable #{} of tl::while_ is empty; assign it an initial tile before "
                                 "the loop",
                                 i));
    inits.push_back(unwrap(*t, cond.loc));
    types.push_back(inits.back().getType());
  }
  auto loop = scf::WhileOp::create(ts.builder, l, types, inits);
  const SmallVector<Location> locs(types.size(), l);
  // Before: the condition, on the carried values; it passes them on (as it
  // may have changed them) to the body, or out of the loop.
  Block *before = ts.builder.createBlock(&loop.getBefore(), {}, types, locs);
  // One frame for the condition and the body: a variable the condition
  // reads and the body reassigns is stale as surely as one the body reads.
  std::optional<FrameGuard> frame(std::in_place, ts, TraceFrame::Kind::While, loop, &carried, cond.loc);
  for (auto [t, arg] : llvm::zip(carried, before->getArguments()))
    *t = wrap(arg);
  Value c = unwrap(cond.fn(), cond.loc);
  if (!shapeOf(c).empty() || !c.getType().isInteger(1))
    fail(cond.loc, fmt::format("tl::while_ needs a scalar boolean condition, got {}; reduce a tile first "
                               "(tl::max(mask, 0) is any, tl::min(mask, 0) all)",
                               wrap(c).type_str()));
  // A condition made only of values from before the loop never changes: the
  // loop would never end (a lambda capturing by value, [=], or a variable
  // the loop does not carry - said after the body, whose loop-carry error
  // names the variable).
  llvm::SmallPtrSet<Value, 16> seen;
  const bool conditionCanChange = mayChangeInTheLoop(c, before, seen);
  refreshVectors(carried, vectors, blockPtrs, "tl::while_", cond.loc, "in the condition");
  scf::ConditionOp::create(ts.builder, l, c, carriedValues(carried, types, "tl::while_", cond.loc, "in the condition"));
  // After: the body.
  Block *after = ts.builder.createBlock(&loop.getAfter(), {}, types, locs);
  for (auto [t, arg] : llvm::zip(carried, after->getArguments()))
    *t = wrap(arg);
  body();
  throwIfStale(ts);
  if (!conditionCanChange)
    fail(cond.loc, "tl::while_'s condition cannot change while the loop runs: it reads no carried variable and no "
                   "memory, so the loop would never end (or never run); capture by reference ([&]) and list what "
                   "the body updates as carried: tl::while_(cond, body, var)");
  refreshVectors(carried, vectors, blockPtrs, "tl::while_", cond.loc, "in the loop body");
  scf::YieldOp::create(ts.builder, l, carriedValues(carried, types, "tl::while_", cond.loc, "in the loop body"));
  frame.reset();
  ts.builder.setInsertionPointAfter(loop);
  for (auto [t, result] : llvm::zip(carried, loop.getResults()))
    *t = wrap(result);
}

Yielded trace_if(const tensor &cond, BranchFn thenFn, void *thenClosure, BranchFn elseFn, void *elseClosure,
                 Loc loc) {
  TraceState &ts = current(loc);
  Location l = toLoc(ts.ctx, loc);
  Value c = unwrap(cond, loc);
  if (!shapeOf(c).empty() || !c.getType().isInteger(1))
    fail(loc, fmt::format("tl::if_ needs a scalar boolean condition, got {}; for tiles "
                          "use tl::where",
                          cond.type_str()));
  auto op = scf::IfOp::create(ts.builder, l, TypeRange{}, c, /*addThenBlock=*/true,
                              /*addElseBlock=*/elseFn != nullptr);
  OpBuilder::InsertPoint after = ts.builder.saveInsertionPoint();

  // Objects from outside a branch that it assigns: given back their value
  // for the other branch (C++ runs one), made unusable after the if_
  // (AssignScope.cpp) - `tl::if_(c, [&] { v = zero; })` took the branch
  // always.
  struct Assigned {
    const tensor *object;
    Value value;
    Block *block;
  };
  std::vector<Assigned> assigned;
  auto traceBranch = [&](Block *block, BranchFn fn, void *closure, Yielded &out) {
    ts.builder.setInsertionPointToEnd(block);
    openAssignScope(ts);
    struct Close { // also when the branch throws
      TraceState &ts;
      llvm::DenseMap<const tensor *, void *> entered;
      bool closed = false;
      llvm::DenseMap<const tensor *, void *> &close() {
        if (!closed)
          entered = closeAssignScope(ts, /*forgetAssigned=*/true), closed = true;
        return entered;
      }
      ~Close() { close(); }
    } scope{ts, llvm::DenseMap<const tensor *, void *>()};
    fn(closure, out);
    SmallVector<Value> vals;
    for (const tensor &t : out.values)
      vals.push_back(unwrap(t, loc));
    for (auto [object, before] : scope.close())
      if (object->impl() != before) {
        if (object->impl())
          assigned.push_back({object, Value::getFromOpaquePointer(object->impl()), block});
        rebind(ts, *object, before);
      }
    return vals;
  };
  Yielded fromThen, fromElse;
  SmallVector<Value> thenVals = traceBranch(op.thenBlock(), thenFn, thenClosure, fromThen);
  SmallVector<Value> elseVals;
  if (elseFn)
    elseVals = traceBranch(op.elseBlock(), elseFn, elseClosure, fromElse);
  if (thenVals.size() != elseVals.size() && elseFn)
    fail(loc, "tl::if_ branches return different numbers of values");
  // Both branches return the same C++ types, so as many block pointers.
  for (size_t i = 0; i < fromElse.blockPtrs.size(); ++i) {
    const block_ptr &a = fromThen.blockPtrs[i], &b = fromElse.blockPtrs[i];
    if (a.block_shape() != b.block_shape() || a.order() != b.order())
      fail(loc, fmt::format("tl::if_ branches return block pointers (#{}) of different blocks: {} (order [{}]) vs "
                            "{} (order [{}])",
                            i, shapeString(a.block_shape()), fmt::join(a.order(), ", "),
                            shapeString(b.block_shape()), fmt::join(b.order(), ", ")));
  }
  for (size_t i = 0; i < elseVals.size(); ++i)
    if (thenVals[i].getType() != elseVals[i].getType()) {
      std::string a, b;
      llvm::raw_string_ostream(a) << thenVals[i].getType();
      llvm::raw_string_ostream(b) << elseVals[i].getType();
      fail(loc, fmt::format("tl::if_ branches return different types for value #{}: {} "
                            "vs {}",
                            i, a, b));
    }
  ts.builder.setInsertionPointToEnd(op.thenBlock());
  scf::YieldOp::create(ts.builder, l, thenVals);
  if (elseFn) {
    ts.builder.setInsertionPointToEnd(op.elseBlock());
    scf::YieldOp::create(ts.builder, l, elseVals);
  }
  for (const Assigned &a : assigned)
    makeUnusableAfter(ts, *a.object, a.value, a.block);
  ts.builder.restoreInsertionPoint(after);
  if (thenVals.empty())
    return fromThen;
  // Rebuild the op with result types now that the branches are known.
  SmallVector<Type> types;
  for (Value v : thenVals)
    types.push_back(v.getType());
  ts.builder.setInsertionPoint(op);
  auto typed = scf::IfOp::create(ts.builder, l, types, c, false, false);
  typed.getThenRegion().takeBody(op.getThenRegion());
  typed.getElseRegion().takeBody(op.getElseRegion());
  op.erase();
  ts.builder.setInsertionPointAfter(typed);
  fromThen.values.clear();
  for (Value r : typed.getResults())
    fromThen.values.push_back(wrap(r));
  return fromThen;
}

} // namespace detail
} // namespace tegula::tl
