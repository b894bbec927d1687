//===- PtxAsmAlu.cpp - PTX's arithmetic, logic and conversions ------------===//
#include "simulator/PtxAsmAlu.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APSInt.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tegula::sim::ptx {

namespace {

using Instruction = AsmProgram::Instruction;
using llvm::APFloat;

uint64_t maskTo(uint64_t v, unsigned bits) { return bits >= 64 ? v : v & ((uint64_t(1) << bits) - 1); }
int64_t signedOf(uint64_t v, unsigned bits) {
  return bits >= 64 ? int64_t(v) : int64_t(v << (64 - bits)) >> (64 - bits);
}

const std::map<std::string, Alu> &aluNames() {
  static const std::map<std::string, Alu> names = {
      {"add", Alu::Add},   {"sub", Alu::Sub},     {"mul", Alu::Mul},   {"mad", Alu::Mad},   {"fma", Alu::Fma},
      {"div", Alu::Div},   {"rem", Alu::Rem},     {"neg", Alu::Neg},   {"abs", Alu::Abs},   {"and", Alu::And},
      {"or", Alu::Or},     {"xor", Alu::Xor},     {"not", Alu::Not},   {"cnot", Alu::CNot}, {"shl", Alu::Shl},
      {"shr", Alu::Shr},   {"shf", Alu::Shf},     {"lop3", Alu::Lop3}, {"bfe", Alu::Bfe},   {"bfi", Alu::Bfi},
      {"prmt", Alu::Prmt}, {"selp", Alu::Selp},   {"popc", Alu::Popc}, {"clz", Alu::Clz},   {"brev", Alu::Brev},
      {"cvt", Alu::Cvt},   {"rcp", Alu::Rcp},     {"sqrt", Alu::Sqrt}, {"rsqrt", Alu::Rsqrt}, {"ex2", Alu::Ex2},
      {"lg2", Alu::Lg2},   {"sin", Alu::Sin},     {"cos", Alu::Cos},   {"tanh", Alu::Tanh}};
  return names;
}

//===----------------------------------------------------------------------===//
// Floats
//===----------------------------------------------------------------------===//

const llvm::fltSemantics &semanticsOf(unsigned bits, bool bfloat) {
  if (bits == 16)
    return bfloat ? APFloat::BFloat() : APFloat::IEEEhalf();
  return bits == 32 ? APFloat::IEEEsingle() : APFloat::IEEEdouble();
}

APFloat::roundingMode modeOf(Rounding r) {
  switch (r) {
  case Rounding::Rz: case Rounding::Rzi: return APFloat::rmTowardZero;
  case Rounding::Rm: case Rounding::Rmi: return APFloat::rmTowardNegative;
  case Rounding::Rp: case Rounding::Rpi: return APFloat::rmTowardPositive;
  default: return APFloat::rmNearestTiesToEven;
  }
}

bool integerRounding(Rounding r) {
  return r == Rounding::Rni || r == Rounding::Rzi || r == Rounding::Rmi || r == Rounding::Rpi;
}

APFloat flushed(APFloat f, bool ftz) {
  if (ftz && f.isDenormal())
    return APFloat::getZero(f.getSemantics(), f.isNegative());
  return f;
}

APFloat floatOf(uint64_t v, unsigned bits, bool bfloat, bool ftz) {
  return flushed(APFloat(semanticsOf(bits, bfloat), llvm::APInt(bits, maskTo(v, bits))), ftz);
}

/// A result's bits: flushed with .ftz, clamped to [0, 1] with .sat (NaN gives
/// +0), a NaN of 16 or 32 bits the canonical one the GPU returns.
uint64_t bitsOf(APFloat f, const Instruction &in) {
  f = flushed(f, in.ftz);
  const auto &sem = f.getSemantics();
  if (in.saturate) {
    APFloat one(sem, 1);
    if (f.isNaN() || (f.isNegative() && !f.isZero()))
      f = APFloat::getZero(sem);
    else if (f.compare(one) == APFloat::cmpGreaterThan)
      f = one;
  }
  if (f.isNaN() && &sem != &APFloat::IEEEdouble())
    return &sem == &APFloat::IEEEsingle() ? 0x7fffffffu : 0x7fffu;
  return f.bitcastToAPInt().getZExtValue();
}

/// `d` rounded to the nearest float of `sem` (the special functions compute
/// in double: correctly rounded where the GPU approximates).
APFloat nearest(double d, const llvm::fltSemantics &sem) {
  APFloat f(d);
  bool lost;
  f.convert(sem, APFloat::rmNearestTiesToEven, &lost);
  return f;
}

/// One float lane (16, 32 or 64 bits) of an arithmetic instruction.
uint64_t floatLane(const Instruction &in, uint64_t a, uint64_t b, uint64_t c) {
  const unsigned bits = in.bits;
  const auto &sem = semanticsOf(bits, in.bfloat);
  const auto rm = modeOf(in.rounding);
  APFloat x = floatOf(a, bits, in.bfloat, in.ftz);
  auto y = [&] { return floatOf(b, bits, in.bfloat, in.ftz); };
  double xd = x.convertToDouble();
  switch (in.alu) {
  case Alu::Add: x.add(y(), rm); break;
  case Alu::Sub: x.subtract(y(), rm); break;
  case Alu::Mul: x.multiply(y(), rm); break;
  case Alu::Mad:
  case Alu::Fma: x.fusedMultiplyAdd(y(), floatOf(c, bits, in.bfloat, in.ftz), rm); break;
  case Alu::Div: x.divide(y(), rm); break;
  case Alu::Neg: x.changeSign(); break;
  case Alu::Abs: x.clearSign(); break;
  case Alu::Rcp:
    x = bits == 64 ? APFloat(1.0 / xd) : nearest(1.0 / xd, sem);
    break;
  case Alu::Sqrt: x = nearest(std::sqrt(xd), sem); break;
  case Alu::Rsqrt: x = nearest(1.0 / std::sqrt(xd), sem); break;
  case Alu::Ex2: x = nearest(std::exp2(xd), sem); break;
  case Alu::Lg2: x = nearest(std::log2(xd), sem); break;
  case Alu::Sin: x = nearest(std::sin(xd), sem); break;
  case Alu::Cos: x = nearest(std::cos(xd), sem); break;
  case Alu::Tanh: x = nearest(std::tanh(xd), sem); break;
  default: break;
  }
  return bitsOf(x, in);
}

/// A float instruction on one lane, or on both halves of a .f16x2/.bf16x2.
uint64_t floatOp(const Instruction &in, uint64_t a, uint64_t b, uint64_t c) {
  if (!in.pair)
    return floatLane(in, a, b, c);
  uint64_t lo = floatLane(in, a & 0xffff, b & 0xffff, c & 0xffff);
  uint64_t hi = floatLane(in, (a >> 16) & 0xffff, (b >> 16) & 0xffff, (c >> 16) & 0xffff);
  return lo | (hi << 16);
}

//===----------------------------------------------------------------------===//
// cvt
//===----------------------------------------------------------------------===//

/// `x` (integral already) as an integer of `bits`, saturated as PTX's
/// float-to-integer conversions always are; NaN gives 0.
uint64_t saturatedInteger(const APFloat &x, bool isSigned, unsigned bits) {
  if (x.isNaN())
    return 0;
  llvm::APSInt v(bits, !isSigned);
  bool exact;
  if (x.convertToInteger(v, APFloat::rmTowardZero, &exact) & APFloat::opInvalidOp)
    v = x.isNegative() ? llvm::APSInt::getMinValue(bits, !isSigned) : llvm::APSInt::getMaxValue(bits, !isSigned);
  return maskTo(v.getZExtValue(), bits);
}

uint64_t convert(const Instruction &in, uint64_t a) {
  const bool fromFloat = in.srcKind == Kind::Float, toFloat = in.kind == Kind::Float;
  const auto rm = modeOf(in.rounding);
  if (fromFloat) {
    APFloat x = floatOf(a, in.srcBits, in.srcBfloat, in.ftz);
    if (integerRounding(in.rounding))
      x.roundToIntegral(rm);
    if (!toFloat)
      return saturatedInteger(x, in.kind == Kind::Signed, in.bits);
    bool lost;
    x.convert(semanticsOf(in.bits, in.bfloat), rm, &lost);
    return bitsOf(x, in);
  }
  const bool srcSigned = in.srcKind == Kind::Signed;
  if (toFloat) {
    APFloat x(semanticsOf(in.bits, in.bfloat));
    x.convertFromAPInt(llvm::APInt(in.srcBits, maskTo(a, in.srcBits)), srcSigned, rm);
    return bitsOf(x, in);
  }
  // Integer to integer: extended by the source's signedness, then truncated
  // or, with .sat, clamped to the destination's range.
  if (in.saturate) {
    const bool dstSigned = in.kind == Kind::Signed;
    __int128 v = srcSigned ? __int128(signedOf(a, in.srcBits)) : __int128(maskTo(a, in.srcBits));
    __int128 lo = dstSigned ? -(__int128(1) << (in.bits - 1)) : 0;
    __int128 hi = dstSigned ? (__int128(1) << (in.bits - 1)) - 1 : (__int128(1) << in.bits) - 1;
    return maskTo(uint64_t(std::clamp(v, lo, hi)), in.bits);
  }
  uint64_t v = srcSigned ? uint64_t(signedOf(a, in.srcBits)) : maskTo(a, in.srcBits);
  return maskTo(v, in.bits);
}

//===----------------------------------------------------------------------===//
// Integers and bits
//===----------------------------------------------------------------------===//

uint64_t product(const Instruction &in, uint64_t a, uint64_t b) {
  const unsigned n = in.bits;
  const bool s = in.kind == Kind::Signed;
  unsigned __int128 p = s ? (unsigned __int128)(__int128(signedOf(a, n)) * __int128(signedOf(b, n)))
                          : (unsigned __int128)maskTo(a, n) * maskTo(b, n);
  switch (in.part) {
  case Part::Lo: return maskTo(uint64_t(p), n);
  case Part::Hi: return maskTo(uint64_t(p >> n), n);
  case Part::Wide: return maskTo(uint64_t(p), 2 * n);
  }
  return 0;
}

uint64_t integerOp(const Instruction &in, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  const unsigned n = in.bits;
  const bool s = in.kind == Kind::Signed;
  const int64_t sa = signedOf(a, n), sb = signedOf(b, n);
  const uint64_t ua = maskTo(a, n), ub = maskTo(b, n);
  switch (in.alu) {
  case Alu::Add:
  case Alu::Sub: {
    if (in.saturate) { // add.sat.s32 / sub.sat.s32
      int64_t v = in.alu == Alu::Add ? sa + sb : sa - sb;
      return maskTo(uint64_t(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX)), n);
    }
    return maskTo(in.alu == Alu::Add ? a + b : a - b, n);
  }
  case Alu::Mul: return product(in, a, b);
  case Alu::Mad: return maskTo(product(in, a, b) + c, in.part == Part::Wide ? 2 * n : n);
  case Alu::Div:
    if (ub == 0)
      return maskTo(~uint64_t(0), n); // the GPU's (and the DSL's) x / 0
    if (!s)
      return ua / ub;
    if (sb == -1)
      return maskTo(uint64_t(0) - uint64_t(sa), n); // INT_MIN / -1 = INT_MIN
    return maskTo(uint64_t(sa / sb), n);
  case Alu::Rem:
    if (ub == 0)
      return ua;
    if (!s)
      return ua % ub;
    return sb == -1 ? 0 : maskTo(uint64_t(sa % sb), n);
  case Alu::Neg: return maskTo(uint64_t(0) - ua, n);
  case Alu::Abs: return maskTo(sa < 0 ? uint64_t(0) - uint64_t(sa) : uint64_t(sa), n);
  case Alu::And: return ua & ub;
  case Alu::Or: return ua | ub;
  case Alu::Xor: return ua ^ ub;
  case Alu::Not: return maskTo(~ua, n);
  case Alu::CNot: return ua == 0;
  case Alu::Shl: return maskTo(uint32_t(b) >= n ? 0 : ua << uint32_t(b), n);
  case Alu::Shr:
    if (s)
      return maskTo(uint64_t(sa >> std::min<uint32_t>(uint32_t(b), n - 1)), n);
    return uint32_t(b) >= n ? 0 : ua >> uint32_t(b);
  case Alu::Shf: { // shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: {b, a} shifted by c
    uint32_t count = in.wrap ? uint32_t(c) & 31 : std::min<uint32_t>(uint32_t(c), 32);
    uint64_t wide = (maskTo(b, 32) << 32) | maskTo(a, 32);
    return in.shiftLeft ? maskTo((wide << count) >> 32, 32) : maskTo(wide >> count, 32);
  }
  case Alu::Lop3: { // d's bit i = lut[(a_i << 2) | (b_i << 1) | c_i]
    uint64_t out = 0;
    for (unsigned i = 0; i < 32; ++i) {
      unsigned index = unsigned(((a >> i) & 1) << 2 | ((b >> i) & 1) << 1 | ((c >> i) & 1));
      out |= ((d >> index) & 1) << i;
    }
    return out;
  }
  case Alu::Bfe: { // d = len bits of a from pos, sign-filled for .s
    const unsigned pos = unsigned(b & 0xff), len = unsigned(c & 0xff), msb = n - 1;
    const uint64_t sbit = (!s || len == 0) ? 0 : (ua >> std::min(pos + len - 1, msb)) & 1;
    uint64_t out = 0;
    for (unsigned i = 0; i <= msb; ++i) {
      uint64_t bit = (i < len && pos + i <= msb) ? (ua >> (pos + i)) & 1 : sbit;
      out |= bit << i;
    }
    return out;
  }
  case Alu::Bfi: { // bfi d, a, b, c(pos), d(len): b with len bits of a at pos
    const unsigned pos = unsigned(c & 0xff), len = unsigned(d & 0xff);
    uint64_t out = ub;
    for (unsigned i = 0; i < len && pos + i < n; ++i)
      out = (out & ~(uint64_t(1) << (pos + i))) | (((ua >> i) & 1) << (pos + i));
    return out;
  }
  case Alu::Prmt: { // bytes of {b, a} picked by c's four selector nibbles
    const uint64_t bytes = (maskTo(b, 32) << 32) | maskTo(a, 32);
    uint64_t out = 0;
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned sel = unsigned(c >> (4 * i)) & 0xf;
      uint64_t byte = (bytes >> (8 * (sel & 7))) & 0xff;
      if (sel & 8)
        byte = (byte & 0x80) ? 0xff : 0;
      out |= byte << (8 * i);
    }
    return out;
  }
  case Alu::Popc: return uint64_t(std::popcount(ua));
  case Alu::Clz: return uint64_t(std::countl_zero(ua) - (64 - int(n)));
  case Alu::Brev: {
    uint64_t out = 0;
    for (unsigned i = 0; i < n; ++i)
      out |= ((ua >> i) & 1) << (n - 1 - i);
    return out;
  }
  default: return 0;
  }
}

