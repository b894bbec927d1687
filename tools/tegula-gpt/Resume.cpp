//===- Resume.cpp - a training run's place, saved and continued -----------===//
#include "tools/tegula-gpt/Resume.h"

#include "models/gpt/Checkpoint.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <sstream>

namespace tegula::gpt::cli {
namespace {

/// The options a resumed run takes from the saved one unless given again,
/// and how each is checked (an integer's least value; -1: a real; -2: a word).
struct Setting {
  const char *name;
  int64_t least;
  std::vector<std::string> words = {};
};
const std::vector<Setting> &runSettings() {
  static const std::vector<Setting> settings = {
      {"steps", 1},      {"lr", -1},   {"warmup", 0},
      {"batch", 1},      {"seq", 1},   {"val-every", 0},
      {"dtype", -2, {"f32", "bf16"}}, {"stochastic-rounding", -2, {"on", "off"}},
  };
  return settings;
}

} // namespace

std::string newSaveId() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

std::map<std::string, std::string> modelMetadata(int vocab, const RunPlace &place) {
  return {{"format", "pt"},
          {"vocab", std::to_string(vocab)},
          {"train.step", std::to_string(place.step)},
          {"train.save_id", place.saveId}};
}

std::map<std::string, std::string> runMetadata(const Options &o, const RunPlace &place,
                                               const std::mt19937_64 &batchRng) {
  std::map<std::string, std::string> meta = {{"train.step", std::to_string(place.step)},
                                             {"train.save_id", place.saveId},
                                             {"train.data_fingerprint", place.dataFingerprint},
                                             {"train.backend", place.backend},
                                             {"train.precision", place.precision}};
  std::ostringstream rng;
  rng << batchRng;
  meta["train.batch_rng"] = rng.str();
  for (const Setting &s : runSettings())
    meta[std::string("train.") + s.name] = o.str(s.name);
  return meta;
}

Resumed resumeRun(Options &o, const std::map<std::string, std::string> &model,
                  const std::map<std::string, std::string> &state, const std::string &path, const RunPlace &now) {
  const std::string statePath = optimizer_state_beside(path);
  auto entry = [&](const std::map<std::string, std::string> &meta, const std::string &key, bool isState) {
    auto it = meta.find(key);
    if (it == meta.end())
      throw Error(fmt::format("--resume {}: {} has no '{}': it was not saved by tegula-gpt train (--init {} starts "
                              "a new run from its weights)",
                              path, isState ? statePath : "the model file", key, path));
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
  r.step = count(entry(state, "train.step", true), "train.step");
  // Two files: a save cut between them, or two runs saving to one name,
  // leaves a model and a state of different saves.
  const int modelStep = count(entry(model, "train.step", false), "train.step");
  if (modelStep != r.step || entry(model, "train.save_id", false) != entry(state, "train.save_id", true))
    throw Error(fmt::format("--resume {}: the model (step {}) and its optimizer state {} (step {}) are not of the "
                            "same save (one was cut short, or another run saved over one of them); --init {} starts "
                            "a new run from the model's weights",
                            path, modelStep, statePath, r.step, path));
  std::istringstream rng(entry(state, "train.batch_rng", true));
  rng >> r.batchRng;
  if (rng.fail())
    throw Error(fmt::format("--resume {}: the batch sampler's state in {} is damaged", path, statePath));
  for (const Setting &s : runSettings()) {
    const std::string saved = entry(state, std::string("train.") + s.name, true);
    // Checked here, naming the file: a damaged value is not the user's typo.
    Options check = o;
    check.set(s.name, saved);
    try {
      if (s.least >= 0)
        check.integer(s.name, s.least);
      else if (s.least == -1)
        check.real(s.name, 0, 1e6);
      else if (std::find(s.words.begin(), s.words.end(), saved) == s.words.end())
        throw Error(fmt::format("--{} is {}, not '{}'", s.name, fmt::join(s.words, " or "), saved));
    } catch (const Error &e) {
      throw Error(fmt::format("--resume {}: the saved run's --{} in {} is damaged ({})", path, s.name, statePath,
                              e.what()));
    }
    if (o.given(s.name) && o.str(s.name) != saved)
      r.notes.push_back(fmt::format("--{} {} (the saved run's: {})", s.name, o.str(s.name), saved));
    o.adopt(s.name, saved);
  }
  if (entry(state, "train.data_fingerprint", true) != now.dataFingerprint)
    r.notes.push_back("the data differs from the saved run's: its batches do too");
  for (auto [key, value, what] : {std::tuple{"train.backend", now.backend, "--backend"},
                                  {"train.precision", now.precision, "--precision"}})
    if (const std::string saved = entry(state, key, true); saved != value)
      r.notes.push_back(fmt::format("{} {} (the saved run's: {}; the sums' rounding differs)", what, value, saved));
  return r;
}

} // namespace tegula::gpt::cli
