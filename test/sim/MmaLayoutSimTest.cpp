// MmaLayoutSimTest.cpp - the tensor-core encodings through the existing
// lowering: a traced 2-D kernel is given its blocked layouts, then its
// loaded tile is converted to #tilegpu.mma (and, in 16-bit, to a
// #tilegpu.dot_operand), added to itself there and converted back before
// the store. The generic lowering (shared-memory exchanges derived from the
// linear layouts) and the elementwise lowering must handle the mma layouts;
// the simulator runs the result, race detector on, against the interpreter.
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Registration.h"
#include "dialects/tilegpu/TileGPUDialect.h"
#include "simulator/Simulator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <gtest/gtest.h>

using namespace tegula;
using namespace tegula::testing;

namespace {

template <class T>
void copy_tile(tl::ptr<T> x, tl::ptr<T> out, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
               tl::constant<int> BM, tl::constant<int> BN) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rn = tl::arange(0, BN);
  tl::tensor offs = rm.expand_dims(1) * N + rn.expand_dims(0);
  tl::tensor mask = (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N);
  tl::store(out + offs, tl::load(x + offs, mask, 0.0f), mask);
}

/// `pipeline` is the module's pass list, not wrapped in builtin.module(...)
/// (a wrapped string parses and runs nothing).
void runPipeline(mlir::ModuleOp module, const std::string &pipeline) {
  mlir::PassManager pm(module.getContext());
  ASSERT_TRUE(mlir::succeeded(mlir::parsePassPipeline(pipeline, pm))) << pipeline;
  ASSERT_TRUE(mlir::succeeded(pm.run(module))) << pipeline;
}

/// Route every 2-D load result through `encoding`: convert, add to itself,
/// convert back (so the stored tile is 2x the loaded one).
int detourThrough(mlir::ModuleOp module, mlir::Attribute encoding) {
  int detours = 0;
  module.walk([&](tile::LoadOp load) {
    auto type = mlir::cast<mlir::RankedTensorType>(load.getType());
    if (type.getRank() != 2)
      return;
    mlir::OpBuilder b(load->getContext());
    b.setInsertionPointAfter(load);
    auto there = mlir::RankedTensorType::get(type.getShape(), type.getElementType(), encoding);
    mlir::Value v = tilegpu::ConvertLayoutOp::create(b, load.getLoc(), there, load.getResult());
    mlir::Value twice = mlir::arith::AddFOp::create(b, load.getLoc(), v, v);
    mlir::Value back = tilegpu::ConvertLayoutOp::create(b, load.getLoc(), type, twice);
    load.getResult().replaceAllUsesExcept(back, v.getDefiningOp());
    ++detours;
  });
  return detours;
}

template <class T> void roundTrip(int numWarps, bool viaOperand) {
  const int M = 100, N = 64, BM = 64, BN = 64;
  auto k = kernel("copy_tile", copy_tile<T>, {"x", "out", "M", "N", "BM", "BN"});
  auto x = random_vector<T>(size_t(M * N), -2, 2);
  std::vector<Arg> specialise = {x, x, M, N, BM, BN};

  LoadedContext ctx;
  registerAllPasses();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(specialise, "tile", true), &ctx);
  ASSERT_TRUE(module);
  runPipeline(*module, "convert-tile-to-tilegpu{num-warps=" + std::to_string(numWarps) +
                           "},canonicalize,coalesce");
  if (::testing::Test::HasFatalFailure())
    return;
  const int32_t wm = numWarps >= 2 ? 2 : 1, wn = numWarps / wm;
  auto mma = tilegpu::MmaEncodingAttr::get(&ctx, {wm, wn});
  mlir::Attribute encoding = mma;
  if (viaOperand)
    encoding = tilegpu::DotOperandEncodingAttr::get(&ctx, 0, mma, 16);
  ASSERT_EQ(detourThrough(*module, encoding), 1);
  runPipeline(*module, "allocate-shared-memory,lower-tilegpu-to-llvm,canonicalize,cse");
  if (::testing::Test::HasFatalFailure())
    return;
  // The detour really went through shared memory (both conversions).
  auto shared = (*module)->template getAttrOfType<mlir::IntegerAttr>("tilegpu.shared_bytes");
  ASSERT_TRUE(shared);
  EXPECT_GE(shared.getInt(), int64_t(BM) * BN * int64_t(sizeof(T)));
  auto simulated = sim::SimKernel::prepare(module->getOperation(), "copy_tile");

  auto out = poisoned<T>(x.size());
  simulated->run({uint32_t(cdiv(M, BM))}, k.params(), {"x", "out", "M", "N", "BM", "BN"},
                 {Arg(x), Arg(out), Arg(M), Arg(N), Arg(BM), Arg(BN)});
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(float(out[i]), float(T(2.0f * float(x[i])))) << "element " << i;
}

TEST(MmaLayoutSim, F32TileThroughTheAccumulatorLayout) {
  for (int warps : {1, 4, 8}) {
    SCOPED_TRACE(std::to_string(warps) + " warps");
    roundTrip<float>(warps, false);
  }
}

TEST(MmaLayoutSim, Bf16TileThroughTheOperandLayout) {
  for (int warps : {1, 4}) {
    SCOPED_TRACE(std::to_string(warps) + " warps");
    roundTrip<bfloat16>(warps, true);
  }
}

} // namespace
