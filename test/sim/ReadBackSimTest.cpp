// ReadBackSimTest.cpp - a program reads what it stored, elements other
// threads own: order-global-accesses puts a barrier between the store's
// threads and the load's. In the simulator, with the lowest-numbered thread running on
// until it blocks, a program without it reads the scratch before the other
// warps wrote it. Through two arguments that alias (which the pass takes
// not to), tl::debug_barrier orders them.
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Pipeline.h"
#include "simulator/Simulator.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

/// Doubles a [B, B] block into `scratch`, reads it back a row further on
/// (row i + 1 of the block, wrapping: elements another lane or warp
/// stored), adds one: out[i] = 2 x[(i + 1) % B] + 1.
void store_then_read_back(tl::ptr<float> x, tl::ptr<float> scratch, tl::ptr<float> out, tl::constant<int> B) {
  tl::tensor r = tl::arange(0, B);
  tl::tensor rows = r.expand_dims(1) * B.value, cols = r.expand_dims(0);
  tl::store(scratch + rows + cols, tl::load(x + rows + cols) * 2.0f);
  tl::tensor back = tl::load(scratch + ((r + 1) % B.value).expand_dims(1) * B.value + cols);
  tl::store(out + rows + cols, back + 1.0f);
}

TEST(ReadBackSim, ALoadReadsWhatOtherThreadsOfTheProgramStoredInEveryThreadOrder) {
  constexpr int B = 64;
  const std::vector<std::string> names = {"x", "scratch", "out", "B"};
  Kernel k = kernel("store_then_read_back", store_then_read_back, names);
  auto x = random_vector<float>(size_t(B * B));
  auto scratch = poisoned<float>(x.size()), want = poisoned<float>(x.size());
  k.launch({.grid = {1}, .backend = Backend::Interp}, {x, scratch, want, B});
  for (bool ordered : {true, false}) {
    LoadedContext ctx;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(k.ir({x, scratch, want, B}, "tile", true), &ctx);
    ASSERT_TRUE(module && mlir::succeeded(runGpuPipeline(*module, {.numWarps = 4, .orderGlobalAccesses = ordered})));
    for (sim::Schedule s : {sim::Schedule::RoundRobin, sim::Schedule::LowestFirst, sim::Schedule::HighestFirst,
                            sim::Schedule::Shuffled}) {
      SCOPED_TRACE(fmt::format("{}, schedule {}", ordered ? "ordered" : "without the barrier", int(s)));
      auto simulated = sim::SimKernel::prepare(module->getOperation(), "store_then_read_back");
      auto got = poisoned<float>(x.size());
      scratch = poisoned<float>(x.size());
      simulated->run({1}, k.params(), names, {x, scratch, got, B}, {.schedule = s});
      if (ordered)
        EXPECT_EQ(rel_error(got, to_double(want)), 0.0);
      else if (s == sim::Schedule::LowestFirst) // thread 0 loads before the others store
        EXPECT_NE(rel_error(got, to_double(want)), 0.0) << "the test no longer shows the race";
    }
  }
}

/// The same through a second argument `alias` (the caller passes scratch
/// twice): order-global-accesses takes different arguments not to overlap,
/// so only the kernel's own tl::debug_barrier orders the read.
void store_then_read_alias(tl::ptr<float> x, tl::ptr<float> scratch, tl::ptr<float> alias, tl::ptr<float> out,
                           tl::constant<int> B, tl::constant<bool> barrier) {
  tl::tensor r = tl::arange(0, B);
  tl::tensor rows = r.expand_dims(1) * B.value, cols = r.expand_dims(0);
  tl::store(scratch + rows + cols, tl::load(x + rows + cols) * 2.0f);
  if (barrier.value)
    tl::debug_barrier();
  tl::tensor back = tl::load(alias + ((r + 1) % B.value).expand_dims(1) * B.value + cols);
  tl::store(out + rows + cols, back + 1.0f);
}

TEST(ReadBackSim, DebugBarrierOrdersAccessesThroughAliasingArguments) {
  constexpr int B = 64;
  const std::vector<std::string> names = {"x", "scratch", "alias", "out", "B", "barrier"};
  Kernel k = kernel("store_then_read_alias", store_then_read_alias, names);
  auto x = random_vector<float>(size_t(B * B));
  auto scratch = poisoned<float>(x.size()), want = poisoned<float>(x.size());
  k.launch({.grid = {1}, .backend = Backend::Interp}, {x, scratch, scratch, want, B, true});
  for (bool barrier : {true, false}) {
    LoadedContext ctx;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(k.ir({x, scratch, scratch, want, B, barrier}, "tile", true), &ctx);
    ASSERT_TRUE(module && mlir::succeeded(runGpuPipeline(*module, {.numWarps = 4})));
    for (sim::Schedule s : {sim::Schedule::RoundRobin, sim::Schedule::LowestFirst, sim::Schedule::HighestFirst,
                            sim::Schedule::Shuffled}) {
      SCOPED_TRACE(fmt::format("{}, schedule {}", barrier ? "tl::debug_barrier" : "no barrier", int(s)));
      auto simulated = sim::SimKernel::prepare(module->getOperation(), "store_then_read_alias");
      auto got = poisoned<float>(x.size());
      scratch = poisoned<float>(x.size());
      simulated->run({1}, k.params(), names, {x, scratch, scratch, got, B, barrier}, {.schedule = s});
      if (barrier)
        EXPECT_EQ(rel_error(got, to_double(want)), 0.0);
      else if (s == sim::Schedule::LowestFirst) // thread 0 loads before the others store
        EXPECT_NE(rel_error(got, to_double(want)), 0.0) << "the test no longer shows the race";
    }
  }
}

