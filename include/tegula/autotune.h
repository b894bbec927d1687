// autotune.h - choosing a kernel's tile sizes, warps and stages by timing them.
//
//   tegula::Autotuner matmul(                      // examples/kernels.h's matmul
//       tegula::kernel("matmul", tegula::examples::matmul<tegula::bfloat16>,
//                      {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"}),
//       {{{{"BM", 128}, {"BN", 128}, {"BK", 64}}, 4, 4}, {{{"BM", 128}, {"BN", 256}, {"BK", 64}}, 8, 3}},
//       [](const tegula::TuneConfig &c, const tegula::TunedArgs &a) {
//         return tegula::Grid{uint32_t(tegula::cdiv(a["M"], c["BM"])), uint32_t(tegula::cdiv(a["N"], c["BN"]))};
//       },
//       {.key = {"M", "N", "K"}});
//   matmul({.backend = tegula::Backend::GPU}, a, b, c, M, N, K); // no BM, BN, BK: the configs give them
//
// The first launch for a key (the values of the `key` parameters, the
// arrays' element types, and where the launch runs: device, chip, code
// switches) times every config on the GPU and keeps the fastest; later
// launches with that key go straight to it. Choices are also kept on disk
// ($TEGULA_CACHE_DIR/autotune, or ~/.cache/tegula/autotune), so the next
// process does not time again. The interpreter and the simulator run the
// first config without timing anything - their speed says nothing about a
// GPU's - unless `AutotuneOptions::measure` says how to time there.
#pragma once

#include "tegula/kernel.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tegula {

/// One candidate: values for the kernel's tuned tl::constant parameters (by
/// name) and the launch options that go with them.
struct TuneConfig {
  std::vector<std::pair<std::string, int64_t>> constants;
  int num_warps = 4;
  int num_stages = 3;
  bool warp_specialize = false;
  bool ping_pong = false;
  int cluster_size = 0; // LaunchOptions::cluster_size (0: the launch's default)
  int max_registers = 0; // LaunchOptions::max_registers (0: the launch's)

  /// The value of constant `name`; throws tegula::Error when the config has
  /// none.
  int64_t operator[](std::string_view name) const;
  /// "BM=128 BN=256 BK=64 warps=8 stages=3 ws" (" c2": clusters of 2).
  std::string str() const;
};

/// A launch's full argument list as the kernel sees it (the tuned constants
/// included), read by parameter name in a grid function - during the call
/// only (it refers to the launch's arguments: not copyable).
class TunedArgs {
public:
  TunedArgs(const std::vector<std::string> &names, const std::vector<Arg> &args) : names_(names), args_(args) {}
  TunedArgs(const TunedArgs &) = delete;
  TunedArgs &operator=(const TunedArgs &) = delete;
  /// The argument of parameter `name`; throws tegula::Error naming the
  /// parameters when there is none.
  const Arg &arg(std::string_view name) const;
  /// An integer parameter's value (scalar or constant); throws tegula::Error
  /// for an array or a floating-point one.
  int64_t operator[](std::string_view name) const;
  const std::vector<Arg> &all() const { return args_; }

private:
  const std::vector<std::string> &names_;
  const std::vector<Arg> &args_;
};

struct AutotuneOptions {
  /// Parameters whose arguments select a tuning: numbers by value, arrays by
  /// element type (every array's element type and the launch's target are
  /// always part of the key).
  std::vector<std::string> key;
  /// Array parameters the kernel both reads and writes (accumulates into,
  /// updates in place): their contents are saved before the first config
  /// runs and put back after each, so the launch that follows the tuning
  /// sees what the caller passed.
  std::vector<std::string> restore;
  /// Untimed launches of each config, then timed ones (the median counts).
  int warmup = 2, reps = 10;
  /// How to time one config, `run` launching it once; returns milliseconds
  /// (`warmup` and `reps` are then the measure's business). Unset: CUDA
  /// events around each of `reps` launches on the launch's stream, and no
  /// timing at all on the interpreter and simulator (the first config runs).
  /// A config whose launch or measure throws tegula::Error is skipped, its
  /// error kept; any other exception ends the tuning (the `restore` arrays
  /// put back first). Host arrays are staged to the device on every GPU
  /// launch: their copies are timed too - tune on device arrays.
  std::function<double(const TuneConfig &, const std::function<void()> &run)> measure;
  /// Keep choices on disk across processes ($TEGULA_CACHE_DIR/autotune;
  /// TEGULA_CACHE_DIR=- turns it off).
  bool cache_on_disk = true;
  /// Print each config's time as it is measured (also TEGULA_AUTOTUNE_VERBOSE=1).
  bool verbose = false;
};

/// What tuning measured for one config.
struct TuneTrial {
  TuneConfig config;
  double ms = 0;     // median launch time; 0 when it did not run
  std::string error; // why it did not run (compile or launch error), else empty
};

namespace detail {
struct AutotunerImpl;
}

/// A kernel launched with the fastest of several configs. Cheap to copy
/// (shared state); thread-safe (one tuning at a time: launches wait while
/// another thread tunes; a grid function or measure that launches the tuner
/// it is tuning gets tegula::Error).
class Autotuner {
public:
  using GridFn = std::function<Grid(const TuneConfig &, const TunedArgs &)>;

  /// Every config names the same constants, each a tl::constant parameter of
  /// `kernel`; throws tegula::Error otherwise, or without configs. `grid`
  /// may be empty when every launch passes its own.
  Autotuner(Kernel kernel, std::vector<TuneConfig> configs, GridFn grid, AutotuneOptions options = {});

  /// Launch with the best config for these arguments - the kernel's
  /// parameters without the tuned constants, in order - tuning first on a
  /// new key. The grid is `grid`'s, else the constructor's; `num_warps`,
  /// `num_stages`, `warp_specialize` and `ping_pong` come from the config;
  /// `backend`, `stream` and `chip` from `opts` (its grid is not read).
  void launch(const LaunchOptions &opts, const std::vector<Arg> &args, const GridFn &grid = {}) const;
  template <class... A> void operator()(const LaunchOptions &opts, A &&...args) const {
    launch(opts, std::vector<Arg>{Arg(args)...});
  }

  /// The config launches with these arguments use (tuning first if needed).
  TuneConfig best(const LaunchOptions &opts, const std::vector<Arg> &args) const;
  /// What the tuning of these arguments' key measured in this process, in
  /// config order; empty when it has not run (or the choice came from disk).
  std::vector<TuneTrial> trials(const LaunchOptions &opts, const std::vector<Arg> &args) const;

  const Kernel &kernel() const;
  const std::vector<TuneConfig> &configs() const;

private:
  std::shared_ptr<detail::AutotunerImpl> impl_;
};

} // namespace tegula
