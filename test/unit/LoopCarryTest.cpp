// LoopCarryTest.cpp - a tl::range or tl::while_ loop that reads a variable
// from before it and then reassigns it without carrying it is an error at the
// read (every iteration would read the value from before the loop); a
// variable assigned before it is read in an iteration, one of the body's own,
// or a tl::if_ branch's update used only in the branch, is not.
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
  expectAtMarkedLine(err, "this reads a variable from before the tl::range loop (line");
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
  tl::tensor q = base;
  tl::tensor scale = tl::full({16}, 2.0f, tl::f32);
  tl::tensor one = tl::full({16}, 1.0f, tl::f32);
  for (auto k : tl::range(0, n, 16)) {
    offs = k + base;                    // written, then read
    p = base + k;                       // base is read; p was not
    q = base;                           // reset from an outside value...
    q = q + k;                          // ...then updated: this iteration's value
    tl::tensor s = scale;               // the body's own copy...
    s = s * 3.0f;                       // ...reassigned: fine
    one = tl::zeros_like(one) + 1.0f;   // its type alone is not a read
    tl::store(out + offs, tl::load(x + p) * s * one + (q - p).to(tl::f32));
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

// A persistent kernel's tile loop resets acc from a zero tile made before it,
// then its K loop carries acc: every tile starts from zero, as it should.
void persistent_reset(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> tiles) {
  tl::tensor zero = tl::zeros({16}, tl::f32);
  tl::tensor acc = zero;
  for (auto t : tl::range(0, tiles, 1)) {
    acc = zero;
    for (auto k : tl::range(0, 4, 1, acc))
      acc = acc + tl::load(x + (t * 4 + k) * 16 + tl::arange(0, 16));
    tl::store(out + t * 16 + tl::arange(0, 16), acc);
  }
}

TEST(LoopCarry, AVariableResetFromOutsideInEachIterationIsNotAnError) {
  std::vector<float> x(3 * 4 * 16), out(3 * 16);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 7);
  kernel("persistent", persistent_reset)({.grid = one()}, x, out, 3);
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < 16; ++j) {
      float sum = 0;
      for (int k = 0; k < 4; ++k)
        sum += x[size_t((t * 4 + k) * 16 + j)];
      ASSERT_EQ(out[size_t(t * 16 + j)], sum) << t << " " << j;
    }
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
  expectAtMarkedLine(err, fmt::format("this reads a variable from before the tl::range loop (line {})",
                                      tegula::testing::g_line - 2));
}

// ... unless each outer iteration ends by resetting acc to what it held
// before the loop (equal zeros): every iteration then starts the inner loop
// from zero, as C++ would. Reset to another value, it is the error still.
void nested_reset_at_the_end(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::zeros({16}, tl::f32);
  for (auto i : tl::range(0, n, 16)) {
    for (auto k : tl::range(0, 32, 16, acc))
      acc = acc + tl::load(x + 2 * i + k + tl::arange(0, 16));
    tl::store(out + i + tl::arange(0, 16), acc);
    acc = tl::zeros({16}, tl::f32);
  }
}

void nested_reset_to_another_value(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::zeros({16}, tl::f32);
  for (auto i : tl::range(0, n, 16)) {
    FAILS_ON_NEXT_LINE();
    for (auto k : tl::range(0, 32, 16, acc))
      acc = acc + tl::load(x + 2 * i + k + tl::arange(0, 16));
    tl::store(out + i + tl::arange(0, 16), acc);
    acc = tl::full({16}, 1.0f, tl::f32);
  }
}

TEST(LoopCarry, AnOuterIterationThatEndsByResettingWhatItsInnerLoopCarriedIsNotAnError) {
  std::vector<float> x(128), out(64);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 13);
  kernel("nested_reset", nested_reset_at_the_end)({.grid = one()}, x, out, 64);
  for (int i = 0; i < 64; ++i) // block b of out: x's blocks 2b and 2b + 1, from zero
    ASSERT_EQ(out[size_t(i)], x[size_t(i / 16 * 32 + i % 16)] + x[size_t(i / 16 * 32 + 16 + i % 16)]) << i;
  const std::string err = errorOf(kernel("nested_other", nested_reset_to_another_value), {x, out, 64});
  expectAtMarkedLine(err, fmt::format("this reads a variable from before the tl::range loop (line {})",
                                      tegula::testing::g_line - 2));
}

