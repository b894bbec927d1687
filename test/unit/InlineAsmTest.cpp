// InlineAsmTest.cpp - tl::inline_asm_elementwise: PTX of the kernel's own on
// every element, against host references on fresh random inputs in the
// interpreter and the simulator (both run the PTX with the simulator's PTX
// interpreter) and on the GPU when there is one; packed bytes and halves,
// several outputs, tiles smaller than the program, ptxas on both chips, pure
// asm dropped when unused, and its mistakes at the user's line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace tegula;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using tegula::testing::backendsWithTheGpu;

namespace {

/// Byte swap (prmt) and rotate left by a per-element count (shf, both words
/// the same), masked at the end of a ragged n.
template <int BLOCK>
void swapAndRotate(tl::ptr<int32_t> x, tl::ptr<int32_t> count, tl::ptr<int32_t> swapped, tl::ptr<int32_t> rotated,
                   tl::scalar<int32_t> n) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::tensor v = tl::load(x + offs, mask), c = tl::load(count + offs, mask);
  tl::store(swapped + offs, tl::inline_asm_elementwise("prmt.b32 $0, $1, 0, 0x0123;", "=r,r", {v}, tl::i32, true, 1),
            mask);
  tl::store(rotated + offs,
            tl::inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $1, $2;", "=r,r,r", {v, c}, tl::i32, true, 1), mask);
}

uint32_t byteSwap(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

template <int BLOCK> void checkSwapAndRotate(int n, int warps, const std::vector<Backend> &backends, const char *chip) {
  std::vector<int32_t> x(static_cast<size_t>(n)), count(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    x[size_t(i)] = int32_t(tegula::testing::rng()());
    count[size_t(i)] = int32_t(tegula::testing::rng()() % 40); // past 31: wraps
  }
  auto k = kernel("swap_and_rotate", swapAndRotate<BLOCK>, {"x", "count", "swapped", "rotated", "n"});
  for (Backend backend : backends) {
    SCOPED_TRACE(fmt::format("{} {} BLOCK {} n {} warps {}", tegula::testing::backend_name(backend), chip, BLOCK, n, warps));
    std::vector<int32_t> swapped(size_t(n) + 1, -7), rotated(size_t(n) + 1, -7);
    k({.grid = {uint32_t((n + BLOCK - 1) / BLOCK)}, .num_warps = warps, .backend = backend, .chip = chip}, x, count,
      swapped, rotated, n);
    for (int i = 0; i < n; ++i) {
      const uint32_t v = uint32_t(x[size_t(i)]), c = uint32_t(count[size_t(i)]) & 31;
      ASSERT_EQ(uint32_t(swapped[size_t(i)]), byteSwap(v)) << i;
      ASSERT_EQ(uint32_t(rotated[size_t(i)]), std::rotl(v, int(c))) << i;
    }
    EXPECT_EQ(swapped[size_t(n)], -7) << "masked off";
    EXPECT_EQ(rotated[size_t(n)], -7) << "masked off";
  }
}

/// Triton's packed example: four bytes a register, each (x & 31) << 3.
template <int BLOCK> void shiftBytes(tl::ptr<int8_t> x, tl::ptr<int8_t> y, tl::scalar<int32_t> n) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::tensor v = tl::load(x + offs, mask);
  tl::store(y + offs,
            tl::inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r", {v}, tl::i8, true, 4),
            mask);
}

template <int BLOCK> void checkShiftBytes(int n, int warps, const std::vector<Backend> &backends) {
  std::vector<int8_t> x(static_cast<size_t>(n));
  for (auto &b : x)
    b = int8_t(tegula::testing::rng()());
  auto k = kernel("shift_bytes", shiftBytes<BLOCK>, {"x", "y", "n"});
  for (Backend backend : backends) {
    SCOPED_TRACE(fmt::format("{} BLOCK {} n {} warps {}", tegula::testing::backend_name(backend), BLOCK, n, warps));
    std::vector<int8_t> y(size_t(n), 0x55);
    k({.grid = {uint32_t((n + BLOCK - 1) / BLOCK)}, .num_warps = warps, .backend = backend}, x, y, n);
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(uint8_t(y[size_t(i)]), uint8_t((uint8_t(x[size_t(i)]) & 31) << 3)) << i;
  }
}

/// Two outputs from one asm (x * x + 1 and x truncated to an integer) and
/// f16 pairs added two to a register.
void floats(tl::ptr<float> x, tl::ptr<float> square, tl::ptr<int32_t> truncated, tl::ptr<float16> a,
            tl::ptr<float16> b, tl::ptr<float16> sum) {
  tl::tensor i = tl::arange(0, 256);
  auto out = tl::inline_asm_elementwise("{ .reg .f32 t; mul.rn.f32 t, $2, $2; add.rn.f32 $0, t, 1.0; cvt.rzi.s32.f32 $1, $2; }",
                                        "=f,=r,f", {tl::load(x + i)}, {tl::f32, tl::i32}, true, 1);
  tl::store(square + i, out[0]);
  tl::store(truncated + i, out[1]);
  tl::store(sum + i, tl::inline_asm_elementwise("add.rn.f16x2 $0, $1, $2;", "=r,r,r", {tl::load(a + i), tl::load(b + i)},
                                                tl::f16, true, 2));
}

void checkFloats(const std::vector<Backend> &backends, const char *chip) {
  std::vector<float> x = tegula::testing::random_vector<float>(256, -50, 50);
  std::vector<float16> a = tegula::testing::random_vector<float16>(256), b = tegula::testing::random_vector<float16>(256);
  auto k = kernel("floats", floats, {"x", "square", "truncated", "a", "b", "sum"});
  for (Backend backend : backends) {
    SCOPED_TRACE(fmt::format("{} {}", tegula::testing::backend_name(backend), chip));
    std::vector<float> square = tegula::testing::poisoned<float>(256);
    std::vector<int32_t> truncated(256, -1);
    std::vector<float16> sum = tegula::testing::poisoned<float16>(256);
    k({.grid = {1}, .backend = backend, .chip = chip}, x, square, truncated, a, b, sum);
    for (size_t i = 0; i < 256; ++i) {
      ASSERT_EQ(square[i], x[i] * x[i] + 1.0f) << i; // .rn: two roundings, never fused into an fma
      ASSERT_EQ(truncated[i], int32_t(std::trunc(x[i]))) << i;
      ASSERT_EQ(float(sum[i]), float(float16(float(a[i]) + float(b[i])))) << i; // exact in f32, rounded once
    }
  }
}

void flags(tl::ptr<int32_t> out) {
  tl::tensor i = tl::arange(0, 64);
  // A pure asm whose result nobody uses is dropped; an impure one stays.
  (void)tl::inline_asm_elementwise("popc.b32 $0, $1;", "=r,r", {i}, tl::i32, true, 1);
  (void)tl::inline_asm_elementwise("brev.b32 $0, $1;", "=r,r", {i}, tl::i32, false, 1);
  tl::store(out + i, i);
}

} // namespace

