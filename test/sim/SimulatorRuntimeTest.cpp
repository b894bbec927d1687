// SimulatorRuntimeTest.cpp - the CTA simulator's runtime on hand-written
// thread programs: barriers, shuffles, deadlocks, the race detector, memory
// checks, the inline-PTX interpreter, and tensor-core semantics (mma.sync,
// ldmatrix, cp.async) against a plain matrix product.
#include "TestUtil.h"
#include "simulator/HostFunctions.h"
#include "simulator/PtxAsm.h"
#include "simulator/Runtime.h"
#include "simulator/TensorCore.h"
#include "simulator/Tma.h"
#include "tegula/dtype.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <functional>

using namespace tegula;
using namespace tegula::sim;
using ::testing::HasSubstr;

namespace {

// Each simulated thread runs `body`.
std::function<void()> body;
void entry(void **) { body(); }

RunStats runThreads(int threads, std::function<void()> fn, size_t sharedBytes = 0,
                    std::vector<Buffer> buffers = {}, Grid grid = {1, 1, 1}) {
  body = std::move(fn);
  LaunchConfig config;
  config.kernel = "test";
  config.grid = grid;
  config.threads = threads;
  config.sharedBytes = sharedBytes;
  config.buffers = std::move(buffers);
  return runGrid(config, entry, nullptr);
}

std::string errorOf(const std::function<void()> &run) {
  try {
    run();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

template <class F> F *hostFunction(const std::string &name) {
  for (auto &[n, p] : hostSymbols())
    if (n == name)
      return reinterpret_cast<F *>(p);
  throw Error("no host symbol " + name);
}

int32_t shfl(ShuffleMode mode, uint32_t mask, int32_t v, int32_t b, int32_t c = 0x1f) {
  static auto *fn = hostFunction<int32_t(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t)>(
      "__tegula_sim_shfl");
  return fn(int32_t(mode), int32_t(mask), v, b, c, 0);
}

Buffer bufferOf(void *p, size_t bytes, const char *name, bool readonly = false) {
  auto b = reinterpret_cast<uintptr_t>(p);
  return {b, b + bytes, name, readonly};
}

TEST(SimRuntime, SpecialRegistersAndBarrierOrderEveryThread) {
  std::vector<int> order;
  auto stats = runThreads(
      64,
      [&] {
        order.push_back(specialRegister(SpecialRegister::TidX));
        barrier(0);
        order.push_back(100 + specialRegister(SpecialRegister::TidX));
      },
      0, {}, {2, 1, 1});
  ASSERT_EQ(order.size(), 4u * 64);
  // In each CTA, all 64 arrivals come before any departure.
  for (int cta = 0; cta < 2; ++cta)
    for (int i = 0; i < 64; ++i) {
      EXPECT_LT(order[size_t(cta * 128 + i)], 100);
      EXPECT_GE(order[size_t(cta * 128 + 64 + i)], 100);
    }
  EXPECT_EQ(stats.ctas, 2u);
}

TEST(SimRuntime, ShuffleModesFollowPtx) {
  std::vector<int32_t> bfly(32), up(32), down(32), idx(32), seg(32);
  runThreads(32, [&] {
    int lane = laneId();
    bfly[size_t(lane)] = shfl(ShuffleMode::Bfly, ~0u, lane * 10, 3);
    up[size_t(lane)] = shfl(ShuffleMode::Up, ~0u, lane * 10, 2, 0);
    down[size_t(lane)] = shfl(ShuffleMode::Down, ~0u, lane * 10, 5);
    idx[size_t(lane)] = shfl(ShuffleMode::Idx, ~0u, lane * 10, 7);
    // Width-8 segments (CUDA's __shfl_sync(..., width=8)): c = ((32-8) << 8) | 0x1f.
    seg[size_t(lane)] = shfl(ShuffleMode::Idx, ~0u, lane * 10, 2, (24 << 8) | 0x1f);
  });
  for (int l = 0; l < 32; ++l) {
    EXPECT_EQ(bfly[size_t(l)], (l ^ 3) * 10);
    EXPECT_EQ(up[size_t(l)], (l >= 2 ? l - 2 : l) * 10);
    EXPECT_EQ(down[size_t(l)], (l + 5 <= 31 ? l + 5 : l) * 10);
    EXPECT_EQ(idx[size_t(l)], 70);
    EXPECT_EQ(seg[size_t(l)], ((l & ~7) + 2) * 10);
  }
}

TEST(SimRuntime, BarrierNotReachedByAllIsADeadlock) {
  std::string e = errorOf([] {
    runThreads(64, [] {
      if (threadId() != 5)
        barrier(0);
    });
  });
  EXPECT_THAT(e, HasSubstr("deadlock"));
  EXPECT_THAT(e, HasSubstr("reached by 63 of 64 threads (1 exited"));
}

TEST(SimRuntime, DivergentShuffleMaskIsAnError) {
  std::string e = errorOf([] {
    runThreads(32, [] { shfl(ShuffleMode::Bfly, laneId() < 16 ? 0xffffu : ~0u, 1, 1); });
  });
  EXPECT_THAT(e, HasSubstr("member mask"));
}

TEST(SimRuntime, ShuffleWaitingForAnExitedLaneIsADeadlock) {
  std::string e = errorOf([] {
    runThreads(32, [] {
      if (laneId() != 31)
        shfl(ShuffleMode::Bfly, ~0u, 1, 1);
    });
  });
  EXPECT_THAT(e, HasSubstr("deadlock: shfl.sync in warp 0"));
  EXPECT_THAT(e, HasSubstr("0x80000000"));
}

TEST(SimRuntime, SharedWriteReadWithoutBarrierIsARace) {
  auto program = [](bool withBarrier) {
    return [withBarrier] {
      auto *s = reinterpret_cast<float *>(sharedBase());
      int t = threadId();
      checkAccess(&s[t], 4, AccessKind::Write, Space::Shared, 0);
      s[t] = float(t);
      if (withBarrier)
        barrier(0);
      int other = t == 0 ? 0 : t - 1; // written by the previous thread, no barrier
      checkAccess(&s[other], 4, AccessKind::Read, Space::Shared, 0);
    };
  };
  EXPECT_NO_THROW(runThreads(64, program(true), 256));
  std::string e = errorOf([&] { runThreads(64, program(false), 256); });
  EXPECT_THAT(e, HasSubstr("shared-memory race"));
  EXPECT_THAT(e, HasSubstr("reads it here"));
  EXPECT_THAT(e, HasSubstr("thread 1 (warp 0, lane 1)"));
}

/// A TMA copy landing on bytes the generic proxy wrote (a tf32 ring stage
/// rounded in place, then refilled) needs the writers' fence.proxy.async
/// first, else their writes may land after it.
TEST(SimRuntime, AnAsyncProxyWriteAfterUnfencedGenericWritesIsReported) {
  auto program = [](bool fence) {
    return [fence] {
      auto *s = reinterpret_cast<float *>(sharedBase());
      const int t = threadId();
      checkAccess(&s[t], 4, AccessKind::Write, Space::Shared, 0);
      s[t] = float(t);
      if (fence)
        fenceProxyAsync();
      barrier(0);
      if (t == 0) // the copy's bytes: all 32 threads' words
        checkAsyncProxyWrite(s, 32 * 4, "cp.async.bulk.tensor", 0);
    };
  };
  EXPECT_NO_THROW(runThreads(32, program(true), 128));
  std::string e = errorOf([&] { runThreads(32, program(false), 128); });
  EXPECT_THAT(e, HasSubstr("cp.async.bulk.tensor writes shared byte 0, which thread 0 (warp 0, lane 0) wrote"));
  EXPECT_THAT(e, HasSubstr("without a fence.proxy.async.shared::cta since: that write may land after"));
}

TEST(SimRuntime, ReadBeforeAnotherThreadsWriteIsARaceNotGarbage) {
  // Thread t reads slot t + 1 before thread t + 1 (which runs later) writes it.
  std::string e = errorOf([] {
    runThreads(64, [] {
      auto *s = sharedBase();
      int t = threadId();
      checkAccess(s + 4 * t, 4, AccessKind::Write, Space::Shared, 0);
      checkAccess(s + 4 * ((t + 1) % 64), 4, AccessKind::Read, Space::Shared, 0);
    }, 256);
  });
  EXPECT_THAT(e, HasSubstr("shared-memory race on byte 4: thread 1 (warp 0, lane 1) writes it here, "
                           "thread 0 (warp 0, lane 0) read it"));
}

TEST(SimRuntime, WriteAfterReadInTheSameIntervalIsARace) {
  std::string e = errorOf([] {
    runThreads(2, [] {
      auto *s = sharedBase();
      if (threadId() == 0) { // initialise, then everyone syncs
        checkAccess(s, 1, AccessKind::Write, Space::Shared, 0);
      }
      barrier(0);
      checkAccess(s, 1, threadId() == 0 ? AccessKind::Read : AccessKind::Write, Space::Shared, 0);
    }, 16);
  });
  EXPECT_THAT(e, HasSubstr("shared-memory race on byte 0"));
}

TEST(SimRuntime, UninitialisedSharedReadIsReported) {
  std::string e = errorOf([] {
    runThreads(32, [] { checkAccess(sharedBase() + 8, 4, AccessKind::Read, Space::Shared, 0); }, 64);
  });
  EXPECT_THAT(e, HasSubstr("reads shared byte 8, which no thread of this CTA had written"));
}

TEST(SimRuntime, GlobalAccessesAreBoundsAlignmentAndReadOnlyChecked) {
  std::vector<float> x(10), y(10);
  std::vector<Buffer> buffers = {bufferOf(x.data(), 40, "x", true), bufferOf(y.data(), 40, "y")};
  std::sort(buffers.begin(), buffers.end(), [](auto &a, auto &b) { return a.begin < b.begin; });
  auto one = [&](std::function<void()> f) { return errorOf([&] { runThreads(1, f, 0, buffers); }); };
  EXPECT_EQ(one([&] { checkAccess(&y[9], 4, AccessKind::Write, Space::Global, 0); }), "(no error)");
  EXPECT_THAT(one([&] { checkAccess(&y[10], 4, AccessKind::Read, Space::Global, 0); }),
              HasSubstr("out of bounds"));
  EXPECT_THAT(one([&] { checkAccess(&x[0], 4, AccessKind::Write, Space::Global, 0); }),
              HasSubstr("read-only buffer 'x'"));
  EXPECT_THAT(one([&] { checkAccess(&y[1], 16, AccessKind::Read, Space::Global, 0); }),
              HasSubstr("misaligned 16-byte access"));
}

TEST(SimRuntime, InlinePtxPredicatedVectorLoadAndStore) {
  auto load = AsmProgram::parse(
      "mov.b32 $0, $6;\n\tmov.b32 $1, $7;\n\tmov.b32 $2, $8;\n\tmov.b32 $3, $9;\n\t"
      "@$5 ld.global.v4.b32 {$0, $1, $2, $3}, [ $4 + 0 ];",
      "=r,=r,=r,=r,l,b,r,r,r,r");
  auto store = AsmProgram::parse("@$3 st.global.v2.b32 [ $0 + 0 ], {$1, $2};", "l,r,r,b");
  alignas(16) std::vector<uint32_t> mem = {1, 2, 3, 4, 0, 0, 0, 0};
  std::vector<Buffer> buffers = {bufferOf(mem.data(), 32, "mem")};
  uint64_t out[4];
  runThreads(1, [&] {
    uint64_t in[6] = {uint64_t(reinterpret_cast<uintptr_t>(mem.data())), 1, 9, 9, 9, 9};
    load->run(in, out, 0);
    uint64_t st[4] = {uint64_t(reinterpret_cast<uintptr_t>(&mem[4])), 7, 8, 0};
    store->run(st, nullptr, 0); // predicate off: nothing happens
    st[3] = 1;
    store->run(st, nullptr, 0);
    in[1] = 0;
    uint64_t off[4];
    load->run(in, off, 0);
    EXPECT_EQ(off[0], 9u); // predicate off: the defaults
  }, 0, buffers);
  EXPECT_EQ(out[0], 1u);
  EXPECT_EQ(out[3], 4u);
  EXPECT_EQ(mem[4], 7u);
  EXPECT_EQ(mem[5], 8u);
}

TEST(SimRuntime, InlinePtxCompareAndSwapLoopIsNaNPropagatingMax) {
  auto cas = AsmProgram::parse(
      "{\n\t.reg .pred %tegula_p;\n\t.reg .b32 %tegula_old, %tegula_seen, %tegula_new;\n\t"
      "mov.b32 $0, 0;\n\t@!$3 bra TEGULA_CAS_DONE_${:uid};\n\t"
      "ld.global.b32 %tegula_old, [ $1 + 0 ];\nTEGULA_CAS_LOOP_${:uid}:\n\t"
      "mov.b32 %tegula_seen, %tegula_old;\n\tmax.NaN.f32 %tegula_new, %tegula_seen, $2;\n\t"
      "atom.acq_rel.gpu.global.cas.b32 %tegula_old, [ $1 + 0 ], %tegula_seen, %tegula_new;\n\t"
      "setp.ne.b32 %tegula_p, %tegula_old, %tegula_seen;\n\t@%tegula_p bra TEGULA_CAS_LOOP_${:uid};\n\t"
      "mov.b32 $0, %tegula_old;\nTEGULA_CAS_DONE_${:uid}:\n\t}",
      "=r,l,r,b");
  float cell = 1.5f;
  std::vector<Buffer> buffers = {bufferOf(&cell, 4, "cell")};
  std::vector<float> seen;
  runThreads(3, [&] {
    float v[3] = {0.5f, 2.5f, NAN};
    uint64_t in[3] = {uint64_t(reinterpret_cast<uintptr_t>(&cell)), std::bit_cast<uint32_t>(v[threadId()]), 1};
    uint64_t out[1];
    cas->run(in, out, 0);
    seen.push_back(std::bit_cast<float>(uint32_t(out[0])));
  }, 0, buffers);
  EXPECT_TRUE(std::isnan(cell));
  EXPECT_EQ(seen[0], 1.5f);
  EXPECT_EQ(seen[1], 1.5f);
  EXPECT_EQ(seen[2], 2.5f);
}

/// cvt.rn.tf32.f32 (sm_90's one-instruction tf32 rounding): nearest, ties
/// to even, as round_to_tf32 and the integer rounding of sm_80 code; Inf
/// and NaN stay what they are.
TEST(SimRuntime, InlinePtxCvtRnTf32RoundsToNearestEven) {
  auto cvt = AsmProgram::parse("cvt.rn.tf32.f32 $0, $1;", "=r,f");
  auto rounded = [&](uint32_t bits) {
    uint64_t in[1] = {bits}, out[1] = {0};
    cvt->run(in, out, 0);
    return uint32_t(out[0]);
  };
  EXPECT_EQ(rounded(0x3f800fffu), 0x3f800000u); // below half: down
  EXPECT_EQ(rounded(0x3f801001u), 0x3f802000u); // above half: up
  EXPECT_EQ(rounded(0x3f801000u), 0x3f800000u); // a tie, even below: down
  EXPECT_EQ(rounded(0x3f803000u), 0x3f804000u); // a tie, odd below: up to even
  EXPECT_EQ(rounded(0xbf803000u), 0xbf804000u); // the sign kept
  EXPECT_EQ(rounded(0x7f800000u), 0x7f800000u); // Inf
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(rounded(0x7fc00001u))));
  for (float f : {1.0f / 3.0f, -2.7182817f, 1e-40f, 3.0e38f})
    EXPECT_EQ(rounded(std::bit_cast<uint32_t>(f)), std::bit_cast<uint32_t>(round_to_tf32(f))) << f;
}

TEST(SimRuntime, UnsupportedInlinePtxIsRejectedByName) {
  std::string e = errorOf([] { AsmProgram::parse("tex.2d.v4.f32.f32 {$0, $1, $2, $3}, [$4, {$5, $6}];", "=r,=r,=r,=r,l,r,r"); });
  EXPECT_THAT(e, HasSubstr("instruction 'tex.2d.v4.f32.f32'"));
}

// ---- tensor cores -------------------------------------------------------

uint16_t toHalf(float f) {
  // Round to nearest even through the DSL's type.
  return float16(f).bits;
}
uint16_t toBf16(float f) { return bfloat16(f).bits; }
template <class H> float widen(uint16_t bits) {
  H h;
  h.bits = bits;
  return float(h);
}

/// A (16 x 16) and B (16 x 8) staged in shared memory row-major; ldmatrix
/// gives the mma fragments; D is read back through the D fragment layout and
/// compared with the plain product.
void checkMma16(MmaKind kind) {
  std::vector<float> A(16 * 16), B(16 * 8), C(16 * 8);
  auto ra = tegula::testing::random_vector<float>(A.size()), rb = tegula::testing::random_vector<float>(B.size()),
       rc = tegula::testing::random_vector<float>(C.size());
  std::vector<uint16_t> a16(A.size()), b16(B.size());
  for (size_t i = 0; i < A.size(); ++i) {
    a16[i] = kind == MmaKind::F16 ? toHalf(ra[i]) : toBf16(ra[i]);
    A[i] = kind == MmaKind::F16 ? widen<float16>(a16[i]) : widen<bfloat16>(a16[i]);
  }
  for (size_t i = 0; i < B.size(); ++i) {
    b16[i] = kind == MmaKind::F16 ? toHalf(rb[i]) : toBf16(rb[i]);
    B[i] = kind == MmaKind::F16 ? widen<float16>(b16[i]) : widen<bfloat16>(b16[i]);
  }
  C = rc;
  std::vector<float> D(16 * 8, NAN);
  runThreads(32, [&] {
    int lane = laneId();
    uint8_t *s = sharedBase();
    if (lane == 0) {
      checkAccess(s, 512 + 256, AccessKind::Write, Space::Shared, 0);
      std::memcpy(s, a16.data(), 512);
      std::memcpy(s + 512, b16.data(), 256);
    }
    barrier(0);
    uint32_t a[4], b[2];
    // x4: lanes 0-15 give rows 0-15 of columns 0-7, lanes 16-31 of columns 8-15.
    ldmatrix(4, false, s + (lane % 16) * 32 + (lane / 16) * 16, a, 0);
    // B is k x n row-major: rows k = 0..15 through .trans give the col-major fragment.
    ldmatrix(2, true, s + 512 + (lane % 16) * 16, b, 0);
    float c[4], d[4];
    int group = lane / 4, tig = lane % 4;
    for (int i = 0; i < 4; ++i)
      c[i] = C[size_t((group + (i >= 2 ? 8 : 0)) * 8 + 2 * tig + (i & 1))];
    mmaSync(kind, a, b, c, d, 0);
    for (int i = 0; i < 4; ++i)
      D[size_t((group + (i >= 2 ? 8 : 0)) * 8 + 2 * tig + (i & 1))] = d[i];
  }, 1024);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double ref = C[size_t(m * 8 + n)];
      for (int k = 0; k < 16; ++k)
        ref += double(A[size_t(m * 16 + k)]) * double(B[size_t(k * 8 + n)]);
      EXPECT_NEAR(D[size_t(m * 8 + n)], ref, 1e-5) << "m=" << m << " n=" << n;
    }
}

