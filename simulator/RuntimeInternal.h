//===- RuntimeInternal.h - the runtime's CTA and cluster state ---*- C++ -*-===//
//
// Shared by Runtime.cpp (scheduling, barriers, memory checks) and
// Cluster.cpp (thread-block clusters): not part of the runtime's interface.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "simulator/Fiber.h"
#include "simulator/MemoryProfile.h"
#include "simulator/Runtime.h"
#include "tegula/error.h"

#include <array>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace tegula::sim::detail {

enum class State { Ready, AtBarrier, AtClusterBarrier, InCollective, Done, Failed };

/// Per-thread fiber. Stacks are mmap'ed once per run (pages are committed
/// only when touched) with a guard page below, and reused for every CTA.
struct Thread {
  Fiber fiber;
  State state = State::Ready;
  uint32_t waitSite = 0;
  uint32_t barrierId = 0; // at a barrier: which one (0: bar.sync 0, every thread)
  // barrier.cluster: the phase of its pending arrival + 1; 0: none pending.
  uint32_t clusterArrival = 0;
  char *stack = nullptr;
  std::shared_ptr<void> extensions[size_t(ThreadExtension::Count)];
};

/// Last accesses of one shared byte, for the race detector. Epochs are
/// barrier intervals, numbered across the whole run so nothing is reset
/// between CTAs: an epoch before the CTA's first was written by another CTA.
struct Shadow {
  uint32_t writeEpoch = 0, readEpoch = 0;
  uint32_t writeSite = 0, readSite = 0;
  uint16_t writer = 0, reader = 0;
  uint16_t otherReader = 0xffff; // a second reader in readEpoch, if any
  bool atomicWrite = false;       // the last write was an atomic (atomics do not race with each other)
  uint16_t otherAtomic = 0xffff;  // an earlier atomic writer unordered with `writer`'s, if any
};

/// One warp's collective in progress.
struct Collective {
  const char *kind = nullptr;
  uint32_t site = 0, mask = 0, arrived = 0;
  void *ios[kWarpSize] = {};
};

constexpr size_t kStackBytes = 256 * 1024, kGuardBytes = 4096;

/// A read of a shared byte no thread had written yet. Judged when the
/// barrier interval ends: if another thread wrote the byte meanwhile the
/// write reported a race; if nobody did, the read saw garbage.
struct PendingRead {
  size_t offset;
  int thread;
  uint32_t site;
};

