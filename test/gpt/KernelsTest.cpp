// KernelsTest.cpp - GPT-2's memory-bound layer kernels (models/gpt/Kernels.h)
// in the interpreter and the CTA simulator: forwards against double
// references; backwards against double references and against finite
// differences of the forward at sampled coordinates. Ragged sizes (C not a
// power of two, a vocabulary padded past V).
#include "TestUtil.h"
#include "gpt/GptTestUtil.h"
#include "models/gpt/Kernels.h"
#include "models/gpt/Linear.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

using namespace tegula;
using namespace tegula::testing;
namespace k = tegula::gpt::kernels;

namespace {

class GptKernels : public tegula::testing::GptBackendTest {
protected:
  LaunchOptions on(Grid g) const { return {.grid = g, .num_warps = 4, .backend = GetParam()}; }
};

double maxRelError(const std::vector<float> &got, const std::vector<double> &want) {
  double worst = 0, scale = 1e-6;
  for (double w : want)
    scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i]))
      return INFINITY;
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) / scale);
  }
  return worst;
}

TEST_P(GptKernels, EmbeddingForwardAndBackward) {
  const int B = 2, T = 5, C = 40, V = 7;
  std::vector<int32_t> tokens = {3, 1, 3, 6, 0, 2, 3, 3, 5, 1};
  auto wte = random_vector<float>(V * C), wpe = random_vector<float>(T * C);
  auto out = poisoned<float>(B * T * C);
  auto fwd = kernel("embedding_fwd", k::embedding_fwd<float>, {"tokens", "wte", "wpe", "out", "T", "C", "BLOCK"});
  fwd(on({B * T}), tokens, wte, wpe, out, T, C, 64);
  for (int r = 0; r < B * T; ++r)
    for (int c = 0; c < C; ++c)
      ASSERT_EQ(out[size_t(r * C + c)], wte[size_t(tokens[size_t(r)] * C + c)] + wpe[size_t((r % T) * C + c)]);

  auto dout = random_vector<float>(B * T * C);
  std::vector<float> dwte(V * C, 0.0f), dwpe(T * C);
  auto bwdTok = kernel("embedding_bwd_tokens", k::embedding_bwd_tokens<float>, {"tokens", "dout", "dwte", "C", "BLOCK"});
  auto bwdPos = kernel("embedding_bwd_positions", k::embedding_bwd_positions<float>,
                       {"dout", "dwpe", "batch", "T", "C", "accumulate", "BLOCK"});
  bwdTok(on({B * T}), tokens, dout, dwte, C, 64);
  bwdPos(on({T, uint32_t(cdiv(C, 16))}), dout, dwpe, B, T, C, false, 16);
  std::vector<double> wantTok(V * C, 0.0), wantPos(T * C, 0.0);
  for (int r = 0; r < B * T; ++r)
    for (int c = 0; c < C; ++c) {
      wantTok[size_t(tokens[size_t(r)] * C + c)] += dout[size_t(r * C + c)];
      wantPos[size_t((r % T) * C + c)] += dout[size_t(r * C + c)];
    }
  EXPECT_LT(maxRelError(dwte, wantTok), 1e-6);
  EXPECT_LT(maxRelError(dwpe, wantPos), 1e-6);
  bwdPos(on({T, uint32_t(cdiv(C, 16))}), dout, dwpe, B, T, C, true, 16); // accumulates
  for (double &v : wantPos) v *= 2;
  EXPECT_LT(maxRelError(dwpe, wantPos), 1e-6);
}

