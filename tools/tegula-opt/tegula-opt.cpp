//===- tegula-opt.cpp - mlir-opt with Tegula's dialects and passes --------===//
#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tegula::registerAllDialects(registry);
  tegula::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tegula optimizer driver\n", registry));
}
