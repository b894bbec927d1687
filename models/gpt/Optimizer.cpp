//===- Optimizer.cpp - GPT-2's AdamW step, clipping and schedule -----------===//
#include "models/gpt/Model.h"
#include "models/gpt/ModelKernels.h"
#include "models/gpt/Safetensors.h"
#include "models/gpt/FileOutput.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <span>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace tegula::gpt {

void GptModel::init_optimizer() {
  if (adamM_.size() == 0) {
    adamM_ = Arena(paramArena_.size(), backend_);
    adamV_ = Arena(paramArena_.size(), backend_);
  }
  memory(); // the peak
}

void GptModel::step(const AdamW &opt) {
  // What would turn every parameter into NaN or step it uphill, refused
  // before anything moves (as torch.optim.AdamW refuses them).
  if (!(opt.lr >= 0) || std::isinf(opt.lr))
    throw Error(fmt::format("GPT step: the learning rate is 0 or more, not {}", opt.lr));
  if (!(opt.beta1 >= 0 && opt.beta1 < 1) || !(opt.beta2 >= 0 && opt.beta2 < 1))
    throw Error(fmt::format("GPT step: betas are in [0, 1), not ({}, {})", opt.beta1, opt.beta2));
  if (!(opt.eps >= 0) || !(opt.weight_decay >= 0))
    throw Error(fmt::format("GPT step: eps and weight_decay are 0 or more, not {} and {}", opt.eps,
                            opt.weight_decay));
  init_optimizer();
  allocateGradients();
  zeroPendingGradients();
  ++steps_;
  const float bias1 = 1.0f - std::pow(opt.beta1, float(steps_));
  const float bias2 = 1.0f - std::pow(opt.beta2, float(steps_));
  // Two launches: the matrices (weight decay) and the vectors after them
  // (none) - parameterLayout places them so.
  const int64_t total = paramArena_.size();
  // Stochastic rounding's Philox key: the model's seed, the step and the
  // launch's first parameter mixed (splitmix64's finalizer), so no two
  // steps or launches draw the same bits.
  auto roundingSeed = [&](int64_t offset) {
    uint64_t z = seed_ + 0x9E3779B97F4A7C15ull * (uint64_t(steps_) + (uint64_t(offset) << 32));
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return int64_t(z ^ (z >> 31));
  };
  for (auto [offset, n, decay] : {std::tuple{int64_t(0), matricesEnd_, opt.weight_decay},
                                  std::tuple{matricesEnd_, total - matricesEnd_, 0.0f}}) {
    if (n == 0)
      continue;
    const LaunchOptions grid = launch({uint32_t(cdiv(n, 1024))});
    Arg params = paramArena_.view(offset, n), grads = gradArena_.view(offset, n);
    Arg m = adamM_.view(offset, n), v = adamV_.view(offset, n);
    if (weightCopy_.size()) // mixed precision: the bf16 copy follows the f32 master
      kernels_->adamwMixed(grid, params, weightCopy_.view(offset, n), grads, m, v, opt.lr, opt.beta1, opt.beta2,
                           opt.eps, decay, bias1, bias2, gradScale_, n, roundingSeed(offset), 1024,
                           opt.stochastic_rounding);
    else
      kernels_->adamw(grid, params, grads, m, v, opt.lr, opt.beta1, opt.beta2, opt.eps, decay, bias1, bias2,
                      gradScale_, n, 1024);
  }
  gradScale_ = 1.0f; // clipping applies to one step
  transposedStale_ = true;
}

namespace {
// What an optimizer-state file says it is, and the sizes it was saved at.
constexpr const char *kStateKind = "tegula-adamw-1";

std::map<std::string, int> sizesOf(const GptConfig &c) {
  return {{"n_layer", c.n_layer}, {"n_head", c.n_head},     {"n_embd", c.n_embd},
          {"vocab", c.vocab},     {"vocab_padded", c.vocab_padded}, {"n_ctx", c.n_ctx}};
}

/// The metadata entry `key` of `file` as an integer, or an error naming it.
int64_t metadataInteger(const SafetensorsFile &file, const std::string &key) {
  auto it = file.metadata().find(key);
  if (it == file.metadata().end())
    throw Error(fmt::format("optimizer state: its metadata has no '{}'", key));
  int64_t v = 0;
  const std::string &text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error(fmt::format("optimizer state: its metadata's '{}' is '{}', not an integer", key, text));
  return v;
}
} // namespace

