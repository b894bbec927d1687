// DslErrorTest.cpp - DSL mistakes are reported as `file:line: error: ...`
// naming the user's line; bad launch arguments name the parameter.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <array>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;
using tegula::testing::errorOf;
using tegula::testing::g_line;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

void expectAtMarkedLine(const std::string &err, const std::string &what) {
  tegula::testing::expectAtMarkedLine(err, "DslErrorTest.cpp", what);
}

std::vector<float> buf(size_t n = 1024) { return std::vector<float>(n); }

void shape_mismatch(tl::ptr<float> x) {
  tl::tensor a = tl::arange(0, 128), b = tl::arange(0, 64);
  FAILS_ON_NEXT_LINE();
  tl::store(x + (a + b), 1.0f);
}

TEST(DslErrors, ShapeMismatchNamesTheUsersLine) {
  auto x = buf();
  std::string err = errorOf(kernel("shape_mismatch", shape_mismatch), {x});
  expectAtMarkedLine(err, "shapes [128] and [64] are not compatible in operator+");
  EXPECT_THAT(err, StartsWith(__FILE__));
}

void non_power_of_two(tl::ptr<float> x) {
  FAILS_ON_NEXT_LINE();
  tl::tensor offs = tl::arange(0, 1000);
  tl::store(x + offs, 0.0f);
}

TEST(DslErrors, NonPowerOfTwoTile) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("npot", non_power_of_two), {x}),
                     "arange(0, 1000) has 1000 elements; tile extents must be powers of two");
}

void dot_dtype_mismatch(tl::ptr<bfloat16> a, tl::ptr<float> b) {
  tl::tensor r = tl::arange(0, 16).expand_dims(1) * 16 + tl::arange(0, 16).expand_dims(0);
  tl::tensor ta = tl::load(a + r), tb = tl::load(b + r);
  FAILS_ON_NEXT_LINE();
  tl::tensor c = tl::dot(ta, tb);
  (void)c;
}

TEST(DslErrors, DotDtypeMismatch) {
  std::vector<bfloat16> a(256);
  auto b = buf(256);
  expectAtMarkedLine(errorOf(kernel("dot", dot_dtype_mismatch), {a, b}),
                     "tl::dot operands must have the same element type, got bf16 and f32");
}

void escapes_loop(tl::ptr<float> x, tl::scalar<int32_t> n) {
  tl::tensor offs = tl::arange(0, 16);
  tl::tensor last;
  for (auto i : tl::range(0, n, 1)) {
    last = tl::load(x + offs + i); // assigned in the body, not carried
  }
  FAILS_ON_NEXT_LINE();
  tl::store(x + offs, last);
}

TEST(DslErrors, ValueEscapingALoopBody) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("escape", escapes_loop), {x, 4}),
                     "computed inside a tl::range loop body (line");
}

void carried_changes_type(tl::ptr<float> x, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::zeros({16}, tl::f32);
  FAILS_ON_NEXT_LINE();
  for (auto i : tl::range(0, n, 1, acc)) {
    acc = (acc + i).to(tl::bf16);
  }
  tl::store(x + tl::arange(0, 16), acc);
}

TEST(DslErrors, CarriedVariableChangesType) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("carried", carried_changes_type), {x, 4}),
                     "carried variable #0 of tl::range changed type in the loop body from "
                     "tensor<16xf32> to tensor<16xbf16>");
}

void carried_vector_grows(tl::ptr<float> x, tl::scalar<int32_t> n) {
  std::vector<tl::tensor> acc(2, tl::zeros({16}, tl::f32));
  FAILS_ON_NEXT_LINE();
  for (auto i : tl::range(0, n, 1, acc)) {
    acc[0] = acc[0] + i;
    acc.push_back(acc[1]);
  }
  tl::store(x + tl::arange(0, 16), acc[0]);
}

TEST(DslErrors, CarriedVectorResizedInTheBody) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("carried_vector", carried_vector_grows), {x, 4}),
                     "a std::vector of 2 tiles carried by tl::range was resized in the loop body (now 3); "
                     "assign its elements instead");
}

