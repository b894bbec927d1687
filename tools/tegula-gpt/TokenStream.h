//===- TokenStream.h - tegula-gpt's training data -------------*- C++ -*-===//
//
// The training stream: a text file's bytes, or a token file's ids (what
// `tegula-gpt tokenize` writes: "TGTK", version 1, vocabulary, count, then
// little-endian i32 ids), memory-mapped; and the batches drawn from it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tools/tegula-gpt/Options.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace tegula::gpt::cli {

/// The most tokens a vocabulary may have here (GPT-2's is 50257; the
/// largest models' some 256K).
constexpr int kMaxVocab = 1 << 24;

/// A token file's first 4 bytes.
constexpr char kTokenMagic[4] = {'T', 'G', 'T', 'K'};

/// A read-only memory map of a file: the token stream (bytes).
struct MappedFile {
  const uint8_t *data = nullptr;
  size_t size = 0;
  /// Maps `path` (a regular file); throws tegula::Error naming it.
  explicit MappedFile(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
};

/// The training stream: a text file's bytes, or a token file's ids, mapped.
struct TokenStream {
  std::unique_ptr<MappedFile> file;
  size_t count = 0;
  int vocab = 256;
  bool bytes = true;
  int32_t at(size_t i) const {
    if (bytes)
      return file->data[i];
    int32_t v;
    std::memcpy(&v, file->data + 16 + 4 * i, 4);
    return v;
  }
  /// A fingerprint of the stream (a resumed run notes a change): FNV-1a
  /// over its count and at most 65536 evenly spaced tokens - cheap for a
  /// file of billions.
  std::string fingerprint() const;
  /// --tokens FILE (checked: header, count, every id) or --data FILE (bytes).
  static TokenStream open(const Options &o);
};

/// B random windows of T + 1 tokens from [begin, end): inputs and next-token targets.
void sampleBatch(const TokenStream &f, size_t begin, size_t end, int B, int T, std::mt19937_64 &rng,
                 std::vector<int32_t> &tokens, std::vector<int32_t> &targets);

} // namespace tegula::gpt::cli
