//===- Pipeline.cpp - the compiler's pass pipelines -----------------------===//
#include "compiler/Pipeline.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace tegula {

void buildTilePipeline(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

mlir::LogicalResult runTilePipeline(mlir::ModuleOp module) {
  mlir::PassManager pm(module.getContext());
  buildTilePipeline(pm);
  return pm.run(module);
}

} // namespace tegula
