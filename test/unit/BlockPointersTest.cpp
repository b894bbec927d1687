// BlockPointersTest.cpp - tl::make_block_ptr, tl::advance and the block
// pointer tl::load / tl::store (Triton's block pointers): blocks of strided
// tensors at any offset, bounds checked along the dimensions asked for
// (zero or NaN padding, writes outside dropped), carried through tl::range
// and tl::while_ and chosen by tl::if_, a GEMM on every backend whose loads are as wide as
// hand-written ones, and each mistake named at the user's line.
#include "ErrorTestUtil.h"
#include "F16GemmCheck.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

using namespace tegula;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using tegula::testing::backendsWithTheGpu;

namespace {

constexpr int kBlockRows = 16, kBlockCols = 8;

/// Reads the 16 x 8 block at (r0, c0) of x (rows x cols, column-major),
/// padded where outside, into y (a whole 16 x 8 row-major block), and
/// writes it back at (r0, c0) of z (rows x cols, row-major) inside only.
template <tl::padding PAD>
void blockCopy(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> z, tl::scalar<int32_t> rows,
               tl::scalar<int32_t> cols, tl::scalar<int32_t> r0, tl::scalar<int32_t> c0) {
  auto in = tl::make_block_ptr(x, {rows, cols}, {1, rows}, {r0, c0}, {kBlockRows, kBlockCols}, {0, 1});
  tl::tensor block = tl::load(in, {0, 1}, PAD);
  tl::store(tl::make_block_ptr(y, {kBlockRows, kBlockCols}, {kBlockCols, 1}, {0, 0}, {kBlockRows, kBlockCols}), block);
  tl::store(tl::make_block_ptr(z, {rows, cols}, {cols, 1}, {r0, c0}, {kBlockRows, kBlockCols}), block, {1, 0});
}

template <tl::padding PAD>
void expectBlockCopies(const char *padName) {
  const int rows = 13, cols = 6;
  const std::vector<float> x = tegula::testing::random_vector<float>(size_t(rows) * cols);
  auto k = kernel("block_copy", blockCopy<PAD>, {"x", "y", "z", "rows", "cols", "r0", "c0"});
  // Overhanging the end, the start (negative offsets), both, and wholly out.
  const std::vector<std::pair<int, int>> offsets = {{0, 0}, {-3, 2}, {10, -5}, {-15, -7}, {20, 0}};
  for (Backend backend : backendsWithTheGpu("block pointer loads and stores")) {
    for (auto [r0, c0] : offsets) {
      SCOPED_TRACE(fmt::format("{}, padding {}, block at ({}, {})", tegula::testing::backend_name(backend), padName, r0, c0));
      std::vector<float> y = tegula::testing::poisoned<float>(kBlockRows * kBlockCols);
      std::vector<float> z = tegula::testing::poisoned<float>(size_t(rows) * cols);
      const std::vector<float> untouched = z;
      k({.grid = {1}, .backend = backend}, x, y, z, rows, cols, r0, c0);
      for (int i = 0; i < kBlockRows; ++i)
        for (int j = 0; j < kBlockCols; ++j) {
          const int r = r0 + i, c = c0 + j;
          const bool inside = r >= 0 && r < rows && c >= 0 && c < cols;
          const float got = y[size_t(i) * kBlockCols + size_t(j)];
          if (inside)
            ASSERT_EQ(got, x[size_t(r) + size_t(c) * rows]) << i << ", " << j;
          else if (PAD == tl::padding::nan)
            ASSERT_TRUE(std::isnan(got)) << i << ", " << j << ": " << got;
          else
            ASSERT_EQ(got, 0.0f) << i << ", " << j;
        }
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
          const size_t at = size_t(r) * cols + size_t(c);
          const bool written = r >= r0 && r < r0 + kBlockRows && c >= c0 && c < c0 + kBlockCols;
          if (written)
            ASSERT_EQ(z[at], x[size_t(r) + size_t(c) * rows]) << r << ", " << c;
          else
            ASSERT_EQ(std::bit_cast<uint32_t>(z[at]), std::bit_cast<uint32_t>(untouched[at])) << r << ", " << c;
        }
    }
  }
}

} // namespace

TEST(BlockPointers, BlocksAnywhereReadPaddingOutsideAndWriteInsideOnly) {
  expectBlockCopies<tl::padding::zero>("zero");
  expectBlockCopies<tl::padding::nan>("nan");
}

