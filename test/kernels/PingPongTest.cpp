// PingPongTest.cpp - ping-pong kernels (sm_90a, num_warps 4): each CTA runs
// two programs, each on its own consumer warpgroup, with a producer
// warpgroup whose warps 0 and 1 fill one program's ring stages each. The
// persistent GEMM, the tile-grid GEMMs (grids with an odd number of
// programs: the last CTA's second program is past the end) and flash
// attention against the interpreter, in the simulator as sm_80 code (where
// the option changes nothing) and sm_90a code, and on a GPU when present;
// where it applies, and what ptxas makes of it.
#include "TestUtil.h"
#include "examples/kernels.h"
#include "kernels/ChipTargets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <optional>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

using PingPong = ChipTargetTest;

LaunchOptions pingPong(LaunchOptions o, int stages = 3) {
  o.num_stages = stages;
  o.ping_pong = true;
  return o;
}

/// The persistent GEMM: each program walks its tiles (pid, pid + programs,
/// ...), so the two programs of a CTA run different tiles and numbers of
/// tiles; more programs than tiles leaves some with none.
TEST_P(PingPong, PersistentMatmulMatchesTheInterpreter) {
  auto k = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  struct S { int M, N, K, BM, BN, BK, stages, programs; };
  for (S s : {S{200, 136, 160, 64, 64, 32, 3, 3}, S{260, 264, 192, 128, 128, 64, 4, 4},
              S{100, 64, 96, 64, 64, 32, 2, 5}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}, {} stages, {} programs", s.M, s.N, s.K, s.BM, s.BN,
                             s.BK, s.stages, s.programs));
    auto a = random_vector<bfloat16>(size_t(s.M * s.K)), b = random_vector<bfloat16>(size_t(s.K * s.N));
    auto want = poisoned<bfloat16>(size_t(s.M * s.N)), got = want;
    const Grid g{uint32_t(s.programs)};
    k({.grid = g, .backend = Backend::Interp}, a, b, want, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2);
    k(pingPong(target(g), s.stages), a, b, got, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2);
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
  }
}