// An uncarried vector element read, reassigned, then moved to new storage
// as the vector grows: what it holds at the body's end cannot be judged, so
// the stale read is the error still.
void element_reassigned_then_moved(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  std::vector<tl::tensor> acc;
  acc.push_back(tl::zeros({16}, tl::f32));
  for (auto k : tl::range(0, n, 16)) {
    FAILS_ON_NEXT_LINE();
    acc[0] = acc[0] + tl::load(x + k + tl::arange(0, 16));
    acc.reserve(acc.capacity() + 8); // acc[0] moves
    tl::store(out + k + tl::arange(0, 16), acc[0]);
  }
}

TEST(LoopCarry, AReassignedElementMovedByItsVectorsGrowthIsStillAnError) {
  std::vector<float> x(64, 1.0f), out(64);
  expectAtMarkedLine(errorOf(kernel("moved", element_reassigned_then_moved), {x, out, 64}),
                     "this reads a variable from before the tl::range loop (line");
}

// A branch is traced once, taken or not: an object from before it that it
// assigns a value from outside (zero, made before) held that value after the
// if_ as if the branch were always taken. Now its use after the if_ is the
// scope error; and the other branch sees the value from before, as in C++.
void branch_assigns_an_outside_value(tl::ptr<float> out, tl::scalar<int32_t> flag) {
  tl::tensor zero = tl::zeros({16}, tl::f32);
  tl::tensor v = tl::full({16}, 1.0f, tl::f32);
  tl::if_(flag > 0, [&] { v = zero; });
  FAILS_ON_NEXT_LINE();
  tl::store(out + tl::arange(0, 16), v);
}

void branches_see_the_value_from_before(tl::ptr<float> out, tl::scalar<int32_t> flag) {
  tl::tensor zero = tl::zeros({16}, tl::f32);
  tl::tensor v = tl::full({16}, 1.0f, tl::f32);
  tl::if_(
      flag > 0,
      [&] {
        v = zero;
        tl::store(out + tl::arange(0, 16), v);
      },
      [&] { tl::store(out + tl::arange(0, 16), v + 2.0f); });
}

// ... and a loop body, traced once, runs any number of times: zero, here.
void loop_assigns_an_outside_value(tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor zero = tl::zeros({16}, tl::f32);
  tl::tensor v = tl::full({16}, 1.0f, tl::f32);
  for (auto k : tl::range(0, n, 1))
    v = zero;
  FAILS_ON_NEXT_LINE();
  tl::store(out + tl::arange(0, 16), v);
}

TEST(LoopCarry, AnObjectABranchOrALoopAssignsAValueFromOutsideIsNotUsableAfterIt) {
  std::vector<float> out(16, -1.0f);
  expectAtMarkedLine(errorOf(kernel("branch_outside", branch_assigns_an_outside_value), {out, 0}),
                     "this value was computed inside a tl::if_ branch");
  for (int flag : {0, 1}) {
    kernel("branches_see", branches_see_the_value_from_before)({.grid = one()}, out, flag);
    EXPECT_EQ(out[0], flag ? 0.0f : 3.0f) << flag; // the else branch: 1 + 2, not zero + 2
  }
  expectAtMarkedLine(errorOf(kernel("loop_outside", loop_assigns_an_outside_value), {out, 0}),
                     "this value was computed inside a tl::range loop body");
}

// The then branch assigns v, the else branch reads it: in C++ the else branch
// sees the value from before the loop (in the first iteration) or the last
// iteration's, so the read counts - and the loop reassigns v uncarried.
void branch_assigns_other_branch_reads(tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor zero = tl::zeros({16}, tl::f32);
  tl::tensor v = tl::full({16}, 1.0f, tl::f32);
  for (auto k : tl::range(0, n, 1)) {
    tl::if_(
        k > 0, [&] { v = zero; },
        [&] {
          FAILS_ON_NEXT_LINE();
          tl::store(out + tl::arange(0, 16), v);
        });
    v = tl::full({16}, 2.0f, tl::f32);
  }
}

TEST(LoopCarry, ABranchsAssignmentDoesNotHideTheOtherBranchsRead) {
  std::vector<float> out(16);
  expectAtMarkedLine(errorOf(kernel("other_branch", branch_assigns_other_branch_reads), {out, 3}),
                     "this reads a variable from before the tl::range loop (line");
}

