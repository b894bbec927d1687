// WgmmaFragmentsGpuTest.cpp - Hopper's tensor-core and TMA layouts against
// the hardware, one instruction at a time, so that a wrong assumption shows
// up here by name rather than as a wrong GEMM. Hand-written sm_90a PTX, one
// warpgroup:
//   - shared operands: A and B placed in shared memory as
//     planWgmmaOperandTile says (every swizzle width, K- and MN-major, blocks
//     along M/N), described by its descriptors (descriptorBase +
//     instructionOffset per k step), multiplied by wgmma.mma_async; every
//     accumulator register must hold the element of A*B that
//     mmaAccumulatorLayout names (bf16, tf32, e4m3 and s8);
//   - A from registers: A packed into each thread's registers as
//     mmaOperandLayout says (mma.sync's A fragment, per warp of the
//     warpgroup), B = I. For 8-bit A this is the layout the compiler does not
//     use yet: the probe prints, for any element out of place, where the
//     hardware took it from - what the compiler needs to learn it;
//   - TMA: a box copied by cp.async.bulk.tensor with each swizzle must land
//     where the tile the compiler derives (tmaSwizzleBytes) places it, and a
//     box over the tensor's edges reads zeros there.
// Values are small integers, exact in every type, so a misplaced element
// cannot pass. Without a GPU the GPU cases skip with the reason; ptxas checks
// the PTX, and the probes' own descriptor arithmetic is checked against the
// simulator's independent decoding (simulator/Wgmma.h), here either way.
#include "TestUtil.h"
#include "compiler/layout/MmaLayouts.h"
#include "compiler/layout/WgmmaOperands.h"
#include "runtime/GpuLaunch.h"
#include "simulator/Wgmma.h"
#include "tegula/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include <fmt/format.h>

using namespace tegula;
using namespace tegula::layout;

namespace {

constexpr int kThreads = 128; // one warpgroup
constexpr int64_t kAlign = 1024; // a swizzled tile starts on its period

/// The operand types wgmma takes, as the probes encode them.
enum class Type { bf16, tf32, e4m3, s8 };

int bitsOf(Type t) { return t == Type::bf16 ? 16 : t == Type::tf32 ? 32 : 8; }
int instrK(Type t) { return 256 / bitsOf(t); }
const char *ptxType(Type t) {
  return t == Type::bf16 ? "bf16" : t == Type::tf32 ? "tf32" : t == Type::e4m3 ? "e4m3" : "s8";
}
const char *nameOf(Type t) { return ptxType(t); }

/// The bits of small integer `v` in type `t` (exact: |v| <= 16).
uint32_t encode(Type t, int v) {
  switch (t) {
  case Type::bf16:
    return bfloat16(float(v)).bits;
  case Type::tf32:
    return std::bit_cast<uint32_t>(float(v));
  case Type::e4m3:
    return float8_e4m3(float(v)).bits;
  case Type::s8:
    return uint8_t(int8_t(v));
  }
  return 0;
}

/// Writes `value`'s low `bits` at byte `offset` of `image` (little-endian).
void put(std::vector<uint8_t> &image, int64_t offset, uint32_t value, int bits) {
  ASSERT_LE(size_t(offset) + size_t(bits / 8), image.size());
  for (int i = 0; i < bits / 8; ++i)
    image[size_t(offset) + size_t(i)] = uint8_t(value >> (8 * i));
}

std::vector<int32_t> words(const std::vector<uint8_t> &bytes) {
  std::vector<int32_t> w((bytes.size() + 15) / 16 * 4);
  std::memcpy(w.data(), bytes.data(), bytes.size());
  return w;
}

int64_t roundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// --- the PTX ---------------------------------------------------------------

/// Copies `image_bytes` (a multiple of 16) from `image` into shared `smem`,
/// then fences the async proxy and meets: what the tensor cores read next.
constexpr const char *kCopyImage = R"(
  mov.u32 %r0, %tid.x;
  ld.param.u64 %rd0, [image];
  cvta.to.global.u64 %rd0, %rd0;
  ld.param.u32 %r1, [image_bytes];
  mov.u32 %r2, smem;
  mul.lo.u32 %r3, %r0, 16;
copy:
  setp.ge.u32 %p0, %r3, %r1;
  @%p0 bra copied;
  cvt.u64.u32 %rd1, %r3;
  add.u64 %rd2, %rd0, %rd1;
  ld.global.v4.u32 {%r4, %r5, %r6, %r7}, [%rd2];
  add.u32 %r8, %r2, %r3;
  st.shared.v4.u32 [%r8], {%r4, %r5, %r6, %r7};
  add.u32 %r3, %r3, 2048;
  bra copy;
copied:
  fence.proxy.async.shared::cta;
  barrier.sync 0;
  shr.u32 %r9, %r2, 4;
  and.b32 %r9, %r9, 16383;
  cvt.u64.u32 %rd3, %r9;
  ld.param.u64 %rd4, [desc_a];
  cvta.to.global.u64 %rd4, %rd4;
  ld.param.u64 %rd5, [desc_b];
  cvta.to.global.u64 %rd5, %rd5;
  setp.eq.u32 %p1, %r0, %r0;
)";

