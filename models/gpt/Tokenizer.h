//===- Tokenizer.h - GPT-2's byte-level BPE, and plain bytes ---*- C++ -*-===//
//
// GPT-2's tokenizer: text is split by GPT-2's pre-tokenization pattern
// ('s 't 're 've 'm 'll 'd, optional space + letters, + digits, + other
// symbols, whitespace runs), each piece's UTF-8 bytes become printable
// characters (the byte-to-unicode map), and BPE merges adjacent symbols,
// lowest merge rank first, until none applies; vocab.json gives the ids.
// Letters, digits and spaces are classified with glibc's C.UTF-8 tables
// (Unicode categories as the C library has them).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tegula::gpt {

class BpeTokenizer {
public:
  /// Reads GPT-2's vocab.json and merges.txt; throws tegula::Error naming
  /// the file and the problem (duplicate or missing ids, a merge whose
  /// symbols or result the vocabulary lacks; Windows line ends are fine).
  static BpeTokenizer load(const std::string &vocabJson, const std::string &mergesTxt);

  /// BPE ids of `text`; a special token spelled in it (<|endoftext|>) is
  /// that token, as Hugging Face's tokenizer reads it.
  std::vector<int32_t> encode(std::string_view text) const;
  /// Throws tegula::Error for an id outside the vocabulary.
  std::string decode(const std::vector<int32_t> &ids) const;
  int vocab_size() const { return int(idToToken_.size()); }
  /// The id of the vocabulary's token spelled `token` (as vocab.json spells
  /// it: "<|endoftext|>"), or -1 where it has none.
  int32_t token_id(std::string_view token) const {
    auto it = tokenToId_.find(std::string(token));
    return it == tokenToId_.end() ? -1 : it->second;
  }

  /// The pre-tokenization alone: the pieces BPE runs on (for tests).
  static std::vector<std::string_view> pretokenize(std::string_view text);

private:
  void encodeOrdinary(std::string_view text, std::vector<int32_t> &ids) const;

  std::map<std::string, int32_t> tokenToId_;
  std::vector<std::string> special_; // <|...|> tokens of the vocabulary
  std::vector<std::string> idToToken_;
  std::map<std::pair<std::string, std::string>, int> mergeRank_;
};

/// Bytes as tokens (vocabulary 256): what tegula-gpt uses without a BPE.
struct ByteTokenizer {
  static std::vector<int32_t> encode(std::string_view text);
  static std::string decode(const std::vector<int32_t> &ids);
};

} // namespace tegula::gpt
