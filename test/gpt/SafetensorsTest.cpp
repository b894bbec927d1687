// SafetensorsTest.cpp - the safetensors reader and writer: round trips in
// each stored dtype, a file laid out as Hugging Face's writer does, and a
// clear error for each way a file can be wrong.
#include "TestUtil.h"
#include "models/gpt/Safetensors.h"
#include "tegula/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace tegula;
using namespace tegula::gpt;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

std::vector<std::byte> fileWithHeader(const std::string &header, size_t dataBytes) {
  std::vector<std::byte> f(8 + header.size() + dataBytes, std::byte(0));
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    f[size_t(i)] = std::byte(n >> (8 * i) & 0xff);
  std::memcpy(f.data() + 8, header.data(), header.size());
  return f;
}

std::string errorOf(const std::vector<std::byte> &contents) {
  try {
    SafetensorsFile::parse(contents, "bad.safetensors");
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Safetensors, RoundTripInEachStoredType) {
  std::vector<float> wte = {0.5f, -1.25f, 3.0f, 1e-3f, 65504.0f, -0.0f};
  std::vector<float> bias = {1.0f, 2.0f, 3.0f};
  auto bytes = serialize_safetensors({{"wte", {2, 3}, wte, "F32"},
                                      {"b16", {3}, bias, "BF16"},
                                      {"h16", {2, 3}, wte, "F16"}},
                                     {{"format", "pt"}});
  SafetensorsFile f = SafetensorsFile::parse(bytes, "mem");
  EXPECT_EQ(f.names(), (std::vector<std::string>{"b16", "h16", "wte"}));
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.at("wte").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.at("wte").tegula_dtype(), DType::f32);
  EXPECT_EQ(f.to_f32("wte", {2, 3}), wte); // exact
  EXPECT_EQ(f.to_f32("b16"), bias);        // representable in bf16
  std::vector<float> h = f.to_f32("h16");
  for (size_t i = 0; i < wte.size(); ++i)
    EXPECT_NEAR(h[i], wte[i], std::abs(wte[i]) * 1e-3) << i;
  // The data starts 8-byte aligned after the header.
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, ReadsAFileLaidOutAsHuggingFaceWritesIt) {
  // Offsets as HF writes them (its own order), metadata first, padding spaces.
  std::string header = R"({"__metadata__":{"format":"pt"},"h.0.ln_1.bias":{"dtype":"F32","shape":[2],)"
                       R"("data_offsets":[8,16]},"h.0.ln_1.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  auto f = fileWithHeader(header, 16);
  float values[4] = {1.0f, 2.0f, -3.0f, 4.0f};
  std::memcpy(f.data() + 8 + header.size(), values, 16);
  SafetensorsFile file = SafetensorsFile::parse(f, "hf");
  EXPECT_EQ(file.to_f32("h.0.ln_1.weight"), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(file.to_f32("h.0.ln_1.bias"), (std::vector<float>{-3.0f, 4.0f}));
}

TEST(Safetensors, WritesThroughATemporaryFileAndReadsBack) {
  auto dir = std::filesystem::temp_directory_path() / ("tegula-st-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "model.safetensors").string();
  std::vector<float> v = {1, 2, 3, 4};
  // A file of the user's named like a temporary is not touched.
  { std::ofstream(path + ".tmp") << "mine"; }
  write_safetensors(path, {{"x", {2, 2}, v}});
  EXPECT_EQ(SafetensorsFile::read(path).to_f32("x", {2, 2}), v);
  std::vector<std::string> left;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"model.safetensors", "model.safetensors.tmp"}));
  EXPECT_EQ((std::stringstream() << std::ifstream(path + ".tmp").rdbuf()).str(), "mine");
  // Rewritten: replaced whole.
  std::vector<float> w = {5, 6};
  write_safetensors(path, {{"y", {2}, w}});
  EXPECT_EQ(SafetensorsFile::read(path).to_f32("y", {2}), w);
  EXPECT_FALSE(SafetensorsFile::read(path).contains("x"));
  // Where no file can be made: the path and the reason, and nothing left.
  const std::string nowhere = (dir / "missing" / "m.safetensors").string();
  try {
    write_safetensors(nowhere, {{"x", {2, 2}, v}});
    ADD_FAILURE() << "wrote into a missing folder";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("cannot write " + nowhere), HasSubstr("No such file or directory")));
  }
  try {
    write_safetensors(dir.string(), {{"x", {2, 2}, v}});
    ADD_FAILURE() << "wrote over a directory";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("it is a directory"));
  }
  std::filesystem::remove_all(dir);
}