void GptModel::save_optimizer(const std::string &path, const std::map<std::string, std::string> &metadata) const {
  const std::vector<std::byte> bytes = optimizer_state(metadata);
  write_file_replacing(path, {std::span<const std::byte>(bytes)}, "safetensors");
}

std::vector<std::byte> GptModel::optimizer_state(const std::map<std::string, std::string> &metadata) const {
  // The file's own entries are not the caller's to set (a "seed" of theirs
  // would have been dropped, or worse, read back).
  for (const auto &[key, value] : metadata)
    if (key == "tegula" || key == "adam_steps" || key == "seed" || sizesOf(config_).count(key))
      throw Error(fmt::format("GPT save_optimizer: the metadata key '{}' is the state's own (tegula, adam_steps, "
                              "seed and the model's sizes are); name yours otherwise",
                              key));
  std::vector<std::vector<float>> values;
  std::vector<TensorToWrite> tensors;
  values.reserve(3 * params_.size()); // spans into it: never reallocated
  for (const ParamSpec &p : params_)
    for (const Arena *moment : {&adamM_, &adamV_}) {
      // Before the first step the moments are zero (and maybe not allocated).
      values.push_back(moment->size() ? moment->download(p.offset, p.numel())
                                      : std::vector<float>(size_t(p.numel()), 0.0f));
      tensors.push_back({fmt::format("adam.{}.{}", moment == &adamM_ ? 'm' : 'v', p.name), p.shape, values.back()});
    }
  // bf16 storage: the weights' bf16 copy too. Stochastic rounding made it,
  // which rounding the master to nearest would not give back.
  if (weightCopy_.size())
    for (const ParamSpec &p : params_) {
      values.push_back(weightCopy_.download(p.offset, p.numel()));
      tensors.push_back({"bf16_copy." + p.name, p.shape, values.back(), "BF16"});
    }
  std::map<std::string, std::string> described = metadata;
  described.insert_or_assign("tegula", kStateKind);
  described.insert_or_assign("adam_steps", std::to_string(steps_));
  described.insert_or_assign("seed", std::to_string(seed_));
  for (const auto &[key, value] : sizesOf(config_))
    described.insert_or_assign(key, std::to_string(value));
  return serialize_safetensors(tensors, described);
}

