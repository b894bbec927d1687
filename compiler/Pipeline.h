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

/// tile IR -> tilegpu (layouts) -> per-thread LLVM dialect + NVVM, ready for
/// the PTX back end. Also `--tegula-gpu-pipeline{num-warps=N}` in tegula-opt.
/// `numStages`: shared-memory stages for the operands of dots in loops
/// (pipeline-dot-operands; 1 turns software pipelining off).
/// `chip`: the target (sm_80, sm_90a: wgmma for the dots that fit).
/// `warpSpecialize`: TMA-fed loops get a producer warpgroup (sm_90a).
void buildGpuPipeline(mlir::OpPassManager &pm, int numWarps, int numStages = 3,
                      const std::string &chip = "sm_80", bool warpSpecialize = false);
/// Runs the GPU pipeline; `dump(stage, module)` (if set) sees the module
/// after "tilegpu" (layouts assigned) and "llvm" (per-thread code).
/// TEGULA_TIMING=1 prints MLIR's per-pass timing report to stderr.
mlir::LogicalResult
runGpuPipeline(mlir::ModuleOp module, int numWarps,
               const std::function<void(const char *, mlir::ModuleOp)> &dump = {},
               int numStages = 3, const std::string &chip = "sm_80", bool warpSpecialize = false);

/// Tile-level clean-up after tracing: canonicalize (including the tile
/// dialect's patterns) and CSE. The result is what the interpreter runs and
/// what the GPU lowering starts from.
mlir::LogicalResult runTilePipeline(mlir::ModuleOp module);

} // namespace tegula
