// PtxAsmAluTest.cpp - the simulator's PTX arithmetic, bit operations and
// conversions (simulator/PtxAsmAlu.cpp) against values worked out from the
// PTX ISA's definitions: integer edge cases, rounding modes, flush to zero,
// saturation, packed halves, and instructions it refuses by name.
#include "simulator/PtxAsm.h"
#include "tegula/dtype.h"
#include "tegula/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace tegula;
using namespace tegula::sim;
using ::testing::HasSubstr;

namespace {

/// The outputs of `body` (constraints as LLVM writes them) on `inputs`.
std::vector<uint64_t> run(const std::string &body, const std::string &constraints, std::vector<uint64_t> inputs) {
  auto program = AsmProgram::parse(body, constraints);
  EXPECT_TRUE(program->registersOnly()) << body;
  EXPECT_EQ(program->numInputs(), inputs.size()) << body;
  std::vector<uint64_t> out(program->numOutputs());
  program->run(inputs.data(), out.data(), 0);
  return out;
}

/// One 32-bit result of a two-source instruction `op $0, $1, $2`.
uint32_t binary(const std::string &op, uint32_t a, uint32_t b) {
  return uint32_t(run(op + " $0, $1, $2;", "=r,r,r", {a, b})[0]);
}
uint32_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }
float floatOf(uint64_t bits) { return std::bit_cast<float>(uint32_t(bits)); }
uint32_t f32op(const std::string &op, float a, float b) { return binary(op, bitsOf(a), bitsOf(b)); }

std::string refusal(const std::string &body, const std::string &constraints) {
  try {
    AsmProgram::parse(body, constraints);
  } catch (const Error &e) {
    return e.what();
  }
  return "(accepted)";
}

constexpr uint32_t kIntMin = 0x80000000u;

} // namespace

TEST(PtxAsmAlu, IntegerArithmeticAndItsEdgeCases) {
  EXPECT_EQ(binary("add.s32", 0x7fffffffu, 1), kIntMin); // wraps
  EXPECT_EQ(binary("add.sat.s32", 0x7fffffffu, 1), 0x7fffffffu);
  EXPECT_EQ(binary("sub.sat.s32", kIntMin, 1), kIntMin);
  EXPECT_EQ(binary("sub.u32", 1, 2), 0xffffffffu);
  EXPECT_EQ(binary("mul.lo.s32", 0x10001u, 0x10001u), 0x20001u);
  EXPECT_EQ(binary("mul.hi.u32", 0xffffffffu, 0xffffffffu), 0xfffffffeu);
  EXPECT_EQ(binary("mul.hi.s32", uint32_t(-2), 3), 0xffffffffu); // -6's high word
  EXPECT_EQ(run("mul.wide.s32 $0, $1, $2;", "=l,r,r", {uint32_t(-3), 5})[0], uint64_t(-15));
  EXPECT_EQ(run("mul.wide.u32 $0, $1, $2;", "=l,r,r", {0xffffffffu, 2})[0], 0x1fffffffeull);
  EXPECT_EQ(run("mad.lo.s32 $0, $1, $2, $3;", "=r,r,r,r", {7, 6, uint32_t(-2)})[0], 40u);
  EXPECT_EQ(run("mad.wide.u32 $0, $1, $2, $3;", "=l,r,r,l", {0x80000000u, 4, 1})[0], 0x200000001ull);
  EXPECT_EQ(run("mul.hi.u64 $0, $1, $2;", "=l,l,l", {~0ull, ~0ull})[0], ~0ull - 1);
  // Division: the GPU's answers, which the DSL defines too.
  EXPECT_EQ(binary("div.s32", uint32_t(-7), 2), uint32_t(-3)); // truncates
  EXPECT_EQ(binary("rem.s32", uint32_t(-7), 2), uint32_t(-1));
  EXPECT_EQ(binary("div.u32", 5, 0), 0xffffffffu);
  EXPECT_EQ(binary("div.s32", 5, 0), 0xffffffffu);
  EXPECT_EQ(binary("rem.u32", 5, 0), 5u);
  EXPECT_EQ(binary("div.s32", kIntMin, uint32_t(-1)), kIntMin);
  EXPECT_EQ(binary("rem.s32", kIntMin, uint32_t(-1)), 0u);
  EXPECT_EQ(uint32_t(run("neg.s32 $0, $1;", "=r,r", {5})[0]), uint32_t(-5));
  EXPECT_EQ(uint32_t(run("abs.s32 $0, $1;", "=r,r", {uint32_t(-9)})[0]), 9u);
  EXPECT_EQ(uint32_t(run("abs.s32 $0, $1;", "=r,r", {kIntMin})[0]), kIntMin);
  EXPECT_EQ(run("add.s16 $0, $1, $2;", "=h,h,h", {0x7fff, 1})[0], 0x8000u); // 16 bits wrap
}

