//===- Tma.cpp - mbarriers and TMA bulk tensor copies in the simulator ----===//
#include "simulator/Tma.h"

#include "simulator/AsyncGlobal.h"

#include "simulator/Runtime.h"
#include "tegula/dtype.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

namespace tegula::sim {
namespace {

/// The simulator's tensor map: what cuTensorMapEncodeTiled would take.
struct SimTensorMap {
  static constexpr uint32_t kMagic = 0x4d544754; // "TGTM"
  uint32_t magic = kMagic;
  uint32_t rank = 0, elementBytes = 0;
  uint16_t swizzle = 0; // bytes: 0, 32, 64, 128
  uint16_t tf32 = 0;    // f32 elements land rounded to tf32 (CU_TENSOR_MAP_DATA_TYPE_TFLOAT32)
  uint64_t address = 0;
  uint64_t shape[5] = {}, strideBytes[5] = {}; // outermost first
  uint32_t box[5] = {};
};
static_assert(sizeof(SimTensorMap) <= sizeof(runtime::TensorMapBytes::bytes));

struct Barrier {
  uint32_t count = 0, pending = 0;
  int64_t tx = 0;
  uint32_t completions = 0; // phases completed since init
  uint32_t site = 0;        // its mbarrier.init
};

/// A bulk copy's bytes [begin, end) of shared memory, owned by the async
/// proxy until the phase `completion` of the barrier at `barrier` completes.
struct Copy {
  size_t begin = 0, end = 0, barrier = 0;
  uint32_t completion = 0, site = 0;
};

/// A bulk store's read of shared memory, in flight until its group is
/// waited for.
struct BulkRead {
  const void *src;
  size_t bytes;
};

/// A run of a bulk store's global writes, as the box read them from shared
/// memory: performed when its group's writes are waited for (or its thread
/// exits), the bytes in use until then (AsyncGlobal.h).
struct BulkWrite {
  uint8_t *to;
  std::vector<uint8_t> bytes;
  uint64_t token;
};

struct State {
  std::map<size_t, Barrier> barriers; // by shared offset
  // Per thread: bulk stores not yet committed, then committed groups - their
  // reads of shared memory and their writes of global memory, group by group.
  std::map<int, std::vector<BulkRead>> uncommitted;
  std::map<int, std::vector<std::vector<BulkRead>>> bulkGroups;
  std::map<int, std::vector<BulkWrite>> uncommittedWrites;
  std::map<int, std::vector<std::vector<BulkWrite>>> writeGroups;
  std::vector<uint32_t> owner;        // per shared byte: copy index + 1, or 0
  std::vector<uint8_t> inBarrier;     // per shared byte: part of a live mbarrier
  std::vector<Copy> copies;
  std::map<std::pair<int, size_t>, uint32_t> observed; // (thread, barrier) -> completions seen
  uint64_t failedWaits = 0;
};

State *existingState() {
  return static_cast<State *>(ctaExtension(CtaExtension::Tma).get());
}

State &state() {
  std::shared_ptr<void> &ext = ctaExtension(CtaExtension::Tma);
  if (!ext) {
    auto s = std::make_shared<State>();
    s->owner.assign(sharedBytes(), 0);
    s->inBarrier.assign(sharedBytes(), 0);
    ext = s;
  }
  return *static_cast<State *>(ext.get());
}

size_t offsetOf(const void *p, size_t bytes, const char *what, uint32_t site) {
  const auto *q = static_cast<const uint8_t *>(p);
  if (q < sharedBase() || q + bytes > sharedBase() + sharedBytes())
    fail(site, fmt::format("{} at an address outside the CTA's {} bytes of shared memory", what,
                           sharedBytes()));
  return size_t(q - sharedBase());
}

Barrier &barrierAt(State &s, void *bar, const char *what, uint32_t site) {
  size_t offset = offsetOf(bar, 8, what, site);
  if (offset % 8 != 0)
    fail(site, fmt::format("{}: the mbarrier at shared offset {} is not 8-byte aligned", what, offset));
  auto it = s.barriers.find(offset);
  if (it == s.barriers.end())
    fail(site, fmt::format("{} uses the mbarrier at shared offset {}, which no mbarrier.init "
                           "initialised (or which was invalidated)",
                           what, offset));
  return it->second;
}

/// Anything but an mbarrier operation on a live mbarrier's bytes: the PTX
/// ISA lets its memory serve another purpose only after mbarrier.inval
/// (a buffer placed over barriers that are still in use, say).
void checkNotInBarrier(const State &s, size_t offset, size_t bytes, const char *what, uint32_t site) {
  for (size_t i = offset; i < offset + bytes && i < s.inBarrier.size(); ++i)
    if (s.inBarrier[i]) {
      const size_t bar = i / 8 * 8;
      fail(site, fmt::format("{} shared byte {}, part of the mbarrier at shared offset {} (initialised at {}) "
                             "that no mbarrier.inval has ended: its memory may serve nothing else while it lives",
                             what, i, bar, siteDescription(s.barriers.at(bar).site)));
    }
}

/// The copies of a barrier that is (re)initialised or invalidated are over:
/// their bytes are ordinary shared memory again.
void releaseCopies(State &s, size_t barrier) {
  for (size_t i = 0; i < s.copies.size(); ++i) {
    Copy &c = s.copies[i];
    if (c.barrier != barrier || c.begin == c.end)
      continue;
    for (size_t b = c.begin; b < c.end; ++b)
      if (s.owner[b] == i + 1)
        s.owner[b] = 0;
    c.begin = c.end = 0;
  }
  for (auto it = s.observed.begin(); it != s.observed.end();)
    it = it->first.second == barrier ? s.observed.erase(it) : std::next(it);
}

void completeIfDone(Barrier &b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.completions;
    b.pending = b.count;
  }
}

/// Calls visit(shared offset in the box's placement, global address or 0
/// when outside the tensor) for each element of the box at `coords`
/// (innermost first, as in PTX) whose shared copy starts at `offset`.
template <class F>
void forEachBoxElement(const SimTensorMap &map, const int32_t *coords, int rank, uint64_t offset,
                       F visit) {
  size_t elements = 1;
  for (int d = 0; d < rank; ++d)
    elements *= map.box[d];
  // Swizzled boxes: rows of `swizzle` bytes whose 16-byte chunks are XORed
  // with the row's address bits 7.. (the PTX ISA's swizzle modes, on the
  // shared-window address as the hardware applies them).
  const uint64_t chunkMask = map.swizzle ? map.swizzle / 16 - 1 : 0;
  std::vector<int64_t> idx(size_t(rank), 0);
  for (size_t e = 0; e < elements; ++e) {
    bool inside = true;
    uint64_t address = map.address;
    for (int d = 0; d < rank; ++d) {
      int64_t c = int64_t(coords[rank - 1 - d]) + idx[size_t(d)];
      inside = inside && c >= 0 && uint64_t(c) < map.shape[d];
      address += uint64_t(c) * map.strideBytes[d];
    }
    uint64_t at = offset + e * map.elementBytes;
    at ^= ((at >> 7) & chunkMask) << 4;
    visit(at, inside ? address : 0);
    for (int d = rank - 1; d >= 0; --d) { // row-major increment
      if (++idx[size_t(d)] < map.box[d])
        break;
      idx[size_t(d)] = 0;
    }
  }
}

SimTensorMap decodeMap(const void *mapPtr, int rank, const char *what, uint32_t site) {
  SimTensorMap map;
  std::memcpy(&map, mapPtr, sizeof map);
  if (map.magic != SimTensorMap::kMagic)
    fail(site, fmt::format("{}: the tensor map was not encoded by this simulator's launch (it "
                           "must be a kernel parameter the launch filled in)",
                           what));
  if (int(map.rank) != rank)
    fail(site, fmt::format("{}.{}d with a rank-{} tensor map", what, rank, map.rank));
  if (map.swizzle && uint64_t(map.box[rank - 1]) * map.elementBytes != map.swizzle)
    fail(site, fmt::format("{}: a {}-byte swizzle needs box rows of {} bytes, not {}", what,
                           map.swizzle, map.swizzle, map.box[rank - 1] * map.elementBytes));
  return map;
}

size_t boxBytes(const SimTensorMap &map, int rank) {
  size_t elements = 1;
  for (int d = 0; d < rank; ++d)
    elements *= map.box[d];
  return elements * map.elementBytes;
}

bool observedBy(const State &s, const Copy &c, int thread) {
  auto it = s.observed.find({thread, c.barrier});
  return it != s.observed.end() && it->second >= c.completion;
}

} // namespace

