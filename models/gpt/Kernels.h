// Kernels.h - GPT-2's layers in Tegula's DSL, forward and backward: token +
// position embedding, layernorm, GELU (tanh, "gelu_new"), fused softmax +
// cross-entropy over a padded vocabulary, AdamW, and the linear layers
// (matmul + bias with an optional fused GELU; dx, dw, db).
//
// Conventions: activations are row-major [rows, C]; one program per row
// where a row fits in one tile (BLOCK >= C, a power of two); f32 math
// everywhere (T is the storage type). Reductions across rows (weight
// gradients) run one program per column block looping over rows, so they
// are deterministic; only the embedding's token scatter uses atomics.
#pragma once

#include "examples/kernels.h"
#include "tegula/tegula.h"

#include <cmath>
#include <limits>

namespace tegula::gpt::kernels {

namespace detail {
/// GELU-tanh's gate 0.5 (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3), is
/// the sigmoid 1 / (1 + e^(-2u)): one exp2 and a division an element where
/// tl::tanh is libdevice's ~20 instructions (both sides of its small/large
/// split, selected) - in a linear layer's fused epilogue those were about as
/// long as the K loop before them at K = 768. e^(-2u) = inf gives a gate of
/// 0 and 0 one, as tanh's saturation does.
inline tl::tensor gelu_exp(const tl::tensor &x) { // e^(-2u), in base 2
  constexpr float k = -2.0f * 0.7978845608028654f * 1.4426950408889634f; // -2 sqrt(2/pi) log2(e)
  return tl::exp2(k * x * tl::fma(0.044715f * x, x, 1.0f));
}
/// The divisions are tl::fdiv (div.full.f32: within 2 ulp, no slow path).
inline tl::tensor gelu_gate(const tl::tensor &x) { return tl::fdiv(1.0f, 1.0f + gelu_exp(x)); }
/// gelu_new(x) = x * gate(x), in one division.
inline tl::tensor gelu(const tl::tensor &x) { return tl::fdiv(x, 1.0f + gelu_exp(x)); }
/// d gelu_new / dx. With s = 0.5 (1 + tanh u): 0.5 (1 - tanh^2 u) = 2 s (1 - s).
inline tl::tensor gelu_grad(const tl::tensor &x) {
  const float k = 0.7978845608028654f; // sqrt(2 / pi)
  tl::tensor s = gelu_gate(x);
  return s + 2.0f * x * s * (1.0f - s) * k * tl::fma(3.0f * 0.044715f * x, x, 1.0f);
}

/// Runs `body(m0, n0)` for the [BM, BN] output tiles of an [M, N] GEMM this
/// program owns. GROUP_M = 0: one tile, (program_id(0), program_id(1)) - a
/// 2-D grid of every tile. GROUP_M > 0: persistent programs (a 1-D grid, the
/// SM count) walk the tiles pid, pid + programs, ... in groups of GROUP_M
/// row blocks, column by column, so that tiles running together share
/// operand blocks in L2; warp specialised, the producer loads the next
/// tile's stages during this tile's epilogue (on the H100 of 2026-11-26 the
/// persistent warp-specialised bf16 GEMM ran GPT-2's shapes 1.2-1.35x faster
/// than one program a tile).
template <class Body>
void forEachOutputTile(const tl::scalar<int32_t> &M, const tl::scalar<int32_t> &N, int BM, int BN, int groupM,
                       Body body) {
  if (groupM == 0) {
    body(tl::program_id(0) * BM, tl::program_id(1) * BN);
    return;
  }
  tl::tensor tiles_m = (M + (BM - 1)) / BM, tiles_n = (N + (BN - 1)) / BN;
  for (auto t : tl::range(tl::program_id(0), tiles_m * tiles_n, tl::num_programs(0))) {
    auto [tile_m, tile_n] = examples::groupedTile(t, tiles_m, tiles_n * groupM, groupM);
    body(tile_m * BM, tile_n * BN);
  }
}
} // namespace detail

/// out[r] = wte[tokens[r]] + wpe[r % seq_len]; one program per row r of the
/// [B * T, C] output.
template <class T>
void embedding_fwd(tl::ptr<int32_t> tokens, tl::ptr<T> wte, tl::ptr<T> wpe, tl::ptr<T> out,
                   tl::scalar<int32_t> seq_len, tl::scalar<int32_t> C, tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor cols = tl::arange(0, BLOCK);
  tl::tensor mask = cols < C;
  tl::tensor tok = tl::load(tokens + row);
  tl::tensor pos = row % seq_len;
  tl::tensor v = tl::load(wte + tok * C + cols, mask, 0.0f).to(tl::f32) +
                 tl::load(wpe + pos * C + cols, mask, 0.0f).to(tl::f32);
  tl::store(out + row * C + cols, v, mask);
}

/// dwte[tokens[r]] += dout[r] (f32 atomics: rows sharing a token meet there,
/// so the sums are not bit-deterministic); one program per row. Relaxed:
/// only the sums matter, and the kernel's end orders them for the next
/// (acq_rel put a GPU-wide fence before each of the 6.3 M atomics of a
/// GPT-2 step; relaxed and unused, they become RED reductions).
template <class T>
void embedding_bwd_tokens(tl::ptr<int32_t> tokens, tl::ptr<T> dout, tl::ptr<float> dwte, tl::scalar<int32_t> C,
                          tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor cols = tl::arange(0, BLOCK);
  tl::tensor mask = cols < C;
  tl::tensor tok = tl::load(tokens + row);
  tl::atomic_add(dwte + tok * C + cols, tl::load(dout + row * C + cols, mask, 0.0f).to(tl::f32), mask,
                 tl::memory_order::relaxed);
}

/// dwpe[t] (+)= sum over the batch of dout[b * T + t] (deterministic: one
/// program per position t and column block loops over b). `accumulate`
/// adds to the gradient (micro-batches) instead of overwriting it.
template <class T>
void embedding_bwd_positions(tl::ptr<T> dout, tl::ptr<float> dwpe, tl::scalar<int32_t> batch,
                             tl::scalar<int32_t> seq_len, tl::scalar<int32_t> C, tl::constant<bool> accumulate,
                             tl::constant<int> BLOCK) {
  tl::tensor t = tl::program_id(0);
  tl::tensor cols = tl::program_id(1) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = cols < C;
  tl::tensor acc = accumulate.value ? tl::load(dwpe + t * C + cols, mask, 0.0f) : tl::zeros({BLOCK}, tl::f32);
  for (auto b : tl::range(0, batch, 1, acc))
    acc = acc + tl::load(dout + (b * seq_len + t) * C + cols, mask, 0.0f).to(tl::f32);
  tl::store(dwpe + t * C + cols, acc, mask);
}

namespace detail {
/// LayerNorm of one row `v` (f32, BLOCK wide, zero past C) into y's row,
/// saving its mean and rstd.
template <class T>
void layernormRow(const tl::tensor &v, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<float> mean_out,
                  tl::ptr<float> rstd_out, const tl::scalar<int32_t> &C, const tl::scalar<float> &eps,
                  const tl::tensor &row, const tl::tensor &cols, const tl::tensor &mask) {
  tl::tensor mean = tl::sum(v, 0) / C.to(tl::f32);
  tl::tensor d = tl::where(mask, v - mean, 0.0f);
  tl::tensor rstd = tl::rsqrt(tl::sum(d * d, 0) / C.to(tl::f32) + eps);
  tl::tensor out = d * rstd * tl::load(w + cols, mask).to(tl::f32) + tl::load(b + cols, mask).to(tl::f32);
  tl::store(y + row * C + cols, out, mask);
  tl::store(mean_out + row, mean);
  tl::store(rstd_out + row, rstd);
}
} // namespace detail

/// LayerNorm forward with the row in registers: y = (x - mean) * rstd * w + b;
/// saves mean and rstd per row for the backward pass.
template <class T>
void layernorm_fwd(tl::ptr<T> x, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<float> mean_out,
                   tl::ptr<float> rstd_out, tl::scalar<int32_t> C, tl::scalar<float> eps,
                   tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor cols = tl::arange(0, BLOCK);
  tl::tensor mask = cols < C;
  detail::layernormRow(tl::load(x + row * C + cols, mask, 0.0f).to(tl::f32), w, b, y, mean_out, rstd_out, C, eps,
                       row, cols, mask);
}

/// The residual connection and the next LayerNorm in one pass: res = x + a
/// (stored as T), then layernorm_fwd of the stored res into y - so the sum
/// is not read back (residual_add then layernorm_fwd read it again).
template <class T>
void residual_layernorm_fwd(tl::ptr<T> x, tl::ptr<T> a, tl::ptr<T> res, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y,
                            tl::ptr<float> mean_out, tl::ptr<float> rstd_out, tl::scalar<int32_t> C,
                            tl::scalar<float> eps, tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor cols = tl::arange(0, BLOCK);
  tl::tensor mask = cols < C;
  tl::tensor sum = tl::load(x + row * C + cols, mask, 0.0f).to(tl::f32) +
                   tl::load(a + row * C + cols, mask, 0.0f).to(tl::f32);
  tl::tensor stored = sum.to(dtype_of_v<T>); // the LayerNorm reads what the residual stream holds
  tl::store(res + row * C + cols, stored, mask);
  detail::layernormRow(stored.to(tl::f32), w, b, y, mean_out, rstd_out, C, eps, row, cols, mask);
}

/// LayerNorm backward, the input gradient per row:
/// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * w.
template <class T>
void layernorm_bwd_dx(tl::ptr<T> dy, tl::ptr<T> x, tl::ptr<T> w, tl::ptr<float> mean_in,
                      tl::ptr<float> rstd_in, tl::ptr<T> dx, tl::scalar<int32_t> C,
                      tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor cols = tl::arange(0, BLOCK);
  tl::tensor mask = cols < C;
  tl::tensor rstd = tl::load(rstd_in + row);
  tl::tensor xhat = tl::where(mask, (tl::load(x + row * C + cols, mask, 0.0f).to(tl::f32) -
                                     tl::load(mean_in + row)) * rstd, 0.0f);
  tl::tensor g = tl::load(dy + row * C + cols, mask, 0.0f).to(tl::f32) *
                 tl::load(w + cols, mask, 0.0f).to(tl::f32);
  tl::tensor n = C.to(tl::f32);
  tl::tensor out = rstd * (g - tl::sum(g, 0) / n - xhat * (tl::sum(g * xhat, 0) / n));
  tl::store(dx + row * C + cols, out, mask);
}

/// LayerNorm backward in one pass over [rows, C] (BLOCK >= C): program j
/// takes rows [j ROWS, (j + 1) ROWS), BR at a time (a warp a row), and
/// - writes dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w, plus dres
///   with `residual` (the residual stream's gradient, which the LayerNorm's
///   input also feeds: no separate add);
/// - sums its rows of dy xhat and dy into partial_w[j] and partial_b[j]
///   (the LayerNorm's dw and db, first pass: column_sums adds the programs'
///   rows), and with `out_sums` those of dx into partial_o[j] - the bias
///   gradient of the projection whose output dx is the gradient of.
/// dy, x and dres are read once (layernorm_bwd_dx, layernorm_bwd_dwdb_partial
/// and residual_add read dy and x twice and wrote dx twice).
template <class T>
void layernorm_bwd(tl::ptr<T> dy, tl::ptr<T> x, tl::ptr<T> w, tl::ptr<float> mean_in, tl::ptr<float> rstd_in,
                   tl::ptr<T> dres, tl::ptr<T> dx, tl::ptr<float> partial_w, tl::ptr<float> partial_b,
                   tl::ptr<float> partial_o, tl::scalar<int32_t> rows, tl::scalar<int32_t> C,
                   tl::constant<bool> residual, tl::constant<bool> out_sums, tl::constant<int> ROWS,
                   tl::constant<int> BR, tl::constant<int> BLOCK) {
  tl::tensor cols = tl::arange(0, BLOCK);
  tl::tensor colMask = cols < C;
  tl::tensor wv = tl::load(w + cols, colMask, 0.0f).to(tl::f32).expand_dims(0);
  tl::tensor first = tl::program_id(0) * ROWS;
  tl::tensor n = C.to(tl::f32);
  tl::tensor acc_w = tl::zeros({BR, BLOCK}, tl::f32), acc_b = tl::zeros({BR, BLOCK}, tl::f32);
  tl::tensor acc_o = tl::zeros({BR, BLOCK}, tl::f32);
  for (auto r : tl::range(0, ROWS.value, BR.value, acc_w, acc_b, acc_o)) {
    tl::tensor slice = r + tl::arange(0, BR); // ROWS need not divide by BR
    tl::tensor rs = first + slice;
    tl::tensor inRows = (rs < rows) & (slice < ROWS.value);
    tl::tensor mask = inRows.expand_dims(1) & colMask.expand_dims(0);
    tl::tensor at = rs.expand_dims(1) * C + cols.expand_dims(0);
    tl::tensor rstd = tl::load(rstd_in + rs, inRows, 0.0f).expand_dims(1);
    tl::tensor xhat = tl::where(mask, (tl::load(x + at, mask, 0.0f).to(tl::f32) -
                                       tl::load(mean_in + rs, inRows, 0.0f).expand_dims(1)) * rstd, 0.0f);
    tl::tensor d = tl::load(dy + at, mask, 0.0f).to(tl::f32);
    tl::tensor g = d * wv;
    tl::tensor out = rstd * (g - (tl::sum(g, 1) / n).expand_dims(1) - xhat * (tl::sum(g * xhat, 1) / n).expand_dims(1));
    if (residual.value)
      out = out + tl::load(dres + at, mask, 0.0f).to(tl::f32);
    tl::store(dx + at, out, mask);
    acc_w = acc_w + d * xhat;
    acc_b = acc_b + d;
    if (out_sums.value) // the stored values, as the projection's own column sums would read them
      acc_o = acc_o + out.to(dtype_of_v<T>).to(tl::f32);
  }
  tl::tensor to = tl::program_id(0) * C + cols;
  tl::store(partial_w + to, tl::sum(acc_w, 0), colMask);
  tl::store(partial_b + to, tl::sum(acc_b, 0), colMask);
  if (out_sums.value)
    tl::store(partial_o + to, tl::sum(acc_o, 0), colMask);
}

/// LayerNorm backward, the parameter gradients, first pass: program (i, j)
/// sums dy * xhat and dy over rows [j ROWS, (j + 1) ROWS) of columns
/// [i BC, (i + 1) BC) into partial_w[j, cols] and partial_b[j, cols];
/// column_sums then adds the partials into dw and db (as column_partial_sums
/// does for a bias: deterministic, many programs, whole tiles in flight).
template <class T>
void layernorm_bwd_dwdb_partial(tl::ptr<T> dy, tl::ptr<T> x, tl::ptr<float> mean_in, tl::ptr<float> rstd_in,
                                tl::ptr<float> partial_w, tl::ptr<float> partial_b, tl::scalar<int32_t> rows,
                                tl::scalar<int32_t> C, tl::constant<int> ROWS, tl::constant<int> BR,
                                tl::constant<int> BC) {
  tl::tensor cols = tl::program_id(0) * BC + tl::arange(0, BC);
  tl::tensor first = tl::program_id(1) * ROWS;
  tl::tensor acc_w = tl::zeros({BR, BC}, tl::f32), acc_b = tl::zeros({BR, BC}, tl::f32);
  for (auto r : tl::range(0, ROWS.value, BR.value, acc_w, acc_b)) {
    tl::tensor slice = r + tl::arange(0, BR); // rows of this program's slice (ROWS need not divide by BR)
    tl::tensor rs = first + slice;
    tl::tensor in_rows = (rs < rows) & (slice < ROWS.value);
    tl::tensor mask = in_rows.expand_dims(1) & (cols.expand_dims(0) < C);
    tl::tensor at = rs.expand_dims(1) * C + cols.expand_dims(0);
    tl::tensor g = tl::load(dy + at, mask, 0.0f).to(tl::f32);
    tl::tensor xhat = (tl::load(x + at, mask, 0.0f).to(tl::f32) - tl::load(mean_in + rs, in_rows, 0.0f).expand_dims(1)) *
                      tl::load(rstd_in + rs, in_rows, 0.0f).expand_dims(1);
    acc_w = acc_w + g * xhat;
    acc_b = acc_b + g;
  }
  tl::tensor out = tl::program_id(1) * C + cols;
  tl::store(partial_w + out, tl::sum(acc_w, 0), cols < C);
  tl::store(partial_b + out, tl::sum(acc_b, 0), cols < C);
}

/// d/dx of GELU-tanh ("gelu_new"): dx = dy * gelu'(x).
template <class T>
void gelu_bwd(tl::ptr<T> x, tl::ptr<T> dy, tl::ptr<T> dx, tl::scalar<int32_t> n, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::tensor v = tl::load(x + offs, mask, 0.0f).to(tl::f32);
  tl::store(dx + offs, tl::load(dy + offs, mask, 0.0f).to(tl::f32) * detail::gelu_grad(v), mask);
}

/// Softmax + cross-entropy per row of logits [rows, Vp] (the vocabulary V
/// padded to Vp columns; the padding is masked out): losses[r] =
/// logsumexp(logits[r, :V]) - logits[r, target]. An online logsumexp over
/// BLOCK-wide chunks, so V may be any size (50257). f32 math for any
/// storage type T of the logits.
template <class T>
void cross_entropy_fwd(tl::ptr<T> logits, tl::ptr<int32_t> targets, tl::ptr<float> losses,
                              tl::scalar<int32_t> V, tl::scalar<int32_t> Vp, tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor base = row.to(tl::i64) * Vp.to(tl::i64);
  tl::tensor cols0 = tl::arange(0, BLOCK);
  // The running max starts at the lowest finite f32, not -inf: a lane whose
  // logits so far are all -inf (the padding) then keeps m finite, and
  // e^-|v - m| below is 0 instead of NaN from -inf - -inf - no guard an
  // element.
  tl::tensor m = tl::full({BLOCK}, -std::numeric_limits<float>::max(), tl::f32);
  tl::tensor s = tl::zeros({BLOCK}, tl::f32);
  auto accumulate = [&](const tl::tensor &v) {
    // One exponential an element, in base 2 (one MUFU.EX2 where tl::exp is
    // libdevice's nine instructions: two of those kept bf16 logits from
    // reaching copy bandwidth): e^-|v - m| is the smaller of v and the
    // running max relative to the larger - the element's term when v is no
    // new max, the running sum's rescaling when it is.
    tl::tensor e = tl::exp2(tl::abs(v - m) * -tl::log2e);
    s = tl::where(v > m, tl::fma(s, e, 1.0f), s + e);
    m = tl::maximum(m, v);
  };
  // Whole chunks inside the vocabulary: no masks (the compares and selects
  // were a third of the loop's instructions); then the chunks reaching
  // past V, masked by the padded row (a multiple of 16: vector loads), the
  // padding set aside by value.
  tl::tensor whole = V / BLOCK * BLOCK;
  for (auto c : tl::range(0, whole, BLOCK.value, m, s))
    accumulate(tl::load(logits + base + c + cols0).to(tl::f32));
  for (auto c : tl::range(whole, V, BLOCK.value, m, s)) {
    tl::tensor cols = c + cols0;
    accumulate(tl::where(cols < V, tl::load(logits + base + cols, cols < Vp, -INFINITY).to(tl::f32), -INFINITY));
  }
  tl::tensor mx = tl::max(m, 0);
  tl::tensor lse = mx + tl::log(tl::sum(s * tl::exp(m - mx), 0));
  tl::tensor target = tl::load(targets + row);
  tl::store(losses + row, lse - tl::load(logits + base + target).to(tl::f32));
}

/// Its backward: dlogits[r, j] = (softmax_j - [j == target]) * dlosses[r]
/// for j < V, 0 in the padding.
template <class T>
void cross_entropy_bwd(tl::ptr<T> logits, tl::ptr<int32_t> targets, tl::ptr<float> losses, tl::ptr<float> dlosses,
                       tl::ptr<T> dlogits, tl::scalar<int32_t> V, tl::scalar<int32_t> Vp, tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor base = row.to(tl::i64) * Vp.to(tl::i64);
  tl::tensor target = tl::load(targets + row);
  // logsumexp = loss + logit[target]: the forward pass already computed it.
  tl::tensor lse = tl::load(losses + row) + tl::load(logits + base + target).to(tl::f32);
  tl::tensor dl = tl::load(dlosses + row);
  tl::tensor cols0 = tl::arange(0, BLOCK);
  for (auto c : tl::range(0, Vp, BLOCK.value)) {
    tl::tensor cols = c + cols0;
    tl::tensor x = tl::load(logits + base + cols, cols < Vp, -INFINITY).to(tl::f32);
    tl::tensor p = tl::exp2((tl::where(cols < V, x, -INFINITY) - lse) * tl::log2e);
    tl::tensor g = (p - tl::where(cols == target, 1.0f, 0.0f)) * dl;
    tl::store(dlogits + base + cols, tl::where(cols < V, g, 0.0f), cols < Vp);
  }
}

namespace detail {
/// AdamW's update of the n parameters of this program's BLOCK: writes m and
/// v, returns the new parameter values (see adamw).
inline tl::tensor adamwUpdate(tl::ptr<float> params, tl::ptr<float> grads, tl::ptr<float> m_state,
                              tl::ptr<float> v_state, const tl::scalar<float> &lr, const tl::scalar<float> &beta1,
                              const tl::scalar<float> &beta2, const tl::scalar<float> &eps,
                              const tl::scalar<float> &weight_decay, const tl::scalar<float> &bias1,
                              const tl::scalar<float> &bias2, const tl::scalar<float> &grad_scale,
                              const tl::tensor &offs, const tl::tensor &mask) {
  tl::tensor g = tl::load(grads + offs, mask, 0.0f) * grad_scale;
  tl::tensor p = tl::load(params + offs, mask, 0.0f);
  tl::tensor m = beta1 * tl::load(m_state + offs, mask, 0.0f) + (1.0f - beta1) * g;
  tl::tensor v = beta2 * tl::load(v_state + offs, mask, 0.0f) + (1.0f - beta2) * g * g;
  tl::tensor update = (m / bias1) / (tl::sqrt(v / bias2) + eps) + weight_decay * p;
  tl::store(m_state + offs, m, mask);
  tl::store(v_state + offs, v, mask);
  return p - lr * update;
}
} // namespace detail

/// One AdamW step over n parameters (f32 master weights), bias-corrected,
/// decoupled weight decay: p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p).
/// `bias1` = 1 - beta1^t and `bias2` = 1 - beta2^t for step t; the gradients
/// are multiplied by `grad_scale` first (global-norm clipping, 1 otherwise).
inline void adamw(tl::ptr<float> params, tl::ptr<float> grads, tl::ptr<float> m_state,
                  tl::ptr<float> v_state, tl::scalar<float> lr, tl::scalar<float> beta1,
                  tl::scalar<float> beta2, tl::scalar<float> eps, tl::scalar<float> weight_decay,
                  tl::scalar<float> bias1, tl::scalar<float> bias2, tl::scalar<float> grad_scale,
                  tl::scalar<int64_t> n, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0).to(tl::i64) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::store(params + offs,
            detail::adamwUpdate(params, grads, m_state, v_state, lr, beta1, beta2, eps, weight_decay, bias1, bias2,
                                grad_scale, offs, mask),
            mask);
}