TEST(SimTensorCore, LdmatrixThenMmaF16MatchesTheProduct) { checkMma16(MmaKind::F16); }
TEST(SimTensorCore, LdmatrixThenMmaBf16MatchesTheProduct) { checkMma16(MmaKind::BF16); }

/// stmatrix.x4 stores what ldmatrix.x4 loads: each lane's word j of matrix
/// j lands at (row lane / 4, columns 2 (lane % 4), +1) of the matrix whose
/// rows lanes 8j..8j+7 address (here a 16 x 16 row-major tile: matrices
/// top-left, bottom-left, top-right, bottom-right); .trans stores the
/// transpose; ldmatrix reads every word back.
TEST(SimTensorCore, StmatrixStoresTheFragmentsLdmatrixLoads) {
  for (bool trans : {false, true}) {
    SCOPED_TRACE(trans ? ".trans" : "plain");
    std::vector<uint16_t> tile(16 * 16, 0xffff);
    std::vector<uint32_t> back(32 * 4, 0);
    runThreads(32, [&] {
      const int lane = laneId(), group = lane / 4, tig = lane % 4;
      uint8_t *s = sharedBase();
      uint32_t words[4];
      for (int j = 0; j < 4; ++j) // element (row, col) of matrix j holds 1000 j + 16 row + col
        words[j] = uint32_t(1000 * j + 16 * group + 2 * tig) | uint32_t(1000 * j + 16 * group + 2 * tig + 1) << 16;
      uint8_t *row = s + (lane % 16) * 32 + (lane / 16) * 16;
      stmatrix(4, trans, row, words, 0);
      barrier(0);
      ldmatrix(4, trans, row, &back[size_t(4 * lane)], 0);
      barrier(0);
      if (lane == 0) {
        checkAccess(s, 512, AccessKind::Read, Space::Shared, 0);
        std::memcpy(tile.data(), s, 512);
      }
    }, 1024);
    for (int j = 0; j < 4; ++j)
      for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) {
          const int row = r + 8 * (j % 2), col = c + 8 * (j / 2);
          const int stored = trans ? 1000 * j + 16 * c + r : 1000 * j + 16 * r + c;
          EXPECT_EQ(tile[size_t(16 * row + col)], stored) << "matrix " << j << " (" << r << ", " << c << ")";
        }
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < 4; ++j) {
        const uint32_t lo = uint32_t(1000 * j + 16 * (lane / 4) + 2 * (lane % 4));
        EXPECT_EQ(back[size_t(4 * lane + j)], lo | (lo + 1) << 16) << "lane " << lane << " word " << j;
      }
  }
}