TEST_P(GptKernels, LayerNormForwardBackwardAndFiniteDifferences) {
  const int rows = 6, C = 100, BLOCK = 128;
  const float eps = 1e-5f;
  auto x = random_vector<float>(rows * C, -2, 2), w = random_vector<float>(C), b = random_vector<float>(C);
  auto fwd = kernel("layernorm_fwd", k::layernorm_fwd<float>,
                    {"x", "w", "b", "y", "mean", "rstd", "rows", "C", "eps", "ROWS", "BLOCK", "CHUNKS"});
  auto y = poisoned<float>(rows * C), mean = poisoned<float>(rows), rstd = poisoned<float>(rows);
  LaunchOptions oneWarp = on({rows});
  oneWarp.num_warps = 1; // a warp a row, as GptModel launches it
  fwd(oneWarp, x, w, b, y, mean, rstd, rows, C, eps, 1, BLOCK, 1);
  // 4 rows a program at 4 warps (the second ragged: rows 4 and 5 of 6): a
  // warp a row again, so the same rows bit for bit, nothing past the last.
  auto y4 = poisoned<float>(rows * C + 1), mean4 = poisoned<float>(rows + 1), rstd4 = poisoned<float>(rows + 1);
  fwd(on({2}), x, w, b, y4, mean4, rstd4, rows, C, eps, 4, BLOCK, 1);
  EXPECT_EQ(std::vector<float>(y4.begin(), y4.end() - 1), y);
  EXPECT_EQ(std::vector<float>(mean4.begin(), mean4.end() - 1), mean);
  EXPECT_EQ(std::vector<float>(rstd4.begin(), rstd4.end() - 1), rstd);
  EXPECT_TRUE(std::isnan(y4.back()) && std::isnan(mean4.back()) && std::isnan(rstd4.back())); // untouched
  // The rows in chunks (Tiles::ln_fwd_block): 100 columns as 4 x 32, the
  // last chunk ragged; the same rows up to the sums' order.
  auto yc = poisoned<float>(rows * C + 1), meanc = poisoned<float>(rows + 1), rstdc = poisoned<float>(rows + 1);
  fwd(on({2}), x, w, b, yc, meanc, rstdc, rows, C, eps, 4, 32, 4);
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(yc[i], y[i], 1e-5f * (1 + std::abs(y[i]))) << i;
  for (size_t r = 0; r < size_t(rows); ++r) {
    EXPECT_NEAR(meanc[r], mean[r], 1e-6f) << r;
    EXPECT_NEAR(rstdc[r], rstd[r], 1e-5f * rstd[r]) << r;
  }
  EXPECT_TRUE(std::isnan(yc.back()) && std::isnan(meanc.back()) && std::isnan(rstdc.back()));
  std::vector<double> wantY(rows * C);
  for (int r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int c = 0; c < C; ++c) mu += x[size_t(r * C + c)];
    mu /= C;
    for (int c = 0; c < C; ++c) var += (x[size_t(r * C + c)] - mu) * (x[size_t(r * C + c)] - mu);
    double rs = 1 / std::sqrt(var / C + eps);
    EXPECT_NEAR(mean[size_t(r)], mu, 1e-5);
    EXPECT_NEAR(rstd[size_t(r)], rs, 1e-4 * rs);
    for (int c = 0; c < C; ++c)
      wantY[size_t(r * C + c)] = (x[size_t(r * C + c)] - mu) * rs * w[size_t(c)] + b[size_t(c)];
  }
  EXPECT_LT(maxRelError(y, wantY), 1e-5);

  // Backward of L = sum(y * dy): dx, dw, db.
  auto dy = random_vector<float>(rows * C);
  auto dx = poisoned<float>(rows * C), dw = poisoned<float>(C), db = poisoned<float>(C);
  auto bwdX = kernel("layernorm_bwd_dx", k::layernorm_bwd_dx<float>, {"dy", "x", "w", "mean", "rstd", "dx", "C", "BLOCK"});
  auto bwdW = kernel("layernorm_bwd_dwdb_partial", k::layernorm_bwd_dwdb_partial<float>,
                     {"dy", "x", "mean", "rstd", "partial_w", "partial_b", "rows", "C", "ROWS", "BR", "BC"});
  auto sums = kernel("column_sums", k::column_sums, {"partial", "out", "P", "N", "accumulate", "BR", "BC"});
  bwdX(on({rows}), dy, x, w, mean, rstd, dx, C, BLOCK);
  // Partials of 3 rows, 2 at a time (each program stops at its slice's
  // end), 32 columns a program (the fourth ragged); then their sums, 4
  // partial rows a tile.
  const int partials = int(cdiv(rows, 3));
  auto pw = poisoned<float>(size_t(partials * C)), pb = poisoned<float>(size_t(partials * C));
  bwdW(on({uint32_t(cdiv(C, 32)), uint32_t(partials)}), dy, x, mean, rstd, pw, pb, rows, C, 3, 2, 32);
  sums(on({uint32_t(cdiv(C, 32))}), pw, dw, partials, C, false, 4, 32);
  sums(on({uint32_t(cdiv(C, 32))}), pb, db, partials, C, false, 4, 32);
  auto loss = [&](const std::vector<float> &xs, const std::vector<float> &ws, const std::vector<float> &bs) {
    auto yy = poisoned<float>(rows * C), mm = poisoned<float>(rows), rr = poisoned<float>(rows);
    fwd({.grid = {rows}, .backend = Backend::Interp}, xs, ws, bs, yy, mm, rr, rows, C, eps, 1, BLOCK, 1);
    double l = 0;
    for (size_t i = 0; i < yy.size(); ++i) l += double(yy[i]) * dy[i];
    return l;
  };
  std::mt19937 pick(11);
  for (int s = 0; s < 6; ++s) { // central differences at sampled coordinates
    const float h = 1e-2f;
    size_t i = pick() % x.size(), c = pick() % size_t(C);
    auto xp = x, xm = x;
    xp[i] += h, xm[i] -= h;
    EXPECT_NEAR(dx[i], (loss(xp, w, b) - loss(xm, w, b)) / (2 * h), 2e-2 * (1 + std::abs(dx[i]))) << "dx " << i;
    auto wp = w, wm = w;
    wp[c] += h, wm[c] -= h;
    EXPECT_NEAR(dw[c], (loss(x, wp, b) - loss(x, wm, b)) / (2 * h), 2e-2 * (1 + std::abs(dw[c]))) << "dw " << c;
    auto bp = b, bm = b;
    bp[c] += h, bm[c] -= h;
    EXPECT_NEAR(db[c], (loss(x, w, bp) - loss(x, w, bm)) / (2 * h), 2e-2 * (1 + std::abs(db[c]))) << "db " << c;
  }
  // And exactly against the double formula.
  std::vector<double> wantDb(C, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < C; ++c) wantDb[size_t(c)] += dy[size_t(r * C + c)];
  EXPECT_LT(maxRelError(db, wantDb), 1e-6);

  // The one-pass backward (layernorm_bwd): programs of 5 rows, 2 at a time
  // (the first's third step has 1; the second program 1), and of 4 rows one
  // at a time (the GPU's step; the second program's last two past the end),
  // each step's loads issued during the one before - against the
  // kernels above, alone, then adding a residual gradient and summing its
  // output's columns; and the rows in chunks (Tiles::ln_bwd_block): 100
  // columns as 4 x 32 (the last ragged) and as 2 x 64.
  auto fused = kernel("layernorm_bwd", k::layernorm_bwd<float>,
                      {"dy", "x", "w", "mean", "rstd", "dres", "dx", "partial_w", "partial_b", "partial_o", "rows",
                       "C", "residual", "out_sums", "ROWS", "BR", "BLOCK", "CHUNKS"});
  auto dres = random_vector<float>(rows * C);
  struct FusedTile {
    int perProgram, step;
    bool residual;
    int block, chunks;
  };
  for (auto [perProgram, step, residual, block, chunks] :
       {FusedTile{5, 2, false, BLOCK, 1}, FusedTile{5, 2, true, BLOCK, 1}, FusedTile{4, 1, true, BLOCK, 1},
        FusedTile{5, 2, true, 32, 4}, FusedTile{4, 1, false, 64, 2}}) {
    SCOPED_TRACE(fmt::format("{} rows a program, {} a step, {} x {} columns, {}", perProgram, step, chunks, block,
                             residual ? "with the residual" : "alone"));
    const int programs = int(cdiv(rows, perProgram));
    auto got = poisoned<float>(rows * C), fw = poisoned<float>(size_t(programs * C));
    auto fb = poisoned<float>(size_t(programs * C)), fo = poisoned<float>(size_t(programs * C));
    fused(on({uint32_t(programs)}), dy, x, w, mean, rstd, dres, got, fw, fb, fo, rows, C, residual, residual,
          perProgram, step, block, chunks);
    std::vector<double> wantDx(rows * C), wantO(C, 0.0);
    std::vector<float> colW(C, 0.0f), colB(C, 0.0f), colO(C, 0.0f); // the partials added in order, as column_sums does
    for (int i = 0; i < rows * C; ++i)
      wantDx[size_t(i)] = double(dx[size_t(i)]) + (residual ? dres[size_t(i)] : 0.0);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < C; ++c) wantO[size_t(c)] += wantDx[size_t(r * C + c)];
    for (int j = 0; j < programs; ++j)
      for (int c = 0; c < C; ++c) {
        colW[size_t(c)] += fw[size_t(j * C + c)], colB[size_t(c)] += fb[size_t(j * C + c)];
        colO[size_t(c)] += residual ? fo[size_t(j * C + c)] : 0.0;
      }
    EXPECT_LT(maxRelError(got, wantDx), 1e-5);
    EXPECT_LT(maxRelError(colW, std::vector<double>(dw.begin(), dw.end())), 1e-5);
    EXPECT_LT(maxRelError(colB, wantDb), 1e-6);
    if (residual)
      EXPECT_LT(maxRelError(colO, wantO), 1e-5);
    // The three partial blocks (end to end, as GptModel keeps them) summed
    // in one launch, added to the gradients so far: 2 partial rows a tile,
    // 32 columns a program (the fourth ragged).
    auto blocksOf = kernel("column_sums_of_blocks", k::column_sums_of_blocks,
                           {"partial", "out_0", "out_1", "out_2", "P", "N", "accumulate", "BR", "BC"});
    std::vector<float> ends = fw;
    ends.insert(ends.end(), fb.begin(), fb.end());
    ends.insert(ends.end(), fo.begin(), fo.end());
    auto sumW = random_vector<float>(C), sumB = random_vector<float>(C), sumO = random_vector<float>(C);
    std::vector<double> wantW(C), wantB(C), wantSumO(C);
    for (int c = 0; c < C; ++c) {
      wantW[size_t(c)] = double(sumW[size_t(c)]) + colW[size_t(c)];
      wantB[size_t(c)] = double(sumB[size_t(c)]) + colB[size_t(c)];
      wantSumO[size_t(c)] = double(sumO[size_t(c)]) + colO[size_t(c)];
    }
    const std::vector<float> untouchedO = sumO;
    blocksOf(on({uint32_t(cdiv(C, 32)), residual ? 3u : 2u}), ends, sumW, sumB, sumO, programs, C, true, 2, 32);
    EXPECT_LT(maxRelError(sumW, wantW), 1e-5);
    EXPECT_LT(maxRelError(sumB, wantB), 1e-5);
    if (residual)
      EXPECT_LT(maxRelError(sumO, wantSumO), 1e-5);
    else
      EXPECT_EQ(sumO, untouchedO) << "the third block's output without a third row of programs";
  }
}