/// AdamW for mixed precision: the same step on the f32 master weights
/// `params`, which also writes their copy in the storage type T (bf16) that
/// the forward and backward passes read - rounded to nearest even from the
/// master, so small updates accumulate in f32 and are never lost to bf16's
/// 8-bit mantissa.
template <class T>
void adamw_mixed(tl::ptr<float> params, tl::ptr<T> params_lp, tl::ptr<float> grads, tl::ptr<float> m_state,
                 tl::ptr<float> v_state, tl::scalar<float> lr, tl::scalar<float> beta1, tl::scalar<float> beta2,
                 tl::scalar<float> eps, tl::scalar<float> weight_decay, tl::scalar<float> bias1,
                 tl::scalar<float> bias2, tl::scalar<float> grad_scale, tl::scalar<int64_t> n,
                 tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0).to(tl::i64) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::tensor p = detail::adamwUpdate(params, grads, m_state, v_state, lr, beta1, beta2, eps, weight_decay, bias1,
                                     bias2, grad_scale, offs, mask);
  tl::store(params + offs, p, mask);
  tl::store(params_lp + offs, p, mask);
}

/// out = x + y (the residual connections): f32 math, stored as T.
template <class T>
void residual_add(tl::ptr<T> x, tl::ptr<T> y, tl::ptr<T> out, tl::scalar<int64_t> n, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0).to(tl::i64) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask, 0.0f).to(tl::f32) + tl::load(y + offs, mask, 0.0f).to(tl::f32),
            mask);
}

