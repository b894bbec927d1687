//===- TileTuner.cpp - the model's tiles chosen by timing training steps --===//
#include "models/gpt/TileTuner.h"

#include "tegula/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

namespace tegula::gpt {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string joined(const std::vector<std::string> &parts) {
  std::string out;
  for (const std::string &p : parts)
    if (!p.empty())
      out += (out.empty() ? "" : ",") + p;
  return out;
}

} // namespace

std::vector<TileChoice> tile_choices(DType storage, const std::string &chip, tl::precision matmul,
                                     bool warpSpecialize) {
  const GptModel::Tiles defaults = GptModel::gpu_tiles(storage, chip, matmul);
  const bool hopper = chip == "sm_90a";
  // Warp specialisation applies to the TMA-fed loops: bf16's, on sm_90a.
  const bool producer = hopper && warpSpecialize && storage == DType::bf16;
  std::vector<TileChoice> choices;
  // The largest expected effects first: coordinate descent judges the later
  // choices on top of them.
  if (producer)
    // c_fc's forward and c_proj's fused dx: their GELU epilogues under the
    // other program's K loop (about 1.4 ms of a 21.4 ms step at stake on
    // the H100 of 2026-11-27; ping-pong lost 15-30% on plain GEMMs there).
    choices.push_back({"gelu_ping_pong", {"", "gelu_ping_pong=1"}});
  if (storage == DType::bf16 && hopper) {
    // gpt2-attention ran GPT-2's forward at 64 x 64 on 4 warps without a
    // producer in 0.055 ms against 0.066 for the model's tiles (2026-11-27).
    std::vector<std::string> fwd = {"", "attention_fwd_block=64,attention_fwd_warps=4"};
    if (producer)
      fwd.insert(fwd.end(), {"attention_fwd_ws=0", "attention_fwd_block=64,attention_fwd_warps=4,attention_fwd_ws=0"});
    choices.push_back({"attention_fwd", fwd});
    // Attention's backward (dkdv alone 1.64 ms of the 2026-11-27 step):
    // half the step, or a warpgroup owning 64 rows; with a producer (5%
    // slower in gpt2-attention on the H100 of 2026-11-27, alone).
    std::vector<std::string> bwd = {"", "attention_bwd_step=32", "attention_bwd_block=64,attention_warps=4"};
    if (producer)
      bwd.push_back("attention_bwd_ws=1");
    choices.push_back({"attention_bwd", bwd});
  }
  if (producer)
    // The persistent GEMMs' tile order: row blocks a group (L2 reuse of
    // the weights' column blocks against the activations' row blocks).
    choices.push_back({"group_m", {"", "group_m=4", "group_m=16"}});
  if (!(storage == DType::f32 && hopper && matmul == tl::precision::tf32)) // its weight gradients: transposes
    choices.push_back({"dw_stream_k", {"", fmt::format("dw_stream_k={}", int(!defaults.dw_stream_k))}});
  if (storage == DType::bf16 && hopper)
    // The blocks' weight gradients (3.75 ms of the 2026-11-27 step, 250-420
    // TFLOP/s, stream-K at 128 x 128) on m64n256 wgmmas.
    choices.push_back({"dw_bn", {"", "dw_bn=256"}});
  if (storage == DType::bf16 && hopper)
    // wte's gradient (1.81 ms of the 2026-11-27 step at 128 x 128, 349
    // TFLOP/s, launched in the order that read dlogits from DRAM 6 times):
    // 256 wide (the default since) on m64n256 wgmmas, or dwBlockN's 128.
    choices.push_back({"head_dw_bn", {"", defaults.head_dw_bn ? "head_dw_bn=0" : "head_dw_bn=256"}});
  // LayerNorm's backward: one row a step on 4 or 8 warps, 2 or 4 rows a
  // step on 8 warps (gpt2-layers' _w8, _br2_w8, _br4_w8), or in bf16 a warp
  // a row - no barrier a row, 16-byte loads - in 256-column chunks
  // (_br4_w4_c3: 255 registers, no spill; in one block of 1024, or in f32,
  // a warp's row spills a quarter of a kilobyte or more).
  std::vector<std::string> lnBwd = {"", "ln_bwd_tile_rows=1,ln_bwd_warps=8", "ln_bwd_tile_rows=2,ln_bwd_warps=8",
                                    "ln_bwd_tile_rows=4,ln_bwd_warps=8"};
  if (storage == DType::bf16)
    lnBwd.push_back("ln_bwd_tile_rows=4,ln_bwd_warps=4,ln_bwd_block=256");
  choices.push_back({"ln_bwd", lnBwd});
  // ... and its rows a program: 512 programs of 16 rows for GPT-2's 8192
  // fill an H100's SMs to a quarter of their warps; 8 rows write twice the
  // partial column sums.
  choices.push_back({"ln_bwd_rows", {"", "ln_bwd_rows=8", "ln_bwd_rows=32"}});
  // ... and in 256-column chunks: GPT-2's 768 without padding (its three
  // accumulators and the next rows' inputs: a quarter fewer registers).
  choices.push_back({"ln_bwd_block", {"", "ln_bwd_block=256"}});
  // LayerNorm's forward: rows a program at a warp a row (_r4, _r8).
  choices.push_back({"ln_fwd_rows", {"", "ln_fwd_rows=4", "ln_fwd_rows=8"}});
  // ... and its rows in 256-column chunks: GPT-2's 768 without padding.
  choices.push_back({"ln_fwd_block", {"", "ln_fwd_block=256"}});
  // The column sums' second pass (bias and LayerNorm parameter gradients,
  // 25 launches a step of 48-144 programs): narrower column blocks, more
  // programs.
  choices.push_back({"column_sums",
                     {"", "column_sum_block=8", "column_sum_rows=256,column_sum_block=8",
                      "column_sum_rows=64,column_sum_block=32"}});
  // Each choice can also go back to the device's defaults for the fields it
  // sets (a start from --tiles may have moved them): the same tiles as
  // another alternative where it has not, and then timed once.
  for (TileChoice &c : choices) {
    std::vector<std::string> back;
    for (const std::string &alt : c.alternatives)
      back.push_back(defaults.diff(defaults.with(alt)));
    c.alternatives.insert(c.alternatives.begin() + 1, joined(back));
  }
  return choices;
}

