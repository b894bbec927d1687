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
// Ping-pong (one warpgroup of consumers): the CTA runs two programs, each
// on its own consumer warpgroup. A single-dot loop's programs take turns on
// the tensor cores - one runs its loop while the other stores its result -
// and share the rings, which the producer fills turn by turn; otherwise the
// rings hold both programs' stages and producer warp w fills program w's.
// The lowering maps program ids (program p is slot p % 2 of CTA p / 2).
//
// Clusters (cluster-size C): a ring whose load is marked multicast is filled
// by all C CTAs' producers, each copying its slice of the rows into every
// CTA; so every stage's release counts all C CTAs' consumer warps, and the
// CTAs meet (tilegpu.cluster_sync) before any copy or release can reach
// another CTA's mbarriers and after the last one has.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/DotOperandRings.h"
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/WgmmaOperands.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace tegula::rings {
namespace {
/// The ops of `block` that compute `roots` (in order), when they are all
/// free of memory effects, region-free and scalar - what a producer warp can recompute on its
/// own; nothing otherwise. Values from enclosing blocks are appended to
/// `externals` (the caller provides them); block arguments of `block` are
/// allowed when `block` is the kernel's entry (its arguments) or they are
/// `iv` (a loop's induction variable the caller maps).
std::optional<SmallVector<Operation *>> scalarSlice(Block &block, ArrayRef<Value> roots, Value iv,
                                                    SmallVectorImpl<Value> &externals) {
  const bool entry = isa<func::FuncOp>(block.getParentOp());
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == &block) {
      if (entry || v == iv)
        continue; // a kernel argument, or the loop's induction variable
      return std::nullopt; // a loop-carried value
    }
    Operation *def = v.getDefiningOp();
    if (!block.getParent()->isAncestor(v.getParentRegion())) {
      externals.push_back(v); // from an enclosing block
      continue;
    }
    // Free of memory effects (divisions included: the producer computes them
    // where the consumers do, on the same path).
    if (!def || def->getBlock() != &block || def->getNumRegions() || !isMemoryEffectFree(def) ||
        llvm::any_of(def->getResultTypes(), [](Type t) { return isa<ShapedType>(t); }))
      return std::nullopt;
    if (slice.insert(def))
      work.append(def->operand_begin(), def->operand_end());
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : block)
    if (slice.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

/// Ping-pong: the two programs' K loops take turns - program `slot`'s j-th
/// loop (j: the tile loop's iteration) is turn 2j + slot; it waits for the
/// other program to have issued the previous turn's loop (or retired), and
/// ends its turn once its own loop is issued, so one program's wgmma groups
/// run while the other stores its result. Every program retires at the end
/// of the consumers' code (an idle one at once).
void orderTurns(scf::ForOp loop, scf::ForOp tiles, Block *consumer, int64_t programs) {
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  Type i32 = b.getI32Type();
  Value j = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  if (tiles) {
    Value iteration = arith::DivSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, tiles.getInductionVar(), tiles.getLowerBound()), tiles.getStep());
    j = castCounter(b, loc, i32, iteration);
  }
  Value turn = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, j, arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(int32_t(programs)))),
      tilegpu::ProgramSlotOp::create(b, loc, i32));
  tilegpu::OrderWaitOp::create(b, loc, turn);
  b.setInsertionPointAfter(loop);
  tilegpu::OrderArriveOp::create(b, loc);
  b.setInsertionPoint(consumer->getTerminator());
  tilegpu::OrderRetireOp::create(b, loc);
}

/// ceil((ub - lb) / step), at least 0: a loop's trip count (step > 0).
Value tripCount(OpBuilder &b, Location loc, Value lb, Value ub, Value step) {
  Type t = lb.getType();
  auto constant = [&](int64_t v) -> Value { return arith::ConstantOp::create(b, loc, IntegerAttr::get(t, v)); };
  // (ub - lb - 1) / step + 1 where lb < ub, unsigned: the difference is
  // exact modulo 2^32, where `ub - lb + step - 1` overflowed near INT32_MAX.
  Value last = arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, ub, lb), constant(1));
  Value n = arith::AddIOp::create(b, loc, arith::DivUIOp::create(b, loc, last, step), constant(1));
  Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);
  return arith::SelectOp::create(b, loc, runs, n, constant(0));
}

/// The loop's dots with the rings they read, and the ring whose mbarriers
/// they wait on and release (the rings of one wait share its mbarriers).
struct Rings {
  Value a, b, barriers;
};

/// pipelineWarpSpecialized, step by step: plan() decides whether it applies
/// (and gives each ring its tensor map), build() rewrites the kernel.
class WarpSpecializer {
public:
  WarpSpecializer(scf::ForOp loop, MutableArrayRef<RingDot> dots, int stages, bool pingPong, int clusterSize)
      : loop(loop), dots(dots), stages(stages), pingPong(pingPong), clusterSize(clusterSize), loc(loop.getLoc()),
        ctx(loop.getContext()), ivType(loop.getInductionVar().getType()) {}

