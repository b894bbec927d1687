// ClusterTest.cpp - thread-block clusters with TMA multicast
// (LaunchOptions::cluster_size, tl::multicast; docs/hopper.md): the
// clustered persistent GEMMs compute what they compute without clusters, in
// the interpreter, the simulator (sm_90a, warp specialised, 2 and 4 CTAs a
// cluster, every thread order) and on an sm_90a GPU; the interpreter holds
// the programs of a cluster to the promise tl::multicast makes; launches
// that break CUDA's rules for clusters fail on every backend; ptxas
// assembles the benchmark's clustered GEMMs without spills.
#include "ChipTargets.h"
#include "TestUtil.h"
#include "examples/kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

const std::vector<std::string> kGemmParams = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"};

int count(const std::string &text, const std::string &pattern) {
  const std::regex re(pattern);
  return int(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

/// The clustered GEMM in the interpreter gives the same bits at every
/// cluster size (its programs take other tiles, but each tile is computed
/// alike), close to a double reference; M leaves the last row of clusters
/// partly past the end.
TEST(Cluster, TheClusteredGemmComputesTheSameAtEveryClusterSize) {
  auto k = kernel("matmul_persistent_cluster", examples::matmul_persistent_cluster<bfloat16>, kGemmParams);
  const int M = 200, N = 136, K = 96;
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  auto alone = poisoned<bfloat16>(size_t(M * N));
  k({.grid = {8}, .backend = Backend::Interp}, a, b, alone, M, N, K, 32, 64, 32, 2);
  EXPECT_LT(rel_error(alone, matmul_reference(a, b, M, N, K)), tolerance<bfloat16>());
  for (int size : {2, 4}) {
    auto clustered = poisoned<bfloat16>(size_t(M * N));
    k({.grid = {8}, .backend = Backend::Interp, .cluster_size = size}, a, b, clustered, M, N, K, 32, 64, 32, 2);
    EXPECT_EQ(std::memcmp(clustered.data(), alone.data(), alone.size() * sizeof(bfloat16)), 0)
        << "cluster_size " << size;
  }
}

/// tl::cluster_size() is the launch's (1 without clusters, whatever
/// TEGULA_CLUSTER_SIZE says then), in the interpreter, the simulator and
/// the compiled code.
void clusterSizes(tl::ptr<int32_t> out) { tl::store(out + tl::program_id(0), tl::cluster_size()); }

TEST(Cluster, ClusterSizeIsTheLaunchsOnEveryBackend) {
  auto k = kernel("cluster_sizes", clusterSizes, {"out"});
  for (Backend backend : {Backend::Interp, Backend::Sim})
    for (int size : {0, 1, 2, 4}) {
      std::vector<int32_t> out(4, -1);
      k({.grid = {4}, .backend = backend, .cluster_size = size}, out);
      EXPECT_EQ(out, std::vector<int32_t>(4, size ? size : 1)) << "cluster_size " << size;
    }
  ScopedEnv env("TEGULA_CLUSTER_SIZE", "2");
  std::vector<int32_t> out(4, -1);
  k({.grid = {4}, .backend = Backend::Sim}, out);
  EXPECT_EQ(out, std::vector<int32_t>(4, 2));
  k({.grid = {4}, .backend = Backend::Interp, .cluster_size = 1}, out); // asks for no clusters
  EXPECT_EQ(out, std::vector<int32_t>(4, 1));
  std::vector<int32_t> x(16);
  EXPECT_THAT(k.compile({x}, {.chip = "sm_90a"}).ptx, ::testing::Not(HasSubstr("reqnctapercluster")));
}

/// Each program loads its own rows but calls the load multicast: the
/// interpreter reports the broken promise at the load, in the user's file.
void ownRowsMulticast(tl::ptr<float> x, tl::ptr<float> y, tl::constant<int> B) {
  auto in = tl::make_tensor_descriptor(x, {64, 8}, {8, 1}, {B, 8});
  auto out = tl::make_tensor_descriptor(y, {64, 8}, {8, 1}, {B, 8});
  out.store({tl::program_id(0) * B, 0}, in.load({tl::program_id(0) * B, 0}, tl::multicast));
}

TEST(Cluster, ProgramsOfAClusterLoadingDifferentBlocksAreReported) {
  auto k = kernel("own_rows_multicast", ownRowsMulticast, {"x", "y", "B"});
  auto x = random_vector<float>(64 * 8);
  std::vector<float> y(64 * 8);
  k({.grid = {4}, .backend = Backend::Interp}, x, y, 16); // no cluster: no promise to keep
  EXPECT_EQ(y, x);
  try {
    k({.grid = {4}, .backend = Backend::Interp, .cluster_size = 2}, x, y, 16);
    FAIL() << "a multicast load of different blocks went unreported";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("tl::multicast load #1 reads the block at [16, 0], but program 0 (the first "
                                    "of its cluster of 2) read the block at [0, 0]"));
    EXPECT_THAT(e.what(), HasSubstr("ClusterTest.cpp:"));
    EXPECT_THAT(e.what(), HasSubstr("program (1, 0, 0)"));
  }
}

/// The second program of each cluster makes one multicast load fewer.
void unevenLoads(tl::ptr<float> x, tl::ptr<float> y) {
  auto in = tl::make_tensor_descriptor(x, {16, 8}, {8, 1}, {16, 8});
  tl::tensor sum = tl::zeros({16, 8}, tl::f32);
  for (auto i : tl::range(0, 2 - tl::program_id(0) % 2, 1, sum)) {
    (void)i;
    sum = sum + in.load({0, 0}, tl::multicast);
  }
  tl::store(y + tl::program_id(0), tl::sum(tl::sum(sum, 1), 0));
}

TEST(Cluster, ProgramsOfAClusterMakingFewerMulticastLoadsAreReported) {
  auto k = kernel("uneven_loads", unevenLoads, {"x", "y"});
  auto x = random_vector<float>(16 * 8);
  std::vector<float> y(2);
  k({.grid = {2}, .backend = Backend::Interp}, x, y);
  try {
    k({.grid = {2}, .backend = Backend::Interp, .cluster_size = 2}, x, y);
    FAIL() << "a program with fewer multicast loads went unreported";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("program 1 made 1 tl::multicast loads, but the first program of its cluster "
                                    "of 2 made 2"));
  }
}

