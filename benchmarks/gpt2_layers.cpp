// gpt2_layers.cpp - GPT-2's memory-bound layers (models/gpt/Kernels.h) on
// device buffers at 124M's training sizes (B*T = 8192 rows, C = 768,
// vocabulary 50257 padded to 50304, 124M parameters), as a fraction of the
// device-to-device copy bandwidth measured in the same run (a 124M-f32 copy,
// and a copy of the kernel's own bytes). Bytes counted
// are the ones each kernel must move (reads + writes), in f32 and in bf16
// (the mixed-precision model's: bf16 activations, f32 statistics and AdamW
// state). Target: >= 0.9 of copy. Without a driver it prints "skipped: ..."
// and exits 0.
//
//   gpt2-layers [--iters 20]
#include "BenchArgs.h"
#include "GpuMain.h"
#include "examples/kernels.h"
#include "models/gpt/Kernels.h"
#include "models/gpt/Model.h"
#include "tegula/device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

using namespace tegula;
namespace k = tegula::gpt::kernels;

namespace {

/// Times each layer with storage T (f32, or bf16 as the mixed-precision model
/// runs them: bf16 activations, f32 statistics, gradients of weights and
/// AdamW state) and prints its fraction of the copy bandwidth.
template <class T> void runLayers(int iters, double copyGBs) {
  const bool f32 = std::is_same_v<T, float>;
  const std::string tag = f32 ? "" : "bf16_";
  const double e = sizeof(T); // bytes per stored activation
  const int rows = 8192, C = 768, V = 50257, Vp = 50304;
  const int64_t params = 124475904; // GPT-2 124M with the padded wte
  const int64_t act = int64_t(rows) * C;
  auto buffer = [](int64_t n, DType t) {
    DeviceBuffer b(size_t(n), t);
    b.fill_bytes(0);
    return b;
  };
  const DType st = dtype_of_v<T>, f = DType::f32;
  DeviceBuffer x = buffer(act, st), y = buffer(act, st), dy = buffer(act, st), dx = buffer(act, st),
               w = buffer(C, st), b = buffer(C, st), mean = buffer(rows, f), rstd = buffer(rows, f),
               dw = buffer(C, f), db = buffer(C, f);
  DeviceBuffer h = buffer(4 * act, st), hy = buffer(4 * act, st), hd = buffer(4 * act, st);
  DeviceBuffer logits = buffer(int64_t(rows) * Vp, st), dlogits = buffer(int64_t(rows) * Vp, st),
               losses = buffer(rows, f), lse = buffer(rows, f), dlosses = buffer(rows, f);
  std::vector<int32_t> hostTargets(static_cast<size_t>(rows));
  for (int i = 0; i < rows; ++i)
    hostTargets[size_t(i)] = (i * 7919) % V;
  DeviceBuffer targets = DeviceBuffer::from(hostTargets);
  DeviceBuffer p = buffer(params, f), g = buffer(params, f), m = buffer(params, f), v = buffer(params, f);
  DeviceBuffer copy16 = buffer(f32 ? 1 : params, st);

  // Against the 124M copy, and against a copy of the same bytes (half read,
  // half written): a kernel of a few microseconds pays a launch's ramp-up
  // and tail that the large copy spreads thin - the second fraction is the
  // one a layer of this size can reach.
  auto report = [&](const std::string &name, double bytes, const std::function<void()> &launch) {
    launch();
    const double ms = time_ms(launch, iters).median;
    const double gbs = bytes / ms / 1e6;
    DeviceBuffer from = buffer(int64_t(bytes / 2), DType::i8), to = buffer(int64_t(bytes / 2), DType::i8);
    const double sameMs = time_ms([&] { copy(from, to); }, iters).median;
    // Ends with a number: gpu-check.sh's summary shows such lines.
    fmt::print("gpt2_{:<26} {:>9.3f} ms {:>8.0f} GB/s  fraction of copy {:.3f}  of a same-bytes copy ({:.3f} ms) "
               "{:.3f}\n",
               tag + name, ms, gbs, gbs / copyGBs, sameMs, sameMs / ms);
  };
  auto on = [](Grid grid, int warps) { return LaunchOptions{.grid = grid, .num_warps = warps, .backend = Backend::GPU}; };

  auto lnFwd = kernel("layernorm_fwd", k::layernorm_fwd<T>,
                      {"x", "w", "b", "y", "mean", "rstd", "rows", "C", "eps", "ROWS", "BLOCK", "CHUNKS"});
  report("layernorm_fwd", 2.0 * act * e,
         [&] { lnFwd(on({rows}, 8), x, w, b, y, mean, rstd, rows, C, 1e-5f, 1, 1024, 1); });
  // The model runs its row kernels at Tiles::row_warps (1: one warp a row,
  // reduced by shuffles alone; the H100 of 2026-11-26 measured 4 warps
  // ahead of 8): 1, 2, 4 and 8, so one run says which is fastest.
  for (int warps : {1, 2, 4})
    report(fmt::format("layernorm_fwd_w{}", warps), 2.0 * act * e,
           [&] { lnFwd(on({rows}, warps), x, w, b, y, mean, rstd, rows, C, 1e-5f, 1, 1024, 1); });
  // Several rows a program, a warp a row (Tiles::ln_fwd_rows): a one-warp
  // CTA holds an SM to 32 warps (its CTA limit), 4 or 8 rows to 64.
  for (int rowsAProgram : {4, 8})
    report(fmt::format("layernorm_fwd_w1_r{}", rowsAProgram), 2.0 * act * e, [&] {
      lnFwd(on({uint32_t(cdiv(rows, rowsAProgram))}, rowsAProgram), x, w, b, y, mean, rstd, rows, C, 1e-5f,
            rowsAProgram, 1024, 1);
    });
  // The row in three chunks of 256 (Tiles::ln_fwd_block): no padding.
  for (int rowsAProgram : {1, 4})
    report(fmt::format("layernorm_fwd_w1_r{}_c3", rowsAProgram), 2.0 * act * e, [&] {
      lnFwd(on({uint32_t(cdiv(rows, rowsAProgram))}, rowsAProgram), x, w, b, y, mean, rstd, rows, C, 1e-5f,
            rowsAProgram, 256, 3);
    });
  // The model's forward: each residual connection in the LayerNorm after it
  // (reads x and the branch, writes the sum and the normalised row).
  auto resLn = kernel("residual_layernorm_fwd", k::residual_layernorm_fwd<T>,
                      {"x", "a", "res", "w", "b", "y", "mean", "rstd", "rows", "C", "eps", "ROWS", "BLOCK", "CHUNKS"});
  for (int rowsAProgram : {1, 4, 8})
    report(rowsAProgram == 1 ? std::string("residual_layernorm_fwd")
                             : fmt::format("residual_layernorm_fwd_r{}", rowsAProgram),
           4.0 * act * e, [&] {
             resLn(on({uint32_t(cdiv(rows, rowsAProgram))}, rowsAProgram), x, dy, dx, w, b, y, mean, rstd, rows, C,
                   1e-5f, rowsAProgram, 1024, 1);
           });
  for (int rowsAProgram : {1, 4})
    report(fmt::format("residual_layernorm_fwd_r{}_c3", rowsAProgram), 4.0 * act * e, [&] {
      resLn(on({uint32_t(cdiv(rows, rowsAProgram))}, rowsAProgram), x, dy, dx, w, b, y, mean, rstd, rows, C, 1e-5f,
            rowsAProgram, 256, 3);
    });
  auto lnDx = kernel("layernorm_bwd_dx", k::layernorm_bwd_dx<T>, {"dy", "x", "w", "mean", "rstd", "dx", "C", "BLOCK"});
  report("layernorm_bwd_dx", 3.0 * act * e, [&] { lnDx(on({rows}, 8), dy, x, w, mean, rstd, dx, C, 1024); });
  for (int warps : {1, 2, 4})
    report(fmt::format("layernorm_bwd_dx_w{}", warps), 3.0 * act * e,
           [&] { lnDx(on({rows}, warps), dy, x, w, mean, rstd, dx, C, 1024); });
  // The parameter gradients as the model takes them (Model.h:
  // Tiles::column_*): partial column sums, then the partials' sums.
  const gpt::GptModel::Tiles tiles = gpt::GptModel::gpu_tiles(dtype_of_v<T>, device_info().chip);
  const int colRows = tiles.column_rows, colTileRows = tiles.column_tile_rows, colBlock = tiles.column_block;
  const int sumRows = tiles.column_sum_rows, sumBlock = tiles.column_sum_block;
  const int partials = int(cdiv(rows, colRows));
  const int64_t half = int64_t(partials) * 4 * C;
  DeviceBuffer partialW = buffer(half, f), partialB = buffer(half, f), db4 = buffer(4 * C, f);
  auto lnDw = kernel("layernorm_bwd_dwdb_partial", k::layernorm_bwd_dwdb_partial<T>,
                     {"dy", "x", "mean", "rstd", "partial_w", "partial_b", "rows", "C", "ROWS", "BR", "BC"});
  auto sums = kernel("column_sums", k::column_sums, {"partial", "out", "P", "N", "accumulate", "BR", "BC"});
  auto colSums = kernel("column_partial_sums", k::column_partial_sums<T>, {"dy", "partial", "M", "N", "ROWS", "BR", "BC"});
  report("layernorm_bwd_dwdb", 2.0 * act * e, [&] {
    lnDw(on({uint32_t(cdiv(C, colBlock)), uint32_t(partials)}, 4), dy, x, mean, rstd, partialW, partialB, rows, C,
         colRows, colTileRows, colBlock);
    sums(on({uint32_t(cdiv(C, sumBlock))}, 4), partialW, dw, partials, C, false, sumRows, sumBlock);
    sums(on({uint32_t(cdiv(C, sumBlock))}, 4), partialB, db, partials, C, false, sumRows, sumBlock);
  });
  // The model's LayerNorm backward: one pass (layernorm_bwd) reading dy, x
  // and the residual's gradient and writing dx, with the partial column sums
  // of dw, db and dx (the projection's bias), end to end in one buffer -
  // then the three partials' sums in one launch (column_sums_of_blocks). It
  // replaces layernorm_bwd_dx + layernorm_bwd_dwdb + residual above. Also at
  // 8 and 32 rows a program (Tiles::ln_bwd_rows: more programs and partials,
  // or fewer), so one run says which is fastest, and with the three sums as
  // separate column_sums launches (`_3sums`: the model before 2026-11-27).
  const int mostParts = int(cdiv(rows, std::min(8, tiles.ln_bwd_rows)));
  DeviceBuffer lnPartials = buffer(3 * int64_t(mostParts) * C, f), dbo = buffer(C, f);
  auto lnBwd = kernel("layernorm_bwd", k::layernorm_bwd<T>,
                      {"dy", "x", "w", "mean", "rstd", "dres", "dx", "partial_w", "partial_b", "partial_o", "rows",
                       "C", "residual", "out_sums", "ROWS", "BR", "BLOCK", "CHUNKS"});
  auto sumsOfBlocks = kernel("column_sums_of_blocks", k::column_sums_of_blocks,
                             {"partial", "out_0", "out_1", "out_2", "P", "N", "accumulate", "BR", "BC"});
  // Also 2 and 4 rows a step at 8 warps (Tiles::ln_bwd_tile_rows,
  // ln_bwd_warps: half as many barriers a row, or none at a warp a row) and
  // one row at 8 warps (half the elements a thread); and the rows in three
  // chunks of 256 (Tiles::ln_bwd_block: no padding), at the default tile,
  // at 2 rows a step on 8 warps and at a warp a row (4 rows, 4 warps).
  struct LnBwd {
    int rows, tileRows, warps;
    bool oneLaunch;
    const char *suffix;
    int block = 1024;
  };
  const int TR = tiles.ln_bwd_tile_rows, LW = tiles.ln_bwd_warps, LR = tiles.ln_bwd_rows;
  for (const LnBwd &v : {LnBwd{LR, TR, LW, true, ""}, LnBwd{8, TR, LW, true, "_r8"}, LnBwd{32, TR, LW, true, "_r32"},
                         LnBwd{LR, TR, LW, false, "_3sums"}, LnBwd{LR, 1, 8, true, "_w8"},
                         LnBwd{LR, 2, 8, true, "_br2_w8"}, LnBwd{LR, 4, 8, true, "_br4_w8"},
                         LnBwd{LR, TR, LW, true, "_c3", 256}, LnBwd{LR, 2, 8, true, "_br2_w8_c3", 256},
                         LnBwd{LR, 4, 4, true, "_br4_w4_c3", 256}}) {
    const int lnParts = int(cdiv(rows, v.rows));
    const bool oneLaunch = v.oneLaunch;
    auto part = [&](int j) {
      return Arg::device(lnPartials.device_ptr() + uint64_t(j) * uint64_t(lnParts) * C * sizeof(float),
                         size_t(lnParts) * C, DType::f32);
    };
    report(std::string("layernorm_bwd_fused") + v.suffix, 4.0 * act * e, [&] {
      lnBwd(on({uint32_t(lnParts)}, v.warps), dy, x, w, mean, rstd, y, dx, part(0), part(1), part(2), rows, C, true,
            true, v.rows, v.tileRows, v.block, int(cdiv(C, v.block)));
      if (oneLaunch)
        sumsOfBlocks(on({uint32_t(cdiv(C, sumBlock)), 3}, 4), lnPartials, dw, db, dbo, lnParts, C, false, sumRows,
                     sumBlock);
      else
        for (auto [j, out] : {std::pair{0, &dw}, std::pair{1, &db}, std::pair{2, &dbo}})
          sums(on({uint32_t(cdiv(C, sumBlock))}, 4), part(j), *out, lnParts, C, false, sumRows, sumBlock);
    });
  }
  report("bias_bwd_4c", 4.0 * act * e, [&] { // the MLP's first bias: 4 C columns
    colSums(on({uint32_t(cdiv(4 * C, colBlock)), uint32_t(partials)}, 4), hd, partialW, rows, 4 * C, colRows,
            colTileRows, colBlock);
    sums(on({uint32_t(cdiv(4 * C, sumBlock))}, 4), partialW, db4, partials, 4 * C, false, sumRows, sumBlock);
  });
  auto gelu = kernel("gelu", examples::gelu<T>, {"x", "out", "n", "BLOCK"});
  report("gelu_fwd", 2.0 * 4 * act * e,
         [&] { gelu(on({uint32_t(cdiv(4 * act, 1024))}, 4), h, hy, int32_t(4 * act), 1024); });
  auto geluBwd = kernel("gelu_bwd", k::gelu_bwd<T>, {"x", "dy", "dx", "n", "BLOCK"});
  report("gelu_bwd", 3.0 * 4 * act * e,
         [&] { geluBwd(on({uint32_t(cdiv(4 * act, 1024))}, 4), h, hy, hd, int32_t(4 * act), 1024); });
  auto residual = kernel("residual_add", k::residual_add<T>, {"x", "y", "out", "n", "BLOCK"});
  report("residual", 3.0 * act * e, [&] { residual(on({uint32_t(cdiv(act, 1024))}, 4), x, dy, y, act, 1024); });
  auto ceFwd = kernel("cross_entropy_fwd", k::cross_entropy_fwd<T>,
                      {"logits", "targets", "losses", "lse", "V", "Vp", "BLOCK"});
  report("cross_entropy_fwd", double(rows) * V * e,
         [&] { ceFwd(on({rows}, 8), logits, targets, losses, lse, V, Vp, 1024); });
  report("cross_entropy_fwd_w4", double(rows) * V * e,
         [&] { ceFwd(on({rows}, 4), logits, targets, losses, lse, V, Vp, 1024); });
  auto ceBwd = kernel("cross_entropy_bwd", k::cross_entropy_bwd<T>,
                      {"logits", "targets", "lse", "dlosses", "dlogits", "V", "Vp", "BLOCK"});
  report("cross_entropy_bwd", 2.0 * rows * Vp * e,
         [&] { ceBwd(on({rows}, 8), logits, targets, lse, dlosses, dlogits, V, Vp, 1024); });
  report("cross_entropy_bwd_w4", 2.0 * rows * Vp * e,
         [&] { ceBwd(on({rows}, 4), logits, targets, lse, dlosses, dlogits, V, Vp, 1024); });
  // As GptModel runs it: the gradient over the logits.
  report("cross_entropy_bwd_in_place", 2.0 * rows * Vp * e,
         [&] { ceBwd(on({rows}, 8), logits, targets, lse, dlosses, logits, V, Vp, 1024); });
  const std::vector<std::string> adamNames = {"params", "grads", "m", "v", "lr", "beta1", "beta2", "eps",
                                              "weight_decay", "bias1", "bias2", "grad_scale", "n", "BLOCK"};
  if constexpr (std::is_same_v<T, float>) {
    auto adamw = kernel("adamw", k::adamw, adamNames);
    report("adamw", 7.0 * double(params) * 4, [&] {
      adamw(on({uint32_t(cdiv(params, 1024))}, 4), p, g, m, v, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.1f, 0.05f, 1.0f,
            params, 1024);
    });
  } else { // the f32 step, plus the bf16 copy it writes
    std::vector<std::string> names = adamNames;
    names.insert(names.begin() + 1, "params_lp");
    names.insert(names.end() - 1, "seed");
    names.push_back("STOCHASTIC");
    auto adamw = kernel("adamw_mixed", k::adamw_mixed<T>, names);
    for (bool stochastic : {false, true}) // the copy rounded to nearest even, or stochastically
      report(stochastic ? "adamw_mixed_stochastic" : "adamw_mixed", 7.0 * double(params) * 4 + double(params) * e, [&] {
        adamw(on({uint32_t(cdiv(params, 1024))}, 4), p, copy16, g, m, v, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.1f, 0.05f,
              1.0f, params, int64_t(1), 1024, stochastic);
      });
  }
}

} // namespace

