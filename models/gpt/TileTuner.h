//===- TileTuner.h - the model's tiles chosen by timing training steps -*- C++ -*-===//
//
// GptModel::gpu_tiles() are the defaults one H100 measured; which LayerNorm
// rows, attention tiles or GEMM schedule win depends on the GPU, the batch
// and the kernels of the day. tune_tiles() settles them on the machine that
// trains: it times whole training steps (the truth, overlap between streams
// included) with each alternative of each choice, one choice at a time on
// top of the best so far (coordinate descent), and keeps an alternative only
// where it beats the current tiles by a margin - the rounds interleave the
// alternatives, so a clock that drifts during tuning moves them all alike.
// `tegula-gpt tune` and `gpt2-train --tune` run it; the result is a
// Tiles::with() string, which `--tiles @FILE` reads back (docs/gpt.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "models/gpt/Model.h"

#include <functional>
#include <string>
#include <vector>

namespace tegula::gpt {

/// One decision: its name and its alternatives as Tiles::with() overrides,
/// applied on top of the tiles so far ("" keeps them as they are).
struct TileChoice {
  std::string name;
  std::vector<std::string> alternatives;
};

/// The choices worth timing for a model with `storage` on `chip`, its f32
/// dots at `matmul`, warp specialised or not (GptModel::set_warp_specialize):
/// the switches no single measurement has settled (ping-pong for the GELU
/// GEMMs, attention's forward tile, stream-K weight gradients, LayerNorm's
/// rows a program, the column sums' tiles). Every alternative parses against gpu_tiles() for
/// that chip; each starts with "" (the tiles as they are).
std::vector<TileChoice> tile_choices(DType storage, const std::string &chip, tl::precision matmul,
                                     bool warpSpecialize);

/// One alternative's timing: the median of its rounds, or the error that
/// ruled it out (it did not compile or launch, or its loss was off).
struct TileTrial {
  std::string choice, overrides;
  double ms = 0;     // a training step, the median of the rounds
  std::string error; // empty where it ran
};

struct TileTuning {
  GptModel::Tiles tiles;  // the start with the chosen overrides applied
  std::string overrides;  // tiles.diff(start): the fields the tuning changed ("" if none)
  // The start's step and the tuned tiles', timed against each other in a
  // last set of interleaved rounds (equal where nothing changed).
  double start_ms = 0, tuned_ms = 0;
  std::vector<TileTrial> trials; // each alternative, then the last comparison ("(start, tuned)")
};

struct TileTunerOptions {
  int rounds = 3;          // timings of each alternative, interleaved; the median counts
  // An alternative must be this much faster (0.5%) to replace the current
  // tiles: a GPT-2 step's median over rounds wanders by about 0.2%.
  double min_gain = 0.005;
  /// Called after each trial (progress; may be empty).
  std::function<void(const TileTrial &)> progress;
};

/// Coordinate descent over `choices` from `start`: `measure(tiles)` returns
/// the time of a training step at those tiles (ms) or throws tegula::Error
/// where they cannot run - that alternative is then left out, its error kept.
/// After the choices, the start and the tuned tiles are timed against each
/// other once more (start_ms, tuned_ms). Throws tegula::Error when the start
/// itself cannot run, or for a choice without alternatives or an
/// alternative that Tiles::with() rejects.
TileTuning tune_tiles(const GptModel::Tiles &start, const std::vector<TileChoice> &choices,
                      const std::function<double(const GptModel::Tiles &)> &measure,
                      const TileTunerOptions &options = {});

/// The measure for a real model: sets the model's tiles, runs one training
/// step (its kernels compile and load) and then times `steps` steps - forward,
/// backward, clipping and an AdamW step at learning rate 0, so the weights,
/// and with them the loss and the gradients, stay where they are. Each
/// step's loss and gradient norm must be finite and within `loss_tolerance`
/// (relative) of the first step's (checked before its AdamW step): tiles
/// that change what the forward or the backward computes throw
/// tegula::Error instead of winning, and leave the weights and AdamW's
/// state as they were. AdamW's moments and step count do move: tune a model
/// of its own, not the one that trains. The model keeps the last tiles
/// measured.
class StepTimer {
public:
  StepTimer(GptModel &model, std::vector<int32_t> tokens, std::vector<int32_t> targets, int B, int T, int steps,
            double loss_tolerance = 1e-2);
  double operator()(const GptModel::Tiles &tiles);
  /// The loss the first measurement saw (NaN before it).
  double reference_loss() const { return referenceLoss_; }

private:
  void step();
  GptModel &model_;
  std::vector<int32_t> tokens_, targets_;
  int B_, T_, steps_;
  double tolerance_, referenceLoss_, referenceNorm_;
};

/// The overrides in `text`, or read from the file it names after an '@'
/// (tegula-gpt train --tiles @tiles.txt): a Tiles::with() string over one
/// or more lines, '#' starting a comment. Throws tegula::Error for a file
/// that cannot be read.
std::string tile_overrides_from(const std::string &text);

} // namespace tegula::gpt
