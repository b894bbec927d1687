// rms_norm.cpp - a kernel in a project of its own, built against Tegula's
// CMake package (CMakeLists.txt beside this file). It runs in the
// interpreter and in the CTA simulator, and compiles to PTX; no GPU needed.
#include "tegula/tegula.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace tegula;

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w; one program a row,
// the row's tail masked (n_cols need not be BLOCK).
void rms_norm(tl::ptr<float> x, tl::ptr<float> w, tl::ptr<float> out, tl::scalar<int32_t> n_cols,
              tl::constant<int> BLOCK) {
  tl::tensor cols = tl::arange(0, BLOCK);
  tl::tensor mask = cols < n_cols;
  tl::tensor row = tl::program_id(0) * n_cols;
  tl::tensor v = tl::load(x + row + cols, mask, 0.0f);
  tl::tensor mean_square = tl::sum(v * v, 0) / n_cols.to(tl::f32);
  tl::tensor scale = tl::rsqrt(mean_square + 1e-6f);
  tl::store(out + row + cols, v * scale * tl::load(w + cols, mask, 0.0f), mask);
}

static double worstError(const std::vector<float> &x, const std::vector<float> &w, const std::vector<float> &out,
                         int rows, int cols) {
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    double ms = 0;
    for (int c = 0; c < cols; ++c)
      ms += double(x[r * cols + c]) * x[r * cols + c];
    const double scale = 1 / std::sqrt(ms / cols + 1e-6);
    for (int c = 0; c < cols; ++c)
      worst = std::max(worst, std::fabs(out[r * cols + c] - x[r * cols + c] * scale * w[c]));
  }
  return worst;
}

int main() {
  const int rows = 5, cols = 300, block = 512;
  std::vector<float> x(rows * cols), w(cols);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2, 2);
  for (float &v : x) v = dist(rng);
  for (float &v : w) v = dist(rng);

  auto k = kernel("rms_norm", rms_norm, {"x", "w", "out", "n_cols", "BLOCK"});
  bool ok = true;
  for (Backend backend : {Backend::Interp, Backend::Sim}) {
    std::vector<float> out(rows * cols, NAN);
    k({.grid = {rows}, .backend = backend}, x, w, out, cols, block);
    const double worst = worstError(x, w, out, rows, cols);
    const bool good = worst < 1e-5; // (NaN fails)
    std::printf("rms_norm %dx%d in the %s: max |error| %.3g -> %s\n", rows, cols,
                backend == Backend::Interp ? "interpreter" : "simulator", worst, good ? "OK" : "MISMATCH");
    ok = ok && good;
  }
  std::vector<float> out(rows * cols);
  CompiledKernel c = k.compile({x, w, out, cols, block}, {.chip = "sm_90a", .assemble = false});
  std::printf("rms_norm for sm_90a: %zu bytes of PTX\n", c.ptx.size());
  return ok && !c.ptx.empty() ? 0 : 1;
}