int main(int argc, char **argv) {
  int iters = 20;
  if (auto status = bench::Args("gpt2-layers", "GPT-2 124M's memory-bound kernels against a device-to-device "
                                               "copy of the same bytes")
                        .option("iters", iters, "timed runs a kernel (the median counts)")
                        .parse(argc, argv))
    return *status;
  fmt::print("# gpt2-layers: GPT-2 124M's memory-bound kernels (f32, then bf16) vs a device-to-device copy\n");
  return bench::runOnGpu([&](const DeviceInfo &info) {
    fmt::print("device: {} ({}), driver {}; median of {} (CUDA events)\n", info.name, info.chip, info.driver_version,
               iters);
    const int64_t params = 124475904;
    double copyGBs;
    {
      DeviceBuffer copySrc(size_t(params), DType::f32), copyDst(size_t(params), DType::f32);
      copySrc.fill_bytes(0);
      const double copyMs = time_ms([&] { copy(copySrc, copyDst); }, iters).median;
      copyGBs = 2.0 * double(params) * 4 / copyMs / 1e6;
      fmt::print("{:<31} {:>9.3f} ms {:>8.0f} GB/s\n", "d2d copy (124M f32)", copyMs, copyGBs);
    }
    runLayers<float>(iters, copyGBs);
    runLayers<bfloat16>(iters, copyGBs);
  });
}
