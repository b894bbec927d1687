// attention.cpp - examples::attention_fwd (flash attention written as a user
// would: two chained dots and an online softmax per key block) on device
// buffers, bf16, causal and not, at GPT-2's head size (64) and 128. Each
// shape runs a few (BM, BN, warps) configurations and reports the best;
// the output of two heads (all rows up to T = 1024, 257 rows beyond) is
// checked against a double-precision reference on the host. TFLOP/s counts 4 * BH * T^2 * d (halved when causal), as
// FlashAttention and Triton do. Rows also go to $TEGULA_BENCH_OUT/attention.csv.
// Each shape also runs an unfused reference in the same process: cuBLAS
// S = scale Q K^T (f32, strided batched), a softmax in the DSL (causal
// mask, bf16 P), cuBLAS O = P V - the T x T matrices in memory that flash
// attention avoids; checked against the host reference like Tegula's
// output. torch's SDPA on the same shapes: benchmarks/torch_reference.py
// (run by scripts/gpu-check.sh when torch is importable). Without a driver
// it prints "skipped: ..." and exits 0.
//
//   attention [--iters 10]
#include "BenchArgs.h"
#include "CublasLibrary.h"
#include "ScopedSwitch.h"
#include "examples/kernels.h"
#include "tegula/device.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

using namespace tegula;

namespace {

struct Shape {
  int heads, seq, dim;
  bool causal;
  std::string name() const {
    return fmt::format("BH={} T={} d={}{}", heads, seq, dim, causal ? " causal" : "");
  }
};

struct Config {
  int bm, bn, warps;
  bool tma = false; // examples::attention_fwd_descriptors: K, V through TMA rings on sm_90a
  bool ws = false;  // with tma: warp specialised (a producer warpgroup fills the K and V rings)
  bool pp = false;  // with ws at 4 warps: ping-pong, two query blocks per CTA on their own warpgroups
  /// false: TEGULA_OVERLAP_DOTS=0 - the softmax not overlapped with P V
  /// (overlap-chained-dots; "-ov" in the name), for the comparison.
  bool overlap = true;
  /// true: TEGULA_WARPGROUP_TURNS=1 - two consumer warpgroups take turns
  /// issuing their dots (warpgroup-turns; "+wt"), for the comparison.
  bool turns = false;
  std::string name() const {
    return fmt::format("{}x{} w{}{}{}{}{}", bm, bn, warps, tma ? " tma" : "", pp ? " pp" : ws ? " ws" : "",
                       overlap ? "" : " -ov", turns ? " +wt" : "");
  }
};

/// softmax(q k^T / sqrt(d)) v in double for some rows of head `head`: all
/// of them up to T = 1024, else 256 spread over the sequence and the last
/// (a full head at T = 16k would take minutes on the host).
struct HeadReference {
  int head = 0;
  std::vector<int> rows;
  std::vector<double> out; // rows.size() x d
};
HeadReference referenceHead(const std::vector<bfloat16> &q, const std::vector<bfloat16> &k,
                            const std::vector<bfloat16> &v, const Shape &s, int h) {
  HeadReference r;
  r.head = h;
  const int step = s.seq <= 1024 ? 1 : s.seq / 256;
  for (int i = 0; i < s.seq; i += step)
    r.rows.push_back(i);
  if (r.rows.back() != s.seq - 1)
    r.rows.push_back(s.seq - 1);
  const size_t base = size_t(h) * size_t(s.seq) * size_t(s.dim);
  const double scale = 1.0 / std::sqrt(double(s.dim));
  std::vector<double> p(size_t(s.seq));
  for (int i : r.rows) {
    const int keys = s.causal ? i + 1 : s.seq;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < keys; ++j) {
      double d = 0;
      for (int c = 0; c < s.dim; ++c)
        d += double(float(q[base + size_t(i) * s.dim + c])) * double(float(k[base + size_t(j) * s.dim + c]));
      p[size_t(j)] = d * scale;
      mx = std::max(mx, p[size_t(j)]);
    }
    for (int j = 0; j < keys; ++j)
      sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
    std::vector<double> o(size_t(s.dim), 0.0);
    for (int j = 0; j < keys; ++j)
      for (int c = 0; c < s.dim; ++c)
        o[size_t(c)] += p[size_t(j)] / sum * double(float(v[base + size_t(j) * s.dim + c]));
    r.out.insert(r.out.end(), o.begin(), o.end());
  }
  return r;
}