  bool plan(llvm::function_ref<bool(Operand &)> addMap);
  void build();

private:
  void allocateAndSplit();
  void moveRegisters();
  Value guardProgram(OpBuilder &at, Block *body, bool producer);
  void buildProducer();
  Value produceLoop(OpBuilder &at, IRMapping &map,
                    llvm::function_ref<Value(OpBuilder &, Value)> firstIteration);
  void buildConsumers();
  void deferTileStoreWaits();

  Value constant(OpBuilder &at, int64_t v) { return arith::ConstantOp::create(at, loc, IntegerAttr::get(ivType, v)); }
  Value toI32(OpBuilder &at, Value v) {
    return castCounter(at, loc, at.getI32Type(), v);
  }
  Value fromI32(OpBuilder &at, Value v) {
    return castCounter(at, loc, ivType, v);
  }
  Value tileFirstIteration(OpBuilder &at, Value tileIv, Value tileLb, Value tileStep, Value trip);
  void cloneForProgram(OpBuilder &at, IRMapping &m, Value pid);
  Value loopsOf(OpBuilder &at, Value pid);
  Value turnsBefore(OpBuilder &at, Value j, Value slot, Value others);

  static constexpr int64_t kProducerWarps = 4, kProducerRegisters = 40;

  scf::ForOp loop, tiles; // the K loop, and the tile loop around it (if any)
  MutableArrayRef<RingDot> dots;
  const int stages;
  const bool pingPong;
  const int clusterSize;
  bool multicast = false; // some ring is fetched once per cluster
  Location loc;
  MLIRContext *ctx;
  Type ivType;
  func::FuncOp fn;
  ModuleOp module;
  SmallVector<Operand *> operands; // one per distinct load, in order
  llvm::MapVector<Operation *, SmallVector<Operand *>> byLoad;
  bool sharedRings = false;        // a load several dots read
  bool varyingTrips = false;       // the K loop's trip count changes from tile to tile
  SmallVector<Operation *> tileSlice, entrySlice;
  int64_t consumerWarps = 0, programs = 1;
  bool takeTurns = false, sharedRing = false;
  llvm::DenseMap<Operation *, Value> ringOf; // by load
  // Rings waited for together share their first ring's mbarriers: one wait
  // and one release a stage, the first ring's copies announcing the group's
  // bytes (CUTLASS's pipelines do the same).
  llvm::DenseMap<Operation *, Operation *> leadOf;     // by load: its group's first load
  llvm::DenseMap<Operation *, StageSignal> signalOf;   // by load
  SmallVector<Value> barrierRings;                     // the groups' first rings
  std::vector<Rings> rings; // per dot
  scf::IfOp split;
  Block *consumer = nullptr;
  bool registersMove = false;
  Value firstStage; // the producer's program's first stage (ping-pong with a stage set per program)
};

