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
  MovClusterRegister, Mapa, MbarrierArriveCluster, ClusterArrive, ClusterWait
};
enum class Kind { Bits, Signed, Unsigned, Float };

struct Operand {
  enum { Register, Immediate, Vector, Address, Label, Special } form = Immediate;
  int reg = -1;        // Register; the base of an Address
  int64_t value = 0;   // Immediate; an Address's offset; a Label's target; Special: 0 rank, 1 size
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
};

} // namespace tegula::sim
