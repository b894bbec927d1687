//===- KernelCache.cpp - compiled kernels in memory and on disk -----------===//
#include "runtime/KernelCache.h"

#include "tegula/error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace tegula::runtime {
namespace {

// Entry layout: magic, payload size, xxh3 of the payload, payload.
constexpr char kMagic[8] = {'T', 'E', 'G', 'U', 'L', 'A', '1', '\0'};
struct Header {
  char magic[8];
  uint64_t size;
  uint64_t checksum;
};

uint64_t checksum(const std::vector<char> &blob) {
  return llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(blob.data()), blob.size()));
}

} // namespace

std::string CacheKey::hash() const {
  llvm::SHA256 sha;
  for (const std::string *part : {&ir, &options, &arch, &tegulaVersion, &ptxasVersion}) {
    uint64_t n = part->size();
    sha.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(&n), sizeof n));
    sha.update(*part);
  }
  auto digest = sha.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string KernelCache::defaultDirectory() {
  if (const char *d = std::getenv("TEGULA_CACHE_DIR"); d && *d)
    return d;
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/tegula";
  return "-";
}

KernelCache::KernelCache(std::string dir) : dir_(dir.empty() ? defaultDirectory() : dir) {}

std::string KernelCache::entryPath(const CacheKey &key) const {
  return dir_ + "/" + key.hash() + ".bin";
}

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::optional<KernelCache::Blob> KernelCache::readEntry(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  Header h;
  Blob blob;
  bool ok = bool(in.read(reinterpret_cast<char *>(&h), sizeof h)) &&
            std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 && h.size < (uint64_t(1) << 32);
  if (ok) {
    blob.resize(h.size);
    ok = bool(in.read(blob.data(), std::streamsize(h.size))) && in.peek() == EOF &&
         checksum(blob) == h.checksum;
  }
  if (ok)
    return blob;
  // Truncated, overwritten or from another format: never trust it.
  in.close();
  llvm::sys::fs::remove(path);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.corruptEntries;
  return std::nullopt;
}

void KernelCache::writeEntry(const std::string &path, const Blob &blob) {
  if (auto ec = llvm::sys::fs::create_directories(dir_))
    return; // an unwritable cache only costs recompilation
  llvm::SmallString<256> tmp;
  if (llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", tmp))
    return;
  {
    std::ofstream out(tmp.c_str(), std::ios::binary | std::ios::trunc);
    Header h;
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.size = blob.size();
    h.checksum = checksum(blob);
    out.write(reinterpret_cast<const char *>(&h), sizeof h);
    out.write(blob.data(), std::streamsize(blob.size()));
    if (!out) {
      out.close();
      llvm::sys::fs::remove(tmp);
      return;
    }
  }
  // rename() is atomic: readers see the old entry or the whole new one.
  if (llvm::sys::fs::rename(tmp, path))
    llvm::sys::fs::remove(tmp);
}

KernelCache::Blob KernelCache::getOrCompile(const CacheKey &key, const CompileFn &compile) {
  std::string id = key.hash();
  std::shared_ptr<std::promise<Blob>> mine;
  std::shared_future<Blob> future;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it != entries_.end()) {
      ++stats_.memoryHits;
      future = it->second;
    } else {
      mine = std::make_shared<std::promise<Blob>>();
      future = mine->get_future().share();
      entries_.emplace(id, future);
    }
  }
  if (!mine) // cached, or being produced by another thread: wait for it
    return future.get();
  try {
    std::optional<Blob> blob;
    std::string path = dir_ == "-" ? "" : entryPath(key);
    if (!path.empty() && (blob = readEntry(path))) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.diskHits;
    }
    if (!blob) {
      blob = compile();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.compiles;
      }
      if (!path.empty())
        writeEntry(path, *blob);
    }
    mine->set_value(*blob);
    return *blob;
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      entries_.erase(id); // nothing cached: a later call compiles again
    }
    mine->set_exception(std::current_exception());
    throw;
  }
}

} // namespace tegula::runtime