/// Relative L2 error of `out` over the references' rows (infinite on NaN).
double checkAgainst(const std::vector<HeadReference> &refs, const std::vector<bfloat16> &out, const Shape &s) {
  double num = 0, den = 0;
  for (const HeadReference &r : refs)
    for (size_t n = 0; n < r.rows.size(); ++n)
      for (int c = 0; c < s.dim; ++c) {
        const size_t at = (size_t(r.head) * size_t(s.seq) + size_t(r.rows[n])) * size_t(s.dim) + size_t(c);
        const double got = double(float(out[at])), want = r.out[n * size_t(s.dim) + size_t(c)];
        if (std::isnan(got))
          return INFINITY;
        num += (got - want) * (got - want);
        den += want * want;
      }
  return std::sqrt(num / std::max(den, 1e-300));
}

/// The unfused reference's softmax: row `program_id` of S [BH * T, T]
/// (f32, already scaled), causal rows masked past their position, into P
/// (bf16, what the second GEMM reads).
void causal_softmax_rows(tl::ptr<float> s, tl::ptr<bfloat16> p, tl::scalar<int32_t> T,
                         tl::constant<int> CAUSAL, tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor cols = tl::arange(0, BLOCK);
  tl::tensor inRow = cols < T;
  tl::tensor valid = CAUSAL.value ? inRow & (cols <= row % T) : inRow;
  tl::tensor base = row.to(tl::i64) * T; // BH * T * T passes 2^31 at T = 16k
  tl::tensor x = tl::load(s + base + cols, valid, -INFINITY);
  tl::tensor e = tl::exp(x - tl::max(x, 0));
  tl::store(p + base + cols, (e / tl::sum(e, 0)).to(tl::bf16), inRow);
}

/// The unfused reference's output (or an empty vector with `why` set when
/// cuBLAS is missing or S and P would not fit in `maxBytes`), and its time.
struct Unfused {
  std::vector<bfloat16> out;
  double ms = NAN;
  std::string why;
};
Unfused runUnfused(const bench::Cublas &cublas, const DeviceBuffer &q, const DeviceBuffer &k,
                   const DeviceBuffer &v, const Shape &s, float scale, int iters) {
  Unfused r;
  if (!cublas.handle) {
    r.why = cublas.why;
    return r;
  }
  const size_t scores = size_t(s.heads) * size_t(s.seq) * size_t(s.seq);
  constexpr size_t kMaxBytes = size_t(24) << 30;
  if (scores * 6 > kMaxBytes) {
    r.why = fmt::format("S and P would take {:.1f} GiB", double(scores * 6) / double(1 << 30));
    return r;
  }
  static Kernel softmax = kernel("causal_softmax_rows", causal_softmax_rows, {"s", "p", "T", "CAUSAL", "BLOCK"});
  DeviceBuffer S(scores, DType::f32), P(scores, DType::bf16);
  DeviceBuffer out(size_t(s.heads) * size_t(s.seq) * size_t(s.dim), DType::bf16);
  const long long td = (long long)s.seq * s.dim, tt = (long long)s.seq * s.seq;
  int block = 1;
  while (block < s.seq)
    block *= 2;
  auto launch = [&] {
    // S = scale Q K^T, O = P V: per head, strided through the batch.
    cublas.gemmBatched(true, s.seq, s.seq, s.dim, scale, {q.device_ptr(), CUDA_R_16BF, s.dim, td},
                       {k.device_ptr(), CUDA_R_16BF, s.dim, td}, {S.device_ptr(), CUDA_R_32F, s.seq, tt},
                       s.heads);
    softmax({.grid = {uint32_t(s.heads * s.seq)}, .num_warps = block >= 4096 ? 8 : 4, .backend = Backend::GPU},
            S, P, s.seq, int(s.causal), block);
    cublas.gemmBatched(false, s.seq, s.dim, s.seq, 1.0f, {P.device_ptr(), CUDA_R_16BF, s.seq, tt},
                       {v.device_ptr(), CUDA_R_16BF, s.dim, td}, {out.device_ptr(), CUDA_R_16BF, s.dim, td},
                       s.heads);
  };
  out.fill_bytes(0xff);
  launch();
  r.out = out.to_host<bfloat16>();
  r.ms = time_ms(launch, iters).median;
  return r;
}

} // namespace