/// An mbarrier's 8 bytes serve nothing else from its mbarrier.init to its
/// mbarrier.inval (PTX ISA): a store over a live one - a buffer the
/// allocator placed on barriers still in use - is reported, a second init
/// too; after the inval the bytes are ordinary shared memory.
TEST(SimMbarrier, ItsBytesServeNothingElseUntilInvalidated) {
  auto run = [](bool inval, bool reinit) {
    return errorOf([&] {
      runThreads(32, [&] {
        uint8_t *s = sharedBase();
        if (laneId() == 0)
          mbarrierInit(s + 8, 1, 0);
        barrier(0);
        if (laneId() == 0 && inval)
          mbarrierInval(s + 8, 0);
        if (laneId() == 0 && reinit)
          mbarrierInit(s + 8, 1, 0);
        barrier(0);
        if (laneId() == 1) {
          checkAccess(s + 12, 4, AccessKind::Write, Space::Shared, 0);
          std::memset(s + 12, 0, 4);
        }
      }, 64);
    });
  };
  EXPECT_THAT(run(false, false), HasSubstr("shared byte 12, part of the mbarrier at shared offset 8"));
  EXPECT_THAT(run(false, true), HasSubstr("mbarrier.init reinitialises shared byte 8"));
  EXPECT_EQ(run(true, false), "(no error)");
}

