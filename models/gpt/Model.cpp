//===- Model.cpp - GPT-2: parameters, checkpoints, the forward pass -------===//
//
// The backward is in Backward.cpp, AdamW and clipping in Optimizer.cpp,
// decoding in Generate.cpp.
//
//===----------------------------------------------------------------------===//
#include "models/gpt/Model.h"
#include "models/gpt/FileOutput.h"

#include "models/gpt/Activations.h"
#include "models/gpt/ModelKernels.h"
#include "models/gpt/Safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <span>
#include <cstring>
#include <numeric>
#include <random>
#include <tuple>

namespace tegula::gpt {

void GptConfig::validate() const {
  auto fail = [&](const std::string &why) { return Error(fmt::format("GPT config: {}", why)); };
  if (n_layer < 1 || n_head < 1 || n_embd < 1 || vocab < 1 || n_ctx < 1)
    throw fail("every size must be positive");
  if (n_embd % n_head)
    throw fail(fmt::format("n_embd {} is not a multiple of n_head {}", n_embd, n_head));
  const int head = n_embd / n_head;
  if (!std::has_single_bit(unsigned(head)) || head < 16)
    throw fail(fmt::format("the head size n_embd / n_head = {} must be a power of two >= 16", head));
  if (vocab_padded < vocab)
    throw fail(fmt::format("vocab_padded {} is smaller than vocab {}", vocab_padded, vocab));
}

int64_t ParamSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<ParamSpec> parameterLayout(const GptConfig &c) {
  std::vector<ParamSpec> p;
  const int64_t C = c.n_embd;
  auto add = [&](std::string name, std::vector<int64_t> shape) { p.push_back({std::move(name), std::move(shape)}); };
  add("wte.weight", {c.vocab_padded, C}); // rows past vocab stay zero (the padded LM head)
  add("wpe.weight", {c.n_ctx, C});
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string h = fmt::format("h.{}.", i);
    add(h + "ln_1.weight", {C});
    add(h + "ln_1.bias", {C});
    add(h + "attn.c_attn.weight", {C, 3 * C});
    add(h + "attn.c_attn.bias", {3 * C});
    add(h + "attn.c_proj.weight", {C, C});
    add(h + "attn.c_proj.bias", {C});
    add(h + "ln_2.weight", {C});
    add(h + "ln_2.bias", {C});
    add(h + "mlp.c_fc.weight", {C, 4 * C});
    add(h + "mlp.c_fc.bias", {4 * C});
    add(h + "mlp.c_proj.weight", {4 * C, C});
    add(h + "mlp.c_proj.bias", {C});
  }
  add("ln_f.weight", {C});
  add("ln_f.bias", {C});
  // The matrices first, then the vectors (layernorm parameters, biases),
  // each in Hugging Face's order: weight decay applies to the matrices only,
  // so an AdamW step is two launches over two ranges of the arenas.
  int64_t offset = 0;
  for (bool matrices : {true, false})
    for (ParamSpec &s : p)
      if ((s.shape.size() >= 2) == matrices) {
        s.offset = offset;
        offset += s.numel();
      }
  return p;
}

//===----------------------------------------------------------------------===//
// Arena
//===----------------------------------------------------------------------===//

Arena::Arena(int64_t elements, Backend backend, DType dtype) : size_(elements), dtype_(dtype) {
  if (dtype != DType::f32 && dtype != DType::bf16 && dtype != DType::i32)
    throw Error(fmt::format("GPT arena: {} storage (f32, bf16, or i32 counters)", dtype_name(dtype)));
  if (backend == Backend::GPU) {
    device_ = std::make_shared<DeviceBuffer>(size_t(elements), dtype);
    device_->fill_bytes(0);
  } else {
    host_ = std::make_shared<std::vector<uint32_t>>(size_t((bytes() + 3) / 4), 0u);
  }
}

Arg Arena::view(int64_t offset, int64_t count) const {
  if (offset < 0 || count < 0 || offset + count > size_)
    throw Error(fmt::format("GPT arena: elements [{}, {}) are outside its {}", offset, offset + count, size_));
  const int64_t at = offset * int64_t(dtype_size(dtype_));
  if (device_)
    return Arg::device(device_->device_ptr() + uint64_t(at), size_t(count), dtype_);
  return Arg::buffer(reinterpret_cast<char *>(host_->data()) + at, size_t(count), dtype_);
}

