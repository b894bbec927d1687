//===- HostFunctions.cpp - what simulated kernel code calls ---------------===//
//
// The instrumented module calls these instead of NVVM intrinsics and inline
// PTX; libdevice's __nv_* math and CUDA's vprintf get host definitions.
//
//===----------------------------------------------------------------------===//
#include "simulator/HostFunctions.h"

#include "simulator/PtxAsm.h"
#include "simulator/Runtime.h"
#include "simulator/TensorCore.h"
#include "tegula/dtype.h"
#include "tegula/print.h"

#include "llvm/ADT/APFloat.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace tegula::sim {
namespace {
thread_local const std::vector<std::shared_ptr<const AsmProgram>> *tPrograms = nullptr;
thread_local std::string *tPrinted = nullptr;
// The last line a simulated thread printed: a trap without a report (one
// in inline PTX, say) right after it quotes it.
thread_local std::string tLastPrint;
thread_local int tLastPrintThread = -1;
thread_local SimErrorReport *tReport = nullptr;

/// PTX shfl.sync: lanes read `value` from a lane picked by mode, b and c.
struct ShuffleIO {
  int32_t value, b, c, mode;
  int32_t result;
};

void completeShuffle(void *const ios[kWarpSize], uint32_t site) {
  for (int lane = 0; lane < kWarpSize; ++lane) {
    auto *io = static_cast<ShuffleIO *>(ios[lane]);
    if (!io)
      continue;
    int bval = io->b & 31, cval = io->c & 31, segmask = (io->c >> 8) & 31;
    int maxLane = (lane & segmask) | (cval & ~segmask), minLane = lane & segmask;
    int j = lane;
    bool inRange = false;
    switch (ShuffleMode(io->mode)) {
    case ShuffleMode::Up: j = lane - bval; inRange = j >= maxLane; break;
    case ShuffleMode::Down: j = lane + bval; inRange = j <= maxLane; break;
    case ShuffleMode::Bfly: j = lane ^ bval; inRange = j <= maxLane; break;
    case ShuffleMode::Idx: j = minLane | (bval & ~segmask); inRange = j <= maxLane; break;
    }
    if (!inRange)
      j = lane;
    if (!ios[j])
      fail(site, fmt::format("shfl.sync: lane {} reads lane {}, which is not in the member mask "
                             "(its value is undefined)",
                             lane, j));
    io->result = static_cast<ShuffleIO *>(ios[j])->value;
  }
}

template <class F> F *fn(F *f) { return f; }

// vprintf's argument buffer: each argument at its natural alignment; floats
// arrive as doubles, as in C varargs.
int simVprintf(const char *format, const char *args) {
  std::string out;
  size_t offset = 0;
  auto take = [&](size_t bytes) {
    offset = (offset + bytes - 1) / bytes * bytes;
    const char *p = args + offset;
    offset += bytes;
    return p;
  };
  for (const char *f = format; *f;) {
    if (*f != '%') {
      out += *f++;
      continue;
    }
    if (f[1] == '%') {
      out += '%';
      f += 2;
      continue;
    }
    const char *start = f++;
    while (*f && std::strchr("-+ #0123456789.*", *f))
      ++f;
    int longs = 0;
    while (*f == 'l' || *f == 'h' || *f == 'z')
      longs += *f++ == 'l';
    char conv = *f ? *f++ : 'd';
    std::string spec(start, f);
    char buf[512];
    if (std::strchr("diuxXoc", conv)) {
      if (longs) {
        long long v;
        std::memcpy(&v, take(8), 8);
        std::snprintf(buf, sizeof buf, spec.c_str(), v);
      } else {
        int v;
        std::memcpy(&v, take(4), 4);
        std::snprintf(buf, sizeof buf, spec.c_str(), v);
      }
    } else if (std::strchr("feEgGaA", conv)) {
      double v;
      std::memcpy(&v, take(8), 8);
      std::snprintf(buf, sizeof buf, spec.c_str(), v);
    } else if (conv == 's' || conv == 'p') {
      const void *v;
      std::memcpy(&v, take(8), 8);
      std::snprintf(buf, sizeof buf, spec.c_str(), v);
    } else {
      std::snprintf(buf, sizeof buf, "%s", spec.c_str());
    }
    out += buf;
  }
  if (tPrinted) {
    *tPrinted += out;
  } else {
    detail::emit_print(out); // stdout, or Python's sys.stdout (tegula/print.h)
  }
  tLastPrint = out;
  tLastPrintThread = threadId();
  return int(out.size());
}

} // namespace