/// One wgmma probe: m64 n`n` k(`steps` instructions) of `type`, B from
/// shared memory, A from shared memory (`aRegisters` false) or from the
/// registers each thread loads from `a_regs` (4 words a step, thread-major
/// within a step). Parameters: image, image_bytes, desc_a (one 64-bit
/// descriptor a step, start address relative to the image), desc_b, a_regs,
/// out (each thread's n/2 accumulators, thread-major).
std::string wgmmaPtx(Type type, int n, int steps, bool aRegisters, bool transA, bool transB,
                     int64_t sharedBytes) {
  const bool s8 = type == Type::s8, plain = type == Type::tf32 || bitsOf(type) == 8;
  const int count = n / 2;
  std::string acc;
  for (int i = 0; i < count; ++i)
    acc += fmt::format("{}%d{}", i ? ", " : "", i);
  std::string body = fmt::format(R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry probe(.param .u64 image, .param .u32 image_bytes, .param .u64 desc_a,
                      .param .u64 desc_b, .param .u64 a_regs, .param .u64 out)
.maxntid 128, 1, 1
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .reg .b64 %da<{0}>;
  .reg .b64 %db<{0}>;
  .reg .b32 %a<{1}>;
  .reg .{2} %d<{3}>;
  .shared .align 1024 .b8 smem[{4}];
)",
                                 steps, 4 * steps, s8 ? "s32" : "f32", count, sharedBytes);
  body += kCopyImage;
  if (aRegisters) {
    body += "  ld.param.u64 %rd6, [a_regs];\n  cvta.to.global.u64 %rd6, %rd6;\n"
            "  mul.wide.u32 %rd7, %r0, 16;\n  add.u64 %rd6, %rd6, %rd7;\n";
    for (int s = 0; s < steps; ++s)
      body += fmt::format("  ld.global.v4.u32 {{%a{}, %a{}, %a{}, %a{}}}, [%rd6+{}];\n", 4 * s,
                          4 * s + 1, 4 * s + 2, 4 * s + 3, s * kThreads * 16);
  }
  for (int s = 0; s < steps; ++s) {
    body += fmt::format("  ld.global.u64 %db{0}, [%rd5+{1}];\n  add.u64 %db{0}, %db{0}, %rd3;\n", s, 8 * s);
    if (!aRegisters)
      body += fmt::format("  ld.global.u64 %da{0}, [%rd4+{1}];\n  add.u64 %da{0}, %da{0}, %rd3;\n", s, 8 * s);
  }
  for (int i = 0; i < count; ++i)
    body += s8 ? fmt::format("  mov.s32 %d{}, 0;\n", i) : fmt::format("  mov.f32 %d{}, 0f00000000;\n", i);
  body += "  wgmma.fence.sync.aligned;\n";
  for (int s = 0; s < steps; ++s) {
    const std::string a = aRegisters ? fmt::format("{{%a{}, %a{}, %a{}, %a{}}}", 4 * s, 4 * s + 1,
                                                   4 * s + 2, 4 * s + 3)
                                     : fmt::format("%da{}", s);
    // As the compiler writes them (WgmmaToLLVM.cpp): tf32 and 8-bit types
    // have no transposes, integer wgmma no scales, register A no trans-a.
    const std::string trans = plain        ? ""
                              : aRegisters ? fmt::format(", {}", int(transB))
                                           : fmt::format(", {}, {}", int(transA), int(transB));
    body += fmt::format("  wgmma.mma_async.sync.aligned.m64n{}k{}.{}.{}.{} {{{}}}, {}, %db{}, %p1{}{};\n", n,
                        instrK(type), s8 ? "s32" : "f32", ptxType(type), ptxType(type), acc, a, s,
                        s8 ? "" : ", 1, 1", trans);
  }
  body += "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n"
          "  ld.param.u64 %rd8, [out];\n  cvta.to.global.u64 %rd8, %rd8;\n";
  body += fmt::format("  mul.wide.u32 %rd9, %r0, {};\n  add.u64 %rd8, %rd8, %rd9;\n", 4 * count);
  for (int i = 0; i < count; ++i)
    body += fmt::format("  st.global.{} [%rd8+{}], %d{};\n", s8 ? "s32" : "f32", 4 * i, i);
  return body + "  ret;\n}\n";
}

