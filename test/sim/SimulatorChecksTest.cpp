// SimulatorChecksTest.cpp - what the simulator reports on compiled DSL
// kernels: out-of-bounds accesses at the user's line, writes to read-only
// buffers, failed device_asserts, print output, and - with the reduction
// lowering's barrier removed by a test hook - the shared-memory race.
#include "ErrorTestUtil.h"
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "examples/kernels.h"
#include "simulator/Simulator.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

std::string simErrorOf(const Kernel &k, const std::vector<Arg> &args, Grid grid = {1},
                       int warps = 4) {
  try {
    k.launch({.grid = grid, .num_warps = warps, .backend = Backend::Sim}, args);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

void reads_past_the_end(tl::ptr<float> x, tl::ptr<float> out) {
  tl::tensor offs = tl::arange(0, 128);
  FAILS_ON_NEXT_LINE();
  tl::tensor v = tl::load(x + offs); // no mask: x has 100 elements
  tl::store(out + offs, v);
}

TEST(SimChecks, OutOfBoundsLoadNamesTheBufferThreadAndLine) {
  auto k = kernel("reads_past_the_end", reads_past_the_end, {"x", "out"});
  std::vector<float> x(100, 1.0f), out(128);
  std::string e = simErrorOf(k, {x, out});
  // 128 elements over 128 threads: thread 100 holds element 100, the first past the end.
  EXPECT_THAT(e, HasSubstr("kernel 'reads_past_the_end', CTA (0, 0, 0), thread 100 (warp 3, lane 4)"));
  EXPECT_THAT(e, HasSubstr("out of bounds of every launch buffer (4 bytes past the end of 'x', "
                           "which has 400 bytes)"));
  EXPECT_THAT(e, HasSubstr(fmt::format("SimulatorChecksTest.cpp:{}", g_line)));
}

void reads_past_the_end_masked(tl::ptr<float> x, tl::ptr<float> out) {
  tl::tensor offs = tl::arange(0, 128);
  FAILS_ON_NEXT_LINE();
  tl::tensor v = tl::load(x + offs, offs < 120, 0.0f); // the mask lets 100..119 through
  tl::store(out + offs, v);
}

// A masked load is inline PTX (a predicated ld.global): the report says
// what it does rather than quoting its registers.
TEST(SimChecks, OutOfBoundsMaskedLoadSaysWhatItIs) {
  auto k = kernel("reads_past_the_end_masked", reads_past_the_end_masked, {"x", "out"});
  std::vector<float> x(100, 1.0f), out(128);
  std::string e = simErrorOf(k, {x, out});
  EXPECT_THAT(e, HasSubstr("out of bounds of every launch buffer (4 bytes past the end of 'x', which has 400 "
                           "bytes) [a predicated load, ld.global.b32 (inline PTX) at "));
  EXPECT_THAT(e, HasSubstr(fmt::format("SimulatorChecksTest.cpp:{}", g_line)));
}

void writes_input(tl::ptr<float> x) {
  tl::tensor offs = tl::arange(0, 64);
  FAILS_ON_NEXT_LINE();
  tl::store(x + offs, tl::load(x + offs) * 2.0f);
}

TEST(SimChecks, WriteToAConstBufferIsAnError) {
  auto k = kernel("writes_input", writes_input, {"x"});
  const std::vector<float> x(64, 1.0f);
  std::string e = simErrorOf(k, {x});
  EXPECT_THAT(e, HasSubstr("read-only buffer 'x'"));
  EXPECT_THAT(e, HasSubstr(fmt::format("SimulatorChecksTest.cpp:{}", g_line)));
}

void asserts_positive(tl::ptr<float> x) {
  tl::tensor v = tl::load(x + tl::arange(0, 8));
  FAILS_ON_NEXT_LINE();
  tl::device_assert(v > 0.0f, "x must be positive");
}

/// The kernel's error report (runtime/DeviceErrorReport.h), as the GPU
/// writes it for the runtime: the first failing element, its program and
/// the assertion's line - and nothing printed (no vprintf).
TEST(SimChecks, FailedDeviceAssertStopsWithItsMessage) {
  auto k = kernel("asserts", asserts_positive, {"x"});
  std::vector<float> ok = {1, 2, 3, 4, 5, 6, 7, 8}, bad = {1, 2, 3, -4, 5, 6, -7, 8};
  EXPECT_EQ(simErrorOf(k, {ok}), "(no error)");
  ::testing::internal::CaptureStdout();
  std::string e = simErrorOf(k, {bad});
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_THAT(e, HasSubstr(fmt::format("the kernel stopped: {}:{}: device assertion failed: x must be positive (pid "
                                       "(0, 0, 0) idx (3))",
                                       __FILE__, g_line)));
  // The launch's own report: the next one starts afresh.
  EXPECT_EQ(simErrorOf(k, {ok}), "(no error)");
  bad[3] = 4;
  EXPECT_THAT(simErrorOf(k, {bad}), HasSubstr("idx (6))"));
}

void asserts_positive_1024(tl::ptr<float> x) {
  tl::device_assert(tl::load(x + tl::arange(0, 1024)) > 0.0f, "x must be positive");
}

/// A thread holding many elements stops once, for its first failing one:
/// one claim in the code, not one a register.
TEST(SimChecks, AThreadStopsOnceForItsFirstFailingElement) {
  auto k = kernel("asserts_1024", asserts_positive_1024, {"x"});
  std::vector<float> x(1024, -1.0f);
  const std::string ptx = k.compile({x}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_EQ(tegula::testing::occurrences(ptx, "[tegula_error_claim_asserts_1024], 0, 1;"), 1) << ptx;
  // Every element fails: thread 0 claims first, for its first element.
  EXPECT_THAT(simErrorOf(k, {x}), HasSubstr("device assertion failed: x must be positive (pid (0, 0, 0) idx (0))"));
}

void printer(tl::ptr<float> x, tl::scalar<int32_t> n) {
  tl::tensor v = tl::load(x + tl::arange(0, 4));
  tl::print("v =", {v});
  tl::print("n =", {n});
}

TEST(SimChecks, PrintGoesThroughVprintf) {
  auto k = kernel("printer", printer, {"x", "n"});
  std::vector<float> x = {1, 2, 3, 4.5};
  ::testing::internal::CaptureStdout();
  k({.grid = {2}, .num_warps = 1, .backend = Backend::Sim}, x, 7);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr("[printer] pid (0, 0, 0) idx (3) v = 4.5\n")); // %g, as the interpreter
  EXPECT_THAT(out, HasSubstr("[printer] pid (1, 0, 0) n = 7\n"));
  // A print handler takes the lines instead of stdout (Python's sys.stdout).
  std::string taken;
  PrintHandler previous = set_print_handler([&](std::string_view text) { taken += text; });
  ::testing::internal::CaptureStdout();
  k({.grid = {1}, .num_warps = 1, .backend = Backend::Sim}, x, 8);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  set_print_handler(previous);
  EXPECT_THAT(taken, HasSubstr("[printer] pid (0, 0, 0) idx (1) v = 2\n"));
  EXPECT_THAT(taken, HasSubstr("[printer] pid (0, 0, 0) n = 8\n"));
}

TEST(SimChecks, UnknownBackendListsSim) {
  try {
    parse_backend("simulator");
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("available: interp, gpu (or cuda), sim"));
  }
  EXPECT_EQ(parse_backend("sim"), Backend::Sim);
}

/// Softmax's row max and sum combine warps through shared memory. Lowered
/// normally, the simulator finds no race; with the barrier between the
/// partials' writes and reads dropped (test hook), it reports one.
TEST(SimChecks, RaceDetectorFindsTheMissingReductionBarrier) {
  auto sm = kernel("softmax", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
  const int rows = 2, cols = 1000;
  auto x = random_vector<float>(size_t(rows * cols), -3, 3);
  auto ref = poisoned<float>(x.size());
  sm({.grid = {rows}, .backend = Backend::Interp}, x, ref, cols, 1024);

  LoadedContext ctx;
  std::string tileIR = sm.ir({x, ref, cols, 1024}, "tile", /*debug_info=*/true);
  std::vector<ParamInfo> params = sm.params();
  std::vector<std::string> names = {"x", "out", "n_cols", "BLOCK"};
  for (bool dropBarrier : {false, true}) {
    SCOPED_TRACE(dropBarrier ? "barrier dropped" : "normal lowering");
    auto module = mlir::parseSourceString<mlir::ModuleOp>(tileIR, &ctx);
    ASSERT_TRUE(module);
    if (dropBarrier)
      (*module)->setAttr("tegula.test.drop_reduce_barrier", mlir::UnitAttr::get(&ctx));
    ASSERT_TRUE(mlir::succeeded(runGpuPipeline(*module, {.numWarps = 4})));
    auto simulated = sim::SimKernel::prepare(module->getOperation(), "softmax");
    auto out = poisoned<float>(x.size());
    std::vector<Arg> args = {Arg(x), Arg(out), Arg(cols), Arg(1024)};
    if (!dropBarrier) {
      simulated->run({rows}, params, names, args);
      EXPECT_LT(rel_error(out, to_double(ref)), 1e-5); // f32, summed in another order
      continue;
    }
    try {
      simulated->run({rows}, params, names, args);
      ADD_FAILURE() << "expected the race to be reported";
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), HasSubstr("shared-memory race"));
      EXPECT_THAT(e.what(), HasSubstr("no barrier both passed since orders the two"));
      EXPECT_THAT(e.what(), HasSubstr("examples/kernels.h:"));
    }
  }
}

