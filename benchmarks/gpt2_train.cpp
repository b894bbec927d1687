// gpt2_train.cpp - GPT-2 124M training steps (forward, backward, clipping,
// AdamW) written in Tegula's DSL, on the GPU: tokens/s, ms per step, MFU and
// the memory each part takes, in the model's two precisions: f32 storage with
// tf32 dots (torch with allow_tf32), and bf16 weights and activations with
// f32 master weights (torch's bf16 autocast) - the comparison:
// benchmarks/gpt2_torch.py in the same session. Without a driver it prints
// "skipped: ..." and exits 0.
//
//   gpt2-train [--batch 8] [--seq 1024] [--steps 10] [--dtype f32|bf16|all]
//              [--tiles name=value,...|@FILE] [--variants all|plain|ws] [--tune]
//
// --tiles changes GptModel's tiles for every run (GptModel::Tiles::with:
// e.g. attention_fwd_block=64,attention_fwd_warps=4,attention_fwd_ws=0;
// @FILE reads them from a file, as tegula-gpt tune writes it);
// --tune first tunes each precision's default variant's tiles
// (tune_tiles: every trial's step time, the chosen overrides), then times
// the tuned tiles ("_tuned" in the result lines);
// --variants ws runs only the default (warp specialised on Hopper) variant
// of each precision, plain only the one-program-a-tile one.
//
// After the timed steps, one more step runs with every launch timed
// (tegula::profile_kernels): GPU time per kernel.
//
// On Hopper each precision runs twice: as written, one program a GEMM tile
// ("f32", "bf16"), and warp specialised with persistent GEMMs ("f32_ws",
// "bf16_ws": GptModel's default there); bf16 once more with the weight
// gradients on the default stream ("bf16_ws_serial": not overlapped with
// the rest of the backward), and once with them one program a tile instead
// of stream-K ("bf16_ws_dw_tiles"); f32 once more with its weight gradients
// read as stored, without transposes ("f32_ws_dw_direct": wgmma through
// K-major rings 4-byte copies fill).
#include "BenchArgs.h"
#include "GpuMain.h"
#include "models/gpt/Model.h"
#include "models/gpt/TileTuner.h"

#include "tegula/device.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <cstring>
#include <random>

#include <fmt/format.h>

using namespace tegula;
using namespace tegula::gpt;

