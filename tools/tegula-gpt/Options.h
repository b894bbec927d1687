//===- Options.h - tegula-gpt's --name value options -----------*- C++ -*-===//
//
// Each subcommand's options with their defaults and help. Values are parsed
// whole (`--steps 1e3` is an error, not 1 step) and checked against their
// range where they are read, and every error names the option and the
// value; an option given twice, or followed by another option instead of
// its value, is an error too.
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
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tegula::gpt::cli {

/// One --name value option: its default and what it is, for --help.
struct OptionSpec {
  std::string name, value, help;
};

class Options {
public:
  /// argv[first..] as `--name value` or `--name=value` pairs of `specs`'
  /// names; each at most once.
  Options(int argc, char **argv, int first, const std::vector<OptionSpec> &specs) {
    for (const OptionSpec &spec : specs)
      values_[spec.name] = spec.value;
    for (int i = first; i < argc; ++i) {
      std::string key = argv[i], value;
      const size_t eq = key.find('=');
      const bool inline_value = key.rfind("--", 0) == 0 && eq != std::string::npos;
      if (inline_value)
        value = key.substr(eq + 1), key = key.substr(0, eq);
      if (key.rfind("--", 0) != 0 || !values_.count(key.substr(2)))
        throw Error(fmt::format("unknown option '{}' (options: {}; --help says what each is)", key, names()));
      if (!inline_value) {
        if (i + 1 >= argc)
          throw Error(fmt::format("option '{}' needs a value", key));
        value = argv[++i];
        if (value.rfind("--", 0) == 0 && value.size() > 2)
          throw Error(fmt::format("option '{}' needs a value, and the next word '{}' is an option (a value that "
                                  "starts with -- is written {}=VALUE)",
                                  key, value, key));
      }
      if (!given_.insert(key).second)
        throw Error(fmt::format("option '{}' is given twice ('{}' and '{}'): give it once", key,
                                values_[key.substr(2)], value));
      values_[key.substr(2)] = value;
    }
  }

  /// `usage` and each option with its default and what it is.
  static std::string help(const std::string &usage, const std::vector<OptionSpec> &specs) {
    std::string out = usage + "\n\noptions (--name value or --name=value; defaults in brackets):\n";
    size_t width = 0;
    for (const OptionSpec &spec : specs)
      width = std::max(width, spec.name.size());
    for (const OptionSpec &spec : specs)
      out += fmt::format("  --{:<{}}  {}{}\n", spec.name, width, spec.help,
                         spec.value.empty() ? "" : fmt::format(" [{}]", spec.value));
    return out;
  }

  const std::string &str(const std::string &k) const { return values_.at(k); }
  /// --k becomes `value` (to check a value with the accessors below).
  void set(const std::string &k, const std::string &value) { values_.at(k) = value; }
  /// --k becomes `value` unless the command line gave it (a resumed run's
  /// settings replace the defaults, not what the user asked for).
  void adopt(const std::string &k, const std::string &value) {
    if (!given(k))
      values_.at(k) = value;
  }
  /// Whether --k was on the command line (not its default).
  bool given(const std::string &k) const { return given_.count("--" + k) > 0; }

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
  std::set<std::string> given_;
};

} // namespace tegula::gpt::cli
