//===- Options.h - tegula-gpt's --name value options -----------*- C++ -*-===//
//
// Each subcommand's options with their defaults. Values are parsed whole
// (`--steps 1e3` is an error, not 1 step) and checked against their range
// where they are read, and every error names the option and the value.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/error.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>

namespace tegula::gpt::cli {

class Options {
public:
  Options(int argc, char **argv, int first, std::map<std::string, std::string> defaults)
      : values_(std::move(defaults)) {
    for (int i = first; i < argc; i += 2) {
      std::string key = argv[i];
      if (key.rfind("--", 0) != 0 || !values_.count(key.substr(2)))
        throw Error(fmt::format("unknown option '{}' (options: {})", key, names()));
      if (i + 1 >= argc)
        throw Error(fmt::format("option '{}' needs a value", key));
      values_[key.substr(2)] = argv[i + 1];
    }
  }

  const std::string &str(const std::string &k) const { return values_.at(k); }

  /// --k as an integer in [lo, hi].
  int integer(const std::string &k, int64_t lo = std::numeric_limits<int>::min(),
              int64_t hi = std::numeric_limits<int>::max()) const {
    const std::string &v = str(k);
    int64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi)
      throw Error(fmt::format("--{} is an integer from {} to {}, not '{}'", k, lo, hi, v));
    return int(x);
  }

  /// --k as a seed: any integer from 0 to 2^64 - 1.
  uint64_t seed(const std::string &k) const {
    const std::string &v = str(k);
    uint64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size())
      throw Error(fmt::format("--{} is an integer from 0 to 18446744073709551615, not '{}'", k, v));
    return x;
  }

  /// --k as a finite number in [lo, hi].
  float real(const std::string &k, double lo = -std::numeric_limits<double>::max(),
             double hi = std::numeric_limits<double>::max()) const {
    const std::string &v = str(k);
    char *end = nullptr;
    const double x = v.empty() ? NAN : std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x) || x < lo || x > hi ||
        !std::isfinite(float(x)))
      throw Error(fmt::format("--{} is a finite number from {} to {}, not '{}'", k, lo, hi, v));
    return float(x);
  }

private:
  std::string names() const {
    std::string out;
    for (auto &[k, v] : values_)
      out += (out.empty() ? "--" : ", --") + k;
    return out;
  }
  std::map<std::string, std::string> values_;
};

} // namespace tegula::gpt::cli
