//===- Wgmma.cpp - Hopper's asynchronous warpgroup MMA ---------------------===//
#include "simulator/Wgmma.h"

#include "simulator/Runtime.h"
#include "tegula/error.h"

#include <bit>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace tegula::sim {
namespace {

constexpr int kWarpgroupThreads = 128;
// A placeholder: a quiet NaN with bit 21 set and a 21-bit slot number.
constexpr uint32_t kTagMask = 0xffe00000u, kTag = 0x7fe00000u, kSlotMask = 0x001fffffu;

bool isPlaceholder(uint32_t bits) { return (bits & kTagMask) == kTag; }

struct PendingMma {
  MmaKind kind;
  int n;
  uint64_t descA, descB;
  bool scaleD, transA, transB;
  std::vector<uint32_t> accIn;  // values or placeholders
  uint32_t firstSlot;           // results go to slots firstSlot .. + n/2
  std::vector<float> a, b;      // the operands as read at issue
  uint32_t site;
  std::vector<float> aRows;     // A from registers: this warp's 16 x K rows
};

struct WgmmaState {
  bool fenced = false;
  std::vector<PendingMma> open;
  std::deque<std::vector<PendingMma>> committed;
  std::vector<uint32_t> slots; // results, by slot
  std::vector<bool> known;
};

WgmmaState &state() {
  std::shared_ptr<void> &ext = threadExtension(ThreadExtension::Wgmma);
  if (!ext)
    ext = std::make_shared<WgmmaState>();
  return *static_cast<WgmmaState *>(ext.get());
}

bool isFp8(MmaKind kind) { return kind == MmaKind::E4M3 || kind == MmaKind::E5M2; }
bool isEightBit(MmaKind kind) { return isFp8(kind) || kind == MmaKind::S8; }
int elementBytes(MmaKind kind) { return kind == MmaKind::TF32 ? 4 : isEightBit(kind) ? 1 : 2; }
int instructionK(MmaKind kind) { return kind == MmaKind::TF32 ? 8 : isEightBit(kind) ? 32 : 16; }

float readElement(MmaKind kind, int64_t offset) {
  if (offset < 0 || size_t(offset) + size_t(elementBytes(kind)) > sharedBytes())
    throw Error(fmt::format("wgmma.mma_async reads shared offset {}, outside the CTA's {} bytes",
                            offset, sharedBytes()));
  uint32_t bits = 0;
  std::memcpy(&bits, sharedBase() + offset, size_t(elementBytes(kind)));
  return operandValue(kind, bits);
}

/// What readOperands does besides reading: nothing, mark the bytes as read
/// by an operation in flight (at issue), or check them and end that (at
/// completion).
enum class Tracking { None, Issue, Complete };

/// A (64 x K, row-major) and B (K x N, row-major) as the descriptors address
/// them now. The warpgroup's first thread stands for the tensor cores' one
/// read: it tracks the bytes (Tracking).
void readOperands(const PendingMma &m, std::vector<float> &a, std::vector<float> &b,
                  Tracking tracking) {
  if (threadId() % kWarpgroupThreads != 0)
    tracking = Tracking::None;
  const int K = instructionK(m.kind), eb = elementBytes(m.kind);
  a.resize(size_t(64 * K));
  b.resize(size_t(K * m.n));
  auto read = [&](uint64_t desc, bool kMajor, int32_t mn, int32_t k) {
    const int64_t off = wgmmaElementOffset(desc, kMajor, eb, mn, k);
    const float v = readElement(m.kind, off); // bounds-checked first
    if (tracking == Tracking::Issue)
      asyncReadBegin(sharedBase() + off, size_t(eb), m.site);
    if (tracking == Tracking::Complete) {
      asyncReadEnd(sharedBase() + off, size_t(eb));
      checkAccess(sharedBase() + off, size_t(eb), AccessKind::Read, Space::Shared, m.site);
      checkAsyncProxyRead(sharedBase() + off, size_t(eb), "wgmma.mma_async", m.site);
    }
    return v;
  };
  if (!m.aRows.empty()) { // this warp's rows, from its registers
    const int warp = threadId() % kWarpgroupThreads / 32;
    std::fill(a.begin(), a.end(), 0.0f);
    std::copy(m.aRows.begin(), m.aRows.end(), a.begin() + 16 * warp * K);
  } else {
    for (int32_t i = 0; i < 64; ++i)
      for (int32_t k = 0; k < K; ++k)
        a[size_t(i * K + k)] = read(m.descA, !m.transA, i, k);
  }
  for (int32_t k = 0; k < K; ++k)
    for (int32_t j = 0; j < m.n; ++j)
      b[size_t(k * m.n + j)] = read(m.descB, !m.transB, j, k);
}

/// Row and column of accumulator element i of this thread.
std::pair<int, int> fragmentPosition(int i) {
  const int t = threadId() % kWarpgroupThreads, warp = t / 32, lane = t % 32;
  return {16 * warp + lane / 4 + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * (lane % 4) + i % 2};
}

void complete(WgmmaState &s, const PendingMma &m) {
  std::vector<float> a, b;
  // fail() leaves the fiber for good: never from inside a catch block,
  // whose exception would stay in flight on this OS thread.
  std::string error;
  try {
    readOperands(m, a, b, Tracking::Complete);
  } catch (const Error &e) {
    error = e.what();
  }
  if (!error.empty())
    fail(m.site, error);
  if (a != m.a || b != m.b)
    fail(m.site, "the shared memory this wgmma.mma_async reads changed between its issue and the "
                 "wgmma.wait_group that completes it (a missing or misplaced wait?)");
  const int K = instructionK(m.kind);
  for (int i = 0; i < m.n / 2; ++i) {
    auto [row, col] = fragmentPosition(i);
    uint32_t in = 0;
    if (m.scaleD) {
      in = m.accIn[size_t(i)];
      if (isPlaceholder(in)) {
        const uint32_t slot = in & kSlotMask;
        if (slot >= s.slots.size() || !s.known[slot])
          fail(m.site, "wgmma.mma_async accumulates onto a result that is not computed yet");
        in = s.slots[slot];
      }
    }
    uint32_t out;
    if (m.kind == MmaKind::S8) { // s32 += s8 * s8, exact, wrapping around as the hardware's adds
      int64_t acc = std::bit_cast<int32_t>(in);
      for (int k = 0; k < K; ++k)
        acc += int64_t(a[size_t(row * K + k)]) * int64_t(b[size_t(k * m.n + col)]);
      out = uint32_t(uint64_t(acc));
    } else {
      double acc = std::bit_cast<float>(in);
      for (int k = 0; k < K; ++k) // products exact, summed at least as wide as f32
        acc += double(a[size_t(row * K + k)]) * double(b[size_t(k * m.n + col)]);
      out = std::bit_cast<uint32_t>(float(acc));
    }
    s.slots[m.firstSlot + uint32_t(i)] = out;
    s.known[m.firstSlot + uint32_t(i)] = true;
  }
}

} // namespace