/// The probes' end: every thread (%r0: its index) waits for phase 0 of the
/// mbarrier at %r1, then the box's bytes at %r2 go to the global address in
/// %rd2, 16 bytes a thread a step; label `done` follows.
std::string waitAndCopyOutPtx(int64_t boxBytes) {
  return fmt::format(R"(wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra wait;
  mul.lo.u32 %r5, %r0, 16;
copy:
  setp.ge.u32 %p2, %r5, {0};
  @%p2 bra done;
  add.u32 %r6, %r2, %r5;
  ld.shared.v4.u32 {{%r7, %r8, %r9, %r10}}, [%r6];
  cvt.u64.u32 %rd3, %r5;
  add.u64 %rd4, %rd2, %rd3;
  st.global.v4.u32 [%rd4], {{%r7, %r8, %r9, %r10}};
  add.u32 %r5, %r5, 2048;
  bra copy;
done:)",
                     boxBytes);
}

/// Copies box (`c0`, `r0`) of the tensor map parameter into shared memory
/// with cp.async.bulk.tensor (an mbarrier expecting `boxBytes`), then the
/// shared bytes as they lie to `out`.
std::string tmaPtx(int64_t boxBytes) {
  return fmt::format(R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry tma_box(.param .u64 src, .param .u64 out, .param .u32 c0, .param .u32 r0,
                        .param .align 64 .b8 map[128])
.maxntid 128, 1, 1
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .shared .align 1024 .b8 box[{0}];
  .shared .align 8 .b64 bar;
  mov.u32 %r0, %tid.x;
  setp.eq.u32 %p0, %r0, 0;
  mov.u32 %r1, bar;
  mov.u32 %r2, box;
  @%p0 mbarrier.init.shared::cta.b64 [%r1], 1;
  @%p0 fence.mbarrier_init.release.cluster;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  ld.param.u32 %r3, [c0];
  ld.param.u32 %r4, [r0];
  mov.b64 %rd1, map;
  cvta.param.u64 %rd1, %rd1;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], {0};
  @%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd1, {{%r3, %r4}}], [%r1];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
{1}
  barrier.sync 0;
  @%p0 mbarrier.inval.shared::cta.b64 [%r1];
  ret;
}}
)",
                     boxBytes, waitAndCopyOutPtx(boxBytes));
}

/// Clusters of 2 CTAs: CTA r copies rows [r, r + 1) * rows / 2 of a box
/// (the tensor map's box is that half) to r * halfBytes of its buffer with
/// multicast to both, each CTA's mbarrier expecting the whole box; both
/// wait, then each writes its buffer to out + ctaid * boxBytes. What the
/// compiler's multicast rings do (TmaToLLVM.cpp), one stage, by hand.
std::string tmaMulticastPtx(int64_t boxBytes) {
  return fmt::format(R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry tma_multicast(.param .u64 src, .param .u64 out, .param .u32 c0, .param .u32 r0,
                              .param .u32 halfRows, .param .align 64 .b8 map[128])
.maxntid 128, 1, 1
.reqnctapercluster 2, 1, 1
{{
  .reg .pred %p<4>;
  .reg .b16 %h<2>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .shared .align 1024 .b8 box[{0}];
  .shared .align 8 .b64 bar;
  mov.u32 %r0, %tid.x;
  setp.eq.u32 %p0, %r0, 0;
  mov.u32 %r1, bar;
  mov.u32 %r2, box;
  @%p0 mbarrier.init.shared::cta.b64 [%r1], 1;
  @%p0 fence.mbarrier_init.release.cluster;
  fence.proxy.async.shared::cta;
  barrier.cluster.arrive.release;
  barrier.cluster.wait.acquire;
  mov.u32 %r11, %cluster_ctarank;
  ld.param.u32 %r3, [c0];
  ld.param.u32 %r4, [r0];
  ld.param.u32 %r12, [halfRows];
  mad.lo.u32 %r4, %r11, %r12, %r4;
  mul.lo.u32 %r13, %r11, {1};
  add.u32 %r13, %r2, %r13;
  mov.b64 %rd1, map;
  cvta.param.u64 %rd1, %rd1;
  mov.b16 %h0, 3;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], {0};
  @%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r13], [%rd1, {{%r3, %r4}}], [%r1], %h0;
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r14, %ctaid.x;
  mul.wide.u32 %rd5, %r14, {0};
  add.u64 %rd2, %rd2, %rd5;
{2}
  barrier.cluster.arrive.release;
  barrier.cluster.wait.acquire;
  @%p0 mbarrier.inval.shared::cta.b64 [%r1];
  ret;
}}
)",
                     boxBytes, boxBytes / 2, waitAndCopyOutPtx(boxBytes));
}