TEST(InlineAsm, IntegerAsmMatchesTheHostOnEveryBackend) {
  auto backends = backendsWithTheGpu("tl::inline_asm_elementwise");
  checkSwapAndRotate<256>(1000, 4, backends, "");  // two elements a thread, ragged
  checkSwapAndRotate<64>(100, 4, backends, "");    // fewer elements than threads: copies
  checkSwapAndRotate<1024>(3000, 8, {Backend::Sim}, "sm_90a");
}

TEST(InlineAsm, PackedBytesGoFourToARegister) {
  auto backends = backendsWithTheGpu("packed inline asm");
  checkShiftBytes<1024>(2500, 4, backends); // 16-byte vectors: 8 bytes a thread, two registers
  checkShiftBytes<64>(50, 4, backends);     // under one byte a thread: the group padded
  checkShiftBytes<8>(7, 1, backends);
}

TEST(InlineAsm, SeveralOutputsFloatsAndPackedHalves) {
  checkFloats(backendsWithTheGpu("inline asm on floats"), "");
  checkFloats({Backend::Sim}, "sm_90a");
}

TEST(InlineAsm, PtxasAssemblesItAndPureAsmNobodyUsesIsDropped) {
  std::vector<int32_t> i32(1024);
  std::vector<int8_t> i8(1024);
  std::vector<float> f32(256);
  std::vector<float16> f16(256);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    auto swap = kernel("swap_and_rotate", swapAndRotate<256>).compile({i32, i32, i32, i32, 1000}, {.chip = chip, .assemble = false});
    EXPECT_THAT(swap.ptx, AllOf(HasSubstr("prmt.b32"), HasSubstr("shf.l.wrap.b32")));
    auto packed = kernel("shift_bytes", shiftBytes<1024>).compile({i8, i8, 1000}, {.chip = chip, .assemble = false});
    EXPECT_THAT(packed.ptx, HasSubstr("and.b32"));
    auto flt = kernel("floats", floats).compile({f32, f32, i32, f16, f16, f16}, {.chip = chip, .assemble = false});
    EXPECT_THAT(flt.ptx, AllOf(HasSubstr("cvt.rzi.s32.f32"), HasSubstr("add.rn.f16x2")));
    auto dropped = kernel("flags", flags).compile({i32}, {.chip = chip, .assemble = false});
    EXPECT_THAT(dropped.ptx, AllOf(Not(HasSubstr("popc.b32")), HasSubstr("brev.b32")));
    if (!tegula::testing::have_ptxas())
      continue;
    EXPECT_FALSE(kernel("swap_and_rotate", swapAndRotate<256>).compile({i32, i32, i32, i32, 1000}, {.chip = chip}).cubin.empty());
    EXPECT_FALSE(kernel("shift_bytes", shiftBytes<1024>).compile({i8, i8, 1000}, {.chip = chip}).cubin.empty());
    EXPECT_FALSE(kernel("floats", floats).compile({f32, f32, i32, f16, f16, f16}, {.chip = chip}).cubin.empty());
  }
  if (!tegula::testing::have_ptxas())
    std::printf("[tegula test] no ptxas: the PTX above was not assembled\n");
}