void setAsmPrograms(const std::vector<std::shared_ptr<const AsmProgram>> *programs) {
  tPrograms = programs;
  tLastPrintThread = -1;
}

void capturePrintf(std::string *into) { tPrinted = into; }

void setErrorReport(SimErrorReport *report) { tReport = report; }

} // namespace tegula::sim

using namespace tegula::sim;

extern "C" {
static int32_t tegula_sim_sreg(int32_t r) { return specialRegister(SpecialRegister(r)); }
static void tegula_sim_barrier(int32_t site) { barrier(uint32_t(site)); }
static int32_t tegula_sim_shfl(int32_t mode, int32_t mask, int32_t value, int32_t b, int32_t c,
                               int32_t site) {
  ShuffleIO io{value, b, c, mode, 0};
  warpCollective("shfl.sync", uint32_t(site), uint32_t(mask), &io,
                 [site](void *const ios[kWarpSize]) { completeShuffle(ios, uint32_t(site)); });
  return io.result;
}
static void tegula_sim_access(const void *p, int64_t bytes, int32_t flags, int32_t site) {
  checkAccess(p, size_t(bytes), AccessKind(flags & 3), Space(uint32_t(flags) >> 2), uint32_t(site));
  profileAccess(p, size_t(bytes), AccessKind(flags & 3), Space(uint32_t(flags) >> 2), uint32_t(site));
}
static void *tegula_sim_shared(int64_t offset) { return sharedBase() + offset; }
static void tegula_sim_asm(int32_t program, const uint64_t *in, uint64_t *out, int32_t site) {
  (*tPrograms)[size_t(program)]->run(in, out, uint32_t(site));
}
static void tegula_sim_trap(int32_t site) {
  if (tReport && tReport->record.site)
    fail(uint32_t(site),
         "the kernel stopped: " + tegula::runtime::describeDeviceError(tReport->record, *tReport->sites));
  std::string said = tLastPrintThread == threadId() ? tLastPrint : "";
  while (!said.empty() && said.back() == '\n')
    said.pop_back();
  fail(uint32_t(site), said.empty() ? "trap (the kernel aborted)" : "trap after printing: " + said);
}
// The address of the launch's error report word (0: the record's address, 1: the claim).
static void *tegula_sim_error_word(int32_t which) {
  if (!tReport) // (no site: this is the simulator's own state)
    fail(UINT32_MAX, "simulator: a kernel that reports errors ran without a record to report in");
  return which == 0 ? static_cast<void *>(&tReport->address) : static_cast<void *>(&tReport->claim);
}

static void tegula_sim_mma(int32_t kind, const uint32_t *a, const uint32_t *b, const float *c,
                           float *d, int32_t site) {
  mmaSync(MmaKind(kind), a, b, c, d, uint32_t(site));
}
static void tegula_sim_ldmatrix(int32_t num, int32_t trans, const void *row, uint32_t *out,
                                int32_t site) {
  ldmatrix(num, trans != 0, row, out, uint32_t(site));
}
static void tegula_sim_stmatrix(int32_t num, int32_t trans, void *row, const uint32_t *words, int32_t site) {
  stmatrix(num, trans != 0, row, words, uint32_t(site));
}
static void tegula_sim_cp_async(void *dst, const void *src, int32_t cpSize, int32_t srcSize,
                                int32_t site) {
  cpAsync(dst, src, cpSize, srcSize, uint32_t(site));
}
static void tegula_sim_cp_async_commit() { cpAsyncCommitGroup(); }
static void tegula_sim_cp_async_wait(int32_t n, int32_t site) { cpAsyncWaitGroup(n, uint32_t(site)); }

static float nv_rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static double nv_rsqrt(double x) { return 1.0 / std::sqrt(x); }
static int nv_isnanf(float x) { return std::isnan(x); }
static int nv_isinff(float x) { return std::isinf(x); }
static int nv_finitef(float x) { return std::isfinite(x); }
static int nv_isnand(double x) { return std::isnan(x); }
static int nv_isinfd(double x) { return std::isinf(x); }
static int nv_isfinited(double x) { return std::isfinite(x); }
static float nv_powif(float x, int n) { return std::pow(x, float(n)); }
static double nv_powi(double x, int n) { return std::pow(x, double(n)); }
static void nv_sincosf(float x, float *s, float *c) { *s = std::sin(x), *c = std::cos(x); }
static void nv_sincos(double x, double *s, double *c) { *s = std::sin(x), *c = std::cos(x); }
static int nv_abs(int x) { return x < 0 ? -x : x; }
// div.full.f32 (within 2 ulp on the GPU) as the interpreter divides: exactly.
static float tegula_sim_div_full(float a, float b) { return a / b; }
// rcp.approx.ftz.f32 (within 1 ulp on the GPU) as the interpreter computes
// it: 1 / x rounded to f32, subnormal inputs and results flushed to zero.
static float tegula_sim_rcp_approx_ftz_f32(float x) {
  const auto flush = [](float v) {
    return std::fabs(v) < std::numeric_limits<float>::min() ? std::copysign(0.0f, v) : v;
  };
  return flush(1.0f / flush(x));
}
// tanh.approx.f32 (tl::tanh_approx: about 2^-11 relative on the GPU) as the
// interpreter computes it: tanh rounded to f32.
static float tegula_sim_tanh_approx_f32(float x) { return float(std::tanh(double(x))); }
// ex2.approx.ftz.f32 as the interpreter computes it: 2^x rounded to f32,
// subnormal results flushed to +0 (subnormal inputs give 1 either way).
static float tegula_sim_ex2_approx_ftz_f32(float x) {
  const float r = float(std::exp2(double(x)));
  return r < std::numeric_limits<float>::min() ? 0.0f : r;
}

// Conversions the host code generator calls instead of inlining (compiler
// runtime names). They are defined here rather than taken from whatever
// libgcc or compiler-rt the machine has: gcc 12's libgcc lacks
// __truncsfbf2, for one. A 16-bit float travels in the low 16 bits of an
// SSE register (x86-64 psABI), the same register as a float whose bits
// carry it, so float stands in for _Float16/__bf16 at the boundary.
static float half_in_register(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits)); }
static uint16_t half_from_register(float f) { return uint16_t(std::bit_cast<uint32_t>(f)); }
/// One correctly rounded (to nearest even) conversion between IEEE formats.
static llvm::APFloat convert(llvm::APFloat value, const llvm::fltSemantics &to) {
  bool lost;
  value.convert(to, llvm::APFloat::rmNearestTiesToEven, &lost);
  return value;
}
static float to16(double x, const llvm::fltSemantics &to) {
  return half_in_register(uint16_t(convert(llvm::APFloat(x), to).bitcastToAPInt().getZExtValue()));
}
static float from16(float h, const llvm::fltSemantics &from) {
  return convert(llvm::APFloat(from, llvm::APInt(16, half_from_register(h))),
                 llvm::APFloat::IEEEsingle())
      .convertToFloat();
}
// f32 -> bf16 is on every bf16 store: the DSL's own rounding, no APFloat.
static float rt_truncsfbf2(float x) { return half_in_register(tegula::bfloat16(x).bits); }
static float rt_truncdfbf2(double x) { return to16(x, llvm::APFloat::BFloat()); }
static float rt_extendbfsf2(float h) { return std::bit_cast<float>(uint32_t(half_from_register(h)) << 16); }
static float rt_truncsfhf2(float x) { return to16(x, llvm::APFloat::IEEEhalf()); }
static float rt_truncdfhf2(double x) { return to16(x, llvm::APFloat::IEEEhalf()); }
static float rt_extendhfsf2(float h) { return from16(h, llvm::APFloat::IEEEhalf()); }
// The pre-2022 ARM/GNU names, which pass the half as an integer.
static uint16_t rt_gnu_f2h_ieee(float x) { return half_from_register(rt_truncsfhf2(x)); }
static float rt_gnu_h2f_ieee(uint16_t bits) { return rt_extendhfsf2(half_in_register(bits)); }
static float rt_powisf2(float x, int n) { return std::pow(x, float(n)); }
static double rt_powidf2(double x, int n) { return std::pow(x, double(n)); }
}