TileTuning tune_tiles(const GptModel::Tiles &startTiles, const std::vector<TileChoice> &choices,
                      const std::function<double(const GptModel::Tiles &)> &measure, const TileTunerOptions &options) {
  // A copy: the caller's may be the tiles of the model that `measure` sets.
  const GptModel::Tiles start = startTiles;
  if (options.rounds < 1)
    throw Error(fmt::format("tile tuning: rounds is at least 1, not {}", options.rounds));
  TileTuning result;
  result.tiles = start;
  double currentMs = std::numeric_limits<double>::quiet_NaN(); // the current tiles' step (NaN: not yet timed)
  for (const TileChoice &choice : choices) {
    if (choice.alternatives.empty())
      throw Error(fmt::format("tile tuning: the choice '{}' has no alternatives", choice.name));
    // Each alternative on top of the tiles so far; one that comes to the
    // same tiles as an earlier one is timed once (under its first name).
    // The current tiles always run, first in each round.
    struct Candidate {
      std::string overrides;
      GptModel::Tiles tiles;
      std::vector<double> ms;
      std::string error;
    };
    std::vector<Candidate> candidates = {{"", result.tiles, {}, {}}};
    for (const std::string &alt : choice.alternatives) {
      GptModel::Tiles t;
      try {
        t = result.tiles.with(alt);
      } catch (const Error &e) {
        throw Error(fmt::format("tile tuning: choice '{}': {}", choice.name, e.what()));
      }
      const bool seen = std::any_of(candidates.begin(), candidates.end(),
                                    [&](const Candidate &c) { return c.tiles.str() == t.str(); });
      if (!seen)
        candidates.push_back({alt, t, {}, {}});
    }
    if (candidates.size() == 1 && !std::isnan(currentMs))
      continue; // every alternative is the current tiles
    for (int round = 0; round < options.rounds; ++round)
      for (Candidate &c : candidates) {
        if (!c.error.empty())
          continue;
        try {
          c.ms.push_back(measure(c.tiles));
        } catch (const Error &e) {
          c.error = e.what();
          c.ms.clear();
        }
      }
    if (!candidates[0].error.empty())
      throw Error(fmt::format("tile tuning: the tiles {} do not run: {}",
                              std::isnan(currentMs) ? std::string("to start from")
                                                    : "chosen so far (" + result.tiles.diff(start) + ")",
                              candidates[0].error));
    size_t best = 0;
    std::vector<double> medians(candidates.size(), std::numeric_limits<double>::infinity());
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].error.empty())
        medians[i] = median(candidates[i].ms);
      if (medians[i] < medians[best])
        best = i;
    }
    // Only a clear win replaces the current tiles: a step's time wanders by
    // a few tenths of a percent between runs.
    if (best != 0 && !(medians[best] < medians[0] * (1.0 - options.min_gain)))
      best = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      TileTrial trial{choice.name, candidates[i].overrides, candidates[i].error.empty() ? medians[i] : 0,
                      candidates[i].error};
      if (options.progress)
        options.progress(trial);
      result.trials.push_back(std::move(trial));
    }
    if (best != 0)
      result.tiles = candidates[best].tiles;
    currentMs = medians[best];
  }
  result.overrides = result.tiles.diff(start);
  // The start against the tuned tiles, interleaved once more: the start's
  // first timing is minutes old by now, and the last choice's winner is the
  // least of several noisy medians - either would overstate the gain.
  std::vector<double> startMs, tunedMs;
  const bool changed = !result.overrides.empty();
  for (int round = 0; round < options.rounds; ++round) {
    startMs.push_back(measure(start));
    if (changed)
      tunedMs.push_back(measure(result.tiles));
  }
  result.start_ms = median(startMs);
  result.tuned_ms = changed ? median(tunedMs) : result.start_ms;
  for (int i = 0; i < (changed ? 2 : 1); ++i) {
    TileTrial trial{"(start, tuned)", i ? result.overrides : std::string(), i ? result.tuned_ms : result.start_ms, {}};
    if (options.progress)
      options.progress(trial);
    result.trials.push_back(std::move(trial));
  }
  return result;
}

