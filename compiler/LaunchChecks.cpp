//===- LaunchChecks.cpp - what every backend refuses in a launch ---------===//
#include "compiler/LaunchChecks.h"

#include "tegula/error.h"

#include <fmt/format.h>

#include <cmath>

namespace tegula::detail {

void checkMaxRegisters(int maxRegisters, const std::string &kernel) {
  if (maxRegisters != 0 && (maxRegisters < 16 || maxRegisters > 255))
    throw Error(fmt::format("kernel '{}': max_registers is 16 to 255 registers a thread (0: ptxas chooses), not {}",
                            kernel, maxRegisters));
}

void checkWarpsAndStages(int numWarps, int numStages, const std::string &kernel) {
  if (numWarps < 1 || numWarps > 32 || (numWarps & (numWarps - 1)) != 0)
    throw Error(fmt::format("kernel '{}': num_warps is 1, 2, 4, 8, 16 or 32 (a CTA holds at most 1024 threads), "
                            "not {}",
                            kernel, numWarps));
  if (numStages < 1)
    throw Error(fmt::format("kernel '{}': num_stages is 1 (no software pipelining) or more, not {}", kernel,
                            numStages));
}

std::optional<double> pastLargestFinite(double v, DType t) {
  // The largest finite value, and where rounding to nearest leaves it: half
  // an ulp above (fp8 E4M3FN has no infinity; its conversions saturate or
  // give NaN, either way not the number given).
  double largest = 0, limit = 0;
  switch (t) {
  case DType::f16: largest = 65504.0, limit = 65520.0; break;
  case DType::bf16:
    largest = std::ldexp(2.0 - std::ldexp(1.0, -7), 127), limit = std::ldexp(2.0 - std::ldexp(1.0, -8), 127);
    break;
  case DType::f32:
    largest = std::ldexp(2.0 - std::ldexp(1.0, -23), 127), limit = std::ldexp(2.0 - std::ldexp(1.0, -24), 127);
    break;
  case DType::f8e4m3: largest = 448.0, limit = 464.0; break;
  case DType::f8e5m2: largest = 57344.0, limit = 61440.0; break;
  default: return std::nullopt;
  }
  if (std::isfinite(v) && std::fabs(v) >= limit)
    return largest;
  return std::nullopt;
}

} // namespace tegula::detail
