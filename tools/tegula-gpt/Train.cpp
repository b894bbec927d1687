//===- Train.cpp - tegula-gpt train ----------------------------------------===//
//
// A GPT-2 trained from scratch (or from a checkpoint's weights: --init) on a
// text or token file, AdamW with GPT-2's schedule, validated, saved with its
// optimizer state and resumed exactly (Resume.h); Ctrl-C and SIGTERM save.
//
//===----------------------------------------------------------------------===//
#include "tools/tegula-gpt/Train.h"

#include "models/gpt/Checkpoint.h"
#include "models/gpt/Model.h"
#include "models/gpt/Safetensors.h"
#include "models/gpt/FileOutput.h"
#include "models/gpt/TileTuner.h"
#include "models/gpt/TunedTiles.h"
#include "tools/tegula-gpt/CommandLine.h"
#include "tools/tegula-gpt/Resume.h"
#include "tools/tegula-gpt/TokenStream.h"

#include "tegula/device.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <optional>
#include <random>
#include <span>
#include <string_view>

namespace tegula::gpt::cli {
namespace {

/// Ctrl-C (or SIGTERM: kill, timeout, a batch system) during training: the
/// step in flight finishes, the model is saved (with --save) and the run ends
/// with 128 + the signal; a second one ends it at once - but not inside a
/// save, which finishes writing its two files first.
volatile std::sig_atomic_t g_stopSignal = 0;
volatile std::sig_atomic_t g_saving = 0;       // a save is writing its files
volatile std::sig_atomic_t g_signalInSave = 0; // a second signal came meanwhile
void onStopSignal(int sig) {
  if (!g_stopSignal) {
    g_stopSignal = sig; // the loop saves and stops after the step in flight
  } else if (g_saving) {
    g_signalInSave = sig; // said when the save is done: its files come first
  } else {
    std::signal(sig, SIG_DFL); // a second one stops at once
    std::raise(sig);
  }
}
/// Marks a save in progress (the handler defers a second signal, on
/// whichever thread it lands - CUDA's have their own), then acts on one that
/// came meanwhile.
struct SaveInProgress {
  SaveInProgress() { g_saving = 1; }
  ~SaveInProgress() {
    g_saving = 0;
    if (const int sig = g_signalInSave) {
      std::signal(sig, SIG_DFL);
      std::raise(sig);
    }
  }
};

/// The configuration of a run that starts from the checkpoint `file` (at
/// `path`; --init, --resume): its sizes; --layers, --heads and --embd, where
/// given, must agree. --seq, not given, is at most its context.
GptConfig checkpointConfigFor(Options &o, const SafetensorsFile &file, const std::string &path, int vocab) {
  const GptConfig c = checkpoint_config(file, o.given("heads") ? o.integer("heads", 1, 1024) : 0,
                                        config_json_beside(path));
  for (auto [name, value] : {std::pair{"layers", c.n_layer}, {"heads", c.n_head}, {"embd", c.n_embd}})
    if (o.given(name) && o.integer(name) != value)
      throw Error(fmt::format("--{} {}: the model in {} has {} (its sizes are the checkpoint's)", name, o.str(name),
                              path, value));
  if (c.vocab != vocab)
    throw Error(fmt::format("the model in {} has a vocabulary of {} tokens, the data {} ({})", path, c.vocab, vocab,
                            vocab == 256 ? "bytes: tokenize it with the model's --vocab and --merges" : "token file"));
  if (o.integer("seq", 1) > c.n_ctx) {
    if (o.given("seq"))
      throw Error(fmt::format("--seq {} is longer than the context of the model in {} ({} positions)", o.str("seq"),
                              path, c.n_ctx));
    o.adopt("seq", std::to_string(c.n_ctx));
  }
  return c;
}

} // namespace

int train(const Options &given) {
  Options o = given;
  if (!o.str("init").empty() && !o.str("resume").empty())
    throw Error("give --init (weights to start a new run from) or --resume (a run to continue), not both");
  const std::string from = o.str("resume").empty() ? o.str("init") : o.str("resume");
  const bool resuming = !o.str("resume").empty();
  if (resuming && o.given("seed"))
    throw Error("--resume continues the saved run's random streams (its batches, its stochastic rounding): --seed "
                "does not apply");
  const TokenStream data = TokenStream::open(o);
  // Both files read whole before anything is written: --save may name the
  // file resumed from.
  std::optional<SafetensorsFile> start, state;
  Resumed resumed;
  const std::string option = resuming ? "--resume" : "--init";
  if (!from.empty()) {
    constexpr std::string_view stateExt = ".state.safetensors";
    if (from.size() > stateExt.size() && from.compare(from.size() - stateExt.size(), stateExt.size(), stateExt) == 0)
      throw Error(fmt::format("{} {}: that is an optimizer state; give the model file beside it ({}.safetensors)",
                              option, from, from.substr(0, from.size() - stateExt.size())));
    if (!std::filesystem::exists(from))
      throw Error(fmt::format("{} {}: no such file", option, from));
    start = SafetensorsFile::read(from);
  }
  RunPlace place{.step = 0, .saveId = "", .dataFingerprint = data.fingerprint(), .backend = o.str("backend"),
                 .precision = ""};
  if (resuming) {
    const std::string statePath = optimizer_state_beside(from);
    if (!std::filesystem::exists(statePath))
      throw Error(fmt::format("--resume {}: no optimizer state beside it ({}; tegula-gpt train --save writes both); "
                              "--init {} starts a new run from its weights",
                              from, statePath, from));
    state = SafetensorsFile::read(statePath);
    place.precision = precisionName(precisionFrom(o));
    resumed = resumeRun(o, start->metadata(), state->metadata(), from, place);
    if (o.str("save").empty())
      fmt::print(stderr, "warning: no --save: the resumed run's training is not kept (--save {} continues the "
                         "file)\n",
                 from);
  }
  const GptConfig config = start ? checkpointConfigFor(o, *start, from, data.vocab) : configFrom(o, data.vocab);
  const auto [B, T] = batchAndSeq(o);
  const int steps = o.integer("steps", 1), warmup = o.integer("warmup", 0), valEvery = o.integer("val-every", 0);
  const int saveEvery = o.integer("save-every", 0);
  const float maxLr = o.real("lr", 0, 1e6);
  const uint64_t seed = o.seed("seed");
  if (resumed.step >= steps)
    throw Error(fmt::format("--resume {}: the run has taken {} steps of --steps {}; give a larger --steps to train on",
                            from, resumed.step, steps));
  if (saveEvery > 0 && o.str("save").empty())
    throw Error("--save-every saves to the --save file: give --save too");
  checkNotAnInput(o, "save", {"data", "tokens", "tiles", "init"});
  if (!o.str("save").empty()) {
    constexpr std::string_view stateExt = ".state.safetensors";
    if (const std::string &out = o.str("save");
        out.size() >= stateExt.size() && out.compare(out.size() - stateExt.size(), stateExt.size(), stateExt) == 0)
      throw Error(fmt::format("--save {}: a name ending in {} is an optimizer state's (X.safetensors keeps its state "
                              "in X{}): give the model's name",
                              out, stateExt, stateExt));
    check_file_creatable(o.str("save"), "--save");
    check_file_creatable(optimizer_state_beside(o.str("save")), "--save (its optimizer state)");
  }
  const size_t split = data.count * 9 / 10;
  if (split < size_t(T) + 2 || data.count - split < size_t(T) + 2)
    throw Error(fmt::format("the data has {} tokens: too few for windows of {} with a 10% validation split",
                            data.count, T + 1));
  GptModel model(config, backendFrom(o), precisionFrom(o), storageFrom(o));
  model.set_warp_specialize(onOff(o, "warp-specialize"));
  model.set_stream_k_weight_gradients(onOff(o, "stream-k"));
  const bool stochastic = onOff(o, "stochastic-rounding");
  if (stochastic && model.storage() != DType::bf16)
    throw Error("--stochastic-rounding rounds the bf16 copy of the master weights: give --dtype bf16 (f32 has none)");
  if (!o.str("tiles").empty()) { // GptModel::Tiles::with (docs/gpt.md); @FILE: tegula-gpt tune's; auto: its kept one
    std::string overrides = o.str("tiles"), note;
    if (overrides == "auto") {
      if (model.backend() != Backend::GPU)
        throw Error("--tiles auto reads the tiles tegula-gpt tune kept for a GPU: give --backend gpu");
      overrides = resolve_tiles(overrides, tuningSetup(model, o, B, T), note);
      fmt::print("{}\n", note);
    }
    model.set_tiles(model.tiles().with(tile_overrides_from(overrides)));
    fmt::print("tiles: {}\n", model.tiles().str());
  }
  model.init_random(seed); // also stochastic rounding's seed where a checkpoint replaces the weights
  if (start)
    model.load(*start);
  if (state)
    model.load_optimizer(*state);
  fmt::print("GPT: {} layers, {} heads, {} dims, vocabulary {} ({}); {} parameters; B={} T={}; {} tokens; {}, "
             "{}\n",
             config.n_layer, config.n_head, config.n_embd, config.vocab, data.bytes ? "bytes" : "token file",
             count(model.num_parameters()), B, T, data.count, o.str("backend"),
             model.storage() == DType::bf16 ? "bf16 (f32 master weights)" : "f32");
  if (resuming)
    fmt::print("resuming {} at step {} of {}{}{}\n", from, resumed.step, steps, resumed.notes.empty() ? "" : "; ",
               fmt::join(resumed.notes, "; "));
  else if (start)
    fmt::print("starting from the weights of {}\n", from);
  printMemory("model", model);
  model.init_optimizer();
  printMemory("after optimizer", model);
  std::mt19937_64 rng = resuming ? resumed.batchRng : std::mt19937_64(seed);
  std::vector<int32_t> tokens, targets;
  // MFU against the device's dense bf16 peak (as llm.c reports it); only on
  // GPUs whose peak is known.
  double peakFlops = 0;
  if (backendFrom(o) == Backend::GPU) {
    const std::string name = device_info().name;
    peakFlops = name.find("H100") != std::string::npos || name.find("H200") != std::string::npos ? 989e12
                : name.find("A100") != std::string::npos                                         ? 312e12
                                                                                               : 0;
  }
  // The model (Hugging Face's names) and, beside it, AdamW's state with the
  // run's place (Resume.h): what --resume continues from.
  place.precision = precisionName(precisionFrom(o));
  // Both files staged before either replaces its old one: a failure (a full
  // disk) leaves the previous pair, which --resume still takes.
  auto save = [&](int stepsTaken) {
    SaveInProgress saving;
    place.step = stepsTaken, place.saveId = newSaveId();
    std::optional<StagedFile> modelFile, stateFile;
    {
      const std::vector<std::byte> bytes = model.checkpoint(modelMetadata(config.vocab, place));
      modelFile.emplace(o.str("save"), std::vector{std::span<const std::byte>(bytes)}, "--save");
    }
    {
      const std::vector<std::byte> bytes = model.optimizer_state(runMetadata(o, place, rng));
      stateFile.emplace(optimizer_state_beside(o.str("save")), std::vector{std::span<const std::byte>(bytes)},
                        "--save");
    }
    stateFile->commit();
    modelFile->commit();
  };
  g_stopSignal = 0;
  g_saving = 0;
  g_signalInSave = 0;
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
  struct RestoreSignals {
    ~RestoreSignals() {
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
    }
  } restore;
  double laterSteps = 0; // seconds, the steps after the first
  int laterCount = 0;
  for (int step = resumed.step; step < steps; ++step) {
    if (const int sig = g_stopSignal) {
      const char *what = sig == SIGTERM ? "terminated (SIGTERM)" : "interrupted";
      if (!o.str("save").empty()) {
        save(step);
        fmt::print("{} after step {} of {}: saved {} (train --resume {} continues)\n", what, step, steps,
                   o.str("save"), o.str("save"));
      } else {
        fmt::print("{} after step {} of {} (no --save: nothing is saved)\n", what, step, steps);
      }
      return 128 + sig;
    }
    auto start = std::chrono::steady_clock::now();
    sampleBatch(data, 0, split, B, T, rng, tokens, targets);
    const float loss = model.forward(tokens, targets, B, T);
    if (step == resumed.step)
      printMemory("after forward", model);
    model.zero_grad();
    model.backward();
    const float norm = model.clip_grad_norm(1.0f);
    // A diverged run stops here: its weights are NaN from this step on,
    // and a checkpoint of them would only generate garbage.
    if (!std::isfinite(loss) || !std::isfinite(norm))
      throw Error(fmt::format("training diverged at step {}: loss {}, gradient norm {}{}; a smaller --lr (now {:g}) "
                              "or a longer --warmup may help",
                              step + 1, loss, norm, o.str("save").empty() ? "" : "; nothing is saved", maxLr));
    if (step == resumed.step)
      printMemory("after backward", model);
    const float lr = GptModel::learning_rate(step, warmup, steps, maxLr, maxLr / 10);
    model.step({.lr = lr, .stochastic_rounding = stochastic});
    if (step == resumed.step)
      printMemory("after step", model);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double tokPerS = double(B * T) / s;
    // The time left at the mean step so far, the first (which compiles the
    // kernels) left out once there are others.
    if (step > resumed.step)
      laterSteps += s, ++laterCount;
    const double meanStep = laterCount ? laterSteps / laterCount : s;
    fmt::print("step {:5}/{}  loss {:.4f}  lr {:.2e}  norm {:.3f}  {:.0f} tok/s{}{}\n", step + 1, steps, loss, lr, norm,
               tokPerS,
               peakFlops > 0 ? fmt::format("  MFU {:.1f}%", 100.0 * tokPerS * model.training_flops_per_token(T) / peakFlops)
                             : std::string(),
               step + 1 < steps ? "  eta " + duration(meanStep * (steps - step - 1)) : std::string());
    if (valEvery > 0 && ((step + 1) % valEvery == 0 || step + 1 == steps)) {
      std::mt19937_64 valRng(7); // the same validation windows every time
      double sum = 0;
      for (int i = 0; i < 4; ++i) {
        sampleBatch(data, split, data.count, B, T, valRng, tokens, targets);
        sum += model.forward(tokens, targets, B, T);
      }
      fmt::print("validation loss {:.4f}\n", sum / 4);
    }
    if (saveEvery > 0 && (step + 1) % saveEvery == 0 && step + 1 < steps) {
      save(step + 1);
      fmt::print("saved {} at step {}\n", o.str("save"), step + 1);
    }
  }
  if (!o.str("save").empty()) {
    save(steps);
    fmt::print("saved {}\n", o.str("save"));
  }
  return 0;
}

} // namespace tegula::gpt::cli