/// The pipelined GEMM waits for each stage's cp.async copies before its
/// ldmatrix reads. Lowered normally the simulator finds nothing; with the
/// waits dropped (test hook; the barriers stay) the reads of the first
/// stage find shared memory no thread has written yet.
TEST(SimChecks, RaceDetectorFindsTheMissingAsyncWait) {
  auto mm = kernel("matmul", examples::matmul<bfloat16>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  const int M = 64, N = 64, K = 64;
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  auto ref = poisoned<bfloat16>(size_t(M * N));
  std::vector<Arg> refArgs = {Arg(a), Arg(b), Arg(ref), Arg(M), Arg(N), Arg(K), Arg(64), Arg(64), Arg(16)};
  mm({.grid = {1, 1}, .backend = Backend::Interp}, a, b, ref, M, N, K, 64, 64, 16);

  LoadedContext ctx;
  std::string tileIR = mm.ir(refArgs, "tile", /*debug_info=*/true);
  std::vector<std::string> names = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"};
  for (bool dropWait : {false, true}) {
    SCOPED_TRACE(dropWait ? "wait dropped" : "normal lowering");
    auto module = mlir::parseSourceString<mlir::ModuleOp>(tileIR, &ctx);
    ASSERT_TRUE(module);
    if (dropWait)
      (*module)->setAttr("tegula.test.drop_async_wait", mlir::UnitAttr::get(&ctx));
    ASSERT_TRUE(mlir::succeeded(runGpuPipeline(*module, {.numWarps = 4, .numStages = 3})));
    auto simulated = sim::SimKernel::prepare(module->getOperation(), "matmul");
    auto out = poisoned<bfloat16>(size_t(M * N));
    std::vector<Arg> args = {Arg(a), Arg(b), Arg(out), Arg(M), Arg(N), Arg(K), Arg(64), Arg(64), Arg(16)};
    if (!dropWait) {
      simulated->run({1, 1}, mm.params(), names, args);
      EXPECT_LT(rel_error(out, to_double(ref)), tolerance<bfloat16>());
      continue;
    }
    try {
      simulated->run({1, 1}, mm.params(), names, args);
      ADD_FAILURE() << "expected the early reads to be reported";
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), HasSubstr("which no thread of this CTA had written"));
      EXPECT_THAT(e.what(), HasSubstr("ldmatrix"));
    }
  }
}

