// stream_k.h - stream-K GEMM schedules in Tegula's tile language.
//
// Stream-K (Osama, Merrill, Cecka, Garland, Owens: "Stream-K: Work-centric
// Parallel Decomposition for Dense Matrix Multiplication on the GPU", 2023)
// lays a GEMM's output tiles, each `steps` K steps long, end to end as one
// sequence of work units and gives each program (one per SM) an equal run of
// it. No SM idles through a last, partial wave of tiles - 512 tiles on 132
// SMs are 3.88 waves of work, not 4 - and a GEMM with fewer tiles than SMs
// (a weight gradient's 36 tiles, each thousands of rows long) keeps every SM
// busy. Where there are two waves or more, all but the last one or two run
// whole tiles first (data-parallel), which keeps L2 reuse as a persistent
// GEMM has it.
//
// A tile whose steps span several programs is finished by the last of them
// to get there: each writes its partial block to a workspace and counts
// itself in the tile's arrival counter; the one whose arrival completes the
// count adds every partial block in program order - the same bits whichever
// program arrives last - and runs the epilogue. The tile's first contributor,
// usually the last there, looks at the count first and, with every other
// share in, finishes from its registers without parking its block. No
// program waits for another, so any grid is correct, co-resident or not.
#pragma once

#include "examples/kernels.h"