// --- shared operands -------------------------------------------------------

/// A probe's operands: A [64, K] and B [K, N], each contiguous along
/// `aContiguous` / `bContiguous` in shared memory.
struct OperandCase {
  Type type;
  int n, k, aContiguous, bContiguous;
  std::string name() const {
    return fmt::format("{} m64n{}k{}, A {}-major, B {}-major", nameOf(type), n, k,
                       aContiguous == 1 ? "K" : "M", bContiguous == 0 ? "K" : "N");
  }
};

/// The shared image of a probe, its descriptors and what it should compute.
struct Probe {
  std::optional<WgmmaOperandTile> planA, planB;
  int64_t bOffset = 0;
  std::vector<uint8_t> image;
  std::vector<int64_t> descA, descB; // start addresses relative to the image
  std::vector<int32_t> aRegs;        // register A: 4 words a step and thread
  std::vector<int> a, b;             // row-major values
};

/// Places B (and A unless `aRegisters`) as the compiler would: the tiles
/// planWgmmaOperandTile plans, A first, B at the next 1024-byte boundary.
Probe build(const OperandCase &c, bool aRegisters, const std::vector<int> &a, const std::vector<int> &b) {
  Probe p;
  p.a = a, p.b = b;
  const int bits = bitsOf(c.type), K = c.k, N = c.n, steps = K / instrK(c.type);
  if (!aRegisters)
    p.planA = planWgmmaOperandTile(0, {64, K}, c.aContiguous, bits);
  p.planB = planWgmmaOperandTile(1, {K, N}, c.bContiguous, bits);
  if ((!aRegisters && !p.planA) || !p.planB)
    return p;
  p.bOffset = aRegisters ? 0 : roundUp(int64_t(64) * K * bits / 8, kAlign);
  p.image.assign(size_t(roundUp(p.bOffset + int64_t(K) * N * bits / 8, 16)), 0);
  for (int m = 0; m < 64 && !aRegisters; ++m)
    for (int k = 0; k < K; ++k)
      put(p.image, p.planA->tile.offset(m, k), encode(c.type, a[size_t(m * K + k)]), bits);
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      put(p.image, p.bOffset + p.planB->tile.offset(k, n), encode(c.type, b[size_t(k * N + n)]), bits);
  for (int s = 0; s < steps; ++s) {
    const int k0 = s * instrK(c.type);
    if (!aRegisters)
      p.descA.push_back(int64_t(p.planA->descriptorBase()) + (p.planA->instructionOffset(0, k0) >> 4));
    p.descB.push_back(int64_t(p.planB->descriptorBase()) + ((p.bOffset + p.planB->instructionOffset(0, k0)) >> 4));
  }
  if (aRegisters) { // mma.sync's A fragment per warp, one k step after another
    const LinearLayout fragment = mmaOperandLayout(0, {64, K}, bits, {4, 1});
    const int perWord = 32 / bits, perStep = 4 * perWord;
    p.aRegs.assign(size_t(steps * kThreads * 4), 0);
    for (int t = 0; t < kThreads; ++t)
      for (int r = 0; r < fragment.inDimSize("register"); ++r) {
        std::vector<int32_t> mk = fragment.apply({{"register", r}, {"lane", t % 32}, {"warp", t / 32}});
        const int s = r / perStep, word = r % perStep / perWord, slot = r % perWord;
        const uint32_t v = encode(c.type, a[size_t(mk[0] * K + mk[1])]) << (bits * slot);
        p.aRegs[size_t((s * kThreads + t) * 4 + word)] |= int32_t(v);
      }
  }
  return p;
}

std::vector<int> randomValues(size_t count, std::mt19937 &rng) {
  std::uniform_int_distribution<int> d(-3, 3);
  std::vector<int> v(count);
  for (int &x : v)
    x = d(rng);
  return v;
}