TEST(PtxAsmAlu, ShiftsClampTheirCountAndFunnelShiftsJoinTwoWords) {
  EXPECT_EQ(binary("shl.b32", 1, 31), kIntMin);
  EXPECT_EQ(binary("shl.b32", 1, 32), 0u);
  EXPECT_EQ(binary("shl.b32", 1, 1000), 0u);
  EXPECT_EQ(binary("shr.u32", kIntMin, 31), 1u);
  EXPECT_EQ(binary("shr.u32", kIntMin, 32), 0u);
  EXPECT_EQ(binary("shr.s32", kIntMin, 4), 0xf8000000u);
  EXPECT_EQ(binary("shr.s32", kIntMin, 40), 0xffffffffu); // the sign fills
  EXPECT_EQ(binary("shr.b32", kIntMin, 4), 0x08000000u);  // .b is logical
  auto shf = [](const std::string &op, uint32_t lo, uint32_t hi, uint32_t n) {
    return uint32_t(run(op + " $0, $1, $2, $3;", "=r,r,r,r", {lo, hi, n})[0]);
  };
  EXPECT_EQ(shf("shf.l.wrap.b32", 0x80000001u, 0x00000001u, 4), 0x18u);        // hi << 4 | lo >> 28
  EXPECT_EQ(shf("shf.r.wrap.b32", 0x80000001u, 0x00000001u, 4), 0x18000000u);  // lo >> 4 | hi << 28
  EXPECT_EQ(shf("shf.l.wrap.b32", 0x12345678u, 0x9abcdef0u, 36), shf("shf.l.wrap.b32", 0x12345678u, 0x9abcdef0u, 4));
  EXPECT_EQ(shf("shf.l.clamp.b32", 0x12345678u, 0x9abcdef0u, 36), 0x12345678u); // clamped to 32: lo
  EXPECT_EQ(shf("shf.r.clamp.b32", 0x12345678u, 0x9abcdef0u, 40), 0x9abcdef0u); // clamped to 32: hi
  // The rotate idiom: both words the same.
  EXPECT_EQ(shf("shf.l.wrap.b32", 0xf000000fu, 0xf000000fu, 8), 0x00000ff0u);
}

