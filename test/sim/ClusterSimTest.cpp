// ClusterSimTest.cpp - thread-block clusters (sm_90a) in the simulator: the
// CTAs of a cluster run together, reach each other's shared memory through
// mapa / shared::cluster addresses, arrive on each other's mbarriers, meet
// at the cluster barrier and receive multicast TMA copies. Hand-written
// thread programs drive the runtime (and the PTX interpreter) directly; a
// hand-written LLVM module runs the PTX text path end to end.
#include "MlirTestUtil.h"
#include "TestUtil.h"
#include "simulator/PtxAsm.h"
#include "simulator/Runtime.h"
#include "simulator/Simulator.h"
#include "simulator/Tma.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <map>

using namespace tegula;
using namespace tegula::sim;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

std::function<void()> body;
void entry(void **) { body(); }

struct Launch {
  int threads = 32;
  size_t sharedBytes = 1024;
  int clusterSize = 2;
  Grid grid = {2, 1, 1};
  Schedule schedule = Schedule::RoundRobin;
  std::vector<Buffer> buffers;
};

RunStats run(const Launch &l, std::function<void()> fn) {
  body = std::move(fn);
  LaunchConfig config;
  config.kernel = "cluster";
  config.grid = l.grid;
  config.threads = l.threads;
  config.sharedBytes = l.sharedBytes;
  config.clusterSize = l.clusterSize;
  config.schedule = l.schedule;
  config.buffers = l.buffers;
  return runGrid(config, entry, nullptr);
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

/// Run one inline-PTX statement (parsed once per text) on the calling
/// simulated thread: `inputs` are its input operands; returns output 0.
uint64_t ptx(const std::string &text, const std::string &constraints, std::vector<uint64_t> inputs = {}) {
  static std::map<std::string, std::shared_ptr<const AsmProgram>> programs;
  auto &program = programs[text + "|" + constraints];
  if (!program)
    program = AsmProgram::parse(text, constraints);
  uint64_t out[2] = {};
  program->run(inputs.data(), out, 0);
  return out[0];
}

uint64_t address(const void *p) { return reinterpret_cast<uintptr_t>(p); }
bool leader() { return threadId() == 0; }
void clusterSync() {
  ptx("barrier.cluster.arrive.release.aligned;", "");
  ptx("barrier.cluster.wait.acquire.aligned;", "");
}
void waitPhase(void *bar, uint32_t parity) {
  ptx("{\n.reg .pred %done;\nwait:\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %done, [$0], $1;\n"
      "@!%done bra wait;\n}",
      "l,r", {address(bar), parity});
}
/// The address of `p` (in this CTA's shared memory) in CTA `rank`'s.
uint64_t mapa(const void *p, uint32_t rank) {
  return ptx("mapa.shared::cluster.u64 $0, $1, $2;", "=l,l,r", {address(p), rank});
}
void remoteArrive(uint64_t clusterAddress) {
  ptx("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [$0];", "l", {clusterAddress});
}

TEST(ClusterSim, RanksSizesAndMapaAddressThePeersSharedMemory) {
  std::vector<uint64_t> seen(6 * 32 * 4);
  std::vector<uint8_t *> bases(6);
  auto stats = run({.grid = {6, 1, 1}}, [&] {
    const int cta = specialRegister(SpecialRegister::CtaIdX), t = threadId();
    const uint64_t rank = ptx("mov.u32 $0, %cluster_ctarank;", "=r");
    const uint64_t size = ptx("mov.u32 $0, %cluster_nctarank;", "=r");
    uint8_t *mine = sharedBase() + 64;
    const uint64_t peer = mapa(mine, uint32_t(1 - rank)), self = mapa(mine, uint32_t(rank));
    bases[size_t(cta)] = sharedBase();
    uint64_t *out = &seen[size_t((cta * 32 + t) * 4)];
    out[0] = rank, out[1] = size;
    out[2] = peer - address(mine);             // the peer's base minus ours
    out[3] = self == address(mine) ? 1 : 0;    // its own address maps to itself
    EXPECT_EQ(locateInCluster(reinterpret_cast<void *>(peer), 8, "test", 0).rank, int(1 - rank));
    EXPECT_EQ(locateInCluster(reinterpret_cast<void *>(peer), 8, "test", 0).offset, 64u);
    clusterSync(); // the peer's shared memory lives until both are done
  });
  EXPECT_EQ(stats.ctas, 6u);
  EXPECT_EQ(stats.threads, 6u * 32);
  for (int cta = 0; cta < 6; ++cta)
    for (int t = 0; t < 32; ++t) {
      const uint64_t *v = &seen[size_t((cta * 32 + t) * 4)];
      EXPECT_EQ(v[0], uint64_t(cta % 2));
      EXPECT_EQ(v[1], 2u);
      EXPECT_EQ(v[2], address(bases[size_t(cta ^ 1)]) - address(bases[size_t(cta)]));
      EXPECT_EQ(v[3], 1u);
    }
  // The two CTAs of a cluster have separate shared memories.
  EXPECT_NE(bases[0], bases[1]);
}

TEST(ClusterSim, WithoutClustersACtaIsAClusterOfOne) {
  std::vector<int> order;
  run({.threads = 64, .clusterSize = 1, .grid = {2, 1, 1}}, [&] {
    EXPECT_EQ(ptx("mov.u32 $0, %cluster_ctarank;", "=r"), 0u);
    EXPECT_EQ(ptx("mov.u32 $0, %cluster_nctarank;", "=r"), 1u);
    order.push_back(threadId());
    clusterSync(); // a barrier over the CTA's threads
    order.push_back(100 + threadId());
  });
  ASSERT_EQ(order.size(), 4u * 64);
  for (size_t cta = 0; cta < 2; ++cta)
    for (size_t i = 0; i < 64; ++i)
      EXPECT_LT(order[cta * 128 + i], 100);
}

/// Thread 0 of each CTA initialises its mbarrier for two arrivals: its own
/// and the peer's (through mapa and a shared::cluster arrive).
TEST(ClusterSim, AnMbarrierCompletesOnlyOnceBothCtasArrived) {
  for (Schedule s : {Schedule::RoundRobin, Schedule::LowestFirst, Schedule::HighestFirst, Schedule::Shuffled}) {
    std::vector<int> earlyWait(2, -1), done(2, 0);
    EXPECT_EQ(errorOf([&] {
                run({.schedule = s}, [&] {
                  void *bar = sharedBase();
                  const int rank = clusterRank();
                  if (leader())
                    ptx("mbarrier.init.shared::cta.b64 [$0], 2;", "l", {address(bar)});
                  ptx("fence.mbarrier_init.release.cluster;", "");
                  clusterSync(); // every init before any remote arrive
                  if (leader()) {
                    remoteArrive(address(bar)); // its own: a shared::cta address is a shared::cluster one
                    earlyWait[size_t(rank)] = int(ptx("mbarrier.try_wait.parity.shared::cta.b64 $0, [$1], $2;",
                                                      "=r,l,r", {address(bar), 0}));
                    remoteArrive(mapa(bar, uint32_t(1 - rank)));
                  }
                  waitPhase(bar, 0);
                  ++done[size_t(rank)];
                  clusterSync(); // no CTA leaves while its peer may still arrive
                });
              }),
              "(no error)")
        << int(s);
    EXPECT_EQ(done[0], 32);
    EXPECT_EQ(done[1], 32);
    // Lowest first: CTA 0's leader arrives on its own barrier before CTA 1's
    // leader ran - one arrival of two does not complete the phase.
    if (s == Schedule::LowestFirst)
      EXPECT_EQ(earlyWait[0], 0);
  }
}

TEST(ClusterSim, ARemoteArriveBeforeThePeersInitIsReported) {
  auto kernel = [](bool syncAfterInit) {
    return [=] {
      void *bar = sharedBase();
      if (leader())
        ptx("mbarrier.init.shared::cta.b64 [$0], 2;", "l", {address(bar)});
      if (syncAfterInit)
        clusterSync();
      if (leader()) { // the other threads do not touch the barrier
        remoteArrive(address(bar));
        remoteArrive(mapa(bar, uint32_t(1 - clusterRank())));
        waitPhase(bar, 0);
      }
      clusterSync();
    };
  };
  // CTA 0's leader runs first and arrives on CTA 1's barrier before its init.
  EXPECT_THAT(errorOf([&] { run({.schedule = Schedule::LowestFirst}, kernel(false)); }),
              ::testing::AllOf(HasSubstr("CTA (0, 0, 0), thread 0"), HasSubstr("on CTA (1, 0, 0) (cluster rank 1)"),
                             HasSubstr("which no mbarrier.init initialised")));
  EXPECT_THAT(errorOf([&] { run({.schedule = Schedule::HighestFirst}, kernel(false)); }),
              ::testing::AllOf(HasSubstr("CTA (1, 0, 0), thread 0"), HasSubstr("on CTA (0, 0, 0) (cluster rank 0)"),
                             HasSubstr("which no mbarrier.init initialised")));
  for (Schedule s : {Schedule::RoundRobin, Schedule::LowestFirst, Schedule::HighestFirst})
    EXPECT_EQ(errorOf([&] { run({.schedule = s}, kernel(true)); }), "(no error)");
}

/// CTA 1's threads all wait at bar.sync 0 while CTA 0's leader spins on an
/// mbarrier CTA 1 arrives on after that barrier: the barrier is released
/// at once, not when nothing else can run (never, with a spinning thread).
TEST(ClusterSim, ABarrierOfOneCtaCompletesWhileItsPeerSpins) {
  for (Schedule s : {Schedule::RoundRobin, Schedule::LowestFirst, Schedule::HighestFirst}) {
    int arrived = 0;
    run({.schedule = s}, [&] {
      void *bar = sharedBase();
      if (leader() && clusterRank() == 0)
        ptx("mbarrier.init.shared::cta.b64 [$0], 1;", "l", {address(bar)});
      clusterSync();
      if (clusterRank() == 0) {
        if (leader())
          waitPhase(bar, 0);
        return;
      }
      barrier(0);
      if (leader()) {
        remoteArrive(mapa(bar, 0));
        ++arrived;
      }
    });
    EXPECT_EQ(arrived, 1);
  }
}

TEST(ClusterSim, AClusterBarrierAThreadNeverReachesDeadlocks) {
  EXPECT_THAT(errorOf([&] {
                run({.grid = {4, 1, 1}}, [] {
                  if (specialRegister(SpecialRegister::CtaIdX) == 3 && threadId() == 5)
                    return; // exits instead
                  clusterSync();
                });
              }),
              ::testing::AllOf(HasSubstr("deadlock: barrier.cluster.wait"),
                             HasSubstr("63 of 64 threads of cluster 1 arrived (1 exited")));
  EXPECT_THAT(errorOf([&] {
                run({}, [] {
                  ptx("barrier.cluster.arrive;", "");
                  ptx("barrier.cluster.arrive;", "");
                });
              }),
              HasSubstr("barrier.cluster.arrive a second time before its barrier.cluster.wait"));
}

TEST(ClusterSim, TheClusterBarrierOrdersSharedAccesses) {
  auto kernel = [](bool sync) {
    return [=] {
      auto *p = reinterpret_cast<uint32_t *>(sharedBase());
      if (threadId() == 0) {
        checkAccess(p, 4, AccessKind::Write, Space::Shared, 0);
        *p = 7;
      }
      if (sync)
        clusterSync();
      if (threadId() == 1)
        checkAccess(p, 4, AccessKind::Read, Space::Shared, 0);
      if (!sync)
        clusterSync();
    };
  };
  EXPECT_EQ(errorOf([&] { run({}, kernel(true)); }), "(no error)");
  EXPECT_THAT(errorOf([&] { run({.schedule = Schedule::LowestFirst}, kernel(false)); }),
              HasSubstr("shared-memory race on byte 0"));
}

TEST(ClusterSim, AGridThatIsNotAMultipleOfTheClusterIsRefused) {
  EXPECT_THAT(errorOf([&] { run({.grid = {3, 1, 1}}, [] {}); }),
              HasSubstr("runs in clusters of 2 CTAs along x, but the grid has 3 CTAs along x (a multiple of 2 is "
                        "required)"));
}

//===----------------------------------------------------------------------===//
// Multicast TMA copies.
//===----------------------------------------------------------------------===//

/// An 8 x 8 f32 tensor; boxes of 4 x 8 (128 bytes).
struct Tensor {
  std::vector<float> x = std::vector<float>(64);
  runtime::TensorMapBytes map;
  Tensor() {
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i);
    runtime::ResolvedTensorMap m;
    m.address = address(x.data());
    m.shape = {8, 8};
    m.strideBytes = {32, 4};
    m.box = {4, 8};
    map = encodeForSimulator(m);
  }
  Buffer buffer() const { return {address(x.data()), address(x.data() + x.size()), "x", true}; }
};