namespace {

/// Triton's block-pointer matmul: the operands' block pointers advance
/// along K in the loop that carries them; ragged M, N and K are checked.
void blockPtrMatmul(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                    tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN,
                    tl::constant<int> BK) {
  tl::tensor m0 = tl::program_id(0) * BM, n0 = tl::program_id(1) * BN;
  auto pa = tl::make_block_ptr(a, {M, K}, {K, 1}, {m0, 0}, {BM, BK}, {1, 0});
  auto pb = tl::make_block_ptr(b, {K, N}, {N, 1}, {0, n0}, {BK, BN}, {1, 0});
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for ([[maybe_unused]] auto k : tl::range(0, K, BK.value, acc, pa, pb)) {
    acc = tl::dot(tl::load(pa, {0, 1}), tl::load(pb, {0, 1}), acc);
    pa = tl::advance(pa, {0, BK});
    pb = tl::advance(pb, {BK, 0});
  }
  tl::store(tl::make_block_ptr(c, {M, N}, {N, 1}, {m0, n0}, {BM, BN}), acc, {0, 1});
}

} // namespace

TEST(BlockPointers, AMatmulAdvancingItsBlockPointersRunsOnEveryBackend) {
  auto k = kernel("block_ptr_matmul", blockPtrMatmul, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  tegula::testing::expectF16GemmOnEveryBackend(k, 100, 72, 40, 3);  // ragged: every bound checked
  tegula::testing::expectF16GemmOnEveryBackend(k, 128, 192, 96, 3); // whole blocks
  // The offsets the loop carries advance by BK from 0, and K and N divide by
  // 16: the operands arrive by 16-byte cp.async into rings, as those of a
  // hand-written GEMM do.
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    const std::string ptx = tegula::testing::compileF16Gemm(k, 128, 192, 96, chip).ptx;
    EXPECT_THAT(ptx, HasSubstr("cp.async.cg.shared.global"));
    EXPECT_THAT(ptx, HasSubstr(std::string(chip) == "sm_80" ? "mma.sync" : "wgmma.mma_async"));
  }
}

namespace {

/// matmul_descriptors with its K offset carried by the loop (`k0 += BK`, as
/// a block pointer's is) instead of read from the induction variable.
void carriedOffsetMatmul(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                         tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN,
                         tl::constant<int> BK) {
  auto ad = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto bd = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  tl::tensor m0 = tl::program_id(0) * BM, n0 = tl::program_id(1) * BN;
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32), k0 = tl::full({}, 0, tl::i32);
  for ([[maybe_unused]] auto k : tl::range(0, K, BK.value, acc, k0)) {
    acc = tl::dot(ad.load({m0, k0}), bd.load({k0, n0}), acc);
    k0 = k0 + BK;
  }
  tl::store(tl::make_block_ptr(c, {M, N}, {N, 1}, {m0, n0}, {BM, BN}), acc, {0, 1});
}

} // namespace

/// On sm_90a the descriptor loads become TMA rings whose copies for
/// iteration i + s compute the carried offset as i * BK (checked on every
/// backend); warp specialisation leaves such a loop to the consumers (its
/// producer counts only its own iterations) and stays right.
TEST(BlockPointers, LoopCarriedDescriptorOffsetsFillTmaRings) {
  auto k = kernel("carried_offset_matmul", carriedOffsetMatmul, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  tegula::testing::expectF16GemmOnEveryBackend(k, 100, 72, 96, 3);
  const std::string ptx = tegula::testing::compileF16Gemm(k, 128, 192, 96, "sm_90a").ptx;
  EXPECT_THAT(ptx, AllOf(HasSubstr("cp.async.bulk.tensor.2d.shared::cluster.global"), HasSubstr("wgmma.mma_async")));
  const int M = 100, N = 72, K = 96;
  const std::vector<float16> a = tegula::testing::random_vector<float16>(size_t(M) * K),
                             b = tegula::testing::random_vector<float16>(size_t(K) * N);
  std::vector<float> want(size_t(M) * N), got(size_t(M) * N, NAN);
  const Grid g{2, 2};
  k({.grid = g, .backend = Backend::Interp}, a, b, want, M, N, K, 64, 64, 32);
  k({.grid = g, .num_warps = 4, .backend = Backend::Sim, .warp_specialize = true, .chip = "sm_90a"}, a, b, got, M, N,
    K, 64, 64, 32);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-3) << i;
}