TEST(SimTensorCore, MmaTf32FragmentsMatchTheProduct) {
  auto A = tegula::testing::random_vector<float>(16 * 8), B = tegula::testing::random_vector<float>(8 * 8),
       C = tegula::testing::random_vector<float>(16 * 8);
  auto tf = [](float f) { return std::bit_cast<float>(std::bit_cast<uint32_t>(f) & 0xffffe000u); };
  std::vector<float> D(16 * 8, NAN);
  runThreads(32, [&] {
    int lane = laneId(), group = lane / 4, tig = lane % 4;
    uint32_t a[4], b[2];
    for (int i = 0; i < 4; ++i)
      a[i] = std::bit_cast<uint32_t>(A[size_t((group + (i & 1) * 8) * 8 + tig + (i >= 2 ? 4 : 0))]);
    for (int i = 0; i < 2; ++i)
      b[i] = std::bit_cast<uint32_t>(B[size_t((tig + 4 * i) * 8 + group)]);
    float c[4], d[4];
    for (int i = 0; i < 4; ++i)
      c[i] = C[size_t((group + (i >= 2 ? 8 : 0)) * 8 + 2 * tig + (i & 1))];
    mmaSync(MmaKind::TF32, a, b, c, d, 0);
    for (int i = 0; i < 4; ++i)
      D[size_t((group + (i >= 2 ? 8 : 0)) * 8 + 2 * tig + (i & 1))] = d[i];
  });
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double ref = C[size_t(m * 8 + n)];
      for (int k = 0; k < 8; ++k)
        ref += double(tf(A[size_t(m * 8 + k)])) * double(tf(B[size_t(k * 8 + n)]));
      EXPECT_NEAR(D[size_t(m * 8 + n)], ref, 1e-5);
    }
}

