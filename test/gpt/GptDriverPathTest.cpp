// GptDriverPathTest.cpp - GPT-2's GPU path end to end against the recording
// fake CUDA driver (test/fakecuda): a training step (forward, backward,
// clipping, AdamW) and decoding with GPT-2's widths (n_embd 768, 12 heads)
// compile for the fake device (sm_90a: wgmma, TMA rings, warp specialisation
// on and off; or sm_80 with TEGULA_FAKE_CUDA_ARCH=80) and every launch must
// pass the driver's checks - parameters as the PTX declares them, TMA maps
// that cuTensorMapEncodeTiled accepts (aligned bases, strides, boxes, swizzle
// spans), threads within .maxntid, shared memory above 48 KiB opted in. The
// device memory the model holds must be what memory() reports. No kernel
// runs (the numbers are not checked here: the simulator tests do that).
#include "FakeDriverTest.h"
#include "models/gpt/Model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

using namespace tegula;
namespace fake = tegula::fakecuda;
using fake::kUsingFakeDriver;

namespace {

class GptDriverPath : public ::testing::TestWithParam<std::tuple<DType, bool>> {
protected:
  void SetUp() override {
    ASSERT_TRUE(kUsingFakeDriver);
    std::string why;
    ASSERT_TRUE(gpu_available(&why)) << why;
    ASSERT_THAT(device_info().name, ::testing::HasSubstr("fake"));
    fake::tegula_fake_cuda_reset();
  }
};

TEST_P(GptDriverPath, ATrainingStepAndDecodingPassTheDriversChecks) {
  const auto [storage, warpSpecialize] = GetParam();
  gpt::GptConfig config;
  config.n_layer = 1; // GPT-2's widths, one block, a small vocabulary
  config.vocab = 1000;
  config.vocab_padded = 1024;
  config.n_ctx = 256;
  const size_t liveBefore = fake::tegula_fake_cuda_stats().liveBytes;
  {
    gpt::GptModel m(config, Backend::GPU, storage == DType::f32 ? tl::precision::tf32 : tl::precision::ieee,
                    storage);
    m.set_warp_specialize(warpSpecialize);
    m.init_random(1);
    m.init_optimizer();
    const int B = 2, T = 200; // ragged against every block size
    std::vector<int32_t> tokens(B * T), targets(B * T);
    std::iota(tokens.begin(), tokens.end(), 0);
    for (int32_t &t : tokens)
      t %= config.vocab;
    std::iota(targets.begin(), targets.end(), 1);
    for (int32_t &t : targets)
      t %= config.vocab;
    m.forward(tokens, targets, B, T);
    m.zero_grad();
    m.backward();
    m.clip_grad_norm(1.0f);
    const size_t before = fake::tegula_fake_cuda_launches().size();
    m.step({});
    // AdamW: one launch for the matrices (weight decay), one for the vectors.
    std::vector<fake::Launch> launches = fake::tegula_fake_cuda_launches();
    ASSERT_EQ(launches.size(), before + 2) << "an AdamW step is two launches";
    for (size_t i = before; i < launches.size(); ++i)
      EXPECT_THAT(launches[i].kernel, ::testing::HasSubstr("adamw"));
    // Everything the model allocated is device memory the driver saw.
    const gpt::GptModel::Memory mem = m.memory();
    const size_t held = fake::tegula_fake_cuda_stats().liveBytes - liveBefore;
    EXPECT_EQ(int64_t(held), mem.total()) << "memory() is not what the model holds";
    m.generate({1, 2, 3}, 4, {});
    const fake::Stats s = fake::tegula_fake_cuda_stats();
    EXPECT_GT(s.launches, 20u);
    std::printf("[gpt on the fake driver] %s%s: %zu launches, %zu tensor maps encoded, %.1f MiB held\n",
                dtype_name(storage).data(), warpSpecialize ? ", warp specialised" : "", s.launches, s.encodes,
                double(held) / (1 << 20));
    if (storage == DType::bf16 && device_info().chip == "sm_90a")
      EXPECT_GT(s.encodes, 0u) << "the bf16 linear layers read through TMA on sm_90a";
  }
  EXPECT_EQ(fake::tegula_fake_cuda_stats().liveBytes, liveBefore) << "the model leaked device memory";
}

// The blocks' weight gradients run on a stream of their own (bf16 here;
// GptModel::set_overlap_weight_gradients): each ordered after every launch
// the default stream had been given before it - so after the kernels that
// made its x and dy - and the default stream's first launch after backward()
// (clipping) ordered after all of them; wte's gradient stays on the default
// stream beside the token embedding's scatter into it. Block l's activation
// gradients share a buffer with block l + 2's: block l's ln_1, the first
// kernel to write block l - 1's, runs after block l + 1's weight gradients.
TEST(GptDriverPathStreams, WeightGradientsRunBesideTheBackwardInStreamOrder) {
  ASSERT_TRUE(kUsingFakeDriver);
  std::string why;
  ASSERT_TRUE(gpu_available(&why)) << why;
  fake::tegula_fake_cuda_reset();
  gpt::GptConfig config;
  config.n_layer = 4, config.vocab = 1000, config.vocab_padded = 1024, config.n_ctx = 256;
  gpt::GptModel m(config, Backend::GPU, tl::precision::ieee, DType::bf16);
  m.init_random(1);
  const int B = 2, T = 64;
  std::vector<int32_t> tokens(B * T, 7), targets(B * T, 9);
  m.forward(tokens, targets, B, T);
  m.zero_grad();
  const size_t first = fake::tegula_fake_cuda_launches().size();
  m.backward();
  m.clip_grad_norm(1.0f);
  const std::vector<fake::Launch> launches = fake::tegula_fake_cuda_launches();
  CUstream side = nullptr;
  size_t defaultLaunches = 0, sideLaunches = 0, layernorms = 0;
  for (size_t i = first; i < launches.size(); ++i) {
    const fake::Launch &l = launches[i];
    if (!l.stream && l.kernel.find("layernorm_bwd") != std::string::npos) {
      // ln_f, then ln_2 and ln_1 of blocks 3, 2, 1, 0: ln_1 of block b (the
      // (2 (3 - b) + 2)-th) follows block b + 1's four weight gradients,
      // launched 4 (3 - b) side launches in.
      ++layernorms;
      if (layernorms % 2 == 1 && layernorms > 1) {
        const int b = 3 - int(layernorms - 3) / 2;
        if (b > 0 && b < 3)
          EXPECT_GE(l.after.count(side) ? l.after.at(side) : 0, size_t(4 * (3 - b)))
              << "block " << b << "'s ln_1 overwrites block " << b + 1 << "'s gradients before its dW ran";
      }
    }
    if (!l.stream) {
      if (l.kernel.find("sum_of_squares") != std::string::npos) // clipping: after every weight gradient
        EXPECT_EQ(l.after.count(side) ? l.after.at(side) : 0, sideLaunches) << "clipping before the gradients";
      defaultLaunches = l.seq + 1;
      continue;
    }
    EXPECT_THAT(l.kernel, ::testing::HasSubstr("matmul_bwd_dw")) << "only weight gradients beside the backward";
    ASSERT_TRUE(side == nullptr || side == l.stream) << "one side stream";
    side = l.stream;
    ++sideLaunches;
    EXPECT_EQ(l.after.count(nullptr) ? l.after.at(nullptr) : 0, defaultLaunches)
        << l.kernel << " may start before the default stream's launches given before it";
  }
  EXPECT_EQ(sideLaunches, 4u * config.n_layer) << "c_attn, attention's c_proj, c_fc and the MLP's c_proj a block";
  // Off: every launch on the default stream.
  m.set_overlap_weight_gradients(false);
  m.forward(tokens, targets, B, T); // a backward per forward
  const size_t again = fake::tegula_fake_cuda_launches().size();
  m.backward();
  const std::vector<fake::Launch> serial = fake::tegula_fake_cuda_launches();
  for (size_t i = again; i < serial.size(); ++i)
    EXPECT_EQ(serial[i].stream, nullptr) << serial[i].kernel;
}

INSTANTIATE_TEST_SUITE_P(Storage, GptDriverPath,
                         ::testing::Values(std::tuple{DType::f32, false}, std::tuple{DType::bf16, false},
                                           std::tuple{DType::bf16, true}),
                         [](const auto &info) {
                           return std::string(dtype_name(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_ws" : "");
                         });

} // namespace
