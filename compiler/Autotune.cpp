//===- Autotune.cpp - a kernel launched with the fastest of its configs ----===//
//
// tegula::Autotuner (include/tegula/autotune.h): on the first launch of a
// key it launches every config (warm-up, then CUDA events around each timed
// launch, on the launch's stream), keeps the fastest, and writes the choice
// to $TEGULA_CACHE_DIR/autotune/<hash of the kernel and its configs>.tsv
// (one "key <tab> config index <tab> ms" line per key, the file replaced by
// rename: readers never see half of it; when two processes tune at once the
// last writer's file stays, and a missing key is tuned again).
//
//===----------------------------------------------------------------------===//
#include "tegula/autotune.h"
#include "tegula/interrupt.h"

#include "runtime/CudaDriver.h"
#include "runtime/GpuLaunch.h"
#include "runtime/KernelCache.h"

#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/ADT/StringExtras.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace tegula {

int64_t TuneConfig::operator[](std::string_view name) const {
  for (const auto &[n, v] : constants)
    if (n == name)
      return v;
  throw Error(fmt::format("autotune config '{}' has no constant '{}'", str(), name));
}

std::string TuneConfig::str() const {
  std::string s;
  for (const auto &[n, v] : constants)
    s += fmt::format("{}={} ", n, v);
  s += fmt::format("warps={} stages={}", num_warps, num_stages);
  if (ping_pong)
    s += " pp";
  else if (warp_specialize)
    s += " ws";
  if (cluster_size > 1)
    s += fmt::format(" c{}", cluster_size);
  if (max_registers)
    s += fmt::format(" r{}", max_registers);
  return s;
}

int64_t TunedArgs::operator[](std::string_view name) const {
  const Arg &a = arg(name);
  if (a.kind() != Arg::Kind::Int)
    throw Error(fmt::format("the grid function reads '{}' as an integer, but it is {}", name,
                            a.kind() == Arg::Kind::Buffer ? "an array" : "a floating-point number"));
  return a.as_int();
}

const Arg &TunedArgs::arg(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name)
      return args_[i];
  throw Error(fmt::format("the kernel has no parameter '{}' (parameters: {})", name, fmt::join(names_, ", ")));
}

namespace detail {

struct AutotunerImpl {
  explicit AutotunerImpl(Kernel k) : kernel(std::move(k)) {}
  Kernel kernel;
  std::vector<TuneConfig> configs;
  Autotuner::GridFn grid;
  AutotuneOptions options;
  std::vector<std::string> tunedNames; // the constants the configs give
  std::vector<size_t> tunedIndex;      // their parameter indices
  std::vector<size_t> givenIndex;      // the parameters the caller passes, in order
  std::vector<size_t> keyIndex, restoreIndex;
  std::string diskFile; // empty: no disk level

  struct Choice {
    size_t config = 0;
    std::vector<TuneTrial> trials;
    bool fromDisk = false; // not timed here: dropped if its launch fails
  };
  /// The thread tuning now (none: no tuning): a grid function or measure
  /// that launches this tuner again would wait for itself.
  std::atomic<std::thread::id> tuningThread{};
  void notFromTheTuningThread() const;
  std::mutex mutex; // guards what follows; held while tuning
  std::map<std::string, Choice> chosen;
  std::optional<std::map<std::string, size_t>> onDisk; // read on the first miss

