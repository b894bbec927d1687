//===- Registration.h - dialects and passes Tegula uses ---------*- C++ -*-===//
#pragma once

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace tegula {
/// Every dialect a Tegula module may contain (tile, arith, math, scf, func,
/// and the LLVM + NVVM dialects of lowered code).
void registerAllDialects(mlir::DialectRegistry &registry);
/// Registers Tegula's passes and the upstream ones its pipelines use.
void registerAllPasses();
} // namespace tegula
