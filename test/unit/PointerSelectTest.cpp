// PointerSelectTest.cpp - tl::where between two pointer tiles (Triton's
// tl.where on pointers): a load from, or a store to, one of two buffers per
// element, on ragged shapes with masks. In the interpreter, the simulator as
// sm_80 and sm_90a code, and on the GPU when there is one. A condition that
// holds still along a row keeps the loads vectors; pointers of two types, or
// a pointer beside a number, are errors at the user's line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using tegula::testing::errorOf;
using tegula::testing::random_vector;
using ::testing::HasSubstr;

namespace {

/// out[r, c] = (row r even ? a : b)[r, c] over an M x N ragged block;
/// `alternate` picks per column instead (c even).
void pick_rows(tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> out, tl::scalar<int32_t> M,
               tl::scalar<int32_t> N, tl::constant<bool> alternate) {
  tl::tensor r = tl::program_id(0) * 32 + tl::arange(0, 32), c = tl::arange(0, 64);
  tl::tensor offs = r.expand_dims(1) * N + c.expand_dims(0);
  tl::tensor mask = (r.expand_dims(1) < M) & (c.expand_dims(0) < N);
  tl::tensor fromA = alternate ? (c.expand_dims(0) % 2 == 0) : (r.expand_dims(1) % 2 == 0);
  tl::tensor src = tl::where(fromA, a + offs, b + offs);
  tl::store(out + offs, tl::load(src, mask, 0.0f), mask);
}

/// Scatter: x[i] goes to evens[i] or odds[i] by its parity; the other
/// buffer keeps its contents.
void split_by_parity(tl::ptr<int32_t> x, tl::ptr<int32_t> evens, tl::ptr<int32_t> odds, tl::scalar<int32_t> n) {
  tl::tensor i = tl::program_id(0) * 128 + tl::arange(0, 128);
  tl::tensor v = tl::load(x + i, i < n, 0);
  tl::store(tl::where(v % 2 == 0, evens + i, odds + i), v, i < n);
}

void mixed_pointer_types(tl::ptr<float> a, tl::ptr<bfloat16> b) {
  tl::tensor i = tl::arange(0, 16);
  FAILS_ON_NEXT_LINE();
  tl::store(a + i, tl::load(tl::where(i < 8, a + i, b + i)).to(tl::f32));
}

void pointer_beside_a_number(tl::ptr<float> a) {
  tl::tensor i = tl::arange(0, 16);
  FAILS_ON_NEXT_LINE();
  tl::store(a + i, tl::load(tl::where(i < 8, a + i, i)));
}

TEST(PointerSelect, LoadsFromOneOfTwoBuffers) {
  auto k = kernel("pick_rows", pick_rows, {"a", "b", "out", "M", "N", "alternate"});
  for (auto [M, N] : {std::pair{32, 64}, std::pair{45, 37}, std::pair{7, 1}})
    for (bool alternate : {false, true}) {
      auto a = random_vector<float>(size_t(M * N)), b = random_vector<float>(size_t(M * N));
      std::vector<float> want(size_t(M * N));
      for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) {
          const size_t at = size_t(r * N + c);
          want[at] = ((alternate ? c : r) % 2 == 0 ? a : b)[at];
        }
      for (Backend backend : backendsWithTheGpu("tl::where on pointers"))
        for (const char *chip : {"sm_80", "sm_90a"}) {
          if (backend != Backend::Sim && std::string(chip) == "sm_90a")
            continue;
          SCOPED_TRACE(fmt::format("{}x{}, {}, {} {}", M, N, alternate ? "by column" : "by row",
                                   tegula::testing::backend_name(backend), chip));
          std::vector<float> out(want.size(), -1.0f);
          LaunchOptions o{.grid = {unsigned((M + 31) / 32)}, .backend = backend};
          if (backend == Backend::Sim)
            o.chip = chip;
          k(o, a, b, out, M, N, alternate);
          EXPECT_EQ(out, want);
        }
    }
}

TEST(PointerSelect, ARowChoiceKeepsTheLoadsVectors) {
  auto k = kernel("pick_rows", pick_rows, {"a", "b", "out", "M", "N", "alternate"});
  std::vector<float> x(64 * 64);
  // Row choice, N a multiple of 4: 16-byte loads, as from one buffer. A
  // column choice alternates inside every 4 elements: scalar loads.
  const std::string byRow = k.compile({x, x, x, 64, 64, false}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_THAT(byRow, HasSubstr("ld.global.v4.b32"));
  const std::string byColumn = k.compile({x, x, x, 64, 64, true}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_THAT(byColumn, ::testing::Not(HasSubstr("ld.global.v4")));
}

TEST(PointerSelect, StoresToOneOfTwoBuffers) {
  auto k = kernel("split_by_parity", split_by_parity, {"x", "evens", "odds", "n"});
  const int n = 300;
  std::vector<int32_t> x(n);
  for (int i = 0; i < n; ++i)
    x[size_t(i)] = int32_t(tegula::testing::rng()() % 1000);
  std::vector<int32_t> wantEvens(n, -1), wantOdds(n, -1);
  for (int i = 0; i < n; ++i)
    (x[size_t(i)] % 2 == 0 ? wantEvens : wantOdds)[size_t(i)] = x[size_t(i)];
  for (Backend backend : backendsWithTheGpu("tl::where on pointers")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> evens(n, -1), odds(n, -1);
    k({.grid = {3}, .backend = backend}, x, evens, odds, n);
    EXPECT_EQ(evens, wantEvens);
    EXPECT_EQ(odds, wantOdds);
  }
}

TEST(PointerSelect, MistakesAreErrorsAtTheLine) {
  std::vector<float> a(16);
  std::vector<bfloat16> b(16);
  tegula::testing::expectAtMarkedLine(errorOf(kernel("k", mixed_pointer_types), {a, b}), "PointerSelectTest.cpp",
                                      "tl::where picks between two pointer tiles of one type, got pointer to f32 and "
                                      "pointer to bf16");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("k", pointer_beside_a_number), {a}), "PointerSelectTest.cpp",
                                      "tl::where");
}

} // namespace
