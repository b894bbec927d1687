//===- Pipeline.cpp - the compiler's pass pipelines -----------------------===//
#include "compiler/Pipeline.h"

#include "compiler/transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <cstdlib>
#include <string>

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
  pm.addPass(createRemoveLayoutConversions());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(createCoalesce());
  pm.addPass(createLowerTileGPUToLLVM());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

namespace {
void enableTimingFromEnv(mlir::PassManager &pm) {
  if (const char *t = std::getenv("TEGULA_TIMING"); t && *t && std::string(t) != "0")
    pm.enableTiming();
}
} // namespace

mlir::LogicalResult runGpuPipeline(mlir::ModuleOp module, int numWarps,
                                   const std::function<void(const char *, mlir::ModuleOp)> &dump) {
  // Two halves, so the layout-assigned IR can be shown on its own.
  mlir::PassManager layouts(module.getContext());
  ConvertTileToTileGPUOptions options;
  options.numWarps = numWarps;
  layouts.addPass(createConvertTileToTileGPU(options));
  layouts.addPass(mlir::createCanonicalizerPass());
  layouts.addPass(createRemoveLayoutConversions());
  layouts.addPass(mlir::createCSEPass());
  layouts.addPass(createCoalesce());
  enableTimingFromEnv(layouts);
  if (mlir::failed(layouts.run(module)))
    return mlir::failure();
  if (dump)
    dump("tilegpu", module);
  mlir::PassManager lower(module.getContext());
  lower.addPass(createLowerTileGPUToLLVM());
  lower.addPass(mlir::createCanonicalizerPass());
  lower.addPass(mlir::createCSEPass());
  enableTimingFromEnv(lower);
  if (mlir::failed(lower.run(module)))
    return mlir::failure();
  if (dump)
    dump("llvm", module);
  return mlir::success();
}

mlir::LogicalResult runTilePipeline(mlir::ModuleOp module) {
  mlir::PassManager pm(module.getContext());
  buildTilePipeline(pm);
  return pm.run(module);
}

} // namespace tegula