  size_t paramIndex(const std::string &name, const char *what) const;
  std::vector<Arg> fullArgs(const TuneConfig &config, const std::vector<Arg> &given) const;
  LaunchOptions optionsFor(const TuneConfig &config, const LaunchOptions &opts, const std::vector<Arg> &full,
                           const Autotuner::GridFn &grid) const;
  std::string keyOf(const LaunchOptions &opts, const std::vector<Arg> &given) const;
  Choice &choose(const LaunchOptions &opts, const std::vector<Arg> &given, const Autotuner::GridFn &grid,
                 std::string *keyOut = nullptr);
  Choice tune(const LaunchOptions &opts, const std::vector<Arg> &given, const std::string &key,
              const Autotuner::GridFn &grid);
  std::map<std::string, size_t> readDisk() const;
  void writeDisk(const std::string &key, size_t config, double ms);
  void forget(const std::string &key);
};

void AutotunerImpl::notFromTheTuningThread() const {
  if (tuningThread.load() == std::this_thread::get_id())
    throw Error(fmt::format("autotuning kernel '{}': its grid function or measure launched or queried the tuner "
                            "while it tunes (it would wait for itself)",
                            kernel.name()));
}

size_t AutotunerImpl::paramIndex(const std::string &name, const char *what) const {
  const std::vector<std::string> &names = kernel.param_names();
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end())
    throw Error(fmt::format("autotuning kernel '{}': {} '{}' is not one of its parameters ({})", kernel.name(), what,
                            name, fmt::join(names, ", ")));
  return size_t(it - names.begin());
}

std::vector<Arg> AutotunerImpl::fullArgs(const TuneConfig &config, const std::vector<Arg> &given) const {
  std::vector<Arg> full(kernel.params().size(), Arg(0));
  for (size_t i = 0; i < givenIndex.size(); ++i)
    full[givenIndex[i]] = given[i];
  for (size_t j = 0; j < tunedIndex.size(); ++j) {
    const int64_t v = config[tunedNames[j]];
    const DType t = kernel.params()[tunedIndex[j]].dtype;
    // As 64 bits: the launch range-checks it against the parameter's type.
    full[tunedIndex[j]] = t == DType::i1 ? Arg(v != 0) : Arg(static_cast<long long>(v));
  }
  return full;
}

LaunchOptions AutotunerImpl::optionsFor(const TuneConfig &config, const LaunchOptions &opts,
                                        const std::vector<Arg> &full, const Autotuner::GridFn &grid) const {
  const Autotuner::GridFn &gridFn = grid ? grid : this->grid;
  if (!gridFn)
    throw Error(fmt::format("autotuned kernel '{}': no grid function (give one to the Autotuner or the launch)",
                            kernel.name()));
  LaunchOptions o = opts;
  o.grid = gridFn(config, TunedArgs(kernel.param_names(), full));
  o.num_warps = config.num_warps;
  o.num_stages = config.num_stages;
  o.warp_specialize = config.warp_specialize;
  o.ping_pong = config.ping_pong;
  o.cluster_size = config.cluster_size;
  if (config.max_registers)
    o.max_registers = config.max_registers;
  return o;
}

std::string AutotunerImpl::keyOf(const LaunchOptions &opts, const std::vector<Arg> &given) const {
  // Built on every launch (the lookup of a tuned key): one buffer, no
  // temporary strings.
  fmt::memory_buffer key;
  fmt::format_to(std::back_inserter(key), "{}", kernel.launch_target(opts));
  if (opts.max_registers) // configs without their own take the launch's
    fmt::format_to(std::back_inserter(key), " maxnreg={}", opts.max_registers);
  const std::vector<std::string> &names = kernel.param_names();
  for (size_t i = 0; i < givenIndex.size(); ++i) {
    const size_t p = givenIndex[i];
    const Arg &a = given[i];
    // Arrays' element types and untuned constants change the code: always.
    // The kernel also specialises on 16-byte alignment and divisibility
    // by 16 (Kernel.cpp): other code, so another key.
    if (a.kind() == Arg::Kind::Buffer)
      fmt::format_to(std::back_inserter(key), " {}:{}{}", names[p], dtype_name(a.dtype()),
                     a.address() % 16 ? "" : "/16");
    else if (kernel.params()[p].kind == ParamInfo::Kind::Constant ||
             std::find(keyIndex.begin(), keyIndex.end(), p) != keyIndex.end()) {
      if (a.kind() == Arg::Kind::Float)
        fmt::format_to(std::back_inserter(key), " {}={}", names[p], a.as_float());
      else
        fmt::format_to(std::back_inserter(key), " {}={}", names[p], a.as_int());
    } else if (a.kind() == Arg::Kind::Int && a.as_int() % 16 == 0) {
      fmt::format_to(std::back_inserter(key), " {}/16", names[p]);
    }
  }
  return fmt::to_string(key);
}

