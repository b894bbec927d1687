//===- HostJit.h - compile a simulated kernel for this CPU -------*- C++ -*-===//
//
// The instrumented LLVM-dialect module is translated to LLVM IR, optimised,
// compiled to an object file for a fixed baseline CPU and linked by ORC
// against the simulator's symbol table (hostSymbols()) and nothing else:
// no symbol is ever looked up in the process. A kernel therefore resolves
// identically on every machine, and a function the table lacks (a libm
// routine, a soft-float conversion the code generator chose to call) is an
// error naming the function and the kernel, before anything runs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
}

namespace tegula::sim {

class HostJit {
public:
  /// Compile `module` (LLVM dialect, already instrumented) and link it.
  /// Throws tegula::Error naming `kernel` when translation, code generation
  /// or linking fails, and listing every external function the table lacks.
  static std::unique_ptr<HostJit> compile(mlir::ModuleOp module, const std::string &kernel);
  ~HostJit();

  /// `kernel` behind a packed interface: args[i] points at the i-th argument.
  using Entry = void (*)(void **args);
  Entry entry() const { return entry_; }

  /// The functions the compiled object calls outside itself (after code
  /// generation, so libcalls the back end introduced are included), sorted.
  const std::vector<std::string> &externalSymbols() const { return external_; }

  /// The CPU simulated code is compiled for ("x86-64-v2" on x86-64).
  static const char *targetCpu();

  struct Impl;

private:
  HostJit() = default;
  std::unique_ptr<Impl> impl_;
  Entry entry_ = nullptr;
  std::vector<std::string> external_;
};

} // namespace tegula::sim
