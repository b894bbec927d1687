// SassTest.cpp - what ptxas made of the PTX, read from the machine code
// (CompiledKernel::sass(), nvdisasm): properties the PTX alone cannot show -
// one MUFU an element for the fast math, no slow-path calls, wgmma groups
// issued back to back with one left in flight, stmatrix epilogues. No GPU
// needed: ptxas and nvdisasm (scripts/setup.sh installs the latter).
#include "TestUtil.h"
#include "examples/kernels.h"
#include "kernels/MlpChunks.h"
#include "models/gpt/Attention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

/// The instructions of a SASS listing, in order, without offsets and
/// predicates ("HGMMA.64x256x16.F32.BF16 R24, gdesc[UR20].tnspB, R24, gsb0").
std::vector<std::string> instructions(const std::string &sass) {
  static const std::regex line(R"(^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[T0-9]+\s+)?(.*?)\s*;)");
  std::vector<std::string> out;
  std::istringstream in(sass);
  std::smatch m;
  for (std::string text; std::getline(in, text);)
    if (std::regex_search(text, m, line))
      out.push_back(m[1].str());
  return out;
}

/// How many instructions start with `opcode` ("MUFU.EX2", "HGMMA").
int count(const std::vector<std::string> &code, const std::string &opcode) {
  int n = 0;
  for (const std::string &i : code)
    n += i.compare(0, opcode.size(), opcode) == 0;
  return n;
}

/// A SASS listing's instructions and its loops: each backward branch's
/// span [target label, branch] - leaving out spans through an EXIT, which
/// are not loops: ptxas places the retry paths of mbarrier waits after the
/// kernel's end, branching back.
struct Listing {
  std::vector<std::string> code;
  std::vector<std::pair<size_t, size_t>> loops;
};
Listing listing(const std::string &sass) {
  static const std::regex label(R"(^(\.L_x_\d+):)"), branch(R"(BRA\s+`\((\.L_x_\d+)\))");
  std::map<std::string, size_t> at; // label -> index of the next instruction
  Listing l;
  std::istringstream in(sass);
  std::smatch m;
  for (std::string text; std::getline(in, text);) {
    if (std::regex_search(text, m, label))
      at[m[1].str()] = l.code.size();
    else if (auto one = instructions(text); !one.empty())
      l.code.push_back(one[0]);
  }
  for (size_t i = 0; i < l.code.size(); ++i)
    if (std::regex_search(l.code[i], m, branch) && at.count(m[1].str()) && at[m[1].str()] <= i &&
        std::none_of(l.code.begin() + long(at[m[1].str()]), l.code.begin() + long(i),
                     [](const std::string &c) { return c.starts_with("EXIT"); }))
      l.loops.push_back({at[m[1].str()], i});
  return l;
}

/// The innermost loops of a SASS listing (their instructions), nested loops
/// left out.
std::vector<std::vector<std::string>> innermostLoops(const std::string &sass) {
  const Listing l = listing(sass);
  std::vector<std::vector<std::string>> loops;
  for (auto [begin, end] : l.loops)
    if (std::none_of(l.loops.begin(), l.loops.end(), [&](auto s) {
          return s != std::pair{begin, end} && begin <= s.first && s.second <= end && s.second - s.first > 8;
        }))
      loops.emplace_back(l.code.begin() + long(begin), l.code.begin() + long(end) + 1);
  return loops;
}

/// The SASS of `k`, or why there is none: no ptxas skips (as every ptxas
/// test does); a missing nvdisasm fails, since scripts/setup.sh installs it.
std::optional<std::string> sassOf(const CompiledKernel &k) {
  if (k.cubin.empty())
    return std::nullopt;
  try {
    return k.sass();
  } catch (const Error &e) {
    ADD_FAILURE() << e.what();
    return std::nullopt;
  }
}

#define SKIP_WITHOUT_PTXAS()                                                                       \
  if (!have_ptxas())                                                                               \
  GTEST_SKIP() << "ptxas not found (no CUDA toolkit): no cubin to disassemble"

