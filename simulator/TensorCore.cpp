//===- TensorCore.cpp - mma.sync, ldmatrix, cp.async ----------------------===//
#include "simulator/TensorCore.h"

#include "simulator/AsyncGlobal.h"

#include "simulator/MemoryProfile.h"
#include "simulator/Runtime.h"
#include "tegula/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace tegula::sim {
namespace {

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f)
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0)
    return (sign ? -1.0f : 1.0f) * std::ldexp(float(mant), -24); // zero or subnormal
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

/// The 16-bit half `which` (0 = low) of a b32 register.
float element16(MmaKind kind, uint32_t reg, int which) {
  auto bits = uint16_t(which ? reg >> 16 : reg & 0xffff);
  return kind == MmaKind::BF16 ? std::bit_cast<float>(uint32_t(bits) << 16) : halfToFloat(bits);
}

/// tf32 keeps the sign, exponent and top 10 mantissa bits of an f32.
float tf32(uint32_t reg) { return std::bit_cast<float>(reg & 0xffffe000u); }

struct MmaIO {
  const uint32_t *a, *b;
  const float *c;
  float *d;
};

/// m16n8k32 s8: A row g (+8 for registers 1, 3), columns 4 * tig + byte
/// (+16 for registers 2, 3); B rows 4 * tig + byte (+16 for register 1),
/// column g; exact integer sums wrapping to s32.
void completeMmaS8(void *const ios[kWarpSize]) {
  int32_t A[16][32], B[32][8], C[16][8];
  auto byte = [](uint32_t reg, int i) { return int32_t(int8_t(uint8_t(reg >> (8 * i)))); };
  for (int lane = 0; lane < kWarpSize; ++lane) {
    auto *io = static_cast<MmaIO *>(ios[lane]);
    int group = lane / 4, tig = lane % 4;
    for (int r = 0; r < 4; ++r)
      for (int i = 0; i < 4; ++i)
        A[group + (r & 1) * 8][4 * tig + i + (r >= 2 ? 16 : 0)] = byte(io->a[r], i);
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < 4; ++i)
        B[4 * tig + i + 16 * r][group] = byte(io->b[r], i);
    for (int i = 0; i < 4; ++i)
      C[group + (i >= 2 ? 8 : 0)][2 * tig + (i & 1)] = std::bit_cast<int32_t>(io->c[i]);
  }
  for (int lane = 0; lane < kWarpSize; ++lane) {
    auto *io = static_cast<MmaIO *>(ios[lane]);
    int group = lane / 4, tig = lane % 4;
    for (int i = 0; i < 4; ++i) {
      int row = group + (i >= 2 ? 8 : 0), col = 2 * tig + (i & 1);
      uint32_t acc = uint32_t(C[row][col]);
      for (int k = 0; k < 32; ++k)
        acc += uint32_t(A[row][k] * B[k][col]);
      io->d[i] = std::bit_cast<float>(acc);
    }
  }
}

void completeMma(MmaKind kind, void *const ios[kWarpSize]) {
  if (kind == MmaKind::S8)
    return completeMmaS8(ios);
  bool k16 = kind != MmaKind::TF32;
  int K = k16 ? 16 : 8;
  float A[16][16], B[16][8], C[16][8];
  for (int lane = 0; lane < kWarpSize; ++lane) {
    auto *io = static_cast<MmaIO *>(ios[lane]);
    int group = lane / 4, tig = lane % 4;
    if (k16) {
      for (int i = 0; i < 8; ++i) {
        int row = group + ((i % 4) >= 2 ? 8 : 0), col = 2 * tig + (i & 1) + (i >= 4 ? 8 : 0);
        A[row][col] = element16(kind, io->a[i / 2], i & 1);
      }
      for (int i = 0; i < 4; ++i)
        B[2 * tig + (i & 1) + (i >= 2 ? 8 : 0)][group] = element16(kind, io->b[i / 2], i & 1);
    } else {
      for (int i = 0; i < 4; ++i)
        A[group + (i & 1) * 8][tig + (i >= 2 ? 4 : 0)] = tf32(io->a[i]);
      for (int i = 0; i < 2; ++i)
        B[tig + i * 4][group] = tf32(io->b[i]);
    }
    for (int i = 0; i < 4; ++i)
      C[group + (i >= 2 ? 8 : 0)][2 * tig + (i & 1)] = io->c[i];
  }
  for (int lane = 0; lane < kWarpSize; ++lane) {
    auto *io = static_cast<MmaIO *>(ios[lane]);
    int group = lane / 4, tig = lane % 4;
    for (int i = 0; i < 4; ++i) {
      int row = group + (i >= 2 ? 8 : 0), col = 2 * tig + (i & 1);
      // Products are exact; the sum is accumulated at least as wide as f32.
      double acc = C[row][col];
      for (int k = 0; k < K; ++k)
        acc += double(A[row][k]) * double(B[k][col]);
      io->d[i] = float(acc);
    }
  }
}

