//===- TokenStream.cpp - tegula-gpt's training data ----------------------===//
#include "tools/tegula-gpt/TokenStream.h"

#include "tegula/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tegula::gpt::cli {

MappedFile::MappedFile(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0)
    throw Error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    throw Error(fmt::format("{} is {}; give a regular file", path,
                            S_ISDIR(st.st_mode) ? "a directory" : "not a regular file (a device, a pipe or a socket)"));
  }
  size = size_t(st.st_size);
  void *p = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  close(fd);
  if (p == MAP_FAILED)
    throw Error(fmt::format("cannot map {}: {}", path, std::strerror(errno)));
  data = static_cast<const uint8_t *>(p);
}

MappedFile::~MappedFile() {
  if (data)
    munmap(const_cast<uint8_t *>(data), size);
}

std::string TokenStream::fingerprint() const {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8)
      h = (h ^ (v & 0xff)) * 0x100000001b3ull;
  };
  mix(count), mix(uint64_t(vocab));
  const size_t stride = std::max<size_t>(1, count / 65536);
  for (size_t i = 0; i < count; i += stride)
    mix(uint64_t(uint32_t(at(i))));
  return fmt::format("{:016x}", h);
}

TokenStream TokenStream::open(const Options &o) {
  TokenStream s;
  if (!o.str("tokens").empty()) {
    s.file = std::make_unique<MappedFile>(o.str("tokens"));
    uint32_t header[4] = {};
    if (s.file->size < 16 || (std::memcpy(header, s.file->data, 16), std::memcmp(header, kTokenMagic, 4)) ||
        header[1] != 1 || (s.file->size - 16) % 4)
      throw Error(fmt::format("{} is not a token file (tegula-gpt tokenize writes them)", o.str("tokens")));
    if (header[2] < 2 || header[2] > uint32_t(kMaxVocab))
      throw Error(fmt::format("{}: its header gives a vocabulary of {} tokens; tegula-gpt takes 2 to {}",
                              o.str("tokens"), header[2], kMaxVocab));
    s.bytes = false, s.vocab = int(header[2]), s.count = (s.file->size - 16) / 4;
    // The header's count (0 in files of older tokenizers): a file cut
    // short (a full disk) is not taken for whole.
    if (header[3] != 0 && header[3] != s.count)
      throw Error(fmt::format("{}: its header says {} tokens, the file holds {}: it was cut short (tokenize it "
                              "again)",
                              o.str("tokens"), header[3], s.count));
    // Every id inside the vocabulary, checked once here rather than at
    // the step whose batch meets a bad one.
    for (size_t i = 0; i < s.count; ++i)
      if (const int32_t id = s.at(i); id < 0 || id >= s.vocab)
        throw Error(fmt::format("{}: token {} (of {}) is {}, outside its vocabulary [0, {})", o.str("tokens"), i,
                                s.count, id, s.vocab));
  } else {
    s.file = std::make_unique<MappedFile>(o.str("data"));
    s.count = s.file->size;
  }
  return s;
}

/// B random windows of T + 1 tokens from [begin, end): inputs and next-token targets.
void sampleBatch(const TokenStream &f, size_t begin, size_t end, int B, int T, std::mt19937_64 &rng,
                 std::vector<int32_t> &tokens, std::vector<int32_t> &targets) {
  tokens.resize(size_t(B * T)), targets.resize(size_t(B * T));
  std::uniform_int_distribution<size_t> pick(begin, end - size_t(T) - 1);
  for (int b = 0; b < B; ++b) {
    const size_t at = pick(rng);
    for (int t = 0; t < T; ++t) {
      tokens[size_t(b * T + t)] = f.at(at + size_t(t));
      targets[size_t(b * T + t)] = f.at(at + size_t(t) + 1);
    }
  }
}

} // namespace tegula::gpt::cli
