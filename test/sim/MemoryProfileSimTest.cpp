// MemoryProfileSimTest.cpp - the simulator's memory profile on compiled
// kernels: what each access site moves, priced as the warp-wide requests
// the GPU serves (MemoryProfile.h). Coalesced loads and stores need every
// sector they move, a column gather one sector an element; a transpose
// exchanges only its data, in vectors, and stores coalesced; a GEMM's
// swizzled rings, filled by cp.async and read by ldmatrix, take no more
// wavefronts than their bytes need (no bank conflicts).
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "compiler/Pipeline.h"
#include "examples/kernels.h"
#include "simulator/Simulator.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cstdio>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

/// `k` compiled for `options` and run in the simulator with the profile on;
/// its table is printed.
sim::RunStats profile(const Kernel &k, const std::vector<std::string> &names, const std::vector<Arg> &args,
                      Grid grid, const GpuPipelineOptions &options) {
  LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(k.ir(args, "tile", true), &ctx);
  EXPECT_TRUE(module && mlir::succeeded(runGpuPipeline(*module, options)));
  auto simulated = sim::SimKernel::prepare(module->getOperation(), k.name(), options.chip);
  sim::RunStats stats = simulated->run(grid, k.params(), names, args, {.profileMemory = true});
  std::fputs(simulated->memoryProfile(stats).c_str(), stdout);
  return stats;
}

struct Totals {
  uint64_t requests = 0, transactions = 0, ideal = 0;
};
Totals totals(const sim::RunStats &stats, sim::Space space, sim::AccessKind kind) {
  Totals t;
  for (const sim::SiteTraffic &s : stats.traffic)
    if (s.space == space && s.kind == kind)
      t.requests += s.requests, t.transactions += s.transactions, t.ideal += s.ideal;
  return t;
}

void column(tl::ptr<float> x, tl::ptr<float> y) {
  tl::tensor i = tl::arange(0, 128);
  tl::store(y + i, tl::load(x + i * 32));
}

} // namespace

TEST(MemoryProfileSim, CoalescedAccessesNeedEverySectorTheyMove) {
  const int n = 4096;
  auto x = random_vector<float>(n), y = random_vector<float>(n), out = poisoned<float>(n);
  Kernel k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  auto stats = profile(k, {"x", "y", "out", "n", "BLOCK"}, {x, y, out, n, 1024}, {4}, {.numWarps = 4});
  const Totals reads = totals(stats, sim::Space::Global, sim::AccessKind::Read),
               writes = totals(stats, sim::Space::Global, sim::AccessKind::Write);
  // 16-byte vectors: 32 lanes x 16 bytes = 16 sectors a request.
  EXPECT_EQ(reads.transactions, uint64_t(2 * n * 4 / 32));
  EXPECT_EQ(reads.ideal, reads.transactions);
  EXPECT_EQ(writes.transactions, uint64_t(n * 4 / 32));
  EXPECT_EQ(writes.ideal, writes.transactions);
  EXPECT_EQ(reads.requests, uint64_t(2 * n * 4 / 512));
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out[size_t(i)], x[size_t(i)] + y[size_t(i)]);
}

TEST(MemoryProfileSim, AColumnGatherMovesASectorAnElement) {
  auto x = random_vector<float>(128 * 32), y = poisoned<float>(128);
  Kernel k = kernel("column", column, {"x", "y"});
  auto stats = profile(k, {"x", "y"}, {x, y}, {1}, {.numWarps = 4});
  const Totals reads = totals(stats, sim::Space::Global, sim::AccessKind::Read);
  EXPECT_EQ(reads.transactions, 128u);   // one 32-byte sector for each 4-byte element
  EXPECT_EQ(reads.ideal, 128u * 4 / 32); // what 128 packed floats need
  EXPECT_EQ(y[5], x[5 * 32]);
}

/// examples::transpose stores `v.trans()` under `mask.trans()`: the mask is
/// rebuilt transposed (tile.trans of broadcast ranges, canonicalised), so
/// only the data crosses shared memory, and the stores are 16-byte vectors.
/// The exchange reads 16-byte rows without conflicts; its writers hold
/// column elements, so their 4-byte stores go 4 to a bank at best (a
/// chunk's 4 words stay together for the vector reads: 8 banks for a
/// column) - 640 wavefronts where the scalar exchange took 2560, and the
/// mask's 2176 more.
TEST(MemoryProfileSim, ATransposeExchangesOnlyItsDataAndStoresVectors) {
  const int M = 64, N = 64;
  auto x = random_vector<float>(M * N), out = poisoned<float>(M * N);
  Kernel k = kernel("transpose", examples::transpose<float>, {"x", "out", "M", "N", "BM", "BN"});
  auto stats = profile(k, {"x", "out", "M", "N", "BM", "BN"}, {x, out, M, N, 64, 64}, {1, 1}, {.numWarps = 4});
  for (sim::AccessKind kind : {sim::AccessKind::Read, sim::AccessKind::Write}) {
    const Totals global = totals(stats, sim::Space::Global, kind);
    EXPECT_EQ(global.transactions, global.ideal);
    EXPECT_EQ(global.requests, uint64_t(M * N * 4 / 512)); // 16-byte accesses
  }
  const Totals reads = totals(stats, sim::Space::Shared, sim::AccessKind::Read),
               writes = totals(stats, sim::Space::Shared, sim::AccessKind::Write);
  EXPECT_EQ(reads.transactions, reads.ideal);
  EXPECT_EQ(reads.ideal, uint64_t(M * N * 4 / 128));
  EXPECT_EQ(writes.ideal, uint64_t(M * N * 4 / 128)); // the data alone: no mask
  EXPECT_EQ(writes.transactions, 4 * writes.ideal);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      ASSERT_EQ(out[size_t(j * M + i)], x[size_t(i * N + j)]);
}

TEST(MemoryProfileSim, AGemmsSwizzledRingsHaveNoBankConflicts) {
  const int M = 128, N = 128, K = 128;
  auto a = random_vector<float16>(size_t(M * K)), b = random_vector<float16>(size_t(K * N));
  auto c = poisoned<float16>(size_t(M * N));
  Kernel k = kernel("matmul", examples::matmul<float16>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    auto stats = profile(k, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"}, {a, b, c, M, N, K, 64, 64, 32},
                         {2, 2}, {.numWarps = 4, .numStages = 3, .chip = chip});
    for (sim::AccessKind kind : {sim::AccessKind::Read, sim::AccessKind::Write}) {
      const Totals shared = totals(stats, sim::Space::Shared, kind);
      EXPECT_EQ(shared.transactions, shared.ideal) << (kind == sim::AccessKind::Read ? "reads" : "writes");
    }
    const Totals global = totals(stats, sim::Space::Global, sim::AccessKind::Read);
    EXPECT_EQ(global.transactions, global.ideal);
  }
}