TEST_P(GptKernels, GeluBackwardMatchesFiniteDifferences) {
  const int n = 1000;
  auto x = random_vector<float>(n, -5, 5), dy = random_vector<float>(n);
  auto dx = poisoned<float>(n);
  auto bwd = kernel("gelu_bwd", k::gelu_bwd<float>, {"x", "dy", "dx", "n", "BLOCK"});
  bwd(on({uint32_t(cdiv(n, 256))}), x, dy, dx, n, 256);
  auto gelu = [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); };
  for (int i = 0; i < n; ++i) {
    const double h = 1e-5, v = x[size_t(i)];
    double want = dy[size_t(i)] * (gelu(v + h) - gelu(v - h)) / (2 * h);
    ASSERT_NEAR(dx[size_t(i)], want, 1e-4 * (1 + std::abs(want))) << "x = " << v;
  }
}

TEST_P(GptKernels, CrossEntropyOverAPaddedVocabulary) {
  const int rows = 5, V = 1000, Vp = 1024, BLOCK = 256;
  auto logits = random_vector<float>(rows * Vp, -8, 8);
  for (int r = 0; r < rows; ++r)
    for (int j = V; j < Vp; ++j)
      logits[size_t(r * Vp + j)] = j == V ? NAN : 1e4f; // padding: loaded (in vectors), then ignored
  // Masked-out words (-inf logits) in whole chunks: row 1 has one in the
  // first chunk; in row 2 column 5's lane sees -inf in every chunk, and
  // in row 4 every lane but the target's does in the first one.
  logits[size_t(1 * Vp + 40)] = -INFINITY;
  for (int j = 5; j < V; j += BLOCK)
    logits[size_t(2 * Vp + j)] = -INFINITY;
  for (int j = 0; j < BLOCK; ++j)
    logits[size_t(4 * Vp + j)] = j == 3 ? logits[size_t(4 * Vp + j)] : -INFINITY;
  std::vector<int32_t> targets = {0, 999, 17, 512, 3};
  auto losses = poisoned<float>(rows), lseOut = poisoned<float>(rows);
  auto fwd = kernel("cross_entropy_fwd", k::cross_entropy_fwd<float>,
                    {"logits", "targets", "losses", "lse", "V", "Vp", "BLOCK"});
  fwd(on({rows}), logits, targets, losses, lseOut, V, Vp, BLOCK);
  std::vector<double> lse(rows);
  for (int r = 0; r < rows; ++r) {
    double mx = -INFINITY, s = 0;
    for (int j = 0; j < V; ++j) mx = std::max(mx, double(logits[size_t(r * Vp + j)]));
    for (int j = 0; j < V; ++j) s += std::exp(logits[size_t(r * Vp + j)] - mx);
    lse[size_t(r)] = mx + std::log(s);
    ASSERT_TRUE(std::isfinite(losses[size_t(r)])) << "row " << r;
    EXPECT_NEAR(losses[size_t(r)], lse[size_t(r)] - logits[size_t(r * Vp + targets[size_t(r)])], 1e-4);
    EXPECT_NEAR(lseOut[size_t(r)], lse[size_t(r)], 1e-4);
  }
  auto dlosses = random_vector<float>(rows);
  auto dlogits = poisoned<float>(rows * Vp);
  auto bwd = kernel("cross_entropy_bwd", k::cross_entropy_bwd<float>,
                    {"logits", "targets", "lse", "dlosses", "dlogits", "V", "Vp", "BLOCK"});
  bwd(on({rows}), logits, targets, lseOut, dlosses, dlogits, V, Vp, BLOCK);
  std::vector<double> want(rows * Vp, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < V; ++j)
      want[size_t(r * Vp + j)] = (std::exp(logits[size_t(r * Vp + j)] - lse[size_t(r)]) -
                                  (j == targets[size_t(r)] ? 1.0 : 0.0)) * dlosses[size_t(r)];
  EXPECT_LT(maxRelError(dlogits, want), 1e-5); // the padding's gradient is exactly 0
  // In place, as GptModel runs it: the gradient over the logits (one host
  // buffer for both; a GPU launch would stage two copies of it).
  if (GetParam() != Backend::GPU) {
    bwd(on({rows}), logits, targets, lseOut, dlosses, logits, V, Vp, BLOCK);
    EXPECT_EQ(logits, dlogits);
  }
}