namespace {

/// Contents of the `restore` arrays, saved before tuning and put back after
/// each config.
class SavedArrays {
public:
  explicit SavedArrays(std::vector<Arg> arrays) {
    for (Arg &a : arrays)
      if (!a.readonly()) // the kernel cannot write those
        arrays_.push_back(a);
    if (onDevice())
      synchronize(); // the caller's work on any stream has written them
    for (const Arg &a : arrays_) {
      std::vector<char> &bytes = saved_.emplace_back(a.bytes());
      if (a.on_device()) {
        runtime::Driver &d = runtime::Driver::get();
        d.check(d.cuMemcpyDtoH(bytes.data(), CUdeviceptr(a.device_ptr()), a.bytes()), "cuMemcpyDtoH");
      } else if (a.bytes()) {
        std::memcpy(bytes.data(), a.data(), a.bytes());
      }
    }
  }
  void putBack() const {
    if (onDevice())
      synchronize(); // the config's launches are done writing
    for (size_t i = 0; i < arrays_.size(); ++i) {
      const Arg &a = arrays_[i];
      if (a.on_device()) {
        runtime::Driver &d = runtime::Driver::get();
        d.check(d.cuMemcpyHtoD(CUdeviceptr(a.device_ptr()), saved_[i].data(), a.bytes()), "cuMemcpyHtoD");
      } else if (a.bytes()) {
        std::memcpy(a.data(), saved_[i].data(), a.bytes());
      }
    }
    if (onDevice())
      synchronize(); // landed before a launch on any stream reads them
  }

private:
  bool onDevice() const {
    return std::any_of(arrays_.begin(), arrays_.end(), [](const Arg &a) { return a.on_device(); });
  }
  std::vector<Arg> arrays_;
  std::vector<std::vector<char>> saved_;
};

/// Median GPU time of `run` over `reps` launches on `stream`, after `warmup`.
double timeOnGpu(const std::function<void()> &run, uint64_t stream, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i)
    run();
  const size_t n = size_t(reps);
  std::vector<Event> start(n), stop(n); // created before the launches are enqueued
  for (size_t i = 0; i < n; ++i) {
    start[i].record(stream);
    run();
    stop[i].record(stream);
  }
  stop.back().synchronize();
  std::vector<double> ms;
  for (size_t i = 0; i < n; ++i)
    ms.push_back(stop[i].elapsed_ms(start[i]));
  std::sort(ms.begin(), ms.end());
  return n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
}

bool verboseFromEnvironment() {
  const char *v = std::getenv("TEGULA_AUTOTUNE_VERBOSE");
  return v && std::strcmp(v, "1") == 0;
}

} // namespace