bool WarpSpecializer::plan(llvm::function_ref<bool(Operand &)> addMap) {
  // The K loop at the top of the kernel, or in a loop there (a persistent
  // kernel's tile loop; its tiles may run different K iterations).
  tiles = dyn_cast<scf::ForOp>(loop->getParentOp());
  fn = dyn_cast<func::FuncOp>((tiles ? tiles : loop)->getParentOp());
  module = fn ? fn->getParentOfType<ModuleOp>() : ModuleOp();
  if (!fn || dots.empty() || module->hasAttr("tilegpu.producer_warps"))
    return false; // nested deeper, or the kernel already has a producer
  for (RingDot &d : dots)
    if (!d.b.block || (d.a && !d.a->block))
      return false; // a ring filled by cp.async
  consumerWarps = module->getAttrOfType<IntegerAttr>("tilegpu.num_warps").getInt();
  if (consumerWarps % 4)
    return false; // the producer must be a warpgroup of its own (setmaxnreg, wgmma)
  // K loops whose bounds change from tile to tile (stream-K's runs) number
  // their iterations by a count the tile loops carry.
  varyingTrips = tiles && llvm::any_of(ValueRange{loop.getLowerBound(), loop.getUpperBound(), loop.getStep()},
                                       [&](Value v) { return tiles->isAncestor(v.getParentRegion()->getParentOp()); });
  if (ivType != (tiles ? tiles : loop).getInductionVar().getType())
    return false;
  // One ring per load: a load several dots read (attention's backward reads
  // q as it is and transposed) fills one ring they all read.
  for (RingDot &d : dots)
    for (Operand *o : {d.a ? &*d.a : nullptr, &d.b})
      if (o) {
        auto &uses = byLoad[o->loadOp()];
        if (uses.empty())
          operands.push_back(o);
        else if (uses.front()->ring != o->ring)
          return false; // the uses want the tile stored differently
        uses.push_back(o);
      }
  sharedRings = llvm::any_of(byLoad, [](auto &entry) { return entry.second.size() > 1; });
  SmallVector<Value> roots = {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()};
  auto outside = [&](Value v) {
    return v != loop.getInductionVar() && !loop->isAncestor(v.getParentRegion()->getParentOp());
  };
  for (Operand *o : operands) {
    if (!o->slice.carried.empty())
      return false; // the producer's loop recomputes offsets from its own counter only
    for (Operation *op : o->slice.ops)
      llvm::append_range(roots, llvm::make_filter_range(op->getOperands(), outside));
    llvm::append_range(roots, llvm::make_filter_range(o->block.getOffsets(), outside));
  }
  if (tiles) {
    SmallVector<Value> fromEntry;
    auto s = scalarSlice(*tiles.getBody(), roots, tiles.getInductionVar(), fromEntry);
    if (!s)
      return false;
    tileSlice = *s;
    roots = fromEntry;
    llvm::append_range(roots, ValueRange{tiles.getLowerBound(), tiles.getUpperBound(), tiles.getStep()});
  }
  SmallVector<Value> none;
  auto s = scalarSlice(fn.getBody().front(), roots, Value(), none);
  if (!s || !none.empty())
    return false;
  entrySlice = *s;
  programs = pingPong && consumerWarps == 4 ? 2 : 1;
  if (varyingTrips && programs > 1)
    return false; // ping-pong's turns assume every tile's loop is as long
  // A cluster's CTAs fetch the blocks the kernel promises they all load
  // (tl::multicast) once: each copies a slice of the rows into all of them
  // (not where their K loops may differ: the copies would not pair up).
  if (clusterSize > 1 && programs == 1 && !varyingTrips)
    for (auto &[load, uses] : byLoad) {
      auto block = dyn_cast<tile::DescriptorLoadOp>(load);
      if (!block || !block.getMulticast() || !layout::multicastSliceRows(uses.front()->ring.tile(), clusterSize))
        continue;
      multicast = true;
      for (Operand *o : uses)
        o->multicastCtas = clusterSize;
    }
  for (auto &[load, uses] : byLoad) {
    if (!addMap(*uses.front()))
      return false;
    for (Operand *o : uses)
      o->map = uses.front()->map;
  }
  // Ping-pong needs one warpgroup per program: two of 8 warps would leave
  // each thread too few registers. A GEMM's loops take turns on the tensor
  // cores (CUTLASS's ping-pong); not a loop with several dots and work
  // between them (attention's softmax): a turn would hold the tensor cores
  // through that work too. Taking turns, the programs share one ring (each
  // turn has all its stages); otherwise each program has stages of its own.
  takeTurns = programs > 1 && dots.size() == 1;
  sharedRing = takeTurns && !sharedRings;
  return true;
}

void WarpSpecializer::build() {
  Type i32 = IntegerType::get(ctx, 32);
  module->setAttr("tilegpu.producer_warps", IntegerAttr::get(i32, kProducerWarps));
  if (programs > 1)
    module->setAttr("tilegpu.programs_per_cta", IntegerAttr::get(i32, programs));
  if (multicast)
    module->setAttr("tilegpu.cluster_size", IntegerAttr::get(i32, clusterSize));
  allocateAndSplit();
  moveRegisters();
  {
    OpBuilder atConsumer(ctx);
    atConsumer.setInsertionPointToStart(consumer);
    if (registersMove)
      atConsumer.setInsertionPointAfter(&consumer->front());
    guardProgram(atConsumer, consumer, false);
  }
  buildProducer();
  buildConsumers();
  if (multicast) {
    // The producers' last copies into the other CTAs and the consumers' last
    // releases there are done before any CTA invalidates its mbarriers or
    // exits: every thread meets the cluster's others once more. (Producer
    // lanes 1-31 wait here while lane 0 runs the copies: nothing in lane 0's
    // code may need the whole warp - a full-mask shuffle or bar.warp.sync.)
    OpBuilder end = OpBuilder::atBlockTerminator(split.thenBlock());
    tilegpu::ClusterSyncOp::create(end, loc);
  }
  if (takeTurns)
    orderTurns(loop, tiles, consumer, programs);
  deferTileStoreWaits();
}

/// A persistent kernel's TMA stores in its tile loop: the leader waits for a
/// copy's read of the staged block before the next store stages one, and
/// once after the loop (tilegpu.tma_store_wait) - not right after issuing,
/// which would hold its warp, and so its warpgroup's first wgmma of the next
/// tile, back while the copy reads (the producer has that tile's stages
/// filled by then).
void WarpSpecializer::deferTileStoreWaits() {
  if (!tiles)
    return;
  bool any = false;
  tiles.getBody()->walk([&](tile::DescriptorStoreOp store) {
    if (store->hasAttr("tilegpu.tma")) {
      store->setAttr(analysis::kTmaStoreDeferredAttr, UnitAttr::get(ctx));
      any = true;
    }
  });
  if (!any)
    return;
  OpBuilder after(ctx);
  after.setInsertionPointAfter(tiles);
  tilegpu::TmaStoreWaitOp::create(after, loc);
}