// The forward's two loops, each alone: a vocabulary of whole chunks (the
// masked loop does not run) and one shorter than a chunk (the unmasked one
// does not).
TEST_P(GptKernels, CrossEntropyOverWholeChunksOrLessThanOne) {
  auto fwd = kernel("cross_entropy_fwd", k::cross_entropy_fwd<float>,
                    {"logits", "targets", "losses", "lse", "V", "Vp", "BLOCK"});
  const int rows = 3, BLOCK = 256;
  for (auto [V, Vp] : {std::pair{512, 512}, std::pair{200, 208}}) {
    SCOPED_TRACE(fmt::format("V = {}, Vp = {}", V, Vp));
    auto logits = random_vector<float>(size_t(rows * Vp), -8, 8);
    for (int r = 0; r < rows; ++r)
      for (int j = V; j < Vp; ++j)
        logits[size_t(r * Vp + j)] = 1e4f; // padding
    logits[size_t(Vp + 7)] = -INFINITY;
    std::vector<int32_t> targets = {0, V - 1, V / 2};
    auto losses = poisoned<float>(rows), lse = poisoned<float>(rows);
    fwd(on({rows}), logits, targets, losses, lse, V, Vp, BLOCK);
    for (int r = 0; r < rows; ++r) {
      double mx = -INFINITY, s = 0;
      for (int j = 0; j < V; ++j) mx = std::max(mx, double(logits[size_t(r * Vp + j)]));
      for (int j = 0; j < V; ++j) s += std::exp(logits[size_t(r * Vp + j)] - mx);
      ASSERT_TRUE(std::isfinite(losses[size_t(r)])) << "row " << r;
      EXPECT_NEAR(losses[size_t(r)], mx + std::log(s) - logits[size_t(r * Vp + targets[size_t(r)])], 1e-4);
    }
  }
}

TEST_P(GptKernels, GlobalSumOfSquaresInTwoPasses) {
  const int64_t n = 5000;
  auto x = random_vector<float>(size_t(n));
  const int BLOCK = 256, blocks = int(cdiv(n, BLOCK));
  std::vector<float> partial(size_t(blocks), NAN), total(1, NAN);
  auto squares = kernel("sum_of_squares", k::sum_of_squares, {"x", "partial", "n", "BLOCK"});
  auto all = kernel("sum_all", k::sum_all, {"x", "out", "n", "BLOCK"});
  squares(on({uint32_t(blocks)}), x, partial, n, BLOCK);
  all(on({1}), partial, total, blocks, 64);
  double want = 0;
  for (float v : x) want += double(v) * v;
  EXPECT_NEAR(total[0], want, 1e-5 * want);
}

/// adamw_mixed's parameters (the master weights, their copy, AdamW's state
/// and settings, the seed of stochastic rounding).
std::vector<std::string> mixedAdamWNames() {
  return {"params", "params_lp", "grads", "m", "v", "lr", "beta1", "beta2", "eps", "weight_decay", "bias1", "bias2",
          "grad_scale", "n", "seed", "BLOCK", "STOCHASTIC"};
}

