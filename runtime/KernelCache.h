//===- KernelCache.h - compiled kernels in memory and on disk ---*- C++ -*-===//
//
// Compiling a kernel (trace -> PTX -> cubin) costs hundreds of milliseconds;
// a cache hit must cost microseconds. Entries are keyed by everything that
// changes the binary: the tile IR, the compile options, the target, the
// Tegula version and the ptxas version. On disk ($TEGULA_CACHE_DIR, default
// ~/.cache/tegula) each entry is written to a temporary file and renamed, and
// carries a checksum: a truncated or corrupt entry is detected, removed and
// recompiled, never trusted. Concurrent requests for one key compile once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tegula::runtime {

/// The parts of a cache key; `hash()` is the file name.
struct CacheKey {
  std::string ir;       // the kernel's tile IR (after the tile pipeline)
  std::string options;  // compile options (num_warps, stages, precision, ...)
  std::string arch;     // sm_80, sm_90a
  std::string tegulaVersion;
  std::string ptxasVersion;
  /// Hex SHA-256 over all parts (length-prefixed, so parts cannot blur).
  std::string hash() const;
};

struct CacheStats {
  uint64_t memoryHits = 0, diskHits = 0, compiles = 0, corruptEntries = 0;
};

class KernelCache {
public:
  using Blob = std::vector<char>;
  using CompileFn = std::function<Blob()>;

  /// `dir` empty: $TEGULA_CACHE_DIR, else $HOME/.cache/tegula; "-" disables
  /// the disk level.
  explicit KernelCache(std::string dir = {});

  /// The cached blob for `key`, compiling (once, even under concurrent
  /// requests) on a miss. Exceptions from `compile` reach every waiter and
  /// nothing is cached.
  Blob getOrCompile(const CacheKey &key, const CompileFn &compile);

  CacheStats stats() const;
  const std::string &directory() const { return dir_; }
  /// Path of the disk entry for a key (whether or not it exists).
  std::string entryPath(const CacheKey &key) const;

  /// The default directory as described above.
  static std::string defaultDirectory();

private:
  std::optional<Blob> readEntry(const std::string &path);
  void writeEntry(const std::string &path, const Blob &blob);

  std::string dir_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_future<Blob>> entries_;
  CacheStats stats_;
};

} // namespace tegula::runtime