/// A K loop that stores what its next iteration's dot loads: a's next
/// block becomes a pattern of k. Its loads must stay where they are -
/// issued iterations ahead through a ring (pipeline-dot-operands), they
/// could read the block before this iteration stored it. (The simulator
/// copies a cp.async's bytes when the copy is waited for, so its results
/// would not show that; the PTX shows the loads stayed plain, and the test
/// below that the simulator reports such a loop pipelined anyway.)
void gemm_rewriting_its_operand(tl::ptr<bfloat16> a, tl::ptr<bfloat16> b, tl::ptr<float> c, tl::constant<int> K) {
  constexpr int B = 16;
  tl::tensor r = tl::arange(0, B);
  tl::tensor acc = tl::zeros({B, B}, tl::f32);
  for (auto k : tl::range(0, K.value, B, acc)) {
    tl::tensor block = tl::load(a + r.expand_dims(1) * (K.value + B) + k + r.expand_dims(0));
    acc = tl::dot(block, tl::load(b + (k + r).expand_dims(1) * B + r.expand_dims(0)), acc);
    tl::tensor pattern = ((r.expand_dims(1) + k) % 7 - r.expand_dims(0) % 5).to(tl::bf16);
    tl::store(a + r.expand_dims(1) * (K.value + B) + k + B + r.expand_dims(0), pattern);
  }
  tl::store(c + r.expand_dims(1) * B + r.expand_dims(0), acc);
}

TEST(ReadBackSim, AKLoopThatStoresItsNextOperandIsNotPipelined) {
  constexpr int B = 16, K = 64;
  Kernel k = kernel("gemm_rewriting_its_operand", gemm_rewriting_its_operand, {"a", "b", "c", "K"});
  auto a0 = random_vector<bfloat16>(size_t(B * (K + B))), b = random_vector<bfloat16>(size_t(K * B));
  auto a = a0;
  auto want = poisoned<float>(size_t(B * B));
  k({.grid = {1}, .backend = Backend::Interp}, a, b, want, K);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    a = a0;
    auto got = poisoned<float>(size_t(B * B));
    k({.grid = {1}, .num_warps = 4, .num_stages = 3, .backend = Backend::Sim, .chip = chip}, a, b, got, K);
    EXPECT_EQ(rel_error(got, to_double(want)), 0.0);
    const std::string ptx = k.compile({a, b, got, K}, {.chip = chip, .num_stages = 3, .assemble = false}).ptx;
    EXPECT_EQ(ptx.find("cp.async"), std::string::npos) << "the loop's operands were pipelined past its store";
  }
}

/// The same loop pipelined anyway (a test hook): the ring's copies of a
/// later iteration are in flight when this iteration stores into their
/// source. The simulator, which copies at the wait, reports that
/// (simulator/AsyncGlobal.h) instead of reading the new values.
TEST(ReadBackSim, AStoreIntoTheSourceOfACopyInFlightIsReported) {
  constexpr int B = 16, K = 64;
  const std::vector<std::string> names = {"a", "b", "c", "K"};
  Kernel k = kernel("gemm_rewriting_its_operand", gemm_rewriting_its_operand, names);
  auto a = random_vector<bfloat16>(size_t(B * (K + B))), b = random_vector<bfloat16>(size_t(K * B));
  auto c = poisoned<float>(size_t(B * B));
  LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(k.ir({a, b, c, K}, "tile", true), &ctx);
  ASSERT_TRUE(module);
  (*module)->setAttr("tegula.test.pipeline_past_stores", mlir::UnitAttr::get(&ctx));
  ASSERT_TRUE(mlir::succeeded(runGpuPipeline(*module, {.numWarps = 4, .numStages = 3})));
  auto simulated = sim::SimKernel::prepare(module->getOperation(), "gemm_rewriting_its_operand");
  try {
    simulated->run({1}, k.params(), names, {a, b, c, K});
    ADD_FAILURE() << "expected the store into a copy's source to be reported";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("that the cp.async at"));
    EXPECT_THAT(e.what(), HasSubstr("may still be reading"));
  }
}

} // namespace
