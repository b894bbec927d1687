//===- PtxAsm.h - executing the inline PTX the lowering emits ----*- C++ -*-===//
//
// The lowering emits a little inline PTX where LLVM has no equivalent:
// predicated (vector) loads and stores, `atom`, compare-and-swap loops; and
// kernels bring their own (tl::inline_asm_elementwise). The
// simulator runs that exact text: each `llvm.inline_asm` body is parsed once
// into instructions over 64-bit registers and executed per call, with every
// memory access checked like any other. Instructions outside the supported
// subset are rejected when the kernel is prepared, naming the instruction.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tegula::sim {

class AsmProgram {
public:
  /// Parse an inline-asm body with its LLVM constraint string ("=r,l,b").
  /// Throws tegula::Error naming what is not supported.
  static std::shared_ptr<const AsmProgram> parse(const std::string &body,
                                                 const std::string &constraints);
  ~AsmProgram();

  size_t numOutputs() const { return numOutputs_; }
  /// Whether the program only computes on registers (no memory, barriers,
  /// asynchronous or cluster instructions): it then runs outside a
  /// simulated thread too (the interpreter's tl::inline_asm_elementwise).
  bool registersOnly() const { return registersOnly_; }
  size_t numInputs() const { return numInputs_; }
  /// Run on a simulated thread: `inputs` and `outputs` hold the operands'
  /// bits, zero-extended to 64. `site` names the asm op in errors.
  void run(const uint64_t *inputs, uint64_t *outputs, uint32_t site) const;

  struct Instruction;

private:
  AsmProgram() = default;
  size_t numOutputs_ = 0, numInputs_ = 0, numRegisters_ = 0;
  bool registersOnly_ = false;
  std::vector<std::pair<size_t, size_t>> tied_; // (input, output) of "0"-style constraints
  std::vector<Instruction> code_;
};

} // namespace tegula::sim
