//===- Sass.h - a cubin's machine code, printed by nvdisasm -----*- C++ -*-===//
//
// ptxas turns PTX into SASS, the code the GPU runs, and much of what decides
// a kernel's speed shows only there: the fix-ups it wraps around approximate
// math, slow-path calls, wgmma serialisation, what it scheduled between the
// tensor-core instructions. nvdisasm prints it. The CUDA toolkit on this
// machine kind has no nvdisasm; scripts/setup.sh installs NVIDIA's PyPI wheel
// (nvidia-cuda-nvdisasm), which the build finds and remembers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tegula::backend {

/// The nvdisasm in $TEGULA_NVDISASM, $CUDA_HOME/bin, /usr/local/cuda/bin,
/// PATH, or the one the build found (the PyPI wheel's); empty when none.
std::optional<std::string> findNvdisasm();

/// The SASS of a cubin (`nvdisasm -c`): each kernel's instructions with
/// their offsets and branch labels. Throws tegula::Error when the cubin is
/// empty, nvdisasm is missing, or it fails (its message included).
std::string disassemble(const std::vector<char> &cubin);

} // namespace tegula::backend
