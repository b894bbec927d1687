//===- Cluster.cpp - thread-block clusters: ranks, DSMEM addresses, barrier ===//
//
// The CTAs of a cluster run together (Runtime.cpp schedules all their
// threads in one loop); this file lets a thread reach its peers: their
// ranks, shared::cluster addresses (host pointers into a peer's shared
// memory), operations in a peer's context (a remote mbarrier arrival, a
// multicast copy landing) and the cluster barrier.
//
//===----------------------------------------------------------------------===//
#include "simulator/Runtime.h"
#include "simulator/RuntimeInternal.h"

#include <fmt/format.h>

namespace tegula::sim {
namespace detail {

std::string clusterBarrierDeadlock(const Cluster &cl, const Cta &c, uint32_t site) {
  int exitedThreads = 0, blocked = 0;
  for (const auto &peer : cl.ctas)
    for (const Thread &t : peer->threads) {
      exitedThreads += t.state == State::Done;
      blocked += t.state == State::AtBarrier || t.state == State::InCollective;
    }
  const std::string where = siteText(c, site);
  return fmt::format("{}: deadlock: barrier.cluster.wait{}: {} of {} threads of cluster {} arrived "
                     "({} exited, {} wait at other barriers or in warp collectives)",
                     ctaText(c), where.empty() ? "" : fmt::format(" ({})", where), cl.arrivals, cl.threads,
                     c.id[0] / cl.ctas.size(), exitedThreads, blocked);
}

} // namespace detail

std::string clusterGridError(const std::string &kernel, int clusterSize, unsigned gridX) {
  return fmt::format("simulator: kernel '{}' runs in clusters of {} CTAs along x, but the grid has {} "
                     "CTAs along x (a multiple of {} is required)",
                     kernel, clusterSize, gridX, clusterSize);
}

using namespace detail;

namespace {
Cta &peer(int rank) { return *cta().cluster->ctas[size_t(rank)]; }

std::string ctaName(const Cta &c) { return fmt::format("CTA ({}, {}, {})", c.id[0], c.id[1], c.id[2]); }
} // namespace

int clusterRank() { return cta().rank; }

int clusterSize() { return int(cta().cluster->ctas.size()); }

void inClusterCta(int rank, const char *what, uint32_t site, const std::function<void()> &f) {
  Cta &c = cta();
  if (rank < 0 || rank >= clusterSize())
    fail(site, fmt::format("{} targets CTA rank {} of a cluster of {} CTAs", what, rank, clusterSize()));
  Cta &target = peer(rank);
  if (&target == &c) {
    f();
    return;
  }
  if (exited(target))
    fail(site, fmt::format("{}: {} of the cluster has exited: its shared memory is gone", what,
                           ctaName(target)));
  // The target's view of "the current thread" is the issuer's (its number
  // names the issuer in messages); fail() restores both on an error.
  RemoteCall call{&c, &target, target.current, what};
  tRemote = &call;
  target.current = c.current;
  tCta = &target;
  f();
  tRemote = nullptr;
  target.current = call.targetCurrent;
  tCta = &c;
}

void *mapSharedAddress(const void *p, uint32_t rank, uint32_t site) {
  Cta &c = cta();
  if (rank >= uint32_t(clusterSize()))
    fail(site, fmt::format("mapa to CTA rank {} of a cluster of {} CTAs", rank, clusterSize()));
  const auto *q = static_cast<const uint8_t *>(p);
  if (q < c.shared.begin() || q >= c.shared.end())
    fail(site, fmt::format("mapa of address {:#x}, which is not in this CTA's {} bytes of shared memory",
                           reinterpret_cast<uintptr_t>(p), c.shared.size()));
  return peer(int(rank)).shared.data() + (q - c.shared.data());
}

ClusterAddress locateInCluster(const void *p, size_t bytes, const char *what, uint32_t site) {
  const auto *q = static_cast<const uint8_t *>(p);
  for (const auto &c : cta().cluster->ctas)
    if (q >= c->shared.begin() && q + bytes <= c->shared.end())
      return {c->rank, size_t(q - c->shared.data())};
  fail(site, fmt::format("{}: address {:#x} ({} bytes) is in the shared memory of no CTA of the cluster",
                         what, reinterpret_cast<uintptr_t>(p), bytes));
}

void clusterBarrierArrive(uint32_t site) {
  Cta &c = cta();
  Cluster &cl = *c.cluster;
  Thread &t = c.threads[size_t(c.current)];
  if (t.clusterArrival)
    fail(site, "barrier.cluster.arrive a second time before its barrier.cluster.wait (each thread "
               "arrives once per phase)");
  t.clusterArrival = cl.phase + 1;
  if (++cl.arrivals < cl.threads)
    return;
  // The phase completes: for the race detector, like bar.sync 0 in every
  // CTA (accesses between a thread's arrive and its wait are not ordered
  // on hardware; the simulator does not tell them apart).
  cl.arrivals = 0;
  ++cl.phase;
  for (auto &d : cl.ctas) {
    judgeUninitialisedReads(*d);
    if (!d->error.empty())
      abandonThread();
    d->fullEpoch = ++d->epoch;
    for (Thread &waiter : d->threads)
      if (waiter.state == State::AtClusterBarrier)
        waiter.state = State::Ready;
  }
}

void clusterBarrierWait(uint32_t site) {
  Cta &c = cta();
  Cluster &cl = *c.cluster;
  Thread &t = c.threads[size_t(c.current)];
  if (!t.clusterArrival)
    fail(site, "barrier.cluster.wait without a barrier.cluster.arrive since this thread's last wait");
  while (cl.phase < t.clusterArrival) {
    t.state = State::AtClusterBarrier;
    t.waitSite = site;
    yieldToScheduler();
  }
  t.clusterArrival = 0;
}

} // namespace tegula::sim