void breaks_out(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  for (auto i : tl::range(0, n, 1)) {
    tl::store(x + i, 1.0f);
    break;
  }
}

TEST(DslErrors, BreakInsideDynamicLoop) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("breaks", breaks_out), {x, 4}),
                     "the body of a tl::range loop was left early");
}

void load_from_integer(tl::ptr<float> x) {
  tl::tensor offs = tl::arange(0, 16);
  FAILS_ON_NEXT_LINE();
  tl::tensor v = tl::load(offs);
  tl::store(x + offs, v);
}

TEST(DslErrors, LoadFromNonPointer) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("ld", load_from_integer), {x}),
                     "tl::load needs a pointer or a tile of pointers, got a [16] of i32");
}

void tile_condition(tl::ptr<float> x) {
  tl::tensor offs = tl::arange(0, 16);
  FAILS_ON_NEXT_LINE();
  tl::if_(offs < 4, [&] { tl::store(x + offs, 1.0f); });
}

TEST(DslErrors, IfOnATileCondition) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("if", tile_condition), {x}),
                     "tl::if_ needs a scalar boolean condition, got tensor<16xi1>; for tiles "
                     "use tl::where");
}

void float_bitwise(tl::ptr<float> x) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  FAILS_ON_NEXT_LINE();
  tl::store(x + tl::arange(0, 16), v & v);
}

TEST(DslErrors, BitwiseOnFloats) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("bits", float_bitwise), {x}),
                     "operator& needs integer operands, got f32");
}

void store_shape_mismatch(tl::ptr<float> x) {
  tl::tensor offs = tl::arange(0, 16);
  FAILS_ON_NEXT_LINE();
  tl::store(x + offs, tl::zeros({32}, tl::f32));
}

TEST(DslErrors, StoreValueShapeMismatch) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("st", store_shape_mismatch), {x}),
                     "tl::store: value shape [32] does not match pointer shape [16]");
}

TEST(DslErrors, OutsideATrace) {
  try {
    FAILS_ON_NEXT_LINE();
    tl::arange(0, 16);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    expectAtMarkedLine(e.what(), "tl:: operations can only be used while a kernel is traced");
  }
}

void simple(tl::ptr<float> x, tl::scalar<int32_t> n, tl::constant<int> B) {
  tl::tensor offs = tl::arange(0, B);
  tl::store(x + offs, 0.0f, offs < n);
}

TEST(LaunchErrors, WrongArgumentKindNamesTheParameter) {
  auto k = kernel("simple", simple, {"x", "n", "B"});
  auto x = buf();
  std::vector<bfloat16> bx(16);
  EXPECT_THAT(errorOf(k, {1, 2, 16}),
              HasSubstr("argument 'x' (#0) of kernel 'simple' expects a buffer of f32, got an "
                        "integer"));
  EXPECT_THAT(errorOf(k, {bx, 2, 16}),
              HasSubstr("argument 'x' (#0) of kernel 'simple' expects a buffer of f32, got a "
                        "buffer of bf16"));
  EXPECT_THAT(errorOf(k, {x, 2.5, 16}),
              HasSubstr("argument 'n' (#1) of kernel 'simple' expects an integer (i32), got a "
                        "floating-point number"));
  EXPECT_THAT(errorOf(k, {x, x, 16}),
              HasSubstr("argument 'n' (#1) of kernel 'simple' expects a scalar (i32), got a buffer"));
  EXPECT_THAT(errorOf(k, {x, 2}), HasSubstr("kernel 'simple' takes 3 arguments (x, n, B), 2 were given: missing B"));
  EXPECT_THAT(errorOf(k, {x}), HasSubstr("takes 3 arguments (x, n, B), 1 was given: missing n, B"));
  EXPECT_THAT(errorOf(k, {x, 2, 16, 3}), HasSubstr("takes 3 arguments (x, n, B), 4 were given: 1 too many"));
}

