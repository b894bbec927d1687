//===- DotOperandRings.h - what pipeline-dot-operands shares -*- C++ -*-===//
//
// Internal to compiler/transforms: the operand plans of pipeline-dot-operands
// (DotOperandPlans.cpp), the rings it builds from them
// (PipelineDotOperands.cpp) and its warp-specialised variant
// (WarpSpecializeRings.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialects/tile/TileDialect.h"
#include "dialects/tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace tegula::rings {

using mlir::BlockArgument;
using mlir::Operation;
using mlir::SmallVector;
using mlir::Value;

/// A loop-carried value that advances by a loop-invariant amount each
/// iteration - a pointer tile (Triton's `a_ptrs += BK`) or an integer (a
/// block pointer's offset, `k0 += BK`): at iteration k it is init + k * delta.
struct AffineCarried {
  BlockArgument arg;
  Value init, delta;
  SmallVector<Operation *> deltaOps; // loop-invariant ops in the body computing delta
};

/// The address computation of a load in the loop body: the ops in body
/// order (they depend only on the induction variable, values from outside
/// the loop and affine carried values).
struct AddressSlice {
  SmallVector<Operation *> ops;
  SmallVector<AffineCarried> carried;
};

/// An operand load that can become cp.async (or, for a TMA descriptor
/// load, TMA) into a ring, and its ring.
struct Operand {
  tile::LoadOp load;            // cp.async: a pointer load
  tile::DescriptorLoadOp block; // TMA: a descriptor load use-tma marked
  AddressSlice slice; // address and mask computation (TMA: the block's offsets)
  tilegpu::SharedTilesType ring; // in the load's coordinates
  tile::TransOp trans;           // set when the dot reads the load transposed
  int swizzle = 0;               // TMA: the swizzle that writes the ring's tiles
  Value map;                     // TMA: its tensor-map parameter
  /// TMA, warp specialised in a cluster: the CTAs that fetch each stage
  /// together, each copying its slice of rows into all (1: no multicast).
  int multicastCtas = 1;
  /// Between the load and the dot, dot side first: the trans and any
  /// layout conversions (coalesce's), erased with the load.
  SmallVector<Operation *> chain;
  /// cp.async into a ring laid out across the load's contiguous dimension
  /// (a tf32 wgmma operand loaded along M or N, its ring K-major): the
  /// layout whose 4-byte copies - one element each - write the ring with
  /// the fewest bank conflicts; the copies' pointers are computed in it.
  /// Null: the load's own layout.
  mlir::Attribute scatterEncoding;
  Operation *loadOp() { return load ? load.getOperation() : block.getOperation(); }
  /// A TMA ring of f32 (a tf32 dot's): its tensor map rounds each element
  /// to tf32 as it lands, so the dot reads it as it is.
  bool roundedByTma() const { return block && ring.getElementType().isF32(); }
};

/// Where a TMA copy completes: on the stage mbarrier of `ring` (its group's
/// first ring: rings waited for together share it), after announcing
/// `bytes` there (the group's bytes; 0 for the group's other rings).
struct StageSignal {
  Value ring;
  int64_t bytes = 0;
};

/// The signals of TMA rings filled and waited for together (in the order
/// their copies are issued): all complete on the first ring's mbarrier, on
/// which the first announces the whole group's bytes.
SmallVector<StageSignal> stageSignals(mlir::ArrayRef<Value> group);

/// Issues `op`'s load for the iteration whose induction variable is `iv`
/// into stage `stage` of `ring`, when the iteration exists (TMA: a
/// tilegpu.tma_load under an scf.if; cp.async: masked off). `outer`: clones
/// of the values from outside the loop the address computation uses (a
/// warp-specialised producer's own copies, for iterations that exist).
/// `signal` (TMA): the mbarrier a ring group shares; the ring's own if none.
void issue(mlir::OpBuilder &b, mlir::scf::ForOp loop, Operand &op, Value ring, Value iv, Value stage,
           const mlir::IRMapping *outer = nullptr, std::optional<StageSignal> signal = std::nullopt);

/// The ring operand `idx` (0: A, 1: B) of `dot` in `loop` can come through,
/// planned (DotOperandPlans.cpp); nothing when its load cannot be issued
/// ahead. `sharedLoad`: the load may have other uses (operands of other dots
/// the caller pipelines from the same ring); its chain to this dot is still
/// this dot's alone.
std::optional<Operand> planOperand(mlir::scf::ForOp loop, tile::DotOp dot, unsigned idx, int stages,
                                   bool sharedLoad = false);

/// A TMA operand's own tensor map: a copy of its descriptor's (use-tma)
/// with the ring's box (one block of rows - a CTA's slice of them when the
/// ring is multicast), swizzle and, for f32, tf32
/// rounding (Operand::roundedByTma), as a new hidden kernel argument; null
/// when the descriptor has none.
Value addSwizzledTensorMap(Operand &op);

/// `v` (a loop counter, a stage or a phase: an integer or index) as `to`:
/// truncated or sign-extended between integers (a loop with i64 bounds),
/// index_cast to or from index.
Value castCounter(mlir::OpBuilder &b, mlir::Location loc, mlir::Type to, Value v);

/// A dot's precision as its dot_shared carries it: for f32 operands only
/// (16-bit and i8 dots have no choice of precision).
tile::DotPrecisionAttr f32Precision(tile::DotOp dot);

/// The iter_arg index when `dot` just accumulates across `loop` (its
/// accumulator an iter_arg, its result used only by the yield there).
std::optional<unsigned> carriedAccumulator(mlir::scf::ForOp loop, tile::DotOp dot);

/// Places the wait for each of `issued` (wgmma dots of `loop`'s body, in
/// issue order) right before the first op that needs its result - the yield
/// at the latest - so that independent dots issued in between run while it
/// does (attention's backward: dv and dP^T, S and dP): wait_group k with k
/// the groups issued after it still in flight; the dots before it complete
/// at the same wait. When the loop holds other dots (nested: their groups
/// would count too), each waits right after it issues.
void waitForWgmmaWhereNeeded(mlir::scf::ForOp loop, mlir::ArrayRef<Operation *> issued);

/// A dot of a loop with its planned operand rings (A empty: in registers).
struct RingDot {
  tile::DotOp dot;
  std::optional<Operand> a;
  Operand b;
};

/// Warp specialisation of a TMA-fed loop (see Passes.td,
/// pipeline-dot-operands' warp-specialize): a producer warpgroup issues every
/// iteration's copies for all of `dots` (the loop's dots, in body order) -
/// one ring per load, which every dot reading that load shares; the tile
/// program's warps consume. `addMap` gives an operand its swizzled
/// tensor map (called only once the loop qualifies). False, with nothing
/// changed, when it does not apply (a loop nested deeper than a tile loop,
/// a kernel that already has a producer, addresses the producer cannot
/// recompute from scalars). `pingPong` (num_warps 4): two programs per CTA,
/// each on its own consumer warpgroup (module tilegpu.programs_per_cta).
/// `clusterSize` > 1 (not with ping-pong): the rings of tl::multicast loads
/// are fetched once per thread-block cluster (module tilegpu.cluster_size).
bool pipelineWarpSpecialized(mlir::scf::ForOp loop, mlir::MutableArrayRef<RingDot> dots, int stages, bool pingPong,
                             int clusterSize, llvm::function_ref<bool(Operand &)> addMap);

} // namespace tegula::rings
