// GatherTest.cpp - tl::gather (Triton's tl.gather) against a host
// reference: rows and columns picked by index tiles narrower, as wide and
// wider than the source along the axis, with repeats; f32, bf16 and i32; 1-D
// lookups. In the interpreter, the simulator as sm_80 and sm_90a code (the
// source staged through shared memory once), and on the GPU when there is
// one. Out-of-range indices are an error in the interpreter; mistakes are
// named at the user's line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using tegula::testing::errorOf;
using tegula::testing::random_vector;
using tegula::testing::rng;

namespace {

/// out[i, j] = src[index[i, j], j] (axis 0, index [I, 16]) and
/// cols[r, i] = src[r, cidx[r, i]] (axis 1, index [32, C]) of a [32, 16] src.
template <class T>
void gather2d(tl::ptr<T> src, tl::ptr<int32_t> rowIndex, tl::ptr<T> rows, tl::ptr<int32_t> colIndex,
              tl::ptr<T> cols, tl::constant<int> I, tl::constant<int> C) {
  tl::tensor r = tl::arange(0, 32), c = tl::arange(0, 16);
  tl::tensor s = tl::load(src + r.expand_dims(1) * 16 + c.expand_dims(0));
  tl::tensor i = tl::arange(0, I), k = tl::arange(0, C);
  tl::tensor ri = tl::load(rowIndex + i.expand_dims(1) * 16 + c.expand_dims(0));
  tl::store(rows + i.expand_dims(1) * 16 + c.expand_dims(0), tl::gather(s, ri, 0));
  tl::tensor ci = tl::load(colIndex + r.expand_dims(1) * C + k.expand_dims(0));
  tl::store(cols + r.expand_dims(1) * C + k.expand_dims(0), tl::gather(s, ci, 1));
}

/// A lookup table: out[i] = table[codes[i]] (i8 codes, 256 of them, a 64-entry table).
void lookup(tl::ptr<float> table, tl::ptr<int8_t> codes, tl::ptr<float> out) {
  tl::tensor i = tl::arange(0, 256);
  tl::store(out + i, tl::gather(tl::load(table + tl::arange(0, 64)), tl::load(codes + i), 0));
}

template <class T>
void checkGather2d(int I, int C) {
  SCOPED_TRACE(fmt::format("{} rows picked, {} columns picked", I, C));
  auto src = random_vector<T>(32 * 16);
  std::vector<int32_t> rowIndex(size_t(I * 16)), colIndex(size_t(32 * C));
  for (auto &v : rowIndex)
    v = int32_t(rng()() % 32);
  for (auto &v : colIndex)
    v = int32_t(rng()() % 16);
  rowIndex[0] = 31, colIndex[0] = 0; // the ends
  std::vector<T> wantRows(rowIndex.size()), wantCols(colIndex.size());
  for (int i = 0; i < I; ++i)
    for (int j = 0; j < 16; ++j)
      wantRows[size_t(i * 16 + j)] = src[size_t(rowIndex[size_t(i * 16 + j)] * 16 + j)];
  for (int r = 0; r < 32; ++r)
    for (int k = 0; k < C; ++k)
      wantCols[size_t(r * C + k)] = src[size_t(r * 16 + colIndex[size_t(r * C + k)])];
  auto kern = kernel("gather2d", gather2d<T>, {"src", "row_index", "rows", "col_index", "cols", "I", "C"});
  for (Backend backend : backendsWithTheGpu("tl::gather"))
    for (const char *chip : {"sm_80", "sm_90a"}) {
      if (backend != Backend::Sim && std::string(chip) == "sm_90a")
        continue;
      SCOPED_TRACE(fmt::format("backend {} {}", int(backend), chip));
      std::vector<T> rows(wantRows.size()), cols(wantCols.size());
      LaunchOptions o{.grid = {1}, .backend = backend};
      if (backend == Backend::Sim)
        o.chip = chip;
      kern(o, src, rowIndex, rows, colIndex, cols, I, C);
      EXPECT_EQ(rows, wantRows);
      EXPECT_EQ(cols, wantCols);
    }
}

TEST(Gather, PicksRowsAndColumnsByIndex) {
  for (auto [I, C] : {std::pair{8, 4}, std::pair{32, 16}, std::pair{64, 32}}) {
    checkGather2d<float>(I, C);
    checkGather2d<int32_t>(I, C);
  }
  checkGather2d<bfloat16>(16, 8);
}

TEST(Gather, LooksUpATableWithNarrowIndices) {
  auto table = random_vector<float>(64);
  std::vector<int8_t> codes(256);
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = int8_t(rng()() % 64);
  std::vector<float> want(256);
  for (size_t i = 0; i < codes.size(); ++i)
    want[i] = table[size_t(codes[i])];
  auto kern = kernel("lookup", lookup, {"table", "codes", "out"});
  for (Backend backend : backendsWithTheGpu("tl::gather")) {
    std::vector<float> out(256);
    kern({.grid = {1}, .backend = backend}, table, codes, out);
    EXPECT_EQ(out, want) << "backend " << int(backend);
  }
}

TEST(Gather, AnIndexOutsideTheSourceIsAnErrorInTheInterpreter) {
  auto table = random_vector<float>(64);
  std::vector<int8_t> codes(256, 3);
  codes[17] = 64;
  std::vector<float> out(256);
  try {
    kernel("lookup", lookup, {"table", "codes", "out"})({.grid = {1}, .backend = Backend::Interp}, table, codes, out);
    ADD_FAILURE() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("tl::gather index 64 is outside [0, 64) along axis 0"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("GatherTest.cpp:"));
  }
}

void gatherFloatIndex(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::gather(v, v, 0));
}
void gatherMismatch(tl::ptr<float> o) {
  tl::tensor r = tl::arange(0, 4);
  tl::tensor v = tl::load(o + r.expand_dims(1) * 4 + r.expand_dims(0));
  tl::tensor idx = tl::zeros({2, 2}, tl::i32);
  FAILS_ON_NEXT_LINE();
  tl::store(o + r.expand_dims(1) * 4 + r.expand_dims(0), tl::gather(v, idx, 0));
}

void gatherWideIndex(tl::ptr<float> o, tl::ptr<int64_t> i) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::gather(v, tl::load(i + tl::arange(0, 4)), 0));
}

TEST(Gather, MistakesAreNamedAtTheUsersLine) {
  std::vector<float> f(16);
  tegula::testing::expectAtMarkedLine(errorOf(kernel("gather_float_index", gatherFloatIndex), {f}), "GatherTest.cpp",
                                      "tl::gather needs an integer index tile, got f32");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("gather_mismatch", gatherMismatch), {f}), "GatherTest.cpp",
                                      "tl::gather along axis 0: the index [2, 2] must have the rank of the source "
                                      "[4, 4] and match it in every other dimension");
  std::vector<int64_t> wide(4);
  tegula::testing::expectAtMarkedLine(errorOf(kernel("gather_wide_index", gatherWideIndex), {f, wide}),
                                      "GatherTest.cpp", "tl::gather takes indices of at most 32 bits, got i64");
}

} // namespace