namespace {

/// Sums row `pid` (n elements) in blocks of 32: once by a block pointer a
/// tl::range advances, once by one a tl::while_ advances until it passes n.
void rowSums(tl::ptr<float> x, tl::ptr<float> viaRange, tl::ptr<float> viaWhile, tl::scalar<int32_t> n) {
  tl::tensor row = tl::program_id(0) * n;
  auto p = tl::make_block_ptr(x + row, {n}, {1}, {0}, {32});
  tl::tensor total = tl::zeros({32}, tl::f32);
  for ([[maybe_unused]] auto i : tl::range(0, n, 32, total, p)) {
    total = total + tl::load(p, {0});
    p = tl::advance(p, {32});
  }
  tl::store(viaRange + tl::program_id(0), tl::sum(total, 0));
  auto q = tl::make_block_ptr(x + row, {n}, {1}, {0}, {32});
  tl::tensor acc = tl::zeros({32}, tl::f32);
  tl::while_([&] { return q.offset(0) < n; },
             [&] {
               acc = acc + tl::load(q, {0});
               q = tl::advance(q, {32});
             },
             acc, q);
  tl::store(viaWhile + tl::program_id(0), tl::sum(acc, 0));
}

} // namespace

TEST(BlockPointers, LoopsCarryThemAsTheyAdvance) {
  const int rows = 3, n = 83;
  const std::vector<float> x = tegula::testing::random_vector<float>(size_t(rows) * n);
  auto k = kernel("row_sums", rowSums, {"x", "via_range", "via_while", "n"});
  for (Backend backend : backendsWithTheGpu("block pointers carried by loops")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<float> a(rows, NAN), b(rows, NAN);
    k({.grid = {uint32_t(rows)}, .backend = backend}, x, a, b, n);
    for (int r = 0; r < rows; ++r) {
      double want = 0;
      for (int i = 0; i < n; ++i)
        want += x[size_t(r) * n + size_t(i)];
      EXPECT_NEAR(a[size_t(r)], want, 1e-4) << r;
      EXPECT_NEAR(b[size_t(r)], want, 1e-4) << r;
    }
  }
}

namespace {

/// Program pid copies 16 elements of row pid (n long) scaled: odd programs
/// start 8 elements in, program 0 another 4 in at twice the value - block
/// pointers (and a tuple of a tile and one) chosen by tl::if_.
void chosenBlocks(tl::ptr<float> x, tl::ptr<float> y, tl::scalar<int32_t> n) {
  tl::tensor pid = tl::program_id(0);
  auto p = tl::make_block_ptr(x + pid * n, {n}, {1}, {0}, {16});
  p = tl::if_(pid % 2 == 1, [&] { return tl::advance(p, {8}); }, [&] { return p; });
  auto [scale, q] = tl::if_(
      pid == 0, [&] { return std::tuple{tl::full({}, 2.0f, tl::f32), tl::advance(p, {4})}; },
      [&] { return std::tuple{tl::full({}, 1.0f, tl::f32), p}; });
  tl::store(tl::make_block_ptr(y + pid * 16, {16}, {1}, {0}, {16}), tl::load(q, {0}) * scale);
}

} // namespace

TEST(BlockPointers, TlIfChoosesThem) {
  const int rows = 3, n = 20;
  const std::vector<float> x = tegula::testing::random_vector<float>(size_t(rows) * n);
  auto k = kernel("chosen_blocks", chosenBlocks, {"x", "y", "n"});
  for (Backend backend : backendsWithTheGpu("block pointers chosen by tl::if_")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<float> y(size_t(rows) * 16, NAN);
    k({.grid = {uint32_t(rows)}, .backend = backend}, x, y, n);
    for (int r = 0; r < rows; ++r) {
      const int start = (r % 2 == 1 ? 8 : 0) + (r == 0 ? 4 : 0);
      const float scale = r == 0 ? 2.0f : 1.0f;
      for (int i = 0; i < 16; ++i) {
        const float want = start + i < n ? x[size_t(r) * n + size_t(start + i)] * scale : 0.0f;
        EXPECT_EQ(y[size_t(r) * 16 + size_t(i)], want) << r << " " << i;
      }
    }
  }
}

namespace {

/// Copies a rows x cols row-major matrix a 16 x 64 block a program.
void tiledCopy(tl::ptr<float> x, tl::ptr<float> y, tl::scalar<int32_t> rows, tl::scalar<int32_t> cols) {
  tl::tensor r0 = tl::program_id(0) * 16, c0 = tl::program_id(1) * 64;
  auto from = tl::make_block_ptr(x, {rows, cols}, {cols, 1}, {r0, c0}, {16, 64});
  auto to = tl::make_block_ptr(y, {rows, cols}, {cols, 1}, {r0, c0}, {16, 64});
  tl::store(to, tl::load(from, {0, 1}), {0, 1});
}

} // namespace

