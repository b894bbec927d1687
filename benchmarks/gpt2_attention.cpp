// gpt2_attention.cpp - GPT-2 124M's causal flash attention (models/gpt/
// Attention.h) at its training shape (B = 8, 12 heads, T = 1024, head size
// 64, q/k/v read from the fused [B, T, 3C] buffer) on device buffers, forward
// and backward (delta + dkdv + dq), in bf16 at the tiles GptModel uses on
// this device (descriptors: TMA rings feeding wgmma on sm_90a). TFLOP/s count
// a causal forward as 2 B H T^2 D (two matmuls, half the scores) and the
// backward as 2.5 times that (five matmuls); torch SDPA at the same shape:
// torch_reference.py. The descriptor kernels' gradients are checked against
// the pointer kernels' (other loads, other tiles). On sm_90a both also run
// warp specialised (the forward with and without its two consumer
// warpgroups taking turns: TEGULA_WARPGROUP_TURNS), checked against the
// plain runs. Then f32 at tf32 (GptModel's default storage): the pointer
// kernels at the model's f32 tiles and at a few others, each checked against
// the model's tiles' results, so a run says which tiles f32 should take.
// Without a driver it prints "skipped: ..." and exits 0.
//
//   gpt2-attention [--iters 20] [--batch 8]
#include "BenchArgs.h"
#include "GpuMain.h"
#include "ScopedSwitch.h"
#include "models/gpt/Attention.h"
#include "models/gpt/Model.h"
#include "tegula/device.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

using namespace tegula;
namespace k = tegula::gpt::kernels;