TEST(PtxAsmAlu, BitOperations) {
  EXPECT_EQ(binary("and.b32", 0xff00ff00u, 0x0ff00ff0u), 0x0f000f00u);
  EXPECT_EQ(binary("or.b32", 0xff00ff00u, 0x0ff00ff0u), 0xfff0fff0u);
  EXPECT_EQ(binary("xor.b32", 0xff00ff00u, 0x0ff00ff0u), 0xf0f0f0f0u);
  EXPECT_EQ(uint32_t(run("not.b32 $0, $1;", "=r,r", {0x0000ffffu})[0]), 0xffff0000u);
  EXPECT_EQ(uint32_t(run("cnot.b32 $0, $1;", "=r,r", {0})[0]), 1u);
  EXPECT_EQ(uint32_t(run("cnot.b32 $0, $1;", "=r,r", {42})[0]), 0u);
  // lop3's table: (a & b) | c is F(0xF0, 0xCC, 0xAA) = 0xEA; a ^ b ^ c is 0x96.
  auto lop3 = [](uint32_t a, uint32_t b, uint32_t c, int lut) {
    return uint32_t(run("lop3.b32 $0, $1, $2, $3, " + std::to_string(lut) + ";", "=r,r,r,r", {a, b, c})[0]);
  };
  for (auto [a, b, c] : {std::tuple{0x12345678u, 0x0f0f0f0fu, 0x80000001u}, std::tuple{~0u, 0u, 0x5555aaaau}}) {
    EXPECT_EQ(lop3(a, b, c, 0xEA), (a & b) | c);
    EXPECT_EQ(lop3(a, b, c, 0x96), a ^ b ^ c);
    EXPECT_EQ(lop3(a, b, c, 0xF0), a);
  }
  EXPECT_EQ(uint32_t(run("popc.b32 $0, $1;", "=r,r", {0xf0f0000fu})[0]), 12u);
  EXPECT_EQ(uint32_t(run("popc.b64 $0, $1;", "=r,l", {~0ull})[0]), 64u);
  EXPECT_EQ(uint32_t(run("clz.b32 $0, $1;", "=r,r", {0x00010000u})[0]), 15u);
  EXPECT_EQ(uint32_t(run("clz.b32 $0, $1;", "=r,r", {0})[0]), 32u);
  EXPECT_EQ(uint32_t(run("clz.b64 $0, $1;", "=r,l", {1})[0]), 63u);
  EXPECT_EQ(uint32_t(run("brev.b32 $0, $1;", "=r,r", {0x00000001u})[0]), kIntMin);
  EXPECT_EQ(uint32_t(run("brev.b32 $0, $1;", "=r,r", {0x12345678u})[0]), 0x1e6a2c48u);
  // bfe: 8 bits from bit 4, zero- or sign-filled; bfi puts 8 bits at bit 4.
  EXPECT_EQ(uint32_t(run("bfe.u32 $0, $1, 4, 8;", "=r,r", {0x00000ff0u})[0]), 0xffu);
  EXPECT_EQ(uint32_t(run("bfe.s32 $0, $1, 4, 8;", "=r,r", {0x00000ff0u})[0]), 0xffffffffu);
  EXPECT_EQ(uint32_t(run("bfe.s32 $0, $1, 4, 8;", "=r,r", {0x000007f0u})[0]), 0x7fu);
  EXPECT_EQ(uint32_t(run("bfe.u32 $0, $1, 40, 8;", "=r,r", {~0u})[0]), 0u); // past the word
  EXPECT_EQ(uint32_t(run("bfe.s32 $0, $1, 28, 8;", "=r,r", {0x80000000u})[0]), 0xfffffff8u);
  EXPECT_EQ(uint32_t(run("bfi.b32 $0, $1, $2, 4, 8;", "=r,r,r", {0xabu, 0xffffffffu})[0]), 0xfffffabfu);
  // prmt: bytes of {b, a} picked by nibbles; 0x0123 reverses a's bytes;
  // selector bit 3 replicates the picked byte's sign.
  auto prmt = [](uint32_t a, uint32_t b, uint32_t c) {
    return uint32_t(run("prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", {a, b, c})[0]);
  };
  EXPECT_EQ(prmt(0x11223344u, 0, 0x0123u), 0x44332211u);
  EXPECT_EQ(prmt(0x11223344u, 0xaabbccddu, 0x7654u), 0xaabbccddu);
  EXPECT_EQ(prmt(0x11223344u, 0xaabbccddu, 0x5140u), 0xcc33dd44u);
  EXPECT_EQ(prmt(0x00000080u, 0, 0x8880u), 0xffffff80u);
  // selp and predicates.
  EXPECT_EQ(uint32_t(run("selp.b32 $0, $1, $2, $3;", "=r,r,r,b", {7, 9, 1})[0]), 7u);
  EXPECT_EQ(uint32_t(run("selp.b32 $0, $1, $2, $3;", "=r,r,r,b", {7, 9, 0})[0]), 9u);
  EXPECT_EQ(run("{ .reg .pred %p, %q; setp.lt.s32 %p, $1, 0; not.pred %q, %p; selp.u32 $0, 1, 0, %q; }",
                "=r,r", {uint32_t(-4)})[0],
            0u);
}