/// partial[i] = sum of x^2 over the i-th BLOCK of x (n elements): the first
/// pass of the gradients' global norm (deterministic: no atomics).
inline void sum_of_squares(tl::ptr<float> x, tl::ptr<float> partial, tl::scalar<int64_t> n,
                           tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0).to(tl::i64) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor v = tl::load(x + offs, offs < n, 0.0f);
  tl::store(partial + tl::program_id(0), tl::sum(v * v, 0));
}

/// out[0] = sum of x[0, n): the second pass, one program.
inline void sum_all(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n, tl::constant<int> BLOCK) {
  tl::tensor acc = tl::zeros({BLOCK}, tl::f32);
  tl::tensor cols = tl::arange(0, BLOCK);
  for (auto c : tl::range(0, n, BLOCK.value, acc))
    acc = acc + tl::load(x + c + cols, c + cols < n, 0.0f);
  tl::store(out, tl::sum(acc, 0));
}

namespace detail {
/// dx = dy w^T's [BM, BK] block at (m0, k0), dy [M, N] and w [K, N] read
/// through pointers, N stepped BN at a time (f32 accumulation at P).
template <class T>
tl::tensor dxProduct(tl::ptr<T> dy, tl::ptr<T> w, const tl::scalar<int32_t> &M, const tl::scalar<int32_t> &N,
                     const tl::scalar<int32_t> &K, const tl::tensor &m0, const tl::tensor &k0, int BM, int BK, int BN,
                     tl::precision P) {
  tl::tensor rm = m0 + tl::arange(0, BM), rk = k0 + tl::arange(0, BK), rn = tl::arange(0, BN);
  tl::tensor acc = tl::zeros({BM, BK}, tl::f32);
  for (auto n : tl::range(0, N, BN, acc)) {
    tl::tensor na = n + rn;
    tl::tensor g = tl::load(dy + rm.expand_dims(1) * N + na.expand_dims(0),
                            (rm.expand_dims(1) < M) & (na.expand_dims(0) < N), 0.0f);
    tl::tensor wt = tl::load(w + rk.expand_dims(0) * N + na.expand_dims(1), // w^T tile [BN, BK]
                             (na.expand_dims(1) < N) & (rk.expand_dims(0) < K), 0.0f);
    acc = tl::dot(g, wt, acc, P);
  }
  return acc;
}

/// GELU's backward on the [BM, BK] block at (m0, k0) of [M, K]: its
/// output's gradient `acc` times gelu'(pre) (both f32), returned; its column
/// sums go to partial[m0 / BM, k0 ...] (the bias gradient's first pass).
inline tl::tensor geluBwdBlock(const tl::tensor &acc, const tl::tensor &pre, tl::ptr<float> partial,
                               const tl::scalar<int32_t> &K, const tl::tensor &m0, const tl::tensor &k0, int BM,
                               int BK) {
  tl::tensor g = acc * gelu_grad(pre);
  tl::tensor rk = k0 + tl::arange(0, BK);
  tl::store(partial + m0 / BM * K + rk, tl::sum(g, 0), rk < K);
  return g;
}
} // namespace detail

