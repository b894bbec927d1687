//===- Tokenizer.cpp - GPT-2's byte-level BPE, and plain bytes ------------===//
#include "models/gpt/Tokenizer.h"

#include "tegula/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <clocale>
#include <cwctype>
#include <fstream>
#include <limits>
#include <locale.h>
#include <sstream>
#include <wctype.h>

namespace tegula::gpt {
namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(fmt::format("tokenizer: cannot open {}", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | cp >> 6), out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | cp >> 12), out += char(0x80 | (cp >> 6 & 0x3f)), out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | cp >> 18), out += char(0x80 | (cp >> 12 & 0x3f)), out += char(0x80 | (cp >> 6 & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

/// The codepoint at `text[i]` and its length in bytes; an invalid sequence is
/// one byte standing for itself (classified as a symbol).
std::pair<uint32_t, size_t> decodeAt(std::string_view text, size_t i) {
  const auto b = uint8_t(text[i]);
  const size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || i + len > text.size())
    return {0xfffd, 1};
  if (len == 1)
    return {b, 1};
  uint32_t cp = b & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto c = uint8_t(text[i + k]);
    if ((c & 0xc0) != 0x80)
      return {0xfffd, 1};
    cp = cp << 6 | (c & 0x3f);
  }
  return {cp, len};
}

/// GPT-2's byte-to-unicode map: printable bytes stand for themselves, the
/// rest move to 256 + n, so every byte is a visible character in vocab.json.
const std::array<uint32_t, 256> &byteToUnicode() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    std::array<bool, 256> printable{};
    for (int b = '!'; b <= '~'; ++b) printable[size_t(b)] = true;
    for (int b = 0xa1; b <= 0xac; ++b) printable[size_t(b)] = true;
    for (int b = 0xae; b <= 0xff; ++b) printable[size_t(b)] = true;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b)
      t[size_t(b)] = printable[size_t(b)] ? uint32_t(b) : next++;
    return t;
  }();
  return table;
}

/// Unicode classes through glibc's C.UTF-8 locale (not the process's).
struct CharClasses {
  locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(nullptr));
  bool letter(uint32_t c) const { return c < 0x80 ? std::isalpha(int(c)) != 0 : loc && iswalpha_l(wint_t(c), loc); }
  bool number(uint32_t c) const {
    if (c < 0x80)
      return c >= '0' && c <= '9';
    return loc && iswalnum_l(wint_t(c), loc) && !iswalpha_l(wint_t(c), loc);
  }
  bool space(uint32_t c) const {
    if (c < 0x80)
      return c == ' ' || (c >= '\t' && c <= '\r');
    return c == 0x85 || c == 0xa0 || (loc && iswspace_l(wint_t(c), loc));
  }
};

const CharClasses &classes() {
  static const CharClasses c;
  return c;
}

} // namespace