runtime::TensorMapBytes encodeForSimulator(const runtime::ResolvedTensorMap &map) {
  SimTensorMap m;
  m.rank = uint32_t(map.shape.size());
  m.elementBytes = uint32_t(map.strideBytes.back());
  m.swizzle = uint16_t(map.swizzle);
  m.tf32 = map.tf32 ? 1 : 0;
  m.address = map.address;
  for (size_t d = 0; d < map.shape.size(); ++d) {
    m.shape[d] = map.shape[d];
    m.strideBytes[d] = map.strideBytes[d];
    m.box[d] = map.box[d];
  }
  runtime::TensorMapBytes out;
  std::memcpy(out.bytes.data(), &m, sizeof m);
  return out;
}

void mbarrierInit(void *bar, uint32_t count, uint32_t site) {
  State &s = state();
  size_t offset = offsetOf(bar, 8, "mbarrier.init", site);
  if (count == 0)
    fail(site, "mbarrier.init with an arrival count of 0");
  if (offset % 8 != 0)
    fail(site, fmt::format("mbarrier.init: the mbarrier at shared offset {} is not 8-byte aligned", offset));
  checkNotInBarrier(s, offset, 8, "mbarrier.init reinitialises", site); // inval first
  releaseCopies(s, offset);
  s.barriers[offset] = Barrier{count, count, 0, 0, site};
  std::fill_n(s.inBarrier.begin() + ptrdiff_t(offset), 8, uint8_t(1));
}

