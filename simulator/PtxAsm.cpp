//===- PtxAsm.cpp - run the inline PTX subset -----------------------------===//
#include "simulator/PtxAsmAlu.h"
#include "simulator/PtxAsmInstruction.h"

#include "simulator/Runtime.h"
#include "simulator/TensorCore.h"
#include "simulator/Tma.h"
#include "simulator/Wgmma.h"
#include "tegula/dtype.h"
#include "tegula/error.h"

#include "llvm/ADT/APFloat.h"

#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <limits>
#include <optional>
#include <algorithm>

#include <fmt/format.h>

namespace tegula::sim {

using namespace ptx;

namespace {
uint64_t maskBits(uint64_t v, unsigned bits) { return bits >= 64 ? v : v & ((uint64_t(1) << bits) - 1); }

int64_t signExtend(uint64_t v, unsigned bits) {
  return bits >= 64 ? int64_t(v) : int64_t(v << (64 - bits)) >> (64 - bits);
}

/// A register's float of `bits` (16: IEEE half, or bfloat16 when `bfloat`).
double asFloat(uint64_t v, unsigned bits, bool bfloat = false) {
  if (bits == 16) {
    if (bfloat) {
      bfloat16 h;
      h.bits = uint16_t(v);
      return double(float(h));
    }
    llvm::APFloat h(llvm::APFloat::IEEEhalf(), llvm::APInt(16, uint16_t(v)));
    bool lost;
    h.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return h.convertToDouble();
  }
  return bits == 64 ? std::bit_cast<double>(v) : double(std::bit_cast<float>(uint32_t(v)));
}
/// `v` rounded to nearest even into a float of `bits`. 16-bit results go
/// through f32: a sum of two 16-bit floats, exact in double, rounds the same
/// (24 bits >= 2 p + 2 make the double rounding innocuous).
uint64_t fromFloat(double v, unsigned bits, bool bfloat = false) {
  if (bits == 16) {
    if (bfloat)
      return bfloat16(float(v)).bits;
    llvm::APFloat h(static_cast<float>(v));
    bool lost;
    h.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return h.bitcastToAPInt().getZExtValue();
  }
  return bits == 64 ? std::bit_cast<uint64_t>(v) : std::bit_cast<uint32_t>(float(v));
}

/// max/min as PTX defines them: NaN operands are ignored unless .NaN, and
/// +0 is greater than -0.
double floatMaxMin(double a, double b, bool isMax, bool nan) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nan)
      return std::numeric_limits<double>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  if (a == b)
    return (std::signbit(a) == isMax) ? b : a;
  return isMax ? std::max(a, b) : std::min(a, b);
}

template <class T> bool compareAs(const std::string &cmp, T x, T y) {
  if (cmp == "eq") return x == y;
  if (cmp == "ne") return x != y;
  if (cmp == "lt" || cmp == "lo") return x < y;
  if (cmp == "le" || cmp == "ls") return x <= y;
  if (cmp == "gt" || cmp == "hi") return x > y;
  if (cmp == "ge" || cmp == "hs") return x >= y;
  return false;
}

bool compare(const std::string &cmp, Kind kind, unsigned bits, uint64_t a, uint64_t b, bool bfloat = false) {
  if (kind == Kind::Float) {
    // Ordered comparisons are false with a NaN operand (ne too); the
    // unordered ones (equ, ..., nan) true; num: neither is NaN.
    const double x = asFloat(a, bits, bfloat), y = asFloat(b, bits, bfloat);
    const bool unordered = std::isnan(x) || std::isnan(y);
    if (cmp == "nan" || cmp == "num")
      return unordered == (cmp == "nan");
    if (cmp.size() == 3 && cmp.back() == 'u')
      return unordered || compareAs(cmp.substr(0, 2), x, y);
    return !unordered && compareAs(cmp, x, y);
  }
  if (kind == Kind::Signed)
    return compareAs(cmp, signExtend(a, bits), signExtend(b, bits));
  return compareAs(cmp, maskBits(a, bits), maskBits(b, bits));
}