/// Runs `p` on the GPU: each thread's accumulators, as (m, n) -> value by
/// mmaAccumulatorLayout.
std::map<std::pair<int, int>, double> runProbe(const OperandCase &c, const Probe &p, bool aRegisters) {
  const int steps = c.k / instrK(c.type);
  const std::string ptx = wgmmaPtx(c.type, c.n, steps, aRegisters, p.planA && !p.planA->kMajor,
                                   !p.planB->kMajor, int64_t(p.image.size()));
  auto kernel = runtime::LoadedKernel::load({}, ptx, "probe");
  using K = ParamInfo::Kind;
  const std::vector<int32_t> image = words(p.image);
  const std::vector<int64_t> descA = p.descA.empty() ? std::vector<int64_t>(1) : p.descA;
  const std::vector<int32_t> aRegs = p.aRegs.empty() ? std::vector<int32_t>(4) : p.aRegs;
  std::vector<int32_t> out(size_t(kThreads * c.n / 2), -1);
  runtime::launchKernel(*kernel, {1}, 4,
                        {{K::Pointer, DType::i32}, {K::Scalar, DType::i32}, {K::Pointer, DType::i64},
                         {K::Pointer, DType::i64}, {K::Pointer, DType::i32}, {K::Pointer, DType::i32}},
                        {Arg(image), Arg(int(image.size() * 4)), Arg(descA), Arg(p.descB), Arg(aRegs), Arg(out)});
  const LinearLayout acc = mmaAccumulatorLayout({64, c.n}, {4, 1});
  std::map<std::pair<int, int>, double> got;
  for (int t = 0; t < kThreads; ++t)
    for (int r = 0; r < c.n / 2; ++r) {
      std::vector<int32_t> mn = acc.apply({{"register", r}, {"lane", t % 32}, {"warp", t / 32}});
      const int32_t bits = out[size_t(t * c.n / 2 + r)];
      got[{mn[0], mn[1]}] = c.type == Type::s8 ? double(bits) : double(std::bit_cast<float>(bits));
    }
  return got;
}

const std::vector<OperandCase> &sharedCases() {
  static const std::vector<OperandCase> cases = {
      // The GEMMs' tiles: A K-major at 128 bytes a row, B N-major.
      {Type::bf16, 64, 64, 1, 1},
      // 64- and 32-byte swizzles; B wider than one swizzle (blocks LBO apart).
      {Type::bf16, 32, 32, 1, 1},
      {Type::bf16, 128, 16, 1, 1},
      // Transposed A (M-major) and K-major B.
      {Type::bf16, 64, 32, 0, 0},
      {Type::tf32, 32, 32, 1, 0},
      {Type::e4m3, 64, 128, 1, 0},
      {Type::s8, 32, 64, 1, 0},
  };
  return cases;
}

const std::vector<OperandCase> &registerCases() {
  static const std::vector<OperandCase> cases = {
      {Type::bf16, 32, 32, 1, 1},
      {Type::tf32, 16, 16, 1, 0},
      {Type::e4m3, 64, 64, 1, 0},
      {Type::s8, 64, 64, 1, 0},
  };
  return cases;
}

bool havePtxas(std::string *path) {
  const char *home = std::getenv("CUDA_HOME");
  *path = std::string(home ? home : "/usr/local/cuda") + "/bin/ptxas";
  return bool(std::ifstream(*path));
}

void expectAssembles(const std::string &ptxas, const std::string &ptx, const std::string &what) {
  std::string file = what; // kept, named after the case, for a failure's reader
  for (char &ch : file)
    if (!std::isalnum(uint8_t(ch)))
      ch = '_';
  std::string path = ::testing::TempDir() + "/probe-" + file + ".ptx";
  std::ofstream(path) << ptx;
  std::string cmd = fmt::format("{} -arch=sm_90a -o /dev/null {} 2>&1", ptxas, path);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << what << ": " << cmd;
}

/// Why the GPU cases cannot run here; empty when a Hopper GPU is present.
std::string whyNoHopper() {
  std::string why;
  if (!gpu_available(&why))
    return "no GPU: " + why;
  if (device_info().chip != "sm_90a")
    return "wgmma and TMA need sm_90a; this device is " + device_info().chip;
  return "";
}
#define SKIP_WITHOUT_HOPPER()                                                                      \
  if (std::string why = whyNoHopper(); !why.empty())                                               \
  GTEST_SKIP() << why