bool floatOnly(Alu a) {
  return a == Alu::Fma || a == Alu::Rcp || a == Alu::Sqrt || a == Alu::Rsqrt || a == Alu::Ex2 || a == Alu::Lg2 ||
         a == Alu::Sin || a == Alu::Cos || a == Alu::Tanh;
}
bool bitsOnly(Alu a) {
  return a == Alu::Rem || a == Alu::And || a == Alu::Or || a == Alu::Xor || a == Alu::Not || a == Alu::CNot ||
         a == Alu::Shl || a == Alu::Shr || a == Alu::Shf || a == Alu::Lop3 || a == Alu::Bfe || a == Alu::Bfi ||
         a == Alu::Prmt || a == Alu::Popc || a == Alu::Clz || a == Alu::Brev;
}

size_t operandCount(const Instruction &in) {
  switch (in.alu) {
  case Alu::Neg: case Alu::Abs: case Alu::Not: case Alu::CNot: case Alu::Popc: case Alu::Clz: case Alu::Brev:
  case Alu::Rcp: case Alu::Sqrt: case Alu::Rsqrt: case Alu::Ex2: case Alu::Lg2: case Alu::Sin: case Alu::Cos:
  case Alu::Tanh:
    return 2;
  case Alu::Cvt: return in.pair ? 3 : 2;
  case Alu::Mad: case Alu::Fma: case Alu::Selp: case Alu::Prmt: case Alu::Bfe: case Alu::Shf: return 4;
  case Alu::Lop3: case Alu::Bfi: return 5;
  default: return 3;
  }
}

} // namespace

