// gpt2_linear.cpp - GPT-2 124M's GEMMs (models/gpt/Linear.h) in bf16 at the
// training shape (B T = 8192 rows, C = 768, vocabulary padded to 50304),
// launched as GptModel launches them on this device (its tiles, warps,
// stages, warp specialisation, persistent grids, stream-K weight gradients),
// each against cuBLAS at the same shape and layout on the same buffers:
// the forward with its bias (and GELU: the epilogue's cost shows against
// the plain GEMM; the GELU GEMMs also with Tiles::gelu_ping_pong flipped,
// rows " pp" / " no pp"), the input gradients (c_proj's with GELU's backward fused),
// the weight gradients (x^T dy, f32 out) stream-K and one program a tile,
// the tied LM head both ways and wte's gradient. gpt2-train's profile gives
// the same kernels' times inside a step; this gives the ratio to cuBLAS per
// GEMM, and `--tiles` (GptModel::Tiles::with) tries other tiles. The plain
// GEMMs are checked against cuBLAS (relative error); the fused ones are
// checked by the GPT tests. Without a driver it prints "skipped: ..." and
// exits 0.
//
//   gpt2-linear [--iters 20] [--tiles name=value,...] [--no-cublas]
//
// --no-cublas: Tegula's rows only (the fake driver's test: a real cuBLAS
// cannot run on its host-memory buffers).
#include "BenchArgs.h"
#include "GpuMain.h"
#include "CublasLibrary.h"
#include "examples/stream_k.h"
#include "models/gpt/Linear.h"
#include "models/gpt/Model.h"
#include "tegula/device.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

using namespace tegula;
using tegula::bench::Cublas;
namespace k = tegula::gpt::kernels;

