// MmaFragmentsGpuTest.cpp - the tensor-core layouts (compiler/layout/
// MmaLayouts.h) against the hardware: hand-written PTX copies a bf16 16x16
// A tile into shared memory, ldmatrix.x4 reads it with the per-lane row
// addresses ldmatrixAddressLayout derives (row-major A, and column-major A
// with .trans), and mma.sync m16n8k16 multiplies it by a B fragment packed
// with mmaOperandLayout. Every register ldmatrix returns must hold the
// element mmaOperandLayout says, and every accumulator register the element
// of A*B mmaAccumulatorLayout says. A's elements are their own index
// (exact in bf16), so a wrong position cannot pass. Without a GPU the
// test is skipped with the reason; ptxas checks the PTX here either way.
#include "TestUtil.h"
#include "compiler/layout/MmaLayouts.h"
#include "runtime/GpuLaunch.h"
#include "tegula/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

using namespace tegula;
using namespace tegula::layout;

namespace {

// One warp. Parameters: A (512 bytes of bf16), row address per lane (byte
// offsets into the shared copy), B fragment (2 x b32 per lane), out_a (the
// 4 registers ldmatrix returned, per lane), out_c (the 4 accumulators).
std::string ptx(bool trans) {
  return fmt::format(R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry fragments(.param .u64 a, .param .u64 rows, .param .u64 b,
                          .param .u64 out_a, .param .u64 out_c)
{{
  .reg .b32 %r<24>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<8>;
  .shared .align 16 .b8 tile[512];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd0, %r0, 16;
  ld.param.u64 %rd1, [a];
  cvta.to.global.u64 %rd1, %rd1;
  add.u64 %rd2, %rd1, %rd0;
  ld.global.v4.u32 {{%r1, %r2, %r3, %r4}}, [%rd2];
  mov.u32 %r5, tile;
  mul.lo.u32 %r6, %r0, 16;
  add.u32 %r7, %r5, %r6;
  st.shared.v4.u32 [%r7], {{%r1, %r2, %r3, %r4}};
  bar.sync 0;
  ld.param.u64 %rd3, [rows];
  cvta.to.global.u64 %rd3, %rd3;
  mul.wide.u32 %rd4, %r0, 4;
  add.u64 %rd5, %rd3, %rd4;
  ld.global.u32 %r8, [%rd5];
  add.u32 %r9, %r5, %r8;
  ldmatrix.sync.aligned.m8n8.x4{}.shared.b16 {{%r10, %r11, %r12, %r13}}, [%r9];
  ld.param.u64 %rd6, [out_a];
  cvta.to.global.u64 %rd6, %rd6;
  add.u64 %rd7, %rd6, %rd0;
  st.global.v4.u32 [%rd7], {{%r10, %r11, %r12, %r13}};
  ld.param.u64 %rd8, [b];
  cvta.to.global.u64 %rd8, %rd8;
  mul.wide.u32 %rd9, %r0, 8;
  add.u64 %rd10, %rd8, %rd9;
  ld.global.v2.u32 {{%r14, %r15}}, [%rd10];
  mov.f32 %f0, 0f00000000;
  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{%f4, %f5, %f6, %f7}},
      {{%r10, %r11, %r12, %r13}}, {{%r14, %r15}}, {{%f0, %f0, %f0, %f0}};
  ld.param.u64 %rd11, [out_c];
  cvta.to.global.u64 %rd11, %rd11;
  add.u64 %rd12, %rd11, %rd0;
  st.global.v4.f32 [%rd12], {{%f4, %f5, %f6, %f7}};
  ret;
}}
)",
                     trans ? ".trans" : "");
}

uint16_t bitsOf(bfloat16 v) { return v.bits; }

struct Result {
  std::vector<int32_t> a, c;
};