// An outer iteration's reset that may not run - in a branch, or in a loop of
// no iterations - does not give the variable its value from before the loop
// back: the stale read is the error still.
void reset_in_a_branch(tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor v = tl::zeros({16}, tl::f32);
  for (auto k : tl::range(0, n, 1)) {
    FAILS_ON_NEXT_LINE();
    tl::store(out + k * 16 + tl::arange(0, 16), v);
    v = tl::full({16}, 1.0f, tl::f32);
    tl::if_(k > 1000, [&] { v = tl::zeros({16}, tl::f32); });
  }
}

void reset_in_an_empty_loop(tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor v = tl::zeros({16}, tl::f32);
  for (auto k : tl::range(0, n, 1)) {
    FAILS_ON_NEXT_LINE();
    tl::store(out + k * 16 + tl::arange(0, 16), v);
    v = tl::full({16}, 1.0f, tl::f32);
    for (auto j : tl::range(0, k - k, 1))
      v = tl::zeros({16}, tl::f32);
  }
}

TEST(LoopCarry, AResetThatMayNotRunIsNoReset) {
  std::vector<float> out(64);
  using Fn = void (*)(tl::ptr<float>, tl::scalar<int32_t>);
  for (auto [name, fn] : {std::pair<const char *, Fn>{"reset_branch", reset_in_a_branch},
                          {"reset_empty_loop", reset_in_an_empty_loop}}) {
    const std::string err = errorOf(kernel(name, fn), {out, 4});
    SCOPED_TRACE(name);
    EXPECT_THAT(err, HasSubstr("this reads a variable from before the tl::range loop (line"));
    EXPECT_THAT(err, HasSubstr(fmt::format("LoopCarryTest.cpp:{}", tegula::testing::g_line)));
  }
}

// tl::range(0, n, acc), Python's range(0, n) ported: acc is taken for the
// step. Each error says that carried variables follow the step.
void step_taken_for_a_scalar(tl::ptr<int32_t> out, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::full({}, 1, tl::i32);
  for (auto k : tl::range(0, n, acc)) {
    FAILS_ON_NEXT_LINE();
    acc = acc + k;
  }
  tl::store(out, acc);
}

void step_taken_for_a_tile(tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::zeros({16}, tl::f32);
  FAILS_ON_NEXT_LINE();
  for (auto k : tl::range(0, n, acc))
    acc = acc + 1.0f;
  tl::store(out + tl::arange(0, 16), acc);
}

TEST(LoopCarry, ACarriedVariableTakenForTheStepIsSaidSo) {
  std::vector<int32_t> one(1);
  std::vector<float> out(16);
  const std::string scalar = errorOf(kernel("step_scalar", step_taken_for_a_scalar), {one, 4});
  expectAtMarkedLine(scalar, "list it as carried");
  EXPECT_THAT(scalar, HasSubstr("it is also this loop's step (its third argument): the carried variables follow"));
  expectAtMarkedLine(errorOf(kernel("step_tile", step_taken_for_a_tile), {out, 4}),
                     "tl::range step must be an integer scalar, got tensor<16xf32> (the third argument is the step; "
                     "the carried variables follow it");
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
  expectAtMarkedLine(err, "this reads a variable from before the tl::while_ loop (line");
  EXPECT_THAT(err, HasSubstr("tl::while_(cond, body, var)"));
}

// The condition reads cur, the body reassigns it uncarried: the condition
// would test the value from before the loop forever.
void while_condition_reads(tl::ptr<int32_t> next, tl::ptr<int32_t> out) {
  tl::tensor i = tl::zeros({}, tl::i32);
  tl::tensor cur = tl::load(next);
  FAILS_ON_NEXT_LINE();
  tl::while_([&] { return cur != 0; },
             [&] {
               cur = tl::load(next + cur);
               i = i + 1;
             },
             i);
  tl::store(out, i);
}

TEST(LoopCarry, AWhileConditionsReadOfWhatTheBodyReassignsIsAnError) {
  std::vector<int32_t> next = {1, 2, 3, 0}, out(1);
  expectAtMarkedLine(errorOf(kernel("chase", while_condition_reads), {next, out}),
                     "this reads a variable from before the tl::while_ loop (line");
}