/// The new value of an atomic read-modify-write, or nullopt when the
/// operation/type pair is not one PTX has.
std::optional<uint64_t> atomicResult(const std::string &op, Kind kind, unsigned bits, bool bfloat, uint64_t old,
                                     uint64_t v) {
  if (op == "add") {
    if (kind == Kind::Float)
      return fromFloat(asFloat(old, bits, bfloat) + asFloat(v, bits, bfloat), bits, bfloat);
    return maskBits(old + v, bits);
  }
  if (op == "max" || op == "min") {
    bool isMax = op == "max";
    if (kind == Kind::Signed) {
      int64_t a = signExtend(old, bits), b = signExtend(v, bits);
      return maskBits(uint64_t(isMax ? std::max(a, b) : std::min(a, b)), bits);
    }
    if (kind == Kind::Unsigned)
      return isMax ? std::max(old, v) : std::min(old, v);
    if (kind == Kind::Float)
      return fromFloat(floatMaxMin(asFloat(old, bits), asFloat(v, bits), isMax, false), bits);
    return std::nullopt;
  }
  if (op == "exch") return v;
  if (op == "and") return old & v;
  if (op == "or") return old | v;
  if (op == "xor") return old ^ v;
  if (op == "inc") return old >= v ? 0 : old + 1;
  if (op == "dec") return (old == 0 || old > v) ? v : old - 1;
  return std::nullopt;
}

} // namespace

AsmProgram::~AsmProgram() = default;

