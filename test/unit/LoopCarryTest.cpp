// LoopCarryTest.cpp - a tl::range / tl::while_ body or tl::if_ branch that
// reads a variable from outside it and then reassigns it without carrying
// it is an error at the assignment (every iteration would read the value
// from before the loop); assigning before reading, or a variable of the
// body's own, is not.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tegula;
using tegula::testing::errorOf;
using ::testing::HasSubstr;

namespace {

void expectAtMarkedLine(const std::string &err, const std::string &what) {
  tegula::testing::expectAtMarkedLine(err, "LoopCarryTest.cpp", what);
}

Grid one() { return {1}; }

// The running sum of the review that found this: acc read, then reassigned,
// never carried nor used after the loop.
void running_sum_uncarried(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::zeros({16}, tl::f32);
  for (auto k : tl::range(0, n, 16)) {
    FAILS_ON_NEXT_LINE();
    acc = acc + tl::load(x + k + tl::arange(0, 16));
    tl::store(out + k + tl::arange(0, 16), acc);
  }
}

TEST(LoopCarry, ReadThenReassignedInARangeBodyWithoutCarryingIsAnError) {
  std::vector<float> x(64, 1.0f), out(64);
  const std::string err = errorOf(kernel("running", running_sum_uncarried), {x, out, 64});
  expectAtMarkedLine(err, "a variable this tl::range body (line");
  EXPECT_THAT(err, HasSubstr("list it as carried: tl::range(lo, hi, step, var)"));
}

// Carried, the same body is a running sum.
void running_sum(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::zeros({16}, tl::f32);
  for (auto k : tl::range(0, n, 16, acc)) {
    acc = acc + tl::load(x + k + tl::arange(0, 16));
    tl::store(out + k + tl::arange(0, 16), acc);
  }
}

TEST(LoopCarry, CarriedTheRunningSumRuns) {
  std::vector<float> x(64, 1.0f), out(64);
  kernel("running", running_sum)({.grid = one()}, x, out, 64);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[63], 4.0f);
}

// Variables declared outside the loop but written before they are read in
// each iteration (scratch), a body-local copy of an outer value that is then
// reassigned, and a variable that shares its first value with one the body
// reads: none reads a stale value, none is an error.
void scratch_and_copies(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor offs;                      // scratch
  tl::tensor base = tl::arange(0, 16);
  tl::tensor p = base;                  // same value as base
  tl::tensor scale = tl::full({16}, 2.0f, tl::f32);
  for (auto k : tl::range(0, n, 16)) {
    offs = k + base;                    // written, then read
    p = base + k;                       // base is read; p was not
    tl::tensor s = scale;               // the body's own copy...
    s = s * 3.0f;                       // ...reassigned: fine
    tl::store(out + offs, tl::load(x + p) * s);
  }
}

TEST(LoopCarry, ScratchVariablesAndBodyCopiesAreNotErrors) {
  std::vector<float> x(48), out(48);
  for (int i = 0; i < 48; ++i)
    x[i] = float(i);
  kernel("scratch", scratch_and_copies)({.grid = one()}, x, out, 48);
  for (int i = 0; i < 48; ++i)
    ASSERT_EQ(out[i], 6.0f * float(i)) << i;
}

// An inner loop carries acc, the outer one does not: each outer iteration
// would start the inner loop from the value before the outer loop.
void nested_outer_uncarried(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::zeros({16}, tl::f32);
  for (auto i : tl::range(0, n, 16)) {
    FAILS_ON_NEXT_LINE(); // the inner loop's results land in acc here
    for (auto k : tl::range(0, 16, 16, acc))
      acc = acc + tl::load(x + i + k + tl::arange(0, 16));
    tl::store(out + i + tl::arange(0, 16), acc);
  }
}

TEST(LoopCarry, AnOuterLoopMustCarryWhatItsInnerLoopCarries) {
  std::vector<float> x(64, 1.0f), out(64);
  const std::string err = errorOf(kernel("nested", nested_outer_uncarried), {x, out, 64});
  expectAtMarkedLine(err, fmt::format("a variable this tl::range body (line {}) reads", tegula::testing::g_line - 2));
}

void while_uncarried(tl::ptr<int32_t> out, tl::scalar<int32_t> n) {
  tl::tensor i = tl::zeros({}, tl::i32);
  tl::tensor total = tl::zeros({}, tl::i32);
  tl::while_([&] { return i < n; },
             [&] {
               FAILS_ON_NEXT_LINE();
               total = total + i;
               i = i + 1;
             },
             i);
  tl::store(out, i);
}

TEST(LoopCarry, ReadThenReassignedInAWhileBodyWithoutCarryingIsAnError) {
  std::vector<int32_t> out(1);
  const std::string err = errorOf(kernel("while_uncarried", while_uncarried), {out, 5});
  expectAtMarkedLine(err, "a variable this tl::while_ body (line");
  EXPECT_THAT(err, HasSubstr("tl::while_(cond, body, var)"));
}

void branch_assigns(tl::ptr<float> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  tl::if_(n > 0, [&] {
    FAILS_ON_NEXT_LINE();
    v = v * 2.0f;
  });
  tl::store(x + tl::arange(0, 16), v * 1.0f + 0.0f);
}

TEST(LoopCarry, ReadThenReassignedInAnIfBranchIsAnError) {
  std::vector<float> x(16, 1.0f);
  const std::string err = errorOf(kernel("branch", branch_assigns), {x, 1});
  expectAtMarkedLine(err, "a variable this tl::if_ branch (line");
  EXPECT_THAT(err, HasSubstr("return it from both branches"));
}

// A block pointer advanced in a body without carrying it.
void block_ptr_uncarried(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n}, {1}, {0}, {16});
  for (auto k : tl::range(0, n, 16)) {
    tl::store(out + k + tl::arange(0, 16), tl::load(p));
    FAILS_ON_NEXT_LINE();
    p = tl::advance(p, {16});
  }
}

TEST(LoopCarry, ABlockPointerAdvancedWithoutCarryingIsAnError) {
  std::vector<float> x(64, 1.0f), out(64);
  const std::string err = errorOf(kernel("bp", block_ptr_uncarried), {x, out, 64});
  expectAtMarkedLine(err, "a variable this tl::range body (line");
}

} // namespace
