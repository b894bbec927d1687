// sim_throughput.cpp - what the CTA simulator costs next to the interpreter:
// JIT time and run time of example kernels, with simulated threads, fiber
// switches and checked accesses per second. A benchmark: prints, never fails
// (except on a wrong result).
#include "BenchArgs.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "examples/kernels.h"
#include "simulator/Simulator.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

using namespace tegula;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Result {
  double jit = 0, run = 0, interp = 0;
  sim::RunStats stats;
};

/// Lower `k`'s specialisation for `args` with `warps` warps, JIT it, run it
/// (best of `reps`), and run the interpreter on the same arguments.
Result measure(mlir::MLIRContext &ctx, const Kernel &k, const std::vector<Arg> &args, Grid grid,
               int warps, std::vector<float> &out, std::vector<float> &interpOut, int reps = 3) {
  Result r;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(args), &ctx);
  if (!module || mlir::failed(runGpuPipeline(*module, {.numWarps = warps})))
    throw Error("lowering failed");
  auto t0 = std::chrono::steady_clock::now();
  auto simulated = sim::SimKernel::prepare(module->getOperation(), k.name());
  r.jit = since(t0);
  std::vector<std::string> names;
  r.run = 1e30;
  for (int i = 0; i < reps; ++i) {
    t0 = std::chrono::steady_clock::now();
    r.stats = simulated->run(grid, k.params(), names, args);
    r.run = std::min(r.run, since(t0));
  }
  // The same launch in the interpreter, into the same output buffer (the
  // arguments point at it); the simulator's result is kept aside.
  std::vector<float> simulatedOut = out;
  k.launch({.grid = grid, .backend = Backend::Interp}, args); // traced already: timed alone
  t0 = std::chrono::steady_clock::now();
  k.launch({.grid = grid, .backend = Backend::Interp}, args);
  r.interp = since(t0);
  interpOut = out;
  out = simulatedOut;
  return r;
}

void report(const char *name, const Result &r, const std::vector<float> &a,
            const std::vector<float> &b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i]))
      throw Error(fmt::format("{}: NaN at {}", name, i));
    worst = std::max(worst, double(std::abs(a[i] - b[i])));
  }
  if (worst > 1e-4)
    throw Error(fmt::format("{}: simulator and interpreter differ by {}", name, worst));
  double accesses = double(r.stats.globalAccesses + r.stats.sharedAccesses);
  fmt::print("{:<26} {:>8.1f} {:>9.1f} {:>9.1f} {:>9} {:>10} {:>11.3g} {:>11.3g}\n", name,
             r.jit * 1e3, r.run * 1e3, r.interp * 1e3, r.stats.threads, r.stats.switches,
             accesses / r.run, double(r.stats.threads) / r.run);
}

} // namespace

int main(int argc, char **argv) {
  if (auto status = bench::Args("sim-throughput", "the CTA simulator's cost next to the interpreter's (CPU)").parse(argc, argv))
    return *status;
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  auto fill = [&](std::vector<float> &v) { for (float &x : v) x = d(rng); };

  fmt::print("{:<26} {:>8} {:>9} {:>9} {:>9} {:>10} {:>11} {:>11}\n", "kernel (4 warps)", "jit ms",
             "sim ms", "interp ms", "threads", "switches", "accesses/s", "threads/s");
  {
    const int rows = 256, cols = 1024;
    std::vector<float> x(size_t(rows * cols)), out(x.size(), NAN), ref(x.size(), NAN);
    fill(x);
    auto k = kernel("softmax", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
    Result r = measure(ctx, k, {x, out, cols, 1024}, {rows}, 4, out, ref);
    report("softmax 256x1024 f32", r, out, ref);
  }
  {
    const int rows = 256, cols = 1024;
    std::vector<float> x(size_t(rows * cols)), w(cols), b(cols), y(x.size(), NAN),
        yref(x.size(), NAN), mean(rows), rstd(rows);
    fill(x), fill(w), fill(b);
    auto k = kernel("layernorm", examples::layernorm<float>,
                    {"x", "weight", "bias", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"});
    Result r = measure(ctx, k, {x, w, b, y, mean, rstd, cols, 1e-5f, 1024}, {rows}, 4, y, yref);
    report("layernorm 256x1024 f32", r, y, yref);
  }
  {
    const int n = 1 << 20;
    std::vector<float> x(n), y(n), out(n, NAN), ref(n, NAN);
    fill(x), fill(y);
    auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
    Result r = measure(ctx, k, {x, y, out, n, 1024}, {uint32_t(n / 1024)}, 4, out, ref);
    report("vector add 2^20 f32", r, out, ref);
  }
  {
    const int M = 128, N = 128, K = 128;
    std::vector<float> a(M * K), bm(K * N), c(M * N, NAN), cref(M * N, NAN);
    fill(a), fill(bm);
    auto k = kernel("matmul", examples::matmul<float>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
    Result r = measure(ctx, k, {a, bm, c, M, N, K, 32, 32, 16}, {M / 32, N / 32}, 4, c, cref);
    report("matmul 128^3 f32 (FMA)", r, c, cref);
  }
  return 0;
}
