//===- Elementwise.h - arith/math ops on interpreter tiles ------*- C++ -*-===//
#pragma once

#include "compiler/interp/Tile.h"

#include "mlir/IR/Operation.h"

#include <functional>
#include <optional>

namespace tegula::interp {

/// Evaluate an elementwise `arith` or `math` op on its operand tiles; empty
/// when `op` is not one of them.
std::optional<TileRef> evalElementwise(mlir::Operation *op, llvm::ArrayRef<TileRef> operands);

/// 1 / x as tl::rcp defines it (the GPU's rcp.approx.ftz.f32, computed
/// exactly): subnormal inputs and results flush to zero of their sign.
float rcpApproxFtz(float x);

/// IEEE maximum/minimum: NaN-propagating, and +0 > -0.
double fmaximum(double x, double y);
double fminimum(double x, double y);

} // namespace tegula::interp
