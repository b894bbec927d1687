//===- InstrumentForSimulator.h - the simulator's module rewrite -*- C++ -*-===//
#pragma once

#include <memory>

namespace mlir {
class Pass;
}

namespace tegula::sim {

/// `instrument-for-simulator`: lowered LLVM + NVVM -> host-runnable LLVM
/// that calls the simulator runtime (see InstrumentForSimulator.cpp).
std::unique_ptr<mlir::Pass> createInstrumentForSimulator();
void registerSimulatorPasses();

} // namespace tegula::sim