AutotunerImpl::Choice AutotunerImpl::tune(const LaunchOptions &opts, const std::vector<Arg> &given,
                                          const std::string &key, const Autotuner::GridFn &grid) {
  Choice choice;
  const bool onGpu = key.starts_with("gpu "); // Kernel::launch_target's backend
  if (!options.measure && !onGpu)
    return choice; // the first config: CPU timings say nothing about a GPU
  if (!grid && !this->grid)
    throw Error(fmt::format("autotuning kernel '{}': no grid function to launch its configs with (give one to the "
                            "Autotuner, or launch once with one before asking best())",
                            kernel.name()));
  std::vector<Arg> toRestore;
  for (size_t p : restoreIndex)
    for (size_t i = 0; i < givenIndex.size(); ++i)
      if (givenIndex[i] == p)
        toRestore.push_back(given[i]);
  std::optional<SavedArrays> saved;
  if (!toRestore.empty())
    saved.emplace(std::move(toRestore));
  const bool verbose = options.verbose || verboseFromEnvironment();
  tuningThread.store(std::this_thread::get_id());
  struct Done {
    std::atomic<std::thread::id> &thread;
    ~Done() { thread.store(std::thread::id()); }
  } done{tuningThread};
  std::optional<size_t> best;
  for (size_t c = 0; c < configs.size(); ++c) {
    TuneTrial &trial = choice.trials.emplace_back();
    trial.config = configs[c];
    try {
      const std::vector<Arg> full = fullArgs(configs[c], given);
      const LaunchOptions o = optionsFor(configs[c], opts, full, grid);
      const std::function<void()> run = [&] { kernel.launch(o, full); };
      trial.ms = options.measure ? options.measure(configs[c], run)
                                 : timeOnGpu(run, o.stream, options.warmup, options.reps);
      if (!std::isfinite(trial.ms) || trial.ms < 0)
        throw Error(fmt::format("the measure returned {} ms", trial.ms));
    } catch (const Interrupted &) { // Ctrl-C: not this config's failure; nothing is kept
      if (saved)
        try {
          saved->putBack();
        } catch (...) {
        }
      throw;
    } catch (const Error &e) {
      trial.error = e.what();
    } catch (...) { // not a config's failure (a Python measure's own error): the caller's arrays back, then up
      if (saved)
        try {
          saved->putBack();
        } catch (...) {
        }
      throw;
    }
    if (saved)
      saved->putBack();
    if (verbose)
      fmt::print(stderr, "autotune {} [{}] {}: {}\n", kernel.name(), key, trial.config.str(),
                 trial.error.empty() ? fmt::format("{:.4f} ms", trial.ms) : "failed: " + trial.error);
    if (trial.error.empty() && (!best || trial.ms < choice.trials[*best].ms))
      best = c;
  }
  if (!best) {
    std::string why;
    for (const TuneTrial &t : choice.trials)
      why += fmt::format("\n  {}: {}", t.config.str(), t.error);
    throw Error(fmt::format("autotuning kernel '{}': none of its {} configs ran for [{}]:{}", kernel.name(),
                            configs.size(), key, why));
  }
  choice.config = *best;
  if (verbose)
    fmt::print(stderr, "autotune {} [{}]: chose {}\n", kernel.name(), key, configs[*best].str());
  writeDisk(key, *best, choice.trials[*best].ms);
  return choice;
}

AutotunerImpl::Choice &AutotunerImpl::choose(const LaunchOptions &opts, const std::vector<Arg> &given,
                                             const Autotuner::GridFn &grid, std::string *keyOut) {
  if (given.size() != givenIndex.size()) {
    std::vector<std::string> takes;
    for (size_t p : givenIndex)
      takes.push_back(kernel.param_names()[p]);
    throw Error(fmt::format("autotuned kernel '{}' takes {} arguments ({}; {} come from its configs), {} were given",
                            kernel.name(), givenIndex.size(), fmt::join(takes, ", "), fmt::join(tunedNames, ", "),
                            given.size()));
  }
  const std::string key = keyOf(opts, given);
  if (keyOut)
    *keyOut = key;
  if (auto it = chosen.find(key); it != chosen.end())
    return it->second;
  if (!onDisk)
    onDisk = readDisk();
  if (auto it = onDisk->find(key); it != onDisk->end())
    return chosen[key] = Choice{it->second, {}, /*fromDisk=*/true};
  return chosen[key] = tune(opts, given, key, grid);
}

void AutotunerImpl::forget(const std::string &key) {
  chosen.erase(key);
  if (onDisk)
    onDisk->erase(key);
}

std::map<std::string, size_t> AutotunerImpl::readDisk() const {
  std::map<std::string, size_t> entries;
  if (diskFile.empty())
    return entries;
  std::ifstream in(diskFile);
  std::string line;
  while (std::getline(in, line)) {
    // key \t index \t ms; anything else (a damaged line) is not trusted.
    const size_t a = line.find('\t'), b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos)
      continue;
    char *end = nullptr;
    const std::string index = line.substr(a + 1, b - a - 1);
    const unsigned long c = std::strtoul(index.c_str(), &end, 10);
    if (index.empty() || *end || c >= configs.size())
      continue;
    entries[line.substr(0, a)] = size_t(c);
  }
  return entries;
}