void WarpSpecializer::allocateAndSplit() {
  // The rings and their mbarriers (data and release), before the split:
  // every thread takes part in the initialisation's barrier. They live for
  // the whole kernel: a persistent kernel's tiles share them, so the
  // producer fills the next tile's stages while the consumers store this
  // tile's result.
  Block &entry = fn.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  // The groups: every ring when several dots share rings (one wait for all,
  // before the first dot), else each dot's A and B.
  for (RingDot &d : dots)
    for (Operand *o : {d.a ? &*d.a : nullptr, &d.b})
      if (o && !leadOf.count(o->loadOp()))
        leadOf[o->loadOp()] = sharedRings ? operands.front()->loadOp() : (d.a ? d.a->loadOp() : d.b.loadOp());
  for (Operand *o : operands) {
    tilegpu::SharedTilesType type = o->ring;
    if (programs > 1 && !sharedRing) // program w's stages follow program w - 1's
      type = tilegpu::SharedTilesType::get(ctx, type.getStages() * unsigned(programs), type.getShape(),
                                           type.getElementType(), type.getContiguousDim(), type.getSwizzle(),
                                           type.getBlockElements());
    auto ring = tilegpu::AllocSharedOp::create(b, loc, type);
    ring.setTf32(o->roundedByTma());
    ringOf[o->loadOp()] = ring;
    if (leadOf[o->loadOp()] != o->loadOp())
      continue; // its copies signal the group's first ring's mbarriers
    ring.setMbarriers(true);
    ring.setReleased(true);
    tilegpu::TmaInitOp::create(b, loc, ring);
    barrierRings.push_back(ring);
  }
  for (Value lead : barrierRings) { // each group in issue order (operands')
    SmallVector<Operation *> loads;
    SmallVector<Value> group;
    for (Operand *o : operands)
      if (ringOf[leadOf[o->loadOp()]] == lead)
        loads.push_back(o->loadOp()), group.push_back(ringOf[o->loadOp()]);
    for (auto [load, signal] : llvm::zip(loads, stageSignals(group)))
      signalOf[load] = signal;
  }
  for (RingDot &d : dots) {
    Rings r;
    r.a = d.a ? ringOf[d.a->loadOp()] : Value();
    r.b = ringOf[d.b.loadOp()];
    r.barriers = ringOf[leadOf[d.b.loadOp()]];
    rings.push_back(r);
  }
  if (takeTurns)
    tilegpu::OrderInitOp::create(b, loc);
  if (multicast) // no CTA copies into or arrives on another's mbarriers before they are initialised
    tilegpu::ClusterSyncOp::create(b, loc);
  split = scf::IfOp::create(b, loc, TypeRange{}, tilegpu::IsProducerWarpOp::create(b, loc, b.getI1Type()), true);
  split->setAttr("tilegpu.warp_specialized", UnitAttr::get(ctx)); // its else region: the consumers
  // The consumers: the rest of the kernel.
  consumer = split.elseBlock();
  for (Operation &op : llvm::make_early_inc_range(llvm::make_range(std::next(split->getIterator()),
                                                                    std::prev(entry.end()))))
    op.moveBefore(consumer->getTerminator());
}

void WarpSpecializer::moveRegisters() {
  // Registers move from the producer warpgroup to the consumers when the
  // launch's per-thread share is below what a thread may hold. The CTA's
  // pool is what the launch allocated - threads x the kernel's count, which
  // ptxas sets to the share for a kernel with setmaxnreg (64K / threads,
  // rounded down to 8) - and setmaxnreg.inc waits until the pool has the
  // registers: what the consumers ask for must fit in what the producer
  // gives back.
  const int64_t threads = (consumerWarps * programs + kProducerWarps) * 32;
  const int64_t share = 65536 / threads / 8 * 8;
  registersMove = share < 248;
  if (!registersMove)
    return;
  const int64_t consumerRegisters =
      std::min<int64_t>(256, (threads * share - kProducerWarps * 32 * kProducerRegisters) /
                                 (consumerWarps * programs * 32) / 8 * 8);
  OpBuilder atConsumer = OpBuilder::atBlockBegin(consumer);
  tilegpu::SetMaxRegistersOp::create(atConsumer, loc, int32_t(consumerRegisters), true);
  // The launch's per-thread count (.maxnreg), which setmaxnreg needs the
  // kernel to declare: the pool it moves registers in is threads x this.
  module->setAttr("tilegpu.max_registers", IntegerAttr::get(IntegerType::get(ctx, 32), share));
}