namespace {

/// ||a - b|| / ||b|| over two device buffers of T; infinite with a NaN.
template <class T> double relDiff(const DeviceBuffer &a, const DeviceBuffer &b) {
  std::vector<T> x = a.to_host<T>(), y = b.to_host<T>();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(float(x[i])) - double(float(y[i]));
    if (std::isnan(d))
      return INFINITY;
    num += d * d, den += double(float(y[i])) * double(float(y[i]));
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

DeviceBuffer randomBf16(int64_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<bfloat16> h(static_cast<size_t>(n));
  for (bfloat16 &v : h)
    v = bfloat16(dist(rng));
  return DeviceBuffer::from(h);
}

/// cuBLAS's column-major view of the row-major GEMMs below (bf16 in, f32
/// compute): C[M,N] = A[M,K] op(B) with B [K,N] or, `bT`, [N,K]; or
/// `aT`: C[M,N] = A[K,M]^T B[K,N]. `out`: C's type.
void cublasGemm(const Cublas &cublas, bool aT, bool bT, cudaDataType out, const DeviceBuffer &a,
                const DeviceBuffer &b, DeviceBuffer &c, int M, int N, int K) {
  const float one = 1, zero = 0;
  const cublasStatus_t s = cublas.gemmEx(
      cublas.handle, bT ? CUBLAS_OP_T : CUBLAS_OP_N, aT ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &one,
      reinterpret_cast<const void *>(b.device_ptr()), CUDA_R_16BF, bT ? K : N,
      reinterpret_cast<const void *>(a.device_ptr()), CUDA_R_16BF, aT ? M : K, &zero,
      reinterpret_cast<void *>(c.device_ptr()), out, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(fmt::format("cublasGemmEx failed: status {}", int(s)));
}

struct Bench {
  int iters;
  const Cublas *cublas; // null: Tegula's rows only
  /// One GEMM: Tegula's `launch` (its output `got`, checked against
  /// cuBLAS's `want` where `checked`) and cuBLAS's `reference`, timed in
  /// the same run; one row with both rates and their ratio.
  void run(const std::string &name, double flops, const std::function<void()> &launch,
           const std::function<void()> &reference, const std::function<double()> &error) {
    try {
      launch();
      const double ms = time_ms(launch, iters).median;
      std::string check = error ? "unchecked (no cuBLAS)" : "fused, checked by the GPT tests";
      double refMs = NAN;
      if (cublas) {
        reference();
        refMs = time_ms(reference, iters).median;
        if (error) {
          const double e = error();
          check = fmt::format("rel err {:.1e}{}", e, e < 2e-2 ? "" : " FAILED");
        }
      }
      // Ends with a number: gpu-check.sh's summary shows such lines.
      fmt::print("gpt2_linear_{:<34} {:>8.3f} ms {:>6.1f} TFLOP/s  cuBLAS {:>8.3f} ms {:>6.1f}  {}  ratio {:.3f}\n",
                 name, ms, flops / ms / 1e9, refMs, flops / refMs / 1e9, check, refMs / ms);
    } catch (const Error &e) {
      std::string what = e.what();
      fmt::print("gpt2_linear_{:<34} not run: {}\n", name, what.substr(0, what.find('\n')));
    }
    std::fflush(stdout);
  }
};

/// `widths`, and a Tiles field's width (0: none) where it is not among them.
std::vector<int> alsoWidth(std::vector<int> widths, int field) {
  if (field && std::find(widths.begin(), widths.end(), field) == widths.end())
    widths.push_back(field);
  return widths;
}

void runLinear(const gpt::GptModel::Tiles &tiles, int iters, const Cublas *cublas) {
  using T = bfloat16;
  const int BT = 8192, C = 768, Vp = 50304;
  const int sms = device_info().multiprocessors;
  std::mt19937 rng(3);
  Bench bench{iters, cublas}; // the references below run only where there is one
  auto options = [&](Grid grid, int warps, int stages, bool pingPong = false) {
    return LaunchOptions{.grid = grid, .num_warps = warps, .num_stages = stages, .backend = Backend::GPU,
                         .warp_specialize = true, .ping_pong = pingPong};
  };
  // Persistent (group_m) or one program a tile, as GptModel::gemmGrid.
  auto gemmGrid = [&](int rows, int cols, int bm, int bn, int programsPerSm = 1) {
    const int64_t tiles_ = cdiv(rows, bm) * cdiv(cols, bn);
    return tiles.group_m ? Grid{uint32_t(std::min<int64_t>(tiles_, int64_t(sms) * programsPerSm))}
                         : Grid{uint32_t(cdiv(rows, bm)), uint32_t(cdiv(cols, bn))};
  };
  // The GELU GEMMs also run with Tiles::gelu_ping_pong the other way round
  // (rows " pp" / " no pp"), GptModel::launchGelu's launch either way.
  const std::array<gpt::GptModel::Tiles, 2> geluTiles = {
      tiles, tiles.with(tiles.gelu_ping_pong ? "gelu_ping_pong=0" : "gelu_ping_pong=1")};
  auto geluLaunch = [&](const gpt::GptModel::Tiles &t, int rows, int cols, const std::array<int, 5> &tile) {
    return options(gemmGrid(rows, cols, tile[0], tile[1], t.gelu_ping_pong ? 2 : 1), tile[3], tile[4],
                   t.gelu_ping_pong);
  };
  auto geluSuffix = [&](const gpt::GptModel::Tiles &t) {
    return &t == &geluTiles[0] ? std::string() : t.gelu_ping_pong ? " pp" : " no pp";
  };
  const int G = tiles.group_m, BM = tiles.bm, BN = tiles.bn, BK = tiles.bk;
  const auto [KM, KN, KK, KW, KS] = tiles.kmajor();
  const auto [GM, GN, GK, GW, GS] = tiles.geluDx();
  const auto [HM, HN, HK, HW, HS] = tiles.head();
  const int dwWarps = tiles.dw_warps ? tiles.dw_warps : tiles.linear_warps;
  fmt::print("tiles: linear {}x{}x{} w{} s{}, k-major {}x{}x{} w{} s{}, GELU dx {}x{}x{} w{} s{}, head {}x{}x{} "
             "w{} s{}, dW w{}{}, group_m {}, GELU ping-pong {}\n",
             BM, BN, BK, tiles.linear_warps, tiles.linear_stages, KM, KN, KK, KW, KS, GM, GN, GK, GW, GS, HM, HN,
             HK, HW, HS, dwWarps, tiles.dw_stream_k ? " (stream-K)" : "", G, tiles.gelu_ping_pong ? "on" : "off");

  auto fwd = kernel("matmul_bias_fwd", k::matmul_bias_fwd_tma<T>,
                    {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"});
  auto dx = kernel("matmul_bwd_dx", k::matmul_bwd_dx_tma<T>, {"dy", "w", "dx", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"});
  auto dxGelu = kernel("matmul_bwd_dx_gelu", k::matmul_bwd_dx_gelu_tma<T>,
                       {"dy", "w", "pre", "dpre", "partial", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"});
  auto dwStreamK = kernel("matmul_bwd_dw_stream_k", k::matmul_bwd_dw_stream_k_tma<T>,
                          {"x", "dy", "dw", "partials", "arrivals", "M", "N", "K", "accumulate", "BK", "BN", "BM"});
  auto dwTiles = kernel("matmul_bwd_dw", k::matmul_bwd_dw_tma<T>,
                        {"x", "dy", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"});
  auto plain = kernel("matmul", k::matmul_tma<T>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});

  // The block's four linear layers: (name, in K, out N, GELU after).
  struct Layer {
    const char *name;
    int K, N;
    bool gelu;
  };
  const std::vector<Layer> layers = {
      {"attn.c_attn", C, 3 * C, false}, {"attn.c_proj", C, C, false}, {"mlp.c_fc", C, 4 * C, true},
      {"mlp.c_proj", 4 * C, C, false}};
  // Stream-K's workspace for the widest tile timed (Tiles::dw_bn's 256 too).
  const int dwWidest = std::max({BN, 2 * BN, tiles.dw_bn});
  DeviceBuffer streamKPartials(size_t(examples::streamKPartialFloats(sms, BM, dwWidest)), DType::f32);
  for (const Layer &l : layers) {
    const int K = l.K, N = l.N;
    const double flops = 2.0 * BT * N * K;
    DeviceBuffer x = randomBf16(int64_t(BT) * K, rng), w = randomBf16(int64_t(K) * N, rng),
                 b = randomBf16(N, rng), dy = randomBf16(int64_t(BT) * N, rng), pre = randomBf16(int64_t(BT) * K, rng);
    DeviceBuffer y(size_t(BT) * N, DType::bf16), yPre(size_t(BT) * N, DType::bf16), ref(size_t(BT) * N, DType::bf16);
    DeviceBuffer dxOut(size_t(BT) * K, DType::bf16), dxRef(size_t(BT) * K, DType::bf16);
    DeviceBuffer dw(size_t(K) * N, DType::f32), dwRef(size_t(K) * N, DType::f32);
    const std::string n = l.name;
    // Forward: y = x w + b (GELU'd, the sum kept in pre), against cuBLAS's x w.
    if (!l.gelu)
      bench.run(n + " fwd +bias", flops,
                [&] {
                  fwd(options(gemmGrid(BT, N, BM, BN), tiles.linear_warps, tiles.linear_stages), x, w, b, y, yPre,
                      BT, N, K, false, BM, BN, BK, G);
                },
                [&] { cublasGemm(*cublas, false, false, CUDA_R_16BF, x, w, ref, BT, N, K); }, nullptr);
    for (const gpt::GptModel::Tiles &t : geluTiles) {
      if (!l.gelu)
        break;
      const std::array<int, 5> tile = t.geluForward();
      bench.run(n + " fwd +bias+gelu" + geluSuffix(t), flops,
                [&] { fwd(geluLaunch(t, BT, N, tile), x, w, b, y, yPre, BT, N, K, true, BM, BN, BK, G); },
                [&] { cublasGemm(*cublas, false, false, CUDA_R_16BF, x, w, ref, BT, N, K); }, nullptr);
    }
    // The same GEMM without the epilogue, checked.
    bench.run(n + " fwd plain", flops,
              [&] { plain(options(gemmGrid(BT, N, BM, BN), tiles.linear_warps, tiles.linear_stages), x, w, y, BT, N, K, BM, BN, BK, G); },
              [&] { cublasGemm(*cublas, false, false, CUDA_R_16BF, x, w, ref, BT, N, K); },
              [&] { return relDiff<T>(y, ref); });
    // Input gradient dx = dy w^T (c_proj: GELU's backward fused, pre's gradient).
    for (const gpt::GptModel::Tiles &t : geluTiles) {
      if (n != "mlp.c_proj")
        break;
      const std::array<int, 5> tile = t.geluDx();
      DeviceBuffer partial(size_t(cdiv(BT, tile[0])) * K, DType::f32);
      bench.run(n + " dx +gelu bwd" + geluSuffix(t), flops,
                [&] {
                  dxGelu(geluLaunch(t, BT, K, tile), dy, w, pre, dxOut, partial, BT, N, K, tile[0], tile[1], tile[2],
                         G);
                },
                [&] { cublasGemm(*cublas, false, true, CUDA_R_16BF, dy, w, dxRef, BT, K, N); }, nullptr);
    }
    bench.run(n + " dx", flops,
              [&] { dx(options(gemmGrid(BT, K, KM, KN), KW, KS), dy, w, dxOut, BT, N, K, KM, KN, KK, G); },
              [&] { cublasGemm(*cublas, false, true, CUDA_R_16BF, dy, w, dxRef, BT, K, N); },
              [&] { return relDiff<T>(dxOut, dxRef); });
    // Weight gradient dw = x^T dy (f32), stream-K (at the linear layers' N
    // block, twice it - the tuner's dw_bn=256 - and Tiles::dw_bn) and one
    // program a tile.
    auto reference = [&] { cublasGemm(*cublas, true, false, CUDA_R_32F, x, dy, dwRef, K, N, BT); };
    for (int width : alsoWidth({BN, 2 * BN}, tiles.dw_bn)) {
      const int64_t units = cdiv(K, BM) * cdiv(N, width) * cdiv(BT, BK);
      const int programs = int(std::min<int64_t>(sms, units));
      DeviceBuffer arrivals(size_t(cdiv(K, BM) * cdiv(N, width)), DType::i32);
      arrivals.fill_bytes(0);
      bench.run(n + (width == BN ? std::string(" dW stream-K") : fmt::format(" dW stream-K {}x{}", BM, width)), flops,
                [&] {
                  dwStreamK(options({uint32_t(programs)}, dwWarps, tiles.linear_stages), x, dy, dw, streamKPartials,
                            arrivals, BT, N, K, false, BM, width, BK);
                },
                reference, [&] { return relDiff<float>(dw, dwRef); });
    }
    for (int width : alsoWidth({BN, BN / 2}, tiles.dw_bn))
      bench.run(n + fmt::format(" dW tiles {}x{}", BM, width), flops,
                [&] {
                  dwTiles(options({uint32_t(cdiv(N, width)), uint32_t(cdiv(K, BM))}, dwWarps, tiles.linear_stages), x,
                          dy, dw, BT, N, K, false, BM, width, BK);
                },
                reference, [&] { return relDiff<float>(dw, dwRef); });
  }
  // The tied LM head: logits = lnf wte^T, dlnf = dlogits wte, dwte = dlogits^T lnf.
  {
    const double flops = 2.0 * BT * double(Vp) * C;
    DeviceBuffer lnf = randomBf16(int64_t(BT) * C, rng), wte = randomBf16(int64_t(Vp) * C, rng);
    DeviceBuffer logits(size_t(BT) * Vp, DType::bf16), logitsRef(size_t(BT) * Vp, DType::bf16);
    bench.run("lm_head fwd", flops,
              [&] { dx(options(gemmGrid(BT, Vp, HM, HN), HW, HS), lnf, wte, logits, BT, C, Vp, HM, HN, HK, G); },
              [&] { cublasGemm(*cublas, false, true, CUDA_R_16BF, lnf, wte, logitsRef, BT, Vp, C); },
              [&] { return relDiff<T>(logits, logitsRef); });
    DeviceBuffer dlnf(size_t(BT) * C, DType::bf16), dlnfRef(size_t(BT) * C, DType::bf16);
    bench.run("lm_head dx", flops,
              [&] { plain(options(gemmGrid(BT, C, BM, BN), tiles.linear_warps, tiles.linear_stages), logits, wte, dlnf, BT, C, Vp, BM, BN, BK, G); },
              [&] { cublasGemm(*cublas, false, false, CUDA_R_16BF, logits, wte, dlnfRef, BT, C, Vp); },
              [&] { return relDiff<T>(dlnf, dlnfRef); });
    // Full width (GptModel::dwBlockN's choice for 2358 tiles on 108-132
    // SMs), twice that (the tuner's head_dw_bn=256: dlogits read half as
    // often), and Tiles::head_dw_bn where --tiles sets another.
    DeviceBuffer dwte(size_t(Vp) * C, DType::f32), dwteRef(size_t(Vp) * C, DType::f32);
    for (int width : alsoWidth({BN, 2 * BN}, tiles.head_dw_bn))
      bench.run(fmt::format("wte dW tiles {}x{}", BM, width), flops,
                [&] {
                  dwTiles(options({uint32_t(cdiv(C, width)), uint32_t(cdiv(Vp, BM))}, dwWarps, tiles.linear_stages),
                          logits, lnf, dwte, BT, C, Vp, false, BM, width, BK);
                },
                [&] { cublasGemm(*cublas, true, false, CUDA_R_32F, logits, lnf, dwteRef, Vp, C, BT); },
                [&] { return relDiff<float>(dwte, dwteRef); });
  }
}

} // namespace

int main(int argc, char **argv) {
  int iters = 20;
  std::string overrides;
  bool noCublas = false;
  if (auto status = bench::Args("gpt2-linear", "GPT-2 124M's bf16 GEMMs as GptModel launches them, each against "
                                               "cuBLAS at the same shape and layout")
                        .option("iters", iters, "timed runs a GEMM (the median counts)")
                        .option("tiles", overrides, "GptModel::Tiles overrides, name=value,...")
                        .flag("no-cublas", noCublas, "Tegula's rows only")
                        .parse(argc, argv))
    return *status;
  const bool withCublas = !noCublas;
  try { // a misspelt field fails here, before the GPU is touched
    (void)gpt::GptModel::gpu_tiles(DType::bf16).with(overrides);
  } catch (const Error &e) {
    fmt::print(stderr, "gpt2-linear: --tiles: {}\n", e.what());
    return 2;
  }
  fmt::print("# gpt2-linear: GPT-2 124M's bf16 GEMMs (B T 8192) as GptModel launches them, vs cuBLAS\n");
  return bench::runOnGpu([&](const DeviceInfo &info) {
    fmt::print("device: {} ({}), driver {}; median of {} (CUDA events); TFLOP/s = 2 M N K / time\n", info.name,
               info.chip, info.driver_version, iters);
    gpt::GptModel::Tiles tiles = gpt::GptModel::gpu_tiles(DType::bf16, info.chip);
    if (!overrides.empty())
      tiles = tiles.with(overrides);
    std::optional<Cublas> cublas;
    if (withCublas)
      cublas.emplace();
    if (!cublas || !cublas->handle)
      fmt::print("cuBLAS: {}: Tegula's rows only\n", cublas ? "not found (" + cublas->why + ")" : std::string("off"));
    runLinear(tiles, iters, cublas && cublas->handle ? &*cublas : nullptr);
  });
}
