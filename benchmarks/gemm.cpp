// gemm.cpp - Tegula's matmul (examples::matmul: bf16 / f16 in, f32
// accumulation on tensor cores, 16-bit out; and f32 at tf32 precision)
// against cuBLAS in the same process, on the same device buffers. cuBLAS is
// opened at run time (dlopen), like libcuda, so building needs neither a GPU
// nor cuBLAS. Tegula's output is checked against cuBLAS's (relative L2
// error); each shape runs a small list of tile configurations (BM, BN, BK,
// warps, stages) and reports the best, and every row also goes to a CSV
// ($TEGULA_BENCH_OUT/gemm.csv, else ./gemm.csv).
// Without a driver it prints "skipped: ..." and exits 0.
//
//   gemm [--shapes squares|gpt2|all] [--dtypes bf16,f16,tf32,tf32tn,fp8,i8] [--iters 10]
//        [--configs 'sk,pers s4']
//
// --configs (or TEGULA_GEMM_CONFIGS): only the configurations whose names
// contain one of the comma-separated strings, or all of its words ("pers ws"
// takes "... pers tma ws"): a short GPU call.
//
// fp8 (e4m3, Hopper only): examples::matmul_tn (A [M,K], B [N,K], f32 out)
// against cuBLASLt's fp8 matmul (the TN layout, f32 out). i8: the same TN
// kernel with i32 out, exact, against cuBLAS's int8 GEMM; tf32tn: the TN
// kernel at tf32 (f32 in and out) against cuBLAS's tf32 GEMM.
#include "BenchArgs.h"
#include "CublasLibrary.h"
#include "examples/kernels.h"
#include "examples/stream_k.h"
#include "tegula/device.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

using namespace tegula;
using tegula::bench::Cublas;
using tegula::bench::CublasLt;