/// The CTA's shared memory, aligned to 256 KiB so that the low 18 bits of
/// an address are its offset in the shared window, as on the GPU: wgmma's
/// matrix descriptors carry only those bits, and its swizzles act on them.
class SharedMemory {
public:
  static constexpr size_t kWindow = size_t(1) << 18;
  void resize(size_t n) {
    size_ = n;
    data_.reset(n ? static_cast<uint8_t *>(std::aligned_alloc(kWindow, (n + kWindow - 1) / kWindow * kWindow))
                  : nullptr);
    if (n && !data_)
      throw Error(fmt::format("simulator: cannot allocate {} bytes of shared memory", n));
  }
  uint8_t *data() const { return data_.get(); }
  size_t size() const { return size_; }
  uint8_t *begin() const { return data(); }
  uint8_t *end() const { return data() + size_; }

private:
  struct Free {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

/// Who last wrote a shared byte through the generic proxy (ordinary stores,
/// atomics, cp.async), and how many fence.proxy.async that thread had made
/// by then: the async proxy (wgmma, bulk copies) may read it only after the
/// writer's next fence.
struct ProxyWrite {
  uint32_t writer = 0; // thread + 1; 0: none
  uint32_t fences = 0;
  uint32_t site = 0;
};

struct Cta {
  const LaunchConfig *config = nullptr;
  uint32_t id[3] = {0, 0, 0};
  std::vector<Thread> threads;
  SharedMemory shared;
  std::vector<ProxyWrite> proxyWrites;
  // In-flight async reads (wgmma) of each shared byte, and the last issuer's site.
  std::vector<uint16_t> asyncReads;
  std::vector<uint32_t> asyncReadSites;
  std::vector<uint32_t> proxyFences; // per thread
  std::vector<Shadow> shadow;
  std::vector<Collective> warps;
  // Named barriers (bar.sync id, count): arrivals so far and the count.
  std::array<uint32_t, 16> namedArrivals{}, namedCounts{};
  // setmaxnreg: each warpgroup's per-thread registers, the pool's free
  // ones, and a request that waits for registers (for deadlock reports).
  std::vector<int> warpRegisters;
  int64_t freeRegisters = 0;
  uint64_t registerWaits = 0;
  std::string registerRequest;
  uint32_t firstEpoch = 1, epoch = 1;
  // The race detector's view of barriers: the epoch the last barrier of
  // every thread (bar.sync 0) began, and per thread the epoch each named
  // barrier it took part in last began (namedUsed: the ids completed).
  // Two accesses are ordered when both threads passed one barrier since
  // the first: a named barrier orders only the threads that meet there.
  uint32_t fullEpoch = 1;
  uint16_t namedUsed = 0;
  std::vector<std::array<uint32_t, 16>> passed;
  Fiber *scheduler = nullptr; // its cluster's
  struct Cluster *cluster = nullptr;
  int rank = 0; // in the cluster
  int current = -1;
  void (*entry)(void **) = nullptr;
  void **args = nullptr;
  std::vector<PendingRead> uninitialisedReads;
  std::string error; // set by fail()
  RunStats stats;
  std::unique_ptr<MemoryProfile> profile; // with LaunchConfig::profileMemory
  std::shared_ptr<void> extensions[size_t(CtaExtension::Count)];
};

/// The CTAs of a cluster (one without clusters), whose threads run together
/// in one scheduling loop; each CTA keeps its own state until all are done.
struct Cluster {
  std::vector<std::unique_ptr<Cta>> ctas;
  Fiber scheduler;
  // barrier.cluster: phases completed, arrivals in the current one, and
  // the threads it waits for.
  uint32_t phase = 0, arrivals = 0, threads = 0;
  // Stopped by request_interrupt(), part way: the launch says so.
  bool interrupted = false;
};

/// An operation of a thread on a peer CTA's state (inClusterCta): fail()
/// blames the issuing thread and names the target.
struct RemoteCall {
  Cta *issuer = nullptr, *target = nullptr;
  int targetCurrent = -1;
  const char *what = "";
};

/// The CTA of the running thread (switched by inClusterCta while it acts
/// on a peer's shared memory).
extern thread_local Cta *tCta;
extern thread_local RemoteCall *tRemote;

inline Cta &cta() { return *tCta; }

/// The shadow "writer" of bytes the async proxy (a bulk copy) wrote.
constexpr uint16_t kAsyncProxyWriter = 0xfffe;

/// Back to the scheduler; returns when this thread is resumed.
void yieldToScheduler();
/// Abandon the running thread once an error is recorded (in any CTA of
/// its cluster): the scheduler reports it.
[[noreturn]] void abandonThread();
std::string siteText(const Cta &c, uint32_t site);
std::string ctaText(const Cta &c);
std::string describeThread(int tid);
/// "kernel 'k', CTA (x, y, z), thread t (...): message [site]".
std::string errorText(const Cta &c, int thread, uint32_t site, const std::string &message);
/// End of a barrier interval (or of the CTA): reads of bytes still unwritten.
void judgeUninitialisedReads(Cta &c);
/// Every thread of `c` has exited.
bool exited(const Cta &c);

// Cluster.cpp
/// The deadlock report for threads of `c` waiting (at `site`) at a cluster
/// barrier that can never complete.
std::string clusterBarrierDeadlock(const Cluster &cl, const Cta &c, uint32_t site);

} // namespace tegula::sim::detail