TEST(BlockPointers, RowsOfWholeVectorsAreCopiedInVectors) {
  // 48 columns divide by 16 (the kernel is specialised on it): each
  // thread's 4 floats are inside or outside together.
  std::vector<float> x(size_t(40) * 48), y(x.size());
  auto k = kernel("tiled_copy", tiledCopy);
  const std::string ptx = k.compile({x, y, 40, 48}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_THAT(ptx, AllOf(HasSubstr("ld.global.v4.b32"), HasSubstr("st.global.v4.b32")));
  // 45 do not: the row ends between a thread's elements.
  const std::string ragged = k.compile({x, y, 40, 45}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_THAT(ragged, Not(HasSubstr("ld.global.v4")));
  for (Backend backend : backendsWithTheGpu("a tiled block-pointer copy")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    for (int cols : {48, 45}) {
      std::vector<float> in = tegula::testing::random_vector<float>(size_t(40) * cols);
      std::vector<float> out = tegula::testing::poisoned<float>(in.size());
      k({.grid = {3, uint32_t((cols + 63) / 64)}, .backend = backend}, in, out, 40, cols);
      EXPECT_EQ(out, in) << cols;
    }
  }
}

// ---- mistakes, named at the user's line ----------------------------------

namespace {

void notAPointer(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  auto p = tl::make_block_ptr(n, {n}, {1}, {0}, {32});
  tl::store(x, tl::sum(tl::load(p), 0));
}
void countsDisagree(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  tl::make_block_ptr(x, {n, n}, {1}, {0, 0}, {32, 32});
}
void notAPermutation(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  tl::make_block_ptr(x, {n, n}, {n, 1}, {0, 0}, {32, 32}, {1, 1});
}
void oddBlock(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  tl::make_block_ptr(x, {n}, {1}, {0}, {24});
}
void floatOffset(tl::ptr<float> x, tl::scalar<int32_t> n) {
  FAILS_ON_NEXT_LINE();
  tl::make_block_ptr(x, {n}, {1}, {0.5f}, {32});
}
void checksAMissingDimension(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n, n}, {n, 1}, {0, 0}, {32, 32});
  FAILS_ON_NEXT_LINE();
  tl::store(p, tl::load(p, {0, 2}));
}
void checksTwice(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n}, {1}, {0}, {32});
  FAILS_ON_NEXT_LINE();
  tl::store(p, 1.0f, {0, 0});
}
void nanIntegers(tl::ptr<int32_t> x, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n}, {1}, {0}, {32});
  FAILS_ON_NEXT_LINE();
  tl::store(p, tl::load(p, {0}, tl::padding::nan));
}
void advancedTooFar(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n, n}, {n, 1}, {0, 0}, {32, 32});
  FAILS_ON_NEXT_LINE();
  p = tl::advance(p, {32});
}
void neverMade(tl::ptr<float> x) {
  tl::block_ptr p;
  FAILS_ON_NEXT_LINE();
  tl::store(x, tl::sum(tl::load(p), 0));
}
void carriedUnmade(tl::ptr<float> x, tl::scalar<int32_t> n) {
  tl::block_ptr p;
  FAILS_ON_NEXT_LINE();
  for ([[maybe_unused]] auto i : tl::range(0, n, 1, p))
    p = tl::make_block_ptr(x, {n}, {1}, {0}, {32});
}
void reshapedInTheLoop(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n}, {1}, {0}, {32});
  FAILS_ON_NEXT_LINE();
  for ([[maybe_unused]] auto i : tl::range(0, n, 1, p))
    p = tl::make_block_ptr(x, {n}, {1}, {0}, {64});
}
void storesPointers(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n}, {1}, {0}, {32});
  FAILS_ON_NEXT_LINE();
  tl::store(p, x + tl::arange(0, 32));
}
void branchesDisagree(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n}, {1}, {0}, {32});
  auto q = tl::make_block_ptr(x, {n}, {1}, {0}, {64});
  FAILS_ON_NEXT_LINE();
  auto r = tl::if_(n > 4, [&] { return p; }, [&] { return q; });
  tl::store(r, 0.0f, {0});
}

} // namespace