void GptModel::load_optimizer(const SafetensorsFile &file) {
  if (!file.metadata().count("tegula") || file.metadata().at("tegula") != kStateKind)
    throw Error("optimizer state: the file is not one (GptModel::save_optimizer and tegula-gpt train --save write "
                "them, beside the model)");
  for (const auto &[key, value] : sizesOf(config_))
    if (const int64_t saved = metadataInteger(file, key); saved != value)
      throw Error(fmt::format("optimizer state: saved for {} {}, this model has {}: the state of another model",
                              key, saved, value));
  const int64_t steps = metadataInteger(file, "adam_steps");
  if (steps < 0 || steps > std::numeric_limits<int>::max())
    throw Error(fmt::format("optimizer state: {} steps taken is not a count", steps));
  const std::string seedText = file.metadata().count("seed") ? file.metadata().at("seed") : "";
  uint64_t seed = 0;
  if (const auto [end, ec] = std::from_chars(seedText.data(), seedText.data() + seedText.size(), seed);
      ec != std::errc() || end != seedText.data() + seedText.size())
    throw Error(fmt::format("optimizer state: its metadata's 'seed' is '{}', not a 64-bit seed", seedText));
  // Every moment read and checked before any is written: an error leaves
  // the model as it was.
  std::set<std::string> expected;
  std::vector<std::pair<std::vector<float>, std::vector<float>>> moments;
  std::vector<std::vector<float>> copies; // bf16 storage, where the file has them
  size_t copiesInFile = 0;
  for (const ParamSpec &p : params_) {
    const std::string m = "adam.m." + p.name, v = "adam.v." + p.name;
    for (const std::string &name : {m, v})
      if (!file.contains(name))
        throw Error(fmt::format("optimizer state: no '{}' (the file is cut short or of another model)", name));
    moments.emplace_back(file.to_f32(m, p.shape), file.to_f32(v, p.shape));
    // A damaged moment would turn the parameter into NaN at the next step.
    const auto &[mv, vv] = moments.back();
    if (!std::all_of(mv.begin(), mv.end(), [](float x) { return std::isfinite(x); }) ||
        !std::all_of(vv.begin(), vv.end(), [](float x) { return std::isfinite(x) && x >= 0; }))
      throw Error(fmt::format("optimizer state: the moments of '{}' hold a non-finite (or negative second) moment",
                              p.name));
    expected.insert(m), expected.insert(v);
    // An f32 run's state resumed in bf16 has none: the copy is the master
    // rounded to nearest. A bf16 run's resumed in f32 has no use for them.
    const std::string copy = "bf16_copy." + p.name;
    if (file.contains(copy)) {
      expected.insert(copy);
      ++copiesInFile;
      std::vector<float> c = file.to_f32(copy, p.shape);
      if (!std::all_of(c.begin(), c.end(), [](float x) { return std::isfinite(x); }))
        throw Error(fmt::format("optimizer state: the bf16 copy of '{}' holds a non-finite value", p.name));
      if (weightCopy_.size())
        copies.push_back(std::move(c));
    }
  }
  for (const std::string &name : file.names())
    if (!expected.count(name))
      throw Error(fmt::format("optimizer state: '{}' is no moment of this model's parameters", name));
  if (copiesInFile != 0 && copiesInFile != params_.size())
    throw Error(fmt::format("optimizer state: it holds the bf16 copy of {} of the {} parameters", copiesInFile,
                            params_.size()));
  init_optimizer();
  for (size_t i = 0; i < params_.size(); ++i) {
    adamM_.upload(params_[i].offset, moments[i].first);
    adamV_.upload(params_[i].offset, moments[i].second);
    if (!copies.empty())
      weightCopy_.upload(params_[i].offset, copies[i]);
  }
  steps_ = int(steps), seed_ = seed;
}

float GptModel::clip_grad_norm(float max_norm) {
  if (!(max_norm > 0)) // a negative one would flip the update's sign
    throw Error(fmt::format("GPT clip_grad_norm: max_norm is a positive number, not {}", max_norm));
  allocateGradients();
  zeroPendingGradients();
  const int64_t n = gradArena_.size();
  constexpr int kBlock = 4096;
  const int64_t blocks = cdiv(n, kBlock);
  if (normScratch_.size() != blocks + 1) // once: clipping runs every step
    normScratch_ = Arena(blocks + 1, backend_);
  Arena &scratch = normScratch_;
  kernels_->sumOfSquares(launch({uint32_t(blocks)}), gradArena_.view(0, n), scratch.view(0, blocks), n, kBlock);
  kernels_->sumAll(launch({1}), scratch.view(0, blocks), scratch.view(blocks, 1), int32_t(blocks), 1024);
  memory(); // the peak
  const float norm = std::sqrt(scratch.download(blocks, 1)[0]);
  gradScale_ = norm > max_norm ? max_norm / (norm + 1e-6f) : 1.0f;
  return norm;
}

float GptModel::learning_rate(int step, int warmup, int total, float max_lr, float min_lr) {
  if (step < 0 || warmup < 0 || total < 0)
    throw Error(fmt::format("GPT learning_rate: step {}, {} warm-up steps and {} in all are each 0 or more", step,
                            warmup, total));
  if (step < warmup)
    return max_lr * float(step + 1) / float(warmup);
  if (step >= total)
    return min_lr;
  const float progress = float(step - warmup) / float(std::max(1, total - warmup));
  return min_lr + 0.5f * (max_lr - min_lr) * (1.0f + std::cos(float(M_PI) * progress));
}

} // namespace tegula::gpt