int64_t wgmmaElementOffset(uint64_t descriptor, bool kMajor, int elementBytes, int32_t mn,
                           int32_t k) {
  const int64_t start = int64_t(descriptor & 0x3fff) << 4;
  const int64_t lbo = int64_t(descriptor >> 16 & 0x3fff) << 4;
  const int64_t sbo = int64_t(descriptor >> 32 & 0x3fff) << 4;
  const int baseOffset = int(descriptor >> 49 & 7), mode = int(descriptor >> 62);
  if (baseOffset != 0)
    throw Error(fmt::format("wgmma descriptor {:#018x}: a non-zero base offset is not modelled",
                            descriptor));
  // Reserved: set only when a start address field overflowed (the lowering
  // adds each instruction's offset / 16 to the tile's field).
  if (descriptor >> 14 & 3)
    throw Error(fmt::format("wgmma descriptor {:#018x}: reserved bits 14-15 are set (a start "
                            "address past the 256 KB shared window?)",
                            descriptor));
  if (mode == 0)
    throw Error(fmt::format("wgmma descriptor {:#018x}: unswizzled (interleaved) operands are "
                            "not modelled",
                            descriptor));
  const int64_t swizzle = mode == 1 ? 128 : mode == 2 ? 64 : 32;
  int64_t address;
  if (kMajor) // 8-row atoms of `swizzle`-byte rows along M/N, SBO apart
    address = start + mn / 8 * sbo + mn % 8 * swizzle + int64_t(k) * elementBytes;
  else { // rows along K (8-row groups SBO apart), atoms along M/N LBO apart
    const int64_t perRow = swizzle / elementBytes;
    address = start + mn / perRow * lbo + k / 8 * sbo + k % 8 * swizzle + mn % perRow * elementBytes;
  }
  // The swizzle: 16-byte chunk bits [4, 4 + c) ^= address bits [7, 7 + c).
  return address ^ ((address >> 7) & (swizzle / 16 - 1)) << 4;
}

