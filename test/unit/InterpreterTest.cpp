// InterpreterTest.cpp - the interpreter's checks (bounds, asserts, division
// by zero), its debugging output, and semantics the kernels rely on: grids,
// masks, scalar accesses and atomics.
#include "ErrorTestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;
using ::testing::HasSubstr;

namespace {

using tegula::testing::g_line;

/// Interpreter errors, launched over `grid`.
std::string errorOf(const Kernel &k, Grid grid, const std::vector<Arg> &args) {
  return tegula::testing::errorOf(k, args, grid);
}

// Forgets the mask: the last program reads past the end of x.
void copy_unmasked(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n,
                   tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  FAILS_ON_NEXT_LINE();
  tl::tensor v = tl::load(x + offs);
  tl::store(out + offs, v, offs < n);
}

TEST(Interpreter, OutOfBoundsLoadNamesKernelProgramElementAndLine) {
  auto k = kernel("copy_unmasked", copy_unmasked, {"x", "out", "n", "BLOCK"});
  std::vector<float> x(1000), out(1000);
  std::string err = errorOf(k, {4}, {x, out, 1000, 256});
  EXPECT_THAT(err, HasSubstr("copy_unmasked: out-of-bounds load at"));
  EXPECT_THAT(err, HasSubstr(fmt::format("InterpreterTest.cpp:{}", g_line)));
  // Program 3 covers elements 768..1023; its element 232 is x[1000].
  EXPECT_THAT(err, HasSubstr("program (3, 0, 0), element 232 of the tile (index [232]) reads "
                             "element 1000 of argument 'x', which has 1000 elements of f32"));
}

void store_negative(tl::ptr<int32_t> out) {
  tl::tensor offs = tl::arange(0, 8) - 1;
  FAILS_ON_NEXT_LINE();
  tl::store(out + offs.expand_dims(0), 1);
}

TEST(Interpreter, OutOfBoundsStoreBeforeTheBuffer) {
  auto k = kernel("store_negative", store_negative, {"out"});
  std::vector<int32_t> out(8);
  std::string err = errorOf(k, {1}, {out});
  EXPECT_THAT(err, HasSubstr(fmt::format("out-of-bounds store at {}:{}", __FILE__, g_line)));
  EXPECT_THAT(err, HasSubstr("element 0 of the tile (index [0, 0]) writes element -1 of "
                             "argument 'out'"));
}

void masked_tail(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor offs = tl::arange(0, 16);
  tl::tensor m = offs < n;
  tl::store(out + offs, tl::load(x + offs, m, -7.0f));
  tl::store(out + 16 + offs, tl::load(x + offs, m)); // no `other`: zero
}

TEST(Interpreter, MaskedOffElementsAreNotAccessedAndTakeOther) {
  auto k = kernel("masked_tail", masked_tail);
  std::vector<float> x(5, 2.0f), out(32, NAN);
  k({.grid = {1}}, x, out, 5); // x has only 5 elements: masked lanes never touch it
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[size_t(i)], i < 5 ? 2.0f : -7.0f) << i;
    EXPECT_EQ(out[size_t(16 + i)], i < 5 ? 2.0f : 0.0f) << i;
  }
}

void grid_ids(tl::ptr<int32_t> out) {
  tl::tensor id = tl::program_id(0) + tl::program_id(1) * tl::num_programs(0) +
                  tl::program_id(2) * tl::num_programs(0) * tl::num_programs(1);
  tl::store(out + id, id * 10 + tl::num_programs(2));
}

TEST(Interpreter, ThreeDimensionalGrid) {
  auto k = kernel("grid_ids", grid_ids);
  std::vector<int32_t> out(3 * 4 * 2, -1);
  k({.grid = {3, 4, 2}}, out);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(out[size_t(i)], i * 10 + 2);
}

void printer(tl::ptr<float> x) {
  tl::tensor v = tl::load(x + tl::arange(0, 4));
  tl::print("v =", {v, tl::sum(v, 0)});
}

