//===- Pipeline.cpp - the compiler's pass pipelines -----------------------===//
#include "compiler/Pipeline.h"

#include "compiler/transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace tegula {

void buildTilePipeline(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void buildGpuPipeline(mlir::OpPassManager &pm, int numWarps) {
  ConvertTileToTileGPUOptions layouts;
  layouts.numWarps = numWarps;
  pm.addPass(createConvertTileToTileGPU(layouts));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(createLowerTileGPUToLLVM());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

mlir::LogicalResult runGpuPipeline(mlir::ModuleOp module, int numWarps) {
  mlir::PassManager pm(module.getContext());
  buildGpuPipeline(pm, numWarps);
  return pm.run(module);
}

mlir::LogicalResult runTilePipeline(mlir::ModuleOp module) {
  mlir::PassManager pm(module.getContext());
  buildTilePipeline(pm);
  return pm.run(module);
}

} // namespace tegula