TEST(Sass, IsTheCubinsMachineCode) {
  SKIP_WITHOUT_PTXAS();
  std::vector<float> x(4096);
  for (std::string chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    CompiledKernel k = kernel("vector_add", examples::vector_add).compile({x, x, x, 4096, 1024}, {.chip = chip});
    auto sass = sassOf(k);
    ASSERT_TRUE(sass);
    EXPECT_THAT(*sass, HasSubstr(".target\t" + chip));
    EXPECT_THAT(*sass, HasSubstr("vector_add:"));
    auto code = instructions(*sass);
    // 1024 floats over 128 threads: two 16-byte loads of each input a
    // thread, two 16-byte stores.
    EXPECT_EQ(count(code, "LDG.E.128"), 4) << *sass;
    EXPECT_EQ(count(code, "STG.E.128"), 2) << *sass;
    EXPECT_GE(count(code, "EXIT"), 1) << *sass;
  }
}

TEST(Sass, SaysWhatIsMissing) {
  EXPECT_THAT(error_of([] { CompiledKernel{}.sass(); }), HasSubstr("no cubin to disassemble"));
  SKIP_WITHOUT_PTXAS();
  std::vector<float> x(1024);
  CompiledKernel k = kernel("vector_add", examples::vector_add).compile({x, x, x, 1024, 1024});
  ScopedEnv missing("TEGULA_NVDISASM", "/nonexistent/nvdisasm");
  EXPECT_THAT(error_of([&] { k.sass(); }), HasSubstr("'/nonexistent/nvdisasm' (TEGULA_NVDISASM) is not an executable"));
}

void exp2_of(tl::ptr<float> x, tl::ptr<float> out, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::arange(0, BLOCK);
  tl::store(out + offs, tl::exp2(tl::load(x + offs)));
}

template <bool Fast> void reciprocal(tl::ptr<float> x, tl::ptr<float> out, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::arange(0, BLOCK);
  tl::tensor v = tl::load(x + offs);
  tl::store(out + offs, Fast ? tl::fdiv(1.0f, v) : 1.0f / v);
}

void approximate_reciprocal(tl::ptr<float> x, tl::ptr<float> out, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::arange(0, BLOCK);
  tl::tensor v = tl::load(x + offs);
  tl::store(out + offs, v * tl::rcp(v + 1.0f));
}

/// tl::exp2 is ex2.approx.ftz: ptxas emits MUFU.EX2 alone - libdevice's
/// non-ftz form gets a compare and two predicated multiplies around it to
/// keep subnormal results.
TEST(Sass, Exp2IsOneMufuAnElement) {
  SKIP_WITHOUT_PTXAS();
  std::vector<float> x(1024);
  for (std::string chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    auto sass = sassOf(kernel("exp2_of", exp2_of).compile({x, x, 1024}, {.chip = chip}));
    ASSERT_TRUE(sass);
    auto code = instructions(*sass);
    EXPECT_EQ(count(code, "MUFU.EX2"), 1024 / 128) << *sass;
    EXPECT_EQ(count(code, "FSETP") + count(code, "FMUL"), 0) << "a fix-up around MUFU.EX2:\n" << *sass;
  }
}

/// tl::fdiv is div.full.f32: one MUFU.RCP an element with its range scaling
/// inline (two compares, selects and predicated multiplies, for divisors
/// beyond 2^126 or below 2^-126) - where `/` (div.rn.f32, IEEE) calls a
/// slow-path subroutine besides.
TEST(Sass, FdivIsAReciprocalWithoutTheSlowPath) {
  SKIP_WITHOUT_PTXAS();
  std::vector<float> x(1024);
  for (std::string chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    auto fast = sassOf(kernel("reciprocal_fdiv", reciprocal<true>).compile({x, x, 1024}, {.chip = chip}));
    auto ieee = sassOf(kernel("reciprocal_ieee", reciprocal<false>).compile({x, x, 1024}, {.chip = chip}));
    ASSERT_TRUE(fast && ieee);
    auto code = instructions(*fast);
    EXPECT_EQ(count(code, "MUFU.RCP"), 1024 / 128) << *fast;
    EXPECT_EQ(count(code, "CALL"), 0) << "a slow-path call:\n" << *fast;
    EXPECT_GT(count(instructions(*ieee), "CALL"), 0) << "div.rn.f32's slow path (the contrast):\n" << *ieee;
  }
}

