//===- PtxAsmInstruction.h - the inline PTX subset, parsed ------*- C++ -*-===//
//
// What AsmProgram::parse (PtxAsmParse.cpp) makes of each inline-PTX
// statement and AsmProgram::run (PtxAsm.cpp) executes: the operation, its
// type and operands over the program's 64-bit registers. Internal to the
// simulator.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "simulator/PtxAsm.h"
#include "simulator/Runtime.h"
#include "simulator/Wgmma.h"

#include <string>
#include <vector>

namespace tegula::sim {
namespace ptx {
enum class Op {
  Mov, Load, Store, Atom, Max, Min, Setp, Bra,
  CvtRnTf32, // cvt.rn.tf32.f32: f32 bits rounded to tf32, nearest, ties to even (sm_90)
  // sm_90a: warpgroup MMA and the async-proxy fence (Wgmma.h).
  WgmmaFence, WgmmaMma, WgmmaCommit, WgmmaWait, FenceProxyAsync,
  // sm_90a: mbarriers and TMA bulk tensor copies (Tma.h).
  MbarrierInit, MbarrierArrive, MbarrierArriveExpectTx, MbarrierTryWait, MbarrierInval, BulkTensorLoad,
  BulkTensorStore, BulkCommit, BulkWaitRead,
  BulkWait, FenceProxyAsyncGlobal,
  // Warp specialisation: named barriers, the warp's lanes meeting (a
  // consumer warp's release), setmaxnreg (checked, then a Nop).
  NamedBarrier, WarpSync, SetMaxNReg, Nop,
  // Thread-block clusters: %cluster_ctarank / %cluster_nctarank, mapa,
  // remote mbarrier arrivals, the cluster barrier (Runtime.h).
  MovClusterRegister, Mapa, MbarrierArriveCluster, ClusterArrive, ClusterWait,
  // cp.async with an L2 cache policy (.L2::cache_hint), which NVVM's op
  // cannot carry: the same copy as the instrumented nvvm.cp.async.
  CpAsync,
  // Register to register: arithmetic, bit operations, selp, cvt, special
  // functions (PtxAsmAlu.h; `alu` says which).
  Alu
};
enum class Alu {
  Add, Sub, Mul, Mad, Fma, Div, Rem, Neg, Abs, And, Or, Xor, Not, CNot, Shl, Shr, Shf, Lop3, Bfe, Bfi,
  Prmt, Selp, Popc, Clz, Brev, Cvt, Rcp, Sqrt, Rsqrt, Ex2, Lg2, Sin, Cos, Tanh
};
enum class Rounding { None, Rn, Rz, Rm, Rp, Rni, Rzi, Rmi, Rpi, Approx, Full };
enum class Part { Lo, Hi, Wide }; // mul/mad: which bits of the product
enum class Kind { Bits, Signed, Unsigned, Float };

struct Operand {
  enum { Register, Immediate, Vector, Address, Label, Special } form = Immediate;
  int reg = -1;        // Register; the base of an Address
  int64_t value = 0;   // Immediate; an Address's offset; a Label's target; Special: 0 rank, 1 size
  unsigned floatBits = 0; // an Immediate written as a float: value holds f32 (0f...) or f64 bits
  std::vector<int> regs; // Vector
};
} // namespace ptx

struct AsmProgram::Instruction {
  using Op = ptx::Op;
  using Kind = ptx::Kind;
  using Operand = ptx::Operand;
  Op op;
  std::string text; // for errors
  int guard = -1;
  bool guardNegated = false;
  Kind kind = Kind::Bits;
  unsigned bits = 32;
  unsigned vector = 1;
  Space space = Space::Global;
  std::string atomOp, compare;
  bool nanPropagating = false;
  bool bfloat = false; // .bf16: a 16-bit Kind::Float that is bfloat16, not IEEE half
  std::vector<Operand> operands;
  // wgmma.mma_async: operand type, N, transposes; wgmma.wait_group: N.
  MmaKind mmaKind = MmaKind::BF16;
  int wgmmaN = 0, waitPending = 0;
  int tensorRank = 0; // cp.async.bulk.tensor.{N}d
  bool transA = false, transB = false, aFromRegisters = false;
  bool increase = false; // setmaxnreg.inc
  bool multicast = false; // cp.async.bulk.tensor ... .multicast::cluster
  // Alu: the operation, its qualifiers, and cvt's source type.
  ptx::Alu alu = ptx::Alu::Add;
  ptx::Rounding rounding = ptx::Rounding::None;
  ptx::Part part = ptx::Part::Lo;
  bool ftz = false, saturate = false;
  bool pair = false; // .f16x2 / .bf16x2: two 16-bit floats in a 32-bit register
  bool shiftLeft = false, wrap = false; // shf.{l,r}.{wrap,clamp}
  Kind srcKind = Kind::Bits;
  unsigned srcBits = 32;
  bool srcBfloat = false;
};

} // namespace tegula::sim
