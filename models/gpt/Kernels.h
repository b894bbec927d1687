// Kernels.h - GPT-2's layers in Tegula's DSL, forward and backward: token +
// position embedding, layernorm, GELU (tanh, "gelu_new"), fused softmax +
// cross-entropy over a padded vocabulary, AdamW, residual connections and
// the column sums of bias and LayerNorm gradients. The linear layers' GEMMs
// are in Linear.h, attention in Attention.h.
//
// Conventions: activations are row-major [rows, C]; one program per row
// where a row fits in one tile (BLOCK >= C, a power of two); f32 math
// everywhere (T is the storage type). Reductions across rows (weight
// gradients) run one program per column block looping over rows, so they
// are deterministic; only the embedding's token scatter uses atomics.
#pragma once

#include "tegula/tegula.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

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
/// The reciprocals are tl::rcp (one rcp.approx.ftz, within 1 ulp): 1 + e
/// lies in [1, inf], where div.full.f32's range checks (tl::fdiv) only cost -
/// nine instructions an element, and predicates ptxas ran short of in the
/// MLP's epilogues. Past u = -43.7 (1 + e above 2^126) the gate flushes to 0.
/// With `approxTanh` (bf16 and f16 storage: kApproxTanh) the gate is
/// 0.5 (1 + tanh u) with tl::tanh_approx instead - one MUFU an element where
/// the sigmoid takes two (ex2 and rcp), which in the MLP's fused epilogues,
/// 64 elements a thread on the MUFU's 16 lanes an SM, took about a third of
/// the K loop's time at K = 768. Its ~2^-11 relative error puts the gate
/// off by up to ~2.5e-4 absolute (cancellation in 1 + tanh u for u < 0):
/// gelu(x) by |x| 2.5e-4, below a bf16 activation's rounding at typical
/// magnitudes though not relative to the small values of its tail. f32
/// keeps the sigmoid, within an ulp or two.
inline tl::tensor gelu_gate(const tl::tensor &x, bool approxTanh = false) {
  if (approxTanh) {
    constexpr float k = 0.7978845608028654f; // sqrt(2 / pi)
    return tl::fma(0.5f, tl::tanh_approx(k * x * tl::fma(0.044715f * x, x, 1.0f)), 0.5f);
  }
  return tl::rcp(1.0f + gelu_exp(x));
}
/// Storage types whose GELUs take tl::tanh_approx.
template <class T> inline constexpr bool kApproxTanh = !std::is_same_v<T, float>;
/// gelu_new(x) = x * gate(x).
inline tl::tensor gelu(const tl::tensor &x, bool approxTanh = false) { return x * gelu_gate(x, approxTanh); }
/// d gelu_new / dx. With s = 0.5 (1 + tanh u): 0.5 (1 - tanh^2 u) = 2 s (1 - s).
inline tl::tensor gelu_grad(const tl::tensor &x, bool approxTanh = false) {
  const float k = 0.7978845608028654f; // sqrt(2 / pi)
  tl::tensor s = gelu_gate(x, approxTanh);
  return s + 2.0f * x * s * (1.0f - s) * k * tl::fma(3.0f * 0.044715f * x, x, 1.0f);
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
/// A row kernel's rows: program_id(0)'s ROWS rows of [rows, C] - which
/// exist - as CHUNKS blocks of BLOCK columns (CHUNKS * BLOCK >= C), each
/// with its columns, mask and offsets. GPT-2's 768 columns as 3 x 256 carry
/// no padding; one block of 1024 carries a quarter (registers, masked lanes).
struct RowBlock {
  tl::tensor rs, inRows;
  std::vector<tl::tensor> cols, mask, at;
};
inline RowBlock rowBlock(const tl::scalar<int32_t> &rows, const tl::scalar<int32_t> &C, int ROWS, int BLOCK,
                         int CHUNKS) {
  RowBlock r;
  r.rs = tl::program_id(0) * ROWS + tl::arange(0, ROWS);
  r.inRows = r.rs < rows;
  for (int k = 0; k < CHUNKS; ++k) {
    r.cols.push_back(k * BLOCK + tl::arange(0, BLOCK));
    r.mask.push_back(r.inRows.expand_dims(1) & (r.cols.back() < C).expand_dims(0));
    r.at.push_back(r.rs.expand_dims(1) * C + r.cols.back().expand_dims(0));
  }
  return r;
}

/// The row sums of [R, BLOCK] chunks, chunk by chunk.
inline tl::tensor rowSum(const std::vector<tl::tensor> &chunks) {
  tl::tensor total = tl::sum(chunks[0], 1);
  for (size_t k = 1; k < chunks.size(); ++k)
    total = total + tl::sum(chunks[k], 1);
  return total;
}

/// LayerNorm of r's rows of `v` (its chunks: [R, BLOCK] f32, zero past C)
/// into y's rows, saving each row's mean and rstd. Both sums run along the
/// rows: on the GPU a warp a row reduces by shuffles alone.
template <class T>
void layernormRows(const std::vector<tl::tensor> &v, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y,
                   tl::ptr<float> mean_out, tl::ptr<float> rstd_out, const tl::scalar<int32_t> &C,
                   const tl::scalar<float> &eps, const RowBlock &r) {
  tl::tensor n = C.to(tl::f32);
  tl::tensor mean = rowSum(v) / n;
  std::vector<tl::tensor> d, squares;
  for (size_t k = 0; k < v.size(); ++k) {
    d.push_back(tl::where(r.mask[k], v[k] - mean.expand_dims(1), 0.0f));
    squares.push_back(d.back() * d.back());
  }
  tl::tensor rstd = tl::rsqrt(rowSum(squares) / n + eps);
  for (size_t k = 0; k < v.size(); ++k) {
    tl::tensor colMask = r.cols[k] < C;
    tl::tensor out = d[k] * rstd.expand_dims(1) * tl::load(w + r.cols[k], colMask).to(tl::f32).expand_dims(0) +
                     tl::load(b + r.cols[k], colMask).to(tl::f32).expand_dims(0);
    tl::store(y + r.at[k], out, r.mask[k]);
  }
  tl::store(mean_out + r.rs, mean, r.inRows);
  tl::store(rstd_out + r.rs, rstd, r.inRows);
}
} // namespace detail

