//===- Runtime.cpp - fibers, barriers, warp collectives, memory checks ----===//
#include "simulator/Runtime.h"
#include "tegula/interrupt.h"

#include "simulator/AsyncGlobal.h"
#include "simulator/Fiber.h"
#include "simulator/RuntimeInternal.h"
#include "simulator/TensorCore.h"
#include "simulator/Tma.h"
#include "simulator/Wgmma.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sys/mman.h>
#include <tuple>

#include <fmt/format.h>

namespace tegula::sim {
namespace detail {

// The runtime's state (RuntimeInternal.h): shared with Cluster.cpp.
thread_local Cta *tCta = nullptr;
thread_local RemoteCall *tRemote = nullptr;

void yieldToScheduler() {
  Cta &c = cta();
  ++c.stats.switches;
  fiberSwitch(c.threads[size_t(c.current)].fiber, *c.scheduler);
}

void abandonThread() {
  Cta &c = cta();
  c.threads[size_t(c.current)].state = State::Failed;
  fiberSwitch(c.threads[size_t(c.current)].fiber, *c.scheduler);
  __builtin_unreachable(); // its stack is reused by the next cluster
}

bool exited(const Cta &c) {
  return std::all_of(c.threads.begin(), c.threads.end(), [](const Thread &t) { return t.state == State::Done; });
}

std::string siteText(const Cta &c, uint32_t site) {
  if (!c.config->sites || site >= c.config->sites->size())
    return "";
  const Site &s = (*c.config->sites)[site];
  return s.location.empty() ? s.what : fmt::format("{} at {}", s.what, s.location);
}

std::string ctaText(const Cta &c) {
  return fmt::format("kernel '{}', CTA ({}, {}, {})", c.config->kernel, c.id[0], c.id[1], c.id[2]);
}

std::string describeThread(int tid) {
  if (tid == kAsyncProxyWriter)
    return "the async proxy (cp.async.bulk.tensor)";
  return fmt::format("thread {} (warp {}, lane {})", tid, tid / kWarpSize, tid % kWarpSize);
}

std::string errorText(const Cta &c, int thread, uint32_t site, const std::string &message) {
  std::string where = siteText(c, site);
  return fmt::format("{}, {}: {}{}", ctaText(c), describeThread(thread), message,
                     where.empty() ? "" : fmt::format(" [{}]", where));
}

void judgeUninitialisedReads(Cta &c) {
  for (const PendingRead &r : c.uninitialisedReads)
    if (c.shadow[r.offset].writeEpoch < c.firstEpoch) {
      c.error = errorText(c, r.thread, r.site,
                          fmt::format("reads shared byte {}, which no thread of this CTA had written", r.offset));
      break;
    }
  c.uninitialisedReads.clear();
}

} // namespace detail

using namespace detail;

namespace {

[[noreturn]] void threadMain() {
  Cta &c = cta();
  c.entry(c.args);
  wgmmaThreadExit();
  bulkStoreThreadExit();
  cpAsyncThreadExit();
  c.threads[size_t(c.current)].state = State::Done;
  fiberSwitch(c.threads[size_t(c.current)].fiber, *c.scheduler);
  __builtin_unreachable(); // a finished thread is never resumed
}

/// Whether thread `them`'s access in epoch `when` is ordered before the
/// current access of thread `me`: a barrier of every thread began since, or
/// a named barrier both took part in.
bool ordered(const Cta &c, uint16_t them, uint16_t me, uint32_t when) {
  if (when < c.fullEpoch)
    return true;
  for (uint16_t ids = c.namedUsed; ids; ids &= uint16_t(ids - 1)) {
    const int id = std::countr_zero(ids);
    if (c.passed[me][size_t(id)] > when && c.passed[them][size_t(id)] > when)
      return true;
  }
  return false;
}

/// A shared byte's previous access that conflicts with this one, if any.
void raceCheck(Cta &c, size_t offset, size_t bytes, AccessKind kind, uint32_t site) {
  const bool write = kind != AccessKind::Read, atomic = kind == AccessKind::Atomic;
  auto tid = uint16_t(c.current);
  for (size_t i = offset; i < offset + bytes; ++i) {
    Shadow &s = c.shadow[i];
    auto report = [&](const char *theirKind, uint16_t them, uint32_t theirSite) {
      fail(site, fmt::format(
                     "shared-memory race on byte {}: {} {} it here, {} {} it at {}, and no barrier "
                     "both passed since orders the two",
                     i, describeThread(tid), atomic ? "atomically updates" : write ? "writes" : "reads", describeThread(them),
                     theirKind, siteText(c, theirSite)));
    };
    // Accesses over a bulk copy's bytes are ordered by its mbarrier, once
    // this thread has waited for it (checkTmaWrite, Tma.h).
    const bool unorderedWrite =
        s.writer != tid && s.writer != kAsyncProxyWriter && !ordered(c, s.writer, tid, s.writeEpoch);
    // An atomic earlier than the recorded one, unordered with it, races with
    // any plain access.
    if (!atomic && s.otherAtomic != 0xffff && s.otherAtomic != tid && !ordered(c, s.otherAtomic, tid, s.writeEpoch))
      report("atomically updated", s.otherAtomic, s.writeSite);
    if (write) {
      if (unorderedWrite && !(atomic && s.atomicWrite)) // atomics of one location do not race
        report(s.atomicWrite ? "atomically updated" : "wrote", s.writer, s.writeSite);
      if (s.reader != tid && !ordered(c, s.reader, tid, s.readEpoch))
        report("read", s.reader, s.readSite);
      if (s.otherReader != 0xffff && s.otherReader != tid && !ordered(c, s.otherReader, tid, s.readEpoch))
        report("read", s.otherReader, s.readSite);
      // A thread's atomic after its own plain write of this interval keeps
      // the plain write on record (another thread's atomic races with it);
      // an atomic after another's unordered atomic keeps that one too.
      if (atomic && !s.atomicWrite && s.writer == tid && s.writeEpoch == c.epoch)
        continue;
      s.otherAtomic = atomic && s.atomicWrite && unorderedWrite ? s.writer : uint16_t(0xffff);
      s.writer = tid, s.writeEpoch = c.epoch, s.writeSite = site, s.atomicWrite = atomic;
    } else {
      if (s.writeEpoch < c.firstEpoch && c.uninitialisedReads.size() < 4096)
        c.uninitialisedReads.push_back({i, int(tid), site});
      if (unorderedWrite)
        report(s.atomicWrite ? "atomically updated" : "wrote", s.writer, s.writeSite);
      // The previous reader is forgotten once it is ordered before this one
      // (a later writer is ordered after both then); otherwise both are kept.
      if (s.reader == tid || ordered(c, s.reader, tid, s.readEpoch))
        s.reader = tid, s.readEpoch = c.epoch, s.readSite = site, s.otherReader = 0xffff;
      else
        s.otherReader = tid;
    }
  }
}

void checkGlobal(Cta &c, uintptr_t p, size_t bytes, AccessKind kind, uint32_t site) {
  const std::vector<Buffer> &buffers = c.config->buffers;
  // Buffers are sorted by start: the candidate is the last one starting at or before p.
  auto it = std::upper_bound(buffers.begin(), buffers.end(), p,
                             [](uintptr_t v, const Buffer &b) { return v < b.begin; });
  const char *verb = kind == AccessKind::Read ? "reads" : kind == AccessKind::Write ? "writes" : "atomically updates";
  if (it == buffers.begin() || p + bytes > std::prev(it)->end) {
    // Addresses do not say which buffer a pointer came from: a near miss is
    // named as the buffer's overrun, a far one only as where it landed.
    constexpr uintptr_t kNear = 4096;
    std::string nearest;
    if (it != buffers.begin() && p + bytes - std::prev(it)->end <= kNear) {
      const Buffer &b = *std::prev(it);
      nearest = fmt::format(" ({} bytes past the end of '{}', which has {} bytes)",
                            p + bytes - b.end, b.name, b.end - b.begin);
    } else if (it != buffers.end() && it->begin - p <= kNear) {
      nearest = fmt::format(" ({} bytes before the start of '{}')", it->begin - p, it->name);
    } else {
      nearest = " (far from every one: a pointer into an empty buffer, or offsets far too large?)";
    }
    fail(site, fmt::format("{} {} bytes out of bounds of every launch buffer{}", verb, bytes, nearest));
  }
  const Buffer &b = *std::prev(it);
  if (kind != AccessKind::Read && b.readonly)
    fail(site, fmt::format("{} read-only buffer '{}' at byte {}",
                           verb, b.name, p - b.begin));
}

/// All of `c`'s threads wait at bar.sync 0: release them (a new barrier
/// interval for the race detector).
bool releaseFullBarrier(Cta &c) {
  for (const Thread &t : c.threads)
    if (t.state != State::AtBarrier || t.barrierId != 0)
      return false;
  judgeUninitialisedReads(c);
  if (!c.error.empty())
    return true;
  c.fullEpoch = ++c.epoch;
  for (Thread &t : c.threads)
    t.state = State::Ready;
  return true;
}

/// Why no thread of `c` can run: who waits where.
std::string deadlockText(const Cta &c) {
  int atBarrier = 0, done = 0, inCollective = 0;
  for (const Thread &t : c.threads) {
    atBarrier += t.state == State::AtBarrier && t.barrierId == 0;
    done += t.state == State::Done;
    inCollective += t.state == State::InCollective;
  }
  int n = int(c.threads.size());
  std::string message;
  int named = 0;
  uint32_t namedId = 0, namedSite = 0;
  for (const Thread &t : c.threads)
    if (t.state == State::AtBarrier && t.barrierId != 0)
      ++named, namedId = t.barrierId, namedSite = t.waitSite;
  if (atBarrier > 0) {
    uint32_t site = 0;
    for (const Thread &t : c.threads)
      if (t.state == State::AtBarrier && t.barrierId == 0)
        site = t.waitSite;
    message = fmt::format("deadlock: barrier {} reached by {} of {} threads ({} exited, {} wait "
                          "in warp collectives, {} at named barriers)",
                          siteText(c, site), atBarrier, n, done, inCollective, named);
  } else if (named > 0) {
    message = fmt::format("deadlock: named barrier {} ({}) reached by {} of the {} threads it "
                          "waits for ({} exited)",
                          namedId, siteText(c, namedSite), c.namedArrivals[namedId],
                          c.namedCounts[namedId], done);
  } else {
    for (size_t w = 0; w < c.warps.size() && message.empty(); ++w) {
      const Collective &col = c.warps[w];
      if (!col.kind)
        continue;
      uint32_t missing = col.mask & ~col.arrived;
      message = fmt::format(
          "deadlock: {} in warp {} at {} with member mask {:#010x} waits for lanes {:#010x}, "
          "which exited or wait elsewhere",
          col.kind, w, siteText(c, col.site), col.mask, missing);
    }
  }
  return fmt::format("{}: {}", ctaText(c), message);
}

/// No thread of the cluster can run: release every CTA whose bar.sync 0 is
/// complete, or report the deadlock (on a CTA's error).
void resolveBlocked(Cluster &cl) {
  bool released = false;
  for (auto &c : cl.ctas)
    released |= releaseFullBarrier(*c);
  if (released)
    return;
  // A cluster barrier some thread never reaches is the likely cause.
  for (auto &c : cl.ctas)
    for (const Thread &t : c->threads)
      if (t.state == State::AtClusterBarrier) {
        c->error = clusterBarrierDeadlock(cl, *c, t.waitSite);
        return;
      }
  for (auto &c : cl.ctas)
    if (!exited(*c)) {
      c->error = deadlockText(*c);
      return;
    }
}

/// A CTA's state at its start.
void resetCta(Cta &c) {
  std::fill(c.shared.begin(), c.shared.end(), uint8_t(0xff)); // NaN / -1: garbage shows
  std::fill(c.proxyWrites.begin(), c.proxyWrites.end(), ProxyWrite{});
  std::fill(c.asyncReads.begin(), c.asyncReads.end(), uint16_t(0));
  std::fill(c.proxyFences.begin(), c.proxyFences.end(), 0u);
  c.firstEpoch = c.epoch = c.fullEpoch = c.epoch + 1;
  c.namedUsed = 0;
  c.passed.assign(c.threads.size(), {});
  c.uninitialisedReads.clear();
  for (Collective &w : c.warps)
    w = Collective{};
  c.namedArrivals.fill(0);
  c.warpRegisters.assign((c.warps.size() + 3) / 4, c.config->maxRegisters);
  c.freeRegisters = 0;
  c.registerWaits = 0;
  c.registerRequest.clear();
  for (auto &e : c.extensions)
    e.reset();
  for (size_t t = 0; t < c.threads.size(); ++t) {
    Thread &th = c.threads[t];
    th.state = State::Ready;
    th.clusterArrival = 0;
    for (auto &e : th.extensions)
      e.reset();
    fiberInit(th.fiber, th.stack + kGuardBytes, kStackBytes - kGuardBytes, threadMain);
  }
  c.stats.threads += c.threads.size();
}

const std::string *firstError(const Cluster &cl) {
  for (const auto &c : cl.ctas)
    if (!c->error.empty())
      return &c->error;
  return nullptr;
}

/// Run the CTAs of one cluster (`firstCta`: the linear index of its first CTA) to completion
/// or the first error: all their threads in one scheduling loop.
void runCluster(Cluster &cl, uint64_t firstCta) {
  for (auto &c : cl.ctas)
    resetCta(*c);
  cl.phase = cl.arrivals = 0;
  const LaunchConfig &config = *cl.ctas[0]->config;
  const Schedule schedule = config.schedule;
  const size_t perCta = cl.ctas[0]->threads.size(), n = perCta * cl.ctas.size();
  cl.threads = uint32_t(n);
  // The threads in the order they are preferred: the cluster's threads
  // numbered CTA after CTA.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (schedule == Schedule::HighestFirst)
    std::reverse(order.begin(), order.end());
  if (schedule == Schedule::Shuffled) {
    std::mt19937_64 rng(config.scheduleSeed * 0x9e3779b97f4a7c15ull + firstCta);
    std::shuffle(order.begin(), order.end(), rng);
  }
  struct Slot {
    Cta *cta;
    Thread *thread;
    int index;
  };
  std::vector<Slot> slots(n);
  for (size_t i = 0; i < n; ++i) {
    Cta *c = cl.ctas[order[i] / perCta].get();
    const int t = int(order[i] % perCta);
    slots[i] = {c, &c->threads[size_t(t)], t};
  }
  for (;;) {
    if (interrupt_requested()) { // Ctrl-C in Python: stop this round; the launch says why
      cl.interrupted = true;
      return;
    }
    bool ran = false;
    for (const Slot &s : slots) {
      if (s.thread->state != State::Ready)
        continue;
      ran = true;
      Cta &c = *s.cta;
      c.current = s.index;
      tCta = &c;
      ++c.stats.switches;
      fiberSwitch(cl.scheduler, s.thread->fiber);
      if (firstError(cl))
        return;
      // A thread that blocked: back to the first ready thread of the
      // preferred end. One that yielded while spinning (a failed
      // mbarrier.try_wait) lets the others run first, as the hardware would.
      if (schedule != Schedule::RoundRobin && s.thread->state != State::Ready)
        break;
    }
    if (ran) {
      // A CTA whose threads all wait at bar.sync 0 while a peer's spin (on
      // an mbarrier it will complete after the barrier) goes on at once.
      if (cl.ctas.size() > 1) {
        for (auto &c : cl.ctas)
          releaseFullBarrier(*c);
        if (firstError(cl))
          return;
      }
      continue;
    }
    if (std::all_of(cl.ctas.begin(), cl.ctas.end(), [](const auto &c) { return exited(*c); })) {
      for (auto &c : cl.ctas) {
        judgeUninitialisedReads(*c);
        if (c->profile)
          c->profile->finishCta();
      }
      return;
    }
    resolveBlocked(cl);
    if (firstError(cl))
      return;
  }
}

} // namespace

std::shared_ptr<void> &threadExtension(ThreadExtension which) {
  return cta().threads[size_t(cta().current)].extensions[size_t(which)];
}

std::shared_ptr<void> &ctaExtension(CtaExtension which) {
  return cta().extensions[size_t(which)];
}

void yieldThread() { yieldToScheduler(); }

std::string siteDescription(uint32_t site) { return siteText(cta(), site); }

void asyncProxyWrote(const void *p, size_t bytes, uint32_t site) {
  Cta &c = cta();
  const size_t offset = size_t(static_cast<const uint8_t *>(p) - c.shared.data());
  for (size_t i = offset; i < offset + bytes && i < c.shadow.size(); ++i) {
    Shadow &s = c.shadow[i];
    s.writer = kAsyncProxyWriter, s.writeEpoch = c.epoch, s.writeSite = site;
    // The copy supersedes the earlier generic reads: a ring's protocol
    // issues it once they are done (their threads released the stage, which
    // the producer waited for), so a later write of another thread, ordered
    // after the copy by its mbarrier, does not race them. (A copy that
    // overtakes a generic read is not caught here; one under a wgmma still
    // reading is, by the wgmma model.)
    s.reader = 0, s.readEpoch = 0, s.otherReader = 0xffff;
    c.proxyWrites[i] = ProxyWrite{};
  }
}

int laneId() { return cta().current % kWarpSize; }
int threadId() { return cta().current; }

int32_t specialRegister(SpecialRegister r) {
  Cta &c = cta();
  const Grid &g = c.config->grid;
  switch (r) {
  case SpecialRegister::TidX: return c.current;
  case SpecialRegister::TidY:
  case SpecialRegister::TidZ: return 0;
  case SpecialRegister::NTidX: return c.config->threads;
  case SpecialRegister::NTidY:
  case SpecialRegister::NTidZ: return 1;
  case SpecialRegister::CtaIdX: return int32_t(c.id[0]);
  case SpecialRegister::CtaIdY: return int32_t(c.id[1]);
  case SpecialRegister::CtaIdZ: return int32_t(c.id[2]);
  case SpecialRegister::NCtaIdX: return int32_t(g.x);
  case SpecialRegister::NCtaIdY: return int32_t(g.y);
  case SpecialRegister::NCtaIdZ: return int32_t(g.z);
  case SpecialRegister::LaneId: return c.current % kWarpSize;
  case SpecialRegister::WarpId: return c.current / kWarpSize;
  case SpecialRegister::NWarpId: return (c.config->threads + kWarpSize - 1) / kWarpSize;
  }
  fail(0, fmt::format("unknown special register {}", int(r)));
}

void barrier(uint32_t site) {
  Cta &c = cta();
  Thread &t = c.threads[size_t(c.current)];
  t.state = State::AtBarrier;
  t.waitSite = site;
  t.barrierId = 0;
  yieldToScheduler();
}

void namedBarrier(uint32_t id, uint32_t count, uint32_t site) {
  Cta &c = cta();
  if (id == 0 || id > 15)
    fail(site, fmt::format("bar.sync {}: named barriers are 1 to 15 here (0 is every thread's)", id));
  if (count == 0 || count % kWarpSize != 0 || count > uint32_t(c.threads.size()))
    fail(site, fmt::format("bar.sync {}, {}: the count must be a positive multiple of 32, at most "
                           "the CTA's {} threads",
                           id, count, c.threads.size()));
  if (c.namedArrivals[id] == 0)
    c.namedCounts[id] = count;
  else if (c.namedCounts[id] != count)
    fail(site, fmt::format("bar.sync {}, {} while other threads wait there for {}", id, count,
                           c.namedCounts[id]));
  Thread &t = c.threads[size_t(c.current)];
  t.state = State::AtBarrier;
  t.waitSite = site;
  t.barrierId = id;
  if (++c.namedArrivals[id] < count) {
    yieldToScheduler();
    return;
  }
  // The last arrival releases the others: a new barrier interval for the
  // race detector (an over-approximation of the threads it orders).
  c.namedArrivals[id] = 0;
  judgeUninitialisedReads(c);
  if (!c.error.empty()) // judged: abandon this thread as fail() does
    abandonThread();
  ++c.epoch;
  c.namedUsed |= uint16_t(1u << id);
  for (size_t t = 0; t < c.threads.size(); ++t)
    if (c.threads[t].state == State::AtBarrier && c.threads[t].barrierId == id) {
      c.threads[t].state = State::Ready;
      c.passed[t][id] = c.epoch;
    }
}

void setMaxRegisters(bool increase, uint32_t count, uint32_t site) {
  Cta &c = cta();
  const char *name = increase ? "setmaxnreg.inc" : "setmaxnreg.dec";
  if (c.config->maxRegisters == 0)
    fail(site, fmt::format("{} in a kernel that declares no per-thread register count (.maxnreg): the "
                           "register pool it moves registers in is undefined",
                           name));
  // A warpgroup's registers move together: its first thread does the
  // accounting, the others wait until it is done.
  const int group = c.current / (4 * kWarpSize), first = group * 4 * kWarpSize;
  const int groupThreads = std::min<int>(4 * kWarpSize, int(c.threads.size()) - first);
  if (c.current != first) {
    while (increase && c.warpRegisters[size_t(group)] < int(count))
      yieldToScheduler(); // the first thread reports a deadlock
    return;
  }
  const int current = c.warpRegisters[size_t(group)];
  if (increase ? int(count) < current : int(count) > current)
    fail(site, fmt::format("{} {} in warpgroup {}, which holds {} registers per thread", name, count, group,
                           current));
  const int64_t delta = int64_t(groupThreads) * (int64_t(count) - current);
  while (increase && c.freeRegisters < delta) {
    c.registerRequest = fmt::format("warpgroup {} waits in {} {} for {} registers; the CTA's pool ({} threads x "
                                    ".maxnreg {}) has {} free",
                                    group, name, count, delta, c.threads.size(), c.config->maxRegisters,
                                    c.freeRegisters);
    if (++c.registerWaits > 1'000'000)
      fail(site, fmt::format("deadlock: {}, and no warpgroup gives more back", c.registerRequest));
    yieldToScheduler();
  }
  c.registerRequest.clear();
  c.registerWaits = 0;
  c.freeRegisters -= delta;
  c.warpRegisters[size_t(group)] = int(count);
}

std::string pendingRegisterRequest() { return cta().registerRequest; }

void warpCollective(const char *kind, uint32_t site, uint32_t mask, void *io,
                    const std::function<void(void *const ios[kWarpSize])> &complete) {
  Cta &c = cta();
  int lane = laneId(), warp = c.current / kWarpSize;
  uint32_t bit = 1u << lane;
  if (!(mask & bit))
    fail(site, fmt::format("{} with member mask {:#010x} executed by lane {}, which is not a member",
                           kind, mask, lane));
  // Lanes past the end of a partial last warp do not exist.
  int lanesInWarp = std::min(kWarpSize, c.config->threads - warp * kWarpSize);
  uint32_t existing = lanesInWarp == 32 ? ~0u : (1u << lanesInWarp) - 1;
  if (mask & ~existing)
    fail(site, fmt::format("{} names lanes {:#010x} that this warp does not have", kind,
                           mask & ~existing));
  Collective &col = c.warps[size_t(warp)];
  if (!col.kind) {
    col.kind = kind, col.site = site, col.mask = mask, col.arrived = 0;
    std::fill(std::begin(col.ios), std::end(col.ios), nullptr);
  } else if (col.mask != mask || std::strcmp(col.kind, kind) != 0 || col.site != site) {
    fail(site, fmt::format("lane {} meets {} with member mask {:#010x}, but other lanes of "
                           "warp {} are in {} at {} with mask {:#010x}",
                           lane, kind, mask, warp, col.kind, siteText(c, col.site), col.mask));
  }
  col.ios[lane] = io;
  col.arrived |= bit;
  if (col.arrived != col.mask) {
    c.threads[size_t(c.current)].state = State::InCollective;
    c.threads[size_t(c.current)].waitSite = site;
    yieldToScheduler();
    return; // the last lane to arrive has completed the operation
  }
  complete(col.ios);
  for (int l = 0; l < kWarpSize; ++l)
    if (col.mask & (1u << l) && l != lane)
      c.threads[size_t(warp * kWarpSize + l)].state = State::Ready;
  col = Collective{};
}

void checkAccess(const void *p, size_t bytes, AccessKind kind, Space space, uint32_t site) {
  Cta &c = cta();
  auto addr = reinterpret_cast<uintptr_t>(p);
  // PTX requires naturally aligned accesses (a vector access: its whole size).
  if (bytes && (bytes & (bytes - 1)) == 0 && addr % bytes != 0)
    fail(site, fmt::format("makes a misaligned {}-byte access (address {:#x})", bytes, addr));
  if (space == Space::Global) {
    ++c.stats.globalAccesses;
    checkGlobal(c, addr, bytes, kind, site);
    checkAsyncGlobal(addr, bytes, kind, site);
    return;
  }
  ++c.stats.sharedAccesses;
  auto base = reinterpret_cast<uintptr_t>(c.shared.data());
  if (addr < base || addr + bytes > base + c.shared.size())
    fail(site, fmt::format("accesses {} bytes at shared offset {} outside the CTA's {} bytes of shared memory", bytes,
                           int64_t(addr - base), c.shared.size()));
  if (c.config->detectRaces)
    raceCheck(c, addr - base, bytes, kind, site);
  if (kind == AccessKind::Read)
    checkTmaRead(addr - base, bytes, site);
  else
    checkTmaWrite(addr - base, bytes, site);
  if (kind != AccessKind::Read) {
    for (size_t i = 0; i < bytes; ++i)
      if (c.asyncReads[addr - base + i])
        fail(site, fmt::format("writes shared byte {}, which the asynchronous read at {} may "
                               "still be reading (no wgmma.wait_group, or for a bulk store "
                               "cp.async.bulk.wait_group.read, has completed it)",
                               addr - base + i,
                               siteText(c, c.asyncReadSites[addr - base + i])));
    const ProxyWrite w{uint32_t(c.current) + 1, c.proxyFences[size_t(c.current)], site};
    std::fill_n(c.proxyWrites.begin() + ptrdiff_t(addr - base), bytes, w);
  }
}

void profileAccess(const void *p, size_t bytes, AccessKind kind, Space space, uint32_t site) {
  Cta &c = cta();
  if (!c.profile)
    return;
  auto address = reinterpret_cast<uintptr_t>(p);
  if (space == Space::Global) {
    // Sectors as on the GPU, whose allocations start 256-byte aligned: the
    // offset in the launch buffer (host vectors may start anywhere mod 32),
    // each buffer in a window of its own.
    const std::vector<Buffer> &buffers = c.config->buffers;
    auto it = std::upper_bound(buffers.begin(), buffers.end(), address,
                               [](uintptr_t v, const Buffer &b) { return v < b.begin; });
    if (it != buffers.begin())
      address = (uintptr_t(it - buffers.begin()) << 40) + (address - std::prev(it)->begin);
  }
  c.profile->access(c.current, site, address, bytes, space, kind);
}

void profileRequest(uint32_t site, std::span<const LanePart> parts, Space space, AccessKind kind) {
  Cta &c = cta();
  if (c.profile)
    c.profile->request(site, parts, space, kind);
}

void asyncReadBegin(const void *p, size_t bytes, uint32_t site) {
  Cta &c = cta();
  const size_t offset = size_t(static_cast<const uint8_t *>(p) - c.shared.data());
  for (size_t i = offset; i < offset + bytes && i < c.asyncReads.size(); ++i) {
    ++c.asyncReads[i];
    c.asyncReadSites[i] = site;
  }
}

void asyncReadEnd(const void *p, size_t bytes) {
  Cta &c = cta();
  const size_t offset = size_t(static_cast<const uint8_t *>(p) - c.shared.data());
  for (size_t i = offset; i < offset + bytes && i < c.asyncReads.size(); ++i)
    if (c.asyncReads[i])
      --c.asyncReads[i];
}

void fenceProxyAsync() {
  Cta &c = cta();
  ++c.proxyFences[size_t(c.current)];
}

namespace {
/// checkAsyncProxyRead / Write: `verb` is "reads" or "writes".
void checkAsyncProxyAccess(const void *p, size_t bytes, const char *who, const char *verb, uint32_t site) {
  Cta &c = cta();
  auto addr = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(c.shared.data());
  if (addr < base || addr + bytes > base + c.shared.size())
    fail(site, fmt::format("{} {} {} bytes at shared offset {} outside the CTA's {} bytes of "
                           "shared memory",
                           who, verb, bytes, int64_t(addr - base), c.shared.size()));
  for (size_t i = 0; i < bytes; ++i) {
    const ProxyWrite &w = c.proxyWrites[addr - base + i];
    if (w.writer && c.proxyFences[w.writer - 1] == w.fences)
      fail(site, fmt::format("{} {} shared byte {}, which {} wrote at {} without a "
                             "fence.proxy.async.shared::cta since: {}",
                             who, verb, addr - base + i, describeThread(int(w.writer - 1)),
                             siteText(c, w.site),
                             std::string(verb) == "reads"
                                 ? "the async proxy (tensor cores, TMA) may read the old value"
                                 : "that write may land after the async proxy's"));
  }
}
} // namespace

void checkAsyncProxyRead(const void *p, size_t bytes, const char *reader, uint32_t site) {
  checkAsyncProxyAccess(p, bytes, reader, "reads", site);
}

void checkAsyncProxyWrite(const void *p, size_t bytes, const char *writer, uint32_t site) {
  checkAsyncProxyAccess(p, bytes, writer, "writes", site);
}

uint8_t *sharedBase() { return cta().shared.data(); }
size_t sharedBytes() { return cta().shared.size(); }

void fail(uint32_t site, const std::string &message) {
  if (tRemote) { // acting on a peer CTA (inClusterCta): the issuing thread fails
    const RemoteCall call = *tRemote;
    tRemote = nullptr;
    call.target->current = call.targetCurrent;
    tCta = call.issuer;
    Cta &c = cta();
    c.error = errorText(c, c.current, site,
                        fmt::format("{} on CTA ({}, {}, {}) (cluster rank {}): {}", call.what,
                                    call.target->id[0], call.target->id[1], call.target->id[2],
                                    call.target->rank, message));
    abandonThread();
  }
  Cta &c = cta();
  c.error = errorText(c, c.current, site, message);
  abandonThread(); // its stack is reused by the next cluster
}

RunStats runGrid(const LaunchConfig &config, void (*entry)(void **), void **args) {
  if (config.threads <= 0 || config.threads > 1024)
    throw Error(fmt::format("simulator: {} threads per CTA (1..1024 allowed)", config.threads));
  const int clusterSize = std::max(config.clusterSize, 1);
  if (clusterSize > 16)
    throw Error(fmt::format("simulator: clusters of {} CTAs (at most 16)", clusterSize));
  if (config.grid.x % unsigned(clusterSize) != 0)
    throw Error(clusterGridError(config.kernel, clusterSize, config.grid.x));
  Cluster cl;
  const size_t threads = size_t(config.threads);
  size_t mapBytes = kStackBytes * threads * size_t(clusterSize);
  void *stacks = mmap(nullptr, mapBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (stacks == MAP_FAILED)
    throw Error(fmt::format("simulator: cannot map {} MiB of fiber stacks", mapBytes >> 20));
  struct Unmap {
    void *p; size_t n;
    ~Unmap() { munmap(p, n); }
  } unmap{stacks, mapBytes};
  for (int r = 0; r < clusterSize; ++r) {
    auto c = std::make_unique<Cta>();
    c->config = &config;
    c->entry = entry;
    c->args = args;
    c->scheduler = &cl.scheduler;
    c->cluster = &cl;
    c->rank = r;
    c->threads.resize(threads);
    c->warps.resize(size_t((config.threads + kWarpSize - 1) / kWarpSize));
    c->shared.resize(config.sharedBytes);
    c->shadow.resize(config.sharedBytes);
    c->proxyWrites.resize(config.sharedBytes);
    c->asyncReads.resize(config.sharedBytes);
    c->asyncReadSites.resize(config.sharedBytes);
    c->proxyFences.resize(threads);
    if (config.profileMemory)
      c->profile = std::make_unique<MemoryProfile>(threads);
    for (size_t t = 0; t < threads; ++t) {
      c->threads[t].stack = static_cast<char *>(stacks) + (size_t(r) * threads + t) * kStackBytes;
      mprotect(c->threads[t].stack, kGuardBytes, PROT_NONE); // overflow faults, never corrupts
    }
    cl.ctas.push_back(std::move(c));
  }

  Cta *saved = tCta;
  uint64_t ctas = 0;
  const uint64_t clustersX = config.grid.x / unsigned(clusterSize);
  const uint64_t clusters = clustersX * config.grid.y * config.grid.z;
  for (uint64_t i = 0; i < clusters && !firstError(cl) && !cl.interrupted; ++i) {
    if (interrupt_requested()) {
      cl.interrupted = true;
      break;
    }
    const uint64_t k = config.lastCtaFirst ? clusters - 1 - i : i; // x fastest, then y, then z
    const uint32_t x = uint32_t(k % clustersX) * unsigned(clusterSize);
    const uint32_t y = uint32_t(k / clustersX % config.grid.y), z = uint32_t(k / clustersX / config.grid.y);
    for (int r = 0; r < clusterSize; ++r) {
      Cta &c = *cl.ctas[size_t(r)];
      c.id[0] = x + unsigned(r), c.id[1] = y, c.id[2] = z;
    }
    runCluster(cl, k * unsigned(clusterSize)); // Shuffled's seed: the CTA's place, not its turn
    ctas += unsigned(clusterSize);
  }
  tCta = saved;
  if (const std::string *error = firstError(cl))
    throw Error(*error);
  if (cl.interrupted)
    throw Interrupted(fmt::format("simulated launch interrupted after {} of {} CTAs", ctas,
                                  clusters * unsigned(clusterSize)));
  RunStats stats;
  stats.ctas = ctas;
  for (const auto &c : cl.ctas) {
    stats.threads += c->stats.threads;
    stats.switches += c->stats.switches;
    stats.globalAccesses += c->stats.globalAccesses;
    stats.sharedAccesses += c->stats.sharedAccesses;
  }
  if (config.profileMemory) { // the cluster's CTAs' sites, added up
    std::map<std::tuple<uint32_t, Space, AccessKind>, SiteTraffic> bySite;
    for (const auto &c : cl.ctas)
      for (const SiteTraffic &t : c->profile->totals()) {
        SiteTraffic &sum = bySite.try_emplace({t.site, t.space, t.kind}, SiteTraffic{t.site, t.space, t.kind}).first->second;
        sum.requests += t.requests, sum.bytes += t.bytes, sum.transactions += t.transactions, sum.ideal += t.ideal;
      }
    for (auto &[key, t] : bySite)
      stats.traffic.push_back(t);
  }
  return stats;
}

} // namespace tegula::sim