int main(int argc, char **argv) {
  int iters = 10;
  if (auto status = bench::Args("attention", "flash attention in the DSL (bf16) against an unfused cuBLAS "
                                             "reference, causal and not, d 64 / 128, T 1k-16k")
                        .option("iters", iters, "timed runs a configuration (the median counts)")
                        .parse(argc, argv))
    return *status;
  fmt::print("# attention: examples::attention_fwd (flash attention in the DSL, bf16, f32 "
             "softmax and accumulation) on device buffers\n");
  std::string why;
  if (!gpu_available(&why)) {
    fmt::print("skipped: {}\n", why);
    return 0;
  }
  const char *outDir = std::getenv("TEGULA_BENCH_OUT");
  std::string csvPath = outDir && *outDir ? std::string(outDir) + "/attention.csv" : "attention.csv";
  std::FILE *csv = std::fopen(csvPath.c_str(), "w");
  if (!csv) {
    fmt::print("error: cannot write {}\n", csvPath);
    return 1;
  }
  std::fprintf(csv, "shape,heads,seq,dim,causal,config,ms,tflops,rel_err,status\n");
  int failures = 0;
  try {
    DeviceInfo info = device_info();
    fmt::print("device: {} ({}), driver {}\n", info.name, info.chip, info.driver_version);
    fmt::print("timing: CUDA events, median of {}; q, k, v, out [BH, T, d] row-major; "
               "TFLOP/s = 4 BH T^2 d / time (/2 causal); csv: {}\n"
               "the unfused reference computes all T^2 scores: its causal rows (\"unfused eff\") "
               "count only the useful half, an effective rate\n",
               iters, csvPath);
    auto k = kernel("attention_fwd", examples::attention_fwd<bfloat16>,
                    {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
    auto kd = kernel("attention_fwd_descriptors", examples::attention_fwd_descriptors<bfloat16>,
                     {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
    const bench::Cublas cublas;
    fmt::print("unfused reference: {}\n",
               cublas.handle ? "cuBLAS S = scale Q K^T (f32) + DSL softmax (bf16 P) + cuBLAS O = P V"
                             : "none: " + cublas.why);
    // The first: the H100 run of 2026-11-22 measured a user's kernel at
    // 11.6 TFLOP/s here (dots on CUDA cores), torch SDPA at 163.
    const std::vector<Shape> shapes = {{96, 1024, 64, true},  {96, 1024, 64, false},
                                       {32, 4096, 64, true},  {32, 4096, 128, true},
                                       {16, 8192, 128, true}, {16, 8192, 128, false},
                                       {8, 16384, 64, true},  {8, 16384, 128, true}};
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (const Shape &s : shapes) {
      const size_t n = size_t(s.heads) * size_t(s.seq) * size_t(s.dim);
      std::vector<bfloat16> hq(n), hk(n), hv(n);
      for (auto *h : {&hq, &hk, &hv})
        for (bfloat16 &x : *h)
          x = bfloat16(dist(rng));
      DeviceBuffer q = DeviceBuffer::from(hq), kk = DeviceBuffer::from(hk), v = DeviceBuffer::from(hv);
      DeviceBuffer out(n, DType::bf16);
      const std::vector<HeadReference> refs = {referenceHead(hq, hk, hv, s, 0),
                                               referenceHead(hq, hk, hv, s, s.heads - 1)};
      const double flops = 4.0 * s.heads * double(s.seq) * s.seq * s.dim * (s.causal ? 0.5 : 1.0);
      const float scale = 1.0f / std::sqrt(float(s.dim));
      std::vector<Config> configs = s.dim <= 64
                                        ? std::vector<Config>{{64, 64, 4}, {128, 64, 8}, {128, 32, 4}}
                                        : std::vector<Config>{{64, 64, 4}, {128, 64, 8}, {128, 32, 8}};
      // 128 x 128 blocks at 8 warps (two warpgroups of 64 query rows sharing
      // each K/V block: FlashAttention-3's tile at d = 128) fit an H100's
      // shared memory at d = 64 and 128 (231 424 bytes at d = 128, with Q
      // kept in shared memory for the softmax overlap).
      if (info.chip == "sm_90a")
        for (bool ws : {false, true})
          for (Config c : {Config{64, 64, 4}, Config{128, 64, 8}, Config{128, 128, 8}}) {
            c.tma = true;
            c.ws = ws;
            configs.push_back(c);
            if (ws && c.warps == 4) {
              c.pp = true;
              configs.push_back(c);
            }
          }
      // The same without the softmax under P V (overlap-chained-dots rotates
      // every TMA configuration here; at 128 x 128, d = 128 with Q in shared
      // memory, which turning it off puts back in registers).
      for (size_t i = 0, n = configs.size(); i < n; ++i)
        if (configs[i].tma) {
          Config c = configs[i];
          c.overlap = false;
          configs.push_back(c);
        }
      // Warp specialised with two consumer warpgroups (8 warps, or ping-pong's
      // two programs of 4), the same with the warpgroups taking turns issuing
      // their dots (FlashAttention-3's ping-pong; 4% slower on H100s).
      for (size_t i = 0, n = configs.size(); i < n; ++i)
        if (configs[i].ws && configs[i].overlap && (configs[i].warps == 8 || configs[i].pp)) {
          Config c = configs[i];
          c.turns = true;
          configs.push_back(c);
        }
      double bestMs = INFINITY;
      std::string best;
      for (const Config &c : configs) {
        LaunchOptions opts{.grid = {uint32_t(cdiv(s.seq, c.bm)), uint32_t(s.heads)},
                           .num_warps = c.warps,
                           .backend = Backend::GPU,
                           .warp_specialize = c.ws,
                           .ping_pong = c.pp};
        // Read at each launch (and part of the loaded kernel's key).
        bench::ScopedSwitch overlap("TEGULA_OVERLAP_DOTS", c.overlap ? nullptr : "0");
        bench::ScopedSwitch turns("TEGULA_WARPGROUP_TURNS", c.turns ? "1" : "0");
        auto launch = [&] {
          if (c.tma)
            kd(opts, q, kk, v, out, s.seq, s.heads * s.seq, scale, s.dim, c.bm, c.bn, s.causal);
          else
            k(opts, q, kk, v, out, s.seq, scale, s.dim, c.bm, c.bn, s.causal);
        };
        double err = NAN;
        try {
          out.fill_bytes(0xff);
          launch();
          std::vector<bfloat16> got = out.to_host<bfloat16>();
          err = checkAgainst(refs, got, s);
        } catch (const Error &e) {
          std::string what = e.what();
          fmt::print("{:<26} {:<11} not run: {}\n", s.name(), c.name(), what.substr(0, what.find('\n')));
          continue;
        }
        if (!(err < 2e-2)) {
          fmt::print("{:<26} {:<11} FAILED: rel err {:.1e} vs the host reference\n", s.name(), c.name(), err);
          std::fprintf(csv, "%s,%d,%d,%d,%d,%s,,,%.3g,FAILED\n", s.name().c_str(), s.heads, s.seq,
                       s.dim, int(s.causal), c.name().c_str(), err);
          ++failures;
          continue;
        }
        const double ms = time_ms(launch, iters).median;
        fmt::print("{:<26} {:<11} {:>9.3f} ms {:>7.1f} TFLOP/s  rel err {:.1e}\n", s.name(), c.name(),
                   ms, flops / ms / 1e9, err);
        std::fprintf(csv, "%s,%d,%d,%d,%d,%s,%.4f,%.2f,%.3g,\n", s.name().c_str(), s.heads, s.seq,
                     s.dim, int(s.causal), c.name().c_str(), ms, flops / ms / 1e9, err);
        if (ms < bestMs)
          bestMs = ms, best = c.name();
      }
      std::string id = fmt::format("attention_bh{}_t{}_d{}{}", s.heads, s.seq, s.dim, s.causal ? "_causal" : "");
      Unfused unfused;
      try {
        unfused = runUnfused(cublas, q, kk, v, s, scale, iters);
      } catch (const Error &e) {
        unfused.why = e.what();
      }
      if (!unfused.out.empty()) {
        const double err = checkAgainst(refs, unfused.out, s);
        const bool ok = err < 2e-2;
        failures += !ok;
        fmt::print("{:<26} {:<11} {:>9.3f} ms {:>7.1f} TFLOP/s  rel err {:.1e}{}\n", s.name(),
                   s.causal ? "unfused eff" : "unfused", unfused.ms, flops / unfused.ms / 1e9, err,
                   ok ? "" : " FAILED");
        std::fprintf(csv, "%s,%d,%d,%d,%d,%s,%.4f,%.2f,%.3g,%s\n", s.name().c_str(), s.heads, s.seq,
                     s.dim, int(s.causal), s.causal ? "unfused cuBLAS (effective)" : "unfused cuBLAS", unfused.ms, flops / unfused.ms / 1e9, err,
                     ok ? "" : "FAILED");
        // Ends with a number: gpu-check.sh's summary shows such lines.
        if (!best.empty())
          fmt::print("{}_vs_unfused_cublas speed-up {:.2f}\n", id, unfused.ms / bestMs);
      } else {
        fmt::print("{:<26} {:<11} not run: {}\n", s.name(), "unfused", unfused.why);
      }
      // Ends with a number: gpu-check.sh's summary shows such lines.
      if (best.empty())
        fmt::print("{}: no configuration ran correctly\n", id);
      else
        fmt::print("{} best {}, TFLOP/s {:.1f}{}\n", id, best, flops / bestMs / 1e9,
                   s.heads == 96 && s.causal
                       ? fmt::format(", speed-up over the CUDA-core dots of 2026-11-22 (11.6) {:.2f}",
                                     flops / bestMs / 1e9 / 11.6)
                       : std::string());
      std::fflush(stdout);
      std::fflush(csv);
    }
  } catch (const Error &e) {
    fmt::print("error: {}\n", e.what());
    std::fclose(csv);
    return 1;
  }
  std::fclose(csv);
  return failures ? 1 : 0;
}
