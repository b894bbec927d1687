//===- Model.cpp - GPT-2: parameters, forward, backward, optimiser step ----===//
#include "models/gpt/Model.h"

#include "models/gpt/ModelKernels.h"
#include "models/gpt/Safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
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
  if (dtype != DType::f32 && dtype != DType::bf16)
    throw Error(fmt::format("GPT arena: {} storage (f32 or bf16)", dtype_name(dtype)));
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

/// Activations of one forward pass for B x T tokens: the tensors of the
/// model (hidden states, q/k/v, logits) in `arena`, of the storage type, and
/// the per-row statistics (layernorm's mean and rstd, attention's
/// logsumexp, the losses) in `stats`, always f32.
struct GptModel::Activations {
  int B = 0, T = 0;
  Arena arena, stats;
  // In `arena`:
  int64_t encoded = 0, lnfOut = 0, logits = 0;
  // In `stats`:
  int64_t lnfMean = 0, lnfRstd = 0, losses = 0;
  struct Layer {
    int64_t ln1, qkv, atty, attproj, residual2, ln2, fchPre, fch, fcproj, residual3; // arena
    int64_t ln1Mean, ln1Rstd, lse, ln2Mean, ln2Rstd;                                 // stats
  };
  std::vector<Layer> layers;
  // d(loss)/d(activation) of the activations the backward carries a
  // gradient for (not fch, attproj and fcproj: their gradients live only
  // inside fused kernels), in `grads` at gradientAt[the activation's offset]
  // (the blocks' in two buffers that alternate, see forward());
  // `statGrads` mirrors `stats` (the losses' and attention's delta).
  Arena grads, statGrads;
  std::map<int64_t, int64_t> gradientAt;
  /// `count` elements of the gradient of the activation at `offset`.
  Arg gradient(int64_t offset, int64_t count) const {
    auto it = gradientAt.find(offset);
    if (it == gradientAt.end())
      throw Error(fmt::format("GPT backward: no gradient is kept for the activation at offset {}", offset));
    return grads.view(it->second, count);
  }
  int64_t delta = 0; // attention's rowsum(do * o), [B * H * T], in `statGrads`
  // The batch, B*T tokens and targets each, allocated with the activations
  // (a training loop does not allocate per step): on the device on the
  // GPU, in host memory elsewhere.
  std::vector<int32_t> hostTokens, hostTargets;
  std::unique_ptr<DeviceBuffer> deviceTokens, deviceTargets;
  bool hasTargets = false;
  int64_t inputBytes() const { return 2 * int64_t(B) * T * int64_t(sizeof(int32_t)); }
  Arg tokens() const { return deviceTokens ? Arg(*deviceTokens) : Arg(hostTokens); }
  Arg targets() const { return deviceTargets ? Arg(*deviceTargets) : Arg(hostTargets); }
};

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
  gradArena_ = Arena(n, backend);
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