// ---- mistakes -----------------------------------------------------------

namespace {

void wrongCount(tl::ptr<int32_t> o) {
  tl::tensor i = tl::arange(0, 32);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::inline_asm_elementwise("add.s32 $0, $1, $2;", "=r,r", {i, i}, tl::i32, true, 1));
}
void badPack(tl::ptr<int32_t> o) {
  tl::tensor i = tl::arange(0, 32);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", {i}, tl::i32, true, 3));
}
void bytesUnpacked(tl::ptr<int8_t> o) {
  tl::tensor i = tl::arange(0, 32);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::inline_asm_elementwise("mov.b16 $0, $1;", "=h,h", {i.to(tl::i8)}, tl::i8, true, 1));
}
void scalarsOnly(tl::ptr<int32_t> o, tl::scalar<int32_t> s) {
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", {s}, tl::i32, true, 1));
}
void boolArgument(tl::ptr<int32_t> o) {
  tl::tensor i = tl::arange(0, 32);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", {i < 4}, tl::i32, true, 1));
}
void readsMemory(tl::ptr<int32_t> o) {
  tl::tensor i = tl::arange(0, 32);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::inline_asm_elementwise("ld.global.b32 $0, [$1];", "=r,l", {i.to(tl::i64)}, tl::i32, true, 1));
}
void unknownInstruction(tl::ptr<int32_t> o) {
  tl::tensor i = tl::arange(0, 32);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::inline_asm_elementwise("bfind.u32 $0, $1;", "=r,r", {i}, tl::i32, true, 1));
}

} // namespace

TEST(InlineAsm, MistakesAreNamedAtTheUsersLine) {
  using tegula::testing::errorOf;
  using tegula::testing::expectAtMarkedLine;
  std::vector<int32_t> o(32);
  std::vector<int8_t> b(32);
  const std::string file = "InlineAsmTest.cpp";
  expectAtMarkedLine(errorOf(kernel("k", wrongCount), {o}), file,
                     "the constraints \"=r,r\" name 1 output(s) and 1 input(s), but there are 1 result type(s) and 2 "
                     "argument(s)");
  expectAtMarkedLine(errorOf(kernel("k", badPack), {o}), file, "pack is a power of two (elements per register), got 3");
  expectAtMarkedLine(errorOf(kernel("k", bytesUnpacked), {b}), file,
                     "argument 0 (i8) at pack 1 fills 8 bits, but a register holds 16, 32 or 64: pack 4 fills 32");
  expectAtMarkedLine(errorOf(kernel("k", scalarsOnly), {o, 1}), file, "every argument is a scalar");
  expectAtMarkedLine(errorOf(kernel("k", boolArgument), {o}), file, "argument 0 is a bool tile");
  // PTX the interpreter cannot run: named, with the line (the kernel traced fine).
  int line = 0;
  {
    std::string err = errorOf(kernel("k", readsMemory), {o});
    EXPECT_THAT(err, AllOf(HasSubstr("reads or writes memory or meets other threads"),
                           HasSubstr("run the kernel with the simulator"), HasSubstr(file + ":")));
    line = tegula::testing::g_line;
    EXPECT_THAT(err, HasSubstr(fmt::format("{}:{}", file, line)));
  }
  for (Backend backend : {Backend::Interp, Backend::Sim}) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::string err = tegula::testing::error_of(
        [&] { kernel("k", unknownInstruction)({.grid = {1}, .backend = backend}, o); });
    EXPECT_THAT(err, AllOf(HasSubstr("inline PTX not supported: instruction 'bfind.u32'"), HasSubstr(file + ":")));
  }
}