/// CUDA's rules for a cluster launch hold on every backend.
TEST(Cluster, LaunchesThatNoClusterCanRunAreRefused) {
  auto k = kernel("matmul_persistent_cluster", examples::matmul_persistent_cluster<bfloat16>, kGemmParams);
  auto a = random_vector<bfloat16>(64 * 64), b = a, c = a;
  for (Backend backend : {Backend::Interp, Backend::Sim}) {
    SCOPED_TRACE(backend == Backend::Sim ? "sim" : "interp");
    auto launch = [&](LaunchOptions o) { k(o, a, b, c, 64, 64, 64, 32, 64, 32, 2); };
    EXPECT_THAT([&] { launch({.grid = {3}, .backend = backend, .cluster_size = 2}); },
                ::testing::ThrowsMessage<Error>(HasSubstr("grid.x = 3 is not a multiple of cluster_size 2")));
    EXPECT_THAT([&] { launch({.grid = {3}, .backend = backend, .cluster_size = 3}); },
                ::testing::ThrowsMessage<Error>(HasSubstr("cluster_size 3 is not supported: use 1, 2 or 4")));
    EXPECT_THAT([&] { launch({.grid = {4}, .backend = backend, .ping_pong = true, .cluster_size = 2}); },
                ::testing::ThrowsMessage<Error>(HasSubstr("cluster_size 2 with ping_pong is not supported")));
    {
      ScopedEnv env("TEGULA_CLUSTER_SIZE", "2");
      EXPECT_THAT([&] { launch({.grid = {3}, .backend = backend}); },
                  ::testing::ThrowsMessage<Error>(HasSubstr("grid.x = 3 is not a multiple of cluster_size 2")));
      launch({.grid = {3}, .backend = backend, .cluster_size = 1}); // the launch asks for none
    }
    ScopedEnv env("TEGULA_CLUSTER_SIZE", "two");
    EXPECT_THAT([&] { launch({.grid = {4}, .backend = backend}); },
                ::testing::ThrowsMessage<Error>(HasSubstr("TEGULA_CLUSTER_SIZE=two is not a cluster size")));
  }
  // A kernel without clusters ignores the cluster size: any grid, ping-pong too.
  auto plain = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
                      {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  plain({.grid = {3}, .backend = Backend::Interp, .cluster_size = 2}, a, b, c, 64, 64, 64, 32, 64, 32, 2);
  // compile() refuses what launch() refuses.
  EXPECT_THAT([&] { k.compile({a, b, c, 64, 64, 64, 32, 64, 32, 2}, {.chip = "sm_90a", .ping_pong = true, .cluster_size = 2}); },
              ::testing::ThrowsMessage<Error>(HasSubstr("cluster_size 2 with ping_pong is not supported")));
}

/// The benchmark's clustered GEMMs for sm_90a: the PTX declares the
/// cluster, B's blocks arrive by multicast (A's do not), the rings' four
/// stages and C fit, ptxas finds no spills. Where multicast does not apply
/// (no warp specialisation; no tl::multicast load) nothing is clustered.
TEST(Cluster, TheClusteredGemmsCompileForClustersOfTwo) {
  const CompileOptions o{.chip = "sm_90a", .num_warps = 8, .num_stages = 4, .warp_specialize = true,
                         .cluster_size = 2};
  auto check = [](const char *what, const CompiledKernel &c, int multicastBoxes, int ownBoxes) {
    SCOPED_TRACE(what);
    EXPECT_EQ(c.cluster_size, 2);
    EXPECT_THAT(c.ptx, HasSubstr(".reqnctapercluster 2, 1, 1"));
    EXPECT_EQ(count(c.ptx, "multicast::cluster"), multicastBoxes);
    EXPECT_EQ(count(c.ptx, "mbarrier::complete_tx::bytes \\["), ownBoxes);
    // A consumer warp releases a stage in both CTAs: in the loop, and a
    // tile's last stage after it.
    EXPECT_EQ(count(c.ptx, "mapa\\.shared::cluster"), 4);
    EXPECT_EQ(count(c.ptx, "barrier\\.cluster\\.wait"), 3);
    EXPECT_LE(c.shared_bytes + c.dynamic_shared_bytes, 227 * 1024);
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
    std::printf("[tegula test] %s, clusters of 2: %d registers, %d spill bytes, %d bytes of shared memory\n", what,
                c.registers, c.spill_bytes, c.shared_bytes + c.dynamic_shared_bytes);
  };
  std::vector<bfloat16> h(16);
  auto bf16 = kernel("matmul_persistent_cluster", examples::matmul_persistent_cluster<bfloat16>, kGemmParams);
  // B's 64 x 256 block: four 128-byte column blocks, each half of its rows.
  check("bf16 128x256x64", bf16.compile({h, h, h, 4096, 4096, 4096, 128, 256, 64, 8}, o), 4, 1);
  std::vector<float8_e4m3> q(16);
  std::vector<float> f(16);
  auto fp8 = kernel("matmul_tn_persistent_cluster_fp8", examples::matmul_tn_persistent_cluster<float8_e4m3, float>,
                    kGemmParams);
  check("fp8 128x256x128", fp8.compile({q, q, f, 4096, 4096, 4096, 128, 256, 128, 8}, o), 1, 1);

  CompileOptions plain = o;
  plain.warp_specialize = false;
  CompiledKernel c = bf16.compile({h, h, h, 4096, 4096, 4096, 128, 256, 64, 8}, plain);
  EXPECT_EQ(c.cluster_size, 1);
  EXPECT_THAT(c.ptx, ::testing::Not(HasSubstr("reqnctapercluster")));
  auto unmarked = kernel("matmul_persistent_descriptors", examples::matmul_persistent_descriptors<bfloat16>,
                         {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  c = unmarked.compile({h, h, h, 4096, 4096, 4096, 128, 256, 64, 8}, o);
  EXPECT_EQ(c.cluster_size, 1);
  EXPECT_EQ(count(c.ptx, "multicast::cluster"), 0);
}

/// The clustered GEMM where clusters run: warp specialised sm_90a code in
/// the simulator (CTAs of a cluster simulated together, multicast copies
/// landing in each, releases arriving across them) and on an sm_90a GPU,
/// against the interpreter. Rings that wrap within and across tiles, more
/// clusters than tiles, a last row of clusters partly past M.
class ClusterGemm : public ChipTargetTest {};

TEST_P(ClusterGemm, MatchesTheInterpreter) {
  auto k = kernel("matmul_persistent_cluster", examples::matmul_persistent_cluster<bfloat16>, kGemmParams);
  struct S { int M, N, K, BM, BN, BK, warps, stages, cluster, programs; };
  for (S s : {S{200, 136, 160, 64, 64, 32, 4, 3, 2, 4}, S{260, 128, 96, 64, 64, 32, 4, 2, 4, 4},
              S{100, 64, 96, 64, 64, 32, 4, 4, 2, 6}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} tile {}x{}x{}, {} warps, {} stages, clusters of {}, {} programs", s.M,
                             s.N, s.K, s.BM, s.BN, s.BK, s.warps, s.stages, s.cluster, s.programs));
    auto a = random_vector<bfloat16>(size_t(s.M * s.K)), b = random_vector<bfloat16>(size_t(s.K * s.N));
    auto want = poisoned<bfloat16>(size_t(s.M * s.N)), got = want;
    const Grid g{uint32_t(s.programs)};
    k({.grid = g, .backend = Backend::Interp, .cluster_size = s.cluster}, a, b, want, s.M, s.N, s.K, s.BM, s.BN, s.BK,
      2);
    LaunchOptions o = target(g, s.warps);
    o.num_stages = s.stages;
    o.warp_specialize = true;
    o.cluster_size = s.cluster;
    k(o, a, b, got, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2);
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>());
    std::vector<bfloat16> x(16);
    EXPECT_EQ(k.compile({x, x, x, s.M, s.N, s.K, s.BM, s.BN, s.BK, 2},
                        {.chip = "sm_90a", .num_warps = s.warps, .num_stages = s.stages, .warp_specialize = true,
                         .cluster_size = s.cluster})
                  .cluster_size,
              s.cluster);
  }
}