/// test/lit/Simulator/tensor-core-ops.mlir is what the tensor-core lowering
/// will emit (cp.async, ldmatrix, mma.sync in LLVM + NVVM); the simulator
/// runs it end to end and D is the plain product.
TEST(SimChecks, TensorCoreOpsRunEndToEnd) {
  LoadedContext ctx;
  llvm::SourceMgr sources;
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(
      std::string(TEGULA_TEST_DIR) + "/lit/Simulator/tensor-core-ops.mlir", sources, &ctx);
  ASSERT_TRUE(module);
  auto simulated = sim::SimKernel::prepare(module->getOperation(), "mma_16x8x16");
  auto a = random_vector<float16>(16 * 16), b = random_vector<float16>(16 * 8);
  std::vector<float> d(16 * 8, NAN);
  std::vector<ParamInfo> params = {{ParamInfo::Kind::Pointer, DType::f16},
                                   {ParamInfo::Kind::Pointer, DType::f16},
                                   {ParamInfo::Kind::Pointer, DType::f32}};
  simulated->run({1}, params, {"a", "b", "d"}, {Arg(a), Arg(b), Arg(d)});
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double ref = 0;
      for (int k = 0; k < 16; ++k)
        ref += double(float(a[size_t(m * 16 + k)])) * double(float(b[size_t(k * 8 + n)]));
      EXPECT_NEAR(d[size_t(m * 8 + n)], ref, 1e-5) << "m=" << m << " n=" << n;
    }
}

} // namespace

