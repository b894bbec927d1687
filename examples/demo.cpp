// demo.cpp - write a kernel in C++, trace it, and run it in the interpreter.
#include "examples/kernels.h"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <vector>

using namespace tegula;

int main() {
  // 1. Vector add over a ragged size: the last program's tail is masked.
  const int n = 1000;
  std::vector<float> x(n), y(n), out(n, NAN);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int i = 0; i < n; ++i)
    x[i] = dist(rng), y[i] = dist(rng);

  auto add = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  fmt::print("--- tile IR of vector_add (BLOCK=256) ---\n{}\n",
             add.ir({x, y, out, n, 256}));
  add({.grid = {uint32_t(cdiv(n, 256))}}, x, y, out, n, 256);
  double maxErr = 0;
  for (int i = 0; i < n; ++i)
    maxErr = std::max(maxErr, double(std::fabs(out[i] - (x[i] + y[i]))));
  fmt::print("vector_add n={}: max |error| = {} -> {}\n", n, maxErr,
             maxErr == 0 ? "OK" : "MISMATCH");

  // 2. Row softmax of a 4 x 1000 matrix, BLOCK = 1024 columns per program.
  const int rows = 4, cols = 1000;
  std::vector<float> m(rows * cols), sm(rows * cols, NAN);
  for (float &v : m)
    v = 4 * dist(rng);
  auto softmax = kernel("softmax", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
  softmax({.grid = {rows}}, m, sm, cols, 1024);
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    double mx = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c) mx = std::max(mx, double(m[r * cols + c]));
    for (int c = 0; c < cols; ++c) s += std::exp(m[r * cols + c] - mx);
    for (int c = 0; c < cols; ++c)
      worst = std::max(worst, std::fabs(sm[r * cols + c] - std::exp(m[r * cols + c] - mx) / s));
  }
  fmt::print("softmax {}x{}: max |error| = {:.3g} -> {}\n", rows, cols, worst,
             worst < 1e-6 ? "OK" : "MISMATCH");
  // 3. The same vector add compiled for the GPU (no GPU needed to compile).
  const int big = 1 << 20;
  std::vector<float> bx(big), by(big), bout(big);
  CompiledKernel c = add.compile({bx, by, bout, big, 1024}, {.chip = "sm_90a", .num_warps = 4});
  fmt::print("vector_add for sm_90a: {} bytes of PTX", c.ptx.size());
  if (!c.cubin.empty())
    fmt::print(", cubin {} bytes, {} registers, {} B shared, {} B spills", c.cubin.size(),
               c.registers, c.shared_bytes, c.spill_bytes);
  fmt::print("\n");
  for (std::string_view line : {"ld.global.v4.b32", "st.global.v4.b32"})
    fmt::print("  PTX {} 128-bit accesses ({})\n",
               c.ptx.find(line) != std::string::npos ? "uses" : "lacks", line);
  return maxErr == 0 && worst < 1e-6 ? 0 : 1;
}
