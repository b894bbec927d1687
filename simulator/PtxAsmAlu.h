//===- PtxAsmAlu.h - PTX's arithmetic, logic and conversions ----*- C++ -*-===//
//
// The register-to-register part of the inline PTX subset: integer and float
// arithmetic (add .. fma, div, rem), bit operations (and .. lop3, shf, bfe,
// bfi, prmt, popc, clz, brev), selp, cvt, and the f32 special functions
// (rcp, sqrt, rsqrt, ex2, lg2, sin, cos, tanh). Kernels' own inline asm
// (tl::inline_asm_elementwise) is mostly made of these. Floats are computed
// with LLVM's APFloat in the instruction's type and rounding mode, so exact
// instructions give the GPU's bits; `.approx` ones give the correctly
// rounded value, which the GPU's approximation may miss by an ulp or two.
// Internal to the simulator.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "simulator/PtxAsmInstruction.h"

#include <functional>
#include <string>
#include <vector>

namespace tegula::sim::ptx {

/// Whether `name` (an opcode's first part) is an ALU instruction.
bool isAluName(const std::string &name);

/// Fill `in` (op Alu) from an opcode split at '.' and its parsed operands;
/// `unsupported` throws with the reason.
void parseAlu(const std::vector<std::string> &parts, std::vector<Operand> operands,
              AsmProgram::Instruction &in, const std::function<void(const std::string &)> &unsupported);

/// Execute `in` over the registers `r`.
void runAlu(const AsmProgram::Instruction &in, uint64_t *r);

} // namespace tegula::sim::ptx