/// LayerNorm forward with the rows in registers: y = (x - mean) * rstd * w +
/// b; saves mean and rstd per row for the backward pass. Each program takes
/// ROWS rows of [rows, C] as CHUNKS blocks of BLOCK columns (CHUNKS * BLOCK
/// >= C; GptModel: Tiles::ln_fwd_block): launched at ROWS warps, a warp a
/// row (Tiles::ln_fwd_rows) - a CTA of one warp holds an SM's 32-CTA limit
/// to half its warps.
template <class T>
void layernorm_fwd(tl::ptr<T> x, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<float> mean_out,
                   tl::ptr<float> rstd_out, tl::scalar<int32_t> rows, tl::scalar<int32_t> C, tl::scalar<float> eps,
                   tl::constant<int> ROWS, tl::constant<int> BLOCK, tl::constant<int> CHUNKS) {
  const detail::RowBlock r = detail::rowBlock(rows, C, ROWS.value, BLOCK.value, CHUNKS.value);
  std::vector<tl::tensor> v;
  for (int k = 0; k < CHUNKS.value; ++k)
    v.push_back(tl::load(x + r.at[size_t(k)], r.mask[size_t(k)], 0.0f).to(tl::f32));
  detail::layernormRows(v, w, b, y, mean_out, rstd_out, C, eps, r);
}

