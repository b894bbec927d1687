//===- tegula-opt.cpp - mlir-opt with Tegula's dialects and passes --------===//
#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tegula::registerAllDialects(registry);
  tegula::registerAllPasses();
  llvm::cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) { os << "Tegula " TEGULA_VERSION "\n"; });
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tegula optimizer driver\n", registry));
}
