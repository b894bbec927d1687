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
  /// sm_80 (Ampere) or sm_90a (Hopper, needed for wgmma/TMA); see ptxFeaturesFor.
  std::string chip = "sm_80";
  /// PTX ISA version feature ("+ptx86"); empty: ptxFeaturesFor(chip).
  std::string features;
  /// LLVM optimisation level (0-3) before code generation.
  int optLevel = 3;
};

/// The PTX ISA version feature for `chip`: +ptx80 (what ptxas 13 needs at
/// least) up to Hopper, the version that introduced the chip after it
/// (Blackwell: sm_100/sm_103/sm_110/sm_120/sm_121, with their a/f variants,
/// which run sm_80's code path). Throws tegula::Error naming the chip for
/// anything else - LLVM would abort the process on a PTX version too old
/// for its chip.
std::string ptxFeaturesFor(const std::string &chip);

/// The most dynamic shared memory a CTA of `chip` may opt in to
/// (cudaDevAttrMaxSharedMemoryPerBlockOptin): 227 KiB on Hopper and the
/// data-centre Blackwells, 163 KiB on the A100 (and Orin), 99 KiB on the
/// consumer Amperes, Adas and Blackwells; without a chip, the most of any.
/// (Inline: the simulator's library holds kernels to it too.)
inline size_t maxSharedBytesPerCta(const std::string &chip) {
  if (chip == "sm_80" || chip == "sm_87")
    return 166912;
  for (const char *consumer : {"sm_86", "sm_89", "sm_120", "sm_121"})
    if (chip.starts_with(consumer))
      return 101376;
  return 232448;
}

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

/// $CUDA_HOME, else /usr/local/cuda: where ptxas, libdevice and nvdisasm are
/// looked for first.
std::string cudaRoot();

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