namespace {

/// ||a - b|| / ||b|| over two bf16 device buffers; infinite with a NaN.
double relDiff(const DeviceBuffer &a, const DeviceBuffer &b) {
  std::vector<bfloat16> x = a.to_host<bfloat16>(), y = b.to_host<bfloat16>();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(float(x[i])) - double(float(y[i]));
    if (std::isnan(d))
      return INFINITY;
    num += d * d;
    den += double(float(y[i])) * double(float(y[i]));
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

/// ||a - b|| / ||b|| over two f32 device buffers; infinite with a NaN.
double relDiffF32(const DeviceBuffer &a, const DeviceBuffer &b) {
  std::vector<float> x = a.to_host<float>(), y = b.to_host<float>();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(x[i]) - double(y[i]);
    if (std::isnan(d))
      return INFINITY;
    num += d * d;
    den += double(y[i]) * double(y[i]);
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

/// f32 storage, tf32 dots - GptModel's default - through the pointer
/// kernels (cp.async rings): the forward and the backward at the model's
/// tiles, then at other tiles (forward: rows x keys, warps; backward: rows a
/// program owns x rows it steps, warps), each checked against the model's
/// tiles' results. True when every one agrees.
bool f32Attention(const DeviceInfo &info, int B, int iters) {
  const int H = 12, T = 1024, D = 64, C = H * D, BT = B * T;
  constexpr tl::precision P = tl::precision::tf32;
  const gpt::GptModel::Tiles tiles = gpt::GptModel::gpu_tiles(DType::f32, info.chip);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float &x : v)
      x = normal(rng);
    return DeviceBuffer::from(v);
  };
  DeviceBuffer qkv = random(int64_t(BT) * 3 * C), dout = random(int64_t(BT) * C);
  DeviceBuffer o(size_t(BT) * C, DType::f32), lse(size_t(B) * H * T, DType::f32),
      delta(size_t(B) * H * T, DType::f32);
  DeviceBuffer o2(size_t(BT) * C, DType::f32), lse2(size_t(B) * H * T, DType::f32);
  DeviceBuffer dqkv(size_t(BT) * 3 * C, DType::f32), dqkv2(size_t(BT) * 3 * C, DType::f32);
  const float scale = 1.0f / std::sqrt(float(D));
  const uint32_t bh = uint32_t(B * H);
  auto on = [](Grid g, int warps) { return LaunchOptions{.grid = g, .num_warps = warps, .backend = Backend::GPU}; };
  auto fwd = kernel("attention_fwd", k::attention_fwd<float, P>,
                    {"qkv", "o", "lse", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "first_block", "D",
                     "BM", "BN", "diagonal_mask_only"});
  const std::vector<std::string> bwdParams = {"qkv",   "dout", "lse", "delta", "dqkv",  "q_off",   "k_off",
                                              "v_off", "stride", "H", "T",     "scale", "D",       "BM",
                                              "BN",    "partial", "bias_sums"};
  auto pre = kernel("attention_bwd_delta", k::attention_bwd_delta<float>, {"o", "dout", "delta", "H", "T", "D", "BM"});
  auto dkdv = kernel("attention_bwd_dkdv", k::attention_bwd_dkdv<float, P>, bwdParams);
  auto dq = kernel("attention_bwd_dq", k::attention_bwd_dq<float, P>, bwdParams);
  auto forward = [&](int bm, int bn, int warps, DeviceBuffer &out, DeviceBuffer &lseOut) {
    fwd(on({uint32_t(cdiv(T, bm)), bh}, warps), qkv, out, lseOut, 0, C, 2 * C, 3 * C, H, T, scale, 0, D, bm, bn,
        tiles.attention_fwd_diagonal_mask_only);
  };
  DeviceBuffer partials(size_t(B) * size_t(cdiv(T, 16)) * 3 * C, DType::f32); // room for own >= 16
  auto backward = [&](int own, int step, int warps, DeviceBuffer &out) {
    pre(on({uint32_t(cdiv(T, 64)), bh}, 4), o, dout, delta, H, T, D, 64);
    dkdv(on({uint32_t(cdiv(T, own)), bh}, warps), qkv, dout, lse, delta, out, 0, C, 2 * C, 3 * C, H, T, scale, D,
         step, own, partials, true);
    dq(on({uint32_t(cdiv(T, own)), bh}, warps), qkv, dout, lse, delta, out, 0, C, 2 * C, 3 * C, H, T, scale, D, own,
       step, partials, true);
  };
  const double fwdFlops = 2.0 * B * H * double(T) * T * D, bwdFlops = 2.5 * fwdFlops;
  bool ok = true;
  struct Tile {
    int rows, cols, warps;
  };
  const Tile modelFwd{tiles.attention_fwd_block,
                      tiles.attention_fwd_step ? tiles.attention_fwd_step : tiles.attention_fwd_block,
                      tiles.attention_fwd_warps};
  const Tile modelBwd{tiles.attention_bwd_block, tiles.attention_bwd_step, tiles.attention_warps};
  o.fill_bytes(0xff);
  forward(modelFwd.rows, modelFwd.cols, modelFwd.warps, o, lse);
  dqkv.fill_bytes(0xff);
  backward(modelBwd.rows, modelBwd.cols, modelBwd.warps, dqkv);
  // The candidates compile without spills for sm_90a (ptxas; on sm_80 the
  // backward owning 64 rows spills 24 bytes).
  for (const Tile &t : {modelFwd, Tile{64, 32, 4}, Tile{128, 32, 8}, Tile{64, 64, 8}}) {
    o2.fill_bytes(0xff);
    try {
      forward(t.rows, t.cols, t.warps, o2, lse2);
    } catch (const Error &e) {
      fmt::print("f32 forward {}x{} {} warps: {}\n", t.rows, t.cols, t.warps, e.what());
      continue;
    }
    const double err = relDiffF32(o2, o);
    const double ms = time_ms([&] { forward(t.rows, t.cols, t.warps, o2, lse2); }, iters).median;
    fmt::print("f32 forward {}x{} {} warps vs the model's tiles: rel {:.2e} {}\n", t.rows, t.cols, t.warps, err,
               err < 1e-3 ? "ok" : "FAILED");
    ok = ok && err < 1e-3;
    fmt::print("gpt2_attention_fwd_f32_{}x{}_w{}_b{} {:.3f} ms TFLOP/s {:.1f}\n", t.rows, t.cols, t.warps, B, ms,
               fwdFlops / ms / 1e9);
  }
  for (const Tile &t : {modelBwd, Tile{64, 32, 8}}) {
    dqkv2.fill_bytes(0xff);
    try {
      backward(t.rows, t.cols, t.warps, dqkv2);
    } catch (const Error &e) {
      fmt::print("f32 backward own {} step {} {} warps: {}\n", t.rows, t.cols, t.warps, e.what());
      continue;
    }
    const double err = relDiffF32(dqkv2, dqkv);
    const double ms = time_ms([&] { backward(t.rows, t.cols, t.warps, dqkv2); }, iters).median;
    fmt::print("f32 backward own {} step {} {} warps vs the model's tiles: rel {:.2e} {}\n", t.rows, t.cols,
               t.warps, err, err < 1e-3 ? "ok" : "FAILED");
    ok = ok && err < 1e-3;
    fmt::print("gpt2_attention_bwd_f32_{}x{}_w{}_b{} {:.3f} ms TFLOP/s {:.1f}\n", t.rows, t.cols, t.warps, B, ms,
               bwdFlops / ms / 1e9);
  }
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  int iters = 20, B = 8;
  if (auto status = bench::Args("gpt2-attention", "GPT-2 124M's causal attention forward and backward at the "
                                                  "model's tiles and the alternatives")
                        .option("iters", iters, "timed runs a kernel (the median counts)")
                        .option("batch", B, "sequences of 1024 tokens")
                        .parse(argc, argv))
    return *status;
  const int H = 12, T = 1024, D = 64, C = H * D, BT = B * T;
  fmt::print("# gpt2-attention: GPT-2 124M's causal attention, bf16 then f32 (tf32 dots), B={} H={} T={} D={}\n",
             B, H, T, D);
  return bench::runOnGpu([&](const DeviceInfo &info) {
    const gpt::GptModel::Tiles tiles = gpt::GptModel::gpu_tiles(DType::bf16, info.chip);
    fmt::print("device: {} ({}), driver {}; median of {} (CUDA events); tiles: forward {} rows, backward {} "
               "stepping {}, {} warps\n",
               info.name, info.chip, info.driver_version, iters, tiles.attention_fwd_block,
               tiles.attention_bwd_block, tiles.attention_bwd_step, tiles.attention_warps);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto random = [&](int64_t n) {
      std::vector<bfloat16> v(static_cast<size_t>(n));
      for (bfloat16 &x : v)
        x = bfloat16(normal(rng));
      return DeviceBuffer::from(v);
    };
    DeviceBuffer qkv = random(int64_t(BT) * 3 * C), dout = random(int64_t(BT) * C);
    DeviceBuffer o(size_t(BT) * C, DType::bf16), dqkv(size_t(BT) * 3 * C, DType::bf16),
        reference(size_t(BT) * 3 * C, DType::bf16);
    DeviceBuffer lse(size_t(B) * H * T, DType::f32), delta(size_t(B) * H * T, DType::f32);
    const float scale = 1.0f / std::sqrt(float(D));
    auto on = [](Grid g, int warps, bool ws = false) {
      return LaunchOptions{.grid = g, .num_warps = warps, .backend = Backend::GPU, .warp_specialize = ws};
    };

    const std::vector<std::string> bwdParams = {"qkv",    "dout", "lse", "delta", "dqkv", "q_off",   "k_off",
                                                "v_off",  "stride", "H", "T",     "scale", "D",     "BM",
                                                "BN",     "partial", "bias_sums"};
    std::vector<std::string> tmaParams = bwdParams;
    tmaParams.insert(tmaParams.end() - 2, "rows");
    auto fwd = kernel("attention_fwd_tma", k::attention_fwd_tma<bfloat16>,
                      {"qkv", "o", "lse", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "first_block", "D",
                       "BM", "BN", "rows", "diagonal_mask_only"});
    auto pre = kernel("attention_bwd_delta", k::attention_bwd_delta<bfloat16>, {"o", "dout", "delta", "H", "T", "D", "BM"});
    auto dkdv = kernel("attention_bwd_dkdv_tma", k::attention_bwd_dkdv_tma<bfloat16>, tmaParams);
    auto dq = kernel("attention_bwd_dq_tma", k::attention_bwd_dq_tma<bfloat16>, tmaParams);
    auto dkdvPointers = kernel("attention_bwd_dkdv", k::attention_bwd_dkdv<bfloat16>, bwdParams);
    auto dqPointers = kernel("attention_bwd_dq", k::attention_bwd_dq<bfloat16>, bwdParams);

    const uint32_t bh = uint32_t(B * H);
    const int fb = tiles.attention_fwd_block, own = tiles.attention_bwd_block, step = tiles.attention_bwd_step,
              warps = tiles.attention_warps, fs = tiles.attention_fwd_step ? tiles.attention_fwd_step : fb;
    // ws: on sm_90a, warp specialised (a producer warpgroup fills the TMA
    // rings; in the forward the two consumer warpgroups take turns issuing
    // their dots with TEGULA_WARPGROUP_TURNS=1).
    auto forwardWith = [&](bool ws, DeviceBuffer &out, DeviceBuffer &lseOut) {
      fwd(on({uint32_t(cdiv(T, fb)), bh}, tiles.attention_fwd_warps, ws), qkv, out, lseOut, 0, C, 2 * C, 3 * C, H,
          T, scale, 0, D, fb, fs, BT, tiles.attention_fwd_diagonal_mask_only);
    };
    auto forward = [&] { forwardWith(false, o, lse); };
    // The backward's ws: each ring filled by the producer is read by two dots.
    // As GptModel runs it: with the column sums of dq, dk and dv (c_attn's
    // bias gradient, first pass) into a row of partials per `own` rows.
    DeviceBuffer partials(size_t(B) * size_t(cdiv(T, own)) * 3 * C, DType::f32);
    auto backwardWith = [&](bool ws) {
      pre(on({uint32_t(cdiv(T, step)), bh}, 4), o, dout, delta, H, T, D, step);
      dkdv(on({uint32_t(cdiv(T, own)), bh}, warps, ws), qkv, dout, lse, delta, dqkv, 0, C, 2 * C, 3 * C, H, T,
           scale, D, step, own, BT, partials, true);
      dq(on({uint32_t(cdiv(T, own)), bh}, warps, ws), qkv, dout, lse, delta, dqkv, 0, C, 2 * C, 3 * C, H, T, scale,
         D, own, step, BT, partials, true);
    };
    auto backward = [&] { backwardWith(false); };
    // Poisoned (NaN) first: an element no kernel writes fails the check.
    dqkv.fill_bytes(0xff);
    reference.fill_bytes(0xff);
    forward();
    backward();
    // The reference: the pointer kernels at 64 x 64, 8 warps (cp.async rings).
    dkdvPointers(on({uint32_t(cdiv(T, 64)), bh}, 8), qkv, dout, lse, delta, reference, 0, C, 2 * C, 3 * C, H, T,
                 scale, D, 64, 64, partials, false);
    dqPointers(on({uint32_t(cdiv(T, 64)), bh}, 8), qkv, dout, lse, delta, reference, 0, C, 2 * C, 3 * C, H, T, scale,
               D, 64, 64, partials, false);
    const double err = relDiff(dqkv, reference);
    const double fwdFlops = 2.0 * B * H * double(T) * T * D, bwdFlops = 2.5 * fwdFlops;
    const double fwdMs = time_ms(forward, iters).median, bwdMs = time_ms(backward, iters).median;
    bool ok = err < 2e-2;
    fmt::print("gradients vs the pointer kernels: rel {:.2e} {}\n", err, ok ? "ok" : "FAILED");
    // End with a number: gpu-check.sh's summary shows such lines.
    fmt::print("gpt2_attention_fwd_bf16_b{} {:.3f} ms TFLOP/s {:.1f}\n", B, fwdMs, fwdFlops / fwdMs / 1e9);
    fmt::print("gpt2_attention_bwd_bf16_b{} {:.3f} ms TFLOP/s {:.1f}\n", B, bwdMs, bwdFlops / bwdMs / 1e9);
    if (info.chip == "sm_90a") {
      DeviceBuffer o2(size_t(BT) * C, DType::bf16), lse2(size_t(B) * H * T, DType::f32);
      for (bool turns : {false, true}) {
        bench::ScopedSwitch on("TEGULA_WARPGROUP_TURNS", turns ? "1" : "0");
        o2.fill_bytes(0xff);
        forwardWith(true, o2, lse2);
        const double fwdErr = relDiff(o2, o);
        const double ms = time_ms([&] { forwardWith(true, o2, lse2); }, iters).median;
        const char *what = turns ? "ws_turns" : "ws";
        fmt::print("warp specialised forward{} vs the plain one: rel {:.2e} {}\n", turns ? " with turns" : "", fwdErr,
                   fwdErr < 1e-2 ? "ok" : "FAILED");
        ok = ok && fwdErr < 1e-2;
        fmt::print("gpt2_attention_fwd_{}_bf16_b{} {:.3f} ms TFLOP/s {:.1f}\n", what, B, ms, fwdFlops / ms / 1e9);
      }
      dqkv.fill_bytes(0xff);
      backwardWith(true);
      const double wsErr = relDiff(dqkv, reference);
      const double wsMs = time_ms([&] { backwardWith(true); }, iters).median;
      fmt::print("warp specialised backward vs the pointer kernels: rel {:.2e} {}\n", wsErr,
                 wsErr < 2e-2 ? "ok" : "FAILED");
      ok = ok && wsErr < 2e-2;
      fmt::print("gpt2_attention_bwd_ws_bf16_b{} {:.3f} ms TFLOP/s {:.1f}\n", B, wsMs, bwdFlops / wsMs / 1e9);
      // The forward at other tiles, each checked against the model's: the
      // attention benchmark's flash attention (q, k, v apart) ran GPT-2's
      // shape fastest at 64 x 64 on 4 warps without a producer (H100,
      // 2026-11-26: 267.6 TFLOP/s, 128 x 128 warp specialised 209.3).
      struct Candidate {
        int block, warps;
        bool ws;
      };
      // (ptxas: 64 x 64 at 4 warps 107 registers, 58 KiB, 3 CTAs an SM.)
      for (const Candidate &t : {Candidate{64, 4, false}, Candidate{64, 4, true}, Candidate{128, 8, false}}) {
        auto run = [&] {
          fwd(on({uint32_t(cdiv(T, t.block)), bh}, t.warps, t.ws), qkv, o2, lse2, 0, C, 2 * C, 3 * C, H, T, scale, 0,
              D, t.block, t.block, BT, tiles.attention_fwd_diagonal_mask_only);
        };
        o2.fill_bytes(0xff);
        try {
          run();
        } catch (const Error &e) {
          fmt::print("forward {}x{} {} warps{}: {}\n", t.block, t.block, t.warps, t.ws ? " ws" : "", e.what());
          continue;
        }
        const double err = relDiff(o2, o);
        const double ms = time_ms(run, iters).median;
        fmt::print("forward {}x{} {} warps{} vs the model's tiles: rel {:.2e} {}\n", t.block, t.block, t.warps,
                   t.ws ? " ws" : "", err, err < 1e-2 ? "ok" : "FAILED");
        ok = ok && err < 1e-2;
        fmt::print("gpt2_attention_fwd_{}x{}_w{}{}_bf16_b{} {:.3f} ms TFLOP/s {:.1f}\n", t.block, t.block, t.warps,
                   t.ws ? "_ws" : "", B, ms, fwdFlops / ms / 1e9);
      }
    }
    ok = f32Attention(info, B, iters) && ok;
    return ok ? 0 : 1;
  });
}