/// The producer runs in the first thread of warp w for program w (one
/// program unless ping-pong; with a shared ring warp 0 serves both); a
/// ping-pong program's code runs only for programs of the launch (the last
/// CTA's second may be past the end). The rest of `body` moves under the
/// guard, where `at` then points. For a producer with a stage set per
/// program, returns its program's first stage (else null).
Value WarpSpecializer::guardProgram(OpBuilder &at, Block *body, bool producer) {
  if (programs == 1 && !producer)
    return Value();
  Value slot = producer ? tilegpu::ProgramSlotOp::create(at, loc, at.getI32Type()).getResult() : Value();
  SmallVector<Value> conditions;
  if (programs > 1 && !(producer && sharedRing))
    conditions.push_back(arith::CmpIOp::create(at, loc, arith::CmpIPredicate::slt,
                                               tile::ProgramIdOp::create(at, loc, tile::ProgramAxis::X),
                                               tile::NumProgramsOp::create(at, loc, tile::ProgramAxis::X)));
  if (producer) {
    conditions.push_back(tilegpu::IsWarpLeaderOp::create(at, loc, at.getI1Type()));
    conditions.push_back(arith::CmpIOp::create(
        at, loc, arith::CmpIPredicate::slt, slot,
        arith::ConstantOp::create(at, loc, at.getI32IntegerAttr(int32_t(sharedRing ? 1 : programs)))));
  }
  Value active = conditions.front();
  for (Value c : ArrayRef(conditions).drop_front())
    active = arith::AndIOp::create(at, loc, active, c);
  auto guard = scf::IfOp::create(at, loc, TypeRange{}, active, false);
  for (Operation &op : llvm::make_early_inc_range(llvm::make_range(std::next(guard->getIterator()),
                                                                    std::prev(body->end()))))
    op.moveBefore(guard.thenBlock()->getTerminator());
  at.setInsertionPointToStart(guard.thenBlock());
  if (programs == 1 || !producer || sharedRing)
    return Value();
  return arith::MulIOp::create(at, loc, slot, arith::ConstantOp::create(at, loc, at.getI32IntegerAttr(stages)));
}

/// The K loop's iterations are numbered over the whole kernel, so stages
/// and phases run on across tiles: a tile's first is (the tile loop's
/// iteration) * (K iterations per tile).
Value WarpSpecializer::tileFirstIteration(OpBuilder &at, Value tileIv, Value tileLb, Value tileStep, Value trip) {
  if (!tiles)
    return constant(at, 0);
  Value j = arith::DivSIOp::create(at, loc, arith::SubIOp::create(at, loc, tileIv, tileLb), tileStep);
  return arith::MulIOp::create(at, loc, j, trip);
}

// One ring for both ping-pong programs: the turns' K iterations are numbered
// in turn order, which each program and the producer compute from how many
// loops each program runs.

/// The entry's scalars as program `pid` (i32) computes them.
void WarpSpecializer::cloneForProgram(OpBuilder &at, IRMapping &m, Value pid) {
  for (Operation *op : entrySlice)
    if (auto id = dyn_cast<tile::ProgramIdOp>(op); id && id.getAxis() == tile::ProgramAxis::X)
      m.map(id.getResult(), pid);
    else
      at.clone(*op, m);
}

/// How many K loops program `pid` runs: its tile loop's trip count (1
/// without one), 0 past the launch's programs.
Value WarpSpecializer::loopsOf(OpBuilder &at, Value pid) {
  IRMapping m;
  cloneForProgram(at, m, pid);
  Value n = tiles ? tripCount(at, loc, m.lookupOrDefault(tiles.getLowerBound()),
                              m.lookupOrDefault(tiles.getUpperBound()), m.lookupOrDefault(tiles.getStep()))
                  : constant(at, 1);
  Value inLaunch = arith::CmpIOp::create(at, loc, arith::CmpIPredicate::slt, pid,
                                         tile::NumProgramsOp::create(at, loc, tile::ProgramAxis::X));
  return arith::SelectOp::create(at, loc, inLaunch, n, constant(at, 0));
}

/// Loops run before program `slot`'s j-th (turn 2j + slot): its own j and
/// the other program's min(j + slot, others) - turns alternate until one
/// program has no loop left.
Value WarpSpecializer::turnsBefore(OpBuilder &at, Value j, Value slot, Value others) {
  return arith::AddIOp::create(at, loc, j,
                               arith::MinSIOp::create(at, loc, arith::AddIOp::create(at, loc, j, slot), others));
}

/// Per iteration of the K loop (`map` holds the producer's copies of its
/// bounds and addresses; `firstIteration(at, trip)` numbers its first
/// iteration over the kernel): wait until the stage is released (from its
/// second use on), fill it. Returns the loop's trip count.
Value WarpSpecializer::produceLoop(OpBuilder &at, IRMapping &map,
                                  llvm::function_ref<Value(OpBuilder &, Value)> firstIteration) {
  Value lb = map.lookupOrDefault(loop.getLowerBound()), ub = map.lookupOrDefault(loop.getUpperBound()),
        step = map.lookupOrDefault(loop.getStep());
  Value trip = tripCount(at, loc, lb, ub, step);
  Value first = firstIteration(at, trip);
  auto producerLoop = scf::ForOp::create(at, loc, lb, ub, step);
  OpBuilder in = OpBuilder::atBlockBegin(producerLoop.getBody());
  Value iv = producerLoop.getInductionVar();
  Value i = arith::DivSIOp::create(in, loc, arith::SubIOp::create(in, loc, iv, lb), step);
  Value g = arith::AddIOp::create(in, loc, first, i);
  Value stage = toI32(in, arith::RemSIOp::create(in, loc, g, constant(in, stages)));
  if (firstStage)
    stage = arith::AddIOp::create(in, loc, stage, firstStage);
  Value reuse = arith::CmpIOp::create(in, loc, arith::CmpIPredicate::sge, g, constant(in, stages));
  auto wait = scf::IfOp::create(in, loc, TypeRange{}, reuse, false);
  {
    // Use u = g / stages of the stage needs the release of use u - 1: that
    // release completes phase u - 1 of the release barriers.
    OpBuilder w = OpBuilder::atBlockBegin(wait.thenBlock());
    Value use = arith::DivSIOp::create(w, loc, g, constant(w, stages));
    Value phase =
        toI32(w, arith::RemSIOp::create(w, loc, arith::SubIOp::create(w, loc, use, constant(w, 1)), constant(w, 2)));
    auto released = tilegpu::TmaWaitOp::create(w, loc, barrierRings, stage, phase);
    released.setReleased(true);
  }
  for (Operand *o : operands)
    issue(in, loop, *o, ringOf[o->loadOp()], iv, stage, &map, signalOf[o->loadOp()]);
  return trip;
}