TEST(Safetensors, EachBadFileIsAClearError) {
  EXPECT_THAT(errorOf(std::vector<std::byte>(5)), HasSubstr("too short for the 8-byte header length"));
  auto claims = fileWithHeader("{}", 0);
  claims[0] = std::byte(200); // a header length past the end of the file
  EXPECT_THAT(errorOf(claims), HasSubstr("the header claims 200 bytes"));
  EXPECT_THAT(errorOf(fileWithHeader("{not json", 0)), HasSubstr("not valid JSON"));
  EXPECT_THAT(errorOf(fileWithHeader("[1, 2]", 0)), HasSubstr("not a JSON object"));
  EXPECT_THAT(errorOf(fileWithHeader(R"({"w":{"dtype":"F32","shape":[2]}})", 8)),
              HasSubstr("tensor 'w': needs dtype, shape and data_offsets"));
  EXPECT_THAT(errorOf(fileWithHeader(R"({"w":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8)),
              HasSubstr("tensor 'w': unknown dtype \"Q7\""));
  EXPECT_THAT(errorOf(fileWithHeader(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)),
              HasSubstr("negative or non-integer extent"));
  EXPECT_THAT(errorOf(fileWithHeader(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8)),
              HasSubstr("data_offsets [0, 16] are outside the 8 data bytes"));
  EXPECT_THAT(errorOf(fileWithHeader(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
              HasSubstr("8 bytes for shape [3] of F32 (12 bytes)"));
  EXPECT_THAT(errorOf(fileWithHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12)),
              HasSubstr("tensors overlap"));
  // A name twice (JSON would keep the last, silently): which one is meant?
  EXPECT_THAT(errorOf(fileWithHeader(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                     R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)),
              HasSubstr("the header names \"w\" twice"));
  EXPECT_THAT(errorOf(fileWithHeader(R"({"__metadata__":{"n":3}})", 0)),
              HasSubstr("metadata value 'n' is not a string"));
  // Extents whose product wraps around to what the data holds (274177 x
  // 67280421310721 = 2^64 + 1), and ones past any file.
  EXPECT_THAT(errorOf(fileWithHeader(R"({"w":{"dtype":"F32","shape":[274177,67280421310721],"data_offsets":[0,4]}})",
                                     4)),
              HasSubstr("tensor 'w': shape [274177,67280421310721] has more elements than a tensor can hold"));
  EXPECT_THAT(errorOf(fileWithHeader(R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})",
                                     0)),
              HasSubstr("has more bytes than a file can hold"));
  EXPECT_THAT(tegula::testing::error_of([] { SafetensorsFile::read(std::filesystem::temp_directory_path().string()); }),
              HasSubstr("is a directory, not a .safetensors file"));
  std::vector<float> two = {1, 2};
  EXPECT_THAT(tegula::testing::error_of([&] { serialize_safetensors({{"__metadata__", {2}, two}}); }),
              HasSubstr("'__metadata__' is the header's metadata key, not a tensor name"));
}

TEST(Safetensors, LookupsAndConversionsNameTheProblem) {
  std::vector<float> v = {1, 2};
  SafetensorsFile f = SafetensorsFile::parse(serialize_safetensors({{"x", {2}, v}}), "ckpt");
  EXPECT_THAT(tegula::testing::error_of([&] { f.at("y"); }), HasSubstr("ckpt has no tensor 'y'"));
  EXPECT_THAT(tegula::testing::error_of([&] { f.to_f32("x", {1, 2}); }), HasSubstr("tensor 'x' has shape [2], expected [1, 2]"));
  EXPECT_THAT(tegula::testing::error_of([&] { serialize_safetensors({{"x", {3}, v}}); }), HasSubstr("2 values for shape [3]"));
  EXPECT_THAT(tegula::testing::error_of([&] { serialize_safetensors({{"x", {2}, v, "I64"}}); }),
              HasSubstr("writing I64 is not supported"));
  EXPECT_THAT(tegula::testing::error_of([&] { serialize_safetensors({{"x", {2}, v}, {"x", {2}, v}}); }),
              HasSubstr("'x' is given twice"));
}

} // namespace
