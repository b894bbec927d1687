//===- Generate.cpp - GPT-2 decoding with a KV cache -----------------------===//
#include "models/gpt/ModelKernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace tegula::gpt {

/// The KV cache and the one-token buffers of a decoding run, in one arena of
/// the model's storage type; attention's logsumexp and layernorm's
/// statistics in an f32 one.
struct GptModel::Decoder {
  Arena arena, stats;
  std::vector<int64_t> cache; // per layer: [n_ctx, 3C] (q, k, v of every position)
  int64_t x = 0, ln = 0, att = 0, proj = 0, res = 0, fcPre = 0, fc = 0, logits = 0; // arena
  int64_t lse = 0, mean = 0, rstd = 0;                                                // stats
};

std::vector<float> GptModel::decodeStep(Decoder &d, int32_t token, int pos) {
  const GptConfig &c = config_;
  const int C = c.n_embd, H = c.n_head, D = C / H;
  const int lnBlock = pow2AtLeast(C);
  const int attBlock = tiles_.attention_fwd_block; // queries; keys a step of attStep
  const int attStep = tiles_.attention_fwd_step ? tiles_.attention_fwd_step : attBlock;
  auto P = [&](const std::string &name) { return weights(name); };
  auto V = [&](int64_t offset, int64_t count) { return d.arena.view(offset, count); };
  auto S = [&](int64_t offset, int64_t count) { return d.stats.view(offset, count); };
  auto linear = [&](Arg x, const std::string &layer, Arg y, Arg pre, int N, int K, bool gelu) {
    linearForward(x, layer, y, pre, 1, N, K, gelu);
  };
  auto add = [&](Arg x, Arg y, Arg out) { kernels_->residual(launch({1}), x, y, out, int64_t(C), lnBlock); };
  auto layernorm = [&](Arg x, const std::string &ln, Arg y) {
    kernels_->layernorm(launch({1}, rowWarps(lnBlock)), x, P(ln + ".weight"), P(ln + ".bias"), y, S(d.mean, 1),
                        S(d.rstd, 1), 1, C, 1e-5f, 1, lnBlock, 1);
  };
  // The position's embedding: wpe's row `pos` as a one-row table.
  const ParamSpec &wpe = parameter("wpe.weight");
  std::vector<int32_t> tok = {token};
  const Arena &weightArena = weightCopy_.size() ? weightCopy_ : paramArena_;
  kernels_->embedding(launch({1}), tok, P("wte.weight"), weightArena.view(wpe.offset + int64_t(pos) * C, C),
                      V(d.x, C), 1, C, lnBlock);
  const int64_t cacheSize = int64_t(c.n_ctx) * 3 * C;
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string h = fmt::format("h.{}.", l);
    layernorm(V(d.x, C), h + "ln_1", V(d.ln, C));
    Arg row = V(d.cache[size_t(l)] + int64_t(pos) * 3 * C, 3 * C); // q, k, v of this position
    linear(V(d.ln, C), h + "attn.c_attn", row, row, 3 * C, C, false);
    // Attention of the block holding `pos` over positions 0..pos (rows of
    // the block past pos are computed and ignored).
    kernels_->attention(attentionForwardLaunch({1, uint32_t(H)}), V(d.cache[size_t(l)], cacheSize),
                        V(d.att, int64_t(c.n_ctx) * C),
                        S(d.lse, int64_t(H) * c.n_ctx), 0, C, 2 * C, 3 * C, H, pos + 1,
                        1.0f / std::sqrt(float(D)), pos / attBlock, D, attBlock, attStep, pos + 1,
                        tiles_.attention_fwd_diagonal_mask_only);
    linear(V(d.att + int64_t(pos) * C, C), h + "attn.c_proj", V(d.proj, C), V(d.proj, C), C, C, false);
    add(V(d.x, C), V(d.proj, C), V(d.res, C));
    layernorm(V(d.res, C), h + "ln_2", V(d.ln, C));
    linear(V(d.ln, C), h + "mlp.c_fc", V(d.fc, 4 * C), V(d.fcPre, 4 * C), 4 * C, C, true);
    linear(V(d.fc, 4 * C), h + "mlp.c_proj", V(d.proj, C), V(d.proj, C), C, 4 * C, false);
    add(V(d.res, C), V(d.proj, C), V(d.x, C));
  }
  layernorm(V(d.x, C), "ln_f", V(d.ln, C));
  [[maybe_unused]] const auto [KM, KN, KK, kmajorWarps, kmajorStages] = tiles_.kmajor();
  kernels_->lmHead(launchKMajor({1, uint32_t(cdiv(c.vocab_padded, KN))}), V(d.ln, C), P("wte.weight"),
                   V(d.logits, c.vocab_padded), 1, C, c.vocab_padded, KM, KN, KK, 0);
  return d.arena.download(d.logits, c.vocab);
}