TEST(BlockPointers, MistakesAreNamedAtTheUsersLine) {
  using tegula::testing::errorOf;
  using tegula::testing::expectAtMarkedLine;
  std::vector<float> f(64);
  std::vector<int32_t> i(64);
  const std::string file = "BlockPointersTest.cpp";
  expectAtMarkedLine(errorOf(kernel("k", notAPointer), {f, 8}), file,
                     "tl::make_block_ptr needs a pointer scalar as its base, got i32");
  expectAtMarkedLine(errorOf(kernel("k", countsDisagree), {f, 8}), file,
                     "a 2-dimensional block needs 2 extents, strides and offsets, got 2, 1 and 2");
  expectAtMarkedLine(errorOf(kernel("k", notAPermutation), {f, 8}), file,
                     "order [1, 1] is not a permutation of the block's 2 dimensions");
  expectAtMarkedLine(errorOf(kernel("k", oddBlock), {f, 8}), file, "tl::make_block_ptr block: tile extents must be positive powers of two, got [24]");
  expectAtMarkedLine(errorOf(kernel("k", floatOffset), {f, 8}), file,
                     "tl::make_block_ptr offset 0 must be an integer, got a floating-point literal");
  expectAtMarkedLine(errorOf(kernel("k", checksAMissingDimension), {f, 8}), file,
                     "tl::load: boundary_check names dimension 2, but the block has 2 (0 to 1)");
  expectAtMarkedLine(errorOf(kernel("k", checksTwice), {f, 8}), file,
                     "tl::store: boundary_check names dimension 0 twice");
  expectAtMarkedLine(errorOf(kernel("k", nanIntegers), {i, 8}), file,
                     "tl::load: padding::nan needs a floating-point block, got i32");
  expectAtMarkedLine(errorOf(kernel("k", advancedTooFar), {f, 8}), file,
                     "tl::advance: a 2-dimensional block pointer moves by 2 offsets, got 1");
  expectAtMarkedLine(errorOf(kernel("k", neverMade), {f}), file,
                     "tl::load on a tl::block_ptr that was never made (use tl::make_block_ptr)");
  expectAtMarkedLine(errorOf(kernel("k", carriedUnmade), {f, 8}), file,
                     "a tl::block_ptr carried by tl::range was never made");
  expectAtMarkedLine(errorOf(kernel("k", reshapedInTheLoop), {f, 8}), file,
                     "a tl::block_ptr carried by tl::range changed its block in the loop body from [32] to [64]");
  expectAtMarkedLine(errorOf(kernel("k", storesPointers), {f, 8}), file,
                     "tl::store to a tl::block_ptr cannot write pointers to memory");
  expectAtMarkedLine(errorOf(kernel("k", branchesDisagree), {f, 8}), file,
                     "tl::if_ branches return block pointers (#0) of different blocks: [32] (order [0]) vs [64] "
                     "(order [0])");
}

namespace {

int g_uncheckedLoadLine = 0, g_uncheckedStoreLine = 0;

/// Copies the 4 x 8 block at (r0, c0) of x (rows x cols, row-major) to y,
/// checking the rows only: the columns must stay inside the tensor.
void rowsChecked(tl::ptr<float> x, tl::ptr<float> y, tl::scalar<int32_t> rows, tl::scalar<int32_t> cols,
                 tl::scalar<int32_t> r0, tl::scalar<int32_t> c0) {
  auto in = tl::make_block_ptr(x, {rows, cols}, {cols, 1}, {r0, c0}, {4, 8});
  auto out = tl::make_block_ptr(y, {rows, cols}, {cols, 1}, {r0, c0}, {4, 8});
  g_uncheckedLoadLine = __LINE__ + 1;
  tl::tensor block = tl::load(in, {0});
  g_uncheckedStoreLine = __LINE__ + 1;
  tl::store(out, block, {0});
}

/// Advances a block past the end of x without reading there: no error.
void advancesPastTheEnd(tl::ptr<float> x, tl::ptr<float> y, tl::scalar<int32_t> n) {
  auto p = tl::make_block_ptr(x, {n}, {1}, {0}, {8});
  tl::tensor sum = tl::zeros({8}, tl::f32);
  for ([[maybe_unused]] auto i : tl::range(0, n, 8, sum, p)) {
    sum = sum + tl::load(p);
    p = tl::advance(p, {8});
  }
  tl::store(y + tl::arange(0, 8), sum);
}

} // namespace