TEST(WgmmaFragmentsGpu, ProbesAssembleForSm90a) {
  std::string ptxas;
  if (!havePtxas(&ptxas))
    GTEST_SKIP() << "no ptxas at " << ptxas << " (CUDA toolkit)";
  std::vector<int> zeros(64 * 256);
  for (bool aRegisters : {false, true})
    for (const OperandCase &c : aRegisters ? registerCases() : sharedCases()) {
      Probe p = build(c, aRegisters, zeros, zeros);
      ASSERT_TRUE(p.planB && (aRegisters || p.planA)) << c.name();
      expectAssembles(ptxas,
                      wgmmaPtx(c.type, c.n, c.k / instrK(c.type), aRegisters, p.planA && !p.planA->kMajor,
                               !p.planB->kMajor, int64_t(p.image.size())),
                      c.name() + (aRegisters ? ", A from registers" : ""));
    }
  expectAssembles(ptxas, tmaPtx(8192), "tma");
  expectAssembles(ptxas, tmaMulticastPtx(8192), "tma multicast");
}

/// The probes' descriptors, decoded by the simulator's own reading of the
/// PTX ISA (independent of planWgmmaOperandTile), address each element where
/// the probe put it: what the GPU cases check is the hardware, not the
/// probes' arithmetic.
TEST(WgmmaFragmentsGpu, ProbeDescriptorsAddressTheirElementsInTheSimulatorsModel) {
  std::vector<int> zeros(64 * 256);
  for (const OperandCase &c : sharedCases()) {
    SCOPED_TRACE(c.name());
    Probe p = build(c, false, zeros, zeros);
    ASSERT_TRUE(p.planA && p.planB);
    const int bytes = bitsOf(c.type) / 8, step = instrK(c.type);
    for (size_t s = 0; s < p.descB.size(); ++s)
      for (int kk = 0; kk < step; ++kk) {
        const int k = int(s) * step + kk;
        for (int m = 0; m < 64; ++m)
          ASSERT_EQ(sim::wgmmaElementOffset(uint64_t(p.descA[s]), p.planA->kMajor, bytes, m, kk),
                    p.planA->tile.offset(m, k))
              << "A[" << m << "][" << k << "]";
        for (int n = 0; n < c.n; ++n)
          ASSERT_EQ(sim::wgmmaElementOffset(uint64_t(p.descB[s]), p.planB->kMajor, bytes, n, kk),
                    p.bOffset + p.planB->tile.offset(k, n))
              << "B[" << k << "][" << n << "]";
      }
  }
}

TEST(WgmmaFragmentsGpu, SharedOperandsAndAccumulatorsAreWhereTheLayoutsSay) {
  SKIP_WITHOUT_HOPPER();
  std::mt19937 rng(11);
  for (const OperandCase &c : sharedCases()) {
    SCOPED_TRACE(c.name());
    Probe p = build(c, false, randomValues(size_t(64 * c.k), rng), randomValues(size_t(c.k * c.n), rng));
    std::printf("[tegula test] %s: A %s, B %s\n", c.name().c_str(), p.planA->tile.toString().c_str(),
                p.planB->tile.toString().c_str());
    auto got = runProbe(c, p, false);
    int wrong = 0;
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < c.n; ++n) {
        double want = 0;
        for (int k = 0; k < c.k; ++k)
          want += double(p.a[size_t(m * c.k + k)]) * p.b[size_t(k * c.n + n)];
        if (got[{m, n}] != want && ++wrong <= 8)
          ADD_FAILURE() << "C[" << m << "][" << n << "] = " << got[{m, n}] << ", want " << want;
      }
    EXPECT_EQ(wrong, 0) << "elements of C wrong";
  }
}

