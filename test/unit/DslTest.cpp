// DslTest.cpp - what tracing a DSL kernel builds: ops, types, broadcasting,
// promotion, control flow, source locations and specialisation caching.
#include "TestUtil.h"
#include "examples/kernels.h"

#include <gmock/gmock.h>

#include <atomic>
#include <thread>
#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

std::vector<float> buf(size_t n) { return std::vector<float>(n); }

const int kScaleFirstLine = __LINE__ + 2;
void scale_kernel(tl::ptr<float> x, tl::scalar<float> s, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::arange(0, BLOCK);
  tl::store(x + offs, tl::load(x + offs) * s);
}

TEST(Dsl, TracesPointerArithmeticLoadsAndStores) {
  auto k = kernel("scale", scale_kernel, {"x", "s", "BLOCK"});
  auto x = buf(128);
  std::string ir = k.ir({x, 2.0f, 128});
  // A 16-byte aligned buffer specialises the kernel (vectorisable accesses).
  EXPECT_THAT(ir, HasSubstr("func.func @scale(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, "
                            "tile.name = \"x\"}"));
  EXPECT_THAT(ir, HasSubstr("tile.constants = {BLOCK = 128 : i64}"));
  EXPECT_THAT(ir, HasSubstr("tile.make_range {end = 128 : i32, start = 0 : i32}"));
  EXPECT_THAT(ir, HasSubstr("tile.addptr"));
  EXPECT_THAT(ir, HasSubstr("tile.load"));
  EXPECT_THAT(ir, HasSubstr("arith.mulf"));
  EXPECT_THAT(ir, HasSubstr("tile.store"));
}

TEST(Dsl, EveryOpRecordsTheCallersLine) {
  auto k = kernel("scale", scale_kernel, {"x", "s", "BLOCK"});
  auto x = buf(64);
  std::string ir = k.ir({x, 2.0f, 64}, "traced", /*debug_info=*/true);
  EXPECT_THAT(ir, HasSubstr(fmt::format("DslTest.cpp\":{}:", kScaleFirstLine)));
  EXPECT_THAT(ir, HasSubstr(fmt::format("DslTest.cpp\":{}:", kScaleFirstLine + 1)));
}

TEST(Dsl, SpecialisesOncePerConstant) {
  auto k = kernel("scale", scale_kernel, {"x", "s", "BLOCK"});
  auto x = buf(256);
  k.ir({x, 1.0f, 64});
  k.ir({x, 5.0f, 64}); // runtime scalar: same specialisation
  EXPECT_EQ(k.num_specializations(), 1u);
  k.ir({x, 1.0f, 128});
  EXPECT_EQ(k.num_specializations(), 2u);
}

/// Gathers x[i * stride], Triton style: the stride is a runtime argument.
void strided_copy(tl::ptr<float> x, tl::ptr<float> y, tl::scalar<int32_t> stride, tl::scalar<float> scale) {
  tl::tensor i = tl::arange(0, 512);
  tl::store(y + i, tl::load(x + i * stride) * scale);
}

TEST(Dsl, IntegerArgumentsEqualToOneAreSpecialisedAsConstants) {
  auto k = kernel("strided_copy", strided_copy, {"x", "y", "stride", "scale"});
  std::vector<float> x = tegula::testing::random_vector<float>(1024), y(512);
  // Like Triton: stride 1 is traced as the constant, so its accesses are runs
  // (16-byte vectors); any other stride is a runtime value. Floats equal to
  // 1 are not specialised.
  const std::string one = k.ir({x, y, 1, 1.0f}, "traced");
  EXPECT_THAT(one, HasSubstr("tile.equal_to_one"));
  EXPECT_THAT(k.ir({x, y, 2, 1.0f}, "traced"), Not(HasSubstr("tile.equal_to_one")));
  EXPECT_EQ(k.num_specializations(), 2u);
  k.ir({x, y, 3, 1.0f});
  k.ir({x, y, 1, 2.0f});
  EXPECT_EQ(k.num_specializations(), 2u);
  EXPECT_THAT(k.compile({x, y, 1, 1.0f}, {.chip = "sm_80", .assemble = false}).ptx, HasSubstr("ld.global.v4.b32"));
  EXPECT_THAT(k.compile({x, y, 2, 1.0f}, {.chip = "sm_80", .assemble = false}).ptx, Not(HasSubstr("ld.global.v4")));
  for (Backend backend : tegula::testing::backendsWithTheGpu("arguments equal to 1"))
    for (int stride : {1, 2}) {
      std::vector<float> out(512, NAN);
      k({.grid = {1}, .backend = backend}, x, out, stride, 0.5f);
      for (int i = 0; i < 512; ++i)
        ASSERT_EQ(out[size_t(i)], x[size_t(i * stride)] * 0.5f) << stride << ", " << i;
    }
}

