// SharedMemoryTest.cpp - live ranges of shared-memory buffers (loops widen
// them) and the packing of buffers into offsets. Today's ops only make
// buffers that live while they run (test/lit/Transforms/
// allocate-shared-memory.mlir); these cover the longer ranges a buffer
// value kept across a loop will have.
#include "compiler/Registration.h"
#include "compiler/analysis/SharedMemoryLiveness.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace tegula::analysis;

namespace {

class Liveness : public ::testing::Test {
protected:
  Liveness() {
    mlir::DialectRegistry registry;
    tegula::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    ctx.allowUnregisteredDialects();
  }
  /// Parses `ir`; ops named "test.<name>" can then be found by name.
  void parse(const char *ir) {
    module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
    ASSERT_TRUE(module);
    order.emplace(module->getOperation());
  }
  mlir::Operation *op(llvm::StringRef name) {
    mlir::Operation *found = nullptr;
    module->walk([&](mlir::Operation *o) {
      if (o->getName().getStringRef() == ("test." + name).str())
        found = o;
    });
    EXPECT_TRUE(found) << name.str();
    return found;
  }
  int64_t at(llvm::StringRef name) { return order->extent(op(name)).first; }

  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::optional<ProgramOrder> order;
};

// Ops in pre-order; inside the loop the body comes before the yield and the
// loop's extent closes after both.
const char *kLoop = R"mlir(
func.func @f(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "test.before"() : () -> ()
  scf.for %i = %c0 to %n step %c1 {
    "test.first"() : () -> ()
    "test.def_inside"() : () -> ()
    "test.use_inside"() : () -> ()
    "test.last"() : () -> ()
  }
  "test.after"() : () -> ()
  return
}
)mlir";

TEST_F(Liveness, AnOpAloneLivesWhileItRuns) {
  parse(kLoop);
  LiveInterval r = order->liveRange(op("use_inside"));
  EXPECT_EQ(r, (LiveInterval{at("use_inside"), at("use_inside")}));
}

TEST_F(Liveness, MadeAndUsedInOneIterationStaysInside) {
  parse(kLoop);
  LiveInterval r = order->liveRange(op("def_inside"), {op("use_inside")});
  EXPECT_EQ(r, (LiveInterval{at("def_inside"), at("use_inside")}));
}

TEST_F(Liveness, MadeBeforeALoopAndUsedInItLivesThroughTheLoop) {
  parse(kLoop);
  LiveInterval r = order->liveRange(op("before"), {op("use_inside")});
  EXPECT_EQ(r.first, at("before"));
  EXPECT_GE(r.last, at("last")); // the whole body: every iteration reads it
  EXPECT_LT(r.last, at("after"));
}

TEST_F(Liveness, MadeInALoopAndUsedAfterItCoversTheLoop) {
  parse(kLoop);
  LiveInterval r = order->liveRange(op("def_inside"), {op("after")});
  EXPECT_LE(r.first, at("first"));
  EXPECT_EQ(r.last, at("after"));
}

TEST_F(Liveness, CarriedToTheNextIterationCoversTheLoop) {
  parse(kLoop);
  // Used (through the loop-carried value) before it is made again.
  LiveInterval r = order->liveRange(op("def_inside"), {op("first")});
  EXPECT_LE(r.first, at("first"));
  EXPECT_GE(r.last, at("last"));
  EXPECT_GT(r.first, at("before"));
  EXPECT_LT(r.last, at("after"));
}

TEST(SharedPacking, NoBuffersNeedNoBytes) {
  std::vector<SharedBuffer> none;
  EXPECT_EQ(packSharedBuffers(none, 16), 0);
}

TEST(SharedPacking, DisjointLifetimesReuseBytes) {
  std::vector<SharedBuffer> b = {{{0, 0}, 64}, {{1, 1}, 128}, {{2, 2}, 8}};
  EXPECT_EQ(packSharedBuffers(b, 16), 128);
  for (const SharedBuffer &x : b)
    EXPECT_EQ(x.offset, 0);
}

TEST(SharedPacking, OverlappingLifetimesGetAlignedDisjointBytes) {
  // A long-lived 100-byte buffer across [0, 10]; two short ones inside it
  // at different times, and one after it.
  std::vector<SharedBuffer> b = {{{0, 10}, 100}, {{2, 2}, 40}, {{5, 6}, 24}, {{11, 12}, 200}};
  EXPECT_EQ(packSharedBuffers(b, 16), 200);
  EXPECT_EQ(b[3].offset, 0);   // largest first
  EXPECT_EQ(b[0].offset, 0);   // lives apart from b[3]
  EXPECT_EQ(b[1].offset, 112); // above b[0], rounded up to 16
  EXPECT_EQ(b[2].offset, 112); // lives apart from b[1]: same bytes
}

TEST(SharedPacking, SmallBuffersFillGapsFirstFit) {
  // b[1] lives with both others, which never live together: b[0] and b[2]
  // (placed first, being larger) share bytes, b[1] goes above them.
  std::vector<SharedBuffer> b = {{{0, 5}, 64}, {{0, 9}, 32}, {{6, 9}, 48}};
  EXPECT_EQ(packSharedBuffers(b, 16), 96);
  EXPECT_EQ(b[0].offset, 0);
  EXPECT_EQ(b[1].offset, 64);
  EXPECT_EQ(b[2].offset, 0);
  // No two buffers alive at once share a byte.
  for (size_t i = 0; i < b.size(); ++i)
    for (size_t j = i + 1; j < b.size(); ++j)
      if (b[i].live.overlaps(b[j].live))
        EXPECT_TRUE(b[i].offset + b[i].bytes <= b[j].offset ||
                    b[j].offset + b[j].bytes <= b[i].offset);
}

} // namespace
