//===- AccumulatorRegisters.h - dot accumulators a thread can hold -*- C++ -*-===//
//
// A `tl::dot` accumulator lives in registers, spread over the program's
// threads. One that needs more 32-bit registers a thread than a thread has
// (255) cannot be compiled well - every element spills - and its lowering
// unrolls into so much code that compiling it takes minutes (a 256x256 f32
// accumulator on 4 warps: 512 registers a thread, 1.7 MB of PTX, 9 minutes
// in ptxas). The GPU back end and the simulator refuse it before any pass,
// naming the dot's line and what would fit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace tegula::analysis {

/// The most 32-bit registers a thread has on sm_80 and sm_90.
inline constexpr int kMaxRegistersPerThread = 255;

/// Throws tegula::Error for the first dot in `tile` (tile IR) whose
/// accumulator needs more than kMaxRegistersPerThread registers a thread
/// when `numWarps` warps hold it.
void checkAccumulatorRegisters(const std::string &kernel, mlir::ModuleOp tile, int numWarps);

} // namespace tegula::analysis
