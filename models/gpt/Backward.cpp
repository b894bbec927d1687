//===- Backward.cpp - GPT-2's backward pass --------------------------------===//
//
// GptModel::backward: the loss's gradient through the LM head, ln_f and the
// blocks in reverse, into the parameter gradients (one arena) - the
// activations' gradients in two block buffers that take turns, the blocks'
// weight gradients on a stream of their own on the GPU.
//
//===----------------------------------------------------------------------===//
#include "models/gpt/Activations.h"
#include "models/gpt/Model.h"
#include "models/gpt/ModelKernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace tegula::gpt {

void GptModel::backward() {
  if (!acts_ || !acts_->hasTargets)
    throw Error("GPT backward: run forward() with targets first");
  if (acts_->logitsHoldGradient)
    throw Error("GPT backward: once per forward() - the first wrote the logits' gradient over the logits");
  allocateGradients();
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
  // After zero_grad(), each gradient's first writer stores instead of adding
  // (the arena was not cleared). wpe's covers T of n_ctx positions: zeroed
  // first where T is shorter, and added to. The zeros stay pending until the
  // last launch: a backward that throws part way leaves them to a read or a
  // retry, which stores again.
  const bool accumulate = !gradientsPendingZero_;
  if (!accumulate && T < c.n_ctx) {
    const int64_t n = parameter("wpe.weight").numel();
    kernels_->fill(launch({uint32_t(cdiv(n, 1024))}), G("wpe.weight"), 0.0f, n, 1024);
  }
  const int BM = tiles_.bm, BN = tiles_.bn, BK = tiles_.bk, lnBlock = pow2AtLeast(C);
  [[maybe_unused]] const auto [KM, KN, KK, kmajorWarps, kmajorStages] = tiles_.kmajor();
  // The backward's blocks: a dkdv program owns `own` keys and steps through
  // the queries `step` at a time; a dq program owns `own` queries.
  const int own = tiles_.attention_bwd_block, step = tiles_.attention_bwd_step;
  const int colBlock = 32;
  // The column sums' partials (the bias and LayerNorm parameter gradients'
  // first passes, each written by the kernel that writes their input
  // anyway), f32, in three regions: attention's backward's [attnBlocks, 3C]
  // (c_attn's bias: a row per `own` rows of a sequence); c_proj's fused
  // GELU backward's [dxBlocks, 4C] (c_fc's bias: a row per block of B T
  // rows); LayerNorm's backward's three [lnParts, C] (its dw and db, and the
  // bias of the projection whose output gradient it writes).
  const int attnBlocks = B * int(cdiv(T, own));
  const int dxBlocks = int(cdiv(BT, tiles_.geluDx()[0]));
  const int lnParts = int(cdiv(BT, tiles_.ln_bwd_rows));
  // LayerNorm's backward rows in chunks of Tiles::ln_bwd_block columns (0:
  // one block of lnBlock).
  const int lnChunk = tiles_.ln_bwd_block ? tiles_.ln_bwd_block : lnBlock, lnChunks = int(cdiv(C, lnChunk));
  // At least a warp per 256 columns of a chunk (8 elements a lane), not of
  // the row: narrow chunks of a wide row do not spread over more warps.
  const int lnBwdWarps = std::max(tiles_.ln_bwd_warps, std::min(lnBlock, lnChunk) / 256);
  const int64_t geluPartials = int64_t(attnBlocks) * 3 * C, lnPartials = geluPartials + int64_t(dxBlocks) * 4 * C;
  const int64_t lnW = lnPartials, lnB = lnW + int64_t(lnParts) * C, lnO = lnB + int64_t(lnParts) * C;
  if (const int64_t need = lnO + int64_t(lnParts) * C; columnScratch_.size() != need)
    columnScratch_ = Arena(need, backend_); // once per B x T
  auto columnSums = [&](int64_t partialOffset, int rows, int N, Arg out) {
    kernels_->columnSums(launch({uint32_t(cdiv(N, tiles_.column_sum_block))}),
                         columnScratch_.view(partialOffset, int64_t(rows) * N), out, rows, N, accumulate,
                         tiles_.column_sum_rows, tiles_.column_sum_block);
  };
  const Arg tgtArg = a.targets(), tokArg = a.tokens();

  // f32 at tf32 (Tiles::dw_transposed): the weight gradients read x and dy
  // transposed (x^T dy with both operands along B T: wgmma reads tf32
  // K-major, and TMA rings fill K-major tiles only from K-major tensors),
  // from scratch sized once per B x T - where B T rows make 16-byte
  // multiples (TMA's rule). x^T then dy^T: every layer's K + N is at most
  // 5 C (the MLP's).
  const bool transposedDw = tiles_.dw_transposed && !transposedOffset_.empty() && BT % 4 == 0;
  if (const int64_t need = transposedDw ? int64_t(BT) * 5 * C : 0; transposeScratch_.size() != need) {
    transposeScratch_ = Arena(); // freed before its successor is allocated
    transposeScratch_ = Arena(need, backend_);
    memory(); // the peak
  }
  // The blocks' weight gradients' N block: Tiles::dw_bn, else the linear
  // layers' (which one program a tile halves where that finishes sooner).
  const int DWN = tiles_.dw_bn ? tiles_.dw_bn : BN;
  // The stream-K weight gradients' workspace (BM x DWN tiles): two partial
  // blocks a program, a counter for each tile of the largest gradient (the
  // MLP's [C, 4C] and [4C, C]).
  const bool streamKDw = streamKWeightGradients_ && tiles_.dw_stream_k && !transposedDw;
  const int64_t dwPartials = streamKDw ? examples::streamKPartialFloats(persistentPrograms_, BM, DWN) : 0;
  const int64_t dwTiles = streamKDw ? std::max(cdiv(C, BM) * cdiv(4 * C, DWN), cdiv(4 * C, BM) * cdiv(C, DWN)) : 0;
  if (streamKPartials_.size() != dwPartials || streamKArrivals_.size() != dwTiles) {
    streamKPartials_ = Arena(), streamKArrivals_ = Arena(); // freed before their successors are allocated
    streamKPartials_ = Arena(dwPartials, backend_);
    streamKArrivals_ = Arena(dwTiles, backend_, DType::i32);
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
  // (geluPartials). `bias`: where db comes from - partials the kernel that
  // wrote dy left in the scratch (offset, rows), or nothing: summed already
  // (by the LayerNorm backward that wrote dy).
  using Partials = std::pair<int64_t, int>;
  auto linearBwd = [&](Arg dy, Arg x, Arg dx, const std::string &w, int N, int K, std::optional<Arg> pre,
                       std::optional<Partials> bias) {
    const ProfileLabel label(profileRole(w));
    if (pre) {
      const std::array<int, 5> tile = tiles_.geluDx(); // (bm, bn, bk, warps, stages)
      kernels_->matmulDxGelu(launchGelu(BT, K, tile), dy, P(w + ".weight"), *pre, dx,
                             columnScratch_.view(geluPartials, int64_t(dxBlocks) * K), BT, N, K, tile[0], tile[1],
                             tile[2], groupM());
    } else
      kernels_->matmulDx(launchKMajor(gemmGrid(BT, K, KM, KN)), dy, P(w + ".weight"), dx, BT, N, K, KM, KN, KK,
                         groupM());
    if (transposedDw) {
      Arg xT = transposeScratch_.view(0, int64_t(BT) * K), dyT = transposeScratch_.view(int64_t(BT) * K,
                                                                                         int64_t(BT) * N);
      transposeInto(x, xT, BT, K);
      transposeInto(dy, dyT, BT, N);
      const int dwBN = dwBlockN(K, N, KM, tiles_.kmajor_dw_bn ? tiles_.kmajor_dw_bn : KN);
      kernels_->matmulDwTn(launchKMajor({uint32_t(cdiv(N, dwBN)), uint32_t(cdiv(K, KM))}), xT, dyT,
                           G(w + ".weight"), BT, N, K, accumulate, KM, dwBN, KK);
    } else if (streamKDw) {
      const int64_t units = cdiv(K, BM) * cdiv(N, DWN) * cdiv(BT, BK);
      const int programs = int(std::min<int64_t>(persistentPrograms_, units));
      if (units * programs >= (int64_t(1) << 31)) // the kernel numbers its runs in i32
        throw Error(fmt::format("GPT: the stream-K weight gradient of {} has {} tiles x steps on {} programs, "
                                "past 2^31 (set_stream_k_weight_gradients(false), or a smaller batch)",
                                w, units, programs));
      try {
        kernels_->matmulDwStreamK(launchWeightGradient({uint32_t(programs)}), x, dy, G(w + ".weight"),
                                  streamKPartials_.view(0, examples::streamKPartialFloats(programs, BM, DWN)),
                                  streamKArrivals_.view(0, cdiv(K, BM) * cdiv(N, DWN)), BT, N, K, accumulate, BM, DWN,
                                  BK);
      } catch (...) {
        // A launch that stopped part way (the CPU backends run it within the
        // call) may leave arrivals counted, which a finished one resets: the
        // next backward starts from fresh, zeroed counters instead.
        streamKArrivals_ = Arena();
        throw;
      }
    } else {
      const int dwBN = tiles_.dw_bn ? tiles_.dw_bn : dwBlockN(K, N, BM, BN);
      kernels_->matmulDw(launchWeightGradient({uint32_t(cdiv(N, dwBN)), uint32_t(cdiv(K, BM))}), x, dy,
                         G(w + ".weight"), BT, N, K, accumulate, BM, dwBN, BK);
    }
    if (bias)
      columnSums(bias->first, bias->second, N, G(w + ".bias"));
  };
  // y = layernorm(x), given dy: dx = ... (+ dres: the residual stream's
  // gradient, where x also feeds it), dw, db += ...; with `projection` (the
  // layer that produced x), dx's column sums are its bias gradient, summed
  // in the same launch as dw and db (the partials lie end to end: lnW, lnB,
  // lnO).
  auto layernormBwd = [&](Arg dy, int64_t x, int64_t mean, int64_t rstd, std::optional<Arg> dres, Arg dx,
                          const std::string &ln, const std::optional<std::string> &projection) {
    kernels_->layernormBwd(launch({uint32_t(lnParts)}, lnBwdWarps), dy, A(x, btc),
                           P(ln + ".weight"), S(mean, BT), S(rstd, BT), dres ? *dres : dx, dx,
                           columnScratch_.view(lnW, int64_t(lnParts) * C), columnScratch_.view(lnB, int64_t(lnParts) * C),
                           columnScratch_.view(lnO, int64_t(lnParts) * C), BT, C, dres.has_value(),
                           projection.has_value(), tiles_.ln_bwd_rows, tiles_.ln_bwd_tile_rows, lnChunk, lnChunks);
    const Arg bias = projection ? G(*projection + ".bias") : G(ln + ".bias"); // out_2: unused without one
    kernels_->columnSumsOfBlocks(launch({uint32_t(cdiv(C, tiles_.column_sum_block)), projection ? 3u : 2u}),
                                 columnScratch_.view(lnW, 3 * int64_t(lnParts) * C), G(ln + ".weight"),
                                 G(ln + ".bias"), bias, lnParts, C, accumulate, tiles_.column_sum_rows,
                                 tiles_.column_sum_block);
  };

  // Loss: the mean over the B * T positions, so each position's dloss is 1/BT.
  kernels_->fill(launch({uint32_t(cdiv(BT, 1024))}), dS(a.losses, BT), 1.0f / float(BT), int64_t(BT), 1024);
  // In place: the logits become their gradient (a B T x Vp tensor fewer).
  a.logitsHoldGradient = true; // from here on, also if a launch fails
  kernels_->crossEntropyBwd(launch({uint32_t(BT)}), A(a.logits, logitsSize), tgtArg, S(a.logitsLse, BT),
                            dS(a.losses, BT), dA(a.logits, logitsSize), c.vocab, Vp, tiles_.vocab_block);
  // Tied LM head: logits = lnf wte^T. Its input gradient dlogits wte reads
  // wte K-major through its transpose where the model keeps one (wgmma).
  std::optional<ProfileLabel> headLabel(std::in_place, "lm_head");
  if (std::optional<Arg> wteT = transposedWeight("wte.weight"))
    kernels_->matmulDx(launchKMajor(gemmGrid(BT, C, KM, KN)), dA(a.logits, logitsSize), *wteT, dA(a.lnfOut, btc),
                       BT, Vp, C, KM, KN, KK, groupM());
  else
    kernels_->matmul(launchLinear(gemmGrid(BT, C, BM, BN)), dA(a.logits, logitsSize), P("wte.weight"),
                     dA(a.lnfOut, btc), BT, C, Vp, BM, BN, BK, groupM());
  const int wteBN = tiles_.head_dw_bn ? tiles_.head_dw_bn : dwBlockN(Vp, C, BM, BN);
  kernels_->matmulDw(launchDw({uint32_t(cdiv(C, wteBN)), uint32_t(cdiv(Vp, BM))}), dA(a.logits, logitsSize),
                     A(a.lnfOut, btc), G("wte.weight"), BT, C, Vp, accumulate, BM, wteBN, BK);
  headLabel.reset();
  const int64_t last = a.layers.back().residual3;
  // ln_f's input is the last block's output: the gradient of its c_proj.
  layernormBwd(dA(a.lnfOut, btc), last, a.lnfMean, a.lnfRstd, std::nullopt, dA(last, btc), "ln_f",
               fmt::format("h.{}.mlp.c_proj", c.n_layer - 1));

  const float scale = 1.0f / std::sqrt(float(D));
  for (int l = c.n_layer - 1; l >= 0; --l) {
    const Activations::Layer &L = a.layers[size_t(l)];
    const std::string h = fmt::format("h.{}.", l);
    const int64_t in = l == 0 ? a.encoded : a.layers[size_t(l) - 1].residual3;
    // residual3 = residual2 + mlp(ln2(residual2)).
    // fch = gelu(fchPre): c_proj's dx is fchPre's gradient (GELU's backward
    // in its epilogue), with c_fc's bias partials; c_proj's bias was summed
    // by the LayerNorm backward that wrote dy (ln_f's, or the next block's
    // ln_1).
    linearBwd(dA(L.residual3, btc), A(L.fch, 4 * btc), dA(L.fchPre, 4 * btc), h + "mlp.c_proj", C, 4 * C,
              A(L.fchPre, 4 * btc), std::nullopt);
    linearBwd(dA(L.fchPre, 4 * btc), A(L.ln2, btc), dA(L.ln2, btc), h + "mlp.c_fc", 4 * C, C, std::nullopt,
              Partials{geluPartials, dxBlocks});
    // residual3 = residual2 + mlp(ln2(residual2)): residual2's gradient is
    // residual3's plus ln_2's input gradient, in one kernel.
    layernormBwd(dA(L.ln2, btc), L.residual2, L.ln2Mean, L.ln2Rstd, dA(L.residual3, btc), dA(L.residual2, btc),
                 h + "ln_2", h + "attn.c_proj");
    // residual2 = in + attn(ln1(in)).
    linearBwd(dA(L.residual2, btc), A(L.atty, btc), dA(L.atty, btc), h + "attn.c_proj", C, C, std::nullopt,
              std::nullopt);
    const int64_t bht = int64_t(B) * H * T;
    kernels_->attentionDelta(launch({uint32_t(cdiv(T, step)), uint32_t(B * H)}), A(L.atty, btc),
                             dA(L.atty, btc), dS(a.delta, bht), H, T, D, step);
    // dq, dk and dv with their column sums' partials (c_attn's bias).
    const Arg qkvPartials = columnScratch_.view(0, int64_t(attnBlocks) * 3 * C);
    kernels_->attentionDkdv(attentionBackwardLaunch({uint32_t(cdiv(T, own)), uint32_t(B * H)}), A(L.qkv, 3 * btc),
                            dA(L.atty, btc), S(L.lse, bht), dS(a.delta, bht), dA(L.qkv, 3 * btc), 0, C, 2 * C,
                            3 * C, H, T, scale, D, step, own, BT, qkvPartials, true);
    kernels_->attentionDq(attentionBackwardLaunch({uint32_t(cdiv(T, own)), uint32_t(B * H)}), A(L.qkv, 3 * btc),
                          dA(L.atty, btc), S(L.lse, bht), dS(a.delta, bht), dA(L.qkv, 3 * btc), 0, C, 2 * C,
                          3 * C, H, T, scale, D, own, step, BT, qkvPartials, true);
    linearBwd(dA(L.qkv, 3 * btc), A(L.ln1, btc), dA(L.ln1, btc), h + "attn.c_attn", 3 * C, C, std::nullopt,
              Partials{0, attnBlocks});
    if (side) {
      blockWeightGradients_[size_t(l % 2)]->record(side->handle());
      if (l > 0 && l + 1 < c.n_layer) // block l - 1's gradients are block l + 1's buffer
        blockWeightGradients_[size_t((l + 1) % 2)]->make_wait(0);
    }
    // in's gradient: residual2's plus ln_1's input gradient - below the
    // first block the embeddings' (no projection bias to sum for).
    layernormBwd(dA(L.ln1, btc), in, L.ln1Mean, L.ln1Rstd, dA(L.residual2, btc), dA(in, btc), h + "ln_1",
                 l > 0 ? std::optional(fmt::format("h.{}.mlp.c_proj", l - 1)) : std::nullopt);
  }
  // Embeddings: wte (also the LM head's, accumulated above) and wpe.
  kernels_->embeddingTokens(launch({uint32_t(BT)}), tokArg, dA(a.encoded, btc), G("wte.weight"), C, lnBlock);
  kernels_->embeddingPositions(launch({uint32_t(T), uint32_t(cdiv(C, colBlock))}), dA(a.encoded, btc),
                               G("wpe.weight"), B, T, C, accumulate || T < c.n_ctx, colBlock);
  gradientsPendingZero_ = false;
}

} // namespace tegula::gpt
