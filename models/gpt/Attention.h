// Attention.h - GPT-2's causal self-attention as flash attention in the DSL,
// forward and backward, reading q, k and v where GPT-2's QKV projection puts
// them: rows of `stride` elements (3C for the fused qkv buffer), head h's d
// columns at h * D, q/k/v at element offsets q_off/k_off/v_off of one buffer.
// One program per (block of queries or keys, batch * head); no T x T matrix
// is ever stored.
//
//   forward:  o = softmax(q k^T * scale + causal mask) v, and per query row the
//             logsumexp lse of its scaled scores (what the backward needs);
//   backward: delta = rowsum(do * o), then per key block dk, dv (looping over
//             query blocks) and per query block dq (looping over key blocks) -
//             both recompute P = exp(s - lse), so nothing is atomic: the
//             gradients are deterministic. With `bias_sums` each also sums
//             the columns of the blocks it writes into partials: the QKV
//             projection's bias gradient, first pass.
// Template parameter P: the precision of f32 dots (tf32 runs them on tensor
// cores); 16-bit T runs on tensor cores anyway.
#pragma once

#include "examples/kernels.h"
#include "tegula/tegula.h"

#include <cmath>

namespace tegula::gpt::kernels {

// The softmaxes work in base 2 (tl::log2e, exp2), the scaling folded into
// one fma an element: exp2(s * scale * log2e - m). lse is stored as a
// natural log.

namespace detail {
/// Element offsets of rows `rows` of head bh (= b * H + h) in a [B, T, stride]
/// buffer, starting at column `col0 + h * D`: a [rows, 1] column to add d to.
inline tl::tensor headRows(const tl::tensor &rows, const tl::tensor &bh, const tl::tensor &H,
                           const tl::tensor &T, const tl::tensor &stride, const tl::tensor &col0,
                           int D) {
  tl::tensor b = bh / H, h = bh % H;
  return ((b * T + rows) * stride + col0 + h * D).expand_dims(1);
}

/// The keys and values of a group of heads whose blocks run together: kept
/// within L2 (50 MB on an H100), which their programs read them from.
constexpr int kKeysAndValuesInL2 = 24 << 20;

/// This program's head (bh, grid y) and its rank among the head's blocks
/// (grid x), rank 0 the longest: causal blocks see more keys the later
/// they lie (dkdv: the earlier). CTAs start in launch order, x fastest, so
/// the programs take every head's rank 0, then every head's rank 1, ... -
/// over a group of heads whose keys and values (`kvBytesPerHead`) fit
/// kKeysAndValuesInL2. Head by head (rank = x), each wave mixed blocks of
/// every length and the last ran long blocks beside idle SMs; longest first
/// across heads, the launch ends on short ones (FlashAttention-3's
/// scheduler does the same). GPT-2's 96 heads of 1024 keys: one group.
struct HeadAndRank {
  tl::tensor bh, rank;
};
inline HeadAndRank longestFirst(const tl::tensor &kvBytesPerHead) {
  tl::tensor blocks = tl::num_programs(0), heads = tl::num_programs(1);
  tl::tensor group = tl::maximum(kKeysAndValuesInL2 / kvBytesPerHead, 1);
  auto [bh, rank] = examples::groupedTile(tl::program_id(1) * blocks + tl::program_id(0), heads, blocks * group,
                                          group);
  return HeadAndRank{bh, rank};
}
/// A query block's program (forward, dq): the last block sees the most keys.
template <class T_>
HeadAndRank queryBlockLongestFirst(const tl::tensor &T, int D) {
  HeadAndRank p = longestFirst(T * (2 * D * int(sizeof(T_))));
  return {p.bh, tl::num_programs(0) - 1 - p.rank};
}
/// A key block's program (dkdv): the first block is seen by the most queries.
template <class T_>
HeadAndRank keyBlockLongestFirst(const tl::tensor &T, int D) {
  return longestFirst(T * (2 * D * int(sizeof(T_))));
}

/// The column sums of a gradient block `value` [R, D] of head bh - rows
/// [r0, r0 + R) of its sequence, those where `mask` - as stored in T_, into
/// partial[b * cdiv(T, R) + r0 / R, col0 + h * D + d] of a [B cdiv(T, R),
/// stride] f32 buffer: the first pass of the QKV projection's bias gradient
/// (column_sums adds the rows), from the block the kernel writes anyway.
template <class T_>
void storeColumnSums(tl::ptr<float> partial, const tl::tensor &value, const tl::tensor &mask, const tl::tensor &bh,
                     const tl::tensor &H, const tl::tensor &T, const tl::tensor &stride, const tl::tensor &col0,
                     const tl::tensor &r0, int R, int D) {
  tl::tensor block = bh / H * ((T + (R - 1)) / R) + r0 / R;
  tl::tensor sums = tl::sum(tl::where(mask, value.to(dtype_of_v<T_>).to(tl::f32), 0.0f), 0);
  tl::store(partial + block * stride + col0 + bh % H * D + tl::arange(0, D), sums);
}

/// `x` where `visible()`, `other` elsewhere - where `needs_mask` (a scalar:
/// the block reaches past the causal diagonal or past T); elsewhere `x` as
/// it is. Only the diagonal blocks of a causal loop pay for the compares
/// and selects (a runtime tl::if_), as in FlashAttention.
template <class Visible>
tl::tensor maskWhereNeeded(const tl::tensor &needs_mask, Visible visible, const tl::tensor &x, float other) {
  return tl::if_(needs_mask, [&] { return tl::where(visible(), x, other); }, [&] { return x; });
}

/// One block of queries rm (q, do) added to the dk and dv of keys rn (k, v),
/// transposed: S^T = k q^T, P^T = exp(S^T - lse), dv += P^T do,
/// dP^T = v do^T, dS^T = P^T (dP^T - delta), dk += dS^T q (scaled at the end).
template <class T_, tl::precision P>
void dkdvStep(const tl::tensor &k, const tl::tensor &v, const tl::tensor &q, const tl::tensor &g,
              const tl::tensor &rn, const tl::tensor &rm, const tl::tensor &lse_row, const tl::tensor &delta_row,
              const tl::tensor &T, const tl::tensor &scale, const tl::tensor &needs_mask, tl::tensor &dk,
              tl::tensor &dv) {
  const int64_t BN = rn.shape()[0], BM = rm.shape()[0];
  // Base 2: P^T = exp2(S^T scale log2 e - lse log2 e), an fma and an ex2 an element.
  tl::tensor st = tl::dot(k, q.trans(), tl::zeros({BN, BM}, tl::f32), P); // [BN, BM]
  tl::tensor pt = maskWhereNeeded(
      needs_mask, [&] { return (rn.expand_dims(1) <= rm.expand_dims(0)) & (rm.expand_dims(0) < T); },
      tl::exp2(tl::fma(st, scale * tl::log2e, -(lse_row * tl::log2e).expand_dims(0))), 0.0f);
  dv = tl::dot(pt.to(tl::ptr<T_>::element), g, dv, P);
  tl::tensor dpt = tl::dot(v, g.trans(), tl::zeros({BN, BM}, tl::f32), P); // [BN, BM]
  tl::tensor dst = pt * (dpt - delta_row.expand_dims(0));
  dk = tl::dot(dst.to(tl::ptr<T_>::element), q, dk, P);
}

/// The forward's scores s [BM, BN] of queries rm against keys rn, -inf
/// where a key lies after its query or past T: on every block, or (with
/// `onlyWhereNeeded`) on those that reach past the diagonal or T.
inline tl::tensor maskCausal(const tl::tensor &s, const tl::tensor &rm, const tl::tensor &rn, const tl::tensor &start,
                             const tl::tensor &firstQuery, const tl::tensor &T, bool onlyWhereNeeded) {
  auto visible = [&] { return (rn.expand_dims(0) <= rm.expand_dims(1)) & (rn.expand_dims(0) < T); };
  if (!onlyWhereNeeded)
    return tl::where(visible(), s, -INFINITY);
  const int64_t BN = rn.shape()[0];
  return maskWhereNeeded((start + BN > firstQuery) | (start + BN > T), visible, s, -INFINITY);
}

/// One block of keys rn (k, v) added to the dq of queries rm (q, do):
/// dq += dS k, dS = P (do v^T - delta), P = exp(q k^T scale - lse) (dq is
/// scaled at the end).
template <class T_, tl::precision P>
void dqStep(const tl::tensor &q, const tl::tensor &g, const tl::tensor &k, const tl::tensor &v,
            const tl::tensor &rm, const tl::tensor &rn, const tl::tensor &lse_col, const tl::tensor &delta_col,
            const tl::tensor &T, const tl::tensor &scale, const tl::tensor &needs_mask, tl::tensor &dq) {
  const int64_t BM = rm.shape()[0], BN = rn.shape()[0];
  tl::tensor s = tl::dot(q, k.trans(), tl::zeros({BM, BN}, tl::f32), P);
  tl::tensor p = maskWhereNeeded(
      needs_mask, [&] { return (rn.expand_dims(0) <= rm.expand_dims(1)) & (rn.expand_dims(0) < T); },
      tl::exp2(tl::fma(s, scale * tl::log2e, -lse_col * tl::log2e)), 0.0f);
  tl::tensor ds = p * (tl::dot(g, v.trans(), tl::zeros({BM, BN}, tl::f32), P) - delta_col);
  dq = tl::dot(ds.to(tl::ptr<T_>::element), k, dq, P);
}
} // namespace detail

/// o [B, T, H * D] and lse [B * H, T] from qkv (see above), for the query
/// blocks from `first_block` on (a decoding step with a KV cache runs just
/// the block holding its new position: grid x = 1, first_block = t / BM).
/// `diagonal_mask_only`: only the key blocks that reach past the diagonal
/// or T compare and select (a runtime branch, as FlashAttention does);
/// false masks every block - fewer registers where the branch's two copies
/// of the softmax crowd them (sm_80's 64 x 64 forward: 200 instead of 248;
/// GptModel::Tiles chooses per chip).
template <class T_, tl::precision P = tl::precision::ieee>
void attention_fwd(tl::ptr<T_> qkv, tl::ptr<T_> o, tl::ptr<float> lse, tl::scalar<int32_t> q_off,
                   tl::scalar<int32_t> k_off, tl::scalar<int32_t> v_off, tl::scalar<int32_t> stride,
                   tl::scalar<int32_t> H, tl::scalar<int32_t> T, tl::scalar<float> scale,
                   tl::scalar<int32_t> first_block, tl::constant<int> D, tl::constant<int> BM,
                   tl::constant<int> BN, tl::constant<bool> diagonal_mask_only) {
  auto [bh, query_block] = detail::queryBlockLongestFirst<T_>(T, D);
  tl::tensor block = query_block + first_block;
  tl::tensor rm = block * BM + tl::arange(0, BM);
  tl::tensor rd = tl::arange(0, D).expand_dims(0);
  tl::tensor q = tl::load(qkv + detail::headRows(rm, bh, H, T, stride, q_off, D) + rd,
                          rm.expand_dims(1) < T, 0.0f);
  tl::tensor m = tl::full({BM}, -INFINITY, tl::f32);
  tl::tensor l = tl::zeros({BM}, tl::f32);
  tl::tensor acc = tl::zeros({BM, D}, tl::f32);
  tl::tensor end = tl::minimum((block + 1) * BM, T); // causal
  const tl::tensor c = scale * tl::log2e; // scores to base-2 units
  for (auto start : tl::range(0, end, BN.value, m, l, acc)) {
    tl::tensor rn = start + tl::arange(0, BN);
    // K as stored ([BN, D], rows contiguous), transposed for the dot: the
    // load vectorises and software pipelining takes it.
    tl::tensor k = tl::load(qkv + detail::headRows(rn, bh, H, T, stride, k_off, D) + rd,
                            rn.expand_dims(1) < T, 0.0f);
    tl::tensor s = tl::dot(q, k.trans(), tl::zeros({BM, BN}, tl::f32), P); // raw: scaled in the fma below
    s = detail::maskCausal(s, rm, rn, start, block * BM, T, diagonal_mask_only.value);
    tl::tensor m_new = tl::maximum(m, tl::max(s, 1) * c); // c > 0: the max of the scaled scores
    tl::tensor alpha = tl::exp2(m - m_new);
    tl::tensor p = tl::exp2(tl::fma(s, c, -m_new.expand_dims(1)));
    l = tl::fma(l, alpha, tl::sum(p, 1));
    tl::tensor v = tl::load(qkv + detail::headRows(rn, bh, H, T, stride, v_off, D) + rd,
                            rn.expand_dims(1) < T, 0.0f);
    acc = tl::dot(p.to(tl::ptr<T_>::element), v, acc * alpha.expand_dims(1), P);
    m = m_new;
  }
  tl::tensor valid = rm < T;
  tl::store(o + detail::headRows(rm, bh, H, T, H * D, tl::scalar_const(0, tl::i32), D) + rd,
            acc * tl::fdiv(1.0f, l).expand_dims(1), valid.expand_dims(1)); // a reciprocal a row
  tl::store(lse + bh * T + rm, m * tl::ln2 + tl::log(l), valid); // natural log
}

/// attention_fwd with q, k and v read through tensor descriptors over the
/// [rows = B * T, stride] buffer (TMA rings feeding wgmma on sm_90a, masked
/// loads elsewhere); same results. A block of keys may run past a
/// sequence's T into the next sequence's rows (or past the end: zeros):
/// those keys are masked out of the scores, so their values count 0 times;
/// queries past T are not stored. `rows` (last) is an argument so that the
/// host can encode TMA's tensor maps; stride and offsets must span multiples
/// of 16 bytes (GPT-2's do: multiples of n_embd).
template <class T_, tl::precision P = tl::precision::ieee>
void attention_fwd_tma(tl::ptr<T_> qkv, tl::ptr<T_> o, tl::ptr<float> lse, tl::scalar<int32_t> q_off,
                       tl::scalar<int32_t> k_off, tl::scalar<int32_t> v_off, tl::scalar<int32_t> stride,
                       tl::scalar<int32_t> H, tl::scalar<int32_t> T, tl::scalar<float> scale,
                       tl::scalar<int32_t> first_block, tl::constant<int> D, tl::constant<int> BM,
                       tl::constant<int> BN, tl::scalar<int32_t> rows, tl::constant<bool> diagonal_mask_only) {
  auto [bh, query_block] = detail::queryBlockLongestFirst<T_>(T, D);
  tl::tensor row0 = bh / H * T, col = bh % H * D;
  auto q_rows = tl::make_tensor_descriptor(qkv, {rows, stride}, {stride, 1}, {BM, D});
  auto kv_rows = tl::make_tensor_descriptor(qkv, {rows, stride}, {stride, 1}, {BN, D});
  tl::tensor block = query_block + first_block;
  tl::tensor rm = block * BM + tl::arange(0, BM);
  tl::tensor rd = tl::arange(0, D).expand_dims(0);
  tl::tensor q = q_rows.load({row0 + block * BM, q_off + col});
  tl::tensor m = tl::full({BM}, -INFINITY, tl::f32);
  tl::tensor l = tl::zeros({BM}, tl::f32);
  tl::tensor acc = tl::zeros({BM, D}, tl::f32);
  tl::tensor end = tl::minimum((block + 1) * BM, T); // causal
  const tl::tensor c = scale * tl::log2e; // scores to base-2 units
  for (auto start : tl::range(0, end, BN.value, m, l, acc)) {
    tl::tensor rn = start + tl::arange(0, BN);
    tl::tensor k = kv_rows.load({row0 + start, k_off + col});
    tl::tensor s = tl::dot(q, k.trans(), tl::zeros({BM, BN}, tl::f32), P); // raw: scaled in the fma below
    s = detail::maskCausal(s, rm, rn, start, block * BM, T, diagonal_mask_only.value);
    tl::tensor m_new = tl::maximum(m, tl::max(s, 1) * c); // c > 0: the max of the scaled scores
    tl::tensor alpha = tl::exp2(m - m_new);
    tl::tensor p = tl::exp2(tl::fma(s, c, -m_new.expand_dims(1)));
    l = tl::fma(l, alpha, tl::sum(p, 1));
    tl::tensor v = kv_rows.load({row0 + start, v_off + col});
    acc = tl::dot(p.to(tl::ptr<T_>::element), v, acc * alpha.expand_dims(1), P);
    m = m_new;
  }
  tl::tensor valid = rm < T;
  tl::store(o + detail::headRows(rm, bh, H, T, H * D, tl::scalar_const(0, tl::i32), D) + rd,
            acc * tl::fdiv(1.0f, l).expand_dims(1), valid.expand_dims(1)); // a reciprocal a row
  tl::store(lse + bh * T + rm, m * tl::ln2 + tl::log(l), valid); // natural log
}

/// delta[bh, t] = sum over d of do * o (the backward's row correction).
template <class T_>
void attention_bwd_delta(tl::ptr<T_> o, tl::ptr<T_> dout, tl::ptr<float> delta, tl::scalar<int32_t> H,
                         tl::scalar<int32_t> T, tl::constant<int> D, tl::constant<int> BM) {
  tl::tensor bh = tl::program_id(1);
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rows = detail::headRows(rm, bh, H, T, H * D, tl::scalar_const(0, tl::i32), D) +
                    tl::arange(0, D).expand_dims(0);
  tl::tensor mask = rm.expand_dims(1) < T;
  tl::tensor prod = tl::load(o + rows, mask, 0.0f).to(tl::f32) * tl::load(dout + rows, mask, 0.0f).to(tl::f32);
  tl::store(delta + bh * T + rm, tl::sum(prod, 1), rm < T);
}

/// dk and dv for one block of BN keys (written into dqkv at k_off / v_off):
/// dv = sum_i P_i^T do_i, dk = scale * sum_i dS_i^T q_i, dS = P * (dP - delta),
/// dP = do v^T, over the query blocks at or after the keys (causal).
/// Written transposed - S^T = k q^T, dP^T = v do^T - so that every dot has
/// the keys along M: P^T and dS^T are accumulators already laid out as the
/// next dots' A operands (registers, no transpose through shared memory), k
/// and v are A operands loaded once, and on sm_90a all four run on wgmma
/// (at 128 keys, 8 warps: 0 spills; the untransposed form spilled 660 B).
template <class T_, tl::precision P = tl::precision::ieee>
void attention_bwd_dkdv(tl::ptr<T_> qkv, tl::ptr<T_> dout, tl::ptr<float> lse, tl::ptr<float> delta,
                        tl::ptr<T_> dqkv, tl::scalar<int32_t> q_off, tl::scalar<int32_t> k_off,
                        tl::scalar<int32_t> v_off, tl::scalar<int32_t> stride, tl::scalar<int32_t> H,
                        tl::scalar<int32_t> T, tl::scalar<float> scale, tl::constant<int> D,
                        tl::constant<int> BM, tl::constant<int> BN, tl::ptr<float> partial,
                        tl::constant<bool> bias_sums) {
  // Head by head, longest first within each (not across heads, as the
  // descriptor kernel): f32 at tf32 on sm_90a holds 255 registers here, and
  // a computed head and block (where program_id's are re-read for free)
  // spilled 48 bytes.
  tl::tensor bh = tl::program_id(1);
  tl::tensor n0 = tl::program_id(0) * BN;
  tl::tensor rn = n0 + tl::arange(0, BN);
  tl::tensor rd = tl::arange(0, D).expand_dims(0);
  tl::tensor kmask = rn.expand_dims(1) < T;
  tl::tensor k = tl::load(qkv + detail::headRows(rn, bh, H, T, stride, k_off, D) + rd, kmask, 0.0f);
  tl::tensor v = tl::load(qkv + detail::headRows(rn, bh, H, T, stride, v_off, D) + rd, kmask, 0.0f);
  tl::tensor dk = tl::zeros({BN, D}, tl::f32);
  tl::tensor dv = tl::zeros({BN, D}, tl::f32);
  tl::tensor first = (n0 / BM) * BM; // the first query block that sees these keys
  for (auto start : tl::range(first, T, BM.value, dk, dv)) {
    tl::tensor rm = start + tl::arange(0, BM);
    tl::tensor qmask = rm.expand_dims(1) < T;
    tl::tensor q = tl::load(qkv + detail::headRows(rm, bh, H, T, stride, q_off, D) + rd, qmask, 0.0f);
    tl::tensor g = tl::load(dout + detail::headRows(rm, bh, H, T, H * D, tl::scalar_const(0, tl::i32), D) + rd,
                            qmask, 0.0f);
    detail::dkdvStep<T_, P>(k, v, q, g, rn, rm, tl::load(lse + bh * T + rm, rm < T, 0.0f),
                            tl::load(delta + bh * T + rm, rm < T, 0.0f), T, scale,
                            (start < n0 + BN) | (start + BM > T), dk, dv);
  }
  tl::store(dqkv + detail::headRows(rn, bh, H, T, stride, k_off, D) + rd, dk * scale, kmask);
  tl::store(dqkv + detail::headRows(rn, bh, H, T, stride, v_off, D) + rd, dv, kmask);
  if (bias_sums.value) {
    detail::storeColumnSums<T_>(partial, dk * scale, kmask, bh, H, T, stride, k_off, n0, BN.value, D.value);
    detail::storeColumnSums<T_>(partial, dv, kmask, bh, H, T, stride, v_off, n0, BN.value, D.value);
  }
}

/// dq for one block of BM queries: dq = scale * sum_j dS_j k_j over the key
/// blocks at or before the queries.
template <class T_, tl::precision P = tl::precision::ieee>
void attention_bwd_dq(tl::ptr<T_> qkv, tl::ptr<T_> dout, tl::ptr<float> lse, tl::ptr<float> delta,
                      tl::ptr<T_> dqkv, tl::scalar<int32_t> q_off, tl::scalar<int32_t> k_off,
                      tl::scalar<int32_t> v_off, tl::scalar<int32_t> stride, tl::scalar<int32_t> H,
                      tl::scalar<int32_t> T, tl::scalar<float> scale, tl::constant<int> D,
                      tl::constant<int> BM, tl::constant<int> BN, tl::ptr<float> partial,
                      tl::constant<bool> bias_sums) {
  auto [bh, query_block] = detail::queryBlockLongestFirst<T_>(T, D);
  tl::tensor m0 = query_block * BM;
  tl::tensor rm = m0 + tl::arange(0, BM);
  tl::tensor rd = tl::arange(0, D).expand_dims(0);
  tl::tensor qmask = rm.expand_dims(1) < T;
  tl::tensor q = tl::load(qkv + detail::headRows(rm, bh, H, T, stride, q_off, D) + rd, qmask, 0.0f);
  tl::tensor g = tl::load(dout + detail::headRows(rm, bh, H, T, H * D, tl::scalar_const(0, tl::i32), D) + rd,
                          qmask, 0.0f);
  tl::tensor l = tl::load(lse + bh * T + rm, rm < T, 0.0f).expand_dims(1);
  tl::tensor dl = tl::load(delta + bh * T + rm, rm < T, 0.0f).expand_dims(1);
  tl::tensor dq = tl::zeros({BM, D}, tl::f32);
  tl::tensor end = tl::minimum(m0 + BM, T);
  for (auto start : tl::range(0, end, BN.value, dq)) {
    tl::tensor rn = start + tl::arange(0, BN);
    tl::tensor kmask = rn.expand_dims(1) < T;
    tl::tensor k = tl::load(qkv + detail::headRows(rn, bh, H, T, stride, k_off, D) + rd, kmask, 0.0f);
    tl::tensor v = tl::load(qkv + detail::headRows(rn, bh, H, T, stride, v_off, D) + rd, kmask, 0.0f);
    detail::dqStep<T_, P>(q, g, k, v, rm, rn, l, dl, T, scale, start + BN > m0, dq);
  }
  tl::store(dqkv + detail::headRows(rm, bh, H, T, stride, q_off, D) + rd, dq * scale, qmask);
  if (bias_sums.value)
    detail::storeColumnSums<T_>(partial, dq * scale, qmask, bh, H, T, stride, q_off, m0, BM.value, D.value);
}

/// attention_bwd_dkdv with q, k, v and do read through tensor descriptors
/// over the [rows = B * T, stride] (and [rows, H * D]) buffers: TMA rings
/// feeding wgmma on sm_90a (q and do each one ring that two dots read),
/// masked loads elsewhere; same results. Rows past a sequence's T (its next
/// sequence's, or zeros past the end) are masked out as in
/// attention_fwd_tma; `rows` (last) lets the host encode the maps.
template <class T_, tl::precision P = tl::precision::ieee>
void attention_bwd_dkdv_tma(tl::ptr<T_> qkv, tl::ptr<T_> dout, tl::ptr<float> lse, tl::ptr<float> delta,
                            tl::ptr<T_> dqkv, tl::scalar<int32_t> q_off, tl::scalar<int32_t> k_off,
                            tl::scalar<int32_t> v_off, tl::scalar<int32_t> stride, tl::scalar<int32_t> H,
                            tl::scalar<int32_t> T, tl::scalar<float> scale, tl::constant<int> D,
                            tl::constant<int> BM, tl::constant<int> BN, tl::scalar<int32_t> rows,
                            tl::ptr<float> partial, tl::constant<bool> bias_sums) {
  auto [bh, key_block] = detail::keyBlockLongestFirst<T_>(T, D);
  tl::tensor row0 = bh / H * T, col = bh % H * D;
  auto key_rows = tl::make_tensor_descriptor(qkv, {rows, stride}, {stride, 1}, {BN, D});
  auto query_rows = tl::make_tensor_descriptor(qkv, {rows, stride}, {stride, 1}, {BM, D});
  auto dout_rows = tl::make_tensor_descriptor(dout, {rows, H * D}, {H * D, 1}, {BM, D});
  tl::tensor n0 = key_block * BN;
  tl::tensor rn = n0 + tl::arange(0, BN);
  tl::tensor rd = tl::arange(0, D).expand_dims(0);
  tl::tensor k = key_rows.load({row0 + n0, k_off + col});
  tl::tensor v = key_rows.load({row0 + n0, v_off + col});
  tl::tensor dk = tl::zeros({BN, D}, tl::f32);
  tl::tensor dv = tl::zeros({BN, D}, tl::f32);
  tl::tensor first = (n0 / BM) * BM; // the first query block that sees these keys
  for (auto start : tl::range(first, T, BM.value, dk, dv)) {
    tl::tensor rm = start + tl::arange(0, BM);
    tl::tensor q = query_rows.load({row0 + start, q_off + col});
    tl::tensor g = dout_rows.load({row0 + start, col});
    detail::dkdvStep<T_, P>(k, v, q, g, rn, rm, tl::load(lse + bh * T + rm, rm < T, 0.0f),
                            tl::load(delta + bh * T + rm, rm < T, 0.0f), T, scale,
                            (start < n0 + BN) | (start + BM > T), dk, dv);
  }
  tl::tensor kmask = rn.expand_dims(1) < T;
  tl::store(dqkv + detail::headRows(rn, bh, H, T, stride, k_off, D) + rd, dk * scale, kmask);
  tl::store(dqkv + detail::headRows(rn, bh, H, T, stride, v_off, D) + rd, dv, kmask);
  if (bias_sums.value) {
    detail::storeColumnSums<T_>(partial, dk * scale, kmask, bh, H, T, stride, k_off, n0, BN.value, D.value);
    detail::storeColumnSums<T_>(partial, dv, kmask, bh, H, T, stride, v_off, n0, BN.value, D.value);
  }
}

/// attention_bwd_dq with q, k, v and do read through tensor descriptors (see
/// attention_bwd_dkdv_tma; k is one ring that two dots read).
template <class T_, tl::precision P = tl::precision::ieee>
void attention_bwd_dq_tma(tl::ptr<T_> qkv, tl::ptr<T_> dout, tl::ptr<float> lse, tl::ptr<float> delta,
                          tl::ptr<T_> dqkv, tl::scalar<int32_t> q_off, tl::scalar<int32_t> k_off,
                          tl::scalar<int32_t> v_off, tl::scalar<int32_t> stride, tl::scalar<int32_t> H,
                          tl::scalar<int32_t> T, tl::scalar<float> scale, tl::constant<int> D,
                          tl::constant<int> BM, tl::constant<int> BN, tl::scalar<int32_t> rows,
                          tl::ptr<float> partial, tl::constant<bool> bias_sums) {
  auto [bh, query_block] = detail::queryBlockLongestFirst<T_>(T, D);
  tl::tensor row0 = bh / H * T, col = bh % H * D;
  auto query_rows = tl::make_tensor_descriptor(qkv, {rows, stride}, {stride, 1}, {BM, D});
  auto key_rows = tl::make_tensor_descriptor(qkv, {rows, stride}, {stride, 1}, {BN, D});
  auto dout_rows = tl::make_tensor_descriptor(dout, {rows, H * D}, {H * D, 1}, {BM, D});
  tl::tensor m0 = query_block * BM;
  tl::tensor rm = m0 + tl::arange(0, BM);
  tl::tensor rd = tl::arange(0, D).expand_dims(0);
  tl::tensor q = query_rows.load({row0 + m0, q_off + col});
  tl::tensor g = dout_rows.load({row0 + m0, col});
  tl::tensor l = tl::load(lse + bh * T + rm, rm < T, 0.0f).expand_dims(1);
  tl::tensor dl = tl::load(delta + bh * T + rm, rm < T, 0.0f).expand_dims(1);
  tl::tensor dq = tl::zeros({BM, D}, tl::f32);
  tl::tensor end = tl::minimum(m0 + BM, T);
  for (auto start : tl::range(0, end, BN.value, dq)) {
    tl::tensor rn = start + tl::arange(0, BN);
    tl::tensor k = key_rows.load({row0 + start, k_off + col});
    tl::tensor v = key_rows.load({row0 + start, v_off + col});
    detail::dqStep<T_, P>(q, g, k, v, rm, rn, l, dl, T, scale, start + BN > m0, dq);
  }
  tl::tensor qmask = rm.expand_dims(1) < T;
  tl::store(dqkv + detail::headRows(rm, bh, H, T, stride, q_off, D) + rd, dq * scale, qmask);
  if (bias_sums.value)
    detail::storeColumnSums<T_>(partial, dq * scale, qmask, bh, H, T, stride, q_off, m0, BM.value, D.value);
}

} // namespace tegula::gpt::kernels