TEST(PtxAsmAlu, FloatArithmeticRoundsAsItsModeSays) {
  // 1 + 2^-24 is a tie between 1 and 1 + 2^-23: nearest-even gives 1, up gives the next.
  const float one = 1.0f, tiny = std::ldexp(1.0f, -24);
  EXPECT_EQ(f32op("add.rn.f32", one, tiny), bitsOf(1.0f));
  EXPECT_EQ(f32op("add.rp.f32", one, tiny), bitsOf(std::nextafter(1.0f, 2.0f)));
  EXPECT_EQ(f32op("add.rz.f32", -one, -tiny), bitsOf(-1.0f));
  EXPECT_EQ(f32op("add.rm.f32", -one, -tiny), bitsOf(std::nextafter(-1.0f, -2.0f)));
  EXPECT_EQ(f32op("add.f32", 0.1f, 0.2f), bitsOf(0.1f + 0.2f));
  EXPECT_EQ(f32op("sub.f32", 0.1f, 0.2f), bitsOf(0.1f - 0.2f));
  EXPECT_EQ(f32op("mul.rn.f32", 1.1f, 3.3f), bitsOf(1.1f * 3.3f));
  EXPECT_EQ(f32op("div.rn.f32", 1.0f, 3.0f), bitsOf(1.0f / 3.0f));
  EXPECT_EQ(f32op("div.full.f32", 7.0f, 2.0f), bitsOf(3.5f));
  // fma rounds once: a * b - round(a * b) is the product's rounding error.
  const float a = 1.0f + std::ldexp(1.0f, -12), p = a * a;
  EXPECT_EQ(floatOf(run("fma.rn.f32 $0, $1, $2, $3;", "=f,f,f,f", {bitsOf(a), bitsOf(a), bitsOf(-p)})[0]),
            std::fma(a, a, -p));
  EXPECT_NE(std::fma(a, a, -p), 0.0f);
  EXPECT_EQ(floatOf(run("neg.f32 $0, $1;", "=f,f", {bitsOf(2.5f)})[0]), -2.5f);
  EXPECT_EQ(floatOf(run("abs.f32 $0, $1;", "=f,f", {bitsOf(-2.5f)})[0]), 2.5f);
  // .ftz flushes subnormal operands and results; .sat clamps to [0, 1], NaN to 0.
  const float sub = std::numeric_limits<float>::denorm_min() * 8;
  EXPECT_EQ(f32op("add.f32", sub, sub), bitsOf(sub * 2));
  EXPECT_EQ(f32op("add.ftz.f32", sub, sub), 0u);
  EXPECT_EQ(f32op("mul.ftz.f32", -1e-30f, 1e-10f), 0x80000000u); // -0: the sign kept
  EXPECT_EQ(f32op("add.sat.f32", 0.75f, 0.5f), bitsOf(1.0f));
  EXPECT_EQ(f32op("add.sat.f32", -0.75f, 0.5f), 0u);
  EXPECT_EQ(f32op("mul.sat.f32", NAN, 1.0f), 0u);
  EXPECT_EQ(f32op("add.f32", NAN, 1.0f), 0x7fffffffu); // the canonical NaN
  // Doubles.
  auto f64 = [](const std::string &op, double x, double y) {
    return std::bit_cast<double>(run(op + " $0, $1, $2;", "=d,d,d",
                                     {std::bit_cast<uint64_t>(x), std::bit_cast<uint64_t>(y)})[0]);
  };
  EXPECT_EQ(f64("div.rn.f64", 1.0, 3.0), 1.0 / 3.0);
  EXPECT_EQ(f64("add.rn.f64", 0.1, 0.2), 0.1 + 0.2);
}

