//===- Pipeline.h - the compiler's pass pipelines ---------------*- C++ -*-===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <functional>
#include <string>

namespace mlir {
class OpPassManager;
}

namespace tegula {

/// The tile-level pipeline, also registered in tegula-opt as
/// `--tegula-tile-pipeline`.
void buildTilePipeline(mlir::OpPassManager &pm);

/// What the GPU pipeline compiles for. Also the options of
/// `--tegula-gpu-pipeline{num-warps=N chip=sm_90a ...}` in tegula-opt.
struct GpuPipelineOptions {
  int numWarps = 4;
  /// Shared-memory stages for the operands of dots in loops
  /// (pipeline-dot-operands; 1 turns software pipelining off).
  int numStages = 3;
  /// The target: sm_80, or sm_90a (wgmma for the dots that fit, TMA).
  std::string chip = "sm_80";
  /// TMA-fed loops get a producer warpgroup (sm_90a).
  bool warpSpecialize = false;
  /// With warpSpecialize at numWarps 4: ping-pong - two programs per CTA,
  /// each on its own consumer warpgroup, sharing the producer warpgroup.
  bool pingPong = false;
  /// With warpSpecialize: CTAs per thread-block cluster; multicast TMA rings
  /// are fetched once per cluster (1: no clusters).
  int clusterSize = 1;
  /// false (TEGULA_WGMMA=0): the layouts are sm_80's on sm_90a too — dots on
  /// mma.sync, no TMA — a way around the Hopper paths should they misbehave.
  bool useWgmma = true;
  /// false (TEGULA_TMA=0): tensor descriptors become masked accesses on sm_90a.
  bool useTma = true;
  /// false (TEGULA_OVERLAP_DOTS=0): no overlap-chained-dots on sm_90a -
  /// attention's softmax waits for its first dot and the second waits for it.
  bool overlapDots = true;
  /// true (TEGULA_WARPGROUP_TURNS=1): warpgroup-turns on sm_90a - two
  /// consumer warpgroups take turns issuing attention's dots. Off by
  /// default: on H100s (2026-11-26 and 11-27, 36 configurations of
  /// benchmarks/attention) it ran 4% slower on the geometric mean, up to 11%
  /// at 128 x 64 on 8 warps, than the warpgroups issuing whenever ready.
  bool warpgroupTurns = false;
  /// false: no order-global-accesses - a program's load of what it stored
  /// in another layout may read the buffer before other threads wrote it
  /// (only to show that race: ReadBackSim).
  bool orderGlobalAccesses = true;
  /// > 0: the kernel's .maxnreg (CompileOptions::max_registers); an error
  /// for a warp-specialised kernel that moves registers (it sets its own).
  int maxRegisters = 0;

  /// The chip the layout passes see: sm_80 when wgmma is switched off.
  std::string layoutChip() const { return useWgmma ? chip : std::string("sm_80"); }
};

/// tile IR -> tilegpu (layouts) -> per-thread LLVM dialect + NVVM, ready for
/// the PTX back end.
void buildGpuPipeline(mlir::OpPassManager &pm, const GpuPipelineOptions &options);
/// Runs the GPU pipeline; `dump(stage, module)` (if set) sees the module
/// after "tilegpu" (layouts assigned) and "llvm" (per-thread code).
/// TEGULA_TIMING=1 prints MLIR's per-pass timing report to stderr.
mlir::LogicalResult
runGpuPipeline(mlir::ModuleOp module, const GpuPipelineOptions &options,
               const std::function<void(const char *, mlir::ModuleOp)> &dump = {});

/// Tile-level clean-up after tracing: canonicalize (including the tile
/// dialect's patterns) and CSE. The result is what the interpreter runs and
/// what the GPU lowering starts from.
mlir::LogicalResult runTilePipeline(mlir::ModuleOp module);

} // namespace tegula
