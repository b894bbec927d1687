// TestUtil.h - random inputs, poisoned outputs and error norms for tests.
#pragma once

#include "compiler/backend/PtxBackend.h"
#include "tegula/device.h"
#include "tegula/dtype.h"
#include "tegula/error.h"
#include "tegula/kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tegula::testing {

/// An environment variable set (or, with nullptr, unset) for a scope; the
/// caller's value, or its absence, is back afterwards.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  std::string name_;
  std::optional<std::string> old_;
};

/// Whether compile() assembles cubins here: registers, spills and shared
/// bytes are ptxas's report, zero without it (no CUDA toolkit).
inline bool have_ptxas() {
  static const bool found = backend::findPtxas().has_value();
  return found;
}

/// "interpreter", "simulator" or "GPU": a backend as failures name it.
inline const char *backend_name(Backend b) {
  return b == Backend::Interp ? "interpreter" : b == Backend::Sim ? "simulator" : "GPU";
}

/// The interpreter and the simulator, and the GPU when there is one (said
/// when not, naming `what`). The caller's SCOPED_TRACE names the backend of
/// a failure.
inline std::vector<Backend> backendsWithTheGpu(const char *what) {
  if (gpu_available())
    return {Backend::Interp, Backend::Sim, Backend::GPU};
  std::printf("[tegula test] no CUDA driver: %s checked in the interpreter and simulator only\n", what);
  return {Backend::Interp, Backend::Sim};
}

/// A fresh seed per run (printed by the test on failure through the seed
/// recorded in SCOPED_TRACE), so inputs differ between runs.
inline std::mt19937 &rng() {
  static std::mt19937 gen([] {
    unsigned seed = std::random_device{}();
    std::printf("[tegula test] random seed %u\n", seed);
    return seed;
  }());
  return gen;
}

template <class T> std::vector<T> random_vector(size_t n, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<T> v(n);
  for (auto &x : v)
    x = T(d(rng()));
  return v;
}

/// Output buffers start as NaN so an element the kernel forgot to write fails.
template <class T> std::vector<T> poisoned(size_t n) { return std::vector<T>(n, T(NAN)); }

/// ||out - ref|| / ||ref||; infinity when any output is NaN.
template <class T>
double rel_error(const std::vector<T> &out, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double o = double(float(out[i]));
    if (std::isnan(o))
      return INFINITY;
    num += (o - ref[i]) * (o - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

/// Tolerances for ||out - ref|| / ||ref|| by storage type.
template <class T> constexpr double tolerance() {
  if constexpr (std::is_same_v<T, bfloat16>) return 1e-2;
  else if constexpr (std::is_same_v<T, float16>) return 2e-3;
  else return 1e-5;
}

template <class T> std::vector<double> to_double(const std::vector<T> &v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = double(float(v[i]));
  return out;
}

/// C = A B in double for row-major A [M, K] and B [K, N].
template <class T>
std::vector<double> matmul_reference(const std::vector<T> &a, const std::vector<T> &b, int M, int N, int K) {
  std::vector<double> c(size_t(M) * size_t(N));
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) {
      const double x = double(float(a[size_t(m) * K + k]));
      for (int n = 0; n < N; ++n)
        c[size_t(m) * N + n] += x * double(float(b[size_t(k) * N + n]));
    }
  return c;
}

/// Attention in double: out = softmax(q k^T * scale, masked past `causal`'s
/// diagonal) v for `heads` independent [T, D] row-major q, k, v.
template <class T>
std::vector<double> attention_reference(const std::vector<T> &q, const std::vector<T> &k,
                                        const std::vector<T> &v, int heads, int seq, int dim,
                                        double scale, bool causal) {
  std::vector<double> out(size_t(heads) * size_t(seq) * size_t(dim), 0.0);
  std::vector<double> s(static_cast<size_t>(seq));
  for (int h = 0; h < heads; ++h) {
    const size_t base = size_t(h) * size_t(seq) * size_t(dim);
    auto at = [&](const std::vector<T> &x, int row, int col) {
      return double(float(x[base + size_t(row) * size_t(dim) + size_t(col)]));
    };
    for (int i = 0; i < seq; ++i) {
      const int keys = causal ? i + 1 : seq;
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j < keys; ++j) {
        double dotp = 0;
        for (int d = 0; d < dim; ++d)
          dotp += at(q, i, d) * at(k, j, d);
        s[size_t(j)] = dotp * scale;
        mx = std::max(mx, s[size_t(j)]);
      }
      for (int j = 0; j < keys; ++j)
        sum += (s[size_t(j)] = std::exp(s[size_t(j)] - mx));
      for (int j = 0; j < keys; ++j)
        for (int d = 0; d < dim; ++d)
          out[base + size_t(i) * size_t(dim) + size_t(d)] += s[size_t(j)] / sum * at(v, j, d);
    }
  }
  return out;
}

/// The message of the tegula::Error `fn` throws, or "(no error)".
template <class F> std::string error_of(F &&fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

/// How many times `needle` occurs in `text` (e.g. an instruction in PTX).
inline int occurrences(const std::string &text, const std::string &needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

} // namespace tegula::testing