/// B = I, so C is A as the hardware assembled it from the registers. Four
/// runs give each element of A a digit of its row or column (0..15, exact
/// in every type): together they say which element of A each C holds.
TEST(WgmmaFragmentsGpu, RegisterOperandAIsMmaSyncsFragmentPerWarp) {
  SKIP_WITHOUT_HOPPER();
  for (const OperandCase &c : registerCases()) {
    SCOPED_TRACE(c.name() + ", A from registers");
    const int K = c.k;
    std::vector<int> identity(size_t(K * c.n));
    for (int k = 0; k < K; ++k)
      identity[size_t(k * c.n + k)] = 1;
    std::vector<std::map<std::pair<int, int>, double>> runs;
    for (int digit = 0; digit < 4; ++digit) { // m % 16, m / 16, k % 16, k / 16
      std::vector<int> a(size_t(64 * K));
      for (int m = 0; m < 64; ++m)
        for (int k = 0; k < K; ++k) {
          const int v = digit < 2 ? m : k;
          a[size_t(m * K + k)] = digit % 2 ? v / 16 : v % 16;
        }
      runs.push_back(runProbe(c, build(c, true, a, identity), true));
    }
    // A digit that is not one (NaN, a sum of several elements) reads as -1000.
    auto digit = [&](int run, int m, int n) {
      const double v = runs[size_t(run)][{m, n}];
      return v >= 0 && v < 16 && v == std::floor(v) ? int(v) : -1000;
    };
    int wrong = 0;
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < c.n; ++n) {
        const int gotM = digit(0, m, n) + 16 * digit(1, m, n);
        const int gotK = digit(2, m, n) + 16 * digit(3, m, n);
        if ((gotM != m || gotK != n) && ++wrong <= 16)
          ADD_FAILURE() << "A[" << m << "][" << n << "] came from the register the layout gives A[" << gotM
                        << "][" << gotK << "]";
      }
    EXPECT_EQ(wrong, 0) << "elements of A out of place";
  }
}

/// A box copied with each swizzle lands as tmaSwizzleBytes' tile places it;
/// the parts of a box past the tensor's edges are zeros.
TEST(WgmmaFragmentsGpu, TmaBoxesLandWhereTheSwizzledTilesSay) {
  SKIP_WITHOUT_HOPPER();
  struct Box {
    DType dtype;
    int bits, rows, cols; // the box: `cols` spans the swizzle
    int tensorRows, tensorCols, r0, c0;
  };
  const std::vector<Box> boxes = {
      {DType::bf16, 16, 64, 64, 256, 192, 64, 128},  // 128-byte swizzle
      {DType::bf16, 16, 32, 32, 256, 192, 32, 64},   // 64
      {DType::bf16, 16, 16, 16, 256, 192, 16, 32},   // 32
      {DType::i8, 8, 64, 128, 128, 384, 0, 256},     // 8-bit rows of 128 bytes
      {DType::f32, 32, 32, 32, 96, 96, 32, 32},      // f32
      {DType::bf16, 16, 64, 64, 100, 88, 64, 64},    // over both edges (rows of 176 bytes: TMA strides are multiples of 16)
  };
  for (const Box &b : boxes) {
    auto plan = planWgmmaOperandTile(0, {b.rows, b.cols}, 1, b.bits);
    ASSERT_TRUE(plan);
    const std::optional<int> swizzle = tmaSwizzleBytes(plan->tile);
    ASSERT_TRUE(swizzle) << plan->tile.toString();
    SCOPED_TRACE(fmt::format("box {}x{} of {}-bit at ({}, {}) in {}x{}, {}-byte swizzle", b.rows, b.cols, b.bits,
                             b.r0, b.c0, b.tensorRows, b.tensorCols, *swizzle));
    const int bytes = b.bits / 8;
    const int64_t boxBytes = int64_t(b.rows) * b.cols * bytes;
    std::vector<int8_t> src(size_t(b.tensorRows) * b.tensorCols * bytes);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = int8_t(uint8_t(1 + i * 7 % 251)); // never 0: zeros mark the fill
    using V = runtime::TensorMapValue;
    runtime::TensorMapSpec spec{.base = 0,
                                .shape = {V{-1, b.tensorRows}, V{-1, b.tensorCols}},
                                .strides = {V{-1, b.tensorCols}, V{-1, 1}},
                                .box = {b.rows, b.cols},
                                .dtype = b.dtype,
                                .swizzle = *swizzle};
    auto kernel = runtime::LoadedKernel::load({}, tmaPtx(boxBytes), "tma_box", 0, {spec});
    std::vector<int8_t> out(size_t(boxBytes), int8_t(0xee));
    using K = ParamInfo::Kind;
    runtime::launchKernel(*kernel, {1}, 4,
                          {{K::Pointer, DType::i8}, {K::Pointer, DType::i8}, {K::Scalar, DType::i32},
                           {K::Scalar, DType::i32}},
                          {Arg(src), Arg(out), Arg(b.c0), Arg(b.r0)});
    int wrong = 0;
    for (int r = 0; r < b.rows; ++r)
      for (int col = 0; col < b.cols; ++col)
        for (int i = 0; i < bytes; ++i) {
          const int gr = b.r0 + r, gc = b.c0 + col;
          const uint8_t want = gr < b.tensorRows && gc < b.tensorCols
                                   ? uint8_t(src[size_t((int64_t(gr) * b.tensorCols + gc) * bytes + i)])
                                   : 0;
          const uint8_t got = uint8_t(out[size_t(plan->tile.offset(r, col) + i)]);
          if (got != want && ++wrong <= 8)
            ADD_FAILURE() << "element (" << r << ", " << col << ") byte " << i << ": " << int(got) << ", want "
                          << int(want);
        }
    EXPECT_EQ(wrong, 0) << "bytes out of place";
  }
}