void AutotunerImpl::writeDisk(const std::string &key, size_t config, double ms) {
  if (diskFile.empty())
    return;
  // Tuners of one kernel and config list (Python's one per instantiation,
  // two made alike) share the file: one read-modify-write at a time here,
  // and each write through a temporary file of its own.
  static std::mutex diskMutex;
  static std::atomic<uint64_t> writes{0};
  std::lock_guard<std::mutex> lock(diskMutex);
  std::map<std::string, std::string> lines; // what is there now, this key replaced
  {
    std::ifstream in(diskFile);
    std::string line;
    while (std::getline(in, line))
      if (size_t tab = line.find('\t'); tab != std::string::npos)
        lines[line.substr(0, tab)] = line;
  }
  lines[key] = fmt::format("{}\t{}\t{:.6f}", key, config, ms);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(diskFile).parent_path(), ec);
  const std::string tmp = fmt::format("{}.{}.{}.tmp", diskFile, ::getpid(), writes++);
  bool written = false;
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto &[k, l] : lines)
      out << l << '\n';
    out.close();
    written = bool(out);
  }
  if (written)
    std::filesystem::rename(tmp, diskFile, ec);
  if (!written || ec) // a cache that cannot be written is only slower next time
    std::filesystem::remove(tmp, ec);
  if (onDisk)
    (*onDisk)[key] = config;
}

} // namespace detail

Autotuner::Autotuner(Kernel kernel, std::vector<TuneConfig> configs, GridFn grid, AutotuneOptions options)
    : impl_(std::make_shared<detail::AutotunerImpl>(std::move(kernel))) {
  detail::AutotunerImpl &t = *impl_;
  t.configs = std::move(configs);
  t.grid = std::move(grid);
  t.options = std::move(options);
  const std::string &name = t.kernel.name();
  if (t.configs.empty())
    throw Error(fmt::format("autotuning kernel '{}': no configs to choose from", name));
  if (t.options.warmup < 0 || t.options.reps < 1)
    throw Error(fmt::format("autotuning kernel '{}': needs warmup >= 0 and reps >= 1 (got {} and {})", name,
                            t.options.warmup, t.options.reps));
  for (const auto &[n, v] : t.configs.front().constants) {
    if (std::find(t.tunedNames.begin(), t.tunedNames.end(), n) != t.tunedNames.end())
      throw Error(fmt::format("autotuning kernel '{}': config '{}' names '{}' twice", name,
                              t.configs.front().str(), n));
    const size_t p = t.paramIndex(n, "tuned constant");
    if (t.kernel.params()[p].kind != ParamInfo::Kind::Constant || is_float(t.kernel.params()[p].dtype))
      throw Error(fmt::format("autotuning kernel '{}': '{}' is not an integer tl::constant parameter, so configs "
                              "cannot set it",
                              name, n));
    t.tunedNames.push_back(n);
    t.tunedIndex.push_back(p);
  }
  for (const TuneConfig &c : t.configs) {
    std::vector<std::string> names;
    for (const auto &[n, v] : c.constants)
      names.push_back(n);
    std::vector<std::string> expected = t.tunedNames;
    std::sort(names.begin(), names.end());
    std::sort(expected.begin(), expected.end());
    if (names != expected)
      throw Error(fmt::format("autotuning kernel '{}': config '{}' sets {{{}}} but the first sets {{{}}}; every "
                              "config sets the same constants",
                              name, c.str(), fmt::join(names, ", "), fmt::join(expected, ", ")));
    for (size_t j = 0; j < t.tunedNames.size(); ++j)
      if (t.kernel.params()[t.tunedIndex[j]].dtype == DType::i1 && c[t.tunedNames[j]] != 0 && c[t.tunedNames[j]] != 1)
        throw Error(fmt::format("autotuning kernel '{}': config '{}' gives the bool '{}' {}: 0 or 1", name, c.str(),
                                t.tunedNames[j], c[t.tunedNames[j]]));
    if (c.num_warps < 1 || c.num_stages < 1)
      throw Error(fmt::format("autotuning kernel '{}': config '{}' needs num_warps and num_stages >= 1", name,
                              c.str()));
    if (c.max_registers != 0 && (c.max_registers < 16 || c.max_registers > 255))
      throw Error(fmt::format("autotuning kernel '{}': config '{}' gives max_registers {}: 16 to 255, or 0", name,
                              c.str(), c.max_registers));
  }
  for (size_t p = 0; p < t.kernel.params().size(); ++p)
    if (std::find(t.tunedIndex.begin(), t.tunedIndex.end(), p) == t.tunedIndex.end())
      t.givenIndex.push_back(p);
  for (const std::string &k : t.options.key) {
    const size_t p = t.paramIndex(k, "key");
    if (std::find(t.tunedIndex.begin(), t.tunedIndex.end(), p) != t.tunedIndex.end())
      throw Error(fmt::format("autotuning kernel '{}': key '{}' is a constant the configs set", name, k));
    t.keyIndex.push_back(p);
  }
  for (const std::string &r : t.options.restore) {
    const size_t p = t.paramIndex(r, "restored array");
    if (t.kernel.params()[p].kind != ParamInfo::Kind::Pointer)
      throw Error(fmt::format("autotuning kernel '{}': restore '{}' is not an array parameter", name, r));
    t.restoreIndex.push_back(p);
  }
  if (t.options.cache_on_disk) {
    const std::string dir = runtime::KernelCache::defaultDirectory();
    if (dir != "-") {
      // The file belongs to this kernel and this list of configs (indices
      // into it are what the file stores).
      llvm::SHA256 sha;
      std::string params;
      for (size_t p = 0; p < t.kernel.params().size(); ++p)
        params += fmt::format("{}:{}{},", t.kernel.param_names()[p], int(t.kernel.params()[p].kind),
                              dtype_name(t.kernel.params()[p].dtype));
      for (const std::string &part : {std::string("tegula-autotune-1 " TEGULA_VERSION), name, params}) {
        sha.update(part);
        sha.update("\n");
      }
      for (const TuneConfig &c : t.configs) {
        sha.update(c.str());
        sha.update("\n");
      }
      std::string safe = name;
      for (char &ch : safe)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-')
          ch = '_';
      t.diskFile = fmt::format("{}/autotune/{}-{}.tsv", dir, safe, llvm::toHex(sha.final(), true).substr(0, 16));
    }
  }
}

