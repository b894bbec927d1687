//===- FileOutput.cpp - files written whole or not at all ----------------===//
#include "models/gpt/FileOutput.h"

#include "tegula/error.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace tegula::gpt {
namespace {

/// A new file beside `path` that no one else has: PATH.tmp-PID-N, created
/// exclusively (0666 less the umask, as the file itself would be).
std::pair<int, std::string> createTemporary(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string tmp = fmt::format("{}.tmp-{}-{}", path, ::getpid(), counter++);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0)
      return {fd, tmp};
    if (errno != EEXIST)
      return {-1, tmp};
  }
  errno = EEXIST;
  return {-1, path + ".tmp"};
}

} // namespace

StagedFile::StagedFile(const std::string &path, const std::vector<std::span<const std::byte>> &parts,
                       const std::string &what)
    : path_(path), what_(what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("{}: cannot write {}: it is a directory", what, path));
  auto [fd, tmp] = createTemporary(path);
  if (fd < 0)
    throw Error(fmt::format("{}: cannot write {}: cannot create {}: {}", what, path, tmp, std::strerror(errno)));
  auto fail = [&, tmp = tmp](const std::string &why) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(fmt::format("{}: cannot write {}: {} (nothing written; {} is as it was)", what, path, why, path));
  };
  for (std::span<const std::byte> part : parts) {
    const std::byte *at = part.data();
    size_t left = part.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, at, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        fail(std::strerror(n < 0 ? errno : EIO));
      at += n, left -= size_t(n);
    }
  }
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
    fail(std::strerror(errno));
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    throw Error(fmt::format("{}: cannot write {}: {}", what, path, std::strerror(error)));
  }
  tmp_ = tmp;
}

StagedFile::~StagedFile() {
  if (!committed_ && !tmp_.empty())
    ::unlink(tmp_.c_str());
}

void StagedFile::commit() {
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    throw Error(fmt::format("{}: cannot rename {} to {}: {}", what_, tmp_, path_, std::strerror(error)));
  }
  committed_ = true;
}

void write_file_replacing(const std::string &path, const std::vector<std::span<const std::byte>> &parts,
                          const std::string &what) {
  StagedFile(path, parts, what).commit();
}

void check_file_creatable(const std::string &path, const std::string &option) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("{} {} is a directory; give a file name", option, path));
  auto [fd, tmp] = createTemporary(path);
  if (fd < 0)
    throw Error(fmt::format("{} {}: cannot create a file there: {}", option, path, std::strerror(errno)));
  ::close(fd);
  ::unlink(tmp.c_str());
}

} // namespace tegula::gpt
