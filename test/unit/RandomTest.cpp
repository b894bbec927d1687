// RandomTest.cpp - tl::philox, randint4x, randint, rand, randn: Random123's
// known answers, bit equality with a host Philox4x32 on random seeds and
// offsets (i32 and i64), the distributions, independence from the grid, and
// errors at the caller's line - in the interpreter, the simulator and on
// the GPU when there is one.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "examples/kernels.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using tegula::testing::errorOf;
using tegula::testing::rng;

namespace {

/// Philox4x32-R on the host, straight from the Random123 paper's round.
std::array<uint32_t, 4> hostPhilox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k, int rounds = 10) {
  for (int r = 0; r < rounds; ++r) {
    const uint64_t a = uint64_t(0xD2511F53u) * c[0], b = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(b >> 32) ^ c[1] ^ k[0], uint32_t(b), uint32_t(a >> 32) ^ c[3] ^ k[1], uint32_t(a)};
    k = {k[0] + 0x9E3779B9u, k[1] + 0xBB67AE85u};
  }
  return c;
}

/// out[4 i + w] = word w of philox(key[2 i], key[2 i + 1]; ctr[4 i .. 4 i + 3]).
void philoxKernel(tl::ptr<int32_t> key, tl::ptr<int32_t> ctr, tl::ptr<int32_t> out, tl::constant<int> N) {
  tl::tensor i = tl::arange(0, N);
  std::array<tl::tensor, 4> w =
      tl::philox(tl::load(key + 2 * i), tl::load(key + 2 * i + 1), tl::load(ctr + 4 * i), tl::load(ctr + 4 * i + 1),
                 tl::load(ctr + 4 * i + 2), tl::load(ctr + 4 * i + 3));
  for (int j = 0; j < 4; ++j)
    tl::store(out + 4 * i + j, w[size_t(j)]);
}

TEST(Random, PhiloxGivesRandom123sKnownAnswers) {
  // Random123's kat_vectors for philox4x32_10: (counter, key) -> output.
  const std::vector<std::array<uint32_t, 6>> inputs = {
      {0, 0, 0, 0, 0, 0},
      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
      {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u},
      {0, 0, 0, 0, 0, 0}};
  const std::vector<std::array<uint32_t, 4>> want = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                                     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                                     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u},
                                                     {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}};
  std::vector<int32_t> key, ctr;
  for (const auto &in : inputs) {
    for (int j = 0; j < 4; ++j)
      ctr.push_back(int32_t(in[size_t(j)]));
    key.push_back(int32_t(in[4]));
    key.push_back(int32_t(in[5]));
  }
  for (size_t i = 0; i < inputs.size(); ++i) // the host reference first
    EXPECT_EQ(hostPhilox({inputs[i][0], inputs[i][1], inputs[i][2], inputs[i][3]}, {inputs[i][4], inputs[i][5]}),
              want[i]);
  auto k = kernel("philox", philoxKernel, {"key", "ctr", "out", "N"});
  for (Backend backend : backendsWithTheGpu("philox")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<int32_t> out(16, 0);
    k({.grid = {1}, .backend = backend}, key, ctr, out, 4);
    for (size_t i = 0; i < want.size(); ++i)
      for (size_t j = 0; j < 4; ++j)
        EXPECT_EQ(uint32_t(out[4 * i + j]), want[i][j]) << "vector " << i << " word " << j;
  }
}

/// The four words of randint4x for offsets base + [0, n), and rand / randn.
void randomWords(tl::scalar<int64_t> seed, tl::scalar<int32_t> base, tl::ptr<int32_t> words, tl::ptr<float> uniform,
                 tl::ptr<float> normal, tl::scalar<int32_t> n, tl::constant<int> BLOCK) {
  tl::tensor i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = i < n;
  tl::tensor offset = base + i;
  std::array<tl::tensor, 4> w = tl::randint4x(seed, offset);
  for (int j = 0; j < 4; ++j)
    tl::store(words + 4 * i + j, w[size_t(j)], mask);
  tl::store(uniform + i, tl::rand(seed, offset), mask);
  tl::store(normal + i, tl::randn(seed, offset), mask);
}

float hostUniform(uint32_t w) { return float(w >> 8) * 0x1p-24f; }

