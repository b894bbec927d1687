//===- CommandLine.cpp - what tegula-gpt's subcommands share ---------------===//
#include "tools/tegula-gpt/CommandLine.h"

#include "tegula/device.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

namespace tegula::gpt::cli {

GptConfig configFrom(const Options &o, int vocab) {
  GptConfig c;
  c.n_layer = o.integer("layers", 1, 1024), c.n_head = o.integer("heads", 1, 1024);
  c.n_embd = o.integer("embd", 1, 1 << 16);
  // The context is the trained window: positions past it would have
  // embeddings that training never touched (GPT-2's n_ctx is its T too).
  c.vocab = vocab, c.vocab_padded = int(cdiv(vocab, 128) * 128), c.n_ctx = o.integer("seq", 1, 1 << 20);
  return c;
}

/// --batch and --seq, whose product (the tokens a step) must fit an int.
std::pair<int, int> batchAndSeq(const Options &o) {
  const int B = o.integer("batch", 1, 1 << 20), T = o.integer("seq", 1, 1 << 20);
  if (int64_t(B) * T > std::numeric_limits<int32_t>::max())
    throw Error(fmt::format("--batch {} x --seq {} is {} tokens a step; at most {}", B, T, int64_t(B) * T,
                            std::numeric_limits<int32_t>::max()));
  return {B, T};
}

Backend backendFrom(const Options &o) {
  const Backend b = parse_backend(o.str("backend"));
  std::string why;
  if (b == Backend::GPU && !gpu_available(&why)) // its advice names the runtime's variable, not our option
    throw Error(fmt::format("--backend {}: {}; --backend interp or sim run on the CPU", o.str("backend"),
                            why.substr(0, why.find(" — "))));
  return b;
}

/// --precision of the f32 dots: tf32 (tensor cores) by default on the GPU.
tl::precision precisionFrom(const Options &o) {
  std::string p = o.str("precision");
  if (p.empty())
    p = backendFrom(o) == Backend::GPU ? "tf32" : "ieee";
  if (p == "ieee") return tl::precision::ieee;
  if (p == "tf32") return tl::precision::tf32;
  if (p == "tf32x3") return tl::precision::tf32x3;
  throw Error(fmt::format("--precision is ieee, tf32 or tf32x3, not '{}'", p));
}

const char *precisionName(tl::precision p) {
  return p == tl::precision::tf32 ? "tf32" : p == tl::precision::tf32x3 ? "tf32x3" : "ieee";
}

/// --dtype of the weights and activations: f32, or bf16 (mixed precision:
/// f32 master weights, gradients and AdamW state).
DType storageFrom(const Options &o) {
  const std::string d = o.str("dtype");
  if (d == "f32") return DType::f32;
  if (d == "bf16") return DType::bf16;
  throw Error(fmt::format("--dtype is f32 or bf16, not '{}'", d));
}

/// An on|off option: --warp-specialize (default on: sm_90a gives the
/// model's TMA-fed loops a producer warpgroup and runs its GEMMs
/// persistent), --stream-k (default on: the blocks' weight gradients as
/// stream-K GEMMs) - docs/gpt.md.
bool onOff(const Options &o, const char *name) {
  const std::string v = o.str(name);
  if (v == "on") return true;
  if (v == "off") return false;
  throw Error(fmt::format("--{} is on or off, not '{}'", name, v));
}

/// What a tuning of `model` at B x T on this GPU holds for (--tiles auto).
TuningSetup tuningSetup(const GptModel &model, const Options &o, int B, int T) {
  return TuningSetup::of(model, precisionFrom(o), B, T);
}

/// Bytes in the unit that shows them (a tiny model's are KiB, GPT-2's MiB).
std::string mib(int64_t bytes) {
  if (bytes < 1024)
    return fmt::format("{} B", bytes);
  if (bytes < (int64_t(1) << 20))
    return fmt::format("{:.1f} KiB", double(bytes) / 1024.0);
  if (bytes < (int64_t(1) << 30))
    return fmt::format("{:.1f} MiB", double(bytes) / 1048576.0);
  return fmt::format("{:.2f} GiB", double(bytes) / 1073741824.0);
}

/// A time left as people say it: 42s, 3m07s, 2h05m.
std::string duration(double seconds) {
  const int64_t s = int64_t(std::llround(std::max(0.0, seconds)));
  if (s < 60)
    return fmt::format("{}s", s);
  if (s < 3600)
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
}

/// A parameter count as people say it: 124.44M, 20.5K.
std::string count(int64_t n) {
  if (n < 1000)
    return std::to_string(n);
  if (n < 1000000)
    return fmt::format("{:.1f}K", double(n) / 1e3);
  return fmt::format("{:.2f}M", double(n) / 1e6);
}

void printMemory(const char *phase, const GptModel &m) {
  GptModel::Memory mem = m.memory();
  fmt::print("[memory] {:<16} parameters {}, gradients {}, AdamW {}, activations {} ({} per layer), scratch {}; "
             "total {}, peak {}\n",
             phase, mib(mem.parameters), mib(mem.gradients), mib(mem.optimizer), mib(mem.activations),
             mib(mem.activations_per_layer), mib(mem.scratch), mib(mem.total()), mib(mem.peak));
}

/// A BPE needs both of its files: one alone is a mistake, not byte tokens.
void requireBothBpeFiles(const Options &o) {
  if (o.str("vocab").empty() != o.str("merges").empty())
    throw Error(fmt::format("GPT-2's BPE needs --vocab vocab.json and --merges merges.txt; only --{} is given",
                            o.str("vocab").empty() ? "merges" : "vocab"));
}

/// The file option `output` names is none of the run's `inputs` (options
/// that name files): writing it would destroy that input.
void checkNotAnInput(const Options &o, const std::string &output, std::initializer_list<const char *> inputs) {
  const std::string out = o.str(output);
  if (out.empty())
    return;
  for (const char *input : inputs) {
    std::string in = o.str(input);
    if (in.rfind('@', 0) == 0) // --tiles @FILE
      in = in.substr(1);
    std::error_code ec;
    if (!in.empty() && std::filesystem::equivalent(in, out, ec))
      throw Error(fmt::format("--{} {} is the --{} file; it would be overwritten (give another file name)", output,
                              out, input));
  }
}

} // namespace tegula::gpt::cli