namespace {
/// Threads 0-63 write shared bytes 0-63 and meet at `firstBarrier`; threads
/// 64-127 meet at `secondBarrier`, then read those bytes.
std::string namedBarrierRaceError(const char *firstBarrier, const char *secondBarrier) {
  const std::string source = fmt::format(R"mlir(
    llvm.mlir.global internal @tegula_scratch() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<64 x i8>
    llvm.func @groups() attributes {{nvvm.kernel}} {{
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %c64 = llvm.mlir.constant(64 : i32) : i32
      %base = llvm.mlir.addressof @tegula_scratch : !llvm.ptr<3>
      %first = llvm.icmp "ult" %tid, %c64 : i32
      llvm.cond_br %first, ^writes, ^reads
    ^writes:
      %p = llvm.getelementptr %base[%tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
      %v = llvm.trunc %tid : i32 to i8
      llvm.store %v, %p : i8, !llvm.ptr<3>
      llvm.inline_asm has_side_effects "{}", "" : () -> ()
      llvm.br ^done
    ^reads:
      llvm.inline_asm has_side_effects "{}", "" : () -> ()
      %i = llvm.sub %tid, %c64 : i32
      %q = llvm.getelementptr %base[%i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
      %r = llvm.load volatile %q : !llvm.ptr<3> -> i8
      llvm.br ^done
    ^done:
      llvm.return
    }}
  )mlir", firstBarrier, secondBarrier);
  LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  if (!module)
    return "(does not parse)";
  try {
    auto simulated = sim::SimKernel::prepare(module->getOperation(), "groups");
    simulated->run({1}, {}, {}, {});
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}
} // namespace

/// A named barrier orders only the threads that meet there: two groups on
/// barriers of their own (a ping-pong kernel's programs) are not ordered by
/// each other's barriers - the race detector once started one barrier
/// interval for every thread at any barrier and missed this.
TEST(SimChecks, NamedBarriersOrderOnlyTheThreadsThatMeetThere) {
  EXPECT_THAT(namedBarrierRaceError("bar.sync 1, 64;", "bar.sync 2, 64;"),
              HasSubstr("reads it here, thread 63 (warp 1, lane 31) wrote it"));
  // One barrier for all 128 threads orders them.
  EXPECT_EQ(namedBarrierRaceError("bar.sync 1, 128;", "bar.sync 1, 128;"), "(no error)");
}