TEST_P(GptKernels, AdamWStepMatchesTheReference) {
  const int64_t n = 1000;
  auto p = random_vector<float>(size_t(n)), g = random_vector<float>(size_t(n));
  auto m = random_vector<float>(size_t(n), -0.1f, 0.1f), v = random_vector<float>(size_t(n), 0.0f, 0.01f);
  const float lr = 3e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
  const int step = 3;
  const float bias1 = 1 - std::pow(b1, float(step)), bias2 = 1 - std::pow(b2, float(step));
  auto p2 = p, m2 = m, v2 = v;
  auto step_k = kernel("adamw", k::adamw, {"params", "grads", "m", "v", "lr", "beta1", "beta2", "eps",
                                          "weight_decay", "bias1", "bias2", "grad_scale", "n", "BLOCK"});
  const float scale = 0.5f; // as global-norm clipping would pass
  step_k(on({uint32_t(cdiv(n, 256))}), p2, g, m2, v2, lr, b1, b2, eps, wd, bias1, bias2, scale, n, 256);
  for (size_t i = 0; i < size_t(n); ++i) {
    const double gs = double(g[i]) * scale;
    double mm = b1 * double(m[i]) + (1 - b1) * gs, vv = b2 * double(v[i]) + (1 - b2) * gs * gs;
    double want = p[i] - lr * ((mm / bias1) / (std::sqrt(vv / bias2) + eps) + wd * p[i]);
    ASSERT_NEAR(m2[i], mm, 1e-6);
    ASSERT_NEAR(v2[i], vv, 1e-7);
    ASSERT_NEAR(p2[i], want, 1e-6) << i;
  }
}

// Mixed precision: the same step on the f32 master weights, bit for bit,
// and their bf16 copy rounded to nearest even from the new master.
TEST_P(GptKernels, AdamWMixedUpdatesTheMasterAndItsBf16Copy) {
  const int64_t n = 777; // not a multiple of the block
  auto p = random_vector<float>(size_t(n)), g = random_vector<float>(size_t(n));
  auto m = random_vector<float>(size_t(n), -0.1f, 0.1f), v = random_vector<float>(size_t(n), 0.0f, 0.01f);
  const std::vector<std::string> names = {"params", "grads", "m", "v", "lr", "beta1", "beta2", "eps",
                                          "weight_decay", "bias1", "bias2", "grad_scale", "n", "BLOCK"};
  auto plain = kernel("adamw", k::adamw, names);
  auto mixed = kernel("adamw_mixed", k::adamw_mixed<bfloat16>, mixedAdamWNames());
  auto p1 = p, m1 = m, v1 = v, p2 = p, m2 = m, v2 = v;
  auto copy = poisoned<bfloat16>(size_t(n) + 1); // one past the end stays untouched
  const LaunchOptions o = on({uint32_t(cdiv(n, 256))});
  plain(o, p1, g, m1, v1, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.27f, 0.14f, 0.5f, n, 256);
  mixed(o, p2, std::span<bfloat16>(copy.data(), size_t(n)), g, m2, v2, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.27f,
        0.14f, 0.5f, n, int64_t(5), 256, false);
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(v1, v2);
  for (size_t i = 0; i < size_t(n); ++i)
    ASSERT_EQ(copy[i].bits, bfloat16(p2[i]).bits) << i;
  EXPECT_EQ(copy[size_t(n)].bits, poisoned<bfloat16>(1)[0].bits);
}

// Stochastic rounding of the bf16 copy: each element one of the two bf16
// values around its master, up with the odds of the distance (the mean is
// the master), exact values and NaN / infinities kept, the master itself as
// with rounding to nearest; deterministic for a seed, another seed other bits.
TEST_P(GptKernels, AdamWMixedRoundsItsBf16CopyStochastically) {
  const int64_t n = 6007;
  const float ulp = 1.0f / 128, x = 1.0f + 0.3f * ulp; // bf16's step at 1, 30% of the way up
  std::vector<float> p(static_cast<size_t>(n)), g(static_cast<size_t>(n), 0.0f), m = g, v = g;
  for (int64_t i = 0; i < n; ++i)
    p[size_t(i)] = i % 2 ? -x : x;
  // Exact bf16 values, NaN, a large f32 (AdamW's own math turns an infinite
  // master into NaN: 0 x inf).
  const std::vector<float> special = {1.5f, -2.0f, 0.0f, NAN, 3.0e38f};
  std::copy(special.begin(), special.end(), p.begin());
  auto mixed = kernel("adamw_mixed", k::adamw_mixed<bfloat16>, mixedAdamWNames());
  auto run = [&](int64_t seed, bool stochastic, std::vector<float> &master) {
    master = p;
    auto mm = m, vv = v;
    std::vector<bfloat16> copy = poisoned<bfloat16>(size_t(n));
    // Learning rate 0: the master stays p, the copy is p rounded.
    mixed(on({uint32_t(cdiv(n, 256))}), master, copy, g, mm, vv, 0.0f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.1f, 0.05f, 1.0f, n,
          seed, 256, stochastic);
    return copy;
  };
  std::vector<float> nearestMaster, master;
  const std::vector<bfloat16> nearest = run(11, false, nearestMaster), a = run(11, true, master);
  EXPECT_EQ(std::memcmp(master.data(), nearestMaster.data(), master.size() * sizeof(float)), 0)
      << "the f32 step does not depend on the copy's rounding";
  int up[2] = {0, 0}, count[2] = {0, 0}; // positive, negative
  for (int64_t i = int64_t(special.size()); i < n; ++i) {
    const float got = float(a[size_t(i)]), mag = std::abs(got);
    ASSERT_TRUE(mag == 1.0f || mag == 1.0f + ulp) << i << ": " << got;
    ASSERT_EQ(std::signbit(got), i % 2 == 1) << i;
    up[i % 2] += mag > 1.0f, ++count[i % 2];
    EXPECT_EQ(float(nearest[size_t(i)]), i % 2 ? -1.0f : 1.0f) << "to nearest: down";
  }
  for (int sign : {0, 1}) { // each sign unbiased on its own: the magnitude's mean is the master's
    const double fraction = double(up[sign]) / count[sign], sigma = std::sqrt(0.3 * 0.7 / count[sign]);
    std::printf("[stochastic rounding] %s: %d of %d rounded up: %.4f (expected 0.3 +- %.4f), mean magnitude %.7f "
                "(master %.7f)\n",
                sign ? "negative" : "positive", up[sign], count[sign], fraction, sigma, 1.0 + fraction * ulp, double(x));
    EXPECT_NEAR(fraction, 0.3, 5 * sigma);
  }
  for (size_t i = 0; i < 3; ++i) // bf16 values stay
    EXPECT_EQ(float(a[i]), special[i]) << i;
  EXPECT_TRUE(std::isnan(float(a[3])));
  EXPECT_LT(std::abs(double(float(a[4])) - 3.0e38), 3.0e38 / 128) << "one of its bf16 neighbours";
  // Deterministic for a seed; another seed rounds other elements up.
  std::vector<float> again;
  const std::vector<bfloat16> b = run(11, true, again), c = run(12, true, again);
  int differ = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(a[size_t(i)].bits, b[size_t(i)].bits) << i;
    differ += a[size_t(i)].bits != c[size_t(i)].bits;
  }
  EXPECT_GT(differ, n / 5) << "seed 12 rounded the same elements up as seed 11";
  // The same bits on every backend (Philox is exact integer arithmetic).
  if (GetParam() != Backend::Interp) {
    std::vector<float> interpMaster = p;
    auto mm = m, vv = v;
    std::vector<bfloat16> interp = poisoned<bfloat16>(size_t(n));
    mixed({.grid = {uint32_t(cdiv(n, 256))}, .num_warps = 4, .backend = Backend::Interp}, interpMaster, interp, g, mm,
          vv, 0.0f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.1f, 0.05f, 1.0f, n, int64_t(11), 256, true);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(a[size_t(i)].bits, interp[size_t(i)].bits) << i;
  }
}