void GptModel::linearForward(Arg x, const std::string &layer, Arg y, Arg pre, int rows, int N, int K, bool gelu) {
  const std::string w = layer + ".weight", b = layer + ".bias";
  // Decoding (a row or a few) keeps the master weights and the narrower tile.
  std::optional<Arg> wt = rows >= tiles_.kmajor()[0] ? transposedWeight(w) : std::nullopt;
  if (wt) {
    const auto [BM, BN, BK, warps, stages] = tiles_.kmajor();
    kernels_->linearTn(launchKMajor(gemmGrid(rows, N, BM, BN)), x, *wt, weights(b), y, pre, rows, N, K, gelu, BM, BN,
                       BK, groupM());
    return;
  }
  const int BM = tiles_.bm, BN = tiles_.bn, BK = tiles_.bk;
  kernels_->linear(launchLinear(gemmGrid(rows, N, BM, BN)), x, weights(w), weights(b), y, pre, rows, N, K, gelu, BM,
                   BN, BK, groupM());
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

Grid GptModel::gemmGrid(int rows, int cols, int bm, int bn) const {
  const int64_t tilesM = cdiv(rows, bm), tilesN = cdiv(cols, bn);
  if (groupM() == 0)
    return {uint32_t(tilesM), uint32_t(tilesN)};
  return {uint32_t(std::min<int64_t>(tilesM * tilesN, persistentPrograms_))};
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
}

Arg GptModel::weights(const std::string &name) const {
  const ParamSpec &p = parameter(name);
  return (weightCopy_.size() ? weightCopy_ : paramArena_).view(p.offset, p.numel());
}

void GptModel::load(const SafetensorsFile &file) {
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
}

void GptModel::save(const std::string &path, const std::map<std::string, std::string> &metadata) const {
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
  described.emplace("n_head", std::to_string(config_.n_head));
  write_safetensors(path, tensors, described);
}

void GptModel::init_random(uint64_t seed) {
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

float GptModel::forward(const std::vector<int32_t> &tokens, const std::vector<int32_t> &targets, int B, int T) {
  const GptConfig &c = config_;
  const int C = c.n_embd, H = c.n_head, D = C / H, BT = B * T;
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
    a.logits = take(int64_t(BT) * c.vocab_padded), a.losses = stat(BT);
    a.delta = stat(int64_t(B) * H * T); // used in statGrads only
    a.arena = Arena(size, backend_, storage_);
    int64_t gradSize = 0;
    auto keepGradient = [&](int64_t at, int64_t n, int64_t &cursor) { a.gradientAt[at] = cursor, cursor += n; };
    keepGradient(a.encoded, int64_t(BT) * C, gradSize);
    keepGradient(a.lnfOut, int64_t(BT) * C, gradSize);
    keepGradient(a.logits, int64_t(BT) * c.vocab_padded, gradSize);
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
  a.hasTargets = !targets.empty();
  if (a.deviceTokens) {
    a.deviceTokens->upload(tokens);
    if (a.hasTargets)
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
  const int attBlock = tiles_.attention_fwd_block, attWarps = tiles_.attention_fwd_warps;
  // The residual connections run in the LayerNorm after them
  // (residual_layernorm_fwd: res = x + a, y = layernorm(res)); the first
  // block's ln_1 reads the embeddings alone.
  auto residualLayernorm = [&](int64_t x, int64_t add, int64_t res, const std::string &ln, int64_t y, int64_t mean,
                               int64_t rstd) {
    kernels_->residualLayernorm(launch({uint32_t(BT)}, rowWarps(lnBlock)), A(x, btc), A(add, btc), A(res, btc),
                                P(ln + ".weight"), P(ln + ".bias"), A(y, btc), S(mean, BT), S(rstd, BT), C, eps,
                                lnBlock);
  };
  kernels_->layernorm(launch({uint32_t(BT)}, rowWarps(lnBlock)), A(a.encoded, btc), P("h.0.ln_1.weight"),
                      P("h.0.ln_1.bias"), A(a.layers[0].ln1, btc), S(a.layers[0].ln1Mean, BT),
                      S(a.layers[0].ln1Rstd, BT), C, eps, lnBlock);
  int64_t residual = a.encoded;
  for (int l = 0; l < c.n_layer; ++l) {
    const Activations::Layer &L = a.layers[size_t(l)];
    const std::string h = fmt::format("h.{}.", l);
    linear(A(L.ln1, btc), h + "attn.c_attn", A(L.qkv, 3 * btc), A(L.qkv, 3 * btc), 3 * C, C, false);
    kernels_->attention(launch({uint32_t(cdiv(T, attBlock)), uint32_t(B * H)}, attWarps), A(L.qkv, 3 * btc),
                        A(L.atty, btc),
                        S(L.lse, int64_t(B) * H * T), 0, C, 2 * C, 3 * C, H, T, 1.0f / std::sqrt(float(D)), 0,
                        D, attBlock, attBlock, BT, tiles_.attention_fwd_diagonal_mask_only);
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
  kernels_->lmHead(launch(gemmGrid(BT, c.vocab_padded, HM, HN), headWarps, headStages), A(a.lnfOut, btc),
                   P("wte.weight"), A(a.logits, logitsSize), BT, C, c.vocab_padded, HM, HN, HK, groupM());
  if (targets.empty())
    return NAN;
  kernels_->crossEntropy(launch({uint32_t(BT)}), A(a.logits, logitsSize), tgtArg, S(a.losses, BT), c.vocab,
                         c.vocab_padded, tiles_.vocab_block);
  std::vector<float> losses = a.stats.download(a.losses, BT);
  double sum = 0;
  for (float v : losses)
    sum += v;
  return float(sum / BT);
}

void GptModel::zero_grad() {
  kernels_->fill(launch({uint32_t(cdiv(gradArena_.size(), 1024))}), gradArena_.view(0, gradArena_.size()), 0.0f,
                 gradArena_.size(), 1024);
}

std::vector<float> GptModel::read_gradient(const std::string &name) const {
  const ParamSpec &p = parameter(name);
  return gradArena_.download(p.offset, p.numel());
}

void GptModel::backward() {
  if (!acts_ || !acts_->hasTargets)
    throw Error("GPT backward: run forward() with targets first");
  const GptConfig &c = config_;
  Activations &a = *acts_;
  const int B = a.B, T = a.T, C = c.n_embd, H = c.n_head, D = C / H, BT = B * T, Vp = c.vocab_padded;
  const int64_t btc = int64_t(BT) * C, logitsSize = int64_t(BT) * Vp;
  auto P = [&](const std::string &name) { return weights(name); };
  auto G = [&](const std::string &name) { // parameter gradients
    const ParamSpec &p = parameter(name);
    return gradArena_.view(p.offset, p.numel());
  };
  auto A = [&](int64_t offset, int64_t count) { return a.arena.view(offset, count); };
  auto dA = [&](int64_t offset, int64_t count) { return a.gradient(offset, count); };
  auto S = [&](int64_t offset, int64_t count) { return a.stats.view(offset, count); };
  auto dS = [&](int64_t offset, int64_t count) { return a.statGrads.view(offset, count); };
  const int BM = tiles_.bm, BN = tiles_.bn, BK = tiles_.bk, lnBlock = pow2AtLeast(C);
  [[maybe_unused]] const auto [KM, KN, KK, kmajorWarps, kmajorStages] = tiles_.kmajor();
  // The backward's blocks: a dkdv program owns `own` keys and steps through
  // the queries `step` at a time; a dq program owns `own` queries.
  const int own = tiles_.attention_bwd_block, step = tiles_.attention_bwd_step;
  const int attWarps = tiles_.attention_warps, colBlock = 32;
  // Column sums: partials of column_rows rows each, then their sum.
  const int colRows = tiles_.column_rows, colTileRows = tiles_.column_tile_rows, colTile = tiles_.column_block;
  const int partials = int(cdiv(BT, colRows));
  // The column sums' partials, f32, in three regions: column_partial_sums'
  // [partials, <= 4C] (c_attn's bias); c_proj's fused GELU backward's
  // [dxBlocks, 4C] (c_fc's bias: a row per block of B T rows); LayerNorm's
  // backward's three [lnParts, C] (its dw and db, and the bias of the
  // projection whose output gradient it writes - read by that projection's
  // linearBwd next).
  const int dxBlocks = int(cdiv(BT, tiles_.geluDx()[0]));
  const int lnParts = int(cdiv(BT, tiles_.ln_bwd_rows));
  const int64_t geluPartials = int64_t(partials) * 4 * C, lnPartials = geluPartials + int64_t(dxBlocks) * 4 * C;
  const int64_t lnW = lnPartials, lnB = lnW + int64_t(lnParts) * C, lnO = lnB + int64_t(lnParts) * C;
  if (const int64_t need = lnO + int64_t(lnParts) * C; columnScratch_.size() != need)
    columnScratch_ = Arena(need, backend_); // once per B x T
  auto columnSums = [&](int64_t partialOffset, int rows, int N, Arg out) {
    kernels_->columnSums(launch({uint32_t(cdiv(N, tiles_.column_sum_block))}),
                         columnScratch_.view(partialOffset, int64_t(rows) * N), out, rows, N, true,
                         tiles_.column_sum_rows, tiles_.column_sum_block);
  };
  const Arg tgtArg = a.targets(), tokArg = a.tokens();

  // f32 at tf32: the weight gradients read x and dy transposed (x^T dy with
  // both operands along B T: wgmma's order for tf32), from scratch sized once
  // per B x T - where B T rows make 16-byte multiples (TMA's rule).
  // x^T then dy^T: every layer's K + N is at most 5 C (the MLP's).
  const bool transposedDw = !transposedOffset_.empty() && BT % 4 == 0;
  if (const int64_t need = transposedDw ? int64_t(BT) * 5 * C : 0; transposeScratch_.size() != need) {
    transposeScratch_ = Arena(); // freed before its successor is allocated
    transposeScratch_ = Arena(need, backend_);
    memory(); // the peak
  }
  // The weight gradients on a stream of their own (GPU): each waits for the
  // default stream's work so far - which made its x and dy, and nothing
  // after writes them or its gradient - and the default stream waits for
  // them all when the backward returns (or throws). Not wte's (the token
  // embedding's scatter adds into it too) nor the transposed ones of f32 at
  // tf32 (the next layer's transposes reuse their scratch).
  // Block l's activation gradients share a buffer with block l + 2's: block
  // l's ln_1 (the first to write block l - 1's) waits for block l + 1's
  // weight gradients (blockWeightGradients_[(l + 1) % 2], recorded after
  // them on their stream).
  Stream *side = nullptr;
  if (backend_ == Backend::GPU && overlapWeightGradients_) {
    if (!weightGradientStream_) {
      weightGradientStream_ = std::make_unique<Stream>();
      for (std::unique_ptr<Event> &e : blockWeightGradients_)
        e = std::make_unique<Event>();
    }
    side = weightGradientStream_.get();
  }
  struct Join {
    Stream *side;
    ~Join() {
      if (side)
        try {
          side->join_into(0);
        } catch (...) { // a failed driver reports at the next call
        }
    }
  } join{side};
  auto launchWeightGradient = [&](Grid grid) {
    LaunchOptions o = launchDw(grid);
    if (side) {
      side->wait_for(0);
      o.stream = side->handle();
    }
    return o;
  };
  auto transposeInto = [&](Arg in, Arg out, int rows, int cols) {
    constexpr int kTile = 32;
    kernels_->transpose(launch({uint32_t(cdiv(rows, kTile)), uint32_t(cdiv(cols, kTile))}), in, out, rows, cols,
                        kTile, kTile);
  };

  // y = x w + b, given dy: dx = dy w^T (overwritten), dw += x^T dy, db += sum dy.
  // With `pre` (x = gelu(pre)): dx is pre's gradient instead - GELU's
  // backward fused - and its column sums' partials go to the scratch
  // (geluPartials). `dyPartials` (offset, rows): dy's column sums' partials
  // are in the scratch already (written by the kernel that wrote dy).
  using Partials = std::pair<int64_t, int>;
  auto linearBwd = [&](Arg dy, Arg x, Arg dx, const std::string &w, int N, int K, std::optional<Arg> pre = {},
                       std::optional<Partials> dyPartials = {}) {
    if (pre) { // one program a tile: persistent, pre's block beside the accumulator spills (ptxas)
      const auto [GM, GN, GK, geluWarps, geluStages] = tiles_.geluDx();
      kernels_->matmulDxGelu(launch({uint32_t(cdiv(BT, GM)), uint32_t(cdiv(K, GN))}, geluWarps, geluStages), dy,
                             P(w + ".weight"), *pre, dx, columnScratch_.view(geluPartials, int64_t(dxBlocks) * K),
                             BT, N, K, GM, GN, GK, 0);
    } else
      kernels_->matmulDx(launchKMajor(gemmGrid(BT, K, KM, KN)), dy, P(w + ".weight"), dx, BT, N, K, KM, KN, KK,
                         groupM());
    if (transposedDw) {
      Arg xT = transposeScratch_.view(0, int64_t(BT) * K), dyT = transposeScratch_.view(int64_t(BT) * K,
                                                                                         int64_t(BT) * N);
      transposeInto(x, xT, BT, K);
      transposeInto(dy, dyT, BT, N);
      const int dwBN = dwBlockN(K, N, KM, tiles_.kmajor_dw_bn ? tiles_.kmajor_dw_bn : KN);
      kernels_->matmulDwTn(launchKMajor({uint32_t(cdiv(K, KM)), uint32_t(cdiv(N, dwBN))}), xT, dyT,
                           G(w + ".weight"), BT, N, K, true, KM, dwBN, KK);
    } else {
      const int dwBN = dwBlockN(K, N, BM, BN);
      kernels_->matmulDw(launchWeightGradient({uint32_t(cdiv(K, BM)), uint32_t(cdiv(N, dwBN))}), x, dy,
                         G(w + ".weight"), BT, N, K, true, BM, dwBN, BK);
    }
    if (dyPartials) {
      columnSums(dyPartials->first, dyPartials->second, N, G(w + ".bias"));
      return;
    }
    kernels_->columnPartialSums(launch({uint32_t(cdiv(N, colTile)), uint32_t(partials)}), dy,
                                columnScratch_.view(0, int64_t(partials) * N), BT, N, colRows, colTileRows, colTile);
    columnSums(0, partials, N, G(w + ".bias"));
  };
  // y = layernorm(x), given dy: dx = ... (+ dres: the residual stream's
  // gradient, where x also feeds it), dw, db += ...; with outSums, dx's
  // column sums' partials go to lnO for the projection that produced x.
  const Partials lnOutPartials{lnO, lnParts};
  auto layernormBwd = [&](Arg dy, int64_t x, int64_t mean, int64_t rstd, std::optional<Arg> dres, Arg dx,
                          const std::string &ln, bool outSums) {
    kernels_->layernormBwd(launch({uint32_t(lnParts)}, std::max(tiles_.ln_bwd_warps, lnBlock / 256)), dy, A(x, btc),
                           P(ln + ".weight"), S(mean, BT), S(rstd, BT), dres ? *dres : dx, dx,
                           columnScratch_.view(lnW, int64_t(lnParts) * C), columnScratch_.view(lnB, int64_t(lnParts) * C),
                           columnScratch_.view(lnO, int64_t(lnParts) * C), BT, C, dres.has_value(), outSums,
                           tiles_.ln_bwd_rows, tiles_.ln_bwd_tile_rows, lnBlock);
    columnSums(lnW, lnParts, C, G(ln + ".weight"));
    columnSums(lnB, lnParts, C, G(ln + ".bias"));
  };

  // Loss: the mean over the B * T positions, so each position's dloss is 1/BT.
  kernels_->fill(launch({uint32_t(cdiv(BT, 1024))}), dS(a.losses, BT), 1.0f / float(BT), int64_t(BT), 1024);
  kernels_->crossEntropyBwd(launch({uint32_t(BT)}), A(a.logits, logitsSize), tgtArg, S(a.losses, BT),
                            dS(a.losses, BT), dA(a.logits, logitsSize), c.vocab, Vp, tiles_.vocab_block);
  // Tied LM head: logits = lnf wte^T. Its input gradient dlogits wte reads
  // wte K-major through its transpose where the model keeps one (wgmma).
  if (std::optional<Arg> wteT = transposedWeight("wte.weight"))
    kernels_->matmulDx(launchKMajor(gemmGrid(BT, C, KM, KN)), dA(a.logits, logitsSize), *wteT, dA(a.lnfOut, btc),
                       BT, Vp, C, KM, KN, KK, groupM());
  else
    kernels_->matmul(launchLinear(gemmGrid(BT, C, BM, BN)), dA(a.logits, logitsSize), P("wte.weight"),
                     dA(a.lnfOut, btc), BT, C, Vp, BM, BN, BK, groupM());
  const int wteBN = dwBlockN(Vp, C, BM, BN);
  kernels_->matmulDw(launchDw({uint32_t(cdiv(Vp, BM)), uint32_t(cdiv(C, wteBN))}), dA(a.logits, logitsSize),
                     A(a.lnfOut, btc), G("wte.weight"), BT, C, Vp, true, BM, wteBN, BK);
  const int64_t last = a.layers.back().residual3;
  // ln_f's input is the last block's output: the gradient of its c_proj.
  layernormBwd(dA(a.lnfOut, btc), last, a.lnfMean, a.lnfRstd, std::nullopt, dA(last, btc), "ln_f", true);

  const float scale = 1.0f / std::sqrt(float(D));
  for (int l = c.n_layer - 1; l >= 0; --l) {
    const Activations::Layer &L = a.layers[size_t(l)];
    const std::string h = fmt::format("h.{}.", l);
    const int64_t in = l == 0 ? a.encoded : a.layers[size_t(l) - 1].residual3;
    // residual3 = residual2 + mlp(ln2(residual2)).
    // fch = gelu(fchPre): c_proj's dx is fchPre's gradient (GELU's backward
    // in its epilogue), with c_fc's bias partials; c_proj's bias sums the
    // partials of the LayerNorm backward that wrote dy (ln_f's, or the next
    // block's ln_1).
    linearBwd(dA(L.residual3, btc), A(L.fch, 4 * btc), dA(L.fchPre, 4 * btc), h + "mlp.c_proj", C, 4 * C,
              A(L.fchPre, 4 * btc), lnOutPartials);
    linearBwd(dA(L.fchPre, 4 * btc), A(L.ln2, btc), dA(L.ln2, btc), h + "mlp.c_fc", 4 * C, C, std::nullopt,
              Partials{geluPartials, dxBlocks});
    // residual3 = residual2 + mlp(ln2(residual2)): residual2's gradient is
    // residual3's plus ln_2's input gradient, in one kernel.
    layernormBwd(dA(L.ln2, btc), L.residual2, L.ln2Mean, L.ln2Rstd, dA(L.residual3, btc), dA(L.residual2, btc),
                 h + "ln_2", true);
    // residual2 = in + attn(ln1(in)).
    linearBwd(dA(L.residual2, btc), A(L.atty, btc), dA(L.atty, btc), h + "attn.c_proj", C, C, std::nullopt,
              lnOutPartials);
    const int64_t bht = int64_t(B) * H * T;
    kernels_->attentionDelta(launch({uint32_t(cdiv(T, step)), uint32_t(B * H)}), A(L.atty, btc),
                             dA(L.atty, btc), dS(a.delta, bht), H, T, D, step);
    kernels_->attentionDkdv(launch({uint32_t(cdiv(T, own)), uint32_t(B * H)}, attWarps), A(L.qkv, 3 * btc),
                            dA(L.atty, btc), S(L.lse, bht), dS(a.delta, bht), dA(L.qkv, 3 * btc), 0, C, 2 * C,
                            3 * C, H, T, scale, D, step, own, BT);
    kernels_->attentionDq(launch({uint32_t(cdiv(T, own)), uint32_t(B * H)}, attWarps), A(L.qkv, 3 * btc),
                          dA(L.atty, btc), S(L.lse, bht), dS(a.delta, bht), dA(L.qkv, 3 * btc), 0, C, 2 * C,
                          3 * C, H, T, scale, D, own, step, BT);
    linearBwd(dA(L.qkv, 3 * btc), A(L.ln1, btc), dA(L.ln1, btc), h + "attn.c_attn", 3 * C, C);
    if (side) {
      blockWeightGradients_[size_t(l % 2)]->record(side->handle());
      if (l > 0 && l + 1 < c.n_layer) // block l - 1's gradients are block l + 1's buffer
        blockWeightGradients_[size_t((l + 1) % 2)]->make_wait(0);
    }
    // in's gradient: residual2's plus ln_1's input gradient - below the
    // first block the embeddings' (no projection bias to sum for).
    layernormBwd(dA(L.ln1, btc), in, L.ln1Mean, L.ln1Rstd, dA(L.residual2, btc), dA(in, btc), h + "ln_1", l > 0);
  }
  // Embeddings: wte (also the LM head's, accumulated above) and wpe.
  kernels_->embeddingTokens(launch({uint32_t(BT)}), tokArg, dA(a.encoded, btc), G("wte.weight"), C, lnBlock);
  kernels_->embeddingPositions(launch({uint32_t(T), uint32_t(cdiv(C, colBlock))}), dA(a.encoded, btc),
                               G("wpe.weight"), B, T, C, true, colBlock);
}

void GptModel::init_optimizer() {
  if (adamM_.size() == 0) {
    adamM_ = Arena(paramArena_.size(), backend_);
    adamV_ = Arena(paramArena_.size(), backend_);
  }
  memory(); // the peak
}

void GptModel::step(const AdamW &opt) {
  init_optimizer();
  ++steps_;
  const float bias1 = 1.0f - std::pow(opt.beta1, float(steps_));
  const float bias2 = 1.0f - std::pow(opt.beta2, float(steps_));
  // Two launches: the matrices (weight decay) and the vectors after them
  // (none) - parameterLayout places them so.
  const int64_t total = paramArena_.size();
  for (auto [offset, n, decay] : {std::tuple{int64_t(0), matricesEnd_, opt.weight_decay},
                                  std::tuple{matricesEnd_, total - matricesEnd_, 0.0f}}) {
    if (n == 0)
      continue;
    const LaunchOptions grid = launch({uint32_t(cdiv(n, 1024))});
    Arg params = paramArena_.view(offset, n), grads = gradArena_.view(offset, n);
    Arg m = adamM_.view(offset, n), v = adamV_.view(offset, n);
    if (weightCopy_.size()) // mixed precision: the bf16 copy follows the f32 master
      kernels_->adamwMixed(grid, params, weightCopy_.view(offset, n), grads, m, v, opt.lr, opt.beta1, opt.beta2,
                           opt.eps, decay, bias1, bias2, gradScale_, n, 1024);
    else
      kernels_->adamw(grid, params, grads, m, v, opt.lr, opt.beta1, opt.beta2, opt.eps, decay, bias1, bias2,
                      gradScale_, n, 1024);
  }
  gradScale_ = 1.0f; // clipping applies to one step
  transposedStale_ = true;
}

float GptModel::clip_grad_norm(float max_norm) {
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
  if (step < warmup)
    return max_lr * float(step + 1) / float(warmup);
  if (step >= total)
    return min_lr;
  const float progress = float(step - warmup) / float(std::max(1, total - warmup));
  return min_lr + 0.5f * (max_lr - min_lr) * (1.0f + std::cos(float(M_PI) * progress));
}

GptModel::Memory GptModel::memory() const {
  Memory m;
  m.parameters = paramArena_.bytes() + weightCopy_.bytes() + weightT_.bytes();
  m.gradients = gradArena_.bytes();
  m.optimizer = adamM_.bytes() + adamV_.bytes();
  m.scratch = normScratch_.bytes() + columnScratch_.bytes() + transposeScratch_.bytes();
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
