// TokenizerTest.cpp - GPT-2's byte-level BPE against Hugging Face's
// tokenizers on a small trained vocabulary (models/gpt/tokenizer/fixture,
// made by make_fixture.py): ids for text with contractions, numbers, runs of
// spaces, tabs and new lines, accents, CJK and Cyrillic, emoji; decoding
// restores the text; bad files are clear errors.
#include "gpt/GptTestUtil.h"
#include "TestUtil.h"
#include "models/gpt/Tokenizer.h"
#include "tegula/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace tegula;
using namespace tegula::gpt;
using ::testing::HasSubstr;

namespace {

const std::string kFixture = tegula::testing::fixtureDir("models/gpt/tokenizer/fixture");

TEST(Tokenizer, MatchesHuggingFaceOnEveryCase) {
  BpeTokenizer t = BpeTokenizer::load(kFixture + "vocab.json", kFixture + "merges.txt");
  EXPECT_EQ(t.vocab_size(), 420);
  std::ifstream in(kFixture + "cases.json");
  nlohmann::json cases = nlohmann::json::parse(in);
  ASSERT_GE(cases.size(), 10u);
  for (const auto &c : cases) {
    const std::string text = c["text"];
    SCOPED_TRACE(text);
    const std::vector<int32_t> want = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(t.encode(text), want);
    EXPECT_EQ(t.decode(want), text);
  }
}

TEST(Tokenizer, PretokenizesAsGpt2sPattern) {
  auto pieces = [](std::string_view s) {
    std::vector<std::string> out;
    for (std::string_view p : BpeTokenizer::pretokenize(s))
      out.emplace_back(p);
    return out;
  };
  EXPECT_EQ(pieces("Hello  world's 42!"), (std::vector<std::string>{"Hello", " ", " world", "'s", " 42", "!"}));
  EXPECT_EQ(pieces("a\n\nb  "), (std::vector<std::string>{"a", "\n", "\n", "b", "  "}));
  EXPECT_EQ(pieces("x 'y"), (std::vector<std::string>{"x", " '", "y"}));
  EXPECT_EQ(pieces("naïve Москва"), (std::vector<std::string>{"naïve", " Москва"}));
}

TEST(Tokenizer, BytesRoundTripAndBadInputsAreClearErrors) {
  const std::string text = "any bytes \xff\x01 here";
  EXPECT_EQ(ByteTokenizer::decode(ByteTokenizer::encode(text)), text);
  EXPECT_THAT(tegula::testing::error_of([] { ByteTokenizer::decode({300}); }), HasSubstr("id 300 is not a byte"));
  EXPECT_THAT(tegula::testing::error_of([] { BpeTokenizer::load("/nonexistent/vocab.json", "m"); }), HasSubstr("cannot open"));
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "bad.json") << "{\"a\": 1";
  EXPECT_THAT(tegula::testing::error_of([&] { BpeTokenizer::load(dir + "bad.json", kFixture + "merges.txt"); }),
              HasSubstr("not valid JSON"));
  std::ofstream(dir + "small.json") << "{\"a\": 0}";
  EXPECT_THAT(tegula::testing::error_of([&] { BpeTokenizer::load(dir + "small.json", kFixture + "merges.txt"); }),
              HasSubstr("lacks the byte token"));
  std::ofstream(dir + "bad.txt") << "#version: 0.2\nab\n";
  EXPECT_THAT(tegula::testing::error_of([&] { BpeTokenizer::load(kFixture + "vocab.json", dir + "bad.txt"); }),
              HasSubstr("bad.txt:2: a merge is two symbols"));
  BpeTokenizer t = BpeTokenizer::load(kFixture + "vocab.json", kFixture + "merges.txt");
  EXPECT_THAT(tegula::testing::error_of([&] { t.decode({420}); }), HasSubstr("id 420 is outside the vocabulary [0, 420)"));
}

/// <|endoftext|> in the text is that token (as Hugging Face's tokenizer
/// reads it), not BPE pieces; merges.txt with Windows line ends reads as
/// with Unix ones; a vocabulary and merges that disagree are errors at
/// load, naming the file and line, not when some text first needs them.
TEST(Tokenizer, SpecialTokensLineEndsAndInconsistentFiles) {
  BpeTokenizer t = BpeTokenizer::load(kFixture + "vocab.json", kFixture + "merges.txt");
  std::ifstream vin(kFixture + "vocab.json");
  const nlohmann::json vocab = nlohmann::json::parse(vin);
  const int32_t eot = vocab["<|endoftext|>"].get<int32_t>();
  std::vector<int32_t> want = t.encode("the fox");
  want.push_back(eot);
  for (int32_t id : t.encode(" jumps"))
    want.push_back(id);
  want.push_back(eot);
  EXPECT_EQ(t.encode("the fox<|endoftext|> jumps<|endoftext|>"), want);
  EXPECT_EQ(t.decode(want), "the fox<|endoftext|> jumps<|endoftext|>");
  EXPECT_EQ(t.encode("<|endoftext|>"), std::vector<int32_t>{eot});
  EXPECT_GT(t.encode("<|endoftext").size(), 1u) << "an incomplete one is text";

  const std::string dir = ::testing::TempDir();
  std::ifstream min(kFixture + "merges.txt");
  std::string line, crlf;
  while (std::getline(min, line))
    crlf += line + "\r\n";
  std::ofstream(dir + "merges_crlf.txt", std::ios::binary) << crlf;
  BpeTokenizer windows = BpeTokenizer::load(kFixture + "vocab.json", dir + "merges_crlf.txt");
  const std::string text = "the quick brown fox jumps over the lazy dog's 42 naïve";
  EXPECT_EQ(windows.encode(text), t.encode(text));

  nlohmann::json shared = vocab;
  shared["zzz"] = 5;
  std::ofstream(dir + "shared.json") << shared.dump();
  EXPECT_THAT(tegula::testing::error_of([&] { BpeTokenizer::load(dir + "shared.json", kFixture + "merges.txt"); }),
              HasSubstr("share the id 5"));
  nlohmann::json gap = vocab;
  gap["zzz"] = 500;
  std::ofstream(dir + "gap.json") << gap.dump();
  EXPECT_THAT(tegula::testing::error_of([&] { BpeTokenizer::load(dir + "gap.json", kFixture + "merges.txt"); }),
              HasSubstr("no token has the id 420"));
  std::ofstream(dir + "unknown.txt") << "#version: 0.2\nĠ a\nq zz\n";
  EXPECT_THAT(tegula::testing::error_of([&] { BpeTokenizer::load(kFixture + "vocab.json", dir + "unknown.txt"); }),
              HasSubstr("unknown.txt:3: the merge \"q zz\" needs the token \"zz\""));
}

} // namespace
