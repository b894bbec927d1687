// HostSymbolsTest.cpp - the simulator's JIT takes nothing from the process:
// every function the compiled example kernels call (after host code
// generation, so soft-float and libm calls the back end introduces count)
// is in the simulator's own symbol table, for every dtype and warp count;
// a function outside it is an error naming it and the kernel; and the
// table's 16-bit conversions round correctly.
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "examples/kernels.h"
#include "simulator/HostFunctions.h"
#include "simulator/HostJit.h"
#include "simulator/Simulator.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

using namespace tegula;
using ::testing::HasSubstr;

namespace {

struct Case {
  std::string name;
  Kernel kernel;
  std::vector<Arg> args;
};

template <class T> struct Buffers {
  std::vector<T> a = std::vector<T>(64 * 64), b = std::vector<T>(64 * 64),
                 c = std::vector<T>(64 * 64), d = std::vector<T>(64 * 64);
  std::vector<float> mean = std::vector<float>(64), rstd = std::vector<float>(64);
};

template <class T> void addCases(const std::string &suffix, Buffers<T> &m, std::vector<Case> &cases) {
  cases.push_back({"softmax" + suffix,
                   kernel("softmax" + suffix, examples::softmax<T>, {"x", "out", "n_cols", "BLOCK"}),
                   {m.a, m.b, 60, 64}});
  cases.push_back({"layernorm" + suffix,
                   kernel("layernorm" + suffix, examples::layernorm<T>,
                          {"x", "w", "b", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"}),
                   {m.a, m.b, m.c, m.d, m.mean, m.rstd, 60, 1e-5f, 32}});
  cases.push_back({"gelu" + suffix, kernel("gelu" + suffix, examples::gelu<T>, {"x", "out", "n", "BLOCK"}),
                   {m.a, m.b, 1000, 256}});
  cases.push_back({"matmul" + suffix,
                   kernel("matmul" + suffix, examples::matmul<T>,
                          {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"}),
                   {m.a, m.b, m.c, 60, 60, 60, 32, 32, 16}});
  cases.push_back({"transpose" + suffix,
                   kernel("transpose" + suffix, examples::transpose<T>, {"x", "out", "M", "N", "BM", "BN"}),
                   {m.a, m.b, 60, 50, 32, 32}});
}

std::set<std::string> tableNames() {
  std::set<std::string> names;
  for (auto &[name, address] : sim::hostSymbols())
    names.insert(name);
  return names;
}

TEST(HostSymbols, EveryExampleKernelResolvesFromTheSimulatorsTable) {
  Buffers<float> f32;
  Buffers<float16> f16;
  Buffers<bfloat16> bf16;
  std::vector<float> x(64 * 64), out(64 * 64);
  std::vector<Case> cases;
  cases.push_back({"vector_add", kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"}),
                   {x, out, out, 1000, 256}});
  cases.push_back({"row_sum_atomic",
                   kernel("row_sum_atomic", examples::row_sum_atomic, {"x", "out", "n_cols", "BLOCK"}),
                   {x, out, 60, 32}});
  cases.push_back({"dropout", kernel("dropout", examples::dropout, {"x", "out", "n", "p", "seed", "BLOCK"}),
                   {x, out, 1000, 0.5f, int64_t(7), 256}});
  addCases("", f32, cases);
  addCases("_f16", f16, cases);
  addCases("_bf16", bf16, cases);

  tegula::testing::LoadedContext ctx;
  const std::set<std::string> table = tableNames();
  std::map<std::string, std::set<std::string>> users; // symbol -> kernels
  for (Case &c : cases)
    for (int warps : {1, 4}) {
      SCOPED_TRACE(fmt::format("{} at {} warps", c.name, warps));
      auto module = mlir::parseSourceString<mlir::ModuleOp>(c.kernel.ir(c.args, "tile"), &ctx);
      ASSERT_TRUE(module);
      ASSERT_TRUE(mlir::succeeded(runGpuPipeline(*module, {.numWarps = warps})));
      auto simulated = sim::SimKernel::prepare(module->getOperation(), c.name);
      for (const std::string &symbol : simulated->externalSymbols()) {
        EXPECT_TRUE(table.count(symbol)) << symbol << " is not in the simulator's table";
        users[symbol].insert(c.name);
      }
    }
  // What ran, for the log: each external function and how many kernels call it.
  std::printf("[host symbols] %zu kernels x {1, 4} warps on %s call %zu functions:\n", cases.size(),
              sim::HostJit::targetCpu(), users.size());
  for (auto &[symbol, kernels] : users)
    std::printf("  %-28s %zu kernel(s)\n", symbol.c_str(), kernels.size());
  // bf16 and f16 stores narrow f32 through the table's conversions, and the
  // kernels reach the simulator's hooks: the scan sees real calls.
  EXPECT_TRUE(users.count("__truncsfbf2"));
  EXPECT_TRUE(users.count("__tegula_sim_barrier"));
}

std::string prepareError(const char *source, const std::string &kernel) {
  tegula::testing::LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  if (!module)
    return "(does not parse)";
  (*module)->setAttr("tilegpu.num_warps", mlir::IntegerAttr::get(mlir::IntegerType::get(&ctx, 32), 1));
  try {
    sim::SimKernel::prepare(module->getOperation(), kernel);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HostSymbols, AFunctionOutsideTheTableIsAnErrorNamingItAndTheKernel) {
  // Declared in the IR: refused when the module is instrumented. strlen is
  // in every process; the simulator still does not take it from there.
  std::string e = prepareError(R"mlir(
    llvm.func @strlen(!llvm.ptr) -> i64
    llvm.func @calls_strlen(%p: !llvm.ptr) {
      %n = llvm.call @strlen(%p) : (!llvm.ptr) -> i64
      llvm.return
    }
  )mlir",
                               "calls_strlen");
  EXPECT_THAT(e, HasSubstr("cannot simulate kernel 'calls_strlen'"));
  EXPECT_THAT(e, HasSubstr("the kernel calls 'strlen', which the simulator does not provide"));

  // Introduced by host code generation: a 128-bit division becomes a call
  // to the compiler runtime's __divti3, which the table does not have.
  e = prepareError(R"mlir(
    llvm.func @divides_i128(%p: !llvm.ptr, %d: !llvm.ptr) {
      %a = llvm.load %p : !llvm.ptr -> i128
      %b = llvm.load %d : !llvm.ptr -> i128
      %q = llvm.sdiv %a, %b : i128
      llvm.store %q, %p : i128, !llvm.ptr
      llvm.return
    }
  )mlir",
                   "divides_i128");
  EXPECT_THAT(e, HasSubstr("kernel 'divides_i128' calls a function the simulator does not "
                           "provide: __divti3"));
}

/// Half-precision values travel in the low bits of an SSE register, so the
/// table's conversions are called here through float-typed pointers, as the
/// JIT'd code calls them.
void *symbol(const std::string &name) {
  for (auto &[n, address] : sim::hostSymbols())
    if (n == name)
      return address;
  ADD_FAILURE() << name << " is not in the table";
  return nullptr;
}
uint16_t bits16(float inRegister) { return uint16_t(std::bit_cast<uint32_t>(inRegister)); }

TEST(HostSymbols, SixteenBitConversionsRoundToNearestEvenOnce) {
  auto f2bf = reinterpret_cast<float (*)(float)>(symbol("__truncsfbf2"));
  auto d2bf = reinterpret_cast<float (*)(double)>(symbol("__truncdfbf2"));
  auto f2h = reinterpret_cast<float (*)(float)>(symbol("__truncsfhf2"));
  auto d2h = reinterpret_cast<float (*)(double)>(symbol("__truncdfhf2"));
  auto h2f = reinterpret_cast<float (*)(float)>(symbol("__extendhfsf2"));
  ASSERT_TRUE(f2bf && d2bf && f2h && d2h && h2f);
  EXPECT_EQ(bits16(f2bf(1.0f)), 0x3f80);
  EXPECT_EQ(bits16(f2bf(1.0f + 0x1p-8f)), 0x3f80);          // tie -> even
  EXPECT_EQ(bits16(f2bf(1.0f + 3 * 0x1p-8f)), 0x3f82);      // tie -> even (up)
  EXPECT_EQ(bits16(f2bf(-INFINITY)), 0xff80);
  EXPECT_EQ(bits16(f2bf(NAN)) & 0x7f80, 0x7f80);
  EXPECT_NE(bits16(f2bf(NAN)) & 0x007f, 0);                  // still a NaN
  // A double just above a bf16 tie rounds up; rounding through f32 first
  // would land on the tie and go down to even.
  EXPECT_EQ(bits16(d2bf(1.0 + 0x1p-8 + 0x1p-40)), 0x3f81);
  EXPECT_EQ(bits16(d2bf(1e300)), 0x7f80);                    // overflow -> inf
  EXPECT_EQ(bits16(f2h(1.0f)), 0x3c00);
  EXPECT_EQ(bits16(f2h(65504.0f)), 0x7bff);
  EXPECT_EQ(bits16(f2h(1e6f)), 0x7c00);
  EXPECT_EQ(bits16(d2h(1.0 + 0x1p-11 + 0x1p-40)), 0x3c01);  // above the tie: up
  EXPECT_EQ(bits16(d2h(1.0 + 0x1p-11)), 0x3c00);            // the tie: even
  EXPECT_EQ(h2f(std::bit_cast<float>(uint32_t(0x3555))), float(float16(0.333251953125f)));
  EXPECT_EQ(h2f(std::bit_cast<float>(uint32_t(0xc000))), -2.0f);
}

} // namespace
