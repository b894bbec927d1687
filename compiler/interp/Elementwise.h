//===- Elementwise.h - arith/math ops on interpreter tiles ------*- C++ -*-===//
#pragma once

#include "compiler/interp/Tile.h"

#include "mlir/IR/Operation.h"

#include <functional>
#include <optional>

namespace tegula::interp {

/// Called (and expected to throw) on an integer division by zero.
using DivByZeroFn = std::function<void(mlir::Operation *)>;

/// Evaluate an elementwise `arith` or `math` op on its operand tiles; empty
/// when `op` is not one of them.
std::optional<TileRef> evalElementwise(mlir::Operation *op, llvm::ArrayRef<TileRef> operands,
                                       const DivByZeroFn &divByZero);

} // namespace tegula::interp