/// y = x @ w + b for x [M, K], w [K, N] (Hugging Face's Conv1D layout: [in,
/// out]), b [N]; with `gelu`, y = gelu_tanh(x @ w + b) and the
/// pre-activation is also stored in `pre` (the GELU backward needs it).
/// One program per BM x BN tile of y; f32 accumulation (tensor cores for
/// 16-bit T, and for f32 at P = tf32). The linear layers' kernels all take P.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bias_fwd(tl::ptr<T> x, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<T> pre,
                     tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                     tl::constant<bool> gelu, tl::constant<int> BM, tl::constant<int> BN,
                     tl::constant<int> BK, tl::constant<int> GROUP_M) {
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    tl::tensor rm = m0 + tl::arange(0, BM);
    tl::tensor rn = n0 + tl::arange(0, BN);
    tl::tensor rk = tl::arange(0, BK);
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc)) {
      tl::tensor ka = k + rk;
      tl::tensor a_tile = tl::load(x + rm.expand_dims(1) * K + ka.expand_dims(0),
                                   (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f);
      tl::tensor b_tile = tl::load(w + ka.expand_dims(1) * N + rn.expand_dims(0),
                                   (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f);
      acc = tl::dot(a_tile, b_tile, acc, P);
    }
    acc = acc + tl::load(b + rn, rn < N, 0.0f).to(tl::f32).expand_dims(0);
    tl::tensor mask = (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N);
    tl::tensor offs = rm.expand_dims(1) * N + rn.expand_dims(0);
    if (gelu.value) {
      tl::store(pre + offs, acc, mask);
      acc = detail::gelu(acc);
    }
    tl::store(y + offs, acc, mask);
  });
}