std::vector<std::string_view> BpeTokenizer::pretokenize(std::string_view text) {
  const CharClasses &cls = classes();
  enum Kind { Letter, Number, Space, Other };
  auto kindAt = [&](size_t i) {
    uint32_t c = decodeAt(text, i).first;
    return cls.letter(c) ? Letter : cls.number(c) ? Number : cls.space(c) ? Space : Other;
  };
  auto next = [&](size_t i) { return i + decodeAt(text, i).second; };
  auto runOf = [&](size_t i, Kind k) { // end of the run of kind k from i
    while (i < text.size() && kindAt(i) == k)
      i = next(i);
    return i;
  };
  std::vector<std::string_view> pieces;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = 0;
    // 's 't 're 've 'm 'll 'd (lower case, as GPT-2's pattern has them)
    if (text[i] == '\'') {
      for (std::string_view c : {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"})
        if (text.substr(i, c.size()) == c) {
          end = i + c.size();
          break;
        }
    }
    if (!end) {
      // An optional space, then letters, digits or other symbols.
      const size_t j = text[i] == ' ' && i + 1 < text.size() ? i + 1 : i;
      const Kind k = kindAt(j);
      if (k != Space)
        end = runOf(j, k);
    }
    if (!end) {
      // Whitespace: a run not followed by a non-space keeps its last
      // character for the next piece (" word").
      const size_t run = runOf(i, Space);
      end = run;
      if (run < text.size()) {
        size_t last = i, k = i;
        while (k < run) {
          last = k;
          k = next(k);
        }
        if (last > i)
          end = last;
      }
    }
    pieces.push_back(text.substr(i, end - i));
    i = end;
  }
  return pieces;
}

BpeTokenizer BpeTokenizer::load(const std::string &vocabJson, const std::string &mergesTxt) {
  BpeTokenizer t;
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(readFile(vocabJson));
  } catch (const nlohmann::json::parse_error &e) {
    throw Error(fmt::format("tokenizer: {} is not valid JSON ({})", vocabJson, e.what()));
  }
  if (!vocab.is_object() || vocab.empty())
    throw Error(fmt::format("tokenizer: {} is not a non-empty JSON object of token -> id", vocabJson));
  for (auto &[token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw Error(fmt::format("tokenizer: {}: token {} has id {}, not a non-negative integer", vocabJson,
                              nlohmann::json(token).dump(), id.dump()));
    const auto i = size_t(id.get<int64_t>());
    if (t.idToToken_.size() <= i)
      t.idToToken_.resize(i + 1);
    if (!t.idToToken_[i].empty())
      throw Error(fmt::format("tokenizer: {}: tokens {} and {} share the id {}", vocabJson,
                              nlohmann::json(t.idToToken_[i]).dump(), nlohmann::json(token).dump(), i));
    t.idToToken_[i] = token;
    t.tokenToId_[token] = int32_t(i);
    // <|endoftext|> and its kind are special: text that spells one is that
    // token, as Hugging Face's tokenizer reads it, not BPE pieces.
    if (token.size() > 4 && token.rfind("<|", 0) == 0 && token.compare(token.size() - 2, 2, "|>") == 0)
      t.special_.push_back(token);
  }
  for (size_t i = 0; i < t.idToToken_.size(); ++i)
    if (t.idToToken_[i].empty())
      throw Error(fmt::format("tokenizer: {}: no token has the id {} (ids run from 0 to {} without gaps)", vocabJson,
                              i, t.idToToken_.size() - 1));
  for (uint32_t cp : byteToUnicode()) { // every byte must be a token
    std::string s;
    appendUtf8(s, cp);
    if (!t.tokenToId_.count(s))
      throw Error(fmt::format("tokenizer: {} lacks the byte token {} (not a byte-level BPE vocabulary)",
                              vocabJson, nlohmann::json(s).dump()));
  }
  std::istringstream merges(readFile(mergesTxt));
  std::string line;
  int rank = 0, lineNo = 0;
  while (std::getline(merges, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r') // Windows line ends
      line.pop_back();
    if (line.empty() || (lineNo == 1 && line.rfind("#version", 0) == 0))
      continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != std::string::npos)
      throw Error(fmt::format("tokenizer: {}:{}: a merge is two symbols separated by one space, got \"{}\"",
                              mergesTxt, lineNo, line));
    std::string first = line.substr(0, sp), second = line.substr(sp + 1);
    // Checked here, not when some text first needs the merge.
    for (const std::string &symbol : {first, second, first + second})
      if (!t.tokenToId_.count(symbol))
        throw Error(fmt::format("tokenizer: {}:{}: the merge \"{}\" needs the token {}, which {} lacks", mergesTxt,
                                lineNo, line, nlohmann::json(symbol).dump(), vocabJson));
    t.mergeRank_.emplace(std::make_pair(std::move(first), std::move(second)), rank++);
  }
  return t;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  // Special tokens first: the text between them is BPE's.
  while (!text.empty()) {
    size_t at = std::string_view::npos;
    const std::string *found = nullptr;
    for (const std::string &sp : special_)
      if (size_t k = text.find(sp); k < at)
        at = k, found = &sp;
    encodeOrdinary(text.substr(0, at), ids);
    if (!found)
      break;
    ids.push_back(tokenToId_.at(*found));
    text.remove_prefix(at + found->size());
  }
  return ids;
}

void BpeTokenizer::encodeOrdinary(std::string_view text, std::vector<int32_t> &ids) const {
  for (std::string_view piece : pretokenize(text)) {
    std::vector<std::string> symbols;
    for (char b : piece) {
      std::string s;
      appendUtf8(s, byteToUnicode()[uint8_t(b)]);
      symbols.push_back(std::move(s));
    }
    while (symbols.size() > 1) { // merge the best-ranked pair, everywhere, until none
      int best = std::numeric_limits<int>::max();
      for (size_t k = 0; k + 1 < symbols.size(); ++k) {
        auto it = mergeRank_.find({symbols[k], symbols[k + 1]});
        if (it != mergeRank_.end())
          best = std::min(best, it->second);
      }
      if (best == std::numeric_limits<int>::max())
        break;
      std::vector<std::string> merged;
      for (size_t k = 0; k < symbols.size(); ++k) {
        auto it = k + 1 < symbols.size() ? mergeRank_.find({symbols[k], symbols[k + 1]}) : mergeRank_.end();
        if (it != mergeRank_.end() && it->second == best) {
          merged.push_back(symbols[k] + symbols[k + 1]);
          ++k;
        } else {
          merged.push_back(symbols[k]);
        }
      }
      symbols = std::move(merged);
    }
    for (const std::string &s : symbols) {
      auto it = tokenToId_.find(s);
      if (it == tokenToId_.end()) // load checked: every byte and every merge's result is a token
        throw Error(fmt::format("tokenizer: the merges produce {} which the vocabulary lacks",
                                nlohmann::json(s).dump()));
      ids.push_back(it->second);
    }
  }
}

std::string BpeTokenizer::decode(const std::vector<int32_t> &ids) const {
  static const std::map<uint32_t, uint8_t> unicodeToByte = [] {
    std::map<uint32_t, uint8_t> m;
    for (int b = 0; b < 256; ++b)
      m[byteToUnicode()[size_t(b)]] = uint8_t(b);
    return m;
  }();
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= idToToken_.size())
      throw Error(fmt::format("tokenizer: id {} is outside the vocabulary [0, {})", id, idToToken_.size()));
    const std::string &token = idToToken_[size_t(id)];
    for (size_t i = 0; i < token.size();) {
      auto [cp, len] = decodeAt(token, i);
      auto it = unicodeToByte.find(cp);
      if (it == unicodeToByte.end()) // special tokens (<|endoftext|>) are their own text
        out.append(token, i, len);
      else
        out += char(it->second);
      i += len;
    }
  }
  return out;
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) {
  std::vector<int32_t> ids;
  for (char c : text)
    ids.push_back(uint8_t(c));
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t> &ids) {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id > 255)
      throw Error(fmt::format("byte tokenizer: id {} is not a byte", id));
    out += char(id);
  }
  return out;
}

} // namespace tegula::gpt
