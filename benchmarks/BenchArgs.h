// BenchArgs.h - every benchmark's command line: `--name value` options and
// `--name` switches bound to the benchmark's own variables, and `--help`.
// An unknown option, a missing value or a malformed number is an error that
// names it (exit 2): a misspelt flag used to run the whole benchmark at its
// defaults, on a GPU whose every minute is counted.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tegula::bench {

class Args {
public:
  /// `program` as the user types it (gemm, gpt2-train, ...); `synopsis`:
  /// what it measures, one line, for --help.
  Args(std::string program, std::string synopsis) : program_(std::move(program)), synopsis_(std::move(synopsis)) {}

  /// `--name N` sets `value` (an integer, at least `least`; the default is
  /// what it holds).
  Args &option(std::string name, int &value, std::string help, int least = 1) {
    options_.push_back({std::move(name), &value, std::move(help), least});
    return *this;
  }
  /// `--name TEXT` sets `value`; with `choices`, one of them (or, with
  /// `list`, a comma-separated list of them).
  Args &option(std::string name, std::string &value, std::string help, std::vector<std::string> choices = {},
               bool list = false) {
    options_.push_back({std::move(name), &value, std::move(help), 0, std::move(choices), list});
    return *this;
  }
  /// `--name` (no value) sets `value` to true.
  Args &flag(std::string name, bool &value, std::string help) {
    options_.push_back({std::move(name), &value, std::move(help)});
    return *this;
  }

  /// Reads argv[1..] into the bound variables. Returns the status main
  /// should exit with, or nullopt to run: 0 after printing the usage for
  /// --help, 2 after an error (on stderr, followed by the usage).
  std::optional<int> parse(int argc, char **argv) const {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        fmt::print("{}", usage());
        return 0;
      }
      const Option *o = find(arg);
      if (!o)
        return fail(fmt::format("unknown option '{}'", arg));
      if (auto *b = std::get_if<bool *>(&o->target)) {
        **b = true;
        continue;
      }
      if (i + 1 >= argc)
        return fail(fmt::format("{} needs a value", arg));
      const std::string text = argv[++i];
      if (auto *n = std::get_if<int *>(&o->target)) {
        int value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size())
          return fail(fmt::format("{} takes an integer, not '{}'", arg, text));
        if (value < o->least)
          return fail(fmt::format("{} is at least {}, not {}", arg, o->least, value));
        **n = value;
      } else {
        for (const std::string &item : o->list ? split(text) : std::vector<std::string>{text})
          if (!o->choices.empty() && std::find(o->choices.begin(), o->choices.end(), item) == o->choices.end())
            return fail(fmt::format("{} takes {}{}, not '{}'", arg, o->list ? "a comma-separated list of " : "",
                                    joined(o->choices), item));
        *std::get<std::string *>(o->target) = text;
      }
    }
    return std::nullopt;
  }

  std::string usage() const {
    std::string out = fmt::format("{}: {}\nusage: {} [options]\n", program_, synopsis_, program_);
    for (const Option &o : options_) {
      std::string shown = "--" + o.name;
      if (auto *n = std::get_if<int *>(&o.target))
        shown += fmt::format(" N (default {})", **n);
      else if (auto *s = std::get_if<std::string *>(&o.target))
        shown += (*s)->empty() ? std::string(" TEXT") : fmt::format(" TEXT (default '{}')", **s);
      out += fmt::format("  {:<34} {}\n", shown, o.help);
    }
    out += fmt::format("  {:<34} {}\n", "--help", "this text");
    return out;
  }

private:
  struct Option {
    std::string name;
    std::variant<int *, std::string *, bool *> target;
    std::string help;
    int least = 1;                    // integers
    std::vector<std::string> choices; // text: empty = anything
    bool list = false;                // text: comma-separated choices
  };
  static std::vector<std::string> split(const std::string &text) {
    std::vector<std::string> items;
    for (size_t at = 0; at <= text.size();) {
      const size_t comma = std::min(text.find(',', at), text.size());
      items.push_back(text.substr(at, comma - at));
      at = comma + 1;
    }
    return items;
  }
  static std::string joined(const std::vector<std::string> &choices) {
    std::string out;
    for (size_t i = 0; i < choices.size(); ++i)
      out += (i ? i + 1 == choices.size() ? " or " : ", " : "") + choices[i];
    return out;
  }
  const Option *find(const std::string &arg) const {
    if (arg.rfind("--", 0) != 0)
      return nullptr;
    for (const Option &o : options_)
      if (arg.compare(2, std::string::npos, o.name) == 0)
        return &o;
    return nullptr;
  }
  int fail(const std::string &what) const {
    std::fflush(stdout);
    fmt::print(stderr, "{}: {}\n{}", program_, what, usage());
    return 2;
  }

  std::string program_, synopsis_;
  std::vector<Option> options_;
};

} // namespace tegula::bench