/// The grid a persistent clustered GEMM should take on this GPU: the driver
/// counts whole clusters that fit at once (printed: the benchmarks' grid).
/// At most one program an SM at over 200 KiB of shared memory each; whole
/// clusters; a clustered launch of exactly that many runs.
TEST_P(ClusterGemm, MaxResidentProgramsAreWholeClustersThatFitAtOnce) {
  if (GetParam().backend != Backend::GPU)
    GTEST_SKIP() << "asks the CUDA driver: the GPU instantiation's";
  auto k = kernel("matmul_persistent_cluster", examples::matmul_persistent_cluster<bfloat16>, kGemmParams);
  const int M = 1024, N = 1024, K = 256, sms = device_info().multiprocessors;
  auto a = random_vector<bfloat16>(size_t(M * K)), b = random_vector<bfloat16>(size_t(K * N));
  auto want = poisoned<bfloat16>(size_t(M * N)), got = want;
  for (int cluster : {1, 2, 4}) {
    LaunchOptions o = target({1}, 8);
    o.num_stages = 4;
    o.warp_specialize = true;
    o.cluster_size = cluster;
    const int resident = k.max_resident_programs(o, a, b, got, M, N, K, 128, 256, 64, 8);
    std::printf("[clusters] %s, clusters of %d: %d programs resident at once (%d SMs)\n",
                device_info().name.c_str(), cluster, resident, sms);
    EXPECT_GT(resident, 0);
    EXPECT_LE(resident, sms);
    EXPECT_EQ(resident % cluster, 0);
    o.grid = {uint32_t(resident)};
    k({.grid = o.grid, .backend = Backend::Interp, .cluster_size = cluster}, a, b, want, M, N, K, 128, 256, 64, 8);
    k(o, a, b, got, M, N, K, 128, 256, 64, 8);
    EXPECT_LT(rel_error(got, to_double(want)), tolerance<bfloat16>()) << "clusters of " << cluster;
  }
}

// Clusters and multicast are sm_90a code.
INSTANTIATE_TEST_SUITE_P(Sim, ClusterGemm, ::testing::Values(ChipTarget{Backend::Sim, "sm_90a"}), chipTargetName);
INSTANTIATE_TEST_SUITE_P(Gpu, ClusterGemm, ::testing::Values(ChipTarget{Backend::GPU, "sm_90a"}), chipTargetName);

} // namespace