/// The residual connection and the next LayerNorm in one pass: res = x + a
/// (stored as T), then layernorm_fwd of the stored res into y - so the sum
/// is not read back (residual_add then layernorm_fwd read it again). ROWS
/// rows a program in CHUNKS blocks of BLOCK columns, as layernorm_fwd.
template <class T>
void residual_layernorm_fwd(tl::ptr<T> x, tl::ptr<T> a, tl::ptr<T> res, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y,
                            tl::ptr<float> mean_out, tl::ptr<float> rstd_out, tl::scalar<int32_t> rows,
                            tl::scalar<int32_t> C, tl::scalar<float> eps, tl::constant<int> ROWS,
                            tl::constant<int> BLOCK, tl::constant<int> CHUNKS) {
  const detail::RowBlock r = detail::rowBlock(rows, C, ROWS.value, BLOCK.value, CHUNKS.value);
  std::vector<tl::tensor> v;
  for (size_t k = 0; k < size_t(CHUNKS.value); ++k) {
    tl::tensor sum =
        tl::load(x + r.at[k], r.mask[k], 0.0f).to(tl::f32) + tl::load(a + r.at[k], r.mask[k], 0.0f).to(tl::f32);
    tl::tensor stored = sum.to(dtype_of_v<T>); // the LayerNorm reads what the residual stream holds
    tl::store(res + r.at[k], stored, r.mask[k]);
    v.push_back(stored.to(tl::f32));
  }
  detail::layernormRows(v, w, b, y, mean_out, rstd_out, C, eps, r);
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

/// LayerNorm backward in one pass over [rows, C]: program j takes rows
/// [j ROWS, (j + 1) ROWS), BR at a time, as CHUNKS blocks of BLOCK columns
/// (CHUNKS * BLOCK >= C; GptModel: Tiles::ln_bwd_block - GPT-2's 768 as
/// 3 x 256 carry none of 1024's quarter of padding in the three
/// accumulators and the inputs in flight), and
/// - writes dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w, plus dres
///   with `residual` (the residual stream's gradient, which the LayerNorm's
///   input also feeds: no separate add);
/// - sums its rows of dy xhat and dy into partial_w[j] and partial_b[j]
///   (the LayerNorm's dw and db, first pass: column_sums adds the programs'
///   rows), and with `out_sums` those of dx into partial_o[j] - the bias
///   gradient of the projection whose output dx is the gradient of.
/// dy, x and dres are read once (layernorm_bwd_dx, layernorm_bwd_dwdb_partial
/// and residual_add read dy and x twice and wrote dx twice). Each block's
/// loads are issued one block ahead, before the previous block's two
/// cross-warp reductions: a program walks its rows one after another, and
/// with the loads waited for in turn it ran at 0.30 of copy bandwidth on the
/// H100 of 2026-11-27 (bf16, 16 rows a program). The chunks are added
/// element by element before each row sum: two reductions a row whatever
/// CHUNKS is (each across warps costs a barrier). dw's and db's sums, which
/// need no row statistic, are added before those reductions, so dy is not
/// live across them: at a warp a row in 3 x 256 (bf16) that took ptxas from
/// 24-32 bytes spilled at 255 registers to none, and one row a step from
/// 105 registers to 96.
template <class T>
void layernorm_bwd(tl::ptr<T> dy, tl::ptr<T> x, tl::ptr<T> w, tl::ptr<float> mean_in, tl::ptr<float> rstd_in,
                   tl::ptr<T> dres, tl::ptr<T> dx, tl::ptr<float> partial_w, tl::ptr<float> partial_b,
                   tl::ptr<float> partial_o, tl::scalar<int32_t> rows, tl::scalar<int32_t> C,
                   tl::constant<bool> residual, tl::constant<bool> out_sums, tl::constant<int> ROWS,
                   tl::constant<int> BR, tl::constant<int> BLOCK, tl::constant<int> CHUNKS) {
  if (CHUNKS.value < 1)
    throw Error("layernorm_bwd: CHUNKS is at least 1, not " + std::to_string(CHUNKS.value));
  const size_t chunks = size_t(CHUNKS.value);
  std::vector<tl::tensor> cols, colMask, wv;
  for (size_t k = 0; k < chunks; ++k) {
    cols.push_back(int(k) * BLOCK.value + tl::arange(0, BLOCK));
    colMask.push_back(cols[k] < C);
    wv.push_back(tl::load(w + cols[k], colMask[k], 0.0f).to(tl::f32).expand_dims(0));
  }
  tl::tensor first = tl::program_id(0) * ROWS;
  tl::tensor n = C.to(tl::f32);
  // Row block r of this program (ROWS need not divide by BR): its rows,
  // which of them exist, and each chunk's mask and offsets.
  struct Block {
    tl::tensor rs, inRows;
    std::vector<tl::tensor> mask, at;
  };
  auto block = [&](const tl::operand &r) {
    tl::tensor slice = r + tl::arange(0, BR);
    Block b{first + slice, {}, {}, {}};
    b.inRows = (b.rs < rows) & (slice < ROWS.value);
    for (size_t k = 0; k < chunks; ++k) {
      b.mask.push_back(b.inRows.expand_dims(1) & colMask[k].expand_dims(0));
      b.at.push_back(b.rs.expand_dims(1) * C + cols[k].expand_dims(0));
    }
    return b;
  };
  // Block r's inputs as loaded (the next block's, carried into the loop).
  std::vector<tl::tensor> xs(chunks), ds(chunks), res(chunks);
  tl::tensor mean, rstd;
  auto loadInputs = [&](const Block &b) {
    for (size_t k = 0; k < chunks; ++k) {
      xs[k] = tl::load(x + b.at[k], b.mask[k], 0.0f);
      ds[k] = tl::load(dy + b.at[k], b.mask[k], 0.0f);
      res[k] = residual.value ? tl::load(dres + b.at[k], b.mask[k], 0.0f) : tl::zeros({BR, BLOCK}, tl::f32);
    }
    mean = tl::load(mean_in + b.rs, b.inRows, 0.0f);
    rstd = tl::load(rstd_in + b.rs, b.inRows, 0.0f);
  };
  loadInputs(block(0));
  std::vector<tl::tensor> acc_w(chunks, tl::zeros({BR, BLOCK}, tl::f32)), acc_b = acc_w, acc_o = acc_w;
  for (auto r : tl::range(0, ROWS.value, BR.value, acc_w, acc_b, acc_o, xs, ds, res, mean, rstd)) {
    const Block here = block(r);
    tl::tensor meanRow = mean.expand_dims(1), rstdRow = rstd.expand_dims(1);
    std::vector<tl::tensor> xhat, d, g, dr;
    tl::tensor gs, gxs; // the chunks' g and g xhat, added element by element
    for (size_t k = 0; k < chunks; ++k) {
      xhat.push_back(tl::where(here.mask[k], (xs[k].to(tl::f32) - meanRow) * rstdRow, 0.0f));
      d.push_back(ds[k].to(tl::f32));
      dr.push_back(res[k].to(tl::f32));
      g.push_back(d[k] * wv[k]);
      gs = k ? gs + g[k] : g[k];
      gxs = k ? gxs + g[k] * xhat[k] : g[k] * xhat[k];
      // dw's and db's sums need no row statistic: added before the row
      // sums, dy is not live across them (registers at a warp a row).
      acc_w[k] = acc_w[k] + d[k] * xhat[k];
      acc_b[k] = acc_b[k] + d[k];
    }
    loadInputs(block(r + BR.value)); // in flight during the reductions below
    tl::tensor meanG = (tl::sum(gs, 1) / n).expand_dims(1), meanGx = (tl::sum(gxs, 1) / n).expand_dims(1);
    for (size_t k = 0; k < chunks; ++k) {
      tl::tensor out = rstdRow * (g[k] - meanG - xhat[k] * meanGx);
      if (residual.value)
        out = out + dr[k];
      tl::store(dx + here.at[k], out, here.mask[k]);
      if (out_sums.value) // the stored values, as the projection's own column sums would read them
        acc_o[k] = acc_o[k] + out.to(dtype_of_v<T>).to(tl::f32);
    }
  }
  for (size_t k = 0; k < chunks; ++k) {
    tl::tensor to = tl::program_id(0) * C + cols[k];
    tl::store(partial_w + to, tl::sum(acc_w[k], 0), colMask[k]);
    tl::store(partial_b + to, tl::sum(acc_b[k], 0), colMask[k]);
    if (out_sums.value)
      tl::store(partial_o + to, tl::sum(acc_o[k], 0), colMask[k]);
  }
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
  tl::store(dx + offs, tl::load(dy + offs, mask, 0.0f).to(tl::f32) * detail::gelu_grad(v, detail::kApproxTanh<T>), mask);
}

/// Softmax + cross-entropy per row of logits [rows, Vp] (the vocabulary V
/// padded to Vp columns; the padding is masked out): lse[r] =
/// logsumexp(logits[r, :V]), losses[r] = lse[r] - logits[r, target]. An
/// online logsumexp over BLOCK-wide chunks, so V may be any size (50257).
/// f32 math for any storage type T of the logits.
template <class T>
void cross_entropy_fwd(tl::ptr<T> logits, tl::ptr<int32_t> targets, tl::ptr<float> losses, tl::ptr<float> lse,
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
  tl::tensor rowLse = mx + tl::log(tl::sum(s * tl::exp(m - mx), 0));
  tl::tensor target = tl::load(targets + row);
  tl::store(lse + row, rowLse);
  tl::store(losses + row, rowLse - tl::load(logits + base + target).to(tl::f32));
}

/// Its backward: dlogits[r, j] = (softmax_j - [j == target]) * dlosses[r]
/// for j < V, 0 in the padding, from the forward's lse. dlogits may be
/// logits itself (GptModel writes the gradient over the logits): each
/// element is read, then written, by the thread that owns it, and nothing
/// else of the row is read.
template <class T>
void cross_entropy_bwd(tl::ptr<T> logits, tl::ptr<int32_t> targets, tl::ptr<float> lse, tl::ptr<float> dlosses,
                       tl::ptr<T> dlogits, tl::scalar<int32_t> V, tl::scalar<int32_t> Vp, tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor base = row.to(tl::i64) * Vp.to(tl::i64);
  tl::tensor target = tl::load(targets + row);
  tl::tensor rowLse = tl::load(lse + row);
  tl::tensor dl = tl::load(dlosses + row);
  tl::tensor cols0 = tl::arange(0, BLOCK);
  for (auto c : tl::range(0, Vp, BLOCK.value)) {
    tl::tensor cols = c + cols0;
    tl::tensor x = tl::load(logits + base + cols, cols < Vp, -INFINITY).to(tl::f32);
    tl::tensor p = tl::exp2((tl::where(cols < V, x, -INFINITY) - rowLse) * tl::log2e);
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

namespace detail {
/// f32 `p` rounded to bf16 stochastically: its magnitude rounds up with
/// probability (the 16 bits bf16 drops) / 2^16, down otherwise - unbiased,
/// so updates smaller than half a bf16 step still move the copy on average.
/// Adding `random16` to the bit pattern and clearing the low half does it
/// (the pattern grows with the magnitude; a carry steps the exponent). NaN
/// stays NaN; the largest finite values may round up to infinity.
inline tl::tensor roundToBf16Stochastically(const tl::tensor &p, const tl::tensor &random16) {
  tl::tensor nan = p != p;
  tl::tensor bits = tl::where(nan, 0.0f, p).bitcast(tl::i32); // no NaN pattern near the i32 overflow
  tl::tensor rounded = ((bits + random16) & int32_t(0xFFFF0000)).bitcast(tl::f32);
  return tl::where(nan, p, rounded);
}
} // namespace detail

/// AdamW for mixed precision: the same step on the f32 master weights
/// `params`, which also writes their copy in the storage type T (bf16) that
/// the forward and backward passes read - rounded to nearest even from the
/// master, so small updates accumulate in f32 and are never lost to bf16's
/// 8-bit mantissa; or, with STOCHASTIC, rounded stochastically (up or down
/// with the odds of the distance, from 16 bits of Philox - tl::randint - of
/// the element's index under `seed`: deterministic for a seed, a new seed
/// each step), as llm.c does, so the copy is the master in expectation.
template <class T>
void adamw_mixed(tl::ptr<float> params, tl::ptr<T> params_lp, tl::ptr<float> grads, tl::ptr<float> m_state,
                 tl::ptr<float> v_state, tl::scalar<float> lr, tl::scalar<float> beta1, tl::scalar<float> beta2,
                 tl::scalar<float> eps, tl::scalar<float> weight_decay, tl::scalar<float> bias1,
                 tl::scalar<float> bias2, tl::scalar<float> grad_scale, tl::scalar<int64_t> n,
                 tl::scalar<int64_t> seed, tl::constant<int> BLOCK, tl::constant<bool> STOCHASTIC) {
  tl::tensor offs = tl::program_id(0).to(tl::i64) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::tensor p = detail::adamwUpdate(params, grads, m_state, v_state, lr, beta1, beta2, eps, weight_decay, bias1,
                                     bias2, grad_scale, offs, mask);
  tl::store(params + offs, p, mask);
  if constexpr (std::is_same_v<T, bfloat16>) {
    tl::store(params_lp + offs,
              STOCHASTIC.value ? detail::roundToBf16Stochastically(p, tl::randint(seed, offs) & 0xFFFF) : p, mask);
  } else {
    if (STOCHASTIC.value) // it clears the 16 bits bf16 drops
      throw Error("adamw_mixed: stochastic rounding makes a bf16 copy, not " + std::string(dtype_name(dtype_of_v<T>)));
    tl::store(params_lp + offs, p, mask);
  }
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

namespace detail {
/// out[cols] (+)= the sum of partial's P rows [P, N] at columns `cols`, in
/// [BR, cols] tiles (the rows in order: deterministic).
inline void sumRowsInto(const tl::tensor &partial, const tl::tensor &out, const tl::scalar<int32_t> &P,
                        const tl::scalar<int32_t> &N, const tl::tensor &cols, bool accumulate, int BR, int BC) {
  tl::tensor acc = tl::zeros({BR, BC}, tl::f32);
  for (auto r : tl::range(0, P, BR, acc)) {
    tl::tensor rs = r + tl::arange(0, BR);
    tl::tensor mask = (rs.expand_dims(1) < P) & (cols.expand_dims(0) < N);
    acc = acc + tl::load(partial + rs.expand_dims(1) * N + cols.expand_dims(0), mask, 0.0f);
  }
  tl::tensor sum = tl::sum(acc, 0);
  if (accumulate)
    sum = sum + tl::load(out + cols, cols < N, 0.0f);
  tl::store(out + cols, sum, cols < N);
}
} // namespace detail

/// Column sums, second pass: out[cols] (+)= the sum of partial's P rows
/// [P, N], in [BR, BC] tiles.
inline void column_sums(tl::ptr<float> partial, tl::ptr<float> out, tl::scalar<int32_t> P, tl::scalar<int32_t> N,
                        tl::constant<bool> accumulate, tl::constant<int> BR, tl::constant<int> BC) {
  detail::sumRowsInto(partial, out, P, N, tl::program_id(0) * BC + tl::arange(0, BC), accumulate.value, BR.value,
                      BC.value);
}

/// column_sums of up to three [P, N] partial blocks laid end to end in one
/// launch: program (i, j) sums block j (partial + j P N) into out_j - the
/// LayerNorm backward's dw, db and the bias of the projection below it
/// (three launches of 48 programs for GPT-2's 768 columns were one of 144).
inline void column_sums_of_blocks(tl::ptr<float> partial, tl::ptr<float> out_0, tl::ptr<float> out_1,
                                  tl::ptr<float> out_2, tl::scalar<int32_t> P, tl::scalar<int32_t> N,
                                  tl::constant<bool> accumulate, tl::constant<int> BR, tl::constant<int> BC) {
  tl::tensor cols = tl::program_id(0) * BC + tl::arange(0, BC);
  tl::tensor block = tl::program_id(1);
  tl::tensor partials = partial + block * P * N;
  const tl::tensor outs[] = {out_0, out_1, out_2};
  for (int j = 0; j < 3; ++j)
    tl::if_(block == j, [&] {
      detail::sumRowsInto(partials, outs[j], P, N, cols, accumulate.value, BR.value, BC.value);
    });
}

} // namespace tegula::gpt::kernels
