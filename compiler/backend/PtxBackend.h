//===- PtxBackend.h - LLVM dialect + NVVM -> PTX -> cubin -------*- C++ -*-===//
//
// The last stage of the pipeline: a module of per-thread code in MLIR's LLVM
// dialect with NVVM ops becomes LLVM IR (libdevice linked when it calls
// __nv_* math), is optimised, and is emitted as PTX by LLVM's NVPTX target.
// ptxas, when the CUDA toolkit is present, assembles the PTX into a cubin
// and reports registers, shared memory and spills.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
}

namespace tegula::backend {

struct Target {
  /// sm_80 (Ampere) or sm_90a (Hopper, needed for wgmma/TMA).
  std::string chip = "sm_80";
  /// PTX ISA version feature; ptxas 13 needs +ptx80 or newer.
  std::string features = "+ptx80";
  /// LLVM optimisation level (0-3) before code generation.
  int optLevel = 3;
};

/// Translate `module` (LLVM dialect + NVVM) to PTX text. Throws
/// tegula::Error naming the failing step.
std::string translateToPtx(mlir::ModuleOp module, const Target &target);

/// What `ptxas -v` says about one kernel.
struct ResourceReport {
  std::string kernel;
  int registers = 0;
  int sharedBytes = 0;
  int stackBytes = 0;
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
  int barriers = 0;
  bool spills() const { return spillStoreBytes > 0 || spillLoadBytes > 0; }
};

struct Cubin {
  std::vector<char> data;
  std::vector<ResourceReport> kernels;
  std::string log; // ptxas's full output
};

/// The ptxas found in $TEGULA_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin or
/// PATH; empty when there is none.
std::optional<std::string> findPtxas();
/// `ptxas --version`'s last line, or "none" (part of cache keys); asked
/// once per process.
std::string ptxasVersion();

/// Assemble PTX into a cubin. On failure the error shows the command to
/// reproduce it and where the PTX was written.
Cubin assemble(const std::string &ptx, const Target &target);

/// Parse the `ptxas -v` log into per-kernel reports.
std::vector<ResourceReport> parsePtxasLog(const std::string &log);

} // namespace tegula::backend