/// CTA r's leader loads rows 4r..4r+3 into both CTAs (offset 128 r); each
/// CTA's mbarrier (offset 256) expects both halves.
void multicastHalves(const Tensor &t, uint64_t mask, std::vector<float> *out) {
  uint8_t *base = sharedBase();
  void *bar = base + 256;
  const uint32_t rank = uint32_t(clusterRank());
  if (leader()) {
    ptx("mbarrier.init.shared::cta.b64 [$0], 1;", "l", {address(bar)});
    ptx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "l,r", {address(bar), 256});
  }
  clusterSync();
  if (leader())
    ptx("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
        "[$0], [$1, {$2, $3}], [$4], $5;",
        "l,l,r,r,l,h", {address(base + 128 * rank), address(t.map.bytes.data()), 0, 4 * rank, address(bar), mask});
  waitPhase(bar, 0);
  if (out)
    for (int i = threadId(); i < 64; i += 32) {
      checkAccess(base + 4 * i, 4, AccessKind::Read, Space::Shared, 0);
      std::memcpy(&(*out)[size_t(specialRegister(SpecialRegister::CtaIdX) * 64 + i)], base + 4 * i, 4);
    }
  clusterSync();
}

TEST(ClusterSim, AMulticastCopyLandsInEveryCtaOfTheMask) {
  const Tensor t;
  for (Schedule s : {Schedule::RoundRobin, Schedule::LowestFirst, Schedule::HighestFirst}) {
    std::vector<float> out(4 * 64, -1.0f);
    run({.grid = {4, 1, 1}, .schedule = s, .buffers = {t.buffer()}}, [&] { multicastHalves(t, 0b11, &out); });
    for (size_t cta = 0; cta < 4; ++cta)
      for (size_t i = 0; i < 64; ++i)
        ASSERT_EQ(out[cta * 64 + i], float(i)) << "CTA " << cta << ", element " << i;
  }
}

