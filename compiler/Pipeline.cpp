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

namespace {
/// First half: layouts for every tile, then the vector width of accesses.
void addLayoutPasses(mlir::OpPassManager &pm, const GpuPipelineOptions &o) {
  const std::string chip = o.layoutChip();
  pm.addPass(createDropInterpreterChecks());
  pm.addPass(createDefineArithEdgeCases());
  if (chip == "sm_90a" && o.useTma)
    pm.addPass(createUseTma());
  pm.addPass(createLowerTensorDescriptors());
  ConvertTileToTileGPUOptions options;
  options.numWarps = o.numWarps;
  pm.addPass(createConvertTileToTileGPU(options));
  pm.addPass(mlir::createCanonicalizerPass());
  AccelerateDotOptions accelerate;
  accelerate.chip = chip;
  pm.addPass(createAccelerateDot(accelerate));
  // Twice: cleaning up carries loop accumulators in the mma layout, whose
  // users after the loop (attention's normalisation) then follow.
  for (int round = 0; round < 2; ++round) {
    pm.addPass(createPropagateMmaLayout());
    pm.addPass(createRemoveLayoutConversions());
  }
  pm.addPass(mlir::createCSEPass());
  pm.addPass(createCoalesce());
  // Coalescing may move accesses to other layouts: their pointers and masks
  // are recomputed there rather than converted.
  pm.addPass(createRemoveLayoutConversions());
  pm.addPass(mlir::createCSEPass());
  // Layout conversions of loop-invariant values (attention backward's row
  // statistics) leave the loop: lowered, each is a shared-memory round trip
  // between two CTA barriers, which LLVM's LICM cannot move.
  pm.addPass(mlir::createLoopInvariantCodeMotionPass());
  PipelineDotOperandsOptions pipelining;
  pipelining.numStages = o.numStages;
  pipelining.warpSpecialize = o.warpSpecialize && chip == "sm_90a";
  pipelining.pingPong = o.pingPong;
  pipelining.clusterSize = o.clusterSize;
  pm.addPass(createPipelineDotOperands(pipelining));
  pm.addPass(createDropUnusedTensorMaps());
  if (chip == "sm_90a")
    pm.addPass(createStageInvariantWgmmaOperands());
  if (chip == "sm_90a" && o.overlapDots)
    pm.addPass(createOverlapChainedDots());
  if (chip == "sm_90a" && o.warpSpecialize && o.warpgroupTurns)
    pm.addPass(createWarpgroupTurns());
  if (o.orderGlobalAccesses)
    pm.addPass(createOrderGlobalAccesses());
}

/// Second half: shared-memory offsets, then per-thread LLVM + NVVM.
void addLoweringPasses(mlir::OpPassManager &pm, const GpuPipelineOptions &o) {
  pm.addPass(createAllocateSharedMemory());
  pm.addPass(createElideScratchBarriers());
  pm.addPass(createGuardLoopCounters());
  LowerTileGPUToLLVMOptions lowering;
  lowering.chip = o.chip; // not layoutChip(): mma.sync code rounds by the chip too
  pm.addPass(createLowerTileGPUToLLVM(lowering));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(createCarryPackedPairs());
  pm.addPass(mlir::createCanonicalizerPass());
}
} // namespace

void buildGpuPipeline(mlir::OpPassManager &pm, const GpuPipelineOptions &options) {
  addLayoutPasses(pm, options);
  addLoweringPasses(pm, options);
}

namespace {
void enableTimingFromEnv(mlir::PassManager &pm) {
  if (const char *t = std::getenv("TEGULA_TIMING"); t && *t && std::string(t) != "0")
    pm.enableTiming();
}
} // namespace

mlir::LogicalResult runGpuPipeline(mlir::ModuleOp module, const GpuPipelineOptions &options,
                                   const std::function<void(const char *, mlir::ModuleOp)> &dump) {
  // Two halves, so the layout-assigned IR can be shown on its own.
  mlir::PassManager layouts(module.getContext());
  addLayoutPasses(layouts, options);
  enableTimingFromEnv(layouts);
  if (mlir::failed(layouts.run(module)))
    return mlir::failure();
  if (dump)
    dump("tilegpu", module);
  if (options.maxRegisters > 0) { // the lowering makes it the kernel's .maxnreg
    auto i32 = mlir::IntegerType::get(module.getContext(), 32);
    if (auto pool = module->getAttrOfType<mlir::IntegerAttr>("tilegpu.max_registers")) {
      module.emitError() << "max_registers " << options.maxRegisters
                         << ": this warp-specialised kernel moves registers between its warpgroups (setmaxnreg) "
                            "in a pool of "
                         << pool.getInt() << " a thread, which it declares itself; leave max_registers at 0";
      return mlir::failure();
    }
    module->setAttr("tilegpu.max_registers", mlir::IntegerAttr::get(i32, options.maxRegisters));
  }
  mlir::PassManager lower(module.getContext());
  addLoweringPasses(lower, options);
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
