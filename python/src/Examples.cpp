//===- Examples.cpp - tegula.examples: the example kernels, prebuilt -------===//
//
// examples/kernels.h published with tegula/python.h, in f32, bf16 and f16
// where the kernel is a template (the launch picks by the arrays' dtype).
//
//===----------------------------------------------------------------------===//
#include "examples/kernels.h"
#include "examples/stream_k.h"
#include "tegula/python.h"

using namespace tegula;

namespace {
template <class T> void addFloatKernels(python::ModuleBuilder &m) {
  m.kernel("softmax", examples::softmax<T>, {"x", "out", "n_cols", "BLOCK"});
  m.kernel("layernorm", examples::layernorm<T>,
           {"x", "weight", "bias", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"});
  m.kernel("gelu", examples::gelu<T>, {"x", "out", "n", "BLOCK"});
  m.kernel("matmul", examples::matmul<T>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  m.kernel("matmul_descriptors", examples::matmul_descriptors<T>,
           {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  m.kernel("matmul_persistent_cluster", examples::matmul_persistent_cluster<T>,
           {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  m.kernel("matmul_stream_k", examples::matmul_stream_k<T>,
           {"a", "b", "c", "partials", "arrivals", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  m.kernel("transpose", examples::transpose<T>, {"x", "out", "M", "N", "BM", "BN"});
}
template <class T> void addAttention(python::ModuleBuilder &m) {
  m.kernel("attention_fwd", examples::attention_fwd<T>,
           {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
}
} // namespace

TEGULA_PYTHON_MODULE(examples, m) {
  m.module().doc() = "Tegula's example kernels (examples/kernels.h), prebuilt";
  m.kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  m.kernel("row_sum_atomic", examples::row_sum_atomic, {"x", "out", "n_cols", "BLOCK"});
  m.kernel("dropout", examples::dropout, {"x", "out", "n", "p", "seed", "BLOCK"});
  addFloatKernels<float>(m);
  addFloatKernels<bfloat16>(m);
  addFloatKernels<float16>(m);
  addAttention<bfloat16>(m);
  addAttention<float16>(m);
  for (auto add : {+[](python::ModuleBuilder &mb) {
                     mb.kernel("quantize_fp8", examples::quantize_fp8<float8_e4m3>, {"x", "q", "scale", "n", "BLOCK"});
                     mb.kernel("dequantize_fp8", examples::dequantize_fp8<float8_e4m3>, {"q", "x", "scale", "n", "BLOCK"});
                   },
                   +[](python::ModuleBuilder &mb) {
                     mb.kernel("quantize_fp8", examples::quantize_fp8<float8_e5m2>, {"x", "q", "scale", "n", "BLOCK"});
                     mb.kernel("dequantize_fp8", examples::dequantize_fp8<float8_e5m2>, {"q", "x", "scale", "n", "BLOCK"});
                   }})
    add(m);
}