TEST(SimTensorCore, MmaNeedsTheWholeWarp) {
  std::string e = errorOf([] {
    runThreads(32, [] {
      if (laneId() == 3)
        return;
      uint32_t a[4] = {}, b[2] = {};
      float c[4] = {}, d[4];
      mmaSync(MmaKind::F16, a, b, c, d, 0);
    });
  });
  EXPECT_THAT(e, HasSubstr("deadlock: mma.sync"));
}

TEST(SimTensorCore, CpAsyncLandsOnlyWhenItsGroupIsWaitedFor) {
  alignas(16) std::vector<float> src = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<Buffer> buffers = {bufferOf(src.data(), 32, "src", true)};
  std::vector<float> got(8, NAN);
  runThreads(1, [&] {
    auto *s = reinterpret_cast<float *>(sharedBase());
    cpAsync(s, src.data(), 16, 16, 0);
    cpAsyncCommitGroup();
    cpAsync(s + 4, src.data() + 4, 16, 8, 0); // zero-fills the last 8 bytes
    cpAsyncCommitGroup();
    cpAsyncWaitGroup(1, 0); // the first group only
    EXPECT_EQ(s[0], 1.0f);
    EXPECT_TRUE(std::isnan(s[4])); // still garbage
    cpAsyncWaitGroup(0, 0);
    for (int i = 0; i < 8; ++i)
      got[size_t(i)] = s[i];
  }, 64, buffers);
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4, 5, 6, 0, 0}));
}

TEST(SimTensorCore, ReadingACpAsyncDestinationBeforeWaitingIsReported) {
  alignas(16) std::vector<float> src(4, 1.0f);
  std::vector<Buffer> buffers = {bufferOf(src.data(), 16, "src", true)};
  std::string e = errorOf([&] {
    runThreads(1, [&] {
      cpAsync(sharedBase(), src.data(), 16, 16, 0);
      cpAsyncCommitGroup();
      checkAccess(sharedBase(), 4, AccessKind::Read, Space::Shared, 0);
    }, 64, buffers);
  });
  EXPECT_THAT(e, HasSubstr("which no thread of this CTA had written"));
}

} // namespace
