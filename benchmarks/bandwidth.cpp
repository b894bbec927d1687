// bandwidth.cpp - memory-bound example kernels on device buffers against the
// device's own copy bandwidth, measured in the same run.
//
// vector_add, softmax and layernorm at ROWS x COLS f32 (8192 x 8192 unless
// --rows/--cols say otherwise): each output is poisoned (NaN), the kernel
// runs once and is checked against a CPU reference on a sample of rows and
// for NaN everywhere (a mismatch fails the run: a wrong kernel's speed
// means nothing), then timed with CUDA events (warm-up, median of N). Each
// kernel's traffic is compared with a device-to-device copy (cuMemcpyDtoD)
// moving the same number of bytes. Without a CUDA driver it says "skipped"
// and exits 0; it never prints a number it did not measure.
#include "BenchArgs.h"
#include "examples/kernels.h"
#include "tegula/device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

using namespace tegula;

namespace {

struct Options {
  int rows = 8192, cols = 8192, iters = 50, warmup = 5, sample = 64;
  std::string compileOnly; // a chip: print what each kernel compiles to, run nothing
};

/// The options' ranges (the command line itself: bench::Args).
void validate(const Options &o) {
  if (o.rows < 1 || o.cols < 1 || o.iters < 1 || o.warmup < 0 || o.sample < 1)
    throw Error("--rows, --cols, --iters and --sample-rows must be positive, --warmup >= 0");
  if (int64_t(o.rows) * o.cols >= (int64_t(1) << 31))
    throw Error("rows x cols must stay below 2^31 (the kernels index with i32)");
}

/// Uniform floats in [lo, hi) from splitmix64: fast enough for 2^26 elements.
std::vector<float> randomFloats(size_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  uint64_t s = seed;
  for (float &x : v) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    x = lo + (hi - lo) * float(double(z >> 40) / double(1ull << 24));
  }
  return v;
}