/// The producer: the loops' bounds and addresses recomputed, then their
/// iterations (produceLoop).
void WarpSpecializer::buildProducer() {
  OpBuilder p = OpBuilder::atBlockBegin(split.thenBlock());
  if (registersMove)
    tilegpu::SetMaxRegistersOp::create(p, loc, int32_t(kProducerRegisters), false);
  firstStage = guardProgram(p, split.thenBlock(), true);
  if (!sharedRing) {
    IRMapping map;
    for (Operation *op : entrySlice)
      p.clone(*op, map);
    Value tileIv, tileLb, tileStep;
    Value done; // varyingTrips: the K iterations of the tiles before this one
    if (tiles) {
      tileLb = map.lookupOrDefault(tiles.getLowerBound()), tileStep = map.lookupOrDefault(tiles.getStep());
      auto producerTiles =
          scf::ForOp::create(p, loc, tileLb, map.lookupOrDefault(tiles.getUpperBound()), tileStep,
                             varyingTrips ? ValueRange{constant(p, 0)} : ValueRange{});
      p.setInsertionPointToStart(producerTiles.getBody());
      tileIv = producerTiles.getInductionVar();
      if (varyingTrips)
        done = producerTiles.getRegionIterArgs().front();
      map.map(tiles.getInductionVar(), tileIv);
      for (Operation *op : tileSlice)
        p.clone(*op, map);
    }
    Value trip = produceLoop(p, map, [&](OpBuilder &at, Value n) {
      return done ? done : tileFirstIteration(at, tileIv, tileLb, tileStep, n);
    });
    if (done)
      scf::YieldOp::create(p, loc, ValueRange{arith::AddIOp::create(p, loc, done, trip).getResult()});
    return;
  }
  // One ring for both programs: the producer fills it turn by turn - turn t
  // is program t % 2's (t / 2)-th loop, if it has one.
  Value base = arith::AndIOp::create(p, loc, tile::ProgramIdOp::create(p, loc, tile::ProgramAxis::X),
                                     arith::ConstantOp::create(p, loc, p.getI32IntegerAttr(-2)));
  Value loops0 = loopsOf(p, base),
        loops1 = loopsOf(p, arith::AddIOp::create(p, loc, base, arith::ConstantOp::create(p, loc, p.getI32IntegerAttr(1))));
  Value turns = arith::MulIOp::create(p, loc, constant(p, 2), arith::MaxSIOp::create(p, loc, loops0, loops1));
  auto turnLoop = scf::ForOp::create(p, loc, constant(p, 0), turns, constant(p, 1));
  OpBuilder t = OpBuilder::atBlockBegin(turnLoop.getBody());
  Value turn = turnLoop.getInductionVar();
  Value slot = arith::RemSIOp::create(t, loc, turn, constant(t, 2)), j = arith::DivSIOp::create(t, loc, turn, constant(t, 2));
  Value isFirst = arith::CmpIOp::create(t, loc, arith::CmpIPredicate::eq, slot, constant(t, 0));
  Value mine = arith::SelectOp::create(t, loc, isFirst, loops0, loops1);
  Value others = arith::SelectOp::create(t, loc, isFirst, loops1, loops0);
  auto has =
      scf::IfOp::create(t, loc, TypeRange{}, arith::CmpIOp::create(t, loc, arith::CmpIPredicate::slt, j, mine), false);
  OpBuilder in = OpBuilder::atBlockBegin(has.thenBlock());
  IRMapping map;
  cloneForProgram(in, map, arith::AddIOp::create(in, loc, base, toI32(in, slot)));
  if (tiles) {
    map.map(tiles.getInductionVar(),
            arith::AddIOp::create(in, loc, map.lookupOrDefault(tiles.getLowerBound()),
                                  arith::MulIOp::create(in, loc, j, map.lookupOrDefault(tiles.getStep()))));
    for (Operation *op : tileSlice)
      in.clone(*op, map);
  }
  Value before = turnsBefore(in, j, slot, others);
  produceLoop(in, map, [&](OpBuilder &at, Value trip) -> Value { return arith::MulIOp::create(at, loc, before, trip); });
}

