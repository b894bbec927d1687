// StreamKTest.cpp - stream-K GEMMs (examples/stream_k.h): every program
// count splits the tiles' K steps differently, yet each C is the product (a
// double reference), the arrival counters end at zero for the next launch,
// and a launch repeated gives the same bits; the compiled code (sm_80
// pointer rings, sm_90a TMA rings and wgmma, warp specialised or not)
// computes what the interpreter does in the simulator and on a GPU; ptxas
// assembles the benchmark's configuration without spills.
#include "ChipTargets.h"
#include "TestUtil.h"
#include "examples/stream_k.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

const std::vector<std::string> kParams = {"a",  "b",  "c",  "partials", "arrivals", "M",
                                          "N",  "K",  "BM", "BN",       "BK",       "GROUP_M"};

struct Workspace {
  std::vector<float> partials;
  std::vector<int32_t> arrivals;
  Workspace(int programs, int tiles, int BM, int BN)
      : partials(size_t(examples::streamKPartialFloats(programs, BM, BN)), std::nanf("")), arrivals(size_t(tiles)) {}
};

/// Program counts that split the 5 x 3 tiles' 4 K steps (60 units) evenly,
/// unevenly, in runs shorter than a tile, one a program (60) and more
/// programs than units (64, the last ones idle); 1, 2 and 7 programs run 14,
/// 12 and 7 tiles data-parallel first.
TEST(StreamK, EveryProgramCountComputesTheProduct) {
  auto k = kernel("matmul_stream_k", examples::matmul_stream_k<bfloat16>, kParams);
  const int M = 150, N = 88, K = 120, BM = 32, BN = 32, BK = 32; // 5 x 3 tiles, 4 steps (the last short)
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  const std::vector<double> want = matmul_reference(a, b, M, N, K);
  for (int programs : {1, 2, 7, 15, 16, 60, 64}) {
    SCOPED_TRACE(fmt::format("{} programs", programs));
    Workspace w(programs, 15, BM, BN);
    auto c = poisoned<bfloat16>(size_t(M * N));
    k({.grid = {uint32_t(programs)}, .backend = Backend::Interp}, a, b, c, w.partials, w.arrivals, M, N, K, BM, BN,
      BK, 2);
    EXPECT_LT(rel_error(c, want), tolerance<bfloat16>());
    EXPECT_EQ(w.arrivals, std::vector<int32_t>(15, 0));
    auto again = poisoned<bfloat16>(size_t(M * N));
    k({.grid = {uint32_t(programs)}, .backend = Backend::Interp}, a, b, again, w.partials, w.arrivals, M, N, K, BM,
      BN, BK, 2);
    EXPECT_EQ(std::memcmp(c.data(), again.data(), c.size() * sizeof(bfloat16)), 0) << "a second launch differs";
  }
}

/// The compiled stream-K GEMM against the interpreter, with the same
/// program count: odd shapes, runs that start and end inside tiles, tiles
/// finished by two and by three programs, idle programs.
class StreamKGemm : public ChipTargetTest {};

TEST_P(StreamKGemm, MatchesTheInterpreter) {
  auto k = kernel("matmul_stream_k", examples::matmul_stream_k<bfloat16>, kParams);
  struct S { int M, N, K, BM, BN, BK, warps, stages, programs; bool ws; };
  // The last: 8 tiles on 3 programs - a data-parallel wave, then stream-K.
  std::vector<S> shapes = {S{150, 88, 160, 64, 64, 32, 4, 3, 5, false}, S{130, 72, 256, 64, 64, 32, 4, 2, 7, false},
                           S{64, 64, 96, 64, 64, 32, 4, 2, 5, false}, S{256, 128, 96, 64, 64, 32, 4, 3, 3, false}};
  if (GetParam().chip == "sm_90a")
    for (S s : std::vector<S>(shapes))
      shapes.push_back(S{s.M, s.N, s.K, s.BM, s.BN, s.BK, s.warps, s.stages, s.programs, true});
  for (const S &s : shapes) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}, {} warps, {} stages, {} programs{}", s.M, s.N, s.K, s.BM,
                             s.BN, s.BK, s.warps, s.stages, s.programs, s.ws ? ", warp specialised" : ""));
    const int tiles = ((s.M + s.BM - 1) / s.BM) * ((s.N + s.BN - 1) / s.BN);
    auto a = random_vector<bfloat16>(size_t(s.M * s.K)), b = random_vector<bfloat16>(size_t(s.K * s.N));
    auto want = poisoned<bfloat16>(size_t(s.M * s.N)), got = want;
    const Grid g{uint32_t(s.programs)};
    Workspace wi(s.programs, tiles, s.BM, s.BN), wc(s.programs, tiles, s.BM, s.BN);
    k({.grid = g, .backend = Backend::Interp}, a, b, want, wi.partials, wi.arrivals, s.M, s.N, s.K, s.BM, s.BN, s.BK,
      2);
    LaunchOptions o = target(g, s.warps);
    o.num_stages = s.stages;
    o.warp_specialize = s.ws;
    k(o, a, b, got, wc.partials, wc.arrivals, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2);
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
    EXPECT_LT(rel_error(got, matmul_reference(a, b, s.M, s.N, s.K)), tolerance<bfloat16>());
    EXPECT_EQ(wc.arrivals, std::vector<int32_t>(size_t(tiles), 0));
    if (s.ws) { // the K loops' runs differ from tile to tile, and still get a producer
      std::vector<bfloat16> h(16);
      std::vector<float> f(16);
      std::vector<int32_t> i(16);
      EXPECT_EQ(k.compile({h, h, h, f, i, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2},
                          {.chip = "sm_90a", .num_warps = s.warps, .num_stages = s.stages, .warp_specialize = true})
                    .producer_warps,
                4);
    }
  }
}