bool isAluName(const std::string &name) { return aluNames().count(name) != 0; }

void parseAlu(const std::vector<std::string> &parts, std::vector<Operand> operands, Instruction &in,
              const std::function<void(const std::string &)> &unsupported) {
  const std::string opcode = fmt::format("{}", fmt::join(parts, "."));
  auto refuse = [&](const std::string &why) {
    unsupported(fmt::format("'{}' ({})", opcode, why));
    std::abort(); // unsupported throws
  };
  in.op = Op::Alu;
  in.alu = aluNames().at(parts[0]);
  struct Type {
    Kind kind;
    unsigned bits;
    bool bfloat, pair;
  };
  std::vector<Type> types;
  static const std::map<std::string, Rounding> roundings = {
      {"rn", Rounding::Rn},   {"rz", Rounding::Rz},   {"rm", Rounding::Rm},   {"rp", Rounding::Rp},
      {"rni", Rounding::Rni}, {"rzi", Rounding::Rzi}, {"rmi", Rounding::Rmi}, {"rpi", Rounding::Rpi},
      {"approx", Rounding::Approx}, {"full", Rounding::Full}};
  bool sawShift = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string &q = parts[i];
    if (auto r = roundings.find(q); r != roundings.end()) {
      in.rounding = r->second;
    } else if (q == "ftz") {
      in.ftz = true;
    } else if (q == "sat") {
      in.saturate = true;
    } else if (q == "lo" || q == "hi" || q == "wide") {
      in.part = q == "lo" ? Part::Lo : q == "hi" ? Part::Hi : Part::Wide;
    } else if (in.alu == Alu::Shf && (q == "l" || q == "r")) {
      in.shiftLeft = q == "l";
      sawShift = true;
    } else if (in.alu == Alu::Shf && (q == "wrap" || q == "clamp")) {
      in.wrap = q == "wrap";
    } else if (q == "pred") {
      types.push_back({Kind::Bits, 1, false, false});
    } else if (q == "f16x2" || q == "bf16x2") {
      types.push_back({Kind::Float, 16, q == "bf16x2", true});
    } else if (q == "bf16") {
      types.push_back({Kind::Float, 16, true, false});
    } else if (q.size() >= 2 && std::string("bsuf").find(q[0]) != std::string::npos &&
               (q.substr(1) == "8" || q.substr(1) == "16" || q.substr(1) == "32" || q.substr(1) == "64")) {
      Kind k = q[0] == 'b' ? Kind::Bits : q[0] == 's' ? Kind::Signed : q[0] == 'u' ? Kind::Unsigned : Kind::Float;
      unsigned bits = unsigned(std::stoul(q.substr(1)));
      if (k == Kind::Float && bits == 8)
        refuse("no such type .f8");
      types.push_back({k, bits, false, false});
    } else {
      refuse(fmt::format("qualifier .{}", q));
    }
  }
  if (types.size() != (in.alu == Alu::Cvt ? 2u : 1u))
    refuse(in.alu == Alu::Cvt ? "cvt names a destination and a source type" : "one type");
  in.kind = types[0].kind, in.bits = types[0].bits, in.bfloat = types[0].bfloat, in.pair = types[0].pair;
  if (in.alu == Alu::Cvt) {
    in.srcKind = types[1].kind, in.srcBits = types[1].bits, in.srcBfloat = types[1].bfloat;
    if (types[1].pair || (in.pair && !(in.srcKind == Kind::Float && in.srcBits == 32)))
      refuse("a .f16x2/.bf16x2 cvt packs two f32 sources");
    if (in.kind == Kind::Bits || in.srcKind == Kind::Bits || in.bits == 1 || in.srcBits == 1)
      refuse("cvt converts between .s, .u and .f types");
    if (in.srcKind == Kind::Float && in.kind != Kind::Float && !integerRounding(in.rounding))
      refuse("a float-to-integer cvt names its rounding: .rni, .rzi, .rmi or .rpi");
  }
  const bool isFloat = in.kind == Kind::Float;
  if (in.bits == 1 && !(in.alu == Alu::And || in.alu == Alu::Or || in.alu == Alu::Xor || in.alu == Alu::Not))
    refuse(".pred is for and, or, xor and not");
  if (isFloat && in.alu != Alu::Cvt && bitsOnly(in.alu))
    refuse("an integer or bit operation on a float type");
  if (!isFloat && floatOnly(in.alu))
    refuse("a float operation on an integer type");
  if (in.pair && !(in.alu == Alu::Add || in.alu == Alu::Sub || in.alu == Alu::Mul || in.alu == Alu::Fma ||
                   in.alu == Alu::Neg || in.alu == Alu::Abs || in.alu == Alu::Cvt))
    refuse("the simulator's .f16x2/.bf16x2 instructions are add, sub, mul, fma, neg, abs and cvt");
  if (floatOnly(in.alu) && in.alu != Alu::Fma && in.bits != 32 &&
      !(in.bits == 64 && (in.alu == Alu::Rcp || in.alu == Alu::Sqrt)))
    refuse("the special functions are .f32 (rcp and sqrt also .f64)");
  if ((in.alu == Alu::Shf || in.alu == Alu::Lop3 || in.alu == Alu::Prmt) && in.bits != 32)
    refuse("a .b32 instruction");
  if (in.alu == Alu::Shf && !sawShift)
    refuse("shf names its direction: .l or .r");
  if (in.part == Part::Wide && in.bits == 64)
    refuse(".wide takes 16- or 32-bit operands");
  if (!isFloat && in.rounding != Rounding::None && in.alu != Alu::Cvt)
    refuse("a rounding mode on an integer instruction");
  if (in.saturate && !isFloat && in.alu != Alu::Cvt && !((in.alu == Alu::Add || in.alu == Alu::Sub) &&
                                                         in.kind == Kind::Signed && in.bits == 32))
    refuse("integer .sat is add.sat.s32 and sub.sat.s32");
  if (operands.size() != operandCount(in))
    refuse(fmt::format("{} operands, expected {}", operands.size(), operandCount(in)));
  if (operands[0].form != Operand::Register)
    refuse("the destination is a register");
  for (size_t i = 1; i < operands.size(); ++i) {
    Operand &o = operands[i];
    if (o.form != Operand::Register && o.form != Operand::Immediate)
      refuse("sources are registers or immediates");
    // A float literal (0f..., 0d..., or decimal, held as f32 or f64 bits)
    // takes the type of the operand it stands for.
    const bool predicate = in.alu == Alu::Selp && i == 3;
    const bool floatSource = in.alu == Alu::Cvt ? in.srcKind == Kind::Float : isFloat && !predicate;
    if (o.form == Operand::Immediate && o.floatBits != 0) {
      if (!floatSource)
        refuse("a float literal where an integer is read");
      const unsigned bits = in.alu == Alu::Cvt ? in.srcBits : in.bits;
      const bool bfloat = in.alu == Alu::Cvt ? in.srcBfloat : in.bfloat;
      APFloat f = o.floatBits == 32 ? APFloat(std::bit_cast<float>(uint32_t(o.value)))
                                    : APFloat(std::bit_cast<double>(uint64_t(o.value)));
      bool lost;
      f.convert(semanticsOf(bits, bfloat), APFloat::rmNearestTiesToEven, &lost);
      o.value = int64_t(f.bitcastToAPInt().getZExtValue());
      o.floatBits = 0;
    }
  }
  in.operands = std::move(operands);
}

void runAlu(const Instruction &in, uint64_t *r) {
  const std::vector<Operand> &ops = in.operands;
  auto value = [&](size_t i) {
    return i < ops.size() ? (ops[i].form == Operand::Register ? r[ops[i].reg] : uint64_t(ops[i].value)) : 0;
  };
  uint64_t a = value(1), b = value(2), c = value(3), d = value(4);
  uint64_t out;
  if (in.alu == Alu::Selp) {
    out = maskTo(c ? a : b, in.bits);
  } else if (in.alu == Alu::Cvt) {
    // cvt.rn.f16x2.f32 d, a, b: a's half in the upper 16 bits, b's in the lower.
    out = in.pair ? (convert(in, a) << 16) | convert(in, b) : convert(in, a);
  } else if (in.kind == Kind::Float) {
    out = floatOp(in, a, b, c);
  } else if (in.bits == 1) {
    out = integerOp(in, a, b, c, d) & 1;
  } else {
    out = integerOp(in, a, b, c, d);
  }
  r[ops[0].reg] = out;
}

} // namespace tegula::sim::ptx