namespace {

double peakFlops(const std::string &name) { // dense bf16, as llm.c reports MFU
  return name.find("H100") != std::string::npos || name.find("H200") != std::string::npos ? 989e12
         : name.find("A100") != std::string::npos                                         ? 312e12
                                                                                          : 0;
}

/// GptModel's switches a run sets. dwTransposed false: f32's weight
/// gradients read x and dy as stored (Tiles::dw_transposed).
struct Variant {
  bool warpSpecialize, overlap, streamK, dwTransposed = true;
};

/// Tunes `model`'s tiles (tune_tiles, 5 timed steps a trial, 3 rounds) on a
/// model of its own built the same way (tuning moves AdamW's state) and
/// sets the chosen ones on `model`.
void tuneTiles(GptModel &model, const Variant &v, const std::vector<int32_t> &tokens,
               const std::vector<int32_t> &targets, int B, int T, const DeviceInfo &info, const std::string &tag) {
  const std::vector<TileChoice> choices =
      tile_choices(model.storage(), info.chip, tl::precision::tf32, model.warp_specialize());
  GptModel probe(GptConfig::gpt2_124m(), Backend::GPU, tl::precision::tf32, model.storage());
  probe.set_warp_specialize(v.warpSpecialize);
  probe.set_overlap_weight_gradients(v.overlap);
  probe.set_stream_k_weight_gradients(v.streamK);
  probe.init_random(1);
  StepTimer timer(probe, tokens, targets, B, T, 5);
  const GptModel::Tiles start = model.tiles();
  TileTuning tuned = tune_tiles(start, choices, std::ref(timer), {.progress = [](const TileTrial &t) {
    if (t.error.empty())
      fmt::print("  tune {:<16} {:<72} {:8.3f} ms a step\n", t.choice, t.overrides.empty() ? "(as is)" : t.overrides,
                 t.ms);
    else
      fmt::print("  tune {:<16} {:<72} error: {}\n", t.choice, t.overrides, t.error);
  }});
  model.set_tiles(tuned.tiles);
  fmt::print("tuned tiles: {} ({:.3f} ms a step at lr 0, {:.3f} as they were)\n",
             tuned.overrides.empty() ? "as they were" : tuned.overrides, tuned.tuned_ms, tuned.start_ms);
  fmt::print("gpt2_124m_train_tegula_{}_tuning_speedup {:.4f}\n", tag, tuned.start_ms / tuned.tuned_ms);
}

/// Times `steps` training steps of GPT-2 124M with `storage` and prints its
/// figures; "f32" or "bf16" in the names of the result lines.
void run(DType storage, Variant v, int B, int T, int steps, const DeviceInfo &info, const std::string &tiles,
         bool tune) {
  const std::string tag = std::string(dtype_name(storage)) + (v.warpSpecialize ? "_ws" : "") +
                          (v.overlap ? "" : "_serial") + (v.streamK ? "" : "_dw_tiles") +
                          (v.dwTransposed ? "" : "_dw_direct") + (tune ? "_tuned" : "");
  fmt::print("== {} ({})\n", tag, storage == DType::bf16 ? "bf16 weights and activations, f32 master weights"
                                                          : "f32 storage, tf32 dots");
  GptModel model(GptConfig::gpt2_124m(), Backend::GPU, tl::precision::tf32, storage);
  model.set_warp_specialize(v.warpSpecialize);
  model.set_overlap_weight_gradients(v.overlap);
  model.set_stream_k_weight_gradients(v.streamK);
  if (!v.dwTransposed)
    model.set_tiles(model.tiles().with("dw_transposed=0"));
  if (!tiles.empty()) {
    model.set_tiles(model.tiles().with(tiles));
    fmt::print("tiles: {}\n", model.tiles().str());
  }
  model.init_random(1);
  std::mt19937 rng(1);
  std::vector<int32_t> tokens(size_t(B * T)), targets(size_t(B * T));
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = int32_t(rng() % 50257), targets[i] = int32_t(rng() % 50257);
  auto step = [&] {
    float loss = model.forward(tokens, targets, B, T);
    model.zero_grad();
    model.backward();
    model.clip_grad_norm(1.0f);
    model.step({.lr = 3e-4f});
    return loss;
  };
  for (int i = 0; i < 2; ++i) // compile, load, allocate
    fmt::print("warm-up step {}: loss {:.4f}\n", i + 1, step());
  if (tune) {
    tuneTiles(model, v, tokens, targets, B, T, info, tag);
    fmt::print("warm-up step at the tuned tiles: loss {:.4f}\n", step());
  }
  synchronize();
  auto start = std::chrono::steady_clock::now();
  float loss = 0;
  for (int i = 0; i < steps; ++i)
    loss = step();
  synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
  const double flops = model.training_flops_per_token(T) * B * T, peak = peakFlops(info.name);
  GptModel::Memory mem = model.memory();
  fmt::print("memory: parameters {:.0f} MiB, gradients {:.0f} MiB, AdamW {:.0f} MiB, activations {:.0f} MiB "
             "({:.0f} MiB per layer), total {:.0f} MiB, peak {:.0f} MiB\n",
             mem.parameters / 1048576.0, mem.gradients / 1048576.0, mem.optimizer / 1048576.0,
             mem.activations / 1048576.0, mem.activations_per_layer / 1048576.0, mem.total() / 1048576.0,
             mem.peak / 1048576.0);
  fmt::print("last loss {:.4f}; {:.1f} ms per step\n", loss, s * 1e3);
  // Ends with a number: gpu-check.sh's summary shows such lines.
  fmt::print("gpt2_124m_train_tegula_{}_tokens_per_s {:.0f}\n", tag, B * T / s);
  if (peak > 0)
    fmt::print("gpt2_124m_train_tegula_{}_mfu_vs_bf16_peak_percent {:.2f}\n", tag, 100.0 * flops / s / peak);
  // Where a step's GPU time goes: one more step with every launch between
  // two events (indented rows: not summary lines). Launches timed before
  // (TEGULA_PROFILE=1) are dropped first.
  kernel_profile();
  profile_kernels(true);
  step();
  synchronize();
  const std::vector<KernelProfile> profile = kernel_profile();
  profile_kernels(false);
  double inKernels = 0;
  for (const KernelProfile &k : profile)
    inKernels += k.total_ms;
  fmt::print("one {} step, GPU time per kernel ({:.2f} ms in kernels; {:.1f} ms a step unprofiled):\n", tag,
             inKernels, s * 1e3);
  for (const KernelProfile &k : profile) // the linear layers' GEMMs apart (GptModel's ProfileLabels)
    fmt::print("  {:<52} {:>5} calls {:>9.3f} ms {:>6.1f} %\n",
               k.label.empty() ? k.kernel : fmt::format("{} ({})", k.kernel, k.label), k.calls, k.total_ms,
               100.0 * k.total_ms / inKernels);
}

} // namespace