void mbarrierArriveExpectTx(void *bar, uint32_t bytes, uint32_t site) {
  State &s = state();
  Barrier &b = barrierAt(s, bar, "mbarrier.arrive.expect_tx", site);
  b.tx += bytes;
  if (b.pending == 0)
    fail(site, "mbarrier.arrive.expect_tx: more arrivals than the mbarrier's count in one phase");
  --b.pending;
  completeIfDone(b);
}

void mbarrierArrive(void *bar, uint32_t site) {
  State &s = state();
  Barrier &b = barrierAt(s, bar, "mbarrier.arrive", site);
  if (b.pending == 0)
    fail(site, "mbarrier.arrive: more arrivals than the mbarrier's count in one phase");
  --b.pending;
  completeIfDone(b);
}

bool mbarrierTryWait(void *bar, uint32_t parity, uint32_t site) {
  State &s = state();
  size_t offset = offsetOf(bar, 8, "mbarrier.try_wait", site);
  Barrier &b = barrierAt(s, bar, "mbarrier.try_wait.parity", site);
  if (b.completions % 2 == parity % 2) { // that phase is still running
    if (++s.failedWaits > 1'000'000) {
      const std::string registers = pendingRegisterRequest();
      fail(site, fmt::format("deadlock: the mbarrier at shared offset {} never completes its "
                             "phase {} ({} arrivals and {} transaction bytes still pending){}",
                             offset, b.completions, b.pending, b.tx,
                             registers.empty() ? "" : fmt::format("; meanwhile {}", registers)));
    }
    yieldThread();
    return false;
  }
  s.failedWaits = 0;
  // The latest completed phase with this parity.
  uint32_t seen = b.completions - ((b.completions - 1) % 2 == parity % 2 ? 0 : 1);
  uint32_t &mine = s.observed[{threadId(), offset}];
  mine = std::max(mine, seen);
  return true;
}

void mbarrierInval(void *bar, uint32_t site) {
  State &s = state();
  size_t offset = offsetOf(bar, 8, "mbarrier.inval", site);
  barrierAt(s, bar, "mbarrier.inval", site);
  releaseCopies(s, offset);
  s.barriers.erase(offset);
  std::fill_n(s.inBarrier.begin() + ptrdiff_t(offset), 8, uint8_t(0));
}