namespace tegula::sim {

std::vector<std::pair<std::string, void *>> hostSymbols() {
  std::vector<std::pair<std::string, void *>> s = {
      {"__tegula_sim_sreg", reinterpret_cast<void *>(tegula_sim_sreg)},
      {"__tegula_sim_barrier", reinterpret_cast<void *>(tegula_sim_barrier)},
      {"__tegula_sim_shfl", reinterpret_cast<void *>(tegula_sim_shfl)},
      {"__tegula_sim_access", reinterpret_cast<void *>(tegula_sim_access)},
      {"__tegula_sim_shared", reinterpret_cast<void *>(tegula_sim_shared)},
      {"__tegula_sim_asm", reinterpret_cast<void *>(tegula_sim_asm)},
      {"__tegula_sim_trap", reinterpret_cast<void *>(tegula_sim_trap)},
      {"__tegula_sim_error_word", reinterpret_cast<void *>(tegula_sim_error_word)},
      {"__tegula_sim_mma", reinterpret_cast<void *>(tegula_sim_mma)},
      {"__tegula_sim_ldmatrix", reinterpret_cast<void *>(tegula_sim_ldmatrix)},
      {"__tegula_sim_stmatrix", reinterpret_cast<void *>(tegula_sim_stmatrix)},
      {"__tegula_sim_cp_async", reinterpret_cast<void *>(tegula_sim_cp_async)},
      {"__tegula_sim_cp_async_commit", reinterpret_cast<void *>(tegula_sim_cp_async_commit)},
      {"__tegula_sim_cp_async_wait", reinterpret_cast<void *>(tegula_sim_cp_async_wait)},
      {"vprintf", reinterpret_cast<void *>(simVprintf)},
      {"__tegula_sim_ex2_approx_ftz_f32", reinterpret_cast<void *>(tegula_sim_ex2_approx_ftz_f32)},
      {"__tegula_sim_div_full", reinterpret_cast<void *>(tegula_sim_div_full)},
      {"__tegula_sim_rcp_approx_ftz_f32", reinterpret_cast<void *>(tegula_sim_rcp_approx_ftz_f32)},
      {"__tegula_sim_tanh_approx_f32", reinterpret_cast<void *>(tegula_sim_tanh_approx_f32)},
      {"__nv_rsqrtf", reinterpret_cast<void *>(nv_rsqrtf)},
      {"__nv_rsqrt", reinterpret_cast<void *>(nv_rsqrt)},
      {"__nv_isnanf", reinterpret_cast<void *>(nv_isnanf)},
      {"__nv_isinff", reinterpret_cast<void *>(nv_isinff)},
      {"__nv_finitef", reinterpret_cast<void *>(nv_finitef)},
      {"__nv_isnand", reinterpret_cast<void *>(nv_isnand)},
      {"__nv_isinfd", reinterpret_cast<void *>(nv_isinfd)},
      {"__nv_isfinited", reinterpret_cast<void *>(nv_isfinited)},
      {"__nv_powif", reinterpret_cast<void *>(nv_powif)},
      {"__nv_powi", reinterpret_cast<void *>(nv_powi)},
      {"__nv_sincosf", reinterpret_cast<void *>(nv_sincosf)},
      {"__nv_fast_sincosf", reinterpret_cast<void *>(nv_sincosf)},
      {"__nv_sincos", reinterpret_cast<void *>(nv_sincos)},
      {"__nv_abs", reinterpret_cast<void *>(nv_abs)},
      // Compiler-runtime conversions (see above).
      {"__truncsfbf2", reinterpret_cast<void *>(rt_truncsfbf2)},
      {"__truncdfbf2", reinterpret_cast<void *>(rt_truncdfbf2)},
      {"__extendbfsf2", reinterpret_cast<void *>(rt_extendbfsf2)},
      {"__truncsfhf2", reinterpret_cast<void *>(rt_truncsfhf2)},
      {"__truncdfhf2", reinterpret_cast<void *>(rt_truncdfhf2)},
      {"__extendhfsf2", reinterpret_cast<void *>(rt_extendhfsf2)},
      {"__gnu_f2h_ieee", reinterpret_cast<void *>(rt_gnu_f2h_ieee)},
      {"__gnu_h2f_ieee", reinterpret_cast<void *>(rt_gnu_h2f_ieee)},
      {"__powisf2", reinterpret_cast<void *>(rt_powisf2)},
      {"__powidf2", reinterpret_cast<void *>(rt_powidf2)},
      // What the code generator lowers some LLVM intrinsics and large
      // copies to: the C library's own, named explicitly.
      {"memcpy", reinterpret_cast<void *>(fn<void *(void *, const void *, size_t)>(std::memcpy))},
      {"memmove", reinterpret_cast<void *>(fn<void *(void *, const void *, size_t)>(std::memmove))},
      {"memset", reinterpret_cast<void *>(fn<void *(void *, int, size_t)>(std::memset))},
  };
  // libdevice functions that are plain C math: __nv_<name>f -> <name>f,
  // __nv_<name> -> <name>, __nv_fast_<name>f -> <name>f. The C names
  // themselves too: the host code generator lowers llvm.round, frem, ... to
  // them when the baseline CPU has no instruction.
#define TEGULA_MATH(type, name, cname)                                                         \
  s.push_back({"__nv_" #name, reinterpret_cast<void *>(fn<type>(::cname))});                   \
  s.push_back({#name, reinterpret_cast<void *>(fn<type>(::cname))});
#define TEGULA_UNARY(name)                                                                     \
  TEGULA_MATH(float(float), name##f, name##f) TEGULA_MATH(double(double), name, name)
#define TEGULA_BINARY(name)                                                                    \
  TEGULA_MATH(float(float, float), name##f, name##f)                                           \
  TEGULA_MATH(double(double, double), name, name)
  TEGULA_UNARY(acos) TEGULA_UNARY(acosh) TEGULA_UNARY(asin) TEGULA_UNARY(asinh)
  TEGULA_UNARY(atan) TEGULA_UNARY(atanh) TEGULA_UNARY(cbrt) TEGULA_UNARY(ceil)
  TEGULA_UNARY(cos) TEGULA_UNARY(cosh) TEGULA_UNARY(erf) TEGULA_UNARY(erfc)
  TEGULA_UNARY(exp) TEGULA_UNARY(exp2) TEGULA_UNARY(expm1) TEGULA_UNARY(fabs)
  TEGULA_UNARY(floor) TEGULA_UNARY(log) TEGULA_UNARY(log10) TEGULA_UNARY(log1p)
  TEGULA_UNARY(log2) TEGULA_UNARY(rint) TEGULA_UNARY(round) TEGULA_UNARY(sin)
  TEGULA_UNARY(sinh) TEGULA_UNARY(sqrt) TEGULA_UNARY(tan) TEGULA_UNARY(tanh)
  TEGULA_BINARY(atan2) TEGULA_BINARY(copysign) TEGULA_BINARY(fmax) TEGULA_BINARY(fmin)
  TEGULA_BINARY(fmod) TEGULA_BINARY(pow)
  TEGULA_UNARY(trunc) TEGULA_UNARY(nearbyint)
  TEGULA_MATH(float(float, float, float), fmaf, fmaf)
  TEGULA_MATH(double(double, double, double), fma, fma)
  TEGULA_MATH(float(float, int), ldexpf, ldexpf)
  TEGULA_MATH(double(double, int), ldexp, ldexp)
#undef TEGULA_UNARY
#undef TEGULA_BINARY
#undef TEGULA_MATH
  for (const char *f : {"cos", "exp", "log10", "log2", "log", "sin", "tan"})
    for (auto &[name, ptr] : std::vector<std::pair<std::string, void *>>(s))
      if (name == fmt::format("__nv_{}f", f))
        s.push_back({fmt::format("__nv_fast_{}f", f), ptr});
  for (auto &[name, ptr] : std::vector<std::pair<std::string, void *>>(s))
    if (name == "__nv_powf")
      s.push_back({"__nv_fast_powf", ptr});
  return s;
}

} // namespace tegula::sim