void broadcast_kernel(tl::ptr<float> out, tl::constant<int> M, tl::constant<int> N) {
  tl::tensor rows = tl::arange(0, M).expand_dims(1); // [M, 1]
  tl::tensor cols = tl::arange(0, N);                 // [N] -> [1, N]
  tl::store(out + rows * N + cols, (rows + cols).to(tl::f32));
}

TEST(Dsl, BroadcastsLikeNumPy) {
  auto k = kernel("bcast", broadcast_kernel);
  auto out = buf(8 * 16);
  std::string ir = k.ir({out, 8, 16}, "traced");
  EXPECT_THAT(ir, HasSubstr("tile.expand_dims"));
  EXPECT_THAT(ir, HasSubstr("tensor<8x1xi32> -> tensor<8x16xi32>"));
  EXPECT_THAT(ir, HasSubstr("tensor<1x16xi32> -> tensor<8x16xi32>"));
  k({.grid = {1}}, out, 8, 16);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 16; ++c)
      ASSERT_EQ(out[size_t(r * 16 + c)], float(r + c));
}

void promote_kernel(tl::ptr<bfloat16> x, tl::ptr<float> y, tl::ptr<float> out) {
  tl::tensor offs = tl::arange(0, 16);
  tl::tensor a = tl::load(x + offs); // bf16
  tl::tensor b = tl::load(y + offs); // f32
  tl::tensor i = offs * 2;           // i32 literal stays i32
  tl::store(out + offs, a + b + i + 0.5);
}

TEST(Dsl, PromotesTypesAndKeepsLiteralsWeak) {
  auto k = kernel("promote", promote_kernel);
  std::vector<bfloat16> x(16, bfloat16(1.5f));
  auto y = buf(16), out = buf(16);
  std::string ir = k.ir({x, y, out}, "traced");
  EXPECT_THAT(ir, HasSubstr("arith.extf"));                        // bf16 -> f32
  EXPECT_THAT(ir, HasSubstr("arith.muli"));                        // offs * 2 in i32
  EXPECT_THAT(ir, HasSubstr("arith.sitofp"));                      // i32 -> f32
  EXPECT_THAT(ir, Not(HasSubstr("f64")));                          // 0.5 stays f32
  for (int i = 0; i < 16; ++i) y[size_t(i)] = float(i);
  k({.grid = {1}}, x, y, out);
  for (int i = 0; i < 16; ++i)
    ASSERT_EQ(out[size_t(i)], 1.5f + float(i) + float(2 * i) + 0.5f);
}

TEST(Dsl, DynamicLoopsCarryTiles) {
  auto k = kernel("matmul", examples::matmul<float>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  auto a = buf(32 * 32), b = buf(32 * 32), c = buf(32 * 32);
  std::string ir = k.ir({a, b, c, 32, 32, 32, 32, 32, 16});
  EXPECT_THAT(ir, HasSubstr("scf.for"));
  EXPECT_THAT(ir, HasSubstr("iter_args"));
  EXPECT_THAT(ir, HasSubstr("tile.dot"));
  EXPECT_THAT(ir, HasSubstr("ieee"));
  EXPECT_THAT(ir, HasSubstr("scf.yield"));
}

// Column sums of [rows, 3 x 8] kept as three chunks, an accumulator a chunk
// carried in std::vectors swapped each row (double buffering: the sums so
// far move to `before`), plus a tensor and the row pointer (a tl::ptr)
// after them - the order carried.
void chunked_column_sums(tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> count, tl::scalar<int32_t> rows) {
  std::vector<tl::tensor> acc(3, tl::zeros({8}, tl::f32)), before = acc;
  tl::tensor seen = tl::scalar_const(0, tl::i32);
  for (auto r : tl::range(0, rows, 1, acc, seen, before, x)) {
    (void)r;
    std::swap(acc, before);
    for (size_t k = 0; k < acc.size(); ++k)
      acc[k] = before[k] + tl::load(x + int(k) * 8 + tl::arange(0, 8));
    seen = seen + 1;
    x = tl::ptr<float>(x + 24);
  }
  for (size_t k = 0; k < acc.size(); ++k)
    tl::store(out + int(k) * 8 + tl::arange(0, 8), acc[k]);
  tl::store(count, seen);
}

TEST(Dsl, DynamicLoopsCarryVectorsOfTiles) {
  auto k = kernel("chunked_column_sums", chunked_column_sums, {"x", "out", "count", "rows"});
  const int rows = 5;
  std::vector<float> x(size_t(rows) * 24), out(24);
  std::vector<int32_t> count(1);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 7) - 2.5f + float(i) / 64.0f;
  std::string ir = k.ir({x, out, count, rows});
  EXPECT_THAT(ir, HasSubstr("scf.for"));
  k({.grid = {1}}, x, out, count, rows);
  for (int c = 0; c < 24; ++c) {
    float want = 0;
    for (int r = 0; r < rows; ++r)
      want += x[size_t(r * 24 + c)];
    EXPECT_EQ(out[size_t(c)], want) << "column " << c;
  }
  EXPECT_EQ(count[0], rows);
}