StepTimer::StepTimer(GptModel &model, std::vector<int32_t> tokens, std::vector<int32_t> targets, int B, int T,
                     int steps, double loss_tolerance)
    : model_(model), tokens_(std::move(tokens)), targets_(std::move(targets)), B_(B), T_(T), steps_(steps),
      tolerance_(loss_tolerance), referenceLoss_(std::numeric_limits<double>::quiet_NaN()),
      referenceNorm_(std::numeric_limits<double>::quiet_NaN()) {
  if (steps < 1)
    throw Error(fmt::format("tile tuning: steps is at least 1, not {}", steps));
  if (tokens_.size() != size_t(B) * size_t(T) || targets_.size() != tokens_.size())
    throw Error(fmt::format("tile tuning: {} tokens and {} targets for B={} T={}", tokens_.size(), targets_.size(), B,
                            T));
}

void StepTimer::step() {
  const double loss = model_.forward(tokens_, targets_, B_, T_);
  model_.zero_grad();
  model_.backward();
  const double norm = model_.clip_grad_norm(1.0f);
  // Checked before the AdamW step: a NaN gradient would leave NaN in its
  // state (and, at learning rate 0, 0 x NaN in the weights) for every
  // later trial. The gradient norm covers the backward's kernels, which
  // the loss does not see.
  auto check = [&](const char *what, double value, double &reference) {
    if (!std::isfinite(value))
      throw Error(fmt::format("the {} is {} at these tiles", what, value));
    if (std::isnan(reference))
      reference = value;
    else if (std::abs(value - reference) > tolerance_ * std::abs(reference))
      throw Error(fmt::format("the {} is {:.6f} at these tiles, {:.6f} at the first ones measured", what, value,
                              reference));
  };
  check("loss", loss, referenceLoss_);
  check("gradient norm", norm, referenceNorm_);
  model_.step({.lr = 0.0f}); // the AdamW step's cost, the weights unchanged
}

double StepTimer::operator()(const GptModel::Tiles &tiles) {
  model_.set_tiles(tiles);
  step(); // compile and load what these tiles launch
  const bool gpu = model_.backend() == Backend::GPU;
  if (gpu)
    synchronize();
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < steps_; ++i)
    step();
  if (gpu)
    synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count() / steps_;
}

std::string tile_overrides_from(const std::string &text) {
  if (text.empty() || text[0] != '@')
    return text;
  const std::string path = text.substr(1);
  std::ifstream in(path);
  if (!in || !std::filesystem::is_regular_file(path))
    throw Error(fmt::format("cannot read the tiles file {}", path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r,") + 1);
    lines.push_back(line);
  }
  return joined(lines);
}

} // namespace tegula::gpt
