//===- ChipFeatures.h - ops a chip lacks, refused at the user's line -*- C++ -*-===//
//
// Most of the DSL runs on every chip Tegula targets; the few ops PTX gives
// only later chips are refused when a kernel is compiled (or simulated) for
// an earlier one, naming the op's line - not a lowering failure with IR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace tegula::analysis {

/// Throws tegula::Error for the first op in `tile` (tile IR) that `chip`
/// ("sm_80", "sm_90a", ...) cannot run: a bf16 atomic add before sm_90.
void checkChipFeatures(const std::string &kernel, mlir::ModuleOp tile, const std::string &chip);

} // namespace tegula::analysis