void if_kernel(tl::ptr<float> out, tl::scalar<int32_t> flag) {
  tl::tensor offs = tl::arange(0, 16);
  tl::tensor v = tl::full({16}, 1.0f, tl::f32);
  v = tl::if_(flag > 0, [&] { return v * 3.0f; }, [&] { return v - 1.0f; });
  tl::if_(flag == 7, [&] { tl::store(out + offs, 7.0f); });
  tl::if_(flag != 7, [&] { tl::store(out + offs, v); });
}

TEST(Dsl, RuntimeIfBuildsScfIf) {
  auto k = kernel("if", if_kernel, {"out", "flag"});
  auto out = buf(16);
  std::string ir = k.ir({out, 1}, "traced"); // canonicalisation folds this if to a select
  EXPECT_THAT(ir, HasSubstr("scf.if"));
  EXPECT_THAT(ir, HasSubstr("-> (tensor<16xf32>)"));
  k({.grid = {1}}, out, 1);
  EXPECT_EQ(out[0], 3.0f);
  k({.grid = {1}}, out, 0);
  EXPECT_EQ(out[5], 0.0f);
  k({.grid = {1}}, out, 7);
  EXPECT_EQ(out[15], 7.0f);
}

void reductions_kernel(tl::ptr<float> x, tl::ptr<float> sums, tl::ptr<float> maxs,
                       tl::ptr<float> mins, tl::ptr<int32_t> argmaxs, tl::ptr<int32_t> argmins) {
  tl::tensor r = tl::arange(0, 4).expand_dims(1), c = tl::arange(0, 8).expand_dims(0);
  tl::tensor v = tl::load(x + r * 8 + c);
  tl::tensor rows = tl::arange(0, 4);
  tl::store(sums + rows, tl::sum(v, 1));
  tl::store(maxs + rows, tl::max(v, 1));
  tl::store(mins + rows, tl::min(v, -1));
  tl::store(argmaxs + rows, tl::argmax(v, 1));
  tl::store(argmins + rows, tl::argmin(v, 1));
}

TEST(Dsl, ReductionsAlongAnAxis) {
  auto k = kernel("reductions", reductions_kernel);
  std::vector<float> x = {3, 1, 4, 1, 5, 9, 2, 6,   // argmax 5, argmin 1 (tie -> first)
                          5, 3, 5, 8, 9, 7, 9, 3,   // argmax 4 (tie -> first)
                          -1, -2, -3, -4, -5, -6, -7, -8,
                          0, 0, 0, 0, 0, 0, 0, NAN}; // NaN wins argmax and max
  auto sums = buf(4), maxs = buf(4), mins = buf(4);
  std::vector<int32_t> am(4), an(4);
  k({.grid = {1}}, x, sums, maxs, mins, am, an);
  EXPECT_EQ(sums[0], 31.0f);
  EXPECT_EQ(maxs[1], 9.0f);
  EXPECT_EQ(mins[2], -8.0f);
  EXPECT_TRUE(std::isnan(maxs[3]));
  EXPECT_EQ(am[0], 5);
  EXPECT_EQ(an[0], 1);
  EXPECT_EQ(am[1], 4);
  EXPECT_EQ(an[2], 7);
  EXPECT_EQ(am[3], 7);
}

