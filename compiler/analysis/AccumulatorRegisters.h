//===- AccumulatorRegisters.h - dot accumulators a thread can hold -*- C++ -*-===//
//
// A `tl::dot` accumulator lives in registers, spread over the program's
// threads. One a little past the 255 registers a thread has still runs
// (spilling; the sweeps run 128x64 on one warp: 256), but one needing more
// than twice that mostly lives in local memory, and its lowering unrolls
// into so much code that compiling it takes minutes (a 256x256 f32
// accumulator on 4 warps: 512 registers a thread, 1.7 MB of PTX, 9 minutes).
// The GPU back end and the simulator refuse such a dot before any pass,
// naming its line and the warps that would hold it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace tegula::analysis {

/// The most 32-bit registers a thread has on sm_80 and sm_90.
inline constexpr int kMaxRegistersPerThread = 255;

/// Throws tegula::Error for the first dot in `tile` (tile IR) whose
/// accumulator needs more than twice kMaxRegistersPerThread registers a
/// thread when `numWarps` warps hold it.
void checkAccumulatorRegisters(const std::string &kernel, mlir::ModuleOp tile, int numWarps);

} // namespace tegula::analysis
