// gemm.cpp - Tegula's matmul (examples::matmul, bf16 and f16 in, f32
// accumulation on tensor cores, 16-bit out) against cuBLAS in the same
// process, on the same device buffers. cuBLAS is opened at run time
// (dlopen), like libcuda, so building needs neither a GPU nor cuBLAS.
// Tegula's output is checked against cuBLAS's (relative L2 error); each
// shape runs a small list of tile configurations and reports the best.
// Without a driver it prints "skipped: ..." and exits 0.
//
//   gemm [--sizes 1024,2048,4096] [--iters 20]
#include "examples/kernels.h"
#include "tegula/device.h"

#include <cublas_api.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

using namespace tegula;

namespace {

/// The cuBLAS entry points used, resolved from libcublas at run time.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  // cublasGemmEx is overloaded in C++: name the C signature.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void *, const void *, cudaDataType, int,
                                    const void *, cudaDataType, int, const void *, void *,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemmEx = nullptr;
  cublasHandle_t handle = nullptr;
  std::string why;

  Cublas() {
    void *lib = nullptr;
    for (const char *name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!lib) {
      why = fmt::format("cannot load libcublas ({})", dlerror());
      return;
    }
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cublasDestroy_v2"));
    gemmEx = reinterpret_cast<decltype(gemmEx)>(dlsym(lib, "cublasGemmEx"));
    if (!create || !destroy || !gemmEx || create(&handle) != CUBLAS_STATUS_SUCCESS) {
      why = "libcublas has no usable cublasCreate_v2/cublasGemmEx";
      handle = nullptr;
    }
  }
  ~Cublas() {
    if (handle)
      destroy(handle);
  }
  /// Row-major C[M,N] = A[M,K] B[K,N], as column-major C^T = B^T A^T.
  void gemm(cudaDataType type, const DeviceBuffer &a, const DeviceBuffer &b, DeviceBuffer &c,
            int M, int N, int K) const {
    const float one = 1, zero = 0;
    cublasStatus_t s = gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one,
                              reinterpret_cast<const void *>(b.device_ptr()), type, N,
                              reinterpret_cast<const void *>(a.device_ptr()), type, K, &zero,
                              reinterpret_cast<void *>(c.device_ptr()), type, N,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
      throw Error(fmt::format("cublasGemmEx failed: status {}", int(s)));
  }
};

struct Config {
  int bm, bn, bk, warps;
};

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

template <class T>
int runDtype(const char *dtype, cudaDataType cublasType, const Cublas &cublas,
             const std::vector<int> &sizes, int iters) {
  auto k = kernel(std::string("matmul_") + dtype, examples::matmul<T>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  const std::vector<Config> configs = {{64, 64, 32, 4}, {128, 64, 32, 4}, {128, 128, 32, 8}};
  int failures = 0;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int n : sizes) {
    const int M = n, N = n, K = n;
    std::vector<T> ha(size_t(M) * K), hb(size_t(K) * N);
    for (T &v : ha) v = T(dist(rng));
    for (T &v : hb) v = T(dist(rng));
    DeviceBuffer a = DeviceBuffer::from(ha), b = DeviceBuffer::from(hb);
    DeviceBuffer c(size_t(M) * N, dtype_of_v<T>), ref(size_t(M) * N, dtype_of_v<T>);
    const double flops = 2.0 * M * N * K;
    double refMs = NAN;
    std::vector<T> hostRef;
    if (cublas.handle) {
      cublas.gemm(cublasType, a, b, ref, M, N, K);
      refMs = time_ms([&] { cublas.gemm(cublasType, a, b, ref, M, N, K); }, iters).median;
      hostRef = ref.to_host<T>();
    }
    double bestMs = INFINITY;
    std::string best;
    for (const Config &cfg : configs) {
      LaunchOptions opts{.grid = {uint32_t(cdiv(M, cfg.bm)), uint32_t(cdiv(N, cfg.bn))},
                         .num_warps = cfg.warps,
                         .backend = Backend::GPU};
      auto launch = [&] { k(opts, a, b, c, M, N, K, cfg.bm, cfg.bn, cfg.bk); };
      c.fill_bytes(0xff);
      launch();
      std::string check = "unchecked (no cuBLAS)";
      if (!hostRef.empty()) {
        double err = relError(c.to_host<T>(), hostRef);
        check = fmt::format("rel err {:.1e}", err);
        if (!(err < 1e-2)) {
          fmt::print("{:<6} {:>5}^3  {:>3}x{:>3}x{:<3} w{}  FAILED: {} vs cuBLAS\n", dtype, n, cfg.bm,
                     cfg.bn, cfg.bk, cfg.warps, check);
          ++failures;
          continue;
        }
      }
      double ms = time_ms(launch, iters).median;
      fmt::print("{:<6} {:>5}^3  {:>3}x{:>3}x{:<3} w{}  {:>9.3f} ms {:>8.1f} TFLOP/s  {}\n", dtype, n,
                 cfg.bm, cfg.bn, cfg.bk, cfg.warps, ms, flops / ms / 1e9, check);
      if (ms < bestMs)
        bestMs = ms, best = fmt::format("{}x{}x{} w{}", cfg.bm, cfg.bn, cfg.bk, cfg.warps);
    }
    fmt::print("{}_gemm_{} best {} {:.1f} TFLOP/s, cuBLAS {:.1f} TFLOP/s, ratio {:.3f}\n", dtype, n,
               best, flops / bestMs / 1e9, flops / refMs / 1e9, refMs / bestMs);
    std::fflush(stdout);
  }
  return failures;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> sizes = {1024, 2048, 4096};
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--iters"))
      iters = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--sizes")) {
      sizes.clear();
      for (const char *p = argv[i + 1]; *p;) {
        sizes.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p) ++p;
      }
    }
  }
  fmt::print("# gemm: Tegula (examples::matmul on mma.sync) vs cuBLAS (cublasGemmEx, "
             "CUBLAS_COMPUTE_32F), same device buffers\n");
  std::string why;
  if (!gpu_available(&why)) {
    fmt::print("skipped: {}\n", why);
    return 0;
  }
  try {
    DeviceInfo info = device_info();
    fmt::print("device: {} ({}), driver {}\n", info.name, info.chip, info.driver_version);
    fmt::print("timing: CUDA events, median of {}; row-major A[M,K] B[K,N] -> C[M,N], "
               "TFLOP/s = 2MNK / time\n",
               iters);
    Cublas cublas;
    if (!cublas.handle)
      fmt::print("cuBLAS: {} (Tegula figures only)\n", cublas.why);
    int failures = runDtype<bfloat16>("bf16", CUDA_R_16BF, cublas, sizes, iters) +
                   runDtype<float16>("f16", CUDA_R_16F, cublas, sizes, iters);
    return failures ? 1 : 0;
  } catch (const Error &e) {
    fmt::print("error: {}\n", e.what());
    return 1;
  }
}