/// One tile per program on a grid whose x extent is odd; B as stored
/// ([K, N]) and K-major (matmul_tn, f32 out).
TEST_P(PingPong, TileGridMatmulsMatchTheInterpreter) {
  auto k = kernel("matmul_descriptors", examples::matmul_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  const int M = 300, N = 136, K = 200;
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  const Grid g{uint32_t(cdiv(M, 64)), uint32_t(cdiv(N, 64))};
  auto want = poisoned<bfloat16>(size_t(M * N)), got = want;
  k({.grid = g, .backend = Backend::Interp}, a, b, want, M, N, K, K, N, N, 64, 64, 32);
  k(pingPong(target(g)), a, b, got, M, N, K, K, N, N, 64, 64, 32);
  EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());

  auto tn = kernel("matmul_tn", examples::matmul_tn<bfloat16>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  const int Mt = 190, Nt = 72, Kt = 136; // b is [N, K]
  auto bt = random_vector<bfloat16>(size_t(Nt * Kt));
  const Grid gt{uint32_t(cdiv(Mt, 64)), uint32_t(cdiv(Nt, 64))};
  auto wantTn = poisoned<float>(size_t(Mt * Nt)), gotTn = wantTn;
  tn({.grid = gt, .backend = Backend::Interp}, a, bt, wantTn, Mt, Nt, Kt, 64, 64, 32);
  tn(pingPong(target(gt), 4), a, bt, gotTn, Mt, Nt, Kt, 64, 64, 32);
  EXPECT_LT(rel_error(gotTn, to_double(wantTn)), 1e-5);
}

/// Flash attention: the two programs of a CTA take consecutive query blocks
/// (FlashAttention-3's two consumer warpgroups), each with its own K and V
/// stages; an odd number of query blocks, causal and not.
TEST_P(PingPong, AttentionMatchesThePointerKernel) {
  auto ref = kernel("attention_fwd", examples::attention_fwd<bfloat16>,
                    {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
  auto k = kernel("attention_fwd_descriptors", examples::attention_fwd_descriptors<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
  const int heads = 2, seq = 300;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(fmt::format("T={} causal={}", seq, causal));
    const size_t n = size_t(heads * seq * 64);
    auto q = random_vector<bfloat16>(n), kk = random_vector<bfloat16>(n), v = random_vector<bfloat16>(n);
    auto want = poisoned<bfloat16>(n), got = want;
    const Grid g{uint32_t(cdiv(seq, 64)), uint32_t(heads)};
    ref({.grid = g, .backend = Backend::Interp}, q, kk, v, want, seq, 0.125f, 64, 64, 64, causal);
    k(pingPong(target(g)), q, kk, v, got, seq, heads * seq, 0.125f, 64, 64, 64, causal);
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
  }
  // Two dots with the softmax between: the programs take turns burst by
  // burst of wgmma issues (warpgroup-turns: three bursts, each ended by the
  // warpgroup's arrival and named barrier), not loop by loop (a turn would
  // hold the tensor cores through the softmax) with TEGULA_WARPGROUP_TURNS=1;
  // by default they interleave freely.
  std::vector<bfloat16> x(2 * 128 * 64);
  const std::vector<Arg> args = {x, x, x, x, 128, 256, 0.125f, 64, 64, 64, true};
  const CompileOptions o{.chip = "sm_90a", .num_warps = 4, .ping_pong = true, .assemble = false};
  std::optional<ScopedEnv> on(std::in_place, "TEGULA_WARPGROUP_TURNS", "1");
  CompiledKernel c = k.compile(args, o);
  EXPECT_EQ(c.programs_per_cta, 2);
  auto count = [](const std::string &ptx, std::string_view what) {
    size_t n = 0;
    for (size_t at = ptx.find(what); at != std::string::npos; at = ptx.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count(c.ptx, "tegula_turn:"), 3u);
  EXPECT_EQ(count(c.ptx, "];\nbar.sync %r"), 3u) << "each turn ends with an arrival and the warpgroup's barrier";
  on.reset();
  EXPECT_EQ(count(k.compile(args, o).ptx, "tegula_turn:"), 0u);
}

TEGULA_INSTANTIATE_CHIP_TARGETS(PingPong);

void matmul_descriptors_checked(tl::ptr<bfloat16> a, tl::ptr<bfloat16> b, tl::ptr<bfloat16> c,
                                tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                                tl::scalar<int32_t> lda, tl::scalar<int32_t> ldb, tl::scalar<int32_t> ldc,
                                tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK,
                                tl::scalar<int32_t> bad) {
  tl::device_assert(tl::program_id(0) != bad, "not the bad program");
  examples::matmul_descriptors<bfloat16>(a, b, c, M, N, K, lda, ldb, ldc, BM, BN, BK);
}

/// A kernel that stops names its program, as the kernel's code sees it: in
/// a ping-pong kernel 2 x CTA + the consumer warpgroup's slot, not the CTA.
/// The simulator as sm_90a (on a GPU the trap ends the context:
/// GpuDeathTest covers the report there).
TEST(PingPongSim, AStopNamesItsProgram) {
  auto k = kernel("matmul_descriptors_checked", matmul_descriptors_checked,
                  {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK", "bad"});
  const int M = 256, N = 64, K = 64; // four programs of 64 rows
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  std::vector<bfloat16> c(size_t(M * N));
  EXPECT_EQ(k.compile({a, b, c, M, N, K, K, N, N, 64, 64, 32, 0},
                      {.chip = "sm_90a", .num_warps = 4, .ping_pong = true, .assemble = false})
                .programs_per_cta,
            2);
  for (bool pp : {false, true})
    for (int bad : {2, 3}) {
      SCOPED_TRACE(fmt::format("ping-pong {}, program {} stops", pp, bad));
      const LaunchOptions o{.grid = {4}, .num_warps = 4, .backend = Backend::Sim, .ping_pong = pp, .chip = "sm_90a"};
      EXPECT_THAT(error_of([&] { k(o, a, b, c, M, N, K, K, N, N, 64, 64, 32, bad); }),
                  HasSubstr(fmt::format("device assertion failed: not the bad program (pid ({}, 0, 0))", bad)));
    }
}

/// Where it applies: sm_90a, TMA rings, 4 warps (one warpgroup per program);
/// at 8 warps the kernel is warp specialised with one program per CTA, on
/// sm_80 nothing changes. The configurations benchmarks/gemm ships: ptxas
/// gives the kernel its share of registers at 384 threads (168; the
/// consumers raise theirs to 232), no spills, and each program's stages and
/// C block fit in an H100's 227 KiB of shared memory.
TEST(PingPongCompile, AppliesToOneWarpgroupProgramsOnHopper) {
  auto k = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  std::vector<bfloat16> x(256 * 256);
  auto compile = [&](const char *chip, int BN, int BK, int warps, int stages) {
    return k.compile({x, x, x, 256, 256, 256, 128, BN, BK, 8},
                     {.chip = chip, .num_warps = warps, .num_stages = stages, .ping_pong = true});
  };
  constexpr int kHopperSharedBytes = 227 * 1024;
  for (auto [BK, stages] : {std::pair{64, 4}, std::pair{32, 6}}) {
    CompiledKernel c = compile("sm_90a", 128, BK, 4, stages);
    EXPECT_EQ(c.programs_per_cta, 2);
    EXPECT_EQ(c.producer_warps, 4);
    EXPECT_NE(c.ptx.find(".maxntid 384, 1, 1"), std::string::npos);
    EXPECT_NE(c.ptx.find("setmaxnreg.inc.sync.aligned.u32 232"), std::string::npos);
    EXPECT_NE(c.ptx.find("tegula_turn:"), std::string::npos) << "the programs' loops take no turns";
    EXPECT_LE(c.dynamic_shared_bytes, kHopperSharedBytes);
    if (!c.cubin.empty()) {
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
      EXPECT_EQ(c.registers, 168);
      EXPECT_THAT(c.ptxas_log, Not(HasSubstr("(C75"))) << "ptxas repaired the wgmma fences";
    }
    std::printf("[tegula test] ping-pong persistent 128x128x%d, 2 x 4 + 4 warps, %d stages: %d registers, %d spill "
                "bytes, %d bytes of shared memory\n",
                BK, stages, c.registers, c.spill_bytes, c.dynamic_shared_bytes);
  }
  CompiledKernel eight = compile("sm_90a", 256, 64, 8, 3);
  EXPECT_EQ(eight.programs_per_cta, 1);
  EXPECT_EQ(eight.producer_warps, 4);
  CompiledKernel ampere = compile("sm_80", 128, 64, 4, 3);
  EXPECT_EQ(ampere.programs_per_cta, 1);
  EXPECT_EQ(ampere.producer_warps, 0);
}

/// The TN kernels' ping-pong tiles in benchmarks/gemm (K steps of 128
/// bytes; 128x64 at 4 stages, 128x128 at 2): fp8, int8 and tf32 on wgmma,
/// within an H100's shared memory, no spills.
TEST(PingPongCompile, TnBenchmarkTilesFit) {
  auto check = [](const char *what, int BN, int stages, const CompiledKernel &c) {
    EXPECT_EQ(c.programs_per_cta, 2) << what;
    EXPECT_LE(c.dynamic_shared_bytes, 227 * 1024) << what;
    if (!c.cubin.empty()) {
      EXPECT_EQ(c.spill_bytes, 0) << what << ": " << c.ptxas_log;
      EXPECT_THAT(c.ptxas_log, Not(HasSubstr("(C75"))) << what << ": ptxas repaired the wgmma fences";
    }
    std::printf("[tegula test] ping-pong %s TN 128x%d, 2 x 4 + 4 warps, %d stages: %d registers, %d spill bytes, "
                "%d bytes of shared memory\n",
                what, BN, stages, c.registers, c.spill_bytes, c.dynamic_shared_bytes);
  };
  const std::vector<std::string> names = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"};
  std::vector<float> c(256 * 256), f(256 * 256);
  std::vector<float8_e4m3> q(256 * 256);
  std::vector<int8_t> i8(256 * 256);
  std::vector<int32_t> ci(256 * 256);
  auto fp8 = kernel("matmul_tn_fp8", examples::matmul_tn<float8_e4m3, float>, names);
  auto int8 = kernel("matmul_tn_i8", examples::matmul_tn<int8_t, int32_t>, names);
  auto tf32 = kernel("matmul_tn_tf32", examples::matmul_tn<float, float, tl::precision::tf32>, names);
  for (auto [BN, stages] : {std::pair{64, 4}, std::pair{128, 2}}) {
    const CompileOptions opts{.chip = "sm_90a", .num_warps = 4, .num_stages = stages, .ping_pong = true};
    check("fp8", BN, stages, fp8.compile({q, q, c, 256, 256, 256, 128, BN, 128}, opts));
    check("i8", BN, stages, int8.compile({i8, i8, ci, 256, 256, 256, 128, BN, 128}, opts));
    check("tf32", BN, stages, tf32.compile({f, f, c, 256, 256, 256, 128, BN, 32}, opts));
  }
}

} // namespace