// Triton's rule: along a dimension boundary_check does not name, the block
// stays inside the tensor (compiled code reads the next row's elements
// there). The interpreter checks it on every access, at the user's line and
// naming the element; compiled code does not pay for the check.
TEST(BlockPointers, UncheckedDimensionsOutsideTheTensorAreNamedByTheInterpreter) {
  const int rows = 6, cols = 12;
  const std::vector<float> x = tegula::testing::random_vector<float>(size_t(rows) * cols);
  auto k = kernel("rows_checked", rowsChecked, {"x", "y", "rows", "cols", "r0", "c0"});
  std::vector<float> y(size_t(rows) * cols, 0.0f);
  // Inside along the columns (rows overhang: checked): runs, copies the inside.
  k({.grid = {1}, .backend = Backend::Interp}, x, y, rows, cols, 4, 4);
  for (int r = 4; r < rows; ++r)
    for (int c = 4; c < cols; ++c)
      EXPECT_EQ(y[size_t(r) * cols + size_t(c)], x[size_t(r) * cols + size_t(c)]) << r << ", " << c;
  // Columns 8..15 of 12: the load names dimension 1 and the first element
  // outside (block row 0, column 4), at its line.
  std::string err = tegula::testing::errorOf(k, {x, y, rows, cols, 0, 8});
  EXPECT_THAT(err, HasSubstr(fmt::format("BlockPointersTest.cpp:{}: tl::load through a tl::block_ptr: the block "
                                         "reaches outside the tensor along dimension 1, which boundary_check does "
                                         "not name",
                                         g_uncheckedLoadLine)))
      << err;
  EXPECT_THAT(err, AllOf(HasSubstr("kernel 'rows_checked' stopped: "), HasSubstr("name 1 in boundary_check"),
                         HasSubstr("(pid (0, 0, 0) idx (0, 4))"), Not(HasSubstr("device assertion"))))
      << err;
  // A negative offset is outside too.
  err = tegula::testing::errorOf(k, {x, y, rows, cols, 0, -1});
  EXPECT_THAT(err, AllOf(HasSubstr(fmt::format(":{}: tl::load through", g_uncheckedLoadLine)),
                         HasSubstr("idx (0, 0)")))
      << err;
  // The store is checked as the load is (here only the store is outside:
  // the load's tensor is wider).
  auto wide = kernel("rows_checked", +[](tl::ptr<float> x, tl::ptr<float> y, tl::scalar<int32_t> rows,
                                         tl::scalar<int32_t> cols, tl::scalar<int32_t> r0, tl::scalar<int32_t> c0) {
    auto in = tl::make_block_ptr(x, {rows, cols + 8}, {cols, 1}, {r0, c0}, {4, 8});
    tl::store(tl::make_block_ptr(y, {rows, cols}, {cols, 1}, {r0, c0}, {4, 8}), tl::load(in, {0}), {0});
  }, {"x", "y", "rows", "cols", "r0", "c0"});
  std::vector<float> big(size_t(rows) * cols + 8);
  err = tegula::testing::errorOf(wide, {big, y, rows, cols, 0, 8});
  EXPECT_THAT(err, AllOf(HasSubstr("tl::store through a tl::block_ptr: the block reaches outside the tensor along "
                                   "dimension 1"),
                         HasSubstr("idx (0, 4)")))
      << err;
  // Elements the checked dimension masks off are not accessed: an empty
  // tensor (no rows) with any columns is fine.
  k({.grid = {1}, .backend = Backend::Interp}, x, y, 0, 0, 0, 8);
  // Compiled code has no such check: the simulator's kernel reads the
  // columns past the row's end (the next row's elements, inside x).
  std::vector<float> z(size_t(rows) * cols, 0.0f);
  k({.grid = {1}, .num_warps = 1, .backend = Backend::Sim}, x, z, rows, cols, 0, 8);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(z[size_t(r) * cols + 8 + size_t(j)], x[size_t(r) * cols + 8 + size_t(j)]) << r << ", " << j;
  // Moving past the end without an access there is no error.
  auto adv = kernel("advances", advancesPastTheEnd, {"x", "y", "n"});
  std::vector<float> sums(8, 0.0f);
  const std::vector<float> xs = tegula::testing::random_vector<float>(24);
  adv({.grid = {1}, .backend = Backend::Interp}, xs, sums, 24);
  for (int j = 0; j < 8; ++j)
    EXPECT_FLOAT_EQ(sums[size_t(j)], xs[size_t(j)] + xs[size_t(j) + 8] + xs[size_t(j) + 16]) << j;
}
