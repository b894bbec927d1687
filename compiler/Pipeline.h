//===- Pipeline.h - the compiler's pass pipelines ---------------*- C++ -*-===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir {
class OpPassManager;
}

namespace tegula {

/// The tile-level pipeline, also registered in tegula-opt as
/// `--tegula-tile-pipeline`.
void buildTilePipeline(mlir::OpPassManager &pm);

/// tile IR -> tilegpu (layouts) -> per-thread LLVM dialect + NVVM, ready for
/// the PTX back end. Also `--tegula-gpu-pipeline{num-warps=N}` in tegula-opt.
void buildGpuPipeline(mlir::OpPassManager &pm, int numWarps);
mlir::LogicalResult runGpuPipeline(mlir::ModuleOp module, int numWarps);

/// Tile-level clean-up after tracing: canonicalize (including the tile
/// dialect's patterns) and CSE. The result is what the interpreter runs and
/// what the GPU lowering starts from.
mlir::LogicalResult runTilePipeline(mlir::ModuleOp module);

} // namespace tegula