namespace tegula::examples {

/// The workspace of a stream-K launch: `partials` holds 2 * programs f32
/// blocks of BM x BN (a program's first and last tiles can be partial),
/// `arrivals` one i32 per output tile. Zero the counters once: a launch
/// leaves every one of them zero again.
inline int64_t streamKPartialFloats(int64_t programs, int BM, int BN) { return 2 * programs * BM * BN; }

/// The program whose run of work units contains unit u, of `total` units
/// split as program p taking [p total / P, (p + 1) total / P). In i32 (a
/// 64-bit division is a long subroutine, its registers beside a 128 x 256
/// accumulator spilled): total * P < 2^31.
inline tl::tensor streamKOwner(const tl::tensor &u, const tl::tensor &total, const tl::tensor &programs) {
  return ((u + 1) * programs - 1) / total;
}

/// The first unit of program p's run.
inline tl::tensor streamKBegin(const tl::tensor &p, const tl::tensor &total, const tl::tensor &programs) {
  return p * total / programs;
}

/// Runs this program's share of a stream-K GEMM over tiles_m x tiles_n
/// output tiles of BM x BN (in groupedTile's order), each `steps` K steps
/// long (tiles_m * tiles_n * steps * programs < 2^31: 16M units on 132 SMs):
///   product(m0, n0, first, end) -> the f32 [BM, BN] sum over K steps
///                                  [first, end) of the tile at (m0, n0);
///   epilogue(m0, n0, acc, done) -> stores the finished tile acc where the
///                                  scalar bool `done` holds (this program
///                                  completes the tile), nothing elsewhere.
/// With at least two waves of tiles, all but the last one or two waves run
/// whole first, data-parallel - wave w's tile w P + p for program p, so a
/// wave's programs step through K together and share their operand blocks
/// in L2 - and stream-K evens out the P to 2P tiles left (CUTLASS's
/// "data-parallel + stream-K"); with fewer, every tile is stream-K's.
template <class Product, class Epilogue>
void forEachStreamKTile(const tl::tensor &tiles_m, const tl::tensor &tiles_n, const tl::tensor &k_steps, int BM,
                        int BN, int GROUP_M, tl::ptr<float> partials, tl::ptr<int32_t> arrivals, Product product,
                        Epilogue epilogue) {
  // K = 0: one step, past the end (its loads read zeros), so C = 0.
  tl::tensor steps = tl::maximum(k_steps, 1);
  tl::tensor programs = tl::num_programs(0), p = tl::program_id(0);
  tl::tensor tiles = tiles_m * tiles_n;
  tl::tensor dp_waves = tl::maximum(tiles / programs - 1, 0), dp_tiles = dp_waves * programs;
  // The stream-K tiles' units, numbered from the first stream-K tile.
  tl::tensor total = (tiles - dp_tiles) * steps;
  tl::tensor begin = streamKBegin(p, total, programs), end = streamKBegin(p + 1, total, programs);
  tl::tensor first_sk = begin / steps;
  tl::tensor offs = tl::arange(0, BM).expand_dims(1) * BN + tl::arange(0, BN).expand_dims(0);
  tl::tensor block = offs >= 0; // every element of a block
  for (auto j : tl::range(0, dp_waves + (end + (steps - 1)) / steps - first_sk, 1)) {
    tl::tensor dp = j < dp_waves;
    tl::tensor sk_tile = first_sk + (j - dp_waves), tile_begin = sk_tile * steps;
    tl::tensor t = tl::where(dp, p + j * programs, dp_tiles + sk_tile);
    tl::tensor first = tl::where(dp, 0, tl::maximum(begin, tile_begin) - tile_begin);
    tl::tensor last = tl::where(dp, steps, tl::minimum(end, tile_begin + steps) - tile_begin);
    auto [tile_m, tile_n] = groupedTile(t, tiles_m, tiles_n * GROUP_M, GROUP_M);
    tl::tensor m0 = tile_m * BM, n0 = tile_n * BN;
    tl::tensor acc = product(m0, n0, first, last);

    // The tile's contributors (none to read for a data-parallel tile).
    tl::tensor whole = (first == 0) & (last == steps);
    tl::tensor c0 = streamKOwner(tile_begin, total, programs);
    tl::tensor c1 = tl::where(dp, c0 - 1, streamKOwner(tile_begin + (steps - 1), total, programs));
    // The tile's first contributor does its share at the end of its run,
    // the others theirs at the start of theirs: it is nearly always the
    // last to arrive. It looks first (an acquiring read of the counter):
    // with every other share in, it neither parks its block nor reads it
    // back - a BM x BN f32 block less written and read at the kernel's end.
    tl::tensor leads = !whole & (p == c0);
    tl::tensor seen = tl::atomic_add(arrivals + t, 0, leads, tl::memory_order::acquire);
    tl::tensor sure = leads & (seen == c1 - c0);
    // Otherwise park it in this program's slot (0: the tile its run starts
    // in, 1: its last) and arrive; the last arrival adds them all.
    tl::tensor parks = !whole & !sure;
    tl::tensor slot = p * 2 + (sk_tile != first_sk).to(tl::i32);
    tl::store(partials + slot * (BM * BN) + offs, acc, block & parks);
    tl::tensor arrived = tl::atomic_add(arrivals + t, 1, parks, tl::memory_order::acq_rel);
    tl::tensor finishes = sure | (parks & (arrived == c1 - c0));
    // In program order, whoever finishes: the first contributor's block
    // from its registers when it finishes, else from its slot - added to 0
    // either way, so a -0 turns +0 alike. A whole tile keeps its sum (a
    // masked-off load adds zeros); only one [BM, BN] accumulator stays live.
    tl::tensor own = finishes & (p == c0);
    tl::tensor sum = tl::where(whole, acc, tl::where(own, acc, 0.0f) + 0.0f);
    for (auto c : tl::range(c0 + own.to(tl::i32), c1 + 1, 1, sum)) {
      tl::tensor c_slot = c * 2 + (sk_tile != streamKBegin(c, total, programs) / steps).to(tl::i32);
      sum = sum + tl::load(partials + c_slot * (BM * BN) + offs, block & finishes, 0.0f);
    }
    tl::store(arrivals + t, 0, finishes); // ready for the next launch
    epilogue(m0, n0, sum, whole | finishes);
  }
}

namespace detail {
/// A stream-K GEMM through tensor descriptors: `bBlock(k, n0)` is B's
/// [BK, BN] block (as the dot takes it) at K step k, column n0; C's blocks
/// leave by TMA store, a program that does not finish a tile storing past
/// the last row, where nothing is written.
template <class BBlock>
void streamKDescriptorGemm(const tl::tensor_descriptor &a_desc, const tl::tensor_descriptor &c_desc, BBlock bBlock,
                           tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K, int BM, int BN,
                           int BK, int GROUP_M, tl::ptr<float> partials, tl::ptr<int32_t> arrivals,
                           tl::precision P) {
  tl::tensor tiles_m = (M + (BM - 1)) / BM, tiles_n = (N + (BN - 1)) / BN, steps = (K + (BK - 1)) / BK;
  forEachStreamKTile(
      tiles_m, tiles_n, steps, BM, BN, GROUP_M, partials, arrivals,
      [&](const tl::tensor &m0, const tl::tensor &n0, const tl::tensor &first, const tl::tensor &end) {
        tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
        for (auto k : tl::range(first * BK, end * BK, BK, acc))
          acc = tl::dot(a_desc.load({m0, k}), bBlock(k, n0), acc, P);
        return acc;
      },
      [&](const tl::tensor &m0, const tl::tensor &n0, const tl::tensor &acc, const tl::tensor &done) {
        c_desc.store({tl::where(done, m0, M), n0}, acc);
      });
}
} // namespace detail

/// C = A B (bf16/f16 in, f32 accumulation, C in T) as a stream-K GEMM, A
/// [M, K], B [K, N] and C through tensor descriptors (TMA rings feeding
/// wgmma on sm_90a, warp specialised on request; C leaves through TMA
/// stores). Launch one program per SM; `partials` and `arrivals` as
/// streamKPartialFloats says.
template <class T>
void matmul_stream_k(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::ptr<float> partials, tl::ptr<int32_t> arrivals,
                     tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                     tl::constant<int> BN, tl::constant<int> BK, tl::constant<int> GROUP_M) {
  auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  detail::streamKDescriptorGemm(
      tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK}), tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN}),
      [&](const tl::tensor &k, const tl::tensor &n0) { return b_desc.load({k, n0}); }, M, N, K, BM.value,
      BN.value, BK.value, GROUP_M.value, partials, arrivals, tl::precision::ieee);
}

/// matmul_tn (C = A B^T, A [M, K] and B [N, K] K-major: the fp8 GEMMs'
/// layout) as a stream-K GEMM, f32 accumulation (fp8, or f32 at tf32 on
/// wgmma), everything through tensor descriptors as matmul_stream_k.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_tn_stream_k(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<float> c, tl::ptr<float> partials,
                        tl::ptr<int32_t> arrivals, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                        tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK,
                        tl::constant<int> GROUP_M) {
  auto b_desc = tl::make_tensor_descriptor(b, {N, K}, {K, 1}, {BN, BK});
  detail::streamKDescriptorGemm(
      tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK}), tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN}),
      [&](const tl::tensor &k, const tl::tensor &n0) { return b_desc.load({n0, k}).trans(); }, M, N, K, BM.value,
      BN.value, BK.value, GROUP_M.value, partials, arrivals, P);
}

} // namespace tegula::examples