void Arena::upload(int64_t offset, const std::vector<float> &values) {
  Arg at = view(offset, int64_t(values.size())); // bounds
  if (dtype_ == DType::i32)
    throw Error("GPT arena: an i32 arena holds counters, not values to upload");
  if (dtype_ == DType::f32) {
    if (device_)
      device_->upload(std::span<const float>(values), size_t(offset));
    else
      std::memcpy(at.data(), values.data(), values.size() * 4);
    return;
  }
  std::vector<bfloat16> rounded(values.begin(), values.end());
  if (device_)
    device_->upload(std::span<const bfloat16>(rounded), size_t(offset));
  else
    std::memcpy(at.data(), rounded.data(), rounded.size() * 2);
}

std::vector<float> Arena::download(int64_t offset, int64_t count) const {
  Arg at = view(offset, count); // bounds
  if (dtype_ == DType::i32)
    throw Error("GPT arena: an i32 arena holds counters, not values to download");
  std::vector<float> out(static_cast<size_t>(count));
  if (dtype_ == DType::f32) {
    if (device_)
      device_->download(std::span<float>(out), size_t(offset));
    else
      std::memcpy(out.data(), at.data(), out.size() * 4);
    return out;
  }
  std::vector<bfloat16> stored(static_cast<size_t>(count));
  if (device_)
    device_->download(std::span<bfloat16>(stored), size_t(offset));
  else
    std::memcpy(stored.data(), at.data(), stored.size() * 2);
  std::copy(stored.begin(), stored.end(), out.begin());
  return out;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

GptModel::GptModel(GptConfig config, Backend backend, tl::precision matmul, DType storage)
    : config_(config), backend_(backend), storage_(storage),
      tiles_(backend == Backend::GPU ? gpu_tiles(storage, device_info().chip, matmul) : cpu_tiles()) {
  config_.validate();
  if (backend == Backend::GPU)
    persistentPrograms_ = std::max(1, device_info().multiprocessors);
  if (storage != DType::f32 && storage != DType::bf16)
    throw Error(fmt::format("GPT: {} storage is not supported: f32, or bf16 with f32 master weights{}",
                            dtype_name(storage),
                            storage == DType::f16 ? " (f16 would need loss scaling; bf16 has f32's range)" : ""));
  // The descriptor kernels (bf16; f32 at tf32: the LM head) read rows of
  // vocab_padded elements through TMA, which wants 16-byte multiples (the
  // other widths are multiples of n_embd, a multiple of 16).
  const int64_t elem = int64_t(dtype_size(storage));
  if ((storage == DType::bf16 || matmul == tl::precision::tf32) && (config_.vocab_padded * elem) % 16)
    throw Error(fmt::format("GPT config: vocab_padded {} makes the LM head's rows {} bytes; its tensor "
                            "descriptors need a multiple of 16 bytes (pad the vocabulary to a multiple of {})",
                            config_.vocab_padded, config_.vocab_padded * elem, 16 / elem));
  kernels_ = Kernels::make(storage, matmul);
  params_ = parameterLayout(config_);
  int64_t n = 0;
  for (const ParamSpec &p : params_) {
    n = std::max(n, p.offset + p.numel());
    if (p.shape.size() >= 2)
      matricesEnd_ = std::max(matricesEnd_, p.offset + p.numel());
  }
  for (const ParamSpec &p : params_) // step() decays [0, matricesEnd_) and nothing after
    if ((p.shape.size() >= 2) != (p.offset < matricesEnd_))
      throw Error(fmt::format("GPT: parameter '{}' at offset {} is on the wrong side of the matrices' end {}",
                              p.name, p.offset, matricesEnd_));
  paramArena_ = Arena(n, backend);
  if (storage == DType::bf16)
    weightCopy_ = Arena(n, backend, DType::bf16);
  // f32 at tf32: the blocks' matrices (the linear layers' forward) and wte
  // (the LM head's input gradient, dlogits wte), transposed.
  if (storage == DType::f32 && matmul == tl::precision::tf32) {
    int64_t transposed = 0;
    for (const ParamSpec &p : params_)
      if (p.shape.size() == 2 && (p.name.rfind("h.", 0) == 0 || p.name == "wte.weight"))
        transposedOffset_[p.name] = transposed, transposed += p.numel();
    weightT_ = Arena(transposed, backend);
  }
  memory(); // the peak
}

void GptModel::refreshTransposedWeights() {
  constexpr int kTile = 32;
  for (const auto &[name, offset] : transposedOffset_) {
    const ParamSpec &p = parameter(name);
    const int R = int(p.shape[0]), C = int(p.shape[1]);
    kernels_->transpose(launch({uint32_t(cdiv(R, kTile)), uint32_t(cdiv(C, kTile))}),
                        paramArena_.view(p.offset, p.numel()), weightT_.view(offset, p.numel()), R, C, kTile, kTile);
  }
  transposedStale_ = false;
}

std::optional<Arg> GptModel::transposedWeight(const std::string &name) {
  auto it = transposedOffset_.find(name);
  if (it == transposedOffset_.end())
    return std::nullopt;
  if (transposedStale_)
    refreshTransposedWeights();
  return weightT_.view(it->second, parameter(name).numel());
}

std::string profileRole(const std::string &layer) {
  if (layer.rfind("h.", 0) != 0)
    return layer;
  const size_t dot = layer.find('.', 2);
  return dot == std::string::npos ? layer : layer.substr(dot + 1);
}

void GptModel::linearForward(Arg x, const std::string &layer, Arg y, Arg pre, int rows, int N, int K, bool gelu) {
  const std::string w = layer + ".weight", b = layer + ".bias";
  const ProfileLabel label(profileRole(layer));
  // Decoding (a row or a few) keeps the master weights and the narrower tile.
  std::optional<Arg> wt = rows >= tiles_.kmajor()[0] ? transposedWeight(w) : std::nullopt;
  if (wt) {
    const auto [BM, BN, BK, warps, stages] = tiles_.kmajor();
    kernels_->linearTn(launchKMajor(gemmGrid(rows, N, BM, BN)), x, *wt, weights(b), y, pre, rows, N, K, gelu, BM, BN,
                       BK, groupM());
    return;
  }
  const int BM = tiles_.bm, BN = tiles_.bn, BK = tiles_.bk;
  kernels_->linear(gelu ? launchGelu(rows, N, tiles_.geluForward()) : launchLinear(gemmGrid(rows, N, BM, BN)), x,
                   weights(w), weights(b), y, pre, rows, N, K, gelu, BM, BN, BK, groupM());
}

// A weight gradient's few tiles each run all of B T, one wave or two: at 132
// SMs GPT-2's [768, 3072] and [3072, 768] gradients make 144 tiles of 128 x
// 128 - two waves, the second 12 tiles long - and attention's [768, 768]
// 36. Half-width tiles take half as long (taken as 10% less efficient a
// FLOP): 288 tiles finish in 3 half-waves (1.65 full ones), 72 in one half.
// c_attn's 108 and wte's 2358 stay full width.
int GptModel::dwBlockN(int K, int N, int bm, int bn) const {
  auto cost = [&](int width, double slower) {
    return double(cdiv(cdiv(K, bm) * cdiv(N, width), persistentPrograms_)) * width * slower;
  };
  return bn >= 32 && cost(bn / 2, 1.1) < cost(bn, 1.0) ? bn / 2 : bn;
}

Grid GptModel::gemmGrid(int rows, int cols, int bm, int bn, int programsPerSm) const {
  const int64_t tilesM = cdiv(rows, bm), tilesN = cdiv(cols, bn);
  if (groupM() == 0)
    return {uint32_t(tilesM), uint32_t(tilesN)};
  return {uint32_t(std::min<int64_t>(tilesM * tilesN, int64_t(persistentPrograms_) * programsPerSm))};
}

LaunchOptions GptModel::launchGelu(int rows, int cols, const std::array<int, 5> &tile) const {
  const bool pingPong = tiles_.gelu_ping_pong && warpSpecialize_;
  LaunchOptions o = launch(gemmGrid(rows, cols, tile[0], tile[1], pingPong ? 2 : 1), tile[3], tile[4]);
  o.ping_pong = pingPong;
  return o;
}

GptModel::~GptModel() {
  // The weight gradients' stream may still be reading activations that the
  // members' destructors free (acts_ goes before the stream): wait for it.
  if (weightGradientStream_)
    try {
      weightGradientStream_->synchronize();
    } catch (...) { // a failed device: the frees report nothing either
    }
}

const ParamSpec &GptModel::parameter(const std::string &name) const {
  for (const ParamSpec &p : params_)
    if (p.name == name)
      return p;
  throw Error(fmt::format("GPT: no parameter '{}'", name));
}

std::vector<float> GptModel::read_parameter(const std::string &name) const {
  const ParamSpec &p = parameter(name);
  return paramArena_.download(p.offset, p.numel());
}

void GptModel::write_parameter(const std::string &name, const std::vector<float> &values) {
  const ParamSpec &p = parameter(name);
  if (int64_t(values.size()) != p.numel())
    throw Error(fmt::format("GPT: parameter '{}' has {} elements, got {}", name, p.numel(), values.size()));
  paramArena_.upload(p.offset, values);
  if (weightCopy_.size())
    weightCopy_.upload(p.offset, values);
  transposedStale_ = true;
  parameterWritten_.resize(params_.size(), false);
  parameterWritten_[size_t(&p - params_.data())] = true;
}

void GptModel::requireParameters(const char *what) const {
  std::vector<std::string> unset;
  for (size_t i = 0; i < params_.size(); ++i)
    if (i >= parameterWritten_.size() || !parameterWritten_[i])
      unset.push_back(params_[i].name);
  if (unset.empty())
    return;
  const size_t shown = std::min<size_t>(unset.size(), 3);
  throw Error(fmt::format("{}: {} of the model's {} parameters were never set ({}{}): call init_random(seed), "
                          "load a checkpoint, or write each one",
                          what, unset.size(), params_.size(),
                          fmt::join(unset.begin(), unset.begin() + ptrdiff_t(shown), ", "),
                          unset.size() > shown ? ", ..." : ""));
}

Arg GptModel::weights(const std::string &name) const {
  const ParamSpec &p = parameter(name);
  return (weightCopy_.size() ? weightCopy_ : paramArena_).view(p.offset, p.numel());
}

namespace {
/// Hugging Face's GPT-2 attention buffers (h.N.attn.bias / masked_bias):
/// the causal mask, not parameters.
bool isCausalMaskBuffer(std::string_view name) {
  if (name.rfind("h.", 0) != 0)
    return false;
  const size_t dot = name.find('.', 2);
  if (dot == std::string_view::npos || dot == 2 ||
      name.substr(2, dot - 2).find_first_not_of("0123456789") != std::string_view::npos)
    return false;
  const std::string_view rest = name.substr(dot + 1);
  return rest == "attn.bias" || rest == "attn.masked_bias";
}
} // namespace

void GptModel::load(const SafetensorsFile &file) {
  // Every tensor of the file is one of the model's (a checkpoint of more
  // layers, or of another model, would load in part and run silently).
  std::vector<std::string> unexpected;
  for (const std::string &key : file.names()) {
    const std::string name = key.rfind("transformer.", 0) == 0 ? key.substr(12) : key;
    const bool known = std::any_of(params_.begin(), params_.end(), [&](const ParamSpec &p) { return p.name == name; });
    if (!known && name != "lm_head.weight" && !isCausalMaskBuffer(name))
      unexpected.push_back(key);
  }
  if (!unexpected.empty()) {
    const size_t shown = std::min<size_t>(unexpected.size(), 4);
    throw Error(fmt::format("checkpoint: {} tensor{} this model ({} layers) has no parameter for: {}{}; a checkpoint "
                            "of another model or configuration",
                            unexpected.size(), unexpected.size() == 1 ? "" : "s", config_.n_layer,
                            fmt::join(unexpected.begin(), unexpected.begin() + ptrdiff_t(shown), ", "),
                            unexpected.size() > shown ? ", ..." : ""));
  }
  for (const ParamSpec &p : params_) {
    std::string name = p.name;
    if (!file.contains(name) && file.contains("transformer." + name))
      name = "transformer." + name;
    if (p.name == "wte.weight") { // [vocab, C] in the file, padded rows here
      std::vector<float> v = file.to_f32(name, {config_.vocab, config_.n_embd});
      v.resize(size_t(p.numel()), 0.0f);
      write_parameter(p.name, v);
      continue;
    }
    write_parameter(p.name, file.to_f32(name, p.shape));
  }
  // The head is tied to wte: an untied one cannot be loaded, only refused.
  for (const char *head : {"lm_head.weight", "transformer.lm_head.weight"}) {
    if (!file.contains(head))
      continue;
    std::vector<float> wte = read_parameter("wte.weight");
    wte.resize(size_t(config_.vocab) * size_t(config_.n_embd));
    if (file.to_f32(head, {config_.vocab, config_.n_embd}) != wte)
      throw Error(fmt::format("checkpoint: '{}' differs from wte.weight; Tegula's GPT ties the LM head to the token "
                              "embedding (tie_word_embeddings), so an untied head cannot be loaded",
                              head));
  }
}

void GptModel::save(const std::string &path, const std::map<std::string, std::string> &metadata) const {
  const std::vector<std::byte> bytes = checkpoint(metadata);
  write_file_replacing(path, {std::span<const std::byte>(bytes)}, "safetensors");
}

std::vector<std::byte> GptModel::checkpoint(const std::map<std::string, std::string> &metadata) const {
  std::vector<std::vector<float>> values;
  std::vector<TensorToWrite> tensors;
  values.reserve(params_.size());
  for (const ParamSpec &p : params_) {
    values.push_back(read_parameter(p.name));
    std::vector<int64_t> shape = p.shape;
    if (p.name == "wte.weight") {
      shape[0] = config_.vocab;
      values.back().resize(size_t(shape[0] * shape[1]));
    }
    tensors.push_back({p.name, shape, values.back()});
  }
  // The head count, which the weights do not say (checkpoint_config reads it).
  std::map<std::string, std::string> described = metadata;
  described.insert_or_assign("n_head", std::to_string(config_.n_head));
  return serialize_safetensors(tensors, described);
}

void GptModel::init_random(uint64_t seed) {
  seed_ = seed;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const float residualScale = 1.0f / std::sqrt(2.0f * float(config_.n_layer));
  for (const ParamSpec &p : params_) {
    std::vector<float> v(size_t(p.numel()), 0.0f);
    const bool isWeight = p.name.size() > 7 && p.name.compare(p.name.size() - 7, 7, ".weight") == 0;
    if (p.name.find("ln_") != std::string::npos) {
      if (isWeight)
        std::fill(v.begin(), v.end(), 1.0f);
    } else if (isWeight) {
      const bool residual = p.name.find("c_proj") != std::string::npos;
      const int64_t rows = p.name == "wte.weight" ? int64_t(config_.vocab) * config_.n_embd : p.numel();
      for (int64_t i = 0; i < rows; ++i)
        v[size_t(i)] = normal(rng) * (residual ? residualScale : 1.0f);
    }
    write_parameter(p.name, v);
  }
}

LaunchOptions GptModel::launch(Grid grid, int warps, int stages) const {
  return {.grid = grid, .num_warps = warps, .num_stages = stages, .backend = backend_,
          .warp_specialize = warpSpecialize_};
}

LaunchOptions GptModel::attentionForwardLaunch(Grid grid) const {
  LaunchOptions o = launch(grid, tiles_.attention_fwd_warps);
  o.warp_specialize = o.warp_specialize && tiles_.attention_fwd_ws;
  return o;
}

LaunchOptions GptModel::attentionBackwardLaunch(Grid grid) const {
  LaunchOptions o = launch(grid, tiles_.attention_warps);
  o.warp_specialize = o.warp_specialize && tiles_.attention_bwd_ws;
  return o;
}

float GptModel::forward(const std::vector<int32_t> &tokens, const std::vector<int32_t> &targets, int B, int T) {
  const GptConfig &c = config_;
  const int C = c.n_embd, H = c.n_head, D = C / H, BT = B * T;
  requireParameters("GPT forward");
  if (B < 1 || T < 1 || T > c.n_ctx)
    throw Error(fmt::format("GPT forward: B = {} and T = {} (1..n_ctx = {})", B, T, c.n_ctx));
  if (int64_t(tokens.size()) != int64_t(BT) || (!targets.empty() && targets.size() != tokens.size()))
    throw Error(fmt::format("GPT forward: {} tokens and {} targets for B x T = {}", tokens.size(),
                            targets.size(), BT));
  for (int32_t t : tokens)
    if (t < 0 || t >= c.vocab)
      throw Error(fmt::format("GPT forward: token {} is outside the vocabulary [0, {})", t, c.vocab));
  for (int32_t t : targets)
    if (t < 0 || t >= c.vocab)
      throw Error(fmt::format("GPT forward: target {} is outside the vocabulary [0, {})", t, c.vocab));

  // Activations, sized for this B x T (reused while it does not change).
  if (!acts_ || acts_->B != B || acts_->T != T) {
    if (weightGradientStream_) // it may still read the activations freed here
      weightGradientStream_->synchronize();
    acts_ = std::make_unique<Activations>();
    Activations &a = *acts_;
    a.B = B, a.T = T;
    int64_t size = 0, statSize = 0;
    auto take = [&](int64_t n) { int64_t at = size; size += n; return at; };
    auto stat = [&](int64_t n) { int64_t at = statSize; statSize += n; return at; };
    a.encoded = take(int64_t(BT) * C);
    for (int l = 0; l < c.n_layer; ++l) {
      Activations::Layer L;
      L.ln1 = take(int64_t(BT) * C), L.ln1Mean = stat(BT), L.ln1Rstd = stat(BT);
      L.qkv = take(int64_t(BT) * 3 * C), L.atty = take(int64_t(BT) * C), L.lse = stat(int64_t(B) * H * T);
      L.attproj = take(int64_t(BT) * C), L.residual2 = take(int64_t(BT) * C);
      L.ln2 = take(int64_t(BT) * C), L.ln2Mean = stat(BT), L.ln2Rstd = stat(BT);
      L.fchPre = take(int64_t(BT) * 4 * C), L.fch = take(int64_t(BT) * 4 * C);
      L.fcproj = take(int64_t(BT) * C), L.residual3 = take(int64_t(BT) * C);
      a.layers.push_back(L);
    }
    a.lnfOut = take(int64_t(BT) * C), a.lnfMean = stat(BT), a.lnfRstd = stat(BT);
    a.logits = take(int64_t(BT) * c.vocab_padded), a.losses = stat(BT), a.logitsLse = stat(BT);
    a.delta = stat(int64_t(B) * H * T); // used in statGrads only
    a.arena = Arena(size, backend_, storage_);
    int64_t gradSize = 0;
    auto keepGradient = [&](int64_t at, int64_t n, int64_t &cursor) { a.gradientAt[at] = cursor, cursor += n; };
    keepGradient(a.encoded, int64_t(BT) * C, gradSize);
    keepGradient(a.lnfOut, int64_t(BT) * C, gradSize);
    // The blocks' in two alternating buffers: the backward needs block l's
    // from block l + 1's ln_1 (which writes l's output gradient) to block
    // l's last kernels - and backward() keeps block l + 2's weight
    // gradients, on their own stream, ahead of that first write.
    const int64_t blockGradients = int64_t(BT) * 12 * C, first = gradSize;
    for (size_t l = 0; l < a.layers.size(); ++l) {
      const Activations::Layer &L = a.layers[l];
      int64_t cursor = first + int64_t(l % 2) * blockGradients;
      for (int64_t at : {L.ln1, L.atty, L.residual2, L.ln2, L.residual3})
        keepGradient(at, int64_t(BT) * C, cursor);
      keepGradient(L.qkv, int64_t(BT) * 3 * C, cursor);
      keepGradient(L.fchPre, int64_t(BT) * 4 * C, cursor);
    }
    gradSize += std::min<int64_t>(int64_t(a.layers.size()), 2) * blockGradients;
    a.grads = Arena(gradSize, backend_, storage_);
    a.stats = Arena(statSize, backend_);
    a.statGrads = Arena(statSize, backend_);
    if (backend_ == Backend::GPU) {
      a.deviceTokens = std::make_unique<DeviceBuffer>(size_t(BT), DType::i32);
      a.deviceTargets = std::make_unique<DeviceBuffer>(size_t(BT), DType::i32);
    } else {
      a.hostTokens.resize(size_t(BT));
      a.hostTargets.resize(size_t(BT));
    }
    memory(); // the peak
  }
  Activations &a = *acts_;
  // Until this forward has run, neither its logits nor a backward of it.
  a.hasTargets = false;
  a.logitsHoldGradient = true;
  if (a.deviceTokens) {
    a.deviceTokens->upload(tokens);
    if (!targets.empty())
      a.deviceTargets->upload(targets);
  } else {
    std::copy(tokens.begin(), tokens.end(), a.hostTokens.begin());
    std::copy(targets.begin(), targets.end(), a.hostTargets.begin());
  }
  const Arg tokArg = a.tokens(), tgtArg = a.targets();
  auto P = [&](const std::string &name) { return weights(name); };
  auto A = [&](int64_t offset, int64_t count) { return a.arena.view(offset, count); };
  auto S = [&](int64_t offset, int64_t count) { return a.stats.view(offset, count); };
  const int lnBlock = pow2AtLeast(C);
  const float eps = 1e-5f;
  auto linear = [&](Arg x, const std::string &layer, Arg y, Arg pre, int N, int K, bool gelu) {
    linearForward(x, layer, y, pre, BT, N, K, gelu);
  };
  const int64_t btc = int64_t(BT) * C;

  kernels_->embedding(launch({uint32_t(BT)}), tokArg, P("wte.weight"), P("wpe.weight"), A(a.encoded, btc), T, C,
                      lnBlock);
  const int attBlock = tiles_.attention_fwd_block;
  const int attStep = tiles_.attention_fwd_step ? tiles_.attention_fwd_step : attBlock;
  // LayerNorm's rows in chunks of Tiles::ln_fwd_block columns (0: one block
  // of lnBlock, a power of two past C).
  const int lnChunk = tiles_.ln_fwd_block ? tiles_.ln_fwd_block : lnBlock, lnChunks = int(cdiv(C, lnChunk));
  // The residual connections run in the LayerNorm after them
  // (residual_layernorm_fwd: res = x + a, y = layernorm(res)); the first
  // block's ln_1 reads the embeddings alone.
  auto residualLayernorm = [&](int64_t x, int64_t add, int64_t res, const std::string &ln, int64_t y, int64_t mean,
                               int64_t rstd) {
    kernels_->residualLayernorm(launchLayernormFwd(BT, lnBlock), A(x, btc), A(add, btc), A(res, btc),
                                P(ln + ".weight"), P(ln + ".bias"), A(y, btc), S(mean, BT), S(rstd, BT), BT, C, eps,
                                tiles_.ln_fwd_rows, lnChunk, lnChunks);
  };
  kernels_->layernorm(launchLayernormFwd(BT, lnBlock), A(a.encoded, btc), P("h.0.ln_1.weight"), P("h.0.ln_1.bias"),
                      A(a.layers[0].ln1, btc), S(a.layers[0].ln1Mean, BT), S(a.layers[0].ln1Rstd, BT), BT, C, eps,
                      tiles_.ln_fwd_rows, lnChunk, lnChunks);
  int64_t residual = a.encoded;
  for (int l = 0; l < c.n_layer; ++l) {
    const Activations::Layer &L = a.layers[size_t(l)];
    const std::string h = fmt::format("h.{}.", l);
    linear(A(L.ln1, btc), h + "attn.c_attn", A(L.qkv, 3 * btc), A(L.qkv, 3 * btc), 3 * C, C, false);
    kernels_->attention(attentionForwardLaunch({uint32_t(cdiv(T, attBlock)), uint32_t(B * H)}), A(L.qkv, 3 * btc),
                        A(L.atty, btc),
                        S(L.lse, int64_t(B) * H * T), 0, C, 2 * C, 3 * C, H, T, 1.0f / std::sqrt(float(D)), 0,
                        D, attBlock, attStep, BT, tiles_.attention_fwd_diagonal_mask_only);
    linear(A(L.atty, btc), h + "attn.c_proj", A(L.attproj, btc), A(L.attproj, btc), C, C, false);
    residualLayernorm(residual, L.attproj, L.residual2, h + "ln_2", L.ln2, L.ln2Mean, L.ln2Rstd);
    linear(A(L.ln2, btc), h + "mlp.c_fc", A(L.fch, 4 * btc), A(L.fchPre, 4 * btc), 4 * C, C, true);
    linear(A(L.fch, 4 * btc), h + "mlp.c_proj", A(L.fcproj, btc), A(L.fcproj, btc), C, 4 * C, false);
    if (l + 1 < c.n_layer) { // the next block's ln_1
      const Activations::Layer &next = a.layers[size_t(l) + 1];
      residualLayernorm(L.residual2, L.fcproj, L.residual3, fmt::format("h.{}.ln_1", l + 1), next.ln1, next.ln1Mean,
                        next.ln1Rstd);
    } else {
      residualLayernorm(L.residual2, L.fcproj, L.residual3, "ln_f", a.lnfOut, a.lnfMean, a.lnfRstd);
    }
    residual = L.residual3;
  }
  const int64_t logitsSize = int64_t(BT) * c.vocab_padded;
  const auto [HM, HN, HK, headWarps, headStages] = tiles_.head();
  {
    const ProfileLabel label("lm_head");
    kernels_->lmHead(launch(gemmGrid(BT, c.vocab_padded, HM, HN), headWarps, headStages), A(a.lnfOut, btc),
                     P("wte.weight"), A(a.logits, logitsSize), BT, C, c.vocab_padded, HM, HN, HK, groupM());
  }
  if (targets.empty()) {
    a.logitsHoldGradient = false;
    return NAN;
  }
  kernels_->crossEntropy(launch({uint32_t(BT)}), A(a.logits, logitsSize), tgtArg, S(a.losses, BT),
                         S(a.logitsLse, BT), c.vocab, c.vocab_padded, tiles_.vocab_block);
  a.logitsHoldGradient = false, a.hasTargets = true;
  std::vector<float> losses = a.stats.download(a.losses, BT);
  double sum = 0;
  for (float v : losses)
    sum += v;
  return float(sum / BT);
}

void GptModel::zero_grad() { gradientsPendingZero_ = true; }

void GptModel::allocateGradients() {
  if (gradArena_.size() == 0)
    gradArena_ = Arena(paramArena_.size(), backend_); // zeroed
}

void GptModel::zeroPendingGradients() const {
  if (!gradientsPendingZero_ || gradArena_.size() == 0) // none allocated: they are zero
    return;
  kernels_->fill(launch({uint32_t(cdiv(gradArena_.size(), 1024))}), gradArena_.view(0, gradArena_.size()), 0.0f,
                 gradArena_.size(), 1024);
  gradientsPendingZero_ = false;
}

std::vector<float> GptModel::read_gradient(const std::string &name) const {
  zeroPendingGradients();
  const ParamSpec &p = parameter(name);
  if (gradArena_.size() == 0) // no backward yet
    return std::vector<float>(size_t(p.numel()), 0.0f);
  return gradArena_.download(p.offset, p.numel());
}

GptModel::Memory GptModel::memory() const {
  Memory m;
  m.parameters = paramArena_.bytes() + weightCopy_.bytes() + weightT_.bytes();
  m.gradients = gradArena_.bytes();
  m.optimizer = adamM_.bytes() + adamV_.bytes();
  m.scratch = normScratch_.bytes() + columnScratch_.bytes() + transposeScratch_.bytes() + streamKPartials_.bytes() +
              streamKArrivals_.bytes();
  if (acts_) {
    const Activations &a = *acts_;
    m.activations = a.arena.bytes() + a.grads.bytes() + a.stats.bytes() + a.statGrads.bytes() + a.inputBytes();
    // A block: 18 tensors of B*T x C elements in storage, 4 B*T rows and
    // B*H*T logsumexps of statistics, each statistic with its gradient (the
    // gradients of 12 of the tensors are in two buffers the blocks share).
    const int64_t rows = int64_t(a.B) * a.T, C = config_.n_embd;
    m.activations_per_layer = 18 * rows * C * int64_t(dtype_size(storage_)) +
                              2 * (4 * rows + int64_t(a.B) * config_.n_head * a.T) * 4;
  }
  peak_ = std::max(peak_, m.total());
  m.peak = peak_;
  return m;
}

std::vector<float> GptModel::logits() const {
  if (!acts_)
    throw Error("GPT: logits() before forward()");
  if (acts_->logitsHoldGradient)
    throw Error("GPT: logits() after backward() (or a forward() that failed): the backward writes the logits' "
                "gradient over them (read them between forward() and backward())");
  const int BT = acts_->B * acts_->T, Vp = config_.vocab_padded, V = config_.vocab;
  std::vector<float> padded = acts_->arena.download(acts_->logits, int64_t(BT) * Vp), out;
  out.reserve(size_t(BT) * size_t(V));
  for (int r = 0; r < BT; ++r)
    out.insert(out.end(), padded.begin() + int64_t(r) * Vp, padded.begin() + int64_t(r) * Vp + V);
  return out;
}

std::vector<float> GptModel::block_output(int layer) const {
  if (!acts_)
    throw Error("GPT: block_output() before forward()");
  if (layer < 0 || layer >= config_.n_layer)
    throw Error(fmt::format("GPT: block {} of {}", layer, config_.n_layer));
  return acts_->arena.download(acts_->layers[size_t(layer)].residual3,
                               int64_t(acts_->B) * acts_->T * config_.n_embd);
}

} // namespace tegula::gpt