// Reads by copy and by a unary operator count.
void copy_then_assign(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor acc = tl::zeros({16}, tl::f32);
  tl::tensor sign = tl::full({16}, 1.0f, tl::f32);
  for (auto k : tl::range(0, n, 16)) {
    tl::tensor old = acc;
    acc = old + tl::load(x + k + tl::arange(0, 16));
    sign = -sign;
    tl::store(out + k + tl::arange(0, 16), acc * sign);
  }
}
void unary_minus(tl::ptr<float> out, tl::scalar<int32_t> n) {
  tl::tensor sign = tl::full({16}, 1.0f, tl::f32);
  for (auto k : tl::range(0, n, 16)) {
    FAILS_ON_NEXT_LINE();
    sign = -sign;
    tl::store(out + k + tl::arange(0, 16), sign);
  }
}

TEST(LoopCarry, ReadsByCopyAndByUnaryOperatorsCount) {
  std::vector<float> x(64), out(64);
  EXPECT_THAT(errorOf(kernel("copy", copy_then_assign), {x, out, 64}),
              HasSubstr("this reads a variable from before the tl::range loop"));
  expectAtMarkedLine(errorOf(kernel("minus", unary_minus), {out, 64}),
                     "this reads a variable from before the tl::range loop (line");
}

// A branch runs at most once: its update of a variable used only in the
// branch reads nothing stale.
void branch_updates(tl::ptr<float> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  tl::if_(n > 0, [&] {
    v = v * 2.0f;
    tl::store(x + tl::arange(0, 16), v);
  });
}

// In a loop, the same branch reads the value from before the loop.
void branch_in_loop(tl::ptr<float> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 16));
  for (auto k : tl::range(0, n, 1)) {
    tl::if_(k > 0, [&] {
      FAILS_ON_NEXT_LINE();
      v = v * 2.0f;
      tl::store(x + tl::arange(0, 16), v);
    });
  }
}

TEST(LoopCarry, AnIfBranchMayUpdateWhatOnlyItUsesButNotInAnUncarriedLoop) {
  std::vector<float> x(16, 1.5f);
  kernel("branch", branch_updates)({.grid = one()}, x, 1);
  EXPECT_EQ(x[0], 3.0f);
  EXPECT_EQ(x[15], 3.0f);
  expectAtMarkedLine(errorOf(kernel("branch_loop", branch_in_loop), {x, 3}),
                     "this reads a variable from before the tl::range loop (line");
}

// A block pointer advanced in a body without carrying it.
void block_ptr_uncarried(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n}, {1}, {0}, {16});
  for (auto k : tl::range(0, n, 16)) {
    FAILS_ON_NEXT_LINE(); // the offset's first read
    tl::store(out + k + tl::arange(0, 16), tl::load(p));
    p = tl::advance(p, {16});
  }
}

TEST(LoopCarry, ABlockPointerAdvancedWithoutCarryingIsAnError) {
  std::vector<float> x(64, 1.0f), out(64);
  const std::string err = errorOf(kernel("bp", block_ptr_uncarried), {x, out, 64});
  expectAtMarkedLine(err, "this reads a variable from before the tl::range loop (line");
}

// A std::vector<tl::tensor> from before the loop, read and then replaced as
// a whole (move-assigned, or cleared and refilled): its elements are
// destroyed, not assigned, and are an error all the same.
void chunks_moved_into(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  std::vector<tl::tensor> acc(2, tl::zeros({16}, tl::f32));
  for (auto k : tl::range(0, n, 32)) {
    std::vector<tl::tensor> next;
    for (int c = 0; c < 2; ++c) {
      if (c == 0)
        FAILS_ON_NEXT_LINE();
      next.push_back(acc[size_t(c)] + tl::load(x + k + c * 16 + tl::arange(0, 16)));
    }
    acc = std::move(next);
  }
  tl::store(out + tl::arange(0, 16), acc[0]);
}
void chunks_cleared(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  std::vector<tl::tensor> acc(1, tl::zeros({16}, tl::f32));
  tl::while_([&] { return n > 0; }, [&] {
    FAILS_ON_NEXT_LINE();
    tl::tensor sum = acc[0] + tl::load(x + tl::arange(0, 16));
    acc.clear();
    acc.push_back(sum);
  });
  tl::store(out + tl::arange(0, 16), acc[0]);
}
// Carried, the same replacement is the loop's update; a scratch vector
// cleared and refilled before it is read is the body's own.
void chunks_carried(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  std::vector<tl::tensor> acc(2, tl::zeros({16}, tl::f32));
  std::vector<tl::tensor> scratch(2, tl::zeros({16}, tl::f32));
  for (auto k : tl::range(0, n, 32, acc)) {
    scratch.clear();
    for (int c = 0; c < 2; ++c)
      scratch.push_back(tl::load(x + k + c * 16 + tl::arange(0, 16)));
    std::vector<tl::tensor> next;
    for (int c = 0; c < 2; ++c)
      next.push_back(acc[size_t(c)] + scratch[size_t(c)]);
    acc = std::move(next);
  }
  tl::store(out + tl::arange(0, 16), acc[0] + acc[1]);
}