/// The rows a check looks at: first, last, and `n` more spread by a hash.
std::vector<int> sampleRows(int rows, int n) {
  std::vector<int> r{0, rows - 1};
  for (int i = 0; i < n; ++i)
    r.push_back(int((uint64_t(i) * 2654435761ull + 12345) % uint64_t(rows)));
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

/// ||out - ref|| / ||ref|| over one row, in double.
double relError(const float *out, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = double(out[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

/// The number of NaNs in the whole buffer (downloaded).
size_t countNaN(const DeviceBuffer &b) {
  std::vector<float> h = b.to_host<float>();
  return size_t(std::count_if(h.begin(), h.end(), [](float v) { return std::isnan(v); }));
}

struct Case {
  std::string name, config;
  double bytes = 0;                       // traffic the kernel must move at least
  std::function<void()> launch;           // enqueue one launch
  std::function<std::string()> check;     // "" when right, else what is wrong
  std::function<CompiledKernel(const std::string &chip)> compile;
};

/// Inputs on the host (for the references) and every buffer on the device.
/// Left empty for --compile-only: empty DeviceBuffers need no driver and
/// select the same specialisation (address 0 is 16-byte aligned, as every
/// cuMemAlloc result is).
struct Data {
  std::vector<float> hx, hy, hw, hb;
  DeviceBuffer x, y, out, w, b, mean, rstd;
  std::vector<int> rows; // sampled for the checks
  void allocate(const Options &o) {
    const size_t R = size_t(o.rows), C = size_t(o.cols), N = R * C;
    hx = randomFloats(N, 1, -4, 4), hy = randomFloats(N, 2, -1, 1);
    hw = randomFloats(C, 3, 0.5f, 1.5f), hb = randomFloats(C, 4, -0.5f, 0.5f);
    x = DeviceBuffer::from(hx), y = DeviceBuffer::from(hy), out = DeviceBuffer(N, DType::f32);
    w = DeviceBuffer::from(hw), b = DeviceBuffer::from(hb);
    mean = DeviceBuffer(R, DType::f32), rstd = DeviceBuffer(R, DType::f32);
    rows = sampleRows(o.rows, o.sample);
  }
};

std::vector<Case> makeCases(const Options &o, Data &d) {
  const int R = o.rows, C = o.cols;
  const size_t N = size_t(R) * size_t(C);
  const double f = sizeof(float);
  std::vector<Case> cases;
  const DeviceBuffer &x = d.x, &y = d.y, &w = d.w, &b = d.b; // read-only arguments
  DeviceBuffer &out = d.out, &mean = d.mean, &rstd = d.rstd;

  // vector_add: read x, y; write out.
  {
    auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
    const int block = 1024, warps = 4, n = int(N);
    LaunchOptions lo{.grid = {uint32_t(cdiv(n, block))}, .num_warps = warps,
                     .backend = Backend::GPU};
    Case c{"vector_add", fmt::format("BLOCK={} warps={}", block, warps), 3 * f * double(N)};
    c.launch = [=, &x, &y, &out] { k(lo, x, y, out, n, block); };
    c.compile = [=, &x, &y, &out](const std::string &chip) {
      return k.compile({x, y, out, n, block}, {.chip = chip, .num_warps = warps});
    };
    c.check = [&d, C] {
      std::vector<float> row(static_cast<size_t>(C));
      for (int r : d.rows) {
        d.out.download(row, size_t(r) * size_t(C));
        for (int j = 0; j < C; ++j) {
          size_t i = size_t(r) * size_t(C) + size_t(j);
          float want = d.hx[i] + d.hy[i]; // one IEEE add: must match bit for bit
          if (std::memcmp(&row[size_t(j)], &want, 4) != 0)
            return fmt::format("out[{}] = {} but x + y = {}", i, row[size_t(j)], want);
        }
      }
      return std::string();
    };
    cases.push_back(std::move(c));
  }

  // softmax: one program per row; read x, write out.
  {
    auto k = kernel("softmax", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
    int block = 1;
    while (block < C)
      block *= 2;
    const int warps = std::clamp(block / 512, 4, 16); // ~16 elements per thread
    LaunchOptions lo{.grid = {uint32_t(R)}, .num_warps = warps, .backend = Backend::GPU};
    Case c{"softmax", fmt::format("BLOCK={} warps={}", block, warps), 2 * f * double(N)};
    c.launch = [=, &x, &out] { k(lo, x, out, C, block); };
    c.compile = [=, &x, &out](const std::string &chip) {
      return k.compile({x, out, C, block}, {.chip = chip, .num_warps = warps});
    };
    c.check = [&d, C] {
      std::vector<float> row(static_cast<size_t>(C));
      std::vector<double> ref(static_cast<size_t>(C));
      for (int r : d.rows) {
        d.out.download(row, size_t(r) * size_t(C));
        const float *xr = d.hx.data() + size_t(r) * size_t(C);
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < C; ++j)
          mx = std::max(mx, double(xr[j]));
        for (int j = 0; j < C; ++j)
          sum += (ref[size_t(j)] = std::exp(double(xr[j]) - mx));
        for (double &v : ref)
          v /= sum;
        if (double e = relError(row.data(), ref); !(e < 1e-5))
          return fmt::format("row {}: relative error {:.3g} (tolerance 1e-5)", r, e);
      }
      return std::string();
    };
    cases.push_back(std::move(c));
  }

  // layernorm: reads x (three passes over a row; counted once), weight and
  // bias; writes y, mean and rstd.
  {
    auto k = kernel("layernorm", examples::layernorm<float>,
                    {"x", "weight", "bias", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"});
    const int block = 1024, warps = 4;
    const float eps = 1e-5f;
    LaunchOptions lo{.grid = {uint32_t(R)}, .num_warps = warps, .backend = Backend::GPU};
    Case c{"layernorm", fmt::format("BLOCK={} warps={}", block, warps),
           f * (2 * double(N) + 2 * double(C) + 2 * double(R))};
    c.launch = [=, &x, &w, &b, &out, &mean, &rstd] {
      k(lo, x, w, b, out, mean, rstd, C, eps, block);
    };
    c.compile = [=, &x, &w, &b, &out, &mean, &rstd](const std::string &chip) {
      return k.compile({x, w, b, out, mean, rstd, C, eps, block},
                       {.chip = chip, .num_warps = warps});
    };
    c.check = [&d, C, eps] {
      if (size_t nan = countNaN(d.mean) + countNaN(d.rstd))
        return fmt::format("{} NaN in mean/rstd", nan);
      std::vector<float> row(static_cast<size_t>(C));
      std::vector<float> m = d.mean.to_host<float>(), s = d.rstd.to_host<float>();
      std::vector<double> ref(static_cast<size_t>(C));
      for (int r : d.rows) {
        d.out.download(row, size_t(r) * size_t(C));
        const float *xr = d.hx.data() + size_t(r) * size_t(C);
        double mu = 0, var = 0;
        for (int j = 0; j < C; ++j)
          mu += xr[j];
        mu /= C;
        for (int j = 0; j < C; ++j)
          var += (xr[j] - mu) * (xr[j] - mu);
        double rs = 1 / std::sqrt(var / C + eps);
        for (int j = 0; j < C; ++j)
          ref[size_t(j)] = (xr[j] - mu) * rs * d.hw[size_t(j)] + d.hb[size_t(j)];
        if (double e = relError(row.data(), ref); !(e < 1e-5))
          return fmt::format("row {}: y relative error {:.3g} (tolerance 1e-5)", r, e);
        if (!(std::abs(m[size_t(r)] - mu) <= 1e-5 * std::max(1.0, std::abs(mu))) ||
            !(std::abs(s[size_t(r)] - rs) <= 1e-5 * rs))
          return fmt::format("row {}: mean/rstd {} / {}, reference {} / {}", r, m[size_t(r)],
                             s[size_t(r)], mu, rs);
      }
      return std::string();
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string resources(const CompiledKernel &c) {
  return fmt::format("{} regs, {} B spills", c.registers, c.spill_bytes);
}

/// --compile-only CHIP: what each configuration compiles to, with no GPU.
int compileOnly(const Options &o, const std::string &chip) {
  Data d; // empty buffers
  for (Case &c : makeCases(o, d)) {
    CompiledKernel k = c.compile(chip);
    fmt::print("{:<11} {:<22} {}: {}{}\n", c.name, c.config, chip, resources(k),
               k.cubin.empty() ? " (no ptxas: PTX only)" : "");
  }
  return 0;
}

int run(const Options &o) {
  DeviceInfo info = device_info();
  fmt::print("device: {} ({}), {:.1f} GiB, nominal DRAM bandwidth {:.0f} GB/s "
             "(2 x {} MHz x {} bit, from the driver's attributes)\n",
             info.name, info.chip, info.total_memory / 1073741824.0, info.nominal_bandwidth_gbs(),
             info.memory_clock_khz / 1000, info.memory_bus_bits);
  fmt::print("driver: CUDA {}.{} ({})\n", info.driver_version / 1000,
             info.driver_version % 1000 / 10, info.driver_version);
  fmt::print("shape: {} x {} f32; timing: CUDA events around each launch, {} warm-up + {} timed, "
             "median; checks: {} sampled rows vs a CPU reference (double), NaN scan of every "
             "output\n",
             o.rows, o.cols, o.warmup, o.iters, o.sample);
  fmt::print("GB/s = minimal bytes moved / median time (1 GB = 1e9 B); copy = cuMemcpyDtoD "
             "moving the same bytes (half read, half written)\n\n");
  std::fflush(stdout);

  Data d;
  d.allocate(o);
  const size_t N = d.out.size();
  std::vector<Case> cases = makeCases(o, d);
  fmt::print("{:<11} {:<22} {:<20} {:>10} {:>10} {:>9} {:>10} {:>7}\n", "kernel", "config",
             "resources", "MB moved", "median ms", "GB/s", "copy GB/s", "ratio");
  int failures = 0;
  for (Case &c : cases) {
    std::string res = resources(c.compile(info.chip));
    d.out.fill_bytes(0xff); // poisoned: an element the kernel misses stays NaN
    c.launch();
    synchronize();
    std::string wrong;
    if (size_t nan = countNaN(d.out))
      wrong = fmt::format("{} of {} outputs are NaN", nan, N);
    else
      wrong = c.check();
    if (!wrong.empty()) {
      fmt::print("{:<11} {:<22} {:<20} FAILED: {}\n", c.name, c.config, res, wrong);
      std::fflush(stdout);
      ++failures;
      continue;
    }
    Timing t = time_ms(c.launch, o.iters, o.warmup);
    if (std::string again = c.check(); !again.empty()) { // the timed runs wrote it too
      fmt::print("{:<11} {:<22} {:<20} FAILED after timing: {}\n", c.name, c.config, res, again);
      ++failures;
      continue;
    }
    // The reference: a copy reading half and writing half of the same bytes.
    size_t half = size_t(c.bytes / 2) / 4 * 4;
    Timing ct;
    {
      DeviceBuffer src(half / 4, DType::f32), dst(half / 4, DType::f32);
      src.fill_bytes(0);
      ct = time_ms([&] { copy(src, dst); }, o.iters, o.warmup);
    }
    double gbs = c.bytes / (t.median * 1e-3) / 1e9;
    double copyGbs = 2.0 * double(half) / (ct.median * 1e-3) / 1e9;
    fmt::print("{:<11} {:<22} {:<20} {:>10.1f} {:>10.4f} {:>9.0f} {:>10.0f} {:>7.2f}\n", c.name,
               c.config, res, c.bytes / 1e6, t.median, gbs, copyGbs, gbs / copyGbs);
    fmt::print("{:<11} kernel min/max {:.4f}/{:.4f} ms; copy median {:.4f} ms\n", "",
               t.min, t.max, ct.median);
    std::fflush(stdout);
  }
  if (failures)
    fmt::print(stderr, "bandwidth: {} kernel(s) FAILED their check\n", failures);
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string command;
  for (int i = 0; i < argc; ++i)
    command += (i ? " " : "") + std::string(argv[i]);
  fmt::print("# bandwidth: memory-bound kernels on device buffers vs D2D copy\n");
  fmt::print("date: {}\ncommand: {}\n", date, command);
  Options o;
  if (auto status = bench::Args("bandwidth", "memory-bound example kernels against a device-to-device copy of "
                                             "the same bytes")
                        .option("rows", o.rows, "rows of the f32 inputs")
                        .option("cols", o.cols, "columns")
                        .option("iters", o.iters, "timed runs a kernel (the median counts)")
                        .option("warmup", o.warmup, "untimed runs first", 0)
                        .option("sample-rows", o.sample, "rows checked against the CPU reference")
                        .option("compile-only", o.compileOnly,
                                "a chip (sm_80, sm_90a, ...): print what each kernel compiles to, run nothing")
                        .parse(argc, argv))
    return *status;
  try {
    validate(o);
  } catch (const Error &e) {
    fmt::print(stderr, "bandwidth: {}\n", e.what());
    return 2;
  }
  try {
    if (!o.compileOnly.empty())
      return compileOnly(o, o.compileOnly);
    std::string why;
    if (!gpu_available(&why)) {
      const std::string prefix = "no CUDA driver: ";
      if (why.rfind(prefix, 0) == 0)
        fmt::print("skipped: no CUDA driver ({})\n", why.substr(prefix.size()));
      else
        fmt::print("skipped: no usable GPU ({})\n", why);
      return 0;
    }
    return run(o);
  } catch (const Error &e) {
    std::fflush(stdout);
    fmt::print(stderr, "bandwidth: error: {}\n", e.what());
    return 1;
  }
}