/// The consumers' loop: per dot, wait for this iteration's stage of its
/// rings, the dot, and once its wgmma group is complete release the stage -
/// the previous iteration's when one group stays in flight (across tiles
/// too: a tile ends with a wait for all its groups), else this one's.
void WarpSpecializer::buildConsumers() {
  OpBuilder head = OpBuilder::atBlockBegin(loop.getBody());
  Value clb = loop.getLowerBound(), cstep = loop.getStep();
  Value i = arith::DivSIOp::create(head, loc, arith::SubIOp::create(head, loc, loop.getInductionVar(), clb), cstep);
  // The loop's first iteration over the kernel, and its count, computed
  // before it.
  OpBuilder before(loop);
  const Value turnTrip = tripCount(before, loc, clb, loop.getUpperBound(), cstep);
  Value turnFirst;
  if (sharedRing) { // after the loops both programs ran before this one
    Value pid = tile::ProgramIdOp::create(before, loc, tile::ProgramAxis::X);
    Value others = loopsOf(
        before, arith::XOrIOp::create(before, loc, pid, arith::ConstantOp::create(before, loc, before.getI32IntegerAttr(1))));
    Value j = tiles ? arith::DivSIOp::create(
                          before, loc, arith::SubIOp::create(before, loc, tiles.getInductionVar(), tiles.getLowerBound()),
                          tiles.getStep())
                          .getResult()
                    : constant(before, 0);
    Value slot = fromI32(before, tilegpu::ProgramSlotOp::create(before, loc, before.getI32Type()));
    turnFirst = arith::MulIOp::create(before, loc, turnsBefore(before, j, slot, others), turnTrip);
  } else if (varyingTrips) {
    // The tile loop carries the K iterations its tiles have run.
    OpBuilder outside(tiles);
    IRRewriter rewriter(ctx);
    auto counted = cast<scf::ForOp>(
        tiles
            .replaceWithAdditionalYields(rewriter, ValueRange{constant(outside, 0)},
                                         /*replaceInitOperandUsesInLoop=*/false,
                                         [&](OpBuilder &at, Location, ArrayRef<BlockArgument> done) {
                                           return SmallVector<Value>{
                                               arith::AddIOp::create(at, loc, done.front(), turnTrip).getResult()};
                                         })
            ->getOperation());
    tiles = counted;
    turnFirst = counted.getRegionIterArgs().back();
  } else {
    turnFirst = tiles ? tileFirstIteration(before, tiles.getInductionVar(), tiles.getLowerBound(), tiles.getStep(),
                                           turnTrip)
                      : constant(before, 0);
  }
  Value iter = arith::AddIOp::create(head, loc, turnFirst, i);
  // The program's first stage (ping-pong with a stage set per program).
  Value consumerFirstStage =
      programs == 1 || sharedRing
          ? Value()
          : arith::MulIOp::create(before, loc, tilegpu::ProgramSlotOp::create(before, loc, before.getI32Type()),
                                  arith::ConstantOp::create(before, loc, before.getI32IntegerAttr(stages)))
                .getResult();
  auto inProgram = [&](OpBuilder &at, Value s) -> Value {
    return consumerFirstStage ? arith::AddIOp::create(at, loc, s, consumerFirstStage).getResult() : s;
  };
  // Each run of the loop releases its own stages (see the release below).
  const bool ownStages = sharedRing || tiles;
  Value stage = inProgram(head, toI32(head, arith::RemSIOp::create(head, loc, iter, constant(head, stages))));
  Value phase = toI32(head, arith::RemSIOp::create(
                                head, loc, arith::DivSIOp::create(head, loc, iter, constant(head, stages)),
                                constant(head, 2)));
  OpBuilder after(ctx);
  after.setInsertionPointAfter(loop);
  SmallVector<Operation *> issued; // shared rings: the dots on them, in order
  auto dotOnShared = [&](OpBuilder &in, RingDot &d, Rings &r) -> Operation * {
    Location dotLoc = d.dot.getLoc();
    if (d.a) {
      auto both = tilegpu::DotSharedOp::create(in, dotLoc, d.dot.getType(), r.a, stage, r.b, stage, d.dot.getAcc(),
                                               UnitAttr(), UnitAttr(), f32Precision(d.dot));
      both.setTransposeA(bool(d.a->trans));
      both.setTransposeB(bool(d.b.trans));
      return both;
    }
    auto bOnly = tilegpu::DotSharedBOp::create(in, dotLoc, d.dot.getType(), d.dot.getA(), r.b, stage, d.dot.getAcc(),
                                               UnitAttr(), f32Precision(d.dot));
    bOnly.setTransposeB(bool(d.b.trans));
    return bOnly;
  };
  if (sharedRings) {
    // Rings that several dots read: every ring's stage is waited for once,
    // before the first dot; each wgmma group completes where its result is
    // first needed and all within the iteration; then every ring's stage is
    // released, before the yield (both placed below, once the original dots
    // are gone).
    OpBuilder in(dots.front().dot);
    tilegpu::TmaWaitOp::create(in, loc, barrierRings, stage, phase).setNoBarrier(true);
    for (auto [d, r] : llvm::zip(dots, rings)) {
      OpBuilder at(d.dot);
      Operation *onShared = dotOnShared(at, d, r);
      d.dot.replaceAllUsesWith(onShared->getResult(0));
      issued.push_back(onShared);
    }
  } else {
    // Per dot: its own rings, waited for and released on their own.
    for (auto [d, r] : llvm::zip(dots, rings)) {
      const std::optional<unsigned> carried = carriedAccumulator(loop, d.dot);
      const bool overlap = stages >= 3 && carried;
      Location dotLoc = d.dot.getLoc();
      OpBuilder in(d.dot);
      // Each thread waits for itself: wgmma needs no barrier, and the release
      // mbarrier tells the producer when the stage is free.
      tilegpu::TmaWaitOp::create(in, dotLoc, r.barriers, stage, phase).setNoBarrier(true);
      Operation *onShared = dotOnShared(in, d, r);
      in.setInsertionPointAfter(onShared);
      Value result = tilegpu::WgmmaWaitOp::create(in, dotLoc, onShared->getResult(0).getType(), onShared->getResult(0),
                                                  in.getI32IntegerAttr(overlap ? 1 : 0))
                         .getResult();
      if (overlap) {
        // A loop releases its own stages, the last after it: with a shared
        // ring the previous iteration may be the other program's, and a
        // persistent kernel's producer may then refill every stage while the
        // consumers store this tile's result.
        Value hasPrevious =
            arith::CmpIOp::create(in, dotLoc, arith::CmpIPredicate::sge, ownStages ? i : iter, constant(in, 1));
        auto release = scf::IfOp::create(in, dotLoc, TypeRange{}, hasPrevious, false);
        OpBuilder rel = OpBuilder::atBlockBegin(release.thenBlock());
        Value previous = inProgram(
            rel, toI32(rel, arith::RemSIOp::create(
                                rel, dotLoc, arith::AddIOp::create(rel, dotLoc, iter, constant(rel, stages - 1)),
                                constant(rel, stages))));
        tilegpu::TmaArriveOp::create(rel, dotLoc, r.barriers, previous);
      } else {
        tilegpu::TmaArriveOp::create(in, dotLoc, r.barriers, stage);
      }
      d.dot.replaceAllUsesWith(result);
      if (overlap) { // the last iteration's wgmma group
        Value acc = loop.getResult(*carried);
        auto done = tilegpu::WgmmaWaitOp::create(after, dotLoc, acc.getType(), acc, after.getI32IntegerAttr(0));
        acc.replaceAllUsesExcept(done.getResult(), done);
        if (ownStages) { // the loop's last stage, once its group has completed
          auto ran = scf::IfOp::create(
              after, dotLoc, TypeRange{},
              arith::CmpIOp::create(after, dotLoc, arith::CmpIPredicate::sge, turnTrip, constant(after, 1)), false);
          OpBuilder rel = OpBuilder::atBlockBegin(ran.thenBlock());
          Value last = arith::SubIOp::create(rel, dotLoc, arith::AddIOp::create(rel, dotLoc, turnFirst, turnTrip),
                                             constant(rel, 1));
          tilegpu::TmaArriveOp::create(
              rel, dotLoc, r.barriers,
              inProgram(rel, toI32(rel, arith::RemSIOp::create(rel, dotLoc, last, constant(rel, stages)))));
        }
      }
    }
  }
  for (RingDot &d : dots) {
    d.dot.erase();
    for (Operand *o : {d.a ? &*d.a : nullptr, &d.b})
      if (o)
        for (Operation *between : o->chain)
          between->erase();
  }
  for (Operand *o : operands)
    o->loadOp()->erase();
  if (sharedRings) { // now that the loop holds no other dots
    waitForWgmmaWhereNeeded(loop, issued);
    OpBuilder end(loop.getBody()->getTerminator());
    tilegpu::TmaArriveOp::create(end, loc, barrierRings, stage);
  }
  // After the loops every copy has been waited for (the producer issues
  // exactly the loops' iterations): the mbarriers go, the rings' bytes may
  // be reused.
  // (A ping-pong kernel's rings live to its end: the other program may still
  // use them, and no buffer reuses their bytes.)
  after.setInsertionPointAfter(tiles ? tiles : loop);
  if (multicast)
    tilegpu::ClusterSyncOp::create(after, loc);
  if (programs == 1)
    for (Value ring : barrierRings)
      tilegpu::TmaReleaseOp::create(after, loc, ring);
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*loop.getBody())))
    if (isOpTriviallyDead(&op))
      op.erase();
}

} // namespace

bool pipelineWarpSpecialized(scf::ForOp loop, MutableArrayRef<RingDot> dots, int stages, bool pingPong,
                             int clusterSize, llvm::function_ref<bool(Operand &)> addMap) {
  WarpSpecializer specializer(loop, dots, stages, pingPong, clusterSize);
  if (!specializer.plan(addMap))
    return false;
  specializer.build();
  return true;
}
} // namespace tegula::rings
