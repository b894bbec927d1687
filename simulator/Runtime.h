//===- Runtime.h - executing the threads of a CTA on the CPU -----*- C++ -*-===//
//
// The simulator runs every thread of a CTA as a cooperative fiber
// (ucontext), one CTA (or thread-block cluster of CTAs) after another. Kernel code (JIT-compiled for the host
// from the lowered LLVM + NVVM module) calls back into this runtime for what
// only a GPU has: thread and block ids, barriers, warp collectives, shared
// memory. Every memory access is checked against the launch's buffers or the
// CTA's shared allocation, and shared memory goes through a race detector.
//
// Errors found on a fiber are recorded and the fiber is abandoned; the
// scheduler then stops the CTA and throws tegula::Error on the host stack.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/kernel.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tegula::sim {

constexpr int kWarpSize = 32;

/// One instrumented instruction: what it is and where the user wrote it.
struct Site {
  std::string what;     // e.g. "llvm.load (shared)", "ld.global.v4.b32"
  std::string location; // e.g. "softmax.h:23"
};

/// A launch buffer: accesses outside [begin, end) are errors.
struct Buffer {
  uintptr_t begin = 0, end = 0;
  std::string name;
  bool readonly = false;
};

enum class Space : uint32_t { Global = 1, Shared = 3 };
enum class AccessKind : uint32_t { Read = 0, Write = 1, Atomic = 2 };

/// Special registers, as passed to __tegula_sim_sreg.
enum class SpecialRegister : int32_t {
  TidX, TidY, TidZ, NTidX, NTidY, NTidZ,
  CtaIdX, CtaIdY, CtaIdZ, NCtaIdX, NCtaIdY, NCtaIdZ,
  LaneId, WarpId, NWarpId,
};

/// The order threads run in between their waits. Round-robin keeps warps
/// in step; the other two let the lowest- (highest-) numbered ready thread
/// run on until it blocks (a thread spinning on an mbarrier lets the others
/// run), so groups of threads that synchronise only
/// through mbarriers or barriers of their own (a ping-pong kernel's two
/// programs, producer and consumers) drift apart and orderings the
/// round-robin never produces are tried. Shuffled does the same over an
/// order of the threads drawn at random for each CTA (from
/// LaunchConfig::scheduleSeed): the warps of one warpgroup drift apart too.
enum class Schedule { RoundRobin, LowestFirst, HighestFirst, Shuffled };

struct LaunchConfig {
  std::string kernel;
  Grid grid;
  int threads = 128;
  size_t sharedBytes = 0;
  std::vector<Buffer> buffers;
  const std::vector<Site> *sites = nullptr;
  /// Report two threads touching the same shared byte between barriers.
  bool detectRaces = true;
  /// The kernel's declared per-thread register count (.maxnreg; 0: none):
  /// the CTA's pool setmaxnreg moves registers in is threads x this.
  int maxRegisters = 0;
  Schedule schedule = Schedule::RoundRobin;
  uint64_t scheduleSeed = 1; // Shuffled's
  /// Run the CTAs (clusters) from the last to the first: kernels whose
  /// programs hand work to each other through global memory (stream-K's
  /// partial tiles) see the other order of arrival.
  bool lastCtaFirst = false;
  /// Thread-block clusters (sm_90): CTAs x = C*k .. C*k + C-1 of each grid
  /// row form cluster k and run together (grid.x must be a multiple of C).
  int clusterSize = 1;
  /// Price each site's accesses as warp-wide requests (RunStats::traffic).
  bool profileMemory = false;
};

/// What the accesses of one site moved over a launch, priced as the
/// hardware serves a warp's request (LaunchConfig::profileMemory,
/// MemoryProfile.h).
struct SiteTraffic {
  uint32_t site = 0;
  Space space = Space::Global;
  AccessKind kind = AccessKind::Read;
  uint64_t requests = 0;     // warp-wide instructions
  uint64_t bytes = 0;        // the distinct bytes each request asked for, summed
  uint64_t transactions = 0; // global: 32-byte sectors; shared: wavefronts
  uint64_t ideal = 0;        // the fewest transactions that carry those bytes
};

/// What a run cost: fiber switches and instrumented accesses; with
/// profileMemory, each site's traffic.
struct RunStats {
  uint64_t ctas = 0, threads = 0, switches = 0, globalAccesses = 0, sharedAccesses = 0;
  std::vector<SiteTraffic> traffic;
};

/// Run `entry(args)` on every thread of every CTA of the grid (the CTAs
/// of a cluster together, one cluster after another). Throws
/// tegula::Error for out-of-bounds or misaligned accesses, races, deadlocks,
/// inconsistent warp collectives and traps.
RunStats runGrid(const LaunchConfig &config, void (*entry)(void **), void **args);

//===----------------------------------------------------------------------===//
// The interface kernel code uses (through the extern "C" entry points and the
// PTX interpreter). Only valid on a simulated thread.
//===----------------------------------------------------------------------===//