void bulkTensorLoad(void *dst, const void *mapPtr, const int32_t *coords, int rank, void *bar,
                    uint32_t site) {
  State &s = state();
  const SimTensorMap map = decodeMap(mapPtr, rank, "cp.async.bulk.tensor", site);
  Barrier &b = barrierAt(s, bar, "cp.async.bulk.tensor", site);
  const size_t bytes = boxBytes(map, rank);
  size_t offset = offsetOf(dst, bytes, "cp.async.bulk.tensor writes its box", site);
  if (offset % 128 != 0)
    fail(site, fmt::format("cp.async.bulk.tensor: the destination (shared offset {}) must be "
                           "128-byte aligned",
                           offset));
  checkAsyncProxyWrite(sharedBase() + offset, bytes, "cp.async.bulk.tensor", site);
  checkNotInBarrier(s, offset, bytes, "cp.async.bulk.tensor writes", site);
  // Overwriting an earlier copy's bytes before any thread waited for that
  // copy: its data was never read (a producer that did not wait for the
  // stage's release, or a ring refilled too early).
  for (size_t byte = offset, checked = 0; byte < offset + bytes; ++byte) {
    const uint32_t owner = s.owner[byte];
    if (!owner || owner == checked)
      continue;
    checked = owner;
    const Copy &earlier = s.copies[owner - 1];
    const bool seen = std::any_of(s.observed.begin(), s.observed.end(), [&](const auto &o) {
      return o.first.second == earlier.barrier && o.second >= earlier.completion;
    });
    if (!seen)
      fail(site, fmt::format("cp.async.bulk.tensor overwrites shared byte {}, which the copy at {} wrote "
                             "and no thread has waited for yet (mbarrier.try_wait on the mbarrier at shared "
                             "offset {}): that data is lost before anyone read it",
                             byte, siteDescription(earlier.site), earlier.barrier));
  }
  forEachBoxElement(map, coords, rank, offset, [&](uint64_t at, uint64_t address) {
    uint8_t *to = sharedBase() + at;
    if (address) {
      const auto *from = reinterpret_cast<const uint8_t *>(address);
      checkAccess(from, map.elementBytes, AccessKind::Read, Space::Global, site);
      std::memcpy(to, from, map.elementBytes);
      if (map.tf32) { // TMA's TFLOAT32: rounded to nearest even on the way
        float f;
        std::memcpy(&f, to, 4);
        f = round_to_tf32(f);
        std::memcpy(to, &f, 4);
      }
    } else {
      std::memset(to, 0, map.elementBytes);
    }
  });
  asyncProxyWrote(dst, bytes, site);
  s.copies.push_back({offset, offset + bytes, offsetOf(bar, 8, "", site), b.completions + 1, site});
  std::fill_n(s.owner.begin() + ptrdiff_t(offset), bytes, uint32_t(s.copies.size()));
  b.tx -= int64_t(bytes);
  completeIfDone(b);
}

void bulkTensorLoadMulticast(void *dst, const void *mapPtr, const int32_t *coords, int rank, void *bar,
                             uint16_t ctaMask, uint32_t site) {
  const char *what = "cp.async.bulk.tensor.multicast::cluster";
  const int ctas = clusterSize();
  if (ctaMask == 0 || ctaMask >> ctas)
    fail(site, fmt::format("{} with CTA mask {:#06x}: the cluster has {} CTAs (ranks 0 to {})", what, ctaMask,
                           ctas, ctas - 1));
  // Offsets in the shared::cluster addresses' own CTAs (usually the issuer's).
  const ClusterAddress to = locateInCluster(dst, 1, what, site);
  const ClusterAddress barrier = locateInCluster(bar, 8, what, site);
  for (int r = 0; r < ctas; ++r)
    if (ctaMask >> r & 1)
      inClusterCta(r, what, site, [&] {
        bulkTensorLoad(sharedBase() + to.offset, mapPtr, coords, rank, sharedBase() + barrier.offset, site);
      });
}

void mbarrierArriveCluster(void *bar, uint32_t site) {
  const char *what = "mbarrier.arrive.shared::cluster";
  const ClusterAddress at = locateInCluster(bar, 8, what, site);
  inClusterCta(at.rank, what, site, [&] { mbarrierArrive(sharedBase() + at.offset, site); });
}

void bulkTensorStore(const void *mapPtr, const int32_t *coords, int rank, const void *src,
                     uint32_t site) {
  State &s = state();
  const SimTensorMap map = decodeMap(mapPtr, rank, "cp.async.bulk.tensor (store)", site);
  const size_t bytes = boxBytes(map, rank);
  size_t offset = offsetOf(src, bytes, "cp.async.bulk.tensor reads its box", site);
  if (offset % 128 != 0)
    fail(site, fmt::format("cp.async.bulk.tensor: the source (shared offset {}) must be "
                           "128-byte aligned",
                           offset));
  // Generic writes to the box must have been fenced before the async proxy reads it.
  checkAsyncProxyRead(src, bytes, "cp.async.bulk.tensor (store)", site);
  checkNotInBarrier(s, offset, bytes, "cp.async.bulk.tensor (store) reads", site);
  // The box's bytes as they are now (writes to them before the read
  // completes are reported), in runs of consecutive global addresses.
  std::vector<BulkWrite> runs;
  forEachBoxElement(map, coords, rank, offset, [&](uint64_t at, uint64_t address) {
    if (!address)
      return; // clipped
    auto *to = reinterpret_cast<uint8_t *>(address);
    checkAccess(to, map.elementBytes, AccessKind::Write, Space::Global, site);
    // Runs of at most 512 bytes: how far back AsyncGlobal's queries look.
    if (runs.empty() || runs.back().to + runs.back().bytes.size() != to || runs.back().bytes.size() >= 512)
      runs.push_back({to, {}, 0});
    runs.back().bytes.insert(runs.back().bytes.end(), sharedBase() + at, sharedBase() + at + map.elementBytes);
  });
  std::vector<BulkWrite> &pending = s.uncommittedWrites[threadId()];
  for (BulkWrite &w : runs) {
    w.token = asyncGlobalBegin(w.to, w.bytes.size(), AsyncGlobalUse::WrittenByBulkStore, site);
    pending.push_back(std::move(w));
  }
  asyncReadBegin(src, bytes, site);
  s.uncommitted[threadId()].push_back({src, bytes});
}