void integer_fma(tl::ptr<float> x) {
  tl::tensor offs = tl::arange(0, 16);
  FAILS_ON_NEXT_LINE();
  tl::store(x + offs, tl::fma(offs, 2, 1).to(tl::f32));
}

TEST(DslErrors, FmaNeedsFloatingPoint) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("integer_fma", integer_fma), {x}),
                     "tl::fma needs floating-point operands, got i32");
}

void integer_fdiv(tl::ptr<float> x) {
  tl::tensor offs = tl::arange(0, 16);
  FAILS_ON_NEXT_LINE();
  tl::store(x + offs, tl::fdiv(offs, 2).to(tl::f32));
}

TEST(DslErrors, FdivNeedsFloatingPoint) {
  auto x = buf();
  expectAtMarkedLine(errorOf(kernel("integer_fdiv", integer_fdiv), {x}),
                     "tl::fdiv needs floating-point operands, got i32");
}

TEST(LaunchErrors, AChipTegulaDoesNotCompileForIsNamed) {
  auto k = kernel("simple", simple, {"x", "n", "B"});
  auto x = buf();
  for (const char *chip : {"sm_75", "sm_90b", "gfx942"})
    try {
      k.compile({x, 16, 16}, {.chip = chip, .assemble = false});
      ADD_FAILURE() << chip << " compiled";
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("chip '") + chip + "' is not one Tegula compiles for"));
    }
  // ... and a launch for one fails on the interpreter too, which has no use
  // for the chip: the same launch would fail on the GPU.
  EXPECT_THAT(tegula::testing::error_of([&] {
                k.launch({.grid = {1}, .backend = Backend::Interp, .chip = "sm_99"}, {x, 16, 16});
              }),
              HasSubstr("chip 'sm_99' is not one Tegula compiles for"));
  // Blackwell runs sm_80's code path at its own PTX version.
  EXPECT_THAT(k.compile({x, 16, 16}, {.chip = "sm_120", .assemble = false}).ptx, HasSubstr(".target sm_120"));
}

// Warps and stages no GPU can run are refused on every backend (the
// interpreter ignores both, but the same launch must not pass there and fail
// on a GPU), and by compile.
TEST(LaunchErrors, WarpsAndStagesNoGpuRunsAreNamed) {
  auto k = kernel("simple", simple, {"x", "n", "B"});
  auto x = buf();
  const std::vector<Arg> args = {x, 16, 16};
  for (Backend backend : {Backend::Interp, Backend::Sim}) {
    for (int warps : {0, -4, 3, 64})
      try {
        k.launch({.grid = {1}, .num_warps = warps, .backend = backend}, args);
        ADD_FAILURE() << warps << " warps launched";
      } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr(fmt::format("kernel 'simple': num_warps is 1, 2, 4, 8, 16 or 32 (a CTA "
                                                    "holds at most 1024 threads), not {}",
                                                    warps)));
      }
    try {
      k.launch({.grid = {1}, .num_stages = 0, .backend = backend}, args);
      ADD_FAILURE() << "0 stages launched";
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), HasSubstr("kernel 'simple': num_stages is 1 (no software pipelining) or more, not 0"));
    }
  }
  EXPECT_THAT(tegula::testing::error_of([&] { k.compile(args, {.chip = "sm_90a", .num_warps = 48, .assemble = false}); }),
              HasSubstr("num_warps is 1, 2, 4, 8, 16 or 32"));
  EXPECT_THAT(tegula::testing::error_of([&] { k.compile(args, {.chip = "sm_80", .num_stages = -1, .assemble = false}); }),
              HasSubstr("num_stages is 1 (no software pipelining) or more, not -1"));
  k.launch({.grid = {1}, .num_warps = 32, .num_stages = 1}, args); // the limits themselves run
}

