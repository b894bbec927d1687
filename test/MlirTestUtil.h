//===- MlirTestUtil.h - MLIR contexts for tests of hand-built IR -*- C++ -*-===//
//
// Tests that parse or build modules themselves (the simulator's hazard
// tests, layout and shared-memory unit tests) need a context with every
// dialect Tegula's passes use, registered and loaded.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

namespace tegula::testing {

/// An MLIRContext with Tegula's dialects (and those its pipeline lowers to)
/// registered and loaded.
class LoadedContext : public mlir::MLIRContext {
public:
  LoadedContext() : mlir::MLIRContext(registry()) { loadAllAvailableDialects(); }

private:
  static mlir::DialectRegistry registry() {
    mlir::DialectRegistry r;
    registerAllDialects(r);
    return r;
  }
};

} // namespace tegula::testing