/// tl::rcp is rcp.approx.ftz.f32: MUFU.RCP alone, none of div.full's range
/// checks around it (x * rcp(x + 1): an add, the MUFU, a multiply).
TEST(Sass, RcpIsOneMufuWithoutRangeChecks) {
  SKIP_WITHOUT_PTXAS();
  std::vector<float> x(1024);
  for (std::string chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    CompiledKernel c = kernel("approximate_reciprocal", approximate_reciprocal).compile({x, x, 1024}, {.chip = chip});
    EXPECT_THAT(c.ptx, HasSubstr("rcp.approx.ftz.f32"));
    EXPECT_THAT(c.ptx, ::testing::Not(HasSubstr("div.")));
    auto sass = sassOf(c);
    ASSERT_TRUE(sass);
    auto code = instructions(*sass);
    EXPECT_EQ(count(code, "MUFU.RCP"), 1024 / 128) << *sass;
    EXPECT_EQ(count(code, "FSETP") + count(code, "CALL"), 0) << "a range check around MUFU.RCP:\n" << *sass;
  }
}

void approximate_gelu(tl::ptr<float> x, tl::ptr<float> out, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::arange(0, BLOCK);
  tl::tensor v = tl::load(x + offs);
  tl::store(out + offs, v * tl::fma(0.5f, tl::tanh_approx(0.8f * v), 0.5f));
}

/// tl::tanh_approx is one MUFU.TANH an element and nothing around it
/// (libdevice's tanhf: ~20 instructions with an exp and a division).
TEST(Sass, TanhApproxIsOneMufu) {
  SKIP_WITHOUT_PTXAS();
  std::vector<float> x(1024);
  for (std::string chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    CompiledKernel c = kernel("approximate_gelu", approximate_gelu).compile({x, x, 1024}, {.chip = chip});
    EXPECT_THAT(c.ptx, HasSubstr("tanh.approx.f32"));
    auto sass = sassOf(c);
    ASSERT_TRUE(sass);
    auto code = instructions(*sass);
    EXPECT_EQ(count(code, "MUFU.TANH"), 1024 / 128) << *sass;
    EXPECT_EQ(count(code, "MUFU"), 1024 / 128) << "other MUFUs around the tanh:\n" << *sass;
  }
}

template <bool Relaxed> void scatter_add(tl::ptr<int32_t> index, tl::ptr<float> x, tl::ptr<float> out) {
  tl::tensor offs = tl::arange(0, 256);
  tl::tensor at = out + tl::load(index + tl::program_id(0)) * 256 + offs;
  if (Relaxed)
    tl::atomic_add(at, tl::load(x + offs), tl::memory_order::relaxed);
  else
    tl::atomic_add(at, tl::load(x + offs));
}

/// tl::atomic_add is acq_rel by default: a GPU-wide fence before each
/// atomic. Relaxed (an accumulation: only the sums matter) has none, and
/// with its result unused ptxas issues a RED reduction, no round trip.
TEST(Sass, RelaxedAtomicsAreReductionsWithoutFences) {
  SKIP_WITHOUT_PTXAS();
  std::vector<int32_t> index(4);
  std::vector<float> x(256), out(1024);
  for (std::string chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    CompiledKernel relaxed = kernel("scatter_add_relaxed", scatter_add<true>).compile({index, x, out}, {.chip = chip});
    CompiledKernel ordered = kernel("scatter_add_acq_rel", scatter_add<false>).compile({index, x, out}, {.chip = chip});
    EXPECT_THAT(relaxed.ptx, HasSubstr("atom.relaxed.gpu.global.add.f32"));
    EXPECT_THAT(ordered.ptx, HasSubstr("atom.acq_rel.gpu.global.add.f32"));
    auto fast = sassOf(relaxed), fenced = sassOf(ordered);
    ASSERT_TRUE(fast && fenced);
    auto code = instructions(*fast);
    EXPECT_EQ(count(code, "RED"), 2) << *fast; // 256 floats, 128 threads
    EXPECT_EQ(count(code, "MEMBAR"), 0) << *fast;
    EXPECT_GT(count(instructions(*fenced), "MEMBAR"), 0) << *fenced;
  }
}