TEST(PtxAsmAlu, HalvesAndPackedPairs) {
  auto half = [](float f) { return uint64_t(float16(f).bits); };
  auto bf = [](float f) { return uint64_t(bfloat16(f).bits); };
  EXPECT_EQ(run("add.f16 $0, $1, $2;", "=h,h,h", {half(1.5f), half(2.25f)})[0], half(3.75f));
  EXPECT_EQ(run("mul.rn.bf16 $0, $1, $2;", "=h,h,h", {bf(3.0f), bf(1.5f)})[0], bf(4.5f));
  EXPECT_EQ(run("fma.rn.bf16 $0, $1, $2, $3;", "=h,h,h,h", {bf(2.0f), bf(3.0f), bf(-1.0f)})[0], bf(5.0f));
  // 2048 + 1 is a tie in f16 (spacing 2 there): nearest-even stays at 2048.
  EXPECT_EQ(run("add.rn.f16 $0, $1, $2;", "=h,h,h", {half(2048.0f), half(1.0f)})[0], half(2048.0f));
  // Two halves a register: the low 16 bits are the first element.
  auto pair = [](uint64_t lo, uint64_t hi) { return lo | (hi << 16); };
  EXPECT_EQ(run("add.f16x2 $0, $1, $2;", "=r,r,r", {pair(half(1), half(10)), pair(half(2), half(20))})[0],
            pair(half(3), half(30)));
  EXPECT_EQ(run("fma.rn.bf16x2 $0, $1, $2, $3;", "=r,r,r,r",
                {pair(bf(2), bf(-1)), pair(bf(4), bf(4)), pair(bf(1), bf(1))})[0],
            pair(bf(9), bf(-3)));
  // cvt.rn.f16x2.f32 d, a, b puts a in the upper half.
  EXPECT_EQ(run("cvt.rn.f16x2.f32 $0, $1, $2;", "=r,f,f", {bitsOf(1.0f), bitsOf(-2.0f)})[0],
            pair(half(-2.0f), half(1.0f)));
  EXPECT_EQ(run("cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f", {bitsOf(3.0f), bitsOf(0.5f)})[0],
            pair(bf(0.5f), bf(3.0f)));
  // mov packs and unpacks halves, the first register lowest.
  EXPECT_EQ(run("mov.b32 $0, {$1, $2};", "=r,h,h", {0x1111, 0x2222})[0], 0x22221111u);
  EXPECT_EQ(run("mov.b32 {$0, $1}, $2;", "=h,=h,r", {0x22221111u}), (std::vector<uint64_t>{0x1111, 0x2222}));
  EXPECT_EQ(run("mov.b64 {$0, $1}, $2;", "=r,=r,l", {0x8765432112345678ull}),
            (std::vector<uint64_t>{0x12345678u, 0x87654321u}));
}