namespace {
int pick(const std::vector<float> &logits, const GptModel::Sampling &s, std::mt19937_64 &rng) {
  // A NaN makes the sort's order and the draw's weights undefined: a model
  // that diverged, or a checkpoint with NaN or inf in it, says so instead of
  // printing whatever token that gives.
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isfinite(logits[i]))
      throw Error(fmt::format("GPT generate: the model's logit for token {} is {} (are there NaN or inf values in "
                              "its weights? a training run that diverged writes them)",
                              i, logits[i]));
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
  if (s.temperature <= 0)
    return order[0];
  if (s.top_k > 0 && size_t(s.top_k) < order.size())
    order.resize(size_t(s.top_k));
  std::vector<double> p;
  const double mx = logits[size_t(order[0])];
  double sum = 0;
  for (int i : order)
    sum += p.emplace_back(std::exp((logits[size_t(i)] - mx) / s.temperature));
  double kept = 0;
  size_t n = 0;
  while (n < p.size() && (n == 0 || kept / sum < s.top_p))
    kept += p[n++];
  std::discrete_distribution<size_t> draw(p.begin(), p.begin() + std::ptrdiff_t(n));
  return order[draw(rng)];
}
} // namespace

std::vector<int32_t> GptModel::generate(const std::vector<int32_t> &prompt, int count, const Sampling &sampling) {
  const GptConfig &c = config_;
  requireParameters("GPT generate");
  if (prompt.empty())
    throw Error("GPT generate: the prompt is empty");
  if (count < 0)
    throw Error(fmt::format("GPT generate: the count of new tokens is 0 or more, not {}", count));
  if (int64_t(prompt.size()) + count > c.n_ctx)
    throw Error(fmt::format("GPT generate: {} prompt tokens + {} new ones exceed the context of {}", prompt.size(),
                            count, c.n_ctx));
  for (int32_t t : prompt)
    if (t < 0 || t >= c.vocab)
      throw Error(fmt::format("GPT generate: token {} is outside the vocabulary [0, {})", t, c.vocab));
  // As Hugging Face refuses them: a nonsense setting must not quietly become
  // greedy decoding or an unrestricted draw.
  if (!(sampling.temperature >= 0) || std::isinf(sampling.temperature))
    throw Error(fmt::format("GPT generate: temperature is 0 (greedy) or a positive number, not {}",
                            sampling.temperature));
  if (sampling.top_k < 0)
    throw Error(fmt::format("GPT generate: top_k is 0 (all tokens) or a positive count, not {}", sampling.top_k));
  if (!(sampling.top_p > 0 && sampling.top_p <= 1))
    throw Error(fmt::format("GPT generate: top_p is in (0, 1], not {}", sampling.top_p));
  for (int32_t stop : sampling.stop_tokens)
    if (stop < 0 || stop >= c.vocab)
      throw Error(fmt::format("GPT generate: a stop token is a token of the vocabulary [0, {}), not {}", c.vocab,
                              stop));
  const int C = c.n_embd;
  Decoder d;
  int64_t size = 0;
  auto take = [&](int64_t n) { int64_t at = size; size += n; return at; };
  for (int l = 0; l < c.n_layer; ++l)
    d.cache.push_back(take(int64_t(c.n_ctx) * 3 * C));
  d.x = take(C), d.ln = take(C), d.att = take(int64_t(c.n_ctx) * C);
  d.proj = take(C), d.res = take(C), d.fcPre = take(4 * C), d.fc = take(4 * C), d.logits = take(c.vocab_padded);
  d.arena = Arena(size, backend_, storage_);
  const int64_t lseSize = int64_t(c.n_head) * c.n_ctx;
  d.lse = 0, d.mean = lseSize, d.rstd = lseSize + 1;
  d.stats = Arena(lseSize + 2, backend_);
  std::mt19937_64 rng(sampling.seed);
  std::vector<float> logits;
  for (size_t i = 0; i < prompt.size(); ++i) // the prompt fills the cache
    logits = decodeStep(d, prompt[i], int(i));
  std::vector<int32_t> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(pick(logits, sampling, rng));
    if (sampling.on_token)
      sampling.on_token(out.back());
    if (std::find(sampling.stop_tokens.begin(), sampling.stop_tokens.end(), out.back()) != sampling.stop_tokens.end())
      break;
    if (i + 1 < count)
      logits = decodeStep(d, out.back(), int(prompt.size()) + i);
  }
  return out;
}

} // namespace tegula::gpt