TEST(Random, WordsMatchAHostPhiloxAndTheDistributionsHold) {
  auto k = kernel("random_words", randomWords, {"seed", "base", "words", "uniform", "normal", "n", "BLOCK"});
  const int n = 4096 + 37;
  const int64_t seed = int64_t(rng()()) << 20 | rng()(); // both key words in use
  const int32_t base = int32_t(rng()() % 100000) - 50000; // negative offsets too
  for (Backend backend : backendsWithTheGpu("rand")) {
    SCOPED_TRACE(fmt::format("backend {}, seed {}, base {}", int(backend), seed, base));
    std::vector<int32_t> words(4 * size_t(n));
    std::vector<float> uniform(n, NAN), normal(n, NAN);
    k({.grid = {uint32_t(cdiv(n, 1024))}, .backend = backend}, seed, base, words, uniform, normal, n, 1024);
    double sum = 0, sumSq = 0, nsum = 0, nsumSq = 0;
    for (int i = 0; i < n; ++i) {
      const std::array<uint32_t, 4> want = hostPhilox({uint32_t(base + i), 0, 0, 0},
                                                      {uint32_t(uint64_t(seed)), uint32_t(uint64_t(seed) >> 32)});
      for (size_t j = 0; j < 4; ++j)
        ASSERT_EQ(uint32_t(words[4 * size_t(i) + j]), want[j]) << "offset " << base + i << " word " << j;
      ASSERT_EQ(uniform[size_t(i)], hostUniform(want[0])) << i;
      ASSERT_GE(uniform[size_t(i)], 0.0f);
      ASSERT_LT(uniform[size_t(i)], 1.0f);
      const double u1 = double(hostUniform(want[0])) + 0x1p-24, u2 = hostUniform(want[1]);
      const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
      ASSERT_NEAR(normal[size_t(i)], z, 1e-4 * (1 + std::abs(z))) << i; // the GPU's log and cos approximate
      sum += uniform[size_t(i)], sumSq += double(uniform[size_t(i)]) * uniform[size_t(i)];
      nsum += normal[size_t(i)], nsumSq += double(normal[size_t(i)]) * normal[size_t(i)];
    }
    // 4133 samples: standard errors 0.0045 (uniform mean), 0.016 (normal mean).
    EXPECT_NEAR(sum / n, 0.5, 0.02);
    EXPECT_NEAR(sumSq / n - (sum / n) * (sum / n), 1.0 / 12, 0.01);
    EXPECT_NEAR(nsum / n, 0.0, 0.07);
    EXPECT_NEAR(nsumSq / n - (nsum / n) * (nsum / n), 1.0, 0.1);
  }
}

/// rand of 64-bit offsets: the high word is the counter's second word.
void randAt64(tl::ptr<int64_t> offsets, tl::ptr<int32_t> out, tl::constant<int> N) {
  tl::tensor i = tl::arange(0, N);
  tl::store(out + i, tl::randint(7, tl::load(offsets + i)));
}

TEST(Random, SixtyFourBitOffsetsUseBothCounterWords) {
  const std::vector<int64_t> offsets = {0, 1, (int64_t(1) << 32) + 1, (int64_t(5) << 40) - 3, -1, INT64_MIN,
                                        INT64_MAX, 12345};
  auto k = kernel("rand_at_64", randAt64, {"offsets", "out", "N"});
  for (Backend backend : backendsWithTheGpu("randint at i64 offsets")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<int32_t> out(8);
    k({.grid = {1}, .backend = backend}, offsets, out, 8);
    for (size_t i = 0; i < offsets.size(); ++i)
      EXPECT_EQ(uint32_t(out[i]),
                hostPhilox({uint32_t(uint64_t(offsets[i])), uint32_t(uint64_t(offsets[i]) >> 32), 0, 0}, {7, 0})[0])
          << offsets[i];
  }
}

TEST(Random, TheNumbersDependOnlyOnSeedAndOffsetNotOnTheGrid) {
  auto k = kernel("random_words", randomWords, {"seed", "base", "words", "uniform", "normal", "n", "BLOCK"});
  const int n = 1000;
  std::vector<float> wide(n), narrow(n), normal(n), other(n);
  std::vector<int32_t> words(4 * n);
  k({.grid = {1}, .num_warps = 8, .backend = Backend::Sim}, int64_t(99), 0, words, wide, normal, n, 1024);
  k({.grid = {8}, .num_warps = 1, .backend = Backend::Sim}, int64_t(99), 0, words, narrow, normal, n, 128);
  EXPECT_EQ(wide, narrow);
  k({.grid = {1}, .backend = Backend::Interp}, int64_t(100), 0, words, other, normal, n, 1024);
  int same = 0;
  for (int i = 0; i < n; ++i)
    same += wide[size_t(i)] == other[size_t(i)];
  EXPECT_LT(same, 5) << "another seed, other numbers";
}

void floatSeed(tl::ptr<float> out) {
  FAILS_ON_NEXT_LINE();
  tl::store(out + tl::arange(0, 4), tl::rand(1.5f, tl::arange(0, 4)));
}
void floatOffset(tl::ptr<float> out) {
  FAILS_ON_NEXT_LINE();
  tl::store(out + tl::arange(0, 4), tl::rand(1, tl::arange(0, 4).to(tl::f32)));
}
void zeroRounds(tl::ptr<float> out) {
  FAILS_ON_NEXT_LINE();
  tl::store(out + tl::arange(0, 4), tl::rand(1, tl::arange(0, 4), 0));
}

TEST(Random, MistakesAreNamedAtTheCallersLine) {
  std::vector<float> out(4);
  tegula::testing::expectAtMarkedLine(errorOf(kernel("float_seed", floatSeed), {out}), "RandomTest.cpp",
                                      "tl::randint4x: the seed must be an integer, got a floating-point number");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("float_offset", floatOffset), {out}), "RandomTest.cpp",
                                      "tl::randint4x: the offset must be an integer tile or scalar, got tensor<4xf32>");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("zero_rounds", zeroRounds), {out}), "RandomTest.cpp",
                                      "tl::randint4x: rounds must be 1 to 64 (Philox4x32-10 uses 10), got 0");
}

} // namespace