/// dx = dy @ w^T for dy [M, N], w [K, N]: dx [M, K], looping over N. Also
/// the tied LM head: logits = x @ wte^T.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dx(tl::ptr<T> dy, tl::ptr<T> w, tl::ptr<T> dx, tl::scalar<int32_t> M,
                   tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                   tl::constant<int> BK, tl::constant<int> BN, tl::constant<int> GROUP_M) {
  detail::forEachOutputTile(M, K, BM.value, BK.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor k0) {
    tl::tensor rm = m0 + tl::arange(0, BM), rk = k0 + tl::arange(0, BK);
    tl::store(dx + rm.expand_dims(1) * K + rk.expand_dims(0),
              detail::dxProduct(dy, w, M, N, K, m0, k0, BM.value, BK.value, BN.value, P),
              (rm.expand_dims(1) < M) & (rk.expand_dims(0) < K));
  });
}

/// The MLP's c_proj input gradient with GELU's backward fused: dpre = (dy
/// w^T) * gelu'(pre) for pre [M, K] (c_fc's output before GELU), and the
/// column sums of each [BM, BK] tile of dpre into partial[m0 / BM, cols] -
/// c_fc's bias gradient, first pass (column_sums adds the M / BM rows). The
/// GELU input gradient never goes to memory (a separate gelu_bwd read it,
/// and pre, and wrote dpre: 3 passes over [B T, 4C]).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dx_gelu(tl::ptr<T> dy, tl::ptr<T> w, tl::ptr<T> pre, tl::ptr<T> dpre, tl::ptr<float> partial,
                        tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                        tl::constant<int> BK, tl::constant<int> BN, tl::constant<int> GROUP_M) {
  detail::forEachOutputTile(M, K, BM.value, BK.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor k0) {
    tl::tensor rm = m0 + tl::arange(0, BM), rk = k0 + tl::arange(0, BK);
    tl::tensor mask = (rm.expand_dims(1) < M) & (rk.expand_dims(0) < K);
    tl::tensor at = rm.expand_dims(1) * K + rk.expand_dims(0);
    tl::tensor acc = detail::dxProduct(dy, w, M, N, K, m0, k0, BM.value, BK.value, BN.value, P);
    tl::store(dpre + at,
              detail::geluBwdBlock(acc, tl::load(pre + at, mask, 0.0f).to(tl::f32), partial, K, m0, k0, BM.value,
                                   BK.value),
              mask);
  });
}

