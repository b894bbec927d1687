// launch_overhead.cpp - host cost of one launch: a 1-program vector_add on
// device buffers (nothing staged, nothing waited for) - and on sm_90a a
// 1-program TMA GEMM (three tensor maps per launch), and vector_add through
// a tegula::Autotuner - in a host loop; the
// time per launch is wall-clock over the loop plus one final wait. The
// Python figure for the same launch: benchmarks/launch_overhead.py (run by
// scripts/gpu-check.sh when the package imports there). Without a driver it
// prints "skipped: ..." and exits 0.
//
//   launch-overhead [--launches 2000]
#include "BenchArgs.h"
#include "GpuMain.h"
#include "examples/kernels.h"
#include "tegula/autotune.h"
#include "tegula/device.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <fmt/format.h>

using namespace tegula;

int main(int argc, char **argv) {
  int launches = 2000;
  if (auto status = bench::Args("launch-overhead", "the host's cost of a launch, plain, autotuned and with "
                                                   "tensor maps")
                        .option("launches", launches, "launches a round")
                        .parse(argc, argv))
    return *status;
  fmt::print("# launch overhead: examples::vector_add, 1 program of 1024, device buffers, "
             "host loop of {} launches\n", launches);
  return bench::runOnGpu([&](const DeviceInfo &info) {
    fmt::print("device: {} ({}), driver {}\n", info.name, info.chip, info.driver_version);
    // Three rounds of `launches` launches after 20 untimed ones (compile,
    // load, warm the caches; tuning for the autotuned one).
    auto rounds = [&](const char *name, const std::function<void()> &launch) {
      for (int i = 0; i < 20; ++i)
        launch();
      synchronize();
      for (int round = 0; round < 3; ++round) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < launches; ++i)
          launch();
        synchronize();
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
        // Ends with a number: gpu-check.sh's summary shows such lines.
        fmt::print("{} round {} us per launch {:.2f}\n", name, round, us / launches);
      }
    };
    auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
    DeviceBuffer x(1024, DType::f32), y(1024, DType::f32), out(1024, DType::f32);
    LaunchOptions opts{.grid = {1}, .backend = Backend::GPU};
    rounds("launch_overhead_cpp", [&] { k(opts, x, y, out, 1024, 1024); });
    // The same launch through an autotuner (two configs, keyed by n): what
    // looking up a tuned key adds.
    Autotuner tuned(k, {{{{"BLOCK", 1024}}, 4}, {{{"BLOCK", 512}}, 2}},
                    [](const TuneConfig &c, const TunedArgs &a) { return Grid{uint32_t(cdiv(a["n"], c["BLOCK"]))}; },
                    {.key = {"n"}, .cache_on_disk = false});
    rounds("launch_overhead_cpp_autotuned", [&] { tuned(opts, x, y, out, 1024); });
    if (info.chip == "sm_90a") { // a TMA kernel: three tensor maps per launch (from the cache)
      auto gemm = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                         {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
      DeviceBuffer a(256 * 256, DType::bf16), b(256 * 256, DType::bf16), c(256 * 256, DType::bf16);
      rounds("launch_overhead_cpp_tma_gemm", [&] { gemm(opts, a, b, c, 256, 256, 256, 256, 256, 256, 128, 128, 64); });
    }
  });
}