TEGULA_INSTANTIATE_CHIP_TARGETS(StreamKGemm);

/// The benchmark's stream-K configuration for sm_90a: ptxas assembles it
/// without spills; the arrival is one atomic, behind a barrier that orders
/// the program's partial-block stores before it.
TEST(StreamK, TheBenchmarkConfigurationCompilesWithoutSpills) {
  auto k = kernel("matmul_stream_k", examples::matmul_stream_k<bfloat16>, kParams);
  std::vector<bfloat16> h(16);
  std::vector<float> f(16);
  std::vector<int32_t> i(16);
  for (bool ws : {false, true}) {
    SCOPED_TRACE(ws ? "warp specialised" : "one warpgroup");
    CompiledKernel c = k.compile({h, h, h, f, i, 4096, 4096, 4096, 128, 256, 64, 8},
                                 {.chip = "sm_90a", .num_warps = 8, .num_stages = 4, .warp_specialize = ws});
    EXPECT_THAT(c.ptx, HasSubstr("atom.acq_rel.gpu.global.add.u32"));
    EXPECT_LE(c.shared_bytes + c.dynamic_shared_bytes, 227 * 1024);
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
    std::printf("[tegula test] stream-K bf16 128x256x64, 8 warps, 4 stages%s: %d registers, %d spill bytes, %d "
                "bytes of shared memory\n",
                ws ? ", warp specialised" : "", c.registers, c.spill_bytes, c.shared_bytes + c.dynamic_shared_bytes);
  }
  // fp8 TN (e4m3, f32 C), as gemm-fp8 runs it.
  auto fp8 = kernel("matmul_tn_stream_k", examples::matmul_tn_stream_k<float8_e4m3>, kParams);
  std::vector<float8_e4m3> q(16);
  CompiledKernel c = fp8.compile({q, q, f, f, i, 4096, 4096, 4096, 128, 256, 128, 8},
                                 {.chip = "sm_90a", .num_warps = 8, .num_stages = 4, .warp_specialize = true});
  EXPECT_EQ(c.producer_warps, 4);
  EXPECT_LE(c.shared_bytes + c.dynamic_shared_bytes, 227 * 1024);
  if (!c.cubin.empty())
    EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
  std::printf("[tegula test] stream-K fp8 TN 128x256x128, 8 + 4 warps, 4 stages: %d registers, %d spill bytes, %d "
              "bytes of shared memory\n",
              c.registers, c.spill_bytes, c.shared_bytes + c.dynamic_shared_bytes);
}

/// The fp8 TN stream-K GEMM against the interpreter (sm_90a: wgmma k32 fed by
/// TMA rings, warp specialised), 7 programs over 3 x 2 tiles' 4 K steps.
TEST(StreamK, TheFp8TnGemmMatchesTheInterpreterInTheSimulator) {
  auto k = kernel("matmul_tn_stream_k", examples::matmul_tn_stream_k<float8_e4m3>, kParams);
  const int M = 150, N = 128, K = 512, BM = 64, BN = 64, BK = 128, programs = 7;
  std::vector<float8_e4m3> a(size_t(M * K)), b(size_t(N * K));
  for (auto *v : {&a, &b})
    for (float8_e4m3 &x : *v)
      x = float8_e4m3(random_vector<float>(1, -2, 2)[0]);
  auto want = poisoned<float>(size_t(M * N)), got = want;
  Workspace wi(programs, 6, BM, BN), ws(programs, 6, BM, BN);
  k({.grid = {uint32_t(programs)}, .backend = Backend::Interp}, a, b, want, wi.partials, wi.arrivals, M, N, K, BM,
    BN, BK, 2);
  k({.grid = {uint32_t(programs)}, .num_warps = 4, .num_stages = 3, .backend = Backend::Sim,
     .warp_specialize = true, .chip = "sm_90a"},
    a, b, got, ws.partials, ws.arrivals, M, N, K, BM, BN, BK, 2);
  EXPECT_LT(rel_error(got, to_double(want)), 1e-6);
  EXPECT_EQ(ws.arrivals, std::vector<int32_t>(6, 0));
}

} // namespace