TEST(Interpreter, PrintShowsProgramAndValues) {
  auto k = kernel("printer", printer);
  std::vector<float> x = {1, 2, 3, 4.5};
  ::testing::internal::CaptureStdout();
  k({.grid = {2}}, x);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr("[printer] pid (0, 0, 0) v = [1, 2, 3, 4.5] 10.5\n"));
  EXPECT_THAT(out, HasSubstr("[printer] pid (1, 0, 0) v = [1, 2, 3, 4.5] 10.5\n"));
  // A print handler takes the lines instead of stdout (Python's sys.stdout);
  // floats print as the GPU's %g does (6 significant digits).
  std::string taken;
  PrintHandler previous = set_print_handler([&](std::string_view text) { taken += text; });
  x = {0.1f, 1e-7f, 123456789.0f, -2};
  ::testing::internal::CaptureStdout();
  k({.grid = {1}}, x);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  set_print_handler(previous);
  EXPECT_EQ(taken, "[printer] pid (0, 0, 0) v = [0.1, 1e-07, 1.23457e+08, -2] 1.23457e+08\n");
}

void sum_all(tl::ptr<float> x, tl::ptr<float> out) { tl::store(out, tl::sum(tl::load(x + tl::arange(0, 65536)), 0)); }

// Reductions combine neighbours pairwise (a tree, as the GPU's): 65536
// copies of 0.1f sum exactly (each level doubles), where a sum in order
// lost three digits (6.2e-4 relative).
TEST(Interpreter, ReductionsArePairwise) {
  std::vector<float> x(65536, 0.1f), out(1);
  kernel("sum_all", sum_all)({.grid = {1}}, x, out);
  EXPECT_EQ(out[0], 65536.0f * 0.1f);
}

void asserts_positive(tl::ptr<float> x) {
  tl::tensor v = tl::load(x + tl::arange(0, 8));
  FAILS_ON_NEXT_LINE();
  tl::device_assert(v > 0.0f, "x must be positive");
}

TEST(Interpreter, DeviceAssertReportsTheFailingElement) {
  auto k = kernel("asserts", asserts_positive);
  std::vector<float> x = {1, 2, 3, -4, 5, 6, 7, 8};
  std::string err = errorOf(k, {1}, {x});
  // As the GPU's report says it (and the simulator's): the first failing element.
  EXPECT_THAT(err, HasSubstr(fmt::format("kernel 'asserts' stopped: {}:{}: device assertion failed: x must be positive "
                                         "(pid (0, 0, 0) idx (3))",
                                         __FILE__, g_line)));
}

/// Program 1's row 1 holds the only negative values: columns 2 and 3.
void asserts_positive_rows(tl::ptr<float> x) {
  tl::tensor rows = tl::program_id(0) * 2 + tl::arange(0, 2);
  tl::tensor v = tl::load(x + rows.expand_dims(1) * 4 + tl::arange(0, 4).expand_dims(0));
  FAILS_ON_NEXT_LINE();
  tl::device_assert(v > 0.0f, "x must be positive");
}

TEST(Interpreter, DeviceAssertNamesTheProgramAndTheElementsCoordinates) {
  auto k = kernel("asserts_rows", asserts_positive_rows);
  std::vector<float> x(16, 1.0f);
  x[3 * 4 + 2] = x[3 * 4 + 3] = -1.0f;
  const std::string err = errorOf(k, {2}, {x}); // (sets g_line)
  EXPECT_THAT(err,
              HasSubstr(fmt::format("kernel 'asserts_rows' stopped: {}:{}: device assertion failed: x must be positive "
                                    "(pid (1, 0, 0) idx (1, 2))",
                                    __FILE__, g_line)));
}

void divides(tl::ptr<int32_t> x, tl::ptr<int32_t> q, tl::ptr<int32_t> r) {
  tl::tensor offs = tl::arange(0, 4);
  tl::tensor v = tl::load(x + offs);
  tl::store(q + offs, 100 / v);
  tl::store(r + offs, 100 % v);
}