// A pipeline deeper than the chip's shared memory fails at compile, named.
void staged_dot(tl::ptr<bfloat16> a, tl::ptr<float> c, tl::scalar<int32_t> K) {
  tl::tensor rm = tl::arange(0, 128), rk = tl::arange(0, 64);
  tl::tensor acc = tl::zeros({128, 128}, tl::f32);
  for (auto k : tl::range(0, K, 64, acc))
    acc = tl::dot(tl::load(a + rm.expand_dims(1) * K + (k + rk).expand_dims(0)),
                  tl::load(a + (k + rk).expand_dims(1) * 128 + rm.expand_dims(0)), acc);
  tl::store(c + rm.expand_dims(1) * 128 + rm.expand_dims(0), acc);
}

TEST(LaunchErrors, SharedMemoryPastTheChipsIsNamedAtCompile) {
  auto k = kernel("staged_dot", staged_dot, {"a", "c", "K"});
  std::vector<bfloat16> a(128 * 1024);
  auto c = buf(128 * 128);
  // 32 KiB a stage (a 128 x 64 and a 64 x 128 bf16 block): 8 stages need 256 KiB.
  EXPECT_THAT(tegula::testing::error_of([&] { k.compile({a, c, 1024}, {.chip = "sm_80", .num_stages = 8, .assemble = false}); }),
              HasSubstr("bytes of shared memory per CTA; sm_80 allows at most 166912 (smaller tiles, fewer stages)"));
  EXPECT_LE(k.compile({a, c, 1024}, {.chip = "sm_80", .num_stages = 3, .assemble = false}).dynamic_shared_bytes,
            166912);
}

TEST(LaunchErrors, ParameterNameCountMustMatch) {
  EXPECT_THROW(kernel("simple", simple, {"x"}), Error);
  EXPECT_THAT(tegula::testing::error_of([] { kernel("simple", simple, {"x", "n", "x"}); }),
              HasSubstr("kernel 'simple': parameters #0 and #2 are both named 'x'"));
}

// The name is the GPU entry point's: LLVM aborted the process on "my kernel",
// ptxas failed on "a.b" without naming it, "" compiled to PTX with no entry.
TEST(LaunchErrors, AKernelNameMustBeAnIdentifier) {
  for (const char *name : {"my kernel", "a.b", "1st", "", "k\xc3\xa9"})
    EXPECT_THAT(tegula::testing::error_of([&] { kernel(name, simple); }),
                HasSubstr(fmt::format("kernel name '{}' is not an identifier", name)));
  EXPECT_EQ(kernel("_k2", simple).name(), "_k2");
}

// A null pointer with a size: the CPU backends read through it (a crash).
TEST(LaunchErrors, ANullBufferWithASizeIsNamed) {
  auto k = kernel("simple", simple, {"x", "n", "B"});
  for (Backend backend : {Backend::Interp, Backend::Sim})
    EXPECT_THAT(tegula::testing::error_of([&] { k.launch({.grid = {1}, .backend = backend}, {Arg::buffer(nullptr, 100, DType::f32), 100, 128}); }),
                HasSubstr("argument 'x' (#0) of kernel 'simple' is a null buffer of 400 bytes"));
}

// A float view at a byte offset: the GPU (and the simulator) fault on the
// misaligned access, the interpreter read it - refused alike, at the launch.
TEST(LaunchErrors, AMisalignedBufferIsRefusedOnEveryBackend) {
  auto k = kernel("simple", simple, {"x", "n", "B"});
  alignas(16) std::array<unsigned char, 4 * 64 + 4> bytes{};
  const Arg misaligned = Arg::buffer(bytes.data() + 2, 64, DType::f32);
  for (Backend backend : {Backend::Interp, Backend::Sim})
    EXPECT_THAT(tegula::testing::error_of([&] { k.launch({.grid = {1}, .backend = backend}, {misaligned, 64, 64}); }),
                AllOf(HasSubstr("argument 'x' (#0) of kernel 'simple' starts at address 0x"),
                      HasSubstr("which is not a multiple of its 4-byte f32 elements")));
  // Element-aligned but not 16-byte aligned is fine (the unvectorised specialisation).
  EXPECT_NO_THROW(k.launch({.grid = {1}, .backend = Backend::Interp},
                           {Arg::buffer(bytes.data() + 4, 64, DType::f32), 64, 64}));
}

} // namespace
