// compile_time.cpp - what compiling costs: a cold compile of the softmax
// kernel (trace -> tile -> tilegpu -> LLVM -> PTX, then ptxas), a cache
// hit, and cold compiles of the bf16 tensor-core GEMM at the tile configs
// the GEMM benchmark uses (with ptxas's register and spill counts). "total"
// is one cold compile, trace to cubin, of a kernel object nothing has
// compiled, "trace->PTX" the same without ptxas (medians of three).
// A benchmark: it prints, it does not assert.
#include "BenchArgs.h"
#include "examples/kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <vector>

using namespace tegula;
using Clock = std::chrono::steady_clock;

static double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int main(int argc, char **argv) {
  if (auto status = bench::Args("compile-time", "cold and warm compile times of a kernel, trace to cubin (CPU)").parse(argc, argv))
    return *status;
  // A private, empty disk cache so the first compile really is cold.
  auto dir = std::filesystem::temp_directory_path() / "tegula-compile-time-bench";
  std::filesystem::remove_all(dir);
  ::setenv("TEGULA_CACHE_DIR", dir.c_str(), 1);
  std::vector<float> x(1024), out(1024);
  {
    // Warm the process (MLIR context, LLVM target registration): not per kernel.
    auto warm = kernel("warmup", examples::vector_add);
    std::vector<float> a(1024), b(1024), c(1024);
    warm.compile({a, b, c, 1024, 1024}, {.assemble = false});
  }
  // PTX and cubin are separate compiles (the cache key includes whether to
  // assemble), so each is timed on its own new kernel object: cold.
  auto t0 = Clock::now();
  auto k = kernel("softmax", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
  k.ir({x, out, 1024, 1024});
  auto t1 = Clock::now();
  CompiledKernel ptxOnly = k.compile({x, out, 1024, 1024}, {.chip = "sm_80", .assemble = false});
  auto t2 = Clock::now();
  auto kc = kernel("softmax_cubin", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
  CompiledKernel full = kc.compile({x, out, 1024, 1024}, {.chip = "sm_80", .assemble = true});
  auto t3 = Clock::now();
  CompiledKernel hit = kc.compile({x, out, 1024, 1024}, {.chip = "sm_80", .assemble = true});
  auto t4 = Clock::now();
  auto k2 = kernel("softmax_cubin", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
  auto t5 = Clock::now();
  k2.compile({x, out, 1024, 1024}, {.chip = "sm_80", .assemble = true});
  auto t6 = Clock::now();
  fmt::print("softmax 1x1024 f32, sm_80, 4 warps (CPU: this machine)\n");
  fmt::print("  trace + tile pipeline            {:8.2f} ms\n", ms(t0, t1));
  fmt::print("  cold trace -> PTX                {:8.2f} ms\n", ms(t0, t2));
  fmt::print("  cold trace -> cubin              {:8.2f} ms   (goal < 300 ms; ptxas ~{:.0f} ms of it)\n",
             ms(t2, t3), ms(t2, t3) - ms(t0, t2));
  fmt::print("  cache hit, same kernel object    {:8.4f} ms   (goal < 1 ms)\n", ms(t3, t4));
  fmt::print("  new kernel object, cached binary {:8.2f} ms   (re-trace + key)\n", ms(t5, t6));
  fmt::print("  registers {}  shared {} B  spills {} B  PTX {} bytes\n", full.registers,
             full.shared_bytes, full.spill_bytes, ptxOnly.ptx.size());
  (void)hit;

  struct Config { int bm, bn, bk, warps; };
  // sm_80: mma.sync; sm_90a: wgmma (docs/hopper.md).
  for (const char *chip : {"sm_80", "sm_90a"}) {
  fmt::print("\nbf16 GEMM (examples::matmul, tensor cores), {}, cold, one new kernel each\n", chip);
  fmt::print("  {:>13} {:>5}  {:>10} {:>10} {:>10}  {:>5} {:>7} {:>7}\n", "tile", "warps",
             "trace->PTX", "ptxas", "total", "regs", "spills", "shared");
  for (Config c : {Config{128, 128, 32, 4}, Config{128, 128, 32, 8}, Config{128, 256, 64, 8},
                   Config{64, 64, 32, 4}}) {
    std::vector<bfloat16> m(64);
    try {
    const std::string name = fmt::format("gemm_{}x{}x{}_w{}", c.bm, c.bn, c.bk, c.warps);
    const std::vector<std::string> params = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"};
    std::vector<Arg> args = {m, m, m, 4096, 4096, 4096, c.bm, c.bn, c.bk};
    // Each a new kernel object (names differ: nothing cached), the median of
    // three: trace to PTX, and the whole cold compile to a cubin.
    auto median3 = [&](bool assemble, CompiledKernel &out) {
      std::vector<double> t;
      for (int i = 0; i < 3; ++i) {
        auto a = Clock::now();
        out = kernel(fmt::format("{}_{}_{}{}", name, chip, assemble ? "cubin" : "ptx", i),
                     examples::matmul<bfloat16>, params)
                  .compile(args, {.chip = chip, .num_warps = c.warps, .assemble = assemble});
        t.push_back(ms(a, Clock::now()));
      }
      std::sort(t.begin(), t.end());
      return t[1];
    };
    CompiledKernel p, f;
    const double ptx = median3(false, p), total = median3(true, f);
    fmt::print("  {:>13} {:>5}  {:>7.1f} ms {:>7.1f} ms {:>7.1f} ms  {:>5} {:>5} B {:>5} B{}\n",
               fmt::format("{}x{}x{}", c.bm, c.bn, c.bk), c.warps, ptx, total - ptx, total, f.registers,
               f.spill_bytes, f.shared_bytes + f.dynamic_shared_bytes,
               c.bm == 128 && c.bn == 128 && c.warps == 4 ? "   (goal: total <= 300 ms, 0 spills)" : "");
    (void)p;
    } catch (const Error &e) { // e.g. more shared memory than one CTA may have
      std::string what = e.what();
      fmt::print("  {:>13} {:>5}  does not compile: {}\n", fmt::format("{}x{}x{}", c.bm, c.bn, c.bk),
                 c.warps, what.substr(0, what.find('\n')));
    }
  }
  }

  // tf32 (f32 operands at tf32 precision) on mma.sync: operands through
  // cp.async rings, A read with ldmatrix, row-major B element by element.
  fmt::print("\ntf32 GEMM (examples::matmul<float, tf32>), sm_80, cold, 3 stages\n");
  fmt::print("  {:>13} {:>5}  {:>10}  {:>5} {:>7} {:>7}\n", "tile", "warps", "total", "regs", "spills", "shared");
  for (Config c : {Config{128, 128, 16, 4}, Config{128, 128, 32, 8}, Config{64, 128, 16, 4}}) {
    std::vector<float> m(64);
    auto a = Clock::now();
    auto tf32 = kernel(fmt::format("gemm_tf32_{}x{}x{}_w{}", c.bm, c.bn, c.bk, c.warps),
                       examples::matmul<float, tl::precision::tf32>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
    CompiledKernel f = tf32.compile({m, m, m, 4096, 4096, 4096, c.bm, c.bn, c.bk},
                                    {.chip = "sm_80", .num_warps = c.warps, .assemble = true});
    auto b = Clock::now();
    fmt::print("  {:>13} {:>5}  {:>7.1f} ms  {:>5} {:>5} B {:>5} B\n", fmt::format("{}x{}x{}", c.bm, c.bn, c.bk),
               c.warps, ms(a, b), f.registers, f.spill_bytes, f.shared_bytes + f.dynamic_shared_bytes);
  }

  // tf32 TN on Hopper: TMA rings straight into wgmma k8, their tensor maps
  // rounding to tf32 (docs/hopper.md); the configs benchmarks/gemm tries.
  fmt::print("\ntf32 TN GEMM (examples::matmul_tn<float, float, tf32>), sm_90a, cold\n");
  fmt::print("  {:>13} {:>8}  {:>10}  {:>5} {:>7} {:>7}\n", "tile", "warps", "total", "regs", "spills", "shared");
  struct TnConfig { int bm, bn, bk, warps, stages; bool ws; };
  for (TnConfig c : {TnConfig{128, 128, 32, 4, 3, false}, TnConfig{128, 256, 32, 8, 4, false},
                     TnConfig{128, 256, 32, 8, 3, true}}) {
    std::vector<float> m(64);
    auto a = Clock::now();
    auto tn = kernel(fmt::format("gemm_tf32_tn_{}x{}x{}_w{}{}", c.bm, c.bn, c.bk, c.warps, c.ws ? "_ws" : ""),
                     examples::matmul_tn<float, float, tl::precision::tf32>,
                     {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
    CompiledKernel f = tn.compile({m, m, m, 4096, 4096, 4096, c.bm, c.bn, c.bk},
                                  {.chip = "sm_90a", .num_warps = c.warps, .num_stages = c.stages,
                                   .warp_specialize = c.ws, .assemble = true});
    auto b = Clock::now();
    fmt::print("  {:>13} {:>8}  {:>7.1f} ms  {:>5} {:>5} B {:>5} B\n", fmt::format("{}x{}x{}", c.bm, c.bn, c.bk),
               fmt::format("{} s{}{}", c.warps, c.stages, c.ws ? " ws" : ""), ms(a, b), f.registers,
               f.spill_bytes, f.shared_bytes + f.dynamic_shared_bytes);
  }

  // Flash attention: two chained dots per key block (Q K^T -> softmax -> P V).
  struct AttnConfig { int d, bm, bn, warps; };
  fmt::print("\nbf16 causal flash attention (examples::attention_fwd), sm_80, cold\n");
  fmt::print("  {:>13} {:>5}  {:>10}  {:>5} {:>7} {:>7}\n", "d, BMxBN", "warps", "total", "regs",
             "spills", "shared");
  for (AttnConfig c : {AttnConfig{64, 64, 64, 4}, AttnConfig{64, 128, 64, 8},
                       AttnConfig{128, 128, 64, 8}}) {
    std::vector<bfloat16> m(64);
    auto a = Clock::now();
    auto att = kernel(fmt::format("attention_d{}_{}x{}_w{}", c.d, c.bm, c.bn, c.warps),
                      examples::attention_fwd<bfloat16>,
                      {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
    CompiledKernel f = att.compile({m, m, m, m, 1024, 0.125f, c.d, c.bm, c.bn, true},
                                   {.chip = "sm_80", .num_warps = c.warps, .assemble = true});
    auto b = Clock::now();
    fmt::print("  {:>13} {:>5}  {:>7.1f} ms  {:>5} {:>5} B {:>5} B\n",
               fmt::format("{}, {}x{}", c.d, c.bm, c.bn), c.warps, ms(a, b), f.registers,
               f.spill_bytes, f.shared_bytes + f.dynamic_shared_bytes);
  }
  std::filesystem::remove_all(dir);
}
