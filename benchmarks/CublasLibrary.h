//===- CublasLibrary.h - cuBLAS and cuBLASLt opened at run time --*- C++ -*-===//
//
// The benchmarks' references: cuBLAS (cublasGemmEx, strided batched GEMMs)
// and cuBLASLt (fp8) resolved with dlopen/dlsym like libcuda, so building
// needs neither a GPU nor cuBLAS, and a machine without them still runs
// Tegula's side (`handle` is null and `why` says what is missing).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/device.h"
#include "tegula/error.h"

#include <cublasLt.h>
#include <cublas_api.h>
#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <type_traits>

#include <fmt/format.h>

namespace tegula::bench {

/// The first of `names` that dlopen loads, or null with `why` set.
inline void *openLibrary(std::initializer_list<const char *> names, std::string &why) {
  for (const char *name : names)
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return lib;
  why = fmt::format("cannot load {} ({})", *names.begin(), dlerror());
  return nullptr;
}

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
  using GemmStridedBatchedEx = cublasStatus_t (*)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
      const void *, cudaDataType, int, long long, const void *, cudaDataType, int, long long,
      const void *, void *, cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmStridedBatchedEx gemmStridedBatchedEx = nullptr;
  cublasHandle_t handle = nullptr;
  std::string why;

  Cublas() {
    void *lib = openLibrary({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, why);
    if (!lib)
      return;
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cublasDestroy_v2"));
    gemmEx = reinterpret_cast<decltype(gemmEx)>(dlsym(lib, "cublasGemmEx"));
    gemmStridedBatchedEx =
        reinterpret_cast<decltype(gemmStridedBatchedEx)>(dlsym(lib, "cublasGemmStridedBatchedEx"));
    if (!create || !destroy || !gemmEx || !gemmStridedBatchedEx || create(&handle) != CUBLAS_STATUS_SUCCESS) {
      why = "libcublas has no usable cublasCreate_v2/cublasGemmEx/cublasGemmStridedBatchedEx";
      handle = nullptr;
    }
  }
  ~Cublas() {
    if (handle)
      destroy(handle);
  }
  /// Row-major C[M,N] = A[M,K] B[K,N], as column-major C^T = B^T A^T.
  /// `fastTf32`: f32 operands rounded to tf32 on tensor cores.
  void gemm(cudaDataType type, bool fastTf32, const DeviceBuffer &a, const DeviceBuffer &b,
            DeviceBuffer &c, int M, int N, int K) const {
    const float one = 1, zero = 0;
    cublasStatus_t s = gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one,
                              reinterpret_cast<const void *>(b.device_ptr()), type, N,
                              reinterpret_cast<const void *>(a.device_ptr()), type, K, &zero,
                              reinterpret_cast<void *>(c.device_ptr()), type, N,
                              fastTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
      throw Error(fmt::format("cublasGemmEx failed: status {}", int(s)));
  }
  /// Row-major C[M,N] = A[M,K] B[N,K]^T (the TN layout, both operands
  /// K-major), as column-major C^T = B^T A: i8 -> i32 on the integer tensor
  /// cores, or f32 at tf32 (`tf32`: CUBLAS_COMPUTE_32F_FAST_TF32).
  void gemmTnInt8(const DeviceBuffer &a, const DeviceBuffer &b, DeviceBuffer &c, int M, int N, int K) const {
    const int32_t one = 1, zero = 0;
    gemmTn(CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, &one, &zero, a, b, c, M, N, K, "int8");
  }
  void gemmTnTf32(const DeviceBuffer &a, const DeviceBuffer &b, DeviceBuffer &c, int M, int N, int K) const {
    const float one = 1, zero = 0;
    gemmTn(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, &one, &zero, a, b, c, M, N, K, "tf32");
  }
  void gemmTn(cudaDataType in, cudaDataType out, cublasComputeType_t compute, const void *one,
              const void *zero, const DeviceBuffer &a, const DeviceBuffer &b, DeviceBuffer &c, int M, int N,
              int K, const char *what) const {
    cublasStatus_t s = gemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, one,
                              reinterpret_cast<const void *>(b.device_ptr()), in, K,
                              reinterpret_cast<const void *>(a.device_ptr()), in, K, zero,
                              reinterpret_cast<void *>(c.device_ptr()), out, N, compute, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
      throw Error(fmt::format("cublasGemmEx ({}, TN) failed: status {}", what, int(s)));
  }
  /// One operand of a batch of row-major matrices: a device pointer, its
  /// element type, the row stride (ld) and the stride between matrices.
  struct Batched {
    uint64_t ptr;
    cudaDataType type;
    int ld;
    long long stride;
  };
  /// For each of `batch` matrices, row-major C[M,N] = alpha * A[M,K] op(B)
  /// with op(B) = B[K,N], or B[N,K]^T when `transB` - as column-major
  /// C^T = op(B)^T A^T. f32 compute.
  void gemmBatched(bool transB, int M, int N, int K, float alpha, const Batched &a, const Batched &b,
                   const Batched &c, int batch) const {
    const float zero = 0;
    cublasStatus_t s = gemmStridedBatchedEx(
        handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha,
        reinterpret_cast<const void *>(b.ptr), b.type, b.ld, b.stride,
        reinterpret_cast<const void *>(a.ptr), a.type, a.ld, a.stride, &zero,
        reinterpret_cast<void *>(c.ptr), c.type, c.ld, c.stride, batch, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
      throw Error(fmt::format("cublasGemmStridedBatchedEx failed: status {}", int(s)));
  }
};

/// cuBLASLt for fp8 (cublasGemmEx has none): D (f32) = op(A) op(B), opened
/// at run time like cuBLAS.
struct CublasLt {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) descCreate = nullptr;
  decltype(&cublasLtMatmulDescDestroy) descDestroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) descSet = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layoutDestroy = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  cublasLtHandle_t handle = nullptr;
  std::string why;