int main(int argc, char **argv) {
  int B = 8, T = 1024, steps = 10;
  std::string dtype = "all", tiles, variants = "all";
  bool tune = false;
  if (auto status = bench::Args("gpt2-train", "GPT-2 124M training steps in Tegula: tokens/s, MFU, memory and "
                                              "each kernel's time")
                        .option("batch", B, "sequences a step")
                        .option("seq", T, "tokens a sequence")
                        .option("steps", steps, "timed steps")
                        .option("dtype", dtype, "the storage types timed", {"f32", "bf16", "all"})
                        .option("variants", variants, "the variants timed (ws: warp specialised)",
                                {"all", "plain", "ws"})
                        .option("tiles", tiles, "GptModel::Tiles overrides, name=value,... or @FILE")
                        .flag("tune", tune, "tune the default variants' tiles first (tegula-gpt tune's search)")
                        .parse(argc, argv))
    return *status;
  try { // a misspelt field fails here, not after the first run
    tiles = tile_overrides_from(tiles);
    (void)gpt::GptModel::gpu_tiles().with(tiles);
  } catch (const Error &e) {
    fmt::print(stderr, "gpt2-train: --tiles: {}\n", e.what());
    return 2;
  }
  fmt::print("# gpt2-train: GPT-2 124M in Tegula, B={} T={}, {} timed steps, dtype {}{}{}{}\n", B, T, steps, dtype,
             tiles.empty() ? "" : ", tiles " + tiles, variants == "all" ? "" : ", variants " + variants,
             tune ? ", tuning the default variants' tiles" : "");
  return bench::runOnGpu([&](const DeviceInfo &info) {
    int status = 0;
    fmt::print("device: {} ({}), driver {}\n", info.name, info.chip, info.driver_version);
    for (DType storage : {DType::f32, DType::bf16}) {
      if (dtype != "all" && dtype != dtype_name(storage))
        continue;
      // bf16 on Hopper also without the weight gradients' own stream (what
      // overlapping them with the backward gains) and with them one program a
      // tile (what stream-K gains).
      // f32 on Hopper also with the weight gradients read as stored (wgmma
      // through 4-byte scatter rings) instead of through transposes.
      for (Variant v : {Variant{false, true, true}, Variant{true, true, true}, Variant{true, false, true},
                        Variant{true, true, false}, Variant{true, true, true, false}}) {
        if (v.warpSpecialize && info.chip != "sm_90a")
          continue;
        if ((!v.overlap || !v.streamK) && storage != DType::bf16)
          continue;
        if (!v.dwTransposed && storage != DType::f32)
          continue;
        // the model's default switches, warp specialised or not
        const bool isDefault = v.overlap && v.streamK && v.dwTransposed;
        if ((variants == "ws" && !(isDefault && v.warpSpecialize == (info.chip == "sm_90a"))) ||
            (variants == "plain" && (v.warpSpecialize || !isDefault)))
          continue;
        try {
          run(storage, v, B, T, steps, info, tiles, tune && isDefault && v.warpSpecialize == (info.chip == "sm_90a"));
        } catch (const Error &e) { // report, and go on to the other precision
          fmt::print("error ({}{}{}{}): {}\n", dtype_name(storage), v.warpSpecialize ? ", warp specialised" : "",
                     v.overlap ? "" : ", serial", v.streamK ? "" : ", weight gradients one program a tile", e.what());
          status = 1;
        }
      }
    }
    return status;
  });
}