/// dw (+)= x^T @ dy for x [M, K], dy [M, N]: dw [K, N] (f32), looping over M;
/// deterministic (no atomics). Also the tied LM head's wte gradient.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dw(tl::ptr<T> x, tl::ptr<T> dy, tl::ptr<float> dw, tl::scalar<int32_t> M,
                   tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<bool> accumulate,
                   tl::constant<int> BK, tl::constant<int> BN, tl::constant<int> BM) {
  tl::tensor rk = tl::program_id(0) * BK + tl::arange(0, BK);
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor rm = tl::arange(0, BM);
  tl::tensor out = dw + rk.expand_dims(1) * N + rn.expand_dims(0);
  tl::tensor outMask = (rk.expand_dims(1) < K) & (rn.expand_dims(0) < N);
  tl::tensor acc = accumulate.value ? tl::load(out, outMask, 0.0f) : tl::zeros({BK, BN}, tl::f32);
  for (auto m : tl::range(0, M, BM.value, acc)) {
    tl::tensor ma = m + rm;
    tl::tensor xt = tl::load(x + ma.expand_dims(0) * K + rk.expand_dims(1), // x^T tile [BK, BM]
                             (rk.expand_dims(1) < K) & (ma.expand_dims(0) < M), 0.0f);
    tl::tensor g = tl::load(dy + ma.expand_dims(1) * N + rn.expand_dims(0),
                            (ma.expand_dims(1) < M) & (rn.expand_dims(0) < N), 0.0f);
    acc = tl::dot(xt, g, acc, P);
  }
  tl::store(out, acc, outMask);
}

//===----------------------------------------------------------------------===//
// The linear layers through tensor descriptors: the same signatures and
// results as matmul_bias_fwd / matmul_bwd_dx / matmul_bwd_dw (and a plain
// GEMM), with every 16-bit operand block read through a descriptor - TMA
// rings feeding wgmma on sm_90a (warp specialised on request), masked loads
// elsewhere. Row strides must span multiples of 16 bytes and bases be
// 16-byte aligned (GPT-2's are: every width is a multiple of n_embd; the
// transposed activations' rows are B T long, which GptModel checks). P: the
// precision of f32 operands' dots - at tf32, blocks whose rows run along
// the dot's K feed wgmma from TMA rings whose tensor maps round to tf32.
//===----------------------------------------------------------------------===//

namespace detail {
/// The linear layers' epilogue: acc + b, stored through y's descriptor;
/// with `gelu`, the sum is stored through pre's first and y gets its GELU.
template <class T>
void biasGeluStore(tl::tensor acc, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<T> pre, tl::scalar<int32_t> M,
                   tl::scalar<int32_t> N, bool withGelu, int BM, int BN, const tl::tensor &m0, const tl::tensor &n0) {
  tl::tensor rn = n0 + tl::arange(0, BN);
  acc = acc + tl::load(b + rn, rn < N, 0.0f).to(tl::f32).expand_dims(0);
  if (withGelu) {
    tl::make_tensor_descriptor(pre, {M, N}, {N, 1}, {BM, BN}).store({m0, n0}, acc);
    acc = gelu(acc);
  }
  tl::make_tensor_descriptor(y, {M, N}, {N, 1}, {BM, BN}).store({m0, n0}, acc);
}

/// The K loop of a GEMM whose operands both run along K: a's [BM, BK]
/// blocks at row m0 times b's [BN, BK] blocks at row n0, transposed - the
/// [BM, BN] block of a b^T (f32 accumulation at precision P).
inline tl::tensor kMajorProduct(const tl::tensor_descriptor &a, const tl::tensor_descriptor &b,
                                const tl::tensor &m0, const tl::tensor &n0, tl::scalar<int32_t> K, int BM, int BN,
                                int BK, tl::precision P) {
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK, acc))
    acc = tl::dot(a.load({m0, k}), b.load({n0, k}).trans(), acc, P);
  return acc;
}
} // namespace detail