struct LdmatrixIO {
  const uint8_t *row;
  uint32_t *d;
};

struct StmatrixIO {
  uint8_t *row;
  const uint32_t *s;
};

struct AsyncCopy {
  void *dst;
  const void *src;
  int cpSize, srcSize;
  uint32_t site;
  uint64_t token; // its source's bytes in use until performed (AsyncGlobal.h)
};

/// A thread's cp.async groups: committed ones (oldest first), then the open one.
struct AsyncGroups {
  std::vector<std::vector<AsyncCopy>> committed;
  std::vector<AsyncCopy> open;
};

AsyncGroups &asyncGroups() {
  std::shared_ptr<void> &ext = threadExtension(ThreadExtension::AsyncCopies);
  if (!ext)
    ext = std::make_shared<AsyncGroups>();
  return *static_cast<AsyncGroups *>(ext.get());
}

void performCopy(const AsyncCopy &c) {
  // Checked when the data moves, so races are against this moment. A
  // source size of 0 reads nothing (a masked-off copy only zero-fills), so
  // its address may be anywhere, as on the hardware.
  if (c.srcSize > 0) {
    asyncGlobalEnd(c.token);
    checkAccess(c.src, size_t(c.srcSize), AccessKind::Read, Space::Global, c.site);
    profileAccess(c.src, size_t(c.srcSize), AccessKind::Read, Space::Global, c.site);
  }
  checkAccess(c.dst, size_t(c.cpSize), AccessKind::Write, Space::Shared, c.site);
  profileAccess(c.dst, size_t(c.cpSize), AccessKind::Write, Space::Shared, c.site);
  std::memcpy(c.dst, c.src, size_t(c.srcSize));
  std::memset(static_cast<uint8_t *>(c.dst) + c.srcSize, 0, size_t(c.cpSize - c.srcSize));
}

} // namespace

float operandValue(MmaKind kind, uint32_t bits) {
  if (kind == MmaKind::TF32)
    return tf32(bits);
  if (kind == MmaKind::S8)
    return float(int8_t(uint8_t(bits)));
  if (kind == MmaKind::E4M3)
    return fp8_e4m3_format::decode(uint8_t(bits));
  if (kind == MmaKind::E5M2)
    return fp8_e5m2_format::decode(uint8_t(bits));
  return element16(kind, bits & 0xffff, 0);
}

void mmaSync(MmaKind kind, const uint32_t a[4], const uint32_t b[2], const float c[4], float d[4],
             uint32_t site) {
  MmaIO io{a, b, c, d};
  warpCollective("mma.sync", site, 0xffffffffu, &io,
                 [kind](void *const ios[kWarpSize]) { completeMma(kind, ios); });
}

void ldmatrix(int count, bool trans, const void *rowAddress, uint32_t *d, uint32_t site) {
  if (count != 1 && count != 2 && count != 4)
    fail(site, fmt::format("ldmatrix .x{}: only .x1, .x2 and .x4 exist", count));
  LdmatrixIO io{static_cast<const uint8_t *>(rowAddress), d};
  warpCollective("ldmatrix", site, 0xffffffffu, &io, [&](void *const ios[kWarpSize]) {
    // Matrix j's row r comes from the address lane 8j + r gave.
    std::vector<LanePart> rows;
    for (int j = 0; j < count; ++j)
      for (int r = 0; r < 8; ++r) {
        const uint8_t *row = static_cast<LdmatrixIO *>(ios[8 * j + r])->row;
        checkAccess(row, 16, AccessKind::Read, Space::Shared, site);
        rows.push_back({reinterpret_cast<uintptr_t>(row), 16, 8 * j + r});
      }
    profileRequest(site, rows, Space::Shared, AccessKind::Read);
    auto at = [&](int j, int r, int c) {
      uint16_t v;
      std::memcpy(&v, static_cast<LdmatrixIO *>(ios[8 * j + r])->row + 2 * c, 2);
      return uint32_t(v);
    };
    for (int lane = 0; lane < kWarpSize; ++lane) {
      int group = lane / 4, tig = lane % 4;
      for (int j = 0; j < count; ++j) {
        uint32_t lo = trans ? at(j, 2 * tig, group) : at(j, group, 2 * tig);
        uint32_t hi = trans ? at(j, 2 * tig + 1, group) : at(j, group, 2 * tig + 1);
        static_cast<LdmatrixIO *>(ios[lane])->d[j] = lo | hi << 16;
      }
    }
  });
}