/// The warp-specialised 128x256x64 bf16 GEMM (issue 10's config): each
/// k-block's four m64n256k16 wgmmas issue back to back (one
/// WARPGROUP.ARRIVE, no wait between them), the loop waits for all but the
/// last group (DEPBAR gsb0 0x1: one group in flight while the next stage's
/// wait and the release run), the C tile leaves through stmatrix, and
/// nothing goes to local memory.
TEST(Sass, HopperGemmIssuesEachKBlocksWgmmasBackToBack) {
  SKIP_WITHOUT_PTXAS();
  std::vector<bfloat16> x(256 * 256);
  auto gemm = kernel("matmul_descriptors_sass", examples::matmul_descriptors<bfloat16>,
                     {"a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK"});
  for (bool persistent : {false, true}) {
    SCOPED_TRACE(persistent ? "persistent" : "one tile a program");
    CompiledKernel k =
        persistent ? kernel("matmul_persistent_descriptors_sass", examples::matmul_persistent_descriptors<bfloat16>,
                            {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"})
                         .compile({x, x, x, 4096, 4096, 4096, 128, 256, 64, 8},
                                  {.chip = "sm_90a", .num_warps = 8, .num_stages = 3, .warp_specialize = true})
                   : gemm.compile({x, x, x, 4096, 4096, 4096, 4096, 4096, 4096, 128, 256, 64},
                                  {.chip = "sm_90a", .num_warps = 8, .num_stages = 4, .warp_specialize = true});
    auto sass = sassOf(k);
    ASSERT_TRUE(sass);
    auto code = instructions(*sass);
    EXPECT_EQ(count(code, "HGMMA.64x256x16.F32.BF16"), occurrences(k.ptx, "wgmma.mma_async")) << *sass;
    int groups = 0;
    for (size_t i = 0; i < code.size(); ++i) {
      if (code[i] != "WARPGROUP.ARRIVE")
        continue;
      ++groups;
      int wgmmas = 0;
      size_t j = i + 1;
      for (; j < code.size() && !code[j].ends_with(", gsb0"); ++j) {
        EXPECT_THAT(code[j], Not(HasSubstr("WARPGROUP"))) << "a wait inside the group at instruction " << j;
        wgmmas += code[j].starts_with("HGMMA");
      }
      ASSERT_LT(j, code.size()) << "a wgmma group without its commit";
      EXPECT_EQ(wgmmas + 1, 4) << "64 / 16 wgmmas a k-block";
      // The first wait after the group leaves it in flight.
      while (j < code.size() && !code[j].starts_with("WARPGROUP.DEPBAR"))
        ++j;
      ASSERT_LT(j, code.size());
      EXPECT_EQ(code[j], "WARPGROUP.DEPBAR.LE gsb0, 0x1");
    }
    EXPECT_EQ(groups, 1) << "one wgmma group: the main loop's";
    EXPECT_EQ(count(code, "STSM.16.M88.4"), 16) << "the 128x256 C tile through stmatrix.x4";
    EXPECT_EQ(count(code, "LDL") + count(code, "STL"), 0);
  }
}

/// Attention (128 x 128 blocks, d 128, warp specialised, causal): every
/// exp2 of the online softmax is one MUFU.EX2, the 1 / l of the epilogue one
/// MUFU.RCP a row, and the 32 wgmmas (S = QKᵀ and O += PV, masked and
/// unmasked loops) stay wgmmas.
TEST(Sass, AttentionSoftmaxIsOneMufuAnElement) {
  SKIP_WITHOUT_PTXAS();
  auto k = kernel("attention_fwd_descriptors_sass", examples::attention_fwd_descriptors<bfloat16>,
                  {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
  std::vector<bfloat16> x(256 * 128);
  CompiledKernel c = k.compile({x, x, x, x, 8192, 8192, 0.1f, 128, 128, 128, true},
                               {.chip = "sm_90a", .num_warps = 8, .warp_specialize = true});
  auto sass = sassOf(c);
  ASSERT_TRUE(sass);
  auto code = instructions(*sass);
  EXPECT_EQ(count(code, "MUFU.EX2"), occurrences(c.ptx, "ex2.approx.ftz.f32"));
  EXPECT_EQ(count(code, "MUFU.RCP"), occurrences(c.ptx, "div.full.f32"));
  EXPECT_EQ(count(code, "MUFU"), count(code, "MUFU.EX2") + count(code, "MUFU.RCP"));
  EXPECT_EQ(count(code, "HGMMA"), occurrences(c.ptx, "wgmma.mma_async"));
  EXPECT_EQ(count(code, "HGMMA"), 32);
  EXPECT_EQ(count(code, "CALL") + count(code, "LDL") + count(code, "STL"), 0);
}

/// GPT-2's attention backward on sm_90a at the model's blocks (128 own, 64
/// a step, 8 warps): each loop's CTA barriers. dkdv reloads the logsumexp
/// and delta of its query rows in the mma layout's slice where it converted
/// them through shared memory (remove-layout-conversions); dq's row
/// statistics are converted once before the loop (loop-invariant code
/// motion). What is left without warp specialisation is the TMA ring's
/// barrier; warp specialised, none.
TEST(Sass, AttentionBackwardLoopsKeepTheirBarriersOutside) {
  SKIP_WITHOUT_PTXAS();
  const int C = 768, D = 64;
  std::vector<bfloat16> t(16);
  std::vector<float> f(16);
  const std::vector<std::string> params = {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off",
                                           "stride", "H", "T", "scale", "D", "BM", "BN", "rows", "partial", "bias_sums"};
  auto dkdv = kernel("attention_bwd_dkdv_sass", gpt::kernels::attention_bwd_dkdv_tma<bfloat16, tl::precision::ieee>,
                     params);
  auto dq = kernel("attention_bwd_dq_sass", gpt::kernels::attention_bwd_dq_tma<bfloat16, tl::precision::ieee>, params);
  for (bool ws : {false, true}) {
    const CompileOptions options{.chip = "sm_90a", .num_warps = 8, .warp_specialize = ws};
    for (auto [name, k, args] :
         {std::tuple{"dkdv", &dkdv, std::vector<Arg>{t, t, f, f, t, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, D, 64, 128, 8192, f, true}},
          std::tuple{"dq", &dq, std::vector<Arg>{t, t, f, f, t, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, D, 128, 64, 8192, f, true}}}) {
      SCOPED_TRACE(fmt::format("{}{}", name, ws ? ", warp specialised" : ""));
      auto sass = sassOf(k->compile(args, options));
      ASSERT_TRUE(sass);
      int loopsWithDots = 0;
      for (const auto &loop : innermostLoops(*sass)) {
        if (count(loop, "HGMMA") == 0)
          continue;
        ++loopsWithDots;
        EXPECT_LE(count(loop, "BAR.SYNC"), ws ? 0 : 1) << "in a loop of " << loop.size() << " instructions";
      }
      EXPECT_GE(loopsWithDots, 1);
    }
  }
}

/// ptxas 13.0 gives the registers of a loop-invariant wgmma A operand
/// (fragments an ldmatrix wrote before the loop) to other values inside the
/// loop: on an H100 (2026-11-26) attention through TMA rings, a fused MLP
/// and attention backward computed garbage from the second block on, and
/// the SASS showed the softmax writing into Q's registers. So such operands
/// stay in shared memory (stage-invariant-wgmma-operands): no HGMMA in a
/// loop reads A from registers an LDSM filled before the loop - with and
/// without the loop rotated (overlap-chained-dots), warp specialised or not.
TEST(Sass, NoWgmmaInALoopReadsFragmentsLoadedBeforeIt) {
  SKIP_WITHOUT_PTXAS();
  std::vector<bfloat16> t(16);
  std::vector<float> f(16);
  auto attention = kernel("attention_fwd_descriptors_sass", examples::attention_fwd_descriptors<bfloat16>,
                          {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
  auto mlp = kernel("mlp_chunks_sass", mlp_chunks, {"x", "w1", "w2", "out", "M", "rows", "hidden", "D", "BM", "BH"});
  const std::vector<std::string> params = {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off",
                                           "stride", "H", "T", "scale", "D", "BM", "BN", "rows", "partial", "bias_sums"};
  auto dkdv = kernel("attention_bwd_dkdv_invariant_sass",
                     gpt::kernels::attention_bwd_dkdv_tma<bfloat16, tl::precision::ieee>, params);
  auto dq = kernel("attention_bwd_dq_invariant_sass", gpt::kernels::attention_bwd_dq_tma<bfloat16, tl::precision::ieee>,
                   params);
  auto forward = kernel("attention_fwd_tma_invariant_sass", gpt::kernels::attention_fwd_tma<bfloat16, tl::precision::ieee>,
                        {"qkv", "o", "lse", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "first_block", "D",
                         "BM", "BN", "rows", "diagonal_mask_only"});
  const int C = 768;
  struct Case {
    const char *name;
    Kernel *k;
    std::vector<Arg> args;
    int warps;
  };
  const std::vector<Case> cases = {
      {"attention 64x64, d 64", &attention, {t, t, t, t, 200, 400, 0.125f, 64, 64, 64, false}, 4},
      {"attention 128x128, d 128", &attention, {t, t, t, t, 200, 400, 0.125f, 128, 128, 128, true}, 8},
      {"mlp chunks", &mlp, {t, t, t, f, 100, 320, 320, 64, 64, 64}, 4},
      {"attention dkdv", &dkdv, {t, t, f, f, t, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, 64, 64, 128, 8192, f, true}, 8},
      {"attention dq", &dq, {t, t, f, f, t, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, 64, 128, 64, 8192, f, true}, 8},
      {"GPT-2 attention forward", &forward, {t, t, f, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, 0, 64, 128, 64, 8192, true}, 8},
  };
  // LDSM.16.M88.4 / .M88.2 / .MT88.4 / .M88 (one matrix): Rn and the next
  // count - 1 registers.
  static const std::regex ldsm(R"(^LDSM\.16\.MT?88(?:\.(\d))?\S*\s+R(\d+),)"),
      hgmma(R"(^HGMMA\S*\s+R\d+,\s+R(\d+),)"), written(R"(^[A-Z][A-Z0-9_.]*\s+R(\d+)\b)");
  for (const Case &c : cases)
    for (bool ws : {false, true})
      for (bool rotated : {true, false}) {
        SCOPED_TRACE(fmt::format("{}{}{}", c.name, ws ? ", warp specialised" : "", rotated ? "" : ", not rotated"));
        ScopedEnv overlap("TEGULA_OVERLAP_DOTS", rotated ? nullptr : "0");
        auto sass = sassOf(c.k->compile(c.args, {.chip = "sm_90a", .num_warps = c.warps, .warp_specialize = ws}));
        ASSERT_TRUE(sass);
        const Listing l = listing(*sass);
        int loopsWithDots = 0;
        for (auto [begin, end] : l.loops) {
          std::set<int> loaded; // registers an LDSM wrote before the loop
          std::smatch m;
          for (size_t i = 0; i < begin; ++i)
            if (std::regex_search(l.code[i], m, ldsm))
              for (int r = 0; r < (m[1].matched ? std::stoi(m[1].str()) : 1); ++r)
                loaded.insert(std::stoi(m[2].str()) + r);
          std::set<int> madeInLoop; // registers written in the loop so far
          bool dots = false;
          for (size_t i = begin; i <= end; ++i) {
            if (std::regex_search(l.code[i], m, hgmma)) {
              dots = true;
              for (int r = std::stoi(m[1].str()); r < std::stoi(m[1].str()) + 4; ++r)
                EXPECT_FALSE(loaded.count(r) && !madeInLoop.count(r))
                    << l.code[i] << " reads R" << r << ", loaded by an LDSM before its loop";
            } else if (std::regex_search(l.code[i], m, written)) {
              madeInLoop.insert(std::stoi(m[1].str()));
            }
          }
          loopsWithDots += dots;
        }
        EXPECT_GE(loopsWithDots, 1);
      }
}

} // namespace