TEST(ClusterSim, MulticastMisuseIsReported) {
  const Tensor t;
  // A mask bit outside the cluster.
  EXPECT_THAT(errorOf([&] { run({.buffers = {t.buffer()}}, [&] { multicastHalves(t, 0b101, nullptr); }); }),
              HasSubstr("with CTA mask 0x0005: the cluster has 2 CTAs"));
  // Only one copy lands in each CTA, whose mbarrier expects two: a phase
  // that never completes.
  EXPECT_THAT(errorOf([&] { run({.buffers = {t.buffer()}}, [&] { multicastHalves(t, 0b01, nullptr); }); }),
              HasSubstr("never completes its phase 0"));
  // CTA 1 exits at once (highest first: before CTA 0 runs); CTA 0 multicasts into it.
  EXPECT_THAT(errorOf([&] {
                run({.schedule = Schedule::HighestFirst, .buffers = {t.buffer()}}, [&] {
                  if (clusterRank() == 1)
                    return;
                  void *bar = sharedBase() + 256;
                  if (!leader())
                    return;
                  ptx("mbarrier.init.shared::cta.b64 [$0], 1;", "l", {address(bar)});
                  ptx("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes."
                      "multicast::cluster [$0], [$1, {$2, $3}], [$4], $5;",
                      "l,l,r,r,l,h", {address(sharedBase()), address(t.map.bytes.data()), 0, 0, address(bar), 3});
                });
              }),
              HasSubstr("CTA (1, 0, 0) of the cluster has exited: its shared memory is gone"));
  // A generic write into the box the peer's copy still owns (before its wait).
  EXPECT_THAT(errorOf([&] {
                run({.buffers = {t.buffer()}}, [&] {
                  uint8_t *base = sharedBase();
                  void *bar = base + 256;
                  if (leader())
                    ptx("mbarrier.init.shared::cta.b64 [$0], 1;", "l", {address(bar)});
                  clusterSync();
                  if (leader() && clusterRank() == 0) {
                    ptx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "l,r", {address(bar), 128});
                    ptx("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes."
                        "multicast::cluster [$0], [$1, {$2, $3}], [$4], $5;",
                        "l,l,r,r,l,h", {address(base), address(t.map.bytes.data()), 0, 0, address(bar), 3});
                  }
                  if (leader() && clusterRank() == 1) {
                    checkAccess(base, 4, AccessKind::Write, Space::Shared, 0); // before any wait
                  }
                  clusterSync();
                });
              }),
              ::testing::AllOf(HasSubstr("CTA (1, 0, 0), thread 0"), HasSubstr("writes shared byte 0, which the "
                                                                             "cp.async.bulk.tensor")));
}