void runFragments(bool trans) {
  const LinearLayout opA = mmaOperandLayout(0, {16, 16}, 16, {1, 1});
  const LinearLayout opB = mmaOperandLayout(1, {16, 8}, 16, {1, 1});
  const LinearLayout acc = mmaAccumulatorLayout({16, 8}, {1, 1});
  const LinearLayout rows = ldmatrixAddressLayout(opA, 4, trans);
  // A[m][k] = 16m + k, stored row-major (K contiguous) or, for .trans,
  // column-major (M contiguous).
  auto offsetOf = [&](int32_t m, int32_t k) { return 2 * (trans ? k * 16 + m : m * 16 + k); };
  std::vector<bfloat16> a(256);
  for (int32_t m = 0; m < 16; ++m)
    for (int32_t k = 0; k < 16; ++k)
      a[size_t(offsetOf(m, k) / 2)] = bfloat16(float(16 * m + k));
  std::vector<int32_t> rowAddress(32);
  for (int32_t lane = 0; lane < 32; ++lane) {
    std::vector<int32_t> c = rows.apply({{"lane", lane}});
    rowAddress[size_t(lane)] = offsetOf(c[0], c[1]);
  }
  // B[k][n] = (k + 2n) % 5, packed into each lane's two registers.
  auto bAt = [](int32_t k, int32_t n) { return float((k + 2 * n) % 5); };
  std::vector<int32_t> b(64);
  for (int32_t lane = 0; lane < 32; ++lane)
    for (int32_t r = 0; r < 4; ++r) {
      std::vector<int32_t> c = opB.apply({{"register", r}, {"lane", lane}});
      uint32_t half = bitsOf(bfloat16(bAt(c[0], c[1])));
      b[size_t(2 * lane + r / 2)] |= int32_t(half << (16 * (r % 2)));
    }
  std::vector<int32_t> outA(128, -1);
  std::vector<float> outC(128, NAN);
  auto kernel = runtime::LoadedKernel::load({}, ptx(trans), "fragments");
  using K = ParamInfo::Kind;
  runtime::launchKernel(*kernel, {1}, 1,
                        {{K::Pointer, DType::bf16}, {K::Pointer, DType::i32}, {K::Pointer, DType::i32},
                         {K::Pointer, DType::i32}, {K::Pointer, DType::f32}},
                        {Arg(a), Arg(rowAddress), Arg(b), Arg(outA), Arg(outC)});
  for (int32_t lane = 0; lane < 32; ++lane)
    for (int32_t r = 0; r < 8; ++r) {
      std::vector<int32_t> c = opA.apply({{"register", r}, {"lane", lane}});
      uint32_t word = uint32_t(outA[size_t(4 * lane + r / 2)]);
      bfloat16 got;
      got.bits = uint16_t(word >> (16 * (r % 2)));
      EXPECT_EQ(float(got), float(16 * c[0] + c[1])) << "lane " << lane << " a" << r;
    }
  for (int32_t lane = 0; lane < 32; ++lane)
    for (int32_t r = 0; r < 4; ++r) {
      std::vector<int32_t> c = acc.apply({{"register", r}, {"lane", lane}});
      double ref = 0;
      for (int32_t k = 0; k < 16; ++k)
        ref += double(16 * c[0] + k) * bAt(k, c[1]);
      EXPECT_EQ(outC[size_t(4 * lane + r)], ref) << "lane " << lane << " c" << r;
    }
}

TEST(MmaFragmentsGpu, PtxAssemblesForSm80AndSm90a) {
  const char *home = std::getenv("CUDA_HOME");
  std::string ptxas = std::string(home ? home : "/usr/local/cuda") + "/bin/ptxas";
  if (!std::ifstream(ptxas))
    GTEST_SKIP() << "no ptxas at " << ptxas << " (CUDA toolkit)";
  for (bool trans : {false, true})
    for (const char *chip : {"sm_80", "sm_90a"}) {
      std::string path = ::testing::TempDir() + "/fragments.ptx";
      std::ofstream(path) << ptx(trans);
      std::string cmd = fmt::format("{} -arch={} -o /dev/null {} 2>&1", ptxas, chip, path);
      EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
}

TEST(MmaFragmentsGpu, LdmatrixAndMmaPlaceEveryElementWhereTheLayoutsSay) {
  std::string why;
  if (!gpu_available(&why))
    GTEST_SKIP() << "no GPU: " << why;
  {
    SCOPED_TRACE("row-major A, ldmatrix");
    runFragments(false);
  }
  {
    SCOPED_TRACE("column-major A, ldmatrix.trans");
    runFragments(true);
  }
}

} // namespace
