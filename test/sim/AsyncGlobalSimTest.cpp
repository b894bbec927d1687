// AsyncGlobalSimTest.cpp - asynchronous copies and the global memory they
// use. A TMA store writes its box at some moment until its thread waits for
// its writes; a cp.async reads its source at some moment until its group is
// waited for. The simulator reports a program that touches those bytes in
// between (simulator/AsyncGlobal.h), and order-global-accesses keeps the
// compiler's programs from doing so: a read-back of a TMA store waits for
// its writes and a barrier; a TMA load after the threads' stores comes
// after a proxy fence and a barrier. (A store into a cp.async's source in
// flight: ReadBackSim.AStoreIntoTheSourceOfACopyInFlightIsReported.)
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Pipeline.h"
#include "simulator/Simulator.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

/// Doubles a [B, B] block of x into `out` through a TMA store, reads `out`
/// back a row further on (elements other threads, and the async proxy,
/// wrote) and adds one: back[i] = 2 x[(i + 1) % B] + 1.
void tma_store_then_read_back(tl::ptr<float> x, tl::ptr<float> out, tl::ptr<float> back, tl::constant<int> B) {
  tl::tensor r = tl::arange(0, B);
  tl::tensor rows = r.expand_dims(1) * B.value, cols = r.expand_dims(0);
  auto desc = tl::make_tensor_descriptor(out, {B.value, B.value}, {B.value, 1}, {B.value, B.value});
  desc.store({0, 0}, tl::load(x + rows + cols) * 2.0f);
  tl::tensor again = tl::load(out + ((r + 1) % B.value).expand_dims(1) * B.value + cols);
  tl::store(back + rows + cols, again + 1.0f);
}

/// The other way: the threads store 2 x into `scratch`, a TMA load reads
/// it back: back = 2 x + 1.
void store_then_tma_read(tl::ptr<float> x, tl::ptr<float> scratch, tl::ptr<float> back, tl::constant<int> B) {
  tl::tensor r = tl::arange(0, B);
  tl::tensor rows = r.expand_dims(1) * B.value, cols = r.expand_dims(0);
  tl::store(scratch + rows + cols, tl::load(x + rows + cols) * 2.0f);
  auto desc = tl::make_tensor_descriptor(scratch, {B.value, B.value}, {B.value, 1}, {B.value, B.value});
  tl::store(back + rows + cols, desc.load({0, 0}) + 1.0f);
}

/// `k` lowered for sm_90a (TMA), with or without order-global-accesses.
struct Lowered {
  LoadedContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string ptx; // the inline PTX, statement after statement
};
std::unique_ptr<Lowered> lower(const Kernel &k, const std::vector<Arg> &args, bool ordered) {
  auto l = std::make_unique<Lowered>();
  l->module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(args, "tile", true), &l->ctx);
  if (!l->module || mlir::failed(runGpuPipeline(*l->module, {.numWarps = 4, .numStages = 1, .chip = "sm_90a",
                                                                .orderGlobalAccesses = ordered})))
    return nullptr;
  l->module->walk([&](mlir::LLVM::InlineAsmOp op) { l->ptx += op.getAsmString().str() + "\n"; });
  return l;
}

TEST(AsyncGlobalSim, AReadBackOfATmaStoreWaitsForItsWrites) {
  constexpr int B = 32;
  const std::vector<std::string> names = {"x", "out", "back", "B"};
  Kernel k = kernel("tma_store_then_read_back", tma_store_then_read_back, names);
  auto x = random_vector<float>(size_t(B * B));
  auto out = poisoned<float>(x.size()), want = poisoned<float>(x.size());
  k({.grid = {1}, .backend = Backend::Interp}, x, out, want, B);
  for (bool ordered : {true, false}) {
    SCOPED_TRACE(ordered ? "ordered" : "without order-global-accesses");
    auto l = lower(k, {x, out, want, B}, ordered);
    ASSERT_TRUE(l);
    ASSERT_THAT(l->ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta")) << "not a TMA store";
    // The leader waits for the store's writes (not only its reads), then the threads meet.
    EXPECT_EQ(l->ptx.find("cp.async.bulk.wait_group 0;") != std::string::npos, ordered);
    auto simulated = sim::SimKernel::prepare(l->module->getOperation(), "tma_store_then_read_back");
    for (sim::Schedule s : {sim::Schedule::RoundRobin, sim::Schedule::LowestFirst, sim::Schedule::Shuffled}) {
      out = poisoned<float>(x.size());
      auto got = poisoned<float>(x.size());
      if (ordered) {
        simulated->run({1}, k.params(), names, {x, out, got, B}, {.schedule = s});
        EXPECT_EQ(got, want);
        continue;
      }
      try {
        simulated->run({1}, k.params(), names, {x, out, got, B}, {.schedule = s});
        ADD_FAILURE() << "expected the read-back to be reported";
      } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("that the cp.async.bulk.tensor store at"));
        EXPECT_THAT(e.what(), HasSubstr("may still be writing"));
        EXPECT_THAT(e.what(), HasSubstr("AsyncGlobalSimTest.cpp:")); // the user's load
      }
    }
  }
}

TEST(AsyncGlobalSim, ATmaLoadOfWhatTheThreadsStoredComesAfterAProxyFence) {
  constexpr int B = 32;
  const std::vector<std::string> names = {"x", "scratch", "back", "B"};
  Kernel k = kernel("store_then_tma_read", store_then_tma_read, names);
  auto x = random_vector<float>(size_t(B * B));
  auto scratch = poisoned<float>(x.size()), want = poisoned<float>(x.size());
  k({.grid = {1}, .backend = Backend::Interp}, x, scratch, want, B);
  auto l = lower(k, {x, scratch, want, B}, true);
  ASSERT_TRUE(l);
  const size_t fence = l->ptx.find("fence.proxy.async.global;"),
               copy = l->ptx.find("cp.async.bulk.tensor.2d.shared::cluster");
  ASSERT_NE(copy, std::string::npos) << "not a TMA load";
  ASSERT_NE(fence, std::string::npos);
  EXPECT_LT(fence, copy);
  auto simulated = sim::SimKernel::prepare(l->module->getOperation(), "store_then_tma_read");
  scratch = poisoned<float>(x.size());
  auto got = poisoned<float>(x.size());
  simulated->run({1}, k.params(), names, {x, scratch, got, B});
  EXPECT_EQ(got, want);
}

} // namespace
