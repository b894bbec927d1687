// gpt2_layers.cpp - GPT-2's memory-bound layers (models/gpt/Kernels.h) on
// device buffers at 124M's training sizes (B*T = 8192 rows, C = 768,
// vocabulary 50257 padded to 50304, 124M parameters), as a fraction of the
// device-to-device copy bandwidth measured in the same run. Bytes counted
// are the ones each kernel must move (reads + writes). Target: >= 0.9 of
// copy. Without a driver it prints "skipped: ..." and exits 0.
//
//   gpt2-layers [--iters 20]
#include "examples/kernels.h"
#include "models/gpt/Kernels.h"
#include "tegula/device.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include <fmt/format.h>

using namespace tegula;
namespace k = tegula::gpt::kernels;

int main(int argc, char **argv) {
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--iters"))
      iters = std::atoi(argv[i + 1]);
  fmt::print("# gpt2-layers: GPT-2 124M's memory-bound kernels (f32) vs a device-to-device copy\n");
  std::string why;
  if (!gpu_available(&why)) {
    fmt::print("skipped: {}\n", why);
    return 0;
  }
  try {
    DeviceInfo info = device_info();
    fmt::print("device: {} ({}), driver {}; median of {} (CUDA events)\n", info.name, info.chip, info.driver_version,
               iters);
    const int rows = 8192, C = 768, V = 50257, Vp = 50304;
    const int64_t params = 124475904; // GPT-2 124M with the padded wte
    const int64_t act = int64_t(rows) * C;
    auto buffer = [](int64_t n) {
      DeviceBuffer b(size_t(n), DType::f32);
      b.fill_bytes(0);
      return b;
    };
    DeviceBuffer x = buffer(act), y = buffer(act), dy = buffer(act), dx = buffer(act), w = buffer(C),
                 b = buffer(C), mean = buffer(rows), rstd = buffer(rows), dw = buffer(C), db = buffer(C);
    DeviceBuffer h = buffer(4 * act), hy = buffer(4 * act), hd = buffer(4 * act);
    DeviceBuffer logits = buffer(int64_t(rows) * Vp), dlogits = buffer(int64_t(rows) * Vp), losses = buffer(rows),
                 dlosses = buffer(rows);
    std::vector<int32_t> hostTargets(static_cast<size_t>(rows));
    for (int i = 0; i < rows; ++i)
      hostTargets[size_t(i)] = (i * 7919) % V;
    DeviceBuffer targets = DeviceBuffer::from(hostTargets);
    DeviceBuffer p = buffer(params), g = buffer(params), m = buffer(params), v = buffer(params);
    DeviceBuffer copySrc = buffer(params), copyDst = buffer(params);

    const double copyMs = time_ms([&] { copy(copySrc, copyDst); }, iters).median;
    const double copyGBs = 2.0 * double(params) * 4 / copyMs / 1e6;
    fmt::print("{:<26} {:>9.3f} ms {:>8.0f} GB/s\n", "d2d copy (124M f32)", copyMs, copyGBs);
    auto report = [&](const std::string &name, double bytes, const std::function<void()> &launch) {
      launch();
      const double ms = time_ms(launch, iters).median;
      const double gbs = bytes / ms / 1e6;
      // Ends with a number: gpu-check.sh's summary shows such lines.
      fmt::print("gpt2_{:<21} {:>9.3f} ms {:>8.0f} GB/s  fraction of copy {:.3f}\n", name, ms, gbs, gbs / copyGBs);
    };
    auto on = [](Grid grid, int warps) { return LaunchOptions{.grid = grid, .num_warps = warps, .backend = Backend::GPU}; };

    auto lnFwd = kernel("layernorm_fwd", k::layernorm_fwd<float>, {"x", "w", "b", "y", "mean", "rstd", "C", "eps", "BLOCK"});
    report("layernorm_fwd", 2.0 * act * 4, [&] { lnFwd(on({rows}, 8), x, w, b, y, mean, rstd, C, 1e-5f, 1024); });
    auto lnDx = kernel("layernorm_bwd_dx", k::layernorm_bwd_dx<float>, {"dy", "x", "w", "mean", "rstd", "dx", "C", "BLOCK"});
    report("layernorm_bwd_dx", 3.0 * act * 4, [&] { lnDx(on({rows}, 8), dy, x, w, mean, rstd, dx, C, 1024); });
    auto lnDw = kernel("layernorm_bwd_dwdb", k::layernorm_bwd_dwdb<float>,
                       {"dy", "x", "mean", "rstd", "dw", "db", "rows", "C", "accumulate", "BLOCK"});
    report("layernorm_bwd_dwdb", 2.0 * act * 4,
           [&] { lnDw(on({uint32_t(cdiv(C, 32))}, 4), dy, x, mean, rstd, dw, db, rows, C, false, 32); });
    auto gelu = kernel("gelu", examples::gelu<float>, {"x", "out", "n", "BLOCK"});
    report("gelu_fwd", 2.0 * 4 * act * 4, [&] { gelu(on({uint32_t(cdiv(4 * act, 1024))}, 4), h, hy, int32_t(4 * act), 1024); });
    auto geluBwd = kernel("gelu_bwd", k::gelu_bwd<float>, {"x", "dy", "dx", "n", "BLOCK"});
    report("gelu_bwd", 3.0 * 4 * act * 4,
           [&] { geluBwd(on({uint32_t(cdiv(4 * act, 1024))}, 4), h, hy, hd, int32_t(4 * act), 1024); });
    auto residual = kernel("residual", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
    report("residual", 3.0 * act * 4, [&] { residual(on({uint32_t(cdiv(act, 1024))}, 4), x, dy, y, int32_t(act), 1024); });
    auto ceFwd = kernel("cross_entropy_fwd", k::cross_entropy_fwd<float>, {"logits", "targets", "losses", "V", "Vp", "BLOCK"});
    report("cross_entropy_fwd", double(rows) * V * 4,
           [&] { ceFwd(on({rows}, 8), logits, targets, losses, V, Vp, 1024); });
    auto ceBwd = kernel("cross_entropy_bwd", k::cross_entropy_bwd<float>,
                        {"logits", "targets", "losses", "dlosses", "dlogits", "V", "Vp", "BLOCK"});
    report("cross_entropy_bwd", 2.0 * rows * Vp * 4,
           [&] { ceBwd(on({rows}, 8), logits, targets, losses, dlosses, dlogits, V, Vp, 1024); });
    auto adamw = kernel("adamw", k::adamw, {"params", "grads", "m", "v", "lr", "beta1", "beta2", "eps", "weight_decay",
                                            "bias1", "bias2", "grad_scale", "n", "BLOCK"});
    report("adamw", 7.0 * double(params) * 4, [&] {
      adamw(on({uint32_t(cdiv(params, 1024))}, 4), p, g, m, v, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.1f, 0.05f, 1.0f,
            params, 1024);
    });
  } catch (const Error &e) {
    fmt::print("error: {}\n", e.what());
    return 1;
  }
  return 0;
}
