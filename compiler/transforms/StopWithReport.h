//===- StopWithReport.h - a kernel stops and says why -----------*- C++ -*-===//
//
// Internal to compiler/transforms: the code a kernel runs where it stops on
// purpose (a failed tl::device_assert, a loop counter about to wrap). The
// protocol and the record are runtime/DeviceErrorReport.h's.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Builders.h"

namespace tegula::lowering {

/// At the builder's point: the thread that claims the module's report
/// writes the site (`message`, prefixed with the location's file and line,
/// appended to the module's `tegula.error_sites` unless already there),
/// `program` (3 x i32) and `index` (i32 coordinates, at most
/// runtime::kErrorReportMaxRank are kept) into the record the runtime gave
/// the module, fences system-wide and traps; a thread that loses the claim
/// waits for the winner's trap to stop the grid. Returns the trap.
mlir::Operation *stopWithReport(mlir::OpBuilder &b, mlir::Location loc, llvm::StringRef message,
                                mlir::ValueRange program, mlir::ValueRange index);

} // namespace tegula::lowering
