//===- Resume.h - a training run's place, saved and continued ---*- C++ -*-===//
//
// tegula-gpt train --save writes the model (Hugging Face's names) and beside
// it the optimizer state (GptModel::save_optimizer), whose metadata also
// holds the run's place: the steps taken, the batch sampler's random state,
// the data's fingerprint and the settings that shape the run (its --steps,
// which the learning-rate schedule spans, --lr, --batch ...). --resume reads
// them back, so that a run stopped and resumed trains exactly as one that
// was not (same batches, same schedule, same AdamW state: the same weights,
// bit for bit, where the backend is deterministic). Both files of one save
// carry the same save id: a model and a state of different saves (a save cut
// between the two files, two runs saving to one name) are refused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tools/tegula-gpt/Options.h"

#include <map>
#include <random>
#include <string>
#include <vector>

namespace tegula::gpt::cli {

/// Where a run stands, as saved and as compared on resume.
struct RunPlace {
  int step = 0;
  std::string saveId;          // one save's two files share it
  std::string dataFingerprint; // the training data (TokenStream::fingerprint)
  std::string backend, precision; // not adopted on resume: a change is said
};

/// A new save id (random).
std::string newSaveId();

/// The model file's metadata: the run at `place` (its step and save id).
std::map<std::string, std::string> modelMetadata(int vocab, const RunPlace &place);
/// The optimizer state's metadata: `place`, the batch sampler's state and
/// the run's settings (runSettings) as `o` has them.
std::map<std::string, std::string> runMetadata(const Options &o, const RunPlace &place,
                                               const std::mt19937_64 &batchRng);

/// Where a resumed run starts.
struct Resumed {
  int step = 0;
  std::mt19937_64 batchRng;
  std::vector<std::string> notes; // settings given anew, data or backend that changed
};

/// Reads the run's place from the optimizer state beside the checkpoint
/// `path` (`state`; `model` is the checkpoint's metadata): `o` adopts the
/// saved settings it was not given, each checked as the option would be.
/// `now` is this run's data fingerprint, backend and precision. Throws
/// naming the file and what is missing, damaged or does not match.
Resumed resumeRun(Options &o, const std::map<std::string, std::string> &model,
                  const std::map<std::string, std::string> &state, const std::string &path, const RunPlace &now);

} // namespace tegula::gpt::cli