/// matmul_bias_fwd with x, w, y and pre through descriptors.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bias_fwd_tma(tl::ptr<T> x, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<T> pre,
                         tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                         tl::constant<bool> gelu, tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK,
                         tl::constant<int> GROUP_M) {
  auto x_desc = tl::make_tensor_descriptor(x, {M, K}, {K, 1}, {BM, BK});
  auto w_desc = tl::make_tensor_descriptor(w, {K, N}, {N, 1}, {BK, BN});
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc))
      acc = tl::dot(x_desc.load({m0, k}), w_desc.load({k, n0}), acc, P);
    detail::biasGeluStore(acc, b, y, pre, M, N, gelu.value, BM.value, BN.value, m0, n0);
  });
}

/// matmul_bias_fwd with the weight transposed: wt [N, K] (w^T, K-major)
/// instead of w [K, N] - both operands run along K, the order wgmma reads
/// tf32 in, so f32 layers at tf32 run on wgmma through TMA rings (GptModel
/// keeps the transposed copy of its f32 weights for them).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bias_fwd_tn_tma(tl::ptr<T> x, tl::ptr<T> wt, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<T> pre,
                            tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                            tl::constant<bool> gelu, tl::constant<int> BM, tl::constant<int> BN,
                            tl::constant<int> BK, tl::constant<int> GROUP_M) {
  auto x_desc = tl::make_tensor_descriptor(x, {M, K}, {K, 1}, {BM, BK});
  auto wt_desc = tl::make_tensor_descriptor(wt, {N, K}, {K, 1}, {BN, BK});
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    tl::tensor acc = detail::kMajorProduct(x_desc, wt_desc, m0, n0, K, BM.value, BN.value, BK.value, P);
    detail::biasGeluStore(acc, b, y, pre, M, N, gelu.value, BM.value, BN.value, m0, n0);
  });
}

/// out = in^T for in [R, C] (f32, row-major): out [C, R]. One program per
/// [BR, BC] tile, read along C and written along R (the compiler turns the
/// tile around through shared memory).
inline void transpose(tl::ptr<float> in, tl::ptr<float> out, tl::scalar<int32_t> R, tl::scalar<int32_t> C,
                      tl::constant<int> BR, tl::constant<int> BC) {
  tl::tensor rr = tl::program_id(0) * BR + tl::arange(0, BR);
  tl::tensor cc = tl::program_id(1) * BC + tl::arange(0, BC);
  tl::tensor t = tl::load(in + rr.expand_dims(1) * C + cc.expand_dims(0),
                          (rr.expand_dims(1) < R) & (cc.expand_dims(0) < C), 0.0f);
  tl::store(out + cc.expand_dims(1) * R + rr.expand_dims(0), t.trans(),
            (cc.expand_dims(1) < C) & (rr.expand_dims(0) < R));
}

/// matmul_bwd_dx (dx = dy w^T; the tied LM head) through descriptors: w's
/// [BK, BN] blocks are read as stored and transposed for the dot.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dx_tma(tl::ptr<T> dy, tl::ptr<T> w, tl::ptr<T> dx, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                       tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BK, tl::constant<int> BN,
                       tl::constant<int> GROUP_M) {
  auto dy_desc = tl::make_tensor_descriptor(dy, {M, N}, {N, 1}, {BM, BN});
  auto w_desc = tl::make_tensor_descriptor(w, {K, N}, {N, 1}, {BK, BN});
  auto dx_desc = tl::make_tensor_descriptor(dx, {M, K}, {K, 1}, {BM, BK});
  detail::forEachOutputTile(M, K, BM.value, BK.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor k0) {
    dx_desc.store({m0, k0}, detail::kMajorProduct(dy_desc, w_desc, m0, k0, N, BM.value, BK.value, BN.value, P));
  });
}

/// matmul_bwd_dx_gelu with dy, w, pre and dpre through descriptors (pre's
/// block through pointers took a 64-bit address a register, and spilled).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dx_gelu_tma(tl::ptr<T> dy, tl::ptr<T> w, tl::ptr<T> pre, tl::ptr<T> dpre, tl::ptr<float> partial,
                            tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                            tl::constant<int> BM, tl::constant<int> BK, tl::constant<int> BN,
                            tl::constant<int> GROUP_M) {
  auto dy_desc = tl::make_tensor_descriptor(dy, {M, N}, {N, 1}, {BM, BN});
  auto w_desc = tl::make_tensor_descriptor(w, {K, N}, {N, 1}, {BK, BN});
  auto pre_desc = tl::make_tensor_descriptor(pre, {M, K}, {K, 1}, {BM, BK});
  auto dpre_desc = tl::make_tensor_descriptor(dpre, {M, K}, {K, 1}, {BM, BK});
  detail::forEachOutputTile(M, K, BM.value, BK.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor k0) {
    tl::tensor acc = detail::kMajorProduct(dy_desc, w_desc, m0, k0, N, BM.value, BK.value, BN.value, P);
    dpre_desc.store({m0, k0}, detail::geluBwdBlock(acc, pre_desc.load({m0, k0}).to(tl::f32), partial, K, m0, k0,
                                                   BM.value, BK.value));
  });
}

namespace detail {
/// Program (i, j)'s [BK, BN] block of a weight gradient dw [K, N] (f32):
/// where it goes, and what it starts from - the gradient so far
/// (`accumulate`: micro-batches add up) or zeros.
struct GradientBlock {
  tl::tensor k0, n0, out, mask, acc;
};
inline GradientBlock gradientBlock(tl::ptr<float> dw, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                                   bool accumulate, int BK, int BN) {
  GradientBlock g{tl::program_id(0) * BK, tl::program_id(1) * BN, {}, {}, {}};
  tl::tensor rk = g.k0 + tl::arange(0, BK), rn = g.n0 + tl::arange(0, BN);
  g.out = dw + rk.expand_dims(1) * N + rn.expand_dims(0);
  g.mask = (rk.expand_dims(1) < K) & (rn.expand_dims(0) < N);
  g.acc = accumulate ? tl::load(g.out, g.mask, 0.0f) : tl::zeros({BK, BN}, tl::f32);
  return g;
}
} // namespace detail

