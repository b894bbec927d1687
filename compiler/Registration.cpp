//===- Registration.cpp - dialects and passes Tegula uses -----------------===//
#include "compiler/Registration.h"

#include "compiler/Pipeline.h"
#include "compiler/transforms/Passes.h"
#include "dialects/tile/TileDialect.h"
#include "dialects/tilegpu/TileGPUDialect.h"
#include "simulator/InstrumentForSimulator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace tegula {

void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<tile::TileDialect, tilegpu::TileGPUDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect, mlir::func::FuncDialect, mlir::LLVM::LLVMDialect,
                  mlir::NVVM::NVVMDialect>();
}

void registerAllPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  registerTegulaPasses();
  sim::registerSimulatorPasses();
  mlir::PassPipelineRegistration<>(
      "tegula-tile-pipeline",
      "What a traced kernel goes through before the interpreter or GPU lowering",
      [](mlir::OpPassManager &pm) { buildTilePipeline(pm); });
  struct GpuPipelineFlags : mlir::PassPipelineOptions<GpuPipelineFlags> {
    Option<int> numWarps{*this, "num-warps", llvm::cl::desc("warps per program"),
                         llvm::cl::init(4)};
    Option<int> numStages{*this, "num-stages",
                          llvm::cl::desc("shared-memory stages for dot operands in loops (1: off)"),
                          llvm::cl::init(3)};
    Option<std::string> chip{*this, "chip", llvm::cl::desc("target: sm_80, or sm_90a (wgmma)"),
                             llvm::cl::init("sm_80")};
    Option<bool> warpSpecialize{*this, "warp-specialize",
                                llvm::cl::desc("TMA-fed loops get a producer warpgroup (sm_90a)"),
                                llvm::cl::init(false)};
    Option<bool> pingPong{*this, "ping-pong",
                          llvm::cl::desc("with warp-specialize at 4 warps: two programs per CTA, each on its own "
                                         "consumer warpgroup (sm_90a)"),
                          llvm::cl::init(false)};
    Option<int> clusterSize{*this, "cluster-size",
                            llvm::cl::desc("with warp-specialize: CTAs per thread-block cluster; multicast TMA "
                                           "rings are fetched once per cluster (sm_90a)"),
                            llvm::cl::init(1)};
    Option<bool> useWgmma{*this, "wgmma",
                          llvm::cl::desc("sm_90a: wgmma and TMA (false: sm_80's layouts)"),
                          llvm::cl::init(true)};
    Option<bool> useTma{*this, "tma", llvm::cl::desc("sm_90a: tensor descriptors through TMA"),
                        llvm::cl::init(true)};
    Option<bool> overlapDots{*this, "overlap-dots",
                             llvm::cl::desc("sm_90a: overlap-chained-dots (attention's softmax under P V)"),
                             llvm::cl::init(true)};
    Option<bool> warpgroupTurns{
        *this, "warpgroup-turns",
        llvm::cl::desc("sm_90a, warp specialised: two consumer warpgroups take turns issuing attention's dots"),
        llvm::cl::init(false)};
    Option<bool> orderGlobalAccesses{
        *this, "order-global-accesses",
        llvm::cl::desc("a barrier before a load of what other threads of the program stored (false: none)"),
        llvm::cl::init(true)};
  };
  mlir::PassPipelineRegistration<GpuPipelineFlags>(
      "tegula-gpu-pipeline", "tile IR to per-thread LLVM + NVVM (layouts, lowering)",
      [](mlir::OpPassManager &pm, const GpuPipelineFlags &f) {
        buildGpuPipeline(pm, {.numWarps = f.numWarps,
                              .numStages = f.numStages,
                              .chip = f.chip,
                              .warpSpecialize = f.warpSpecialize || f.pingPong,
                              .pingPong = f.pingPong,
                              .clusterSize = f.clusterSize,
                              .useWgmma = f.useWgmma,
                              .useTma = f.useTma,
                              .overlapDots = f.overlapDots,
                              .warpgroupTurns = f.warpgroupTurns,
                              .orderGlobalAccesses = f.orderGlobalAccesses});
      });
}

} // namespace tegula
