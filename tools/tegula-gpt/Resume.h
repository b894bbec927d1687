//===- Resume.h - a training run's place, saved and continued ---*- C++ -*-===//
//
// tegula-gpt train --save writes the model (Hugging Face's names) and beside
// it the optimizer state (GptModel::save_optimizer), whose metadata also
// holds the run's place: the steps taken, the batch sampler's random state,
// the data's size and the settings that shape the run (its --steps, which
// the learning-rate schedule spans, --lr, --batch ...). --resume reads them
// back, so that a run stopped and resumed trains exactly as one that was not
// (same batches, same schedule, same AdamW state: the same weights, bit for
// bit, where the backend is deterministic).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "models/gpt/Safetensors.h"
#include "tools/tegula-gpt/Options.h"

#include "tegula/error.h"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tegula::gpt::cli {

/// The options a resumed run takes from the saved one unless given again.
inline const std::vector<std::string> &runSettings() {
  static const std::vector<std::string> settings = {"steps", "lr",  "warmup", "batch", "seq", "val-every",
                                                    "dtype", "stochastic-rounding"};
  return settings;
}

/// What the model file's metadata says of the run (its step, which the
/// optimizer state's must match).
inline std::map<std::string, std::string> modelMetadata(int vocab, int step) {
  return {{"format", "pt"}, {"vocab", std::to_string(vocab)}, {"train.step", std::to_string(step)}};
}

/// The optimizer state's metadata: the run at `step` steps taken.
inline std::map<std::string, std::string> runMetadata(const Options &o, int step, const std::mt19937_64 &batchRng,
                                                      size_t dataTokens) {
  std::map<std::string, std::string> meta = {{"train.step", std::to_string(step)},
                                             {"train.data_tokens", std::to_string(dataTokens)}};
  std::ostringstream rng;
  rng << batchRng;
  meta["train.batch_rng"] = rng.str();
  for (const std::string &k : runSettings())
    meta["train." + k] = o.str(k);
  return meta;
}

/// Where a resumed run starts.
struct Resumed {
  int step = 0;
  std::mt19937_64 batchRng;
  std::vector<std::string> notes; // settings given anew, data that changed
};

/// Reads the run's place from `state` (the optimizer state beside the
/// checkpoint `path`, whose metadata is `model`): `o` adopts the saved
/// settings it was not given. Throws naming what is missing or does not
/// match.
inline Resumed resumeRun(Options &o, const std::map<std::string, std::string> &model,
                         const std::map<std::string, std::string> &state, const std::string &path,
                         size_t dataTokens) {
  auto entry = [&](const std::map<std::string, std::string> &meta, const std::string &key, const char *file) {
    auto it = meta.find(key);
    if (it == meta.end())
      throw Error(fmt::format("--resume {}: its {} has no '{}': it was not saved by tegula-gpt train (--init {} starts "
                              "a new run from its weights)",
                              path, file, key, path));
    return it->second;
  };
  auto count = [&](const std::string &text, const std::string &key) {
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0 || v > std::numeric_limits<int>::max())
      throw Error(fmt::format("--resume {}: its '{}' is '{}', not a count", path, key, text));
    return int(v);
  };
  Resumed r;
  r.step = count(entry(state, "train.step", "optimizer state"), "train.step");
  // The model and the state are two files: a save cut between them leaves
  // them of different steps.
  if (const int modelStep = count(entry(model, "train.step", "model file"), "train.step"); modelStep != r.step)
    throw Error(fmt::format("--resume {}: the model is of step {}, its optimizer state of step {} (a save was cut "
                            "short between the two files)",
                            path, modelStep, r.step));
  std::istringstream rng(entry(state, "train.batch_rng", "optimizer state"));
  rng >> r.batchRng;
  if (rng.fail())
    throw Error(fmt::format("--resume {}: its batch sampler's state is damaged", path));
  for (const std::string &k : runSettings()) {
    const std::string saved = entry(state, "train." + k, "optimizer state");
    if (o.given(k) && o.str(k) != saved)
      r.notes.push_back(fmt::format("--{} {} (the saved run's: {})", k, o.str(k), saved));
    o.adopt(k, saved);
  }
  const std::string tokens = entry(state, "train.data_tokens", "optimizer state");
  if (tokens != std::to_string(dataTokens))
    r.notes.push_back(fmt::format("the data holds {} tokens (the saved run's: {}): its batches differ", dataTokens,
                                  tokens));
  return r;
}

} // namespace tegula::gpt::cli
