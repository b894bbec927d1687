//===- FakeModuleImage.h - the fake driver's reading of module images -*- C++ -*-===//
//
// What cuModuleLoadData learns from an image (PTX text or a cubin): each
// entry's parameters (sizes; pointers and tensor maps), thread limits and
// registers, which the fake driver checks every launch against.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tegula::fakecuda {

constexpr int kDefaultDynamicShared = 48 * 1024;

struct Parameter {
  size_t bytes = 0;
  bool pointer = false, tensorMap = false;
};

struct Function {
  std::string name;
  std::vector<Parameter> params;
  unsigned maxThreads[3] = {0, 0, 0}; // .maxntid / .reqntid; 0: not declared
  int maxDynamicShared = kDefaultDynamicShared;
  int registers = 32; // per thread: a cubin's count, PTX's .maxnreg (else 32, as a JIT might pick)
};

/// The entries of a PTX module.
std::map<std::string, std::unique_ptr<Function>> parsePtx(std::string_view ptx);
/// The entries of a cubin (an ELF image as ptxas writes it).
std::map<std::string, std::unique_ptr<Function>> parseCubin(const char *elf);

/// The module-scope `.global` variables (name -> bytes) of PTX text or a
/// cubin (its symbol table's objects), as cuModuleGetGlobal finds them.
std::map<std::string, size_t> parsePtxGlobals(std::string_view ptx);
std::map<std::string, size_t> parseCubinGlobals(const char *elf);

} // namespace tegula::fakecuda