void bulkCommitGroup() {
  State &s = state();
  std::vector<BulkRead> &open = s.uncommitted[threadId()];
  s.bulkGroups[threadId()].push_back(std::move(open));
  open.clear();
  std::vector<BulkWrite> &writes = s.uncommittedWrites[threadId()];
  s.writeGroups[threadId()].push_back(std::move(writes));
  writes.clear();
}

namespace {
/// Performs `writes` (their bytes no longer in use).
void perform(std::vector<BulkWrite> &writes) {
  for (BulkWrite &w : writes) {
    asyncGlobalEnd(w.token);
    std::memcpy(w.to, w.bytes.data(), w.bytes.size());
  }
  writes.clear();
}
} // namespace

void bulkWaitGroup(int pending) {
  bulkWaitGroupRead(pending);
  State &s = state();
  std::vector<std::vector<BulkWrite>> &groups = s.writeGroups[threadId()];
  while (groups.size() > size_t(std::max(pending, 0))) {
    perform(groups.front());
    groups.erase(groups.begin());
  }
}

void bulkStoreThreadExit() {
  State *s = existingState();
  if (!s)
    return;
  // Committed or not, the stores complete: the grid's end waits for them.
  if (auto it = s->writeGroups.find(threadId()); it != s->writeGroups.end())
    for (std::vector<BulkWrite> &group : it->second)
      perform(group);
  if (auto it = s->uncommittedWrites.find(threadId()); it != s->uncommittedWrites.end())
    perform(it->second);
}

void bulkWaitGroupRead(int pending) {
  State &s = state();
  std::vector<std::vector<BulkRead>> &groups = s.bulkGroups[threadId()];
  while (groups.size() > size_t(std::max(pending, 0))) {
    for (const BulkRead &r : groups.front())
      asyncReadEnd(r.src, r.bytes);
    groups.erase(groups.begin());
  }
}

namespace {
/// The copy owning a byte of [offset, offset + bytes) that the current
/// thread has not observed the completion of, if any (and its byte).
std::optional<std::pair<size_t, const Copy *>> unobservedCopy(const State &s, size_t offset, size_t bytes) {
  for (size_t i = offset; i < offset + bytes && i < s.owner.size(); ++i)
    if (s.owner[i]) {
      const Copy &c = s.copies[s.owner[i] - 1];
      if (!observedBy(s, c, threadId()))
        return std::pair{i, &c};
    }
  return std::nullopt;
}
} // namespace

void checkTmaRead(size_t offset, size_t bytes, uint32_t site) {
  const State *s = existingState();
  if (!s)
    return;
  checkNotInBarrier(*s, offset, bytes, "the access reads", site);
  if (auto hit = unobservedCopy(*s, offset, bytes))
    fail(site, fmt::format("thread {} reads shared byte {}, which the cp.async.bulk.tensor at {} "
                           "writes asynchronously, before waiting for it (mbarrier.try_wait on "
                           "the mbarrier at shared offset {} for phase {}): the copy may not "
                           "have landed",
                           threadId(), hit->first, siteDescription(hit->second->site),
                           hit->second->barrier, hit->second->completion - 1));
}

void checkTmaWrite(size_t offset, size_t bytes, uint32_t site) {
  State *s = existingState();
  if (!s)
    return;
  checkNotInBarrier(*s, offset, bytes, "the access writes", site);
  if (auto hit = unobservedCopy(*s, offset, bytes))
    fail(site, fmt::format("thread {} writes shared byte {}, which the cp.async.bulk.tensor at {} "
                           "is still writing (its mbarrier phase has not been waited for)",
                           threadId(), hit->first, siteDescription(hit->second->site)));
  for (size_t i = offset; i < offset + bytes && i < s->owner.size(); ++i)
    s->owner[i] = 0; // ordinary shared memory again
}

} // namespace tegula::sim