/// Multicast in clusters of 2: each CTA copies half of a box's rows into
/// both, and each ends up with the whole box where tmaSwizzleBytes' tile
/// places it - the assumption behind the multicast rings
/// (layout::multicastSliceRows: halves of whole 8-row swizzle periods land
/// where the whole box would put them), and .reqnctapercluster launching
/// clusters through a plain cuLaunchKernel.
TEST(WgmmaFragmentsGpu, MulticastHalvesOfABoxLandInBothCtasOfACluster) {
  SKIP_WITHOUT_HOPPER();
  struct Box {
    DType dtype;
    int bits, rows, cols, tensorRows, tensorCols, r0, c0;
  };
  for (const Box &b : {Box{DType::bf16, 16, 64, 64, 256, 192, 64, 128}, Box{DType::bf16, 16, 32, 32, 256, 192, 32, 64},
                       Box{DType::i8, 8, 256, 128, 512, 384, 128, 256}, Box{DType::bf16, 16, 64, 64, 100, 88, 64, 64}}) {
    auto plan = planWgmmaOperandTile(0, {b.rows, b.cols}, 1, b.bits);
    ASSERT_TRUE(plan);
    const std::optional<int> swizzle = tmaSwizzleBytes(plan->tile);
    ASSERT_TRUE(swizzle && multicastSliceRows(plan->tile, 2));
    SCOPED_TRACE(fmt::format("box {}x{} of {}-bit at ({}, {}) in {}x{}, {}-byte swizzle, halves multicast", b.rows,
                             b.cols, b.bits, b.r0, b.c0, b.tensorRows, b.tensorCols, *swizzle));
    const int bytes = b.bits / 8;
    const int64_t boxBytes = int64_t(b.rows) * b.cols * bytes;
    std::vector<int8_t> src(size_t(b.tensorRows) * b.tensorCols * bytes);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = int8_t(uint8_t(1 + i * 7 % 251)); // never 0: zeros mark the fill
    using V = runtime::TensorMapValue;
    runtime::TensorMapSpec spec{.base = 0,
                                .shape = {V{-1, b.tensorRows}, V{-1, b.tensorCols}},
                                .strides = {V{-1, b.tensorCols}, V{-1, 1}},
                                .box = {b.rows / 2, b.cols},
                                .dtype = b.dtype,
                                .swizzle = *swizzle};
    auto kernel = runtime::LoadedKernel::load({}, tmaMulticastPtx(boxBytes), "tma_multicast", 0, {spec}, 0, 1, 2);
    std::vector<int8_t> out(size_t(2 * boxBytes), int8_t(0xee));
    using K = ParamInfo::Kind;
    runtime::launchKernel(*kernel, {2}, 4,
                          {{K::Pointer, DType::i8}, {K::Pointer, DType::i8}, {K::Scalar, DType::i32},
                           {K::Scalar, DType::i32}, {K::Scalar, DType::i32}},
                          {Arg(src), Arg(out), Arg(b.c0), Arg(b.r0), Arg(b.rows / 2)});
    int wrong = 0;
    for (int cta = 0; cta < 2; ++cta)
      for (int r = 0; r < b.rows; ++r)
        for (int col = 0; col < b.cols; ++col)
          for (int i = 0; i < bytes; ++i) {
            const int gr = b.r0 + r, gc = b.c0 + col;
            const uint8_t want = gr < b.tensorRows && gc < b.tensorCols
                                     ? uint8_t(src[size_t((int64_t(gr) * b.tensorCols + gc) * bytes + i)])
                                     : 0;
            const uint8_t got = uint8_t(out[size_t(cta * boxBytes + plan->tile.offset(r, col) + i)]);
            if (got != want && ++wrong <= 8)
              ADD_FAILURE() << "CTA " << cta << ", element (" << r << ", " << col << ") byte " << i << ": "
                            << int(got) << ", want " << int(want);
          }
    EXPECT_EQ(wrong, 0) << "bytes out of place";
  }
}

} // namespace