void Autotuner::launch(const LaunchOptions &opts, const std::vector<Arg> &args, const GridFn &grid) const {
  detail::AutotunerImpl &t = *impl_;
  t.notFromTheTuningThread();
  size_t config;
  bool fromDisk;
  std::string key;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    const detail::AutotunerImpl::Choice &c = t.choose(opts, args, grid, &key);
    config = c.config;
    fromDisk = c.fromDisk;
  }
  const std::vector<Arg> full = t.fullArgs(t.configs[config], args);
  try {
    t.kernel.launch(t.optionsFor(t.configs[config], opts, full, grid), full);
  } catch (const Error &e) {
    if (!fromDisk || dynamic_cast<const Interrupted *>(&e)) // Ctrl-C says nothing of the choice
      throw;
    // A choice another build or process made that no longer runs (the
    // kernel changed, say): tune again.
    {
      std::lock_guard<std::mutex> lock(t.mutex);
      t.forget(key);
    }
    launch(opts, args, grid);
  }
}

TuneConfig Autotuner::best(const LaunchOptions &opts, const std::vector<Arg> &args) const {
  impl_->notFromTheTuningThread();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->configs[impl_->choose(opts, args, {}).config];
}

std::vector<TuneTrial> Autotuner::trials(const LaunchOptions &opts, const std::vector<Arg> &args) const {
  impl_->notFromTheTuningThread();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (args.size() != impl_->givenIndex.size())
    return {};
  auto it = impl_->chosen.find(impl_->keyOf(opts, args));
  return it == impl_->chosen.end() ? std::vector<TuneTrial>{} : it->second.trials;
}

const Kernel &Autotuner::kernel() const { return impl_->kernel; }
const std::vector<TuneConfig> &Autotuner::configs() const { return impl_->configs; }

} // namespace tegula