void cast_kernel(tl::ptr<float> x, tl::ptr<int32_t> i, tl::ptr<bfloat16> b, tl::ptr<bool> m,
                 tl::ptr<int64_t> w) {
  tl::tensor offs = tl::arange(0, 4);
  tl::tensor v = tl::load(x + offs);
  tl::store(i + offs, v.to(tl::i32));
  tl::store(b + offs, tl::cast<bfloat16>(v));
  tl::store(m + offs, v.to(tl::i1));
  tl::store(w + offs, v.to(tl::i32).to(tl::i64) * 4000000000LL);
}

TEST(Dsl, CastsBetweenElementTypes) {
  auto k = kernel("casts", cast_kernel);
  std::vector<float> x = {1.75f, -2.5f, 0.0f, 3.0f};
  std::vector<int32_t> i(4);
  std::vector<bfloat16> b(4);
  std::vector<int64_t> w(4);
  std::vector<uint8_t> m(4); // i1 in memory is one byte
  k({.grid = {1}}, x, i, b, Arg::buffer(m.data(), 4, DType::i1), w);
  EXPECT_EQ(i[0], 1);
  EXPECT_EQ(i[1], -2); // truncation toward zero
  EXPECT_EQ(float(b[1]), -2.5f);
  EXPECT_EQ(m[0], 1);
  EXPECT_EQ(m[2], 0);
  EXPECT_EQ(w[3], 12000000000LL);
}

TEST(Dsl, BackendFromEnvironmentIsValidated) {
  EXPECT_EQ(parse_backend("interp"), Backend::Interp);
  EXPECT_EQ(parse_backend("gpu"), Backend::GPU);
  try {
    parse_backend("cuda-please");
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown backend 'cuda-please'"));
    EXPECT_THAT(e.what(), HasSubstr("available: interp, gpu"));
  }
}

} // namespace

namespace {

void copy_any(tl::any_ptr src, tl::any_ptr dst, tl::scalar<int32_t> n) {
  tl::tensor offs = tl::arange(0, 64);
  tl::store(dst + offs, tl::load(src + offs, offs < n), offs < n);
}

TEST(Dsl, AnyPtrSpecialisesPerElementType) {
  auto k = kernel("copy_any", copy_any, {"src", "dst", "n"});
  std::vector<float> f(50, 1.5f), f2(50);
  std::vector<int32_t> i(50, 7), i2(50);
  std::vector<bfloat16> b(50, bfloat16(2.5f)), b2(50);
  k({.grid = {1}}, f, f2, 50);
  k({.grid = {1}}, i, i2, 50);
  k({.grid = {1}}, b, b2, 50);
  k({.grid = {1}}, f, f2, 50); // cached
  EXPECT_EQ(k.num_specializations(), 3u);
  EXPECT_EQ(f2[49], 1.5f);
  EXPECT_EQ(i2[49], 7);
  EXPECT_EQ(float(b2[49]), 2.5f);
  EXPECT_THAT(k.ir({b, b2, 50}), HasSubstr("!tile.ptr<bf16>"));
}

tl::tensor g_kept; // a tile smuggled out of one trace into another
void keeps_tile(tl::ptr<float> x, tl::constant<int> B) {
  if (B == 16)
    g_kept = tl::arange(0, 16);
  else
    tl::store(x + g_kept, 1.0f);
}

TEST(Dsl, TileFromAnotherTraceIsAnError) {
  auto k = kernel("keeps", keeps_tile);
  std::vector<float> x(16);
  k({.grid = {1}}, x, 16);
  try {
    k({.grid = {1}}, x, 32);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("DslTest.cpp:"));
    EXPECT_THAT(e.what(), HasSubstr("belongs to another kernel trace"));
  }
}

TEST(Dsl, ConcurrentLaunchesTraceEachSpecialisationOnce) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  const int n = 3000;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> x(n, float(t)), y(n, 1.0f), out(n, NAN);
      int block = t % 2 ? 256 : 512;
      k({.grid = {uint32_t(cdiv(n, block))}}, x, y, out, n, block);
      for (float v : out)
        if (v != float(t) + 1.0f)
          ++failures;
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(k.num_specializations(), 2u);
}

} // namespace
