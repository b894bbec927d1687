// TensorMapCacheTest.cpp - the GPU launch's cache of encoded TMA tensor maps
// (runtime/TensorMap.h), with a counting stand-in for cuTensorMapEncodeTiled:
// a repeated map is encoded once, any change to what goes into an encoding
// misses, the least recently used entry leaves first, and an encoder that
// throws leaves nothing behind.
#include "runtime/TensorMap.h"
#include "tegula/error.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using namespace tegula;
using namespace tegula::runtime;

namespace {

ResolvedTensorMap map2d(uint64_t address, uint64_t rows = 256, uint64_t cols = 128) {
  ResolvedTensorMap m;
  m.address = address;
  m.shape = {rows, cols};
  m.strideBytes = {cols * 2, 2};
  m.box = {64, 64};
  m.dtype = DType::bf16;
  m.swizzle = 128;
  return m;
}

/// An encoder that counts its calls and writes a recognisable pattern.
struct CountingEncoder {
  int calls = 0;
  TensorMapBytes operator()(const ResolvedTensorMap &m) {
    ++calls;
    TensorMapBytes b;
    b.bytes[0] = uint8_t(m.address >> 4);
    b.bytes[1] = uint8_t(m.shape[0]);
    b.bytes[2] = uint8_t(m.box[0]);
    return b;
  }
};

TEST(TensorMapCache, RepeatedMapsAreEncodedOnce) {
  TensorMapCache cache;
  CountingEncoder enc;
  auto encode = [&](const ResolvedTensorMap &m) { return enc(m); };
  TensorMapBytes first = cache.get(map2d(0x1000), encode);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(cache.get(map2d(0x1000), encode).bytes, first.bytes);
  EXPECT_EQ(enc.calls, 1);
  EXPECT_EQ(cache.stats().hits, 10u);
  EXPECT_EQ(cache.stats().misses, 1u);
}

TEST(TensorMapCache, EveryInputOfTheEncodingIsPartOfTheKey) {
  TensorMapCache cache;
  CountingEncoder enc;
  auto encode = [&](const ResolvedTensorMap &m) { return enc(m); };
  cache.get(map2d(0x1000), encode);
  std::vector<ResolvedTensorMap> variants;
  variants.push_back(map2d(0x2000));           // another buffer
  variants.push_back(map2d(0x1000, 255));      // another extent
  ResolvedTensorMap m = map2d(0x1000);
  m.strideBytes[0] = 512, variants.push_back(m); // another row pitch
  m = map2d(0x1000), m.box = {64, 32}, variants.push_back(m);
  m = map2d(0x1000), m.dtype = DType::f16, variants.push_back(m);
  m = map2d(0x1000), m.swizzle = 64, variants.push_back(m);
  m = map2d(0x1000), m.tf32 = true, variants.push_back(m); // rounded to tf32 as it lands
  m = map2d(0x1000), m.shape = {2, 256, 128}, m.strideBytes = {65536, 256, 2}, m.box = {1, 64, 64},
  variants.push_back(m); // another rank
  for (const ResolvedTensorMap &v : variants)
    cache.get(v, encode);
  EXPECT_EQ(enc.calls, 1 + int(variants.size()));
  EXPECT_EQ(cache.size(), 1 + variants.size());
}

TEST(TensorMapCache, TheLeastRecentlyUsedEntryLeavesFirst) {
  TensorMapCache cache(2);
  CountingEncoder enc;
  auto encode = [&](const ResolvedTensorMap &m) { return enc(m); };
  cache.get(map2d(0x1000), encode);
  cache.get(map2d(0x2000), encode);
  cache.get(map2d(0x1000), encode); // 0x2000 is now the oldest
  cache.get(map2d(0x3000), encode); // evicts it
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(enc.calls, 3);
  cache.get(map2d(0x1000), encode);
  EXPECT_EQ(enc.calls, 3);
  cache.get(map2d(0x2000), encode);
  EXPECT_EQ(enc.calls, 4);
}

TEST(TensorMapCache, AnEncoderThatThrowsLeavesNothingBehind) {
  TensorMapCache cache;
  EXPECT_THROW(cache.get(map2d(0x1000), [](const ResolvedTensorMap &) -> TensorMapBytes {
    throw Error("cuTensorMapEncodeTiled failed");
  }),
               Error);
  EXPECT_EQ(cache.size(), 0u);
  CountingEncoder enc;
  cache.get(map2d(0x1000), [&](const ResolvedTensorMap &m) { return enc(m); });
  EXPECT_EQ(enc.calls, 1);
}

TEST(TensorMapCache, ConcurrentLaunchesShareIt) {
  TensorMapCache cache;
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        cache.get(map2d(0x1000 + 0x100 * uint64_t(i % 8)), [&](const ResolvedTensorMap &m) {
          ++calls;
          return CountingEncoder{}(m);
        });
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(cache.size(), 8u);
  EXPECT_LE(calls.load(), 4 * 8); // at most one per map per thread (racing first encodes)
  EXPECT_EQ(cache.stats().hits + cache.stats().misses, 4000u);
}

/// The specs travel as text (kernel cache, module attribute): a map that
/// rounds to tf32 says so with a trailing word, others are as before; a
/// record with another word there, or one cut short, is refused.
TEST(TensorMapSpecs, TextKeepsEveryFieldAndTheTf32Rounding) {
  TensorMapSpec plain;
  plain.base = 1;
  plain.shape = {{3, 1}, {-1, 64}};
  plain.strides = {{-1, 64}, {-1, 1}};
  plain.box = {128, 32};
  plain.dtype = DType::f32;
  plain.swizzle = 128;
  TensorMapSpec rounded = plain;
  rounded.base = 0, rounded.tf32 = true;
  const std::string text = serializeTensorMaps({plain, rounded});
  EXPECT_EQ(text, "1 7 2 3 1 -1 64 -1 64 -1 1 128 32 128\n0 7 2 3 1 -1 64 -1 64 -1 1 128 32 128 tf32\n");
  std::vector<TensorMapSpec> back = parseTensorMaps(text);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_FALSE(back[0].tf32);
  EXPECT_TRUE(back[1].tf32);
  EXPECT_EQ(back[1].base, 0);
  EXPECT_EQ(back[1].swizzle, 128);
  EXPECT_EQ(back[1].box, plain.box);
  EXPECT_EQ(back[1].shape[0].arg, 3);
  EXPECT_EQ(back[1].strides[0].value, 64);
  EXPECT_THROW(parseTensorMaps("1 7 2 3 1 -1 64 -1 64 -1 1 128 32 128 bf16\n"), Error);
  EXPECT_THROW(parseTensorMaps("1 7 2 3 1 -1 64 -1 64 -1 1 128 32\n"), Error);
  // The descriptor's source line, length-prefixed (a path may hold spaces),
  // after the rounding word if any.
  TensorMapSpec located = rounded;
  located.where = "my kernels/k.cpp:33";
  const std::string locatedText = serializeTensorMaps({located, plain});
  EXPECT_EQ(locatedText, "0 7 2 3 1 -1 64 -1 64 -1 1 128 32 128 tf32 @19:my kernels/k.cpp:33\n"
                         "1 7 2 3 1 -1 64 -1 64 -1 1 128 32 128\n");
  back = parseTensorMaps(locatedText);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back[0].tf32);
  EXPECT_EQ(back[0].where, "my kernels/k.cpp:33");
  EXPECT_EQ(back[1].where, "");
  EXPECT_EQ(parseTensorMaps("1 7 2 3 1 -1 64 -1 64 -1 1 128 32 128 @5:k.cpp\n")[0].where, "k.cpp");
  for (const char *bad : {"1 7 2 3 1 -1 64 -1 64 -1 1 128 32 128 @6:k.cpp\n", "1 7 2 3 1 -1 64 -1 64 -1 1 128 32 128 @:k\n",
                          "1 7 2 3 1 -1 64 -1 64 -1 1 128 32 128 @99999999999:k\n",
                          "1 7 2 3 1 -1 64 -1 64 -1 1 128 32 128 tf32 x\n"})
    EXPECT_THROW(parseTensorMaps(bad), Error) << bad;
  // Resolving keeps the rounding, and refuses it for anything but f32.
  const std::vector<Arg> args = {Arg(int64_t(0)), Arg(int64_t(0)), Arg(int64_t(0)), Arg(int64_t(256))};
  rounded.shape = {{3, 1}, {-1, 64}}, rounded.strides = {{-1, 64}, {-1, 1}};
  EXPECT_TRUE(resolveTensorMap(rounded, 0x1000, args, {"a", "b", "c", "M"}, "k").tf32);
  rounded.dtype = DType::bf16;
  try {
    resolveTensorMap(rounded, 0x1000, args, {"a", "b", "c", "M"}, "k");
    ADD_FAILURE() << "a bf16 map rounding to tf32 resolved";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("only an f32 tensor map"), std::string::npos) << e.what();
  }
}

} // namespace