/// matmul_bwd_dw (dw (+)= x^T dy, f32) with x and dy through descriptors:
/// x's [BM, BK] blocks are read as stored and transposed for the dot.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dw_tma(tl::ptr<T> x, tl::ptr<T> dy, tl::ptr<float> dw, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                       tl::scalar<int32_t> K, tl::constant<bool> accumulate, tl::constant<int> BK,
                       tl::constant<int> BN, tl::constant<int> BM) {
  auto x_desc = tl::make_tensor_descriptor(x, {M, K}, {K, 1}, {BM, BK});
  auto dy_desc = tl::make_tensor_descriptor(dy, {M, N}, {N, 1}, {BM, BN});
  detail::GradientBlock g = detail::gradientBlock(dw, N, K, accumulate.value, BK.value, BN.value);
  for (auto m : tl::range(0, M, BM.value, g.acc))
    g.acc = tl::dot(x_desc.load({m, g.k0}).trans(), dy_desc.load({m, g.n0}), g.acc, P);
  tl::store(g.out, g.acc, g.mask);
}

/// matmul_bwd_dw with both operands transposed - xt [K, M] (x^T) and dyt
/// [N, M] (dy^T), each running along the dot's contraction over M, the order
/// wgmma reads tf32 in: dw [K, N] (+)= xt dyt^T. GptModel transposes x and dy
/// for it in f32 at tf32.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dw_tn_tma(tl::ptr<T> xt, tl::ptr<T> dyt, tl::ptr<float> dw, tl::scalar<int32_t> M,
                          tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<bool> accumulate,
                          tl::constant<int> BK, tl::constant<int> BN, tl::constant<int> BM) {
  auto xt_desc = tl::make_tensor_descriptor(xt, {K, M}, {M, 1}, {BK, BM});
  auto dyt_desc = tl::make_tensor_descriptor(dyt, {N, M}, {M, 1}, {BN, BM});
  detail::GradientBlock g = detail::gradientBlock(dw, N, K, accumulate.value, BK.value, BN.value);
  for (auto m : tl::range(0, M, BM.value, g.acc))
    g.acc = tl::dot(xt_desc.load({g.k0, m}), dyt_desc.load({g.n0, m}).trans(), g.acc, P);
  tl::store(g.out, g.acc, g.mask);
}

/// c = a b ([M, K] x [K, N], row-major) - the tied LM head's input gradient
/// (dlogits wte) - over the tiles forEachOutputTile gives this program.
template <class T, tl::precision P = tl::precision::ieee>
void matmul(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
            tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK,
            tl::constant<int> GROUP_M) {
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    tl::tensor rm = m0 + tl::arange(0, BM), rn = n0 + tl::arange(0, BN), rk = tl::arange(0, BK);
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc)) {
      tl::tensor ka = k + rk;
      tl::tensor a_tile = tl::load(a + rm.expand_dims(1) * K + ka.expand_dims(0),
                                   (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f);
      tl::tensor b_tile = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                                   (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f);
      acc = tl::dot(a_tile, b_tile, acc, P);
    }
    tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc, (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
  });
}

/// matmul through descriptors (TMA rings feeding wgmma on sm_90a).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_tma(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK,
                tl::constant<int> GROUP_M) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc))
      acc = tl::dot(a_desc.load({m0, k}), b_desc.load({k, n0}), acc, P);
    c_desc.store({m0, n0}, acc);
  });
}

/// Column sums of dy [M, N] (a bias's gradient), first pass: program (i, j)
/// sums rows [j ROWS, (j + 1) ROWS) of columns [i BC, (i + 1) BC) into
/// partial[j, cols] - [BR, BC] tiles added elementwise, reduced across rows
/// once at the end. (One program a column block looping over single rows
/// kept one short load in flight a warp and 24 programs busy for GPT-2's 768
/// columns: bound by memory latency, ~0.3 ms a call on an H100, where the
/// bytes take ~5 us.) column_sums adds the partials in a fixed order:
/// deterministic.
template <class T>
void column_partial_sums(tl::ptr<T> dy, tl::ptr<float> partial, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                         tl::constant<int> ROWS, tl::constant<int> BR, tl::constant<int> BC) {
  tl::tensor cols = tl::program_id(0) * BC + tl::arange(0, BC);
  tl::tensor first = tl::program_id(1) * ROWS;
  tl::tensor acc = tl::zeros({BR, BC}, tl::f32);
  for (auto r : tl::range(0, ROWS.value, BR.value, acc)) {
    tl::tensor slice = r + tl::arange(0, BR); // rows of this program's slice (ROWS need not divide by BR)
    tl::tensor rs = first + slice;
    tl::tensor mask = ((rs < M) & (slice < ROWS.value)).expand_dims(1) & (cols.expand_dims(0) < N);
    acc = acc + tl::load(dy + rs.expand_dims(1) * N + cols.expand_dims(0), mask, 0.0f).to(tl::f32);
  }
  tl::store(partial + tl::program_id(1) * N + cols, tl::sum(acc, 0), cols < N);
}

/// Column sums, second pass: out[cols] (+)= the sum of partial's P rows
/// [P, N], in [BR, BC] tiles.
inline void column_sums(tl::ptr<float> partial, tl::ptr<float> out, tl::scalar<int32_t> P, tl::scalar<int32_t> N,
                        tl::constant<bool> accumulate, tl::constant<int> BR, tl::constant<int> BC) {
  tl::tensor cols = tl::program_id(0) * BC + tl::arange(0, BC);
  tl::tensor acc = tl::zeros({BR, BC}, tl::f32);
  for (auto r : tl::range(0, P, BR.value, acc)) {
    tl::tensor rs = r + tl::arange(0, BR);
    tl::tensor mask = (rs.expand_dims(1) < P) & (cols.expand_dims(0) < N);
    acc = acc + tl::load(partial + rs.expand_dims(1) * N + cols.expand_dims(0), mask, 0.0f);
  }
  tl::tensor sum = tl::sum(acc, 0);
  if (accumulate.value)
    sum = sum + tl::load(out + cols, cols < N, 0.0f);
  tl::store(out + cols, sum, cols < N);
}

} // namespace tegula::gpt::kernels