//===----------------------------------------------------------------------===//
// The PTX text path: a hand-written LLVM module with a tensor map.
//===----------------------------------------------------------------------===//

/// Each CTA of a 2-CTA cluster multicasts half of an 8 x 8 f32 box (rows
/// 4r..) into both CTAs; every thread waits for both halves and copies two
/// elements of its CTA's tile to out[ctaid.x * 64 + ...].
const char *kMulticastModule = R"mlir(
module attributes {tilegpu.cluster_size = 2 : i64, tilegpu.num_warps = 1 : i64,
                   tilegpu.tensor_maps = "0 7 2 -1 8 -1 8 -1 8 -1 1 4 8 0"} {
  llvm.mlir.global internal @tegula_scratch() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<264 x i8>
  llvm.func @multicast(%x: !llvm.ptr<1>, %out: !llvm.ptr<1>, %map: !llvm.ptr) attributes {nvvm.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %cta = nvvm.read.ptx.sreg.ctaid.x : i32
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %c4 = llvm.mlir.constant(4 : i32) : i32
    %c32 = llvm.mlir.constant(32 : i32) : i32
    %c64 = llvm.mlir.constant(64 : i32) : i32
    %c128 = llvm.mlir.constant(128 : i32) : i32
    %c256 = llvm.mlir.constant(256 : i32) : i32
    %mask = llvm.mlir.constant(3 : i16) : i16
    %leader = llvm.icmp "eq" %tid, %c0 : i32
    %base = llvm.mlir.addressof @tegula_scratch : !llvm.ptr<3>
    %bar = llvm.getelementptr %base[256] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
    llvm.inline_asm has_side_effects "@$1 mbarrier.init.shared::cta.b64 [$0], 1;", "l,b" %bar, %leader : (!llvm.ptr<3>, i1) -> ()
    llvm.inline_asm has_side_effects "fence.mbarrier_init.release.cluster;", "" : () -> ()
    llvm.inline_asm has_side_effects "barrier.cluster.arrive.release.aligned;", "" : () -> ()
    llvm.inline_asm has_side_effects "barrier.cluster.wait.acquire.aligned;", "" : () -> ()
    %rank = llvm.inline_asm "mov.u32 $0, %cluster_ctarank;", "=r" : () -> i32
    %off = llvm.mul %rank, %c128 : i32
    %dst = llvm.getelementptr %base[%off] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %row = llvm.mul %rank, %c4 : i32
    llvm.inline_asm has_side_effects "@$2 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "l,r,b" %bar, %c256, %leader : (!llvm.ptr<3>, i32, i1) -> ()
    llvm.inline_asm has_side_effects "@$6 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [$0], [$1, {$2, $3}], [$4], $5;", "l,l,r,r,l,h,b" %dst, %map, %c0, %row, %bar, %mask, %leader : (!llvm.ptr<3>, !llvm.ptr, i32, i32, !llvm.ptr<3>, i16, i1) -> ()
    llvm.inline_asm has_side_effects "{\0A.reg .pred %tegula_done;\0Ategula_wait:\0Ambarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %tegula_done, [$0], $1;\0A@!%tegula_done bra tegula_wait;\0A}", "l,r" %bar, %c0 : (!llvm.ptr<3>, i32) -> ()
    %fbase = llvm.getelementptr %base[0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, f32
    %first = llvm.mul %cta, %c64 : i32
    %i1 = llvm.add %tid, %c32 : i32
    %p0 = llvm.getelementptr %base[%tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
    %p1 = llvm.getelementptr %base[%i1] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
    %v0 = llvm.load %p0 : !llvm.ptr<3> -> f32
    %v1 = llvm.load %p1 : !llvm.ptr<3> -> f32
    %o0 = llvm.add %first, %tid : i32
    %o1 = llvm.add %first, %i1 : i32
    %q0 = llvm.getelementptr %out[%o0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %q1 = llvm.getelementptr %out[%o1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    llvm.store %v0, %q0 : f32, !llvm.ptr<1>
    llvm.store %v1, %q1 : f32, !llvm.ptr<1>
    llvm.inline_asm has_side_effects "barrier.cluster.arrive;", "" : () -> ()
    llvm.inline_asm has_side_effects "barrier.cluster.wait;", "" : () -> ()
    llvm.return
  }
}
)mlir";

std::string runMulticastModule(Grid grid, std::vector<float> &out) {
  LoadedContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kMulticastModule, &ctx);
  if (!module)
    return "(does not parse)";
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i);
  const std::vector<float> &input = x;
  try {
    auto simulated = sim::SimKernel::prepare(module->getOperation(), "multicast");
    std::vector<ParamInfo> params = {{ParamInfo::Kind::Pointer, DType::f32}, {ParamInfo::Kind::Pointer, DType::f32}};
    simulated->run(grid, params, {"x", "out"}, {input, out});
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ClusterSim, AMulticastKernelRunsFromItsPtx) {
  std::vector<float> out(4 * 64, -1.0f);
  ASSERT_EQ(runMulticastModule({4}, out), "(no error)");
  for (size_t cta = 0; cta < 4; ++cta)
    for (size_t i = 0; i < 64; ++i)
      ASSERT_EQ(out[cta * 64 + i], float(i)) << "CTA " << cta << ", element " << i;
}

TEST(ClusterSim, AKernelWhoseGridDoesNotFillItsClustersIsRefused) {
  std::vector<float> out(5 * 64);
  EXPECT_THAT(runMulticastModule({5}, out),
              HasSubstr("simulator: kernel 'multicast' runs in clusters of 2 CTAs along x, but the grid has 5 CTAs "
                        "along x (a multiple of 2 is required)"));
}

} // namespace