TEST(LoopCarry, AVectorReplacedAsAWholeWithoutCarryingIsAnError) {
  std::vector<float> x(64, 1.0f), out(16);
  std::string err = errorOf(kernel("moved", chunks_moved_into), {x, out, 64});
  expectAtMarkedLine(err, "this reads a variable from before the tl::range loop (line");
  EXPECT_THAT(err, HasSubstr("that the loop then replaces as a whole (a std::vector<tl::tensor> move-assigned or "
                             "cleared in the loop) without carrying it"));
  err = errorOf(kernel("cleared", chunks_cleared), {x, out, 64});
  expectAtMarkedLine(err, "this reads a variable from before the tl::while_ loop (line");
  EXPECT_THAT(err, HasSubstr("list it as carried: tl::while_(cond, body, var)"));
  std::vector<float> x2(64);
  for (size_t i = 0; i < x2.size(); ++i)
    x2[i] = float(i);
  kernel("carried", chunks_carried)({.grid = one()}, x2, out, 64);
  for (int j = 0; j < 16; ++j) // sum over k of x[k + j] + x[k + 16 + j], k = 0, 32
    EXPECT_EQ(out[size_t(j)], float(j + (16 + j) + (32 + j) + (48 + j))) << j;
}

// A condition that captured its counter by value tests the value from before
// the loop forever (the interpreter hung): an error at the loop.
void while_by_value(tl::ptr<int32_t> out, tl::scalar<int32_t> n) {
  tl::tensor i = tl::zeros({}, tl::i32);
  FAILS_ON_NEXT_LINE();
  tl::while_([=] { return i < n; }, [&] { i = i + 1; }, i);
  tl::store(out, i);
}

TEST(LoopCarry, AWhileConditionThatCannotChangeIsAnError) {
  std::vector<int32_t> out(1);
  expectAtMarkedLine(errorOf(kernel("by_value", while_by_value), {out, 5}),
                     "tl::while_'s condition cannot change while the loop runs: it reads no carried variable and no "
                     "memory");
}

// A vector that grows (reserve, push_back, resize) moves its elements: their
// values live on, nothing is replaced - not errors.
void vectors_that_grow(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n) {
  std::vector<tl::tensor> ws(1, tl::full({16}, 2.0f, tl::f32));
  std::vector<tl::tensor> scratch(1);
  tl::tensor acc = tl::zeros({16}, tl::f32);
  for (auto k : tl::range(0, n, 16, acc)) {
    ws.reserve(ws.size() + 8);      // moves ws[0], only read
    tl::tensor v = tl::load(x + k + tl::arange(0, 16));
    ws.push_back(v);                // may move again; popped below
    scratch.resize(2);              // moves scratch[0] (written before any read)
    scratch[0] = v * ws[0];
    scratch[1] = ws[1];
    acc = acc + scratch[0] + scratch[1];
    ws.pop_back();
    scratch.resize(1);
  }
  tl::store(out + tl::arange(0, 16), acc);
}

TEST(LoopCarry, AVectorThatGrowsMovesItsValuesAndIsNotAnError) {
  std::vector<float> x(48), out(16);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i);
  kernel("grow", vectors_that_grow)({.grid = one()}, x, out, 48);
  for (int j = 0; j < 16; ++j) // sum over k of 3 x[k + j], k = 0, 16, 32
    EXPECT_EQ(out[size_t(j)], 3.0f * float(j + (16 + j) + (32 + j))) << j;
}

} // namespace