void AsmProgram::run(const uint64_t *inputs, uint64_t *outputs, uint32_t site) const {
  uint64_t stackRegs[64];
  std::vector<uint64_t> heapRegs;
  uint64_t *r = stackRegs;
  if (numRegisters_ > 64) {
    heapRegs.resize(numRegisters_);
    r = heapRegs.data();
  }
  std::fill(r, r + numRegisters_, 0);
  std::copy(inputs, inputs + numInputs_, r + numOutputs_);
  for (auto [input, output] : tied_)
    r[output] = inputs[input];
  auto value = [&](const Operand &o) { return o.form == Operand::Register ? r[o.reg] : uint64_t(o.value); };
  auto address = [&](const Operand &o) { return reinterpret_cast<void *>(r[o.reg] + uint64_t(o.value)); };

  size_t steps = 0;
  for (size_t pc = 0; pc < code_.size();) {
    const Instruction &in = code_[pc++];
    if (++steps > 10'000'000)
      fail(site, "inline PTX ran 10^7 instructions without finishing (a livelocked loop?)");
    if (in.guard >= 0 && (r[in.guard] != 0) == in.guardNegated)
      continue;
    const std::vector<Operand> &ops = in.operands;
    unsigned bytes = in.bits / 8;
    switch (in.op) {
    case Op::Mov:
      if (ops[1].form == Operand::Vector) { // mov.b32 d, {lo, hi}: the halves packed, the first lowest
        const unsigned part = in.bits / unsigned(ops[1].regs.size());
        uint64_t packed = 0;
        for (size_t i = 0; i < ops[1].regs.size(); ++i)
          packed |= maskBits(r[ops[1].regs[i]], part) << (part * i);
        r[ops[0].reg] = maskBits(packed, in.bits);
      } else if (ops[0].form == Operand::Vector) { // mov.b32 {lo, hi}, s: unpacked
        const unsigned part = in.bits / unsigned(ops[0].regs.size());
        const uint64_t whole = value(ops[1]);
        for (size_t i = 0; i < ops[0].regs.size(); ++i)
          r[ops[0].regs[i]] = maskBits(whole >> (part * i), part);
      } else {
        r[ops[0].reg] = maskBits(value(ops[1]), in.bits);
      }
      break;
    case Op::Alu:
      runAlu(in, r);
      break;
    case Op::CvtRnTf32: // the low 13 bits zero, which the hardware does not promise (the tensor cores ignore them)
      r[ops[0].reg] =
          std::bit_cast<uint32_t>(round_to_tf32(std::bit_cast<float>(uint32_t(maskBits(value(ops[1]), 32)))));
      break;
    case Op::Load:
    case Op::Store: {
      bool load = in.op == Op::Load;
      const Operand &addr = ops[load ? 1 : 0], &data = ops[load ? 0 : 1];
      std::vector<int> regs = data.form == Operand::Vector ? data.regs : std::vector<int>{data.reg};
      if (regs.size() != in.vector)
        fail(site, fmt::format("'{}': {} registers for .v{}", in.text, regs.size(), in.vector));
      auto *p = reinterpret_cast<uint8_t *>(r[addr.reg] + uint64_t(addr.value));
      checkAccess(p, bytes * in.vector, load ? AccessKind::Read : AccessKind::Write, in.space, site);
      profileAccess(p, bytes * in.vector, load ? AccessKind::Read : AccessKind::Write, in.space, site);
      for (size_t i = 0; i < regs.size(); ++i) {
        if (load) {
          uint64_t v = 0;
          std::memcpy(&v, p + i * bytes, bytes);
          r[regs[i]] = v;
        } else {
          uint64_t v = r[regs[i]];
          std::memcpy(p + i * bytes, &v, bytes);
        }
      }
      break;
    }
    case Op::Atom: {
      auto *p = reinterpret_cast<uint8_t *>(r[ops[1].reg] + uint64_t(ops[1].value));
      checkAccess(p, bytes, AccessKind::Atomic, in.space, site);
      profileAccess(p, bytes, AccessKind::Atomic, in.space, site);
      uint64_t old = 0;
      std::memcpy(&old, p, bytes);
      uint64_t next;
      if (in.atomOp == "cas") {
        next = maskBits(old, in.bits) == maskBits(value(ops[2]), in.bits) ? value(ops[3]) : old;
      } else {
        std::optional<uint64_t> v = atomicResult(in.atomOp, in.kind, in.bits, in.bfloat, old, value(ops[2]));
        if (!v)
          fail(site, fmt::format("'{}': no such atomic operation", in.text));
        next = *v;
      }
      std::memcpy(p, &next, bytes);
      r[ops[0].reg] = maskBits(old, in.bits);
      break;
    }
    case Op::Max:
    case Op::Min: {
      bool isMax = in.op == Op::Max;
      uint64_t a = value(ops[1]), b = value(ops[2]), d;
      if (in.kind == Kind::Float)
        d = fromFloat(floatMaxMin(asFloat(a, in.bits, in.bfloat), asFloat(b, in.bits, in.bfloat), isMax,
                                  in.nanPropagating),
                      in.bits, in.bfloat);
      else if (in.kind == Kind::Signed)
        d = uint64_t(isMax ? std::max(signExtend(a, in.bits), signExtend(b, in.bits))
                           : std::min(signExtend(a, in.bits), signExtend(b, in.bits)));
      else
        d = isMax ? std::max(maskBits(a, in.bits), maskBits(b, in.bits))
                  : std::min(maskBits(a, in.bits), maskBits(b, in.bits));
      r[ops[0].reg] = maskBits(d, in.bits);
      break;
    }
    case Op::Setp:
      r[ops[0].reg] = compare(in.compare, in.kind, in.bits, value(ops[1]), value(ops[2]), in.bfloat);
      break;
    case Op::Bra:
      pc = size_t(ops[0].value);
      break;
    case Op::FenceProxyAsync:
      fenceProxyAsync();
      break;
    case Op::CpAsync: // the cache policy (an L2 hint) aside, nvvm.cp.async's copy
      cpAsync(address(ops[0]), address(ops[1]), int32_t(ops[2].value), int32_t(value(ops[3])), site);
      break;
    case Op::Nop:
      break;
    case Op::MbarrierInit:
      mbarrierInit(address(ops[0]), uint32_t(value(ops[1])), site);
      break;
    case Op::MbarrierArrive:
      mbarrierArrive(address(ops[1]), site);
      break;
    case Op::MbarrierArriveCluster:
      mbarrierArriveCluster(address(ops[1]), site);
      break;
    case Op::MovClusterRegister:
      r[ops[0].reg] = maskBits(uint64_t(ops[1].value ? clusterSize() : clusterRank()), in.bits);
      break;
    case Op::Mapa:
      r[ops[0].reg] = reinterpret_cast<uintptr_t>(
          mapSharedAddress(reinterpret_cast<const void *>(r[ops[1].reg]), uint32_t(value(ops[2])), site));
      break;
    case Op::ClusterArrive:
      clusterBarrierArrive(site);
      break;
    case Op::ClusterWait:
      clusterBarrierWait(site);
      break;
    case Op::MbarrierArriveExpectTx:
      mbarrierArriveExpectTx(address(ops[1]), uint32_t(value(ops[2])), site);
      break;
    case Op::NamedBarrier:
      namedBarrier(uint32_t(value(ops[0])), uint32_t(ops[1].value), site);
      break;
    case Op::WarpSync:
      warpCollective("bar.warp.sync", site, uint32_t(ops[0].value), nullptr, [](void *const *) {});
      break;
    case Op::SetMaxNReg:
      setMaxRegisters(in.increase, uint32_t(ops[0].value), site);
      break;
    case Op::MbarrierTryWait:
      r[ops[0].reg] = mbarrierTryWait(address(ops[1]), uint32_t(value(ops[2])), site);
      break;
    case Op::MbarrierInval:
      mbarrierInval(address(ops[0]), site);
      break;
    case Op::BulkTensorLoad: {
      int32_t coords[5];
      for (int d = 0; d < in.tensorRank; ++d)
        coords[d] = int32_t(uint32_t(r[ops[2].regs[size_t(d)]]));
      if (in.multicast)
        bulkTensorLoadMulticast(address(ops[0]), reinterpret_cast<const void *>(r[ops[1].reg]), coords,
                                in.tensorRank, address(ops[3]), uint16_t(value(ops[4])), site);
      else
        bulkTensorLoad(address(ops[0]), reinterpret_cast<const void *>(r[ops[1].reg]), coords,
                       in.tensorRank, address(ops[3]), site);
      break;
    }
    case Op::BulkTensorStore: {
      int32_t coords[5];
      for (int d = 0; d < in.tensorRank; ++d)
        coords[d] = int32_t(uint32_t(r[ops[1].regs[size_t(d)]]));
      bulkTensorStore(reinterpret_cast<const void *>(r[ops[0].reg]), coords, in.tensorRank,
                      address(ops[2]), site);
      break;
    }
    case Op::BulkCommit:
      bulkCommitGroup();
      break;
    case Op::BulkWaitRead:
      bulkWaitGroupRead(in.waitPending);
      break;
    case Op::BulkWait:
      bulkWaitGroup(in.waitPending);
      break;
    case Op::FenceProxyAsyncGlobal:
      break;
    case Op::WgmmaFence:
      wgmmaFence();
      break;
    case Op::WgmmaCommit:
      wgmmaCommitGroup();
      break;
    case Op::WgmmaMma: {
      std::vector<uint32_t> acc;
      for (int reg : ops[0].regs)
        acc.push_back(uint32_t(r[reg]));
      if (in.aFromRegisters) {
        uint32_t a[4];
        for (int i = 0; i < 4; ++i)
          a[i] = uint32_t(r[ops[1].regs[size_t(i)]]);
        wgmmaMmaAsyncRegisterA(in.mmaKind, in.wgmmaN, a, r[ops[2].reg], value(ops[3]) != 0,
                               in.transB, acc.data(), site);
      } else {
        wgmmaMmaAsync(in.mmaKind, in.wgmmaN, r[ops[1].reg], r[ops[2].reg], value(ops[3]) != 0,
                      in.transA, in.transB, acc.data(), site);
      }
      for (size_t i = 0; i < acc.size(); ++i)
        r[ops[0].regs[i]] = acc[i];
      break;
    }
    case Op::WgmmaWait: {
      // The accumulators pass through the wait as its (tied) outputs.
      std::vector<uint32_t> values(r, r + numOutputs_);
      wgmmaWaitGroup(in.waitPending, values.data(), values.size(), site);
      std::copy(values.begin(), values.end(), r);
      break;
    }
    }
  }
  std::copy(r, r + numOutputs_, outputs);
}

} // namespace tegula::sim
