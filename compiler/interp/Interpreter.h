//===- Interpreter.h - run `tile` IR on the CPU -----------------*- C++ -*-===//
//
// The interpreter executes a kernel's `tile` IR program by program over the
// whole grid, on host buffers. It is the semantic oracle for the GPU
// backends: every unmasked load and store is checked against the bounds of
// the buffer it points into.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/kernel.h"

#include <string>
#include <vector>

namespace mlir::func {
class FuncOp;
}

namespace tegula::interp {

struct Launch {
  std::string kernelName;
  Grid grid;
  /// CTAs per thread-block cluster along x: the programs of a cluster must
  /// make the same tl::multicast loads (checked).
  int clusterSize = 1;
  /// The launch arguments and parameter names, in signature order.
  const std::vector<Arg> *args;
  std::vector<std::string> paramNames;
  /// For each function argument, the index of its launch argument
  /// (tl::constant parameters have no function argument).
  std::vector<size_t> argIndex;
};

/// Run `kernel` over the grid; throws tegula::Error on an out-of-bounds
/// access, a failed device_assert or an integer division by zero.
void run(mlir::func::FuncOp kernel, const Launch &launch);

} // namespace tegula::interp
