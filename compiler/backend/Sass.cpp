//===- Sass.cpp - a cubin's machine code, printed by nvdisasm -------------===//
#include "compiler/backend/Sass.h"

#include "compiler/backend/PtxBackend.h"
#include "tegula/error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#ifndef TEGULA_NVDISASM_FOUND_AT_BUILD
#define TEGULA_NVDISASM_FOUND_AT_BUILD ""
#endif

namespace tegula::backend {

std::optional<std::string> findNvdisasm() {
  if (const char *p = std::getenv("TEGULA_NVDISASM"); p && *p)
    return std::string(p);
  if (std::string candidate = cudaRoot() + "/bin/nvdisasm"; llvm::sys::fs::can_execute(candidate))
    return candidate;
  if (auto found = llvm::sys::findProgramByName("nvdisasm"))
    return *found;
  if (std::string built = TEGULA_NVDISASM_FOUND_AT_BUILD; !built.empty() && llvm::sys::fs::can_execute(built))
    return built;
  return std::nullopt;
}

std::string disassemble(const std::vector<char> &cubin) {
  if (cubin.empty())
    throw Error("no cubin to disassemble: the kernel was compiled without ptxas "
                "(CompileOptions::assemble off, or no CUDA toolkit)");
  auto nvdisasm = findNvdisasm();
  if (!nvdisasm)
    throw Error("nvdisasm not found: install it with `pip install nvidia-cuda-nvdisasm` "
                "(scripts/setup.sh does), or set TEGULA_NVDISASM or CUDA_HOME");
  if (!llvm::sys::fs::can_execute(*nvdisasm))
    throw Error(fmt::format("nvdisasm '{}' (TEGULA_NVDISASM) is not an executable file", *nvdisasm));
  llvm::SmallString<128> dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("tegula-nvdisasm", dir))
    throw Error(fmt::format("cannot create a temporary directory: {}", ec.message()));
  const std::string cubinPath = (dir + "/kernel.cubin").str(), outPath = (dir + "/kernel.sass").str(),
                    errPath = (dir + "/nvdisasm.log").str();
  std::ofstream(cubinPath, std::ios::binary).write(cubin.data(), std::streamsize(cubin.size()));
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(outPath), llvm::StringRef(errPath)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*nvdisasm, {*nvdisasm, "-c", cubinPath}, std::nullopt, redirects, 0, 0,
                                     &execError);
  auto slurp = [](const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  std::string sass = slurp(outPath), log = slurp(errPath);
  llvm::sys::fs::remove_directories(dir);
  if (rc != 0)
    throw Error(fmt::format("{} failed (exit code {}){}\n{}", *nvdisasm, rc, execError.empty() ? "" : ": " + execError,
                            log));
  return sass;
}

} // namespace tegula::backend