TEST(Interpreter, IntegerDivisionFollowsCAndTheGpuOnZero) {
  // A masked-off lane may divide by zero in valid kernels (store(o, a / n, n != 0)),
  // so it is not an error: the result is the GPU's (all ones; the dividend for %).
  auto k = kernel("divides", divides);
  std::vector<int32_t> x = {7, -7, 0, 100}, q(4), r(4);
  k({.grid = {1}}, x, q, r);
  EXPECT_EQ(q, (std::vector<int32_t>{14, -14, -1, 1}));
  EXPECT_EQ(r, (std::vector<int32_t>{2, 2, 100, 0}));
}

void atomics(tl::ptr<int32_t> counters, tl::ptr<float> fmax, tl::ptr<int32_t> old_out) {
  tl::tensor pid = tl::program_id(0);
  tl::tensor old = tl::atomic_add(counters, 1);   // scalar pointer
  tl::store(old_out + pid, old);
  tl::atomic_max(fmax, pid.to(tl::f32) * 0.5f);
  tl::atomic_cas(counters + 1, pid, pid + 1);     // chains 0->1->2->...
  tl::atomic_xchg(counters + 2, pid);
}

TEST(Interpreter, AtomicsSerialiseAcrossPrograms) {
  auto k = kernel("atomics", atomics);
  std::vector<int32_t> counters = {0, 0, -1}, old(8, -1);
  std::vector<float> fmax = {-100.0f};
  k({.grid = {8}}, counters, fmax, old);
  EXPECT_EQ(counters[0], 8);
  EXPECT_EQ(counters[1], 8);
  EXPECT_EQ(counters[2], 7); // the last program wins
  EXPECT_EQ(fmax[0], 3.5f);
  std::vector<int32_t> sorted = old;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(sorted[size_t(i)], i);
}

void scale_in_place(tl::ptr<float> x) {
  tl::tensor offs = tl::arange(0, 4);
  FAILS_ON_NEXT_LINE();
  tl::store(x + offs, tl::load(x + offs) * 2.0f);
}

TEST(Interpreter, ConstBuffersAreReadOnly) {
  auto k = kernel("scale_in_place", scale_in_place, {"x"});
  const std::vector<float> x = {1, 2, 3, 4};
  std::string err = errorOf(k, {1}, {x});
  EXPECT_THAT(err, HasSubstr(fmt::format("InterpreterTest.cpp:{}", g_line)));
  EXPECT_THAT(err, HasSubstr("writes to argument 'x', which was passed as a const (read-only) "
                             "buffer"));
  std::vector<float> y = {1, 2, 3, 4};
  k({.grid = {1}}, y); // the same kernel on a mutable buffer is fine
  EXPECT_EQ(y[3], 8.0f);
}

// As in Triton, an empty grid (no elements: cdiv(0, BLOCK) programs) runs
// nothing, on every backend; its arguments are still checked.
TEST(Interpreter, AnEmptyGridRunsNothing) {
  auto k = kernel("grid_ids", grid_ids);
  std::vector<int32_t> out(4, -1);
  for (Backend backend : {Backend::Interp, Backend::Sim})
    for (Grid grid : {Grid{0}, Grid{2, 0}, Grid{1, 1, 0}}) {
      k({.grid = grid, .backend = backend}, out);
      EXPECT_EQ(out, std::vector<int32_t>(4, -1));
    }
  std::vector<float> wrong(4);
  EXPECT_THAT(errorOf(k, {0}, {wrong}), HasSubstr("expects a buffer of i32, got a buffer of f32"));
}

/// CUDA refuses y or z past 65535 (and x past 2^31 - 1); so does every
/// backend, rather than run in the interpreter what the GPU would not.
TEST(Interpreter, AGridLargerThanAGpuLaunchesIsAnError) {
  auto k = kernel("grid_ids", grid_ids);
  std::vector<int32_t> out(4);
  for (Grid g : {Grid{1, 70000}, Grid{1, 1, 65536}, Grid{2147483648u}})
    EXPECT_THAT(errorOf(k, g, {out}), HasSubstr("is larger than a GPU launches (x up to 2147483647, y and z up to "
                                                 "65535)"));
}

} // namespace