TEST(PtxAsmAlu, ConversionsRoundAndSaturate) {
  auto cvt = [](const std::string &op, const std::string &constraints, uint64_t v) {
    return run(op + " $0, $1;", constraints, {v})[0];
  };
  // Float to integer: the named rounding, saturated, NaN to 0.
  EXPECT_EQ(uint32_t(cvt("cvt.rzi.s32.f32", "=r,f", bitsOf(-2.7f))), uint32_t(-2));
  EXPECT_EQ(uint32_t(cvt("cvt.rmi.s32.f32", "=r,f", bitsOf(-2.2f))), uint32_t(-3));
  EXPECT_EQ(uint32_t(cvt("cvt.rpi.s32.f32", "=r,f", bitsOf(2.2f))), 3u);
  EXPECT_EQ(uint32_t(cvt("cvt.rni.s32.f32", "=r,f", bitsOf(2.5f))), 2u); // ties to even
  EXPECT_EQ(uint32_t(cvt("cvt.rni.s32.f32", "=r,f", bitsOf(3.5f))), 4u);
  EXPECT_EQ(uint32_t(cvt("cvt.rzi.s32.f32", "=r,f", bitsOf(3e9f))), 0x7fffffffu);
  EXPECT_EQ(uint32_t(cvt("cvt.rzi.s32.f32", "=r,f", bitsOf(-3e9f))), kIntMin);
  EXPECT_EQ(uint32_t(cvt("cvt.rzi.u32.f32", "=r,f", bitsOf(-1.0f))), 0u);
  EXPECT_EQ(uint32_t(cvt("cvt.rzi.s32.f32", "=r,f", bitsOf(NAN))), 0u);
  EXPECT_EQ(cvt("cvt.rzi.u8.f32", "=h,f", bitsOf(300.0f)), 255u);
  // Integer to float: 2^24 + 1 is not an f32; the mode picks a neighbour.
  EXPECT_EQ(floatOf(cvt("cvt.rn.f32.s32", "=f,r", (1u << 24) + 1)), 16777216.0f);
  EXPECT_EQ(floatOf(cvt("cvt.rp.f32.s32", "=f,r", (1u << 24) + 1)), 16777218.0f);
  EXPECT_EQ(floatOf(cvt("cvt.rn.f32.u32", "=f,r", 0xffffffffu)), 4294967296.0f);
  EXPECT_EQ(floatOf(cvt("cvt.rn.f32.s32", "=f,r", uint32_t(-5))), -5.0f);
  // Between floats: narrowing rounds, widening is exact; rni rounds to an integer.
  EXPECT_EQ(cvt("cvt.rn.f16.f32", "=h,f", bitsOf(65520.0f)), 0x7c00u); // past the largest half: inf
  EXPECT_EQ(cvt("cvt.rz.f16.f32", "=h,f", bitsOf(65520.0f)), 0x7bffu); // toward zero: 65504
  EXPECT_EQ(cvt("cvt.rn.bf16.f32", "=h,f", bitsOf(1.00390625f)), uint64_t(bfloat16(1.0f).bits)); // a tie, even
  EXPECT_EQ(floatOf(cvt("cvt.f32.f16", "=f,h", float16(0.333251953125f).bits)), 0.333251953125f);
  EXPECT_EQ(floatOf(cvt("cvt.f32.bf16", "=f,h", bfloat16(-1.5f).bits)), -1.5f);
  EXPECT_EQ(floatOf(cvt("cvt.rni.f32.f32", "=f,f", bitsOf(-2.5f))), -2.0f);
  EXPECT_EQ(floatOf(cvt("cvt.rmi.f32.f32", "=f,f", bitsOf(-2.5f))), -3.0f);
  EXPECT_EQ(std::bit_cast<double>(cvt("cvt.f64.f32", "=d,f", bitsOf(0.1f))), double(0.1f));
  EXPECT_EQ(floatOf(cvt("cvt.rn.f32.f64", "=f,d", std::bit_cast<uint64_t>(0.1))), 0.1f);
  // Between integers: extended by the source's sign, truncated or saturated.
  EXPECT_EQ(uint32_t(cvt("cvt.s32.s8", "=r,h", 0x80)), uint32_t(-128));
  EXPECT_EQ(uint32_t(cvt("cvt.u32.u8", "=r,h", 0x80)), 128u);
  EXPECT_EQ(cvt("cvt.u8.u32", "=h,r", 0x1234), 0x34u);
  EXPECT_EQ(cvt("cvt.sat.s8.s32", "=h,r", 1000), 127u);
  EXPECT_EQ(cvt("cvt.sat.s8.s32", "=h,r", uint32_t(-1000)), 0x80u);
  EXPECT_EQ(cvt("cvt.sat.u16.s32", "=h,r", uint32_t(-1)), 0u);
  EXPECT_EQ(cvt("cvt.s64.s32", "=l,r", uint32_t(-1)), ~0ull);
}

TEST(PtxAsmAlu, SpecialFunctionsAndFloatLiterals) {
  auto unary = [](const std::string &op, float x) {
    return floatOf(run(op + " $0, $1;", "=f,f", {bitsOf(x)})[0]);
  };
  EXPECT_EQ(unary("ex2.approx.ftz.f32", 3.0f), 8.0f);
  EXPECT_FLOAT_EQ(unary("ex2.approx.f32", 0.5f), std::sqrt(2.0f));
  EXPECT_EQ(unary("lg2.approx.f32", 1024.0f), 10.0f);
  EXPECT_EQ(unary("rcp.rn.f32", 4.0f), 0.25f);
  EXPECT_EQ(unary("rcp.rn.f32", 3.0f), 1.0f / 3.0f);
  EXPECT_EQ(unary("sqrt.rn.f32", 2.0f), std::sqrt(2.0f));
  EXPECT_EQ(unary("rsqrt.approx.f32", 16.0f), 0.25f);
  EXPECT_FLOAT_EQ(unary("sin.approx.f32", 0.5f), std::sin(0.5f));
  EXPECT_FLOAT_EQ(unary("cos.approx.f32", 0.5f), std::cos(0.5f));
  EXPECT_FLOAT_EQ(unary("tanh.approx.f32", 0.5f), std::tanh(0.5f));
  EXPECT_TRUE(std::isnan(unary("sqrt.rn.f32", -1.0f)));
  // Float immediates: 0f (f32 bits), 0d (f64 bits) and decimals, each in the
  // instruction's type.
  EXPECT_EQ(floatOf(run("add.f32 $0, $1, 0f3F800000;", "=f,f", {bitsOf(2.0f)})[0]), 3.0f);
  EXPECT_EQ(floatOf(run("mul.f32 $0, $1, 0.5;", "=f,f", {bitsOf(3.0f)})[0]), 1.5f);
  EXPECT_EQ(floatOf(run("fma.rn.f32 $0, $1, 2.0, 0d3FF0000000000000;", "=f,f", {bitsOf(3.0f)})[0]), 7.0f);
  EXPECT_EQ(floatOf(run("mov.f32 $0, 0.25;", "=f", {})[0]), 0.25f);
  EXPECT_EQ(run("add.f16 $0, $1, 0f3F800000;", "=h,h", {float16(2.0f).bits})[0], uint64_t(float16(3.0f).bits));
}