  CublasLt() {
    void *lib = openLibrary({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, why);
    if (!lib)
      return;
    auto sym = [&](auto &fn, const char *name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name)); };
    sym(create, "cublasLtCreate");
    sym(destroy, "cublasLtDestroy");
    sym(descCreate, "cublasLtMatmulDescCreate");
    sym(descDestroy, "cublasLtMatmulDescDestroy");
    sym(descSet, "cublasLtMatmulDescSetAttribute");
    sym(layoutCreate, "cublasLtMatrixLayoutCreate");
    sym(layoutDestroy, "cublasLtMatrixLayoutDestroy");
    sym(matmul, "cublasLtMatmul");
    if (!create || !destroy || !descCreate || !descDestroy || !descSet || !layoutCreate ||
        !layoutDestroy || !matmul || create(&handle) != CUBLAS_STATUS_SUCCESS) {
      why = "libcublasLt lacks an entry point Tegula uses";
      handle = nullptr;
    }
  }
  ~CublasLt() {
    if (handle)
      destroy(handle);
  }
  /// Row-major C[M,N] (f32) = A[M,K] Bt[N,K]^T, fp8 `type`: column-major
  /// C^T[N,M] = op_T(Bt as [K,N]) A^T (the TN layout fp8 requires).
  /// `fastAccum` (CUBLASLT_MATMUL_DESC_FAST_ACCUM): the sums stay in the
  /// tensor cores' fp8 accumulation, never promoted to f32 on the way - as
  /// Tegula's wgmma chain does; off (cuBLASLt's default) is slower and more
  /// accurate.
  void gemmTn(cudaDataType type, const DeviceBuffer &a, const DeviceBuffer &bt, DeviceBuffer &c,
              int M, int N, int K, bool fastAccum) const {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    auto check = [&](cublasStatus_t s, const char *what) {
      if (s != CUBLAS_STATUS_SUCCESS)
        throw Error(fmt::format("cuBLASLt {} failed: status {}", what, int(s)));
    };
    try {
      check(descCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
      cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
      check(descSet(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "TRANSA");
      check(descSet(desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n), "TRANSB");
      const int8_t fast = fastAccum ? 1 : 0;
      check(descSet(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast), "FAST_ACCUM");
      check(layoutCreate(&la, type, uint64_t(K), uint64_t(N), int64_t(K)), "layout A");
      check(layoutCreate(&lb, type, uint64_t(K), uint64_t(M), int64_t(K)), "layout B");
      check(layoutCreate(&lc, CUDA_R_32F, uint64_t(N), uint64_t(M), int64_t(N)), "layout C");
      const float one = 1, zero = 0;
      check(matmul(handle, desc, &one, reinterpret_cast<const void *>(bt.device_ptr()), la,
                   reinterpret_cast<const void *>(a.device_ptr()), lb, &zero,
                   reinterpret_cast<const void *>(c.device_ptr()), lc,
                   reinterpret_cast<void *>(c.device_ptr()), lc, nullptr, nullptr, 0, nullptr),
            "cublasLtMatmul");
    } catch (...) {
      for (auto l : {la, lb, lc})
        if (l) layoutDestroy(l);
      if (desc) descDestroy(desc);
      throw;
    }
    for (auto l : {la, lb, lc})
      layoutDestroy(l);
    descDestroy(desc);
  }
};

} // namespace tegula::bench