namespace {

struct Config {
  int bm, bn, bk, warps, stages;
  bool mmaSync = false;    // on sm_90a: TEGULA_WGMMA=0, the mma.sync path for comparison
  bool persistent = false; // examples::matmul_persistent, one program per SM, GROUP_M = 8
  bool tma = false;        // examples::matmul_descriptors: TMA rings on sm_90a
                           // (with persistent: examples::matmul_persistent_descriptors)
  bool ws = false;         // with tma: warp specialised (a producer warpgroup + `warps` consumers)
  bool pp = false;         // with ws at 4 warps: ping-pong, two programs per CTA (persistent: 2 per SM)
  int cluster = 1;         // with persistent ws: thread-block clusters of this many CTAs multicasting B
                           // (examples::matmul_persistent_cluster / matmul_tn_persistent_cluster)
  bool streamK = false;    // with persistent: examples::matmul_stream_k (equal runs of tiles x K steps)
  std::string name() const {
    return fmt::format("{}x{}x{} w{} s{}{}{}{}{}{}{}", bm, bn, bk, warps, stages, mmaSync ? " mma" : "",
                       persistent ? " pers" : "", streamK ? " sk" : "", tma ? " tma" : "",
                       pp ? " pp" : ws ? " ws" : "", cluster > 1 ? fmt::format(" c{}", cluster) : "");
  }
};

/// --configs / TEGULA_GEMM_CONFIGS: the selectors a configuration's name
/// must match one of (none: every configuration runs). A selector matches a
/// name that contains it, or that has each of its words among its own: "pers
/// ws" takes "128x256x64 w8 s4 pers tma ws" too.
std::vector<std::string> selectedConfigs;
std::vector<std::string> wordsOf(const std::string &s) {
  std::vector<std::string> words;
  std::istringstream in(s);
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}
bool selected(const Config &c) {
  if (selectedConfigs.empty())
    return true;
  const std::string name = c.name();
  const std::vector<std::string> nameWords = wordsOf(name);
  return std::any_of(selectedConfigs.begin(), selectedConfigs.end(), [&](const std::string &s) {
    const std::vector<std::string> words = wordsOf(s);
    return name.find(s) != std::string::npos ||
           (!words.empty() && std::all_of(words.begin(), words.end(), [&](const std::string &w) {
             return std::find(nameWords.begin(), nameWords.end(), w) != nameWords.end();
           }));
  });
}

struct Shape {
  std::string name; // e.g. "4096^3", "gpt2 qkv"
  int M, N, K;
};

/// Square shapes, and GPT-2 (124M)'s projections at 8192 tokens (batch 8 x
/// 1024): qkv 768 -> 2304, mlp up 768 -> 3072, mlp down 3072 -> 768, logits
/// 768 -> 50304 (the padded vocabulary).
std::vector<Shape> shapesFor(const std::string &which) {
  std::vector<Shape> out;
  if (which == "squares" || which == "all")
    for (int n : {1024, 2048, 4096, 8192})
      out.push_back({fmt::format("{}^3", n), n, n, n});
  if (which == "gpt2" || which == "all")
    for (auto [name, n, k] : {std::tuple{"gpt2 qkv", 2304, 768}, {"gpt2 mlp up", 3072, 768},
                              {"gpt2 mlp down", 768, 3072}, {"gpt2 logits", 50304, 768}})
      out.push_back({name, 8192, n, k});
  return out;
}

template <class T> double relError(const std::vector<T> &x, const std::vector<T> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double d = double(float(x[i])) - double(float(ref[i]));
    if (std::isnan(d))
      return NAN;
    num += d * d, den += double(float(ref[i])) * double(float(ref[i]));
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

/// A clustered persistent GEMM's grid, into `opts.grid.x` (the SMs, or
/// the tiles if fewer): whole clusters, no more programs than fit on the GPU
/// at once (`resident()`, Kernel::max_resident_programs) - a cluster past
/// those would run after the others, a second wave for its tiles. False,
/// with a "not run" row, when the driver refuses the configuration.
template <class Resident>
bool fitClusterGrid(const Config &cfg, LaunchOptions &opts, const char *dtype, const Shape &shape,
                    Resident resident) {
  try {
    const int fits = resident();
    const uint32_t size = uint32_t(cfg.cluster);
    opts.grid.x = std::max<uint32_t>(std::min(opts.grid.x, uint32_t(fits)) / size, 1) * size;
    fmt::print("      {}: {} programs resident at once in clusters of {}, grid {}\n", cfg.name(), fits, size,
               opts.grid.x);
    return true;
  } catch (const Error &e) {
    fmt::print("{:<5} {:<14} {:<18} not run: {}\n", dtype, shape.name, cfg.name(), e.what());
    return false;
  }
}

/// One configuration of one shape: run `launch` once and check the output
/// (`error()`: relative error against the reference, NaN when there is
/// none), then time it; prints the row and writes it to the CSV. Returns
/// the median in ms, or NaN when it did not run or failed the check
/// (`failures` counts those).
template <class Launch, class Error_>
double measure(const char *dtype, const Shape &shape, const std::string &config, double flops,
               int iters, double tolerance, const char *reference, std::FILE *csv, int &failures,
               Launch launch, Error_ error) {
  std::string check = fmt::format("unchecked (no {})", reference);
  double err = NAN;
  try {
    launch();
    err = error();
    if (!std::isnan(err))
      check = fmt::format("rel err {:.1e}", err);
    if (!std::isnan(err) && !(err < tolerance)) {
      fmt::print("{:<5} {:<14} {:<18} FAILED: {} vs {}\n", dtype, shape.name, config, check, reference);
      std::fprintf(csv, "%s,%s,%d,%d,%d,%s,,,%.3g,FAILED\n", dtype, shape.name.c_str(), shape.M,
                   shape.N, shape.K, config.c_str(), err);
      ++failures;
      return NAN;
    }
  } catch (const Error &e) { // e.g. more shared memory than this GPU has
    std::string what = e.what();
    fmt::print("{:<5} {:<14} {:<18} not run: {}\n", dtype, shape.name, config, what.substr(0, what.find('\n')));
    return NAN;
  }
  double ms = time_ms(launch, iters).median;
  fmt::print("{:<5} {:<14} {:<18} {:>9.3f} ms {:>7.1f} TFLOP/s  {}\n", dtype, shape.name, config, ms,
             flops / ms / 1e9, check);
  std::fprintf(csv, "%s,%s,%d,%d,%d,%s,%.4f,%.2f,%.3g,\n", dtype, shape.name.c_str(), shape.M, shape.N,
               shape.K, config.c_str(), ms, flops / ms / 1e9, err);
  return ms;
}

/// The summary line of a shape (gpu-check.sh's summary shows it) and the
/// reference's CSV row.
void summarize(const char *dtype, const Shape &shape, const std::string &best, double bestMs,
               const char *reference, double refMs, double flops, std::FILE *csv) {
  std::string id = shape.name;
  for (char &ch : id)
    if (ch == ' ' || ch == '^')
      ch = '_';
  if (best.empty())
    fmt::print("{} {}: no configuration selected (--configs)\n", dtype, shape.name);
  else
    fmt::print("{}_gemm_{} best {} {:.1f} TFLOP/s, {} {:.1f} TFLOP/s, ratio {:.3f}\n", dtype, id, best,
             flops / bestMs / 1e9, reference, flops / refMs / 1e9, refMs / bestMs);
  std::fprintf(csv, "%s,%s,%d,%d,%d,%s,%.4f,%.2f,,\n", dtype, shape.name.c_str(), shape.M, shape.N,
               shape.K, reference, refMs, flops / refMs / 1e9);
  std::fflush(stdout);
  std::fflush(csv);
}

/// One dtype over every shape: `K` is the kernel, `T` its element type.
template <class T, tl::precision P>
int runDtype(const char *dtype, cudaDataType cublasType, bool fastTf32, const Cublas &cublas,
             const std::vector<Shape> &shapes, int iters, std::FILE *csv) {
  auto k = kernel(std::string("matmul_") + dtype, examples::matmul<T, P>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  // 16-bit: 128x128 and 128x256 tiles, 4 or 8 warps, 3-4 stages; tf32
  // operands are twice the bytes: smaller K steps.
  const bool wide = sizeof(T) == 2;
  std::vector<Config> configs =
      wide ? std::vector<Config>{{128, 128, 32, 4, 3}, {128, 128, 32, 8, 4}, {128, 256, 32, 8, 3},
                                 {128, 128, 64, 8, 3}, {64, 128, 32, 4, 4}}
           : std::vector<Config>{{128, 128, 16, 4, 3}, {128, 128, 16, 8, 4}, {64, 128, 16, 4, 4},
                                 {128, 128, 32, 8, 3}};
  // Hopper: 16-bit dots run on wgmma (docs/hopper.md). Its tiles (whole
  // warpgroups along M, 64-wide K steps), and the best mma.sync configs
  // again with wgmma off, so one run shows both paths (unless the caller
  // set TEGULA_WGMMA itself).
  const bool bothPaths = device_info().chip == "sm_90a" && !std::getenv("TEGULA_WGMMA");
  // tf32 with B row-major: on sm_90a wgmma through a K-major ring that
  // 4-byte copies fill (since 2026-11-27; tf32tn: both K-major through TMA),
  // and mma.sync - the path before - for comparison.
  if (bothPaths && !wide) {
    configs.push_back({128, 128, 32, 4, 4});
    for (Config c : {Config{128, 128, 16, 4, 3}, Config{64, 128, 16, 4, 4}}) {
      c.mmaSync = true;
      configs.push_back(c);
    }
  }
  if (bothPaths && wide) {
    for (Config c : {Config{128, 256, 64, 8, 3}, Config{256, 128, 64, 8, 3}, Config{128, 128, 64, 4, 4},
                     Config{128, 256, 64, 8, 4}})
      configs.push_back(c);
    // mma.sync: the H100 run of 2026-11-27 (benchmarks/results/
    // 2026-11-27-h100-80gb-hbm3/run1) tried eleven configs; 128x128x64 at 4
    // warps and 3 stages was the best at every size and GPT-2 shape
    // (0.50-0.58x cuBLAS), 128x128x32 w4 s4 next. The others (8 warps,
    // 128x256, 256x128, persistent) lost everywhere and are left out.
    for (Config c : {Config{128, 128, 64, 4, 3}, Config{128, 128, 32, 4, 4}}) {
      c.mmaSync = true;
      configs.push_back(c);
    }
    // Tensor descriptors: operands through TMA rings (docs/hopper.md), and
    // the persistent kernel with them.
    for (Config c : {Config{128, 128, 64, 4, 4}, Config{128, 256, 64, 8, 3}, Config{128, 256, 64, 8, 4}}) {
      c.tma = true;
      configs.push_back(c);
    }
    for (Config c : {Config{128, 256, 64, 8, 3}, Config{128, 128, 64, 4, 4}}) {
      c.tma = c.persistent = true;
      configs.push_back(c);
    }
    // Warp specialised: a producer warpgroup issues the TMA copies (in the
    // persistent kernel across tiles: the next tile's loads overlap this
    // one's epilogue).
    for (Config c : {Config{128, 256, 64, 8, 3}, Config{128, 256, 64, 8, 4}, Config{128, 128, 64, 4, 5}}) {
      c.tma = c.ws = true;
      configs.push_back(c);
    }
    // 128 x 128 at 8 warps: two consumer warpgroups of 64 rows (the w4 tile
    // is one warpgroup's 128 rows); 256 x 128 the transposed 128 x 256. All
    // 0 spills on sm_90a (168 registers), shared memory within 227 KiB.
    // 128x256 at 4 stages: its C block is staged two 128-byte column blocks
    // at a time (32 KiB, not 64: docs/hopper.md), so 4 stages fit beside it.
    for (Config c : {Config{128, 256, 64, 8, 3}, Config{128, 256, 64, 8, 4}, Config{128, 128, 64, 4, 4},
                     Config{128, 128, 64, 8, 4}, Config{128, 128, 64, 8, 5}, Config{256, 128, 64, 8, 3}}) {
      c.tma = c.ws = c.persistent = true;
      configs.push_back(c);
    }
    // Ping-pong: each CTA's two consumer warpgroups run their own tiles, one
    // storing its result while the other computes; their loops take turns
    // on one ring (stages x tile + 2 C blocks must fit in 227 KiB).
    for (Config c : {Config{128, 128, 64, 4, 4}, Config{128, 128, 32, 4, 6}}) {
      c.tma = c.ws = c.pp = true;
      configs.push_back(c);
      c.persistent = true;
      configs.push_back(c);
    }
    // Thread-block clusters of 2: the CTAs of a cluster compute vertically
    // adjacent tiles and fetch B's blocks once for both (TMA multicast, each
    // copying half of the rows): a third less L2 -> shared traffic at
    // 128x256 (not measured on a GPU yet).
    for (Config c : {Config{128, 256, 64, 8, 4}, Config{128, 128, 64, 8, 5}, Config{128, 128, 64, 4, 4}}) {
      c.tma = c.ws = c.persistent = true;
      c.cluster = 2;
      configs.push_back(c);
    }
    // Stream-K: every SM takes an equal run of the tiles' K steps, no last
    // partial wave (4096^3 at 128x256: 512 tiles, 3.88 waves on 132 SMs;
    // not measured on a GPU yet).
    for (Config c : {Config{128, 256, 64, 8, 4}, Config{128, 256, 64, 8, 3}, Config{128, 128, 64, 4, 4}}) {
      c.tma = c.ws = c.persistent = c.streamK = true;
      configs.push_back(c);
    }
  }
  // Persistent (grouped tile order for L2 reuse) at the 16-bit tiles.
  if (wide)
    for (Config c : {Config{128, 128, 32, 4, 3}, Config{128, 256, 64, 8, 3}}) {
      c.persistent = true;
      configs.push_back(c);
    }
  auto persistent = kernel(std::string("matmul_persistent_") + dtype, examples::matmul_persistent<T>,
                           {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  auto descriptors = kernel(std::string("matmul_descriptors_") + dtype, examples::matmul_descriptors<T>,
                            {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  auto persistentDescriptors =
      kernel(std::string("matmul_persistent_descriptors_") + dtype, examples::matmul_persistent_descriptors<T>,
             {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  auto persistentCluster =
      kernel(std::string("matmul_persistent_cluster_") + dtype, examples::matmul_persistent_cluster<T>,
             {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  auto streamK = kernel(std::string("matmul_stream_k_") + dtype, examples::matmul_stream_k<T>,
                        {"a", "b", "c", "partials", "arrivals", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  const uint32_t sms = uint32_t(device_info().multiprocessors);
  int failures = 0;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const Shape &shape : shapes) {
    const int M = shape.M, N = shape.N, K = shape.K;
    std::vector<T> ha(size_t(M) * K), hb(size_t(K) * N);
    for (T &v : ha) v = T(dist(rng));
    for (T &v : hb) v = T(dist(rng));
    DeviceBuffer a = DeviceBuffer::from(ha), b = DeviceBuffer::from(hb);
    DeviceBuffer c(size_t(M) * N, dtype_of_v<T>), ref(size_t(M) * N, dtype_of_v<T>);
    const double flops = 2.0 * M * N * K;
    double refMs = NAN;
    std::vector<T> hostRef;
    if (cublas.handle) {
      cublas.gemm(cublasType, fastTf32, a, b, ref, M, N, K);
      refMs = time_ms([&] { cublas.gemm(cublasType, fastTf32, a, b, ref, M, N, K); }, iters).median;
      hostRef = ref.to_host<T>();
    }
    double bestMs = INFINITY;
    std::string best;
    for (const Config &cfg : configs) {
      if (!selected(cfg))
        continue;
      LaunchOptions opts{.grid = {uint32_t(cdiv(M, cfg.bm)), uint32_t(cdiv(N, cfg.bn))},
                         .num_warps = cfg.warps,
                         .num_stages = cfg.stages,
                         .backend = Backend::GPU,
                         .warp_specialize = cfg.ws,
                         .ping_pong = cfg.pp,
                         .cluster_size = cfg.cluster};
      if (bothPaths && cfg.mmaSync)
        setenv("TEGULA_WGMMA", "0", 1);
      else if (bothPaths)
        unsetenv("TEGULA_WGMMA");
      if (cfg.persistent) // ping-pong: two programs per SM
        opts.grid = {std::min<uint32_t>(sms * (cfg.pp ? 2 : 1), uint32_t(cdiv(M, cfg.bm) * cdiv(N, cfg.bn)))};
      if (cfg.cluster > 1 && !fitClusterGrid(cfg, opts, dtype, shape, [&] {
            return persistentCluster.max_resident_programs(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk, 8);
          }))
        continue;
      c.fill_bytes(0xff); // what the kernel does not write shows
      // Stream-K's workspace: two partial blocks a program, a zeroed counter a tile.
      std::optional<DeviceBuffer> partials, arrivals;
      if (cfg.streamK) {
        partials.emplace(size_t(examples::streamKPartialFloats(opts.grid.x, cfg.bm, cfg.bn)), DType::f32);
        arrivals.emplace(size_t(cdiv(M, cfg.bm) * cdiv(N, cfg.bn)), DType::i32);
        arrivals->fill_bytes(0);
      }
      auto launch = [&] {
        if (cfg.streamK)
          streamK(opts, a, b, c, *partials, *arrivals, M, N, K, cfg.bm, cfg.bn, cfg.bk, 8);
        else if (cfg.cluster > 1)
          persistentCluster(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk, 8);
        else if (cfg.persistent && cfg.tma)
          persistentDescriptors(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk, 8);
        else if (cfg.persistent)
          persistent(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk, 8);
        else if (cfg.tma)
          descriptors(opts, a, b, c, M, N, K, K, N, N, cfg.bm, cfg.bn, cfg.bk);
        else
          k(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk);
      };
      const double ms = measure(dtype, shape, cfg.name(), flops, iters, 1e-2, "cuBLAS", csv, failures,
                                launch, [&] {
                                  return hostRef.empty() ? NAN : relError(c.to_host<T>(), hostRef);
                                });
      if (ms < bestMs)
        bestMs = ms, best = cfg.name();
    }
    summarize(dtype, shape, best, bestMs, "cuBLAS", refMs, flops, csv);
  }
  if (bothPaths)
    unsetenv("TEGULA_WGMMA");
  return failures;
}

/// TN GEMMs - C[M,N] (Acc) = A[M,K] B[N,K]^T, both operands K-major, the
/// layout 8-bit GEMMs take - of examples::matmul_tn<T, Acc> (on sm_90a: TMA
/// rings feeding wgmma k32) against `reference(a, b, ref, M, N, K)` on the
/// same buffers: operands drawn by `draw(rng)`, outputs compared by
/// `compare(got, want)` below `tolerance`.
template <class T, class Acc, tl::precision P = tl::precision::ieee, class Draw, class Reference,
          class Compare>
int runTn(const char *dtype, const char *referenceName, const std::string &referenceMissing,
          const std::vector<Config> &configs, Draw draw, Reference reference, Compare compare,
          double tolerance, const std::vector<Shape> &shapes, int iters, std::FILE *csv) {
  auto k = kernel(std::string("matmul_tn_") + dtype, examples::matmul_tn<T, Acc, P>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  auto persistent = kernel(std::string("matmul_tn_persistent_") + dtype, examples::matmul_tn_persistent<T, Acc, P>,
                           {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  auto persistentCluster =
      kernel(std::string("matmul_tn_persistent_cluster_") + dtype, examples::matmul_tn_persistent_cluster<T, Acc, P>,
             {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  // Stream-K accumulates in f32 (its partial blocks): not the int8 GEMM's i32.
  std::optional<Kernel> streamK;
  if constexpr (std::is_same_v<Acc, float>)
    streamK = kernel(std::string("matmul_tn_stream_k_") + dtype, examples::matmul_tn_stream_k<T, P>,
                     {"a", "b", "c", "partials", "arrivals", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  const uint32_t sms = uint32_t(device_info().multiprocessors);
  int failures = 0;
  std::mt19937 rng(7);
  for (const Shape &shape : shapes) {
    const int M = shape.M, N = shape.N, K = shape.K;
    std::vector<T> ha(size_t(M) * K), hb(size_t(N) * K);
    for (auto &v : ha) v = draw(rng);
    for (auto &v : hb) v = draw(rng);
    DeviceBuffer a = DeviceBuffer::from(ha), b = DeviceBuffer::from(hb);
    DeviceBuffer c(size_t(M) * N, dtype_of_v<Acc>), ref(size_t(M) * N, dtype_of_v<Acc>);
    const double flops = 2.0 * M * N * K;
    double refMs = NAN;
    std::vector<Acc> hostRef;
    std::string refNote = referenceMissing;
    if (refNote.empty()) {
      try {
        reference(a, b, ref, M, N, K);
        refMs = time_ms([&] { reference(a, b, ref, M, N, K); }, iters).median;
        hostRef = ref.to_host<Acc>();
      } catch (const Error &e) {
        refNote = e.what();
      }
    }
    if (!refNote.empty())
      fmt::print("{:<5} {:<14} {} not run: {}\n", dtype, shape.name, referenceName, refNote);
    double bestMs = INFINITY;
    std::string best;
    for (const Config &cfg : configs) {
      if (!selected(cfg))
        continue;
      LaunchOptions opts{.grid = {uint32_t(cdiv(M, cfg.bm)), uint32_t(cdiv(N, cfg.bn))},
                         .num_warps = cfg.warps,
                         .num_stages = cfg.stages,
                         .backend = Backend::GPU,
                         .warp_specialize = cfg.ws,
                         .ping_pong = cfg.pp,
                         .cluster_size = cfg.cluster};
      if (cfg.persistent)
        opts.grid = {std::min<uint32_t>(sms, uint32_t(cdiv(M, cfg.bm) * cdiv(N, cfg.bn)))};
      if (cfg.cluster > 1 && !fitClusterGrid(cfg, opts, dtype, shape, [&] {
            return persistentCluster.max_resident_programs(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk, 8);
          }))
        continue;
      if (cfg.streamK && !streamK)
        continue;
      std::optional<DeviceBuffer> partials, arrivals; // stream-K's workspace
      if (cfg.streamK) {
        partials.emplace(size_t(examples::streamKPartialFloats(opts.grid.x, cfg.bm, cfg.bn)), DType::f32);
        arrivals.emplace(size_t(cdiv(M, cfg.bm) * cdiv(N, cfg.bn)), DType::i32);
        arrivals->fill_bytes(0);
      }
      auto launch = [&] {
        if (cfg.streamK)
          (*streamK)(opts, a, b, c, *partials, *arrivals, M, N, K, cfg.bm, cfg.bn, cfg.bk, 8);
        else if (cfg.cluster > 1)
          persistentCluster(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk, 8);
        else if (cfg.persistent)
          persistent(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk, 8);
        else
          k(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk);
      };
      c.fill_bytes(0xff);
      const double ms = measure(dtype, shape, cfg.name(), flops, iters, tolerance, referenceName, csv, failures,
                                launch, [&] {
                                  return hostRef.empty() ? NAN : compare(c.to_host<Acc>(), hostRef);
                                });
      if (ms < bestMs)
        bestMs = ms, best = cfg.name();
    }
    summarize(dtype, shape, best, bestMs, referenceName, refMs, flops, csv);
  }
  return failures;
}

/// The 8-bit TN tiles: 128-byte K steps; on sm_90a also warp specialised,
/// and persistent (the SM count of programs over grouped tiles: bf16's best
/// at 4096³ and 8192³ on the H100).
std::vector<Config> eightBitConfigs(bool warpSpecialized) {
  std::vector<Config> configs = {{128, 128, 128, 4, 3}, {128, 256, 128, 8, 3}, {128, 256, 128, 8, 4},
                                 {128, 128, 128, 4, 4}};
  if (warpSpecialized) {
    for (Config c : {Config{128, 256, 128, 8, 3}, Config{128, 128, 128, 4, 4}, Config{128, 64, 128, 4, 4},
                     Config{128, 128, 128, 4, 2}}) {
      c.ws = true; // a producer warpgroup issues the TMA copies
      c.pp = c.warps == 4 && (c.bn == 64 || c.stages == 2); // ping-pong: the ring and both C blocks fit
      configs.push_back(c);
    }
    // Warp specialised, the rings live across tiles beside the f32/i32 C
    // block, staged two 128-byte column blocks at a time (32 KiB at 128x256;
    // the whole 128 KiB block until 2026-11-27, when 2 stages fit and lost
    // to the plain kernel's 4 - 1074 against 1234 TFLOP/s at 4096^3);
    // plain, C reuses the rings.
    for (Config c : {Config{128, 256, 128, 8, 4}, Config{128, 256, 128, 8, 3}, Config{128, 128, 128, 4, 5}}) {
      c.persistent = true;
      c.ws = c.stages != 4;
      configs.push_back(c);
    }
    Config fourStages{128, 256, 128, 8, 4};
    fourStages.persistent = fourStages.ws = true;
    configs.push_back(fourStages);
    // Clusters of 2 multicasting B (not measured on a GPU yet).
    for (Config c : {Config{128, 256, 128, 8, 4}, Config{128, 128, 128, 4, 5}}) {
      c.persistent = c.ws = true;
      c.cluster = 2;
      configs.push_back(c);
    }
    // Stream-K (f32 accumulation only; not measured on a GPU yet): equal runs
    // of the tiles' K steps, no last partial wave.
    for (Config c : {Config{128, 256, 128, 8, 4}, Config{128, 256, 128, 8, 3}}) {
      c.persistent = c.ws = c.streamK = true;
      configs.push_back(c);
    }
  }
  return configs;
}

/// tf32 TN (f32 in and out) against cuBLAS at CUBLAS_COMPUTE_32F_FAST_TF32:
/// on sm_90a TMA rings straight into wgmma k8, their tensor maps rounding
/// each element to tf32 as it lands (docs/hopper.md; until 2026-11-26 the
/// consumer warps rounded each stage in place: 0.53-0.63x); 128-byte K
/// steps (32 floats).
int runTf32Tn(const Cublas &cublas, const std::vector<Shape> &shapes, int iters, std::FILE *csv) {
  std::vector<Config> configs = {{128, 128, 32, 4, 3}, {128, 256, 32, 8, 3}, {128, 256, 32, 8, 4},
                                 {128, 128, 32, 4, 4}};
  if (device_info().chip == "sm_90a")
    for (Config c : {Config{128, 256, 32, 8, 3}, Config{128, 128, 32, 4, 4}, Config{128, 64, 32, 4, 4},
                     Config{128, 128, 32, 4, 2}}) {
      c.ws = true;
      c.pp = c.warps == 4 && (c.bn == 64 || c.stages == 2); // ping-pong: the ring and both C blocks fit
      configs.push_back(c);
    }
  // Persistent (grouped tiles; bf16's best at 4096^3 and 8192^3): a stage is
  // the bytes of 8-bit's, so the same rings fit (0 spills, at most 225 KiB).
  if (device_info().chip == "sm_90a")
    for (Config c : {Config{128, 256, 32, 8, 4}, Config{128, 256, 32, 8, 3}, Config{128, 128, 32, 4, 5}}) {
      c.persistent = true;
      c.ws = c.stages != 4;
      configs.push_back(c);
    }
  std::uniform_real_distribution<float> dist(-1, 1);
  return runTn<float, float, tl::precision::tf32>(
      "tf32tn", "cuBLAS", cublas.handle ? "" : cublas.why, configs, [&](std::mt19937 &rng) { return dist(rng); },
      [&](const DeviceBuffer &a, const DeviceBuffer &b, DeviceBuffer &ref, int M, int N, int K) {
        cublas.gemmTnTf32(a, b, ref, M, N, K);
      },
      // Both round to tf32 (cuBLAS perhaps by truncation) and sum in f32.
      [](const std::vector<float> &got, const std::vector<float> &want) { return relError(got, want); }, 5e-3,
      shapes, iters, csv);
}

/// fp8 e4m3 (f32 out) against cuBLASLt's fp8 matmul with fast accumulation
/// (like for like: Tegula's wgmma chain never promotes its sums to f32 on
/// the way either; `TEGULA_FP8_PRECISE_REFERENCE=1` times cuBLASLt's slower
/// default instead). The tensor cores keep fewer bits than f32 when they add
/// fp8 products (cuBLASLt's documentation of FAST_ACCUM; DeepSeek-V3 measured
/// about 14 on H800), and the two kernels add in different orders: the
/// results are checked to agree within 1e-2 (relative L2), not f32 rounding.
int runFp8(const CublasLt &lt, const std::vector<Shape> &shapes, int iters, std::FILE *csv) {
  std::uniform_real_distribution<float> dist(-2, 2);
  const bool fastAccum = !std::getenv("TEGULA_FP8_PRECISE_REFERENCE");
  std::printf("fp8 reference: cuBLASLt %s\n", fastAccum ? "with fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM)"
                                                         : "with its default periodic f32 promotion");
  // Warp specialised too (fp8 runs on sm_90a only): the H100 run of
  // 2026-11-26 tried none, where int8's - the same bytes and wgmma k32 - won
  // at 2048³ and every GPT-2 shape with them (0.81-0.99x against fp8's
  // 0.68-0.80x).
  return runTn<float8_e4m3, float>(
      "fp8", "cuBLASLt", lt.handle ? "" : lt.why, eightBitConfigs(true),
      [&](std::mt19937 &rng) { return float8_e4m3(dist(rng)); },
      [&](const DeviceBuffer &a, const DeviceBuffer &b, DeviceBuffer &ref, int M, int N, int K) {
        lt.gemmTn(CUDA_R_8F_E4M3, a, b, ref, M, N, K, fastAccum);
      },
      [](const std::vector<float> &got, const std::vector<float> &want) { return relError(got, want); }, 1e-2,
      shapes, iters, csv);
}

/// int8 (i32 out, exact: the error shown is the fraction of elements that
/// differ from cuBLAS's) against cuBLAS's int8 GEMM; wgmma .s32.s8.s8 on
/// sm_90a, mma.sync m16n8k32 elsewhere. ("TFLOP/s" are tera-operations.)
int runI8(const Cublas &cublas, const std::vector<Shape> &shapes, int iters, std::FILE *csv) {
  std::uniform_int_distribution<int> dist(-128, 127);
  return runTn<int8_t, int32_t>(
      "i8", "cuBLAS", cublas.handle ? "" : cublas.why, eightBitConfigs(device_info().chip == "sm_90a"),
      [&](std::mt19937 &rng) { return int8_t(dist(rng)); },
      [&](const DeviceBuffer &a, const DeviceBuffer &b, DeviceBuffer &ref, int M, int N, int K) {
        cublas.gemmTnInt8(a, b, ref, M, N, K);
      },
      [](const std::vector<int32_t> &got, const std::vector<int32_t> &want) {
        size_t differ = 0;
        for (size_t i = 0; i < got.size(); ++i)
          differ += got[i] != want[i];
        return double(differ) / double(got.size());
      },
      1e-12, shapes, iters, csv);
}

} // namespace

int main(int argc, char **argv) {
  std::string shapesArg = "all", dtypes = "bf16,f16,tf32,tf32tn,fp8,i8";
  const char *configsEnv = std::getenv("TEGULA_GEMM_CONFIGS");
  std::string configsArg = configsEnv ? configsEnv : "";
  int iters = 10;
  if (auto status =
          bench::Args("gemm", "Tegula's GEMMs against cuBLAS (cuBLASLt for fp8) on the same device buffers")
              .option("shapes", shapesArg, "the shapes", {"squares", "gpt2", "all"})
              .option("dtypes", dtypes, "the element types, comma-separated",
                      {"bf16", "f16", "tf32", "tf32tn", "fp8", "i8"}, /*list=*/true)
              .option("configs", configsArg,
                      "only the configurations whose names contain one of these comma-separated strings "
                      "(or all of its words); also TEGULA_GEMM_CONFIGS")
              .option("iters", iters, "timed runs a configuration (the median counts)")
              .parse(argc, argv))
    return *status;
  for (size_t at = 0; at < configsArg.size();) {
    const size_t comma = std::min(configsArg.find(',', at), configsArg.size());
    if (comma > at)
      selectedConfigs.push_back(configsArg.substr(at, comma - at));
    at = comma + 1;
  }
  fmt::print("# gemm: Tegula (examples::matmul on mma.sync or, on sm_90a, wgmma; cp.async pipelining) vs cuBLAS "
             "(cublasGemmEx, f32 compute; tf32: CUBLAS_COMPUTE_32F_FAST_TF32), same device buffers\n");
  std::string why;
  if (!gpu_available(&why)) {
    fmt::print("skipped: {}\n", why);
    return 0;
  }
  std::vector<Shape> shapes = shapesFor(shapesArg);
  if (shapes.empty()) {
    fmt::print("error: --shapes is squares, gpt2 or all, not '{}'\n", shapesArg);
    return 2;
  }
  const char *outDir = std::getenv("TEGULA_BENCH_OUT");
  std::string csvPath = outDir && *outDir ? std::string(outDir) + "/gemm.csv" : "gemm.csv";
  std::FILE *csv = std::fopen(csvPath.c_str(), "w");
  if (!csv) {
    fmt::print("error: cannot write {}\n", csvPath);
    return 1;
  }
  std::fprintf(csv, "dtype,shape,M,N,K,config,ms,tflops,rel_err,status\n");
  try {
    DeviceInfo info = device_info();
    fmt::print("device: {} ({}), driver {}\n", info.name, info.chip, info.driver_version);
    fmt::print("timing: CUDA events, median of {}; row-major A[M,K] B[K,N] -> C[M,N], "
               "TFLOP/s = 2MNK / time; csv: {}\n",
               iters, csvPath);
    Cublas cublas;
    if (!cublas.handle)
      fmt::print("cuBLAS: {} (Tegula figures only)\n", cublas.why);
    std::vector<std::string> wanted;
    for (size_t at = 0; at <= dtypes.size();) {
      size_t comma = std::min(dtypes.find(',', at), dtypes.size());
      wanted.push_back(dtypes.substr(at, comma - at));
      at = comma + 1;
    }
    auto want = [&](const char *d) { return std::find(wanted.begin(), wanted.end(), d) != wanted.end(); };
    int failures = 0;
    if (want("bf16"))
      failures += runDtype<bfloat16, tl::precision::ieee>("bf16", CUDA_R_16BF, false, cublas, shapes, iters, csv);
    if (want("f16"))
      failures += runDtype<float16, tl::precision::ieee>("f16", CUDA_R_16F, false, cublas, shapes, iters, csv);
    if (want("tf32"))
      failures += runDtype<float, tl::precision::tf32>("tf32", CUDA_R_32F, true, cublas, shapes, iters, csv);
    // fp8 runs on wgmma only on Hopper (elsewhere it would be an f16 GEMM).
    if (want("tf32tn"))
      failures += runTf32Tn(cublas, shapes, iters, csv);
    if (want("fp8") && info.chip == "sm_90a") {
      CublasLt lt;
      failures += runFp8(lt, shapes, iters, csv);
    } else if (want("fp8")) {
      fmt::print("fp8: skipped on {} (fp8 tensor-core GEMMs need sm_90a)\n", info.chip);
    }
    if (want("i8"))
      failures += runI8(cublas, shapes, iters, csv);
    std::fclose(csv);
    return failures ? 1 : 0;
  } catch (const Error &e) {
    fmt::print("error: {}\n", e.what());
    std::fclose(csv);
    return 1;
  }
}