// The residual connection in bf16: f32 sum, one rounding.
TEST_P(GptKernels, ResidualAddRoundsOnce) {
  const int64_t n = 1000;
  auto x = random_vector<bfloat16>(size_t(n)), y = random_vector<bfloat16>(size_t(n));
  auto out = poisoned<bfloat16>(size_t(n));
  kernel("residual_add", k::residual_add<bfloat16>, {"x", "y", "out", "n", "BLOCK"})(on({uint32_t(cdiv(n, 256))}), x,
                                                                                        y, out, n, 256);
  for (size_t i = 0; i < size_t(n); ++i)
    ASSERT_EQ(out[i].bits, bfloat16(float(x[i]) + float(y[i])).bits) << i;
}

/// residual_layernorm_fwd is residual_add then layernorm_fwd, bit for bit:
/// the LayerNorm reads the sum as stored (bf16: rounded once).
template <class T> void residualLayerNorm(const LaunchOptions &opts) {
  const int rows = 5, C = 100, BLOCK = 128;
  auto x = random_vector<T>(rows * C, -2, 2), a = random_vector<T>(rows * C, -2, 2);
  auto w = random_vector<T>(C), b = random_vector<T>(C);
  auto add = kernel("residual_add", k::residual_add<T>, {"x", "y", "out", "n", "BLOCK"});
  auto ln = kernel("layernorm_fwd", k::layernorm_fwd<T>,
                   {"x", "w", "b", "y", "mean", "rstd", "rows", "C", "eps", "ROWS", "BLOCK", "CHUNKS"});
  auto fused = kernel("residual_layernorm_fwd", k::residual_layernorm_fwd<T>,
                      {"x", "a", "res", "w", "b", "y", "mean", "rstd", "rows", "C", "eps", "ROWS", "BLOCK", "CHUNKS"});
  LaunchOptions o = opts;
  auto res = poisoned<T>(rows * C), y = poisoned<T>(rows * C);
  auto mean = poisoned<float>(rows), rstd = poisoned<float>(rows);
  o.grid = {uint32_t(cdiv(rows * C, 128))};
  add(o, x, a, res, int64_t(rows * C), 128);
  o.grid = {uint32_t(rows)};
  o.num_warps = 1; // a warp a row, as below
  ln(o, res, w, b, y, mean, rstd, rows, C, 1e-5f, 1, BLOCK, 1);
  auto res2 = poisoned<T>(rows * C), y2 = poisoned<T>(rows * C);
  auto mean2 = poisoned<float>(rows), rstd2 = poisoned<float>(rows);
  // 2 rows a program at 2 warps (the third program's second row past the end).
  o.grid = {uint32_t(cdiv(rows, 2))};
  o.num_warps = 2;
  fused(o, x, a, res2, w, b, y2, mean2, rstd2, rows, C, 1e-5f, 2, BLOCK, 1);
  EXPECT_EQ(std::memcmp(res.data(), res2.data(), res.size() * sizeof(T)), 0);
  EXPECT_EQ(std::memcmp(y.data(), y2.data(), y.size() * sizeof(T)), 0);
  EXPECT_EQ(mean, mean2);
  EXPECT_EQ(rstd, rstd2);
  // In chunks of 32 columns (4, the last ragged): the same sum bit for bit,
  // the same LayerNorm up to the order of its sums (and bf16's rounding).
  auto res3 = poisoned<T>(rows * C), y3 = poisoned<T>(rows * C);
  auto mean3 = poisoned<float>(rows), rstd3 = poisoned<float>(rows);
  fused(o, x, a, res3, w, b, y3, mean3, rstd3, rows, C, 1e-5f, 2, 32, 4);
  EXPECT_EQ(std::memcmp(res.data(), res3.data(), res.size() * sizeof(T)), 0);
  const float tolerance = std::is_same_v<T, float> ? 1e-5f : 1e-2f;
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(float(y3[i]), float(y[i]), tolerance * (1 + std::abs(float(y[i])))) << i;
  for (size_t r = 0; r < size_t(rows); ++r)
    EXPECT_NEAR(mean3[r], mean[r], 1e-5f) << r;
}
TEST_P(GptKernels, ResidualLayerNormIsTheAddThenTheLayerNormF32) { residualLayerNorm<float>(on({1})); }
TEST_P(GptKernels, ResidualLayerNormIsTheAddThenTheLayerNormBf16) { residualLayerNorm<bfloat16>(on({1})); }