void stmatrix(int count, bool trans, void *rowAddress, const uint32_t *s, uint32_t site) {
  if (count != 1 && count != 2 && count != 4)
    fail(site, fmt::format("stmatrix .x{}: only .x1, .x2 and .x4 exist", count));
  StmatrixIO io{static_cast<uint8_t *>(rowAddress), s};
  warpCollective("stmatrix", site, 0xffffffffu, &io, [&](void *const ios[kWarpSize]) {
    // Matrix j's row r goes to the address lane 8j + r gave.
    std::vector<LanePart> rows;
    for (int j = 0; j < count; ++j)
      for (int r = 0; r < 8; ++r) {
        uint8_t *row = static_cast<StmatrixIO *>(ios[8 * j + r])->row;
        checkAccess(row, 16, AccessKind::Write, Space::Shared, site);
        rows.push_back({reinterpret_cast<uintptr_t>(row), 16, 8 * j + r});
      }
    profileRequest(site, rows, Space::Shared, AccessKind::Write);
    auto put = [&](int j, int r, int c, uint32_t half) {
      const auto v = uint16_t(half);
      std::memcpy(static_cast<StmatrixIO *>(ios[8 * j + r])->row + 2 * c, &v, 2);
    };
    for (int lane = 0; lane < kWarpSize; ++lane) {
      const int group = lane / 4, tig = lane % 4;
      for (int j = 0; j < count; ++j) {
        const uint32_t word = static_cast<StmatrixIO *>(ios[lane])->s[j];
        if (trans) {
          put(j, 2 * tig, group, word), put(j, 2 * tig + 1, group, word >> 16);
        } else {
          put(j, group, 2 * tig, word), put(j, group, 2 * tig + 1, word >> 16);
        }
      }
    }
  });
}

void cpAsync(void *sharedDst, const void *globalSrc, int cpSize, int srcSize, uint32_t site) {
  if (cpSize != 4 && cpSize != 8 && cpSize != 16)
    fail(site, fmt::format("cp.async of {} bytes: cp-size must be 4, 8 or 16", cpSize));
  if (srcSize < 0 || srcSize > cpSize)
    fail(site, fmt::format("cp.async src-size {} is outside 0..{}", srcSize, cpSize));
  // The source is read at some moment until the wait (the simulator's: the
  // wait): a write to it before then is reported.
  if (srcSize > 0) // a bulk store still writing the source: the copy may read either
    checkAsyncGlobal(reinterpret_cast<uintptr_t>(globalSrc), size_t(srcSize), AccessKind::Read, site);
  const uint64_t token =
      srcSize > 0 ? asyncGlobalBegin(globalSrc, size_t(srcSize), AsyncGlobalUse::ReadByCopy, site) : 0;
  asyncGroups().open.push_back({sharedDst, globalSrc, cpSize, srcSize, site, token});
}

void cpAsyncCommitGroup() {
  AsyncGroups &g = asyncGroups();
  g.committed.push_back(std::move(g.open));
  g.open.clear();
}

void cpAsyncWaitGroup(int n, uint32_t site) {
  if (n < 0)
    fail(site, fmt::format("cp.async.wait_group {}: the count must be non-negative", n));
  AsyncGroups &g = asyncGroups();
  while (g.committed.size() > size_t(n)) {
    for (const AsyncCopy &c : g.committed.front())
      performCopy(c);
    g.committed.erase(g.committed.begin());
  }
}

void cpAsyncThreadExit() {
  std::shared_ptr<void> &ext = threadExtension(ThreadExtension::AsyncCopies);
  if (!ext)
    return;
  // Copies never waited for land in shared memory no one reads any more:
  // their sources are no longer in use.
  AsyncGroups &g = *static_cast<AsyncGroups *>(ext.get());
  for (const std::vector<AsyncCopy> &group : g.committed)
    for (const AsyncCopy &c : group)
      asyncGlobalEnd(c.token);
  for (const AsyncCopy &c : g.open)
    asyncGlobalEnd(c.token);
  g.committed.clear();
  g.open.clear();
}

void cpAsyncWaitAll(uint32_t site) {
  cpAsyncCommitGroup();
  cpAsyncWaitGroup(0, site);
}

} // namespace tegula::sim
