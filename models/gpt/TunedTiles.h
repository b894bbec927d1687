//===- TunedTiles.h - tuned tiles kept per GPU for `--tiles auto` -*- C++ -*-===//
//
// `tegula-gpt tune` finds the tiles that train fastest on one GPU for one
// training setup; keeping them means the next `tegula-gpt train --tiles auto`
// on that GPU and setup uses them without a tiles file to carry around. One
// small text file per setup (the same `--tiles @FILE` format, its comments
// saying where it came from) under $TEGULA_CACHE_DIR/gpt-tiles, or
// ~/.cache/tegula/gpt-tiles - the kernel cache's directory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "models/gpt/Model.h"

#include <optional>
#include <string>

namespace tegula::gpt {

/// What a tuning holds for: the GPU (its name and compile target), the
/// model's sizes, the batch and how it trains. Any difference can move the
/// winners, so a tuning is reused only where all of them match.
struct TuningSetup {
  std::string device, chip; // DeviceInfo::name, DeviceInfo::chip
  GptConfig config;         // its n_layer, n_head, n_embd and vocab count
  int batch = 0, seq = 0;
  DType storage = DType::f32;
  tl::precision matmul = tl::precision::tf32; // f32's dots (bf16's are bf16 whatever it says)
  bool warp_specialize = true, stream_k = true;

  /// "NVIDIA H100 80GB HBM3 (sm_90a); 12 layers, 12 heads, 768 dims,
  /// vocabulary 50257; B=8 T=1024; bf16, warp specialised, stream-K".
  std::string str() const;
  /// The file it is kept in: setup fields only, in a name any file system
  /// takes ("sm_90a-NVIDIA_H100_80GB_HBM3-bf16-ws1-sk1-L12-H12-C768-V50257-B8-T1024.txt";
  /// f32 adds its dots' precision: "f32-tf32").
  std::string file_name() const;
  /// The `tegula-gpt tune` command that keeps a tuning for this setup.
  std::string tune_command() const;

  /// `model` training at batch x seq on the current GPU (`matmul`: the
  /// precision it was made with, which it does not report).
  static TuningSetup of(const GptModel &model, tl::precision matmul, int batch, int seq);
};

/// The directory tunings are kept in: $TEGULA_GPT_TILES_DIR, else
/// $TEGULA_CACHE_DIR/gpt-tiles (or ~/.cache/tegula/gpt-tiles); "" where
/// there is none (either variable "-", no HOME).
std::string tuned_tiles_directory();

/// Keeps `overrides` (Tiles::with(); tegula-gpt tune keeps every field,
/// Tiles::str(), so a later Tegula's changed defaults do not change the
/// tuning) for `setup`, with `comment` lines above them; returns the file's
/// path, or "" where there is no directory. Throws tegula::Error where the
/// file cannot be written (a half-written file is never left under the
/// setup's name).
std::string save_tuned_tiles(const TuningSetup &setup, const std::string &overrides, const std::string &comment);

/// The overrides kept for `setup`, or nullopt where it was never tuned.
std::optional<std::string> load_tuned_tiles(const TuningSetup &setup);

/// `--tiles` as a command gives it: "auto" - the tuning kept for `setup`
/// (`note` names its file and where it differs from this Tegula's defaults),
/// or "" (the defaults) where there is none or it cannot be used
/// (unreadable, a field that has gone), `note` saying which and how to keep
/// one; "@FILE" and plain overrides as tile_overrides_from() reads them.
/// `fallback` names what runs then ("the defaults": a model's fresh tiles).
std::string resolve_tiles(const std::string &text, const TuningSetup &setup, std::string &note,
                          std::string_view fallback = "the defaults");

} // namespace tegula::gpt