TEST(PtxAsmAlu, FloatComparisonsAreOrderedUnlessTheySayOtherwise) {
  auto setp = [](const std::string &cmp, float a, float b) {
    return run("{ .reg .pred %p; setp." + cmp + ".f32 %p, $1, $2; selp.u32 $0, 1, 0, %p; }", "=r,f,f",
               {bitsOf(a), bitsOf(b)})[0];
  };
  EXPECT_EQ(setp("ne", NAN, 1.0f), 0u); // ordered: false with a NaN, ne too
  EXPECT_EQ(setp("eq", NAN, NAN), 0u);
  EXPECT_EQ(setp("neu", NAN, 1.0f), 1u);
  EXPECT_EQ(setp("ltu", NAN, 1.0f), 1u);
  EXPECT_EQ(setp("ltu", 2.0f, 1.0f), 0u);
  EXPECT_EQ(setp("nan", 1.0f, NAN), 1u);
  EXPECT_EQ(setp("nan", 1.0f, 2.0f), 0u);
  EXPECT_EQ(setp("num", 1.0f, 2.0f), 1u);
  EXPECT_EQ(setp("num", NAN, 2.0f), 0u);
  EXPECT_EQ(setp("ne", 1.0f, 2.0f), 1u);
  EXPECT_EQ(setp("le", -0.0f, 0.0f), 1u);
  EXPECT_THAT(refusal("setp.nan.s32 %p, $0, $1;", "r,r"), HasSubstr("comparison .nan"));
}

TEST(PtxAsmAlu, WhatItDoesNotModelIsRefusedByName) {
  EXPECT_THAT(refusal("add.cc.u32 $0, $1, $2;", "=r,r,r"), HasSubstr("qualifier .cc"));
  EXPECT_THAT(refusal("lop3.b64 $0, $1, $2, $3, 0x96;", "=l,l,l,l"), HasSubstr("a .b32 instruction"));
  EXPECT_THAT(refusal("cvt.s32.f32 $0, $1;", "=r,f"), HasSubstr("names its rounding"));
  EXPECT_THAT(refusal("and.f32 $0, $1, $2;", "=f,f,f"), HasSubstr("integer or bit operation on a float"));
  EXPECT_THAT(refusal("ex2.approx.f16 $0, $1;", "=h,h"), HasSubstr("special functions are .f32"));
  EXPECT_THAT(refusal("add.u32 $0, $1;", "=r,r"), HasSubstr("2 operands, expected 3"));
  EXPECT_THAT(refusal("shl.b32 $0, $1, 1.5;", "=r,r"), HasSubstr("float literal where an integer"));
  EXPECT_THAT(refusal("max.f16x2 $0, $1, $2;", "=r,r,r"), HasSubstr("max.f16x2"));
  // A program that touches memory is not registers-only (the interpreter refuses it).
  EXPECT_FALSE(AsmProgram::parse("ld.global.b32 $0, [$1];", "=r,l")->registersOnly());
}