int32_t specialRegister(SpecialRegister r);
/// bar.sync 0: every thread of the CTA arrives before any continues.
void barrier(uint32_t site);
/// bar.sync id, count (id 1..15): the first `count` threads to arrive at
/// barrier `id` continue together (warp specialisation: the consumer warps
/// synchronise among themselves while the producer warps run on).
void namedBarrier(uint32_t id, uint32_t count, uint32_t site);
/// setmaxnreg.{inc,dec}.sync.aligned.u32 count: the warpgroup's per-thread
/// registers move to `count`, from or to the CTA's pool (threads x .maxnreg,
/// all handed out at launch); an increase waits until the pool has them -
/// forever, reported as a deadlock, when the other warpgroups never give
/// them back.
void setMaxRegisters(bool increase, uint32_t count, uint32_t site);
/// A setmaxnreg.inc waiting for registers, described (empty: none): other
/// deadlock reports name it, as it is usually their cause.
std::string pendingRegisterRequest();
/// Check (and, for shared memory, record) an access of `bytes` at `p`.
void checkAccess(const void *p, size_t bytes, AccessKind kind, Space space, uint32_t site);
/// The current thread's part of its warp's request at `site`, for the
/// memory profile (nothing without one): thread-issued accesses only, not
/// the async units' (TMA, wgmma).
void profileAccess(const void *p, size_t bytes, AccessKind kind, Space space, uint32_t site);
/// The CTA's shared memory.
uint8_t *sharedBase();
size_t sharedBytes();
/// fence.proxy.async.shared::cta: this thread's earlier shared-memory writes
/// become visible to the async proxy (wgmma, bulk copies).
void fenceProxyAsync();
/// An asynchronous read of shared memory in flight from `asyncReadBegin`
/// to `asyncReadEnd` (wgmma between issue and wait): a write to those bytes
/// meanwhile is reported, naming `site`.
void asyncReadBegin(const void *p, size_t bytes, uint32_t site);
void asyncReadEnd(const void *p, size_t bytes);
/// An async-proxy read (by `reader`, e.g. "wgmma.mma_async") of shared
/// memory: fails if a byte was written through the generic proxy and its
/// writer has not fenced since.
void checkAsyncProxyRead(const void *p, size_t bytes, const char *reader, uint32_t site);
/// An async-proxy write (a TMA copy landing) likewise: generic writes to
/// those bytes not fenced since could land after it.
void checkAsyncProxyWrite(const void *p, size_t bytes, const char *writer, uint32_t site);
/// Stop the simulation with `message` (prefixed with kernel, CTA, thread and
/// the site's instruction and location).
[[noreturn]] void fail(uint32_t site, const std::string &message);

/// A warp-synchronous operation: every lane in `mask` calls this with its
/// own `io`; once all have arrived, `complete` runs once with every lane's
/// `io` (null for lanes outside the mask) and then all lanes continue.
/// `kind` names the operation in errors; lanes of one warp that meet in
/// different operations or with different masks are an error.
void warpCollective(const char *kind, uint32_t site, uint32_t mask, void *io,
                    const std::function<void(void *const ios[kWarpSize])> &complete);

/// Per-thread state other parts of the simulator keep, one slot each;
/// cleared when a CTA starts.
enum class ThreadExtension { AsyncCopies, Wgmma, Count };
std::shared_ptr<void> &threadExtension(ThreadExtension which);

/// Per-CTA state other parts of the simulator keep; cleared when a CTA starts.
enum class CtaExtension { Tma, AsyncGlobal, Count };
std::shared_ptr<void> &ctaExtension(CtaExtension which);

/// Let the other threads run (a thread spinning on an mbarrier).
void yieldThread();
/// "wgmma.mma_async at kernel.cpp:12": a site as errors name it.
std::string siteDescription(uint32_t site);
/// Bytes the async proxy wrote (a bulk copy): the race detector leaves
/// their ordering to the copy's mbarrier (Tma.h).
void asyncProxyWrote(const void *p, size_t bytes, uint32_t site);

/// The calling thread's lane (0..31) and linear thread id.
int laneId();
int threadId();

//===----------------------------------------------------------------------===//
// Thread-block clusters (Cluster.cpp). A shared::cluster address is a host
// pointer into the shared memory of one CTA of the cluster; a CTA's own
// shared addresses are valid shared::cluster addresses of itself.
//===----------------------------------------------------------------------===//

/// The error for a launch whose grid has `gridX` CTAs along x, not a
/// multiple of the cluster size (CUDA refuses it).
std::string clusterGridError(const std::string &kernel, int clusterSize, unsigned gridX);
/// %cluster_ctarank and %cluster_nctarank of the calling thread's CTA (0
/// and 1 without clusters).
int clusterRank();
int clusterSize();
/// Run `f` in the context of CTA `rank` of the caller's cluster: its shared
/// memory and per-CTA state (sharedBase(), ctaExtension()). A failure
/// inside is the calling thread's, naming `what` and the target CTA; a
/// target whose threads have all exited (its shared memory is gone) is an
/// error.
void inClusterCta(int rank, const char *what, uint32_t site, const std::function<void()> &f);
/// mapa.shared::cluster: `p` (in the caller's shared memory) moved to the
/// same offset in CTA `rank`'s.
void *mapSharedAddress(const void *p, uint32_t rank, uint32_t site);
/// Where the shared::cluster address `p` (`bytes` long) lies: the CTA's
/// rank and the offset in its shared memory. An error if in no CTA's.
struct ClusterAddress {
  int rank = 0;
  size_t offset = 0;
};
ClusterAddress locateInCluster(const void *p, size_t bytes, const char *what, uint32_t site);
/// barrier.cluster.arrive: non-blocking; each thread arrives once per phase.
void clusterBarrierArrive(uint32_t site);
/// barrier.cluster.wait: returns once every thread of every CTA of the
/// cluster has arrived for the phase of this thread's arrival. The
/// completed phase orders each CTA's shared accesses like bar.sync 0.
void clusterBarrierWait(uint32_t site);

} // namespace tegula::sim