void wgmmaFence() { state().fenced = true; }

namespace {
/// Records `m` in the open group; its results become placeholders in `acc`.
void issue(PendingMma m, uint32_t *acc) {
  const MmaKind kind = m.kind;
  const int n = m.n;
  const bool transA = m.transA, transB = m.transB, scaleD = m.scaleD;
  const uint32_t site = m.site;
  if (n < 8 || n > 256 || n % 8)
    fail(site, fmt::format("wgmma.mma_async n{}: N is a multiple of 8 up to 256", n));
  if ((kind == MmaKind::TF32 || isEightBit(kind)) && (transA || transB))
    fail(site, "wgmma.mma_async .tf32, fp8 and s8 have no transposed operands (both K-major)");
  WgmmaState &s = state();
  if (scaleD && !s.fenced)
    for (int i = 0; i < n / 2; ++i)
      if (!isPlaceholder(acc[i]))
        fail(site, "wgmma.mma_async reads accumulator registers that ordinary instructions "
                   "wrote, without a wgmma.fence.sync.aligned since");
  // Nothing in flight: every earlier result is complete (a wait_group
  // completed it), so an accumulator still naming one reads its value - as
  // the hardware's registers hold it - and the slots start over. (Cleared
  // here, not at the wait: a second wait after one that completed
  // everything still resolves its registers.)
  if (s.committed.empty() && s.open.empty() && !s.slots.empty()) {
    for (int i = 0; i < n / 2; ++i)
      if (isPlaceholder(acc[i])) {
        const uint32_t slot = acc[i] & kSlotMask;
        if (slot < s.slots.size() && s.known[slot])
          acc[i] = s.slots[slot];
      }
    s.slots.clear();
    s.known.clear();
  }
  m.firstSlot = uint32_t(s.slots.size());
  if (m.firstSlot + uint32_t(n / 2) > kSlotMask)
    fail(site, "wgmma.mma_async: too many results in flight for the simulator's placeholders");
  m.accIn.assign(acc, acc + n / 2);
  std::string error;
  try {
    readOperands(m, m.a, m.b, Tracking::Issue);
  } catch (const Error &e) {
    error = e.what();
  }
  if (!error.empty())
    fail(site, error);
  s.slots.resize(s.slots.size() + size_t(n / 2), 0);
  s.known.resize(s.slots.size(), false);
  for (int i = 0; i < n / 2; ++i)
    acc[i] = kTag | (m.firstSlot + uint32_t(i));
  s.open.push_back(std::move(m));
}

/// Lanes' A registers meeting in a warp collective.
struct RegisterA {
  const uint32_t *regs;
  std::vector<float> *rows; // 16 x K, filled for every lane
};
} // namespace

