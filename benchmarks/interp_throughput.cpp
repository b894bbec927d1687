// interp_throughput.cpp - what the interpreter costs: wall time of example
// kernels at typical test sizes. A benchmark, not a test: prints, never fails.
#include "BenchArgs.h"
#include "examples/kernels.h"

#include <fmt/format.h>

#include <chrono>
#include <random>
#include <vector>

using namespace tegula;

template <class F> double seconds(F &&f, int reps = 3) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char **argv) {
  if (auto status = bench::Args("interp-throughput", "the interpreter's cost on example kernels (CPU)").parse(argc, argv))
    return *status;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  auto fill = [&](std::vector<float> &v) { for (float &x : v) x = d(rng); };
  fmt::print("{:<28} {:>12} {:>14} {:>16}\n", "kernel", "elements", "best time", "elements/s");

  {
    const int rows = 256, cols = 1024;
    std::vector<float> x(rows * cols), out(rows * cols);
    fill(x);
    auto k = kernel("softmax", examples::softmax<float>);
    k({.grid = {rows}}, x, out, cols, 1024); // trace outside the timing
    double s = seconds([&] { k({.grid = {rows}}, x, out, cols, 1024); });
    fmt::print("{:<28} {:>12} {:>12.1f}ms {:>16.3g}\n", "softmax 256x1024 f32", rows * cols,
               s * 1e3, rows * cols / s);
  }
  {
    const int n = 1 << 20;
    std::vector<float> x(n), y(n), out(n);
    fill(x), fill(y);
    auto k = kernel("vector_add", examples::vector_add);
    k({.grid = {uint32_t(n / 1024)}}, x, y, out, n, 1024);
    double s = seconds([&] { k({.grid = {uint32_t(n / 1024)}}, x, y, out, n, 1024); });
    fmt::print("{:<28} {:>12} {:>12.1f}ms {:>16.3g}\n", "vector_add 2^20 f32", n, s * 1e3, n / s);
  }
  {
    const int M = 256, N = 256, K = 256;
    std::vector<float> a(M * K), b(K * N), c(M * N);
    fill(a), fill(b);
    auto k = kernel("matmul", examples::matmul<float>);
    Grid g{uint32_t(M / 64), uint32_t(N / 64)};
    k({.grid = g}, a, b, c, M, N, K, 64, 64, 32);
    double s = seconds([&] { k({.grid = g}, a, b, c, M, N, K, 64, 64, 32); });
    fmt::print("{:<28} {:>12} {:>12.1f}ms {:>16.3g} MAC/s\n", "matmul 256^3 f32", M * N, s * 1e3,
               double(M) * N * K / s);
  }
  {
    // Cold trace + tile pipeline of a fresh kernel object.
    std::vector<float> x(1024), out(1024);
    auto t0 = std::chrono::steady_clock::now();
    auto k = kernel("softmax_cold", examples::softmax<float>);
    k.ir({x, out, 1024, 1024});
    double cold = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("{:<28} {:>12} {:>12.2f}ms\n", "trace+canonicalize softmax", "-", cold * 1e3);
  }
}
