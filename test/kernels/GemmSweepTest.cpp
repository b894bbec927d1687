// GemmSweepTest.cpp - randomly drawn GEMM configurations, compiled and run in
// the simulator against the interpreter: kernel (pointer loads in four
// storage orders; examples::matmul_descriptors - TMA rings on sm_90a -
// plain or warp specialised; the persistent kernels, with pointers or
// descriptors), operand type (bf16, f16, tf32, i8), chip (sm_80 mma.sync,
// sm_90a wgmma where it fits), tile (BM, BN, BK), warps (1-8), stages (1-4)
// and a ragged problem size - the combinations no hand-written test lists. The seed is fixed (the
// same draws every run) and each draw prints itself, so a failure is
// reproducible from the log; TEGULA_GEMM_SWEEP_SEED and _COUNT draw others.
// With a driver the same kinds of draws (another seed) run on the GPU too
// (TEGULA_GEMM_SWEEP_GPU_SEED, _COUNT).
#include "Sweep.h"
#include "TestKernels.h"
#include "TestUtil.h"
#include "examples/kernels.h"
#include "tegula/tegula.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

using namespace tegula;
using namespace tegula::testing;

namespace {

enum class Operands { BF16, F16, TF32, I8 };
const char *nameOf(Operands o) {
  switch (o) {
  case Operands::BF16: return "bf16";
  case Operands::F16: return "f16";
  case Operands::TF32: return "tf32";
  case Operands::I8: return "i8";
  }
  return "?";
}
const char *nameOf(Storage s) {
  return s == Storage::NN ? "NN" : s == Storage::NT ? "NT" : s == Storage::TT ? "TT" : "TN";
}

enum class Kind { Pointers, Descriptors, Persistent, PersistentDescriptors };
const char *nameOf(Kind k) {
  switch (k) {
  case Kind::Pointers: return "pointers";
  case Kind::Descriptors: return "descriptors";
  case Kind::Persistent: return "persistent";
  case Kind::PersistentDescriptors: return "persistent descriptors";
  }
  return "?";
}

struct Draw {
  Kind kind = Kind::Pointers;
  bool warpSpecialize = false;
  bool pingPong = false; // with warpSpecialize at 4 warps: two programs per CTA
  int programs = 0; // persistent kernels: programs launched
  int cluster = 1;  // warp-specialised persistent descriptors: thread-block clusters multicasting B
  Operands operands;
  Storage storage;
  std::string chip;
  int bm, bn, bk, warps, stages, M, N, K;
  std::string describe() const {
    return fmt::format("{}{}{}{} {} {} {} tile {}x{}x{} warps {} stages {} M={} N={} K={}", nameOf(kind),
                       pingPong ? " pp" : warpSpecialize ? " ws" : "", cluster > 1 ? fmt::format(" c{}", cluster) : "",
                       programs ? fmt::format(" ({} programs)", programs) : "",
                       nameOf(operands), kind == Kind::Pointers ? nameOf(storage) : "NN", chip, bm, bn, bk,
                       warps, stages, M, N, K);
  }
};

/// Roughly what a draw's kernel keeps in shared memory: the operand rings
/// (one set for both programs of a ping-pong CTA, which take turns on it)
/// and, for the descriptor GEMMs, the staged C block (each program's own).
int sharedBytesOf(const Draw &d) {
  const int elementBytes = d.operands == Operands::TF32 ? 4 : d.operands == Operands::I8 ? 1 : 2;
  const int cBlock = d.kind == Kind::Pointers ? 0 : d.bm * d.bn * 4;
  return d.stages * (d.bm + d.bn) * d.bk * elementBytes + (d.pingPong ? 2 : 1) * cBlock;
}

Draw drawOne(std::mt19937 &rng) {
  auto pick = [&](std::initializer_list<int> values) {
    return *(values.begin() + std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  Draw d;
  d.kind = Kind(pick({0, 0, 1, 2, 3})); // pointer loads twice as often (four storage orders)
  d.operands = Operands(pick({0, 1, 2, 3}));
  if (d.kind != Kind::Pointers && d.operands == Operands::I8)
    d.operands = Operands::BF16; // the examples' descriptor / persistent GEMMs are f32-accumulating
  if ((d.kind == Kind::Persistent || d.kind == Kind::PersistentDescriptors) && d.operands == Operands::TF32)
    d.operands = Operands::F16; // they take no precision (f32 would run as FMAs)
  d.warpSpecialize = (d.kind == Kind::Descriptors || d.kind == Kind::PersistentDescriptors) && pick({0, 1});
  d.storage = Storage(pick({0, 1, 2, 3})); // TN: both operands along M / N (tf32 on sm_90a: scatter rings)
  d.chip = pick({0, 1}) ? "sm_90a" : "sm_80";
  d.bm = pick({16, 32, 64, 128});
  d.bn = pick({16, 32, 64, 128});
  d.bk = d.operands == Operands::I8 ? pick({32, 64}) : pick({16, 32, 64});
  // Keep the simulated work bounded: big tiles with few warps run slowly.
  d.warps = pick({1, 2, 4, 8});
  while (d.bm * d.bn / (32 * d.warps) > 128)
    d.warps *= 2;
  d.stages = pick({1, 2, 3, 4});
  if (d.warpSpecialize) { // drawn where it applies: TMA rings feeding wgmma
    d.chip = "sm_90a";
    if (d.operands == Operands::TF32)
      d.operands = Operands::BF16; // the descriptor GEMMs load B along N: tf32 stays on mma.sync
    d.warps = pick({4, 8});
    d.bm = std::max(d.bm, 16 * d.warps); // wgmma: 16 rows a warp
    d.stages = pick({2, 3, 4});
    d.pingPong = d.warps == 4 && pick({0, 1});
  }
  // Every draw's rings (and C block) fit an H100's shared memory: a GPU draw
  // must launch (the runtime refuses more than the device's 227 KiB).
  // (Warp specialisation needs a ring of 2 stages at least.)
  while (d.stages > (d.warpSpecialize ? 2 : 1) && sharedBytesOf(d) > 200 * 1024)
    --d.stages;
  d.M = std::uniform_int_distribution<int>(1, 2 * d.bm + 3)(rng);
  d.N = std::uniform_int_distribution<int>(1, 2 * d.bn + 3)(rng);
  d.K = std::uniform_int_distribution<int>(1, 3 * d.bk + 5)(rng);
  if (d.kind == Kind::PersistentDescriptors) { // rows of K and N elements: multiples of 16 bytes
    const int align = d.operands == Operands::TF32 ? 4 : 8;
    d.K = (d.K + align - 1) / align * align;
    d.N = (d.N + align - 1) / align * align;
  }
  if (d.kind == Kind::Persistent || d.kind == Kind::PersistentDescriptors)
    d.programs = pick({1, 2, 3});
  // Clusters (examples::matmul_persistent_cluster): whole clusters of
  // programs; B's block multicast where its rows split into 8-row slices.
  if (d.kind == Kind::PersistentDescriptors && d.warpSpecialize && !d.pingPong) {
    d.cluster = pick({1, 2, 4});
    d.programs *= d.cluster;
  }
  return d;
}

CompileOptions compileOptionsOf(const Draw &d) {
  return {.chip = d.chip, .num_warps = d.warps, .num_stages = d.stages,
          .warp_specialize = d.warpSpecialize, .ping_pong = d.pingPong, .cluster_size = d.cluster, .assemble = false};
}

/// A draw with warp specialisation runs it: a producer warpgroup of 4 warps
/// (and with ping-pong two programs per CTA).
void expectWarpSpecialized(const Draw &d, const CompiledKernel &c) {
  EXPECT_EQ(c.producer_warps, 4) << "warp_specialize was asked for and did not apply";
  EXPECT_EQ(c.programs_per_cta, d.pingPong ? 2 : 1) << "ping_pong was asked for and did not apply";
  // Clusters apply where B's block (BK rows) splits into 8-row slices.
  EXPECT_EQ(c.cluster_size, d.cluster > 1 && d.bk % (8 * d.cluster) == 0 ? d.cluster : 1);
}

/// The examples' GEMMs (C of the operands' type, f32 accumulation): against
/// the interpreter on the same inputs, so both round C alike.
template <class T, tl::precision P>
void runExampleDraw(const Draw &d, const std::string &name, const SweepTarget &target) {
  // Row strides padded to 16 bytes, as TMA wants (the descriptors' lda, ldb, ldc).
  const int align = int(16 / sizeof(T));
  const int lda = (d.K + align - 1) / align * align, ldb = (d.N + align - 1) / align * align, ldc = ldb;
  auto a = random_vector<T>(size_t(d.M) * lda), b = random_vector<T>(size_t(d.K) * ldb);
  auto want = poisoned<T>(size_t(d.M) * ldc), got = poisoned<T>(size_t(d.M) * ldc);
  const int tiles = cdiv(d.M, d.bm) * cdiv(d.N, d.bn);
  LaunchOptions interp{.backend = Backend::Interp};
  LaunchOptions tested{.num_warps = d.warps, .num_stages = d.stages, .backend = target.backend,
                    .warp_specialize = d.warpSpecialize, .ping_pong = d.pingPong, .cluster_size = d.cluster,
                    .chip = target.chipFor(d.chip)};
  interp.cluster_size = d.cluster;
  interp.grid = tested.grid = d.programs ? Grid{uint32_t(d.cluster > 1 ? d.programs : std::min(d.programs, tiles))}
                                      : Grid{uint32_t(cdiv(d.M, d.bm)), uint32_t(cdiv(d.N, d.bn))};
  const std::vector<std::string> persistentParams = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"};
  switch (d.kind) {
  case Kind::Descriptors: {
    auto k = kernel(name, examples::matmul_descriptors<T, P>,
                    {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
    for (auto [opts, out] : {std::pair{&interp, &want}, std::pair{&tested, &got}})
      k(*opts, a, b, *out, d.M, d.N, d.K, lda, ldb, ldc, d.bm, d.bn, d.bk);
    if (d.warpSpecialize)
      expectWarpSpecialized(d, k.compile({a, b, got, d.M, d.N, d.K, lda, ldb, ldc, d.bm, d.bn, d.bk},
                                      compileOptionsOf(d)));
    // The padding columns are no one's: compare the M x N elements.
    for (auto *c : {&want, &got}) {
      std::vector<T> packed;
      for (int i = 0; i < d.M; ++i)
        packed.insert(packed.end(), c->begin() + ptrdiff_t(i) * ldc, c->begin() + ptrdiff_t(i) * ldc + d.N);
      *c = std::move(packed);
    }
    break;
  }
  case Kind::Persistent:
  case Kind::PersistentDescriptors: {
    // Packed rows: lda = K, ldb = ldc = N (multiples of 16 bytes for the descriptors).
    if (d.cluster > 1) {
      auto k = kernel(name, examples::matmul_persistent_cluster<T>, persistentParams);
      for (auto [opts, out] : {std::pair{&interp, &want}, std::pair{&tested, &got}})
        k(*opts, a, b, *out, d.M, d.N, d.K, d.bm, d.bn, d.bk, 2);
      expectWarpSpecialized(d, k.compile({a, b, got, d.M, d.N, d.K, d.bm, d.bn, d.bk, 2}, compileOptionsOf(d)));
      want.resize(size_t(d.M) * d.N);
      got.resize(size_t(d.M) * d.N);
      break;
    }
    auto k = d.kind == Kind::Persistent ? kernel(name, examples::matmul_persistent<T>, persistentParams)
                                        : kernel(name, examples::matmul_persistent_descriptors<T>, persistentParams);
    for (auto [opts, out] : {std::pair{&interp, &want}, std::pair{&tested, &got}})
      k(*opts, a, b, *out, d.M, d.N, d.K, d.bm, d.bn, d.bk, 2);
    if (d.warpSpecialize)
      expectWarpSpecialized(d, k.compile({a, b, got, d.M, d.N, d.K, d.bm, d.bn, d.bk, 2}, compileOptionsOf(d)));
    want.resize(size_t(d.M) * d.N);
    got.resize(size_t(d.M) * d.N);
    break;
  }
  case Kind::Pointers:
    break;
  }
  // Both round the f32 sums to T: a last-place difference where the sums
  // differ in their last bits.
  const double tolerance = std::is_same_v<T, float> ? 1e-4 : 1e-2;
  EXPECT_LT(rel_error(got, to_double(want)), tolerance);
}

template <class T, class Acc, tl::precision P>
void runDraw(const Draw &d, const std::string &name, const SweepTarget &target) {
  if (d.kind != Kind::Pointers) {
    if constexpr (!std::is_same_v<T, int8_t>)
      runExampleDraw<T, P>(d, name, target);
    return;
  }
  const std::vector<std::string> params = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"};
  Kernel k = d.storage == Storage::NN   ? kernel(name, gemm<T, Acc, P, Storage::NN>, params)
             : d.storage == Storage::NT ? kernel(name, gemm<T, Acc, P, Storage::NT>, params)
             : d.storage == Storage::TT ? kernel(name, gemm<T, Acc, P, Storage::TT>, params)
                                        : kernel(name, gemm<T, Acc, P, Storage::TN>, params);
  std::vector<T> a, b;
  if constexpr (std::is_same_v<T, int8_t>) {
    std::mt19937 rng(uint32_t(d.M * 131 + d.N * 17 + d.K));
    std::uniform_int_distribution<int> dist(-128, 127);
    a.resize(size_t(d.M * d.K));
    b.resize(size_t(d.K * d.N));
    for (auto &v : a) v = int8_t(dist(rng));
    for (auto &v : b) v = int8_t(dist(rng));
  } else {
    a = random_vector<T>(size_t(d.M * d.K));
    b = random_vector<T>(size_t(d.K * d.N));
  }
  const size_t n = size_t(d.M * d.N);
  std::vector<Acc> want(n, Acc(-1)), got(n, Acc(-1));
  if constexpr (std::is_floating_point_v<Acc>)
    want = poisoned<Acc>(n), got = poisoned<Acc>(n);
  Grid g{uint32_t(cdiv(d.M, d.bm)), uint32_t(cdiv(d.N, d.bn))};
  k({.grid = g, .backend = Backend::Interp}, a, b, want, d.M, d.N, d.K, d.bm, d.bn, d.bk);
  k({.grid = g, .num_warps = d.warps, .num_stages = d.stages, .backend = target.backend,
     .chip = target.chipFor(d.chip)},
    a, b, got, d.M, d.N, d.K, d.bm, d.bn, d.bk);
  if constexpr (std::is_floating_point_v<Acc>) {
    std::vector<double> ref(want.begin(), want.end());
    // The interpreter rounds tf32 operands alike and sums in double: what
    // is left is f32 accumulation order.
    EXPECT_LT(rel_error(got, ref), 1e-4);
  } else {
    EXPECT_EQ(got, want);
  }
}

void sweep(const SweepPlan &plan, const SweepTarget &target) {
  std::mt19937 rng(plan.seed);
  for (int i = 0; i < plan.count; ++i) {
    const Draw d = drawOne(rng);
    std::printf("[gemm sweep] %2d: %s on the %s\n", i, d.describe().c_str(), target.name());
    std::fflush(stdout);
    SCOPED_TRACE(d.describe());
    const std::string name = fmt::format("gemm_sweep_{}", i);
    switch (d.operands) {
    case Operands::BF16: runDraw<bfloat16, float, tl::precision::ieee>(d, name, target); break;
    case Operands::F16: runDraw<float16, float, tl::precision::ieee>(d, name, target); break;
    case Operands::TF32: runDraw<float, float, tl::precision::tf32>(d, name, target); break;
    case Operands::I8: runDraw<int8_t, int32_t, tl::precision::ieee>(d, name, target); break;
    }
  }
}

TEST(GemmSweep, RandomConfigurationsMatchTheInterpreter) {
  sweep(sweep_plan("gemm sweep", "TEGULA_GEMM_SWEEP", 20261123u, 40), SweepTarget::sim());
}

TEST(GemmSweep, RandomConfigurationsMatchTheInterpreterOnTheGpu) {
  std::string why;
  auto gpu = SweepTarget::gpu(&why);
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << why;
  sweep(sweep_plan("gemm sweep", "TEGULA_GEMM_SWEEP_GPU", 20261124u, 80), *gpu);
}

} // namespace