void wgmmaMmaAsync(MmaKind kind, int n, uint64_t descA, uint64_t descB, bool scaleD, bool transA,
                   bool transB, uint32_t *acc, uint32_t site) {
  issue(PendingMma{kind, n, descA, descB, scaleD, transA, transB, {}, 0, {}, {}, site, {}}, acc);
}

void wgmmaMmaAsyncRegisterA(MmaKind kind, int n, const uint32_t aRegs[4], uint64_t descB,
                            bool scaleD, bool transB, uint32_t *acc, uint32_t site) {
  if (isEightBit(kind))
    fail(site, "wgmma.mma_async with fp8 or s8 A from registers is not modelled by the simulator");
  const int K = instructionK(kind);
  std::vector<float> rows(size_t(16 * K));
  RegisterA io{aRegs, &rows};
  warpCollective("wgmma.mma_async (A from registers)", site, 0xffffffffu, &io,
                 [&](void *const ios[kWarpSize]) {
                   std::vector<float> A(size_t(16 * K));
                   for (int lane = 0; lane < kWarpSize; ++lane) {
                     const uint32_t *r = static_cast<RegisterA *>(ios[lane])->regs;
                     const int g = lane / 4, q = lane % 4;
                     for (int j = 0; j < 4; ++j) {
                       if (kind == MmaKind::TF32) { // one element per register
                         A[size_t((g + 8 * (j & 1)) * K + q + 4 * (j >> 1))] = operandValue(kind, r[j]);
                         continue;
                       }
                       const int row = g + 8 * (j & 1), k = 2 * q + 8 * (j >> 1);
                       A[size_t(row * K + k)] = operandValue(kind, r[j] & 0xffff);
                       A[size_t(row * K + k + 1)] = operandValue(kind, r[j] >> 16);
                     }
                   }
                   for (int lane = 0; lane < kWarpSize; ++lane)
                     *static_cast<RegisterA *>(ios[lane])->rows = A;
                 });
  issue(PendingMma{kind, n, 0, descB, scaleD, false, transB, {}, 0, {}, {}, site, std::move(rows)}, acc);
}


void wgmmaCommitGroup() {
  WgmmaState &s = state();
  s.committed.push_back(std::move(s.open));
  s.open.clear();
}

void wgmmaWaitGroup(int pending, uint32_t *values, size_t count, uint32_t site) {
  if (pending < 0 || pending > 7)
    fail(site, fmt::format("wgmma.wait_group {}: N is 0..7", pending));
  WgmmaState &s = state();
  // The tensor cores run while the thread waits: the other threads run
  // first, so that what they do meanwhile - a producer refilling a stage
  // released before its groups completed - lands before the groups read
  // their operands, as it may on hardware.
  if (s.committed.size() > size_t(pending))
    yieldThread();
  while (s.committed.size() > size_t(pending)) {
    for (const PendingMma &m : s.committed.front())
      complete(s, m);
    s.committed.pop_front();
  }
  for (size_t i = 0; i < count; ++i)
    if (isPlaceholder(values[i])) {
      const uint32_t slot = values[i] & kSlotMask;
      if (slot < s.slots.size() && s.known[slot])
        values[i] = s.slots[slot];
    }
  s.fenced = false; // the registers were written again
}

void wgmmaThreadExit() {
  std::shared_ptr<void> &ext = threadExtension(ThreadExtension::Wgmma);
  if (!ext)
    return;
  const WgmmaState &s = *static_cast<WgmmaState *>(ext.get());
  if (!s.open.empty() || !s.committed.empty())
    fail(s.open.empty() ? s.committed.front().front().site : s.open.front().site,
         fmt::format("the thread exits with wgmma.mma_async still in flight ({} committed "
                     "groups, {} uncommitted): its results were never waited for",
                     s.committed.size(), s.open.size()));
}

} // namespace tegula::sim