/// x @ w + b (+ GELU) and its three gradients, on ragged shapes; bf16 runs
/// the dots on tensor cores in the simulator.
template <class T> void linearLayer(const LaunchOptions &opts) {
  // N and K take different numbers of 32-wide blocks (3 and 2): the weight
  // gradient's grid (N blocks, K blocks) read the other way round fails.
  const int M = 70, K = 48, N = 72;
  auto x = random_vector<T>(M * K), w = random_vector<T>(K * N), b = random_vector<T>(N);
  auto fwd = kernel("matmul_bias_fwd", k::matmul_bias_fwd<T>,
                    {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"});
  auto xd = to_double(x), wd = to_double(w), bd = to_double(b);
  std::vector<double> pre(M * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = bd[size_t(n)];
      for (int kk = 0; kk < K; ++kk) acc += xd[size_t(m * K + kk)] * wd[size_t(kk * N + n)];
      pre[size_t(m * N + n)] = acc;
    }
  auto gelu = [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); };
  std::vector<double> act(pre.size());
  for (size_t i = 0; i < pre.size(); ++i) act[i] = gelu(pre[i]);
  LaunchOptions o = opts;
  // One program a tile (a 2-D grid), and persistent: 3 programs walking the
  // 3 x 2 tiles in groups of 2 row blocks (two tiles each).
  for (int groupM : {0, 2})
    for (bool g : {false, true}) {
      SCOPED_TRACE(fmt::format("{}, GROUP_M {}", g ? "with GELU" : "plain", groupM));
      o.grid = groupM ? Grid{3} : Grid{uint32_t(cdiv(M, 32)), uint32_t(cdiv(N, 32))};
      auto y = poisoned<T>(M * N), p = poisoned<T>(M * N);
      fwd(o, x, w, b, y, p, M, N, K, g, 32, 32, 16, groupM);
      EXPECT_LT(rel_error(y, g ? act : pre), tolerance<T>());
      if (g)
        EXPECT_LT(rel_error(p, pre), tolerance<T>());
    }
  auto dy = random_vector<T>(M * N);
  auto dyd = to_double(dy);
  auto dx = poisoned<T>(M * K);
  std::vector<float> dw(K * N, NAN), db(N, NAN);
  auto bwdX =
      kernel("matmul_bwd_dx", k::matmul_bwd_dx<T>, {"dy", "w", "dx", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"});
  auto bwdW = kernel("matmul_bwd_dw", k::matmul_bwd_dw<T>,
                     {"x", "dy", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"});
  auto partialSums = kernel("column_partial_sums", k::column_partial_sums<T>,
                            {"dy", "partial", "M", "N", "ROWS", "BR", "BC"});
  auto sums = kernel("column_sums", k::column_sums, {"partial", "out", "P", "N", "accumulate", "BR", "BC"});
  // db: partial sums of 18 rows (the last ragged), 4 at a time (the fifth
  // step stops at the slice's end), 32 columns a program (the third
  // ragged); then 2 partial rows at a time.
  const int partials = int(cdiv(M, 18));
  auto partial = poisoned<float>(size_t(partials * N));
  auto bwdB = [&](bool accumulate) {
    o.grid = {uint32_t(cdiv(N, 32)), uint32_t(partials)};
    partialSums(o, dy, partial, M, N, 18, 4, 32);
    o.grid = {uint32_t(cdiv(N, 32))};
    sums(o, partial, db, partials, N, accumulate, 2, 32);
  };
  o.grid = {uint32_t(cdiv(M, 32)), uint32_t(cdiv(K, 32))};
  bwdX(o, dy, w, dx, M, N, K, 32, 32, 16, 0);
  auto dxPersistent = poisoned<T>(M * K);
  o.grid = {4}; // 6 tiles: two programs walk two, two walk one
  bwdX(o, dy, w, dxPersistent, M, N, K, 32, 32, 16, 2);
  o.grid = {uint32_t(cdiv(N, 32)), uint32_t(cdiv(K, 32))};
  bwdW(o, x, dy, dw, M, N, K, false, 32, 32, 16);
  bwdB(false);
  std::vector<double> wantDx(M * K, 0.0), wantDw(K * N, 0.0), wantDb(N, 0.0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      const double g = dyd[size_t(m * N + n)];
      wantDb[size_t(n)] += g;
      for (int kk = 0; kk < K; ++kk) {
        wantDx[size_t(m * K + kk)] += g * wd[size_t(kk * N + n)];
        wantDw[size_t(kk * N + n)] += g * xd[size_t(m * K + kk)];
      }
    }
  EXPECT_LT(rel_error(dx, wantDx), tolerance<T>());
  EXPECT_EQ(std::memcmp(dxPersistent.data(), dx.data(), dx.size() * sizeof(T)), 0) << "persistent dx differs";
  // x = gelu(pre): dx with GELU's backward fused - d pre = dx gelu'(pre) and
  // its column sums' partials, one row per 32-row block (pointer loads and
  // descriptors; one program a tile and persistent).
  {
    auto pre = random_vector<T>(M * K, -4, 4);
    std::vector<double> wantDpre(M * K), wantDb(K, 0.0);
    for (int m = 0; m < M; ++m)
      for (int kk = 0; kk < K; ++kk) {
        const double v = double(pre[size_t(m * K + kk)]), u = std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v);
        const double grad = 0.5 * (1 + std::tanh(u)) + 0.5 * v * (1 - std::tanh(u) * std::tanh(u)) *
                                                           std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * v * v);
        double d = 0;
        for (int n = 0; n < N; ++n) d += dyd[size_t(m * N + n)] * wd[size_t(kk * N + n)];
        wantDpre[size_t(m * K + kk)] = d * grad;
        wantDb[size_t(kk)] += d * grad;
      }
    const std::vector<std::string> params = {"dy", "w", "pre", "dpre", "partial", "M", "N", "K", "BM", "BK", "BN",
                                             "GROUP_M"};
    auto pointers = kernel("matmul_bwd_dx_gelu", k::matmul_bwd_dx_gelu<T>, params);
    auto descriptors = kernel("matmul_bwd_dx_gelu_tma", k::matmul_bwd_dx_gelu_tma<T>, params);
    for (const Kernel *kern : {&pointers, &descriptors})
      for (int groupM : {0, 2}) {
        SCOPED_TRACE(fmt::format("{}, GROUP_M {}", kern->name(), groupM));
        auto dpre = poisoned<T>(M * K);
        auto blockSums = poisoned<float>(size_t(cdiv(M, 32) * K));
        o.grid = groupM ? Grid{4} : Grid{uint32_t(cdiv(M, 32)), uint32_t(cdiv(K, 32))};
        (*kern)(o, dy, w, pre, dpre, blockSums, M, N, K, 32, 32, 16, groupM);
        EXPECT_LT(rel_error(dpre, wantDpre), tolerance<T>());
        // The column sums are those of d pre as stored (c_fc's weight
        // gradient reads the same values), and near the exact ones.
        std::vector<double> gotDb(K, 0.0), storedDb(K, 0.0);
        for (int64_t r = 0; r < cdiv(M, 32); ++r)
          for (int kk = 0; kk < K; ++kk) gotDb[size_t(kk)] += blockSums[size_t(r * K + kk)];
        for (int m = 0; m < M; ++m)
          for (int kk = 0; kk < K; ++kk) storedDb[size_t(kk)] += double(dpre[size_t(m * K + kk)]);
        EXPECT_LT(rel_error(gotDb, storedDb), 1e-5);
        EXPECT_LT(rel_error(gotDb, wantDb), tolerance<T>());
      }
  }
  EXPECT_LT(rel_error(dw, wantDw), (std::is_same_v<T, float> ? 1e-5 : 1e-3)); // f32 out
  EXPECT_LT(rel_error(db, wantDb), 1e-5);
  // Accumulating (micro-batches): the same gradients again, added.
  o.grid = {uint32_t(cdiv(N, 32)), uint32_t(cdiv(K, 32))};
  bwdW(o, x, dy, dw, M, N, K, true, 32, 32, 16);
  bwdB(true);
  for (double &v : wantDw) v *= 2;
  for (double &v : wantDb) v *= 2;
  EXPECT_LT(rel_error(dw, wantDw), (std::is_same_v<T, float> ? 1e-5 : 1e-3));
  EXPECT_LT(rel_error(db, wantDb), 1e-5);
  // The weight gradient as a stream-K GEMM (GptModel's default): 3 and 11
  // programs over the 2 x 3 tiles' 5 row steps - runs that start and end
  // inside tiles, tiles finished by two and by three programs - through
  // pointers and descriptors; accumulating adds; the counters end at zero.
  {
    const std::vector<std::string> params = {"x", "dy", "dw", "partials", "arrivals", "M", "N",
                                             "K", "accumulate", "BK", "BN", "BM"};
    auto pointers = kernel("matmul_bwd_dw_stream_k", k::matmul_bwd_dw_stream_k<T>, params);
    auto descriptors = kernel("matmul_bwd_dw_stream_k_tma", k::matmul_bwd_dw_stream_k_tma<T>, params);
    std::vector<double> once = wantDw;
    for (double &v : once) v /= 2;
    for (const Kernel *kern : {&pointers, &descriptors})
      for (int programs : {3, 11}) {
        SCOPED_TRACE(fmt::format("{}, {} programs", kern->name(), programs));
        std::vector<float> partials(size_t(examples::streamKPartialFloats(programs, 32, 32)), NAN);
        const size_t tiles = size_t(cdiv(K, 32) * cdiv(N, 32));
        std::vector<int32_t> arrivals(tiles, 0);
        std::vector<float> g(size_t(K * N), NAN);
        o.grid = {uint32_t(programs)};
        (*kern)(o, x, dy, g, partials, arrivals, M, N, K, false, 32, 32, 16);
        EXPECT_LT(rel_error(g, once), (std::is_same_v<T, float> ? 1e-5 : 1e-3));
        (*kern)(o, x, dy, g, partials, arrivals, M, N, K, true, 32, 32, 16);
        EXPECT_LT(rel_error(g, wantDw), (std::is_same_v<T, float> ? 1e-5 : 1e-3));
        EXPECT_EQ(arrivals, std::vector<int32_t>(tiles, 0));
      }
  }
}

TEST_P(GptKernels, LinearLayerF32) { linearLayer<float>(on({1})); }
TEST_P(GptKernels, LinearLayerBf16) { linearLayer<bfloat16>(on({1})); }

INSTANTIATE_TEST_SUITE_P(Backends, GptKernels, tegula::testing::gptBackends(), tegula::testing::gptBackendName);

} // namespace
