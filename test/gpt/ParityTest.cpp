// ParityTest.cpp - Tegula's GPT-2 against Hugging Face's on the committed
// fixture (models/gpt/parity/make_fixture.py: a seeded random 2-layer model
// run by transformers + torch on the CPU): the same checkpoint loaded, the
// same tokens; every block's output, the logits and the loss compared, with
// the errors printed. In the interpreter and the simulator.
#include "TestUtil.h"
#include "gpt/GptTestUtil.h"
#include "models/gpt/Model.h"
#include "models/gpt/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace tegula;
using namespace tegula::gpt;

namespace {

const std::string kFixture = tegula::testing::fixtureDir("models/gpt/parity/fixture");

GptConfig fixtureConfig() {
  GptConfig c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 128, c.vocab = 512, c.vocab_padded = 512, c.n_ctx = 64;
  return c;
}

void compare(const char *what, const std::vector<float> &got, const std::vector<float> &want, double tol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double maxAbs = 0, num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << " element " << i;
    const double d = double(got[i]) - want[i];
    maxAbs = std::max(maxAbs, std::abs(d));
    num += d * d, den += double(want[i]) * want[i];
  }
  const double rel = std::sqrt(num / den);
  std::printf("[parity] %-28s max abs %.2e, rel %.2e\n", what, maxAbs, rel);
  EXPECT_LT(rel, tol) << what;
}

class GptParity : public tegula::testing::GptBackendTest {};

TEST_P(GptParity, ForwardMatchesHuggingFace) {
  SafetensorsFile model = SafetensorsFile::read(kFixture + "model.safetensors");
  SafetensorsFile io = SafetensorsFile::read(kFixture + "io.safetensors");
  GptModel m(fixtureConfig(), GetParam());
  m.load(model);
  const std::vector<int32_t> tokens = io.to_i32("tokens"), targets = io.to_i32("targets");
  const int B = int(io.at("tokens").shape[0]), T = int(io.at("tokens").shape[1]);
  const float loss = m.forward(tokens, targets, B, T);
  for (int l = 0; l + 1 < m.config().n_layer; ++l) // HF's last hidden state has ln_f applied
    compare(("block." + std::to_string(l)).c_str(), m.block_output(l), io.to_f32("block." + std::to_string(l)), 1e-5);
  compare("logits", m.logits(), io.to_f32("logits"), 1e-5);
  const float want = io.to_f32("loss")[0];
  std::printf("[parity] loss     %.6f vs Hugging Face %.6f\n", loss, want);
  EXPECT_NEAR(loss, want, 1e-5 * want);
}

// bf16 weights and activations against Hugging Face's f32 run: within bf16's
// rounding (an 8-bit mantissa: ~4e-3 per rounding, a few of them per layer).
TEST_P(GptParity, Bf16ForwardAndGradientsStayCloseToHuggingFace) {
  SafetensorsFile model = SafetensorsFile::read(kFixture + "model.safetensors");
  SafetensorsFile io = SafetensorsFile::read(kFixture + "io.safetensors");
  SafetensorsFile grads = SafetensorsFile::read(kFixture + "grads.safetensors");
  GptModel m(fixtureConfig(), GetParam(), tl::precision::ieee, DType::bf16);
  m.load(model);
  const int B = int(io.at("tokens").shape[0]), T = int(io.at("tokens").shape[1]);
  const float loss = m.forward(io.to_i32("tokens"), io.to_i32("targets"), B, T);
  compare("bf16 block.0", m.block_output(0), io.to_f32("block.0"), 1.5e-2);
  compare("bf16 logits", m.logits(), io.to_f32("logits"), 1.5e-2);
  const float want = io.to_f32("loss")[0];
  std::printf("[parity] bf16 loss %.6f vs Hugging Face %.6f\n", loss, want);
  EXPECT_NEAR(loss, want, 2e-3 * want);
  m.zero_grad();
  m.backward();
  for (const char *name : {"wte.weight", "h.0.attn.c_attn.weight", "h.1.mlp.c_fc.weight", "h.1.mlp.c_proj.weight",
                           "ln_f.weight"})
    compare((std::string("bf16 d ") + name).c_str(), m.read_gradient(name), grads.to_f32(std::string("transformer.") + name),
            3e-2);
}

TEST_P(GptParity, GradientsAndOneAdamWStepMatchHuggingFace) {
  SafetensorsFile model = SafetensorsFile::read(kFixture + "model.safetensors");
  SafetensorsFile io = SafetensorsFile::read(kFixture + "io.safetensors");
  SafetensorsFile grads = SafetensorsFile::read(kFixture + "grads.safetensors");
  SafetensorsFile stepped = SafetensorsFile::read(kFixture + "step.safetensors");
  GptModel m(fixtureConfig(), GetParam());
  m.load(model);
  const int B = int(io.at("tokens").shape[0]), T = int(io.at("tokens").shape[1]);
  m.forward(io.to_i32("tokens"), io.to_i32("targets"), B, T);
  m.zero_grad();
  m.backward();
  for (const ParamSpec &p : m.parameters())
    compare(p.name.c_str(), m.read_gradient(p.name), grads.to_f32("transformer." + p.name), 2e-5);
  // AdamW's first step moves each parameter by lr * g / (|g| + eps): where
  // the gradient is ~0 (the key bias of c_attn: a constant added to a row of
  // scores changes nothing) that ratio is rounding noise on both sides, so
  // those elements are skipped (and counted); exact zeros (positions past T)
  // are compared (only weight decay moves them).
  std::map<std::string, std::vector<float>> ours;
  for (const ParamSpec &p : m.parameters())
    ours[p.name] = m.read_gradient(p.name);
  m.step({.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f});
  for (const ParamSpec &p : m.parameters()) {
    const std::string name = "transformer." + p.name;
    std::vector<float> got = m.read_parameter(p.name), want = stepped.to_f32(name), g = grads.to_f32(name);
    const std::vector<float> &og = ours[p.name];
    size_t skipped = 0;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const float larger = std::max(std::abs(g[i]), std::abs(og[i]));
      if (larger < 1e-6f && !(g[i] == 0.0f && og[i] == 0.0f)) {
        ++skipped;
        continue;
      }
      worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    }
    std::printf("[parity] step %-23s max abs %.2e (%zu of %zu with 0 < |g| < 1e-6 skipped)\n", p.name.c_str(),
                worst, skipped, got.size());
    EXPECT_LT(worst, 2e-6) << p.name; // lr = 1e-3: 0.2% of one step
    EXPECT_LT(skipped, got.size() / 2 + 1) << p.name;
  }
}

/// Greedy decoding with the KV cache on the fixture's model (its matrices
/// scaled by 10, as make_fixture.py does, so it does not repeat one token).
std::vector<int32_t> greedyTokens(Backend backend, DType storage, const SafetensorsFile &io) {
  SafetensorsFile model = SafetensorsFile::read(kFixture + "model.safetensors");
  GptModel m(fixtureConfig(), backend, tl::precision::ieee, storage);
  m.load(model);
  for (const ParamSpec &p : m.parameters())
    if (p.shape.size() >= 2) {
      std::vector<float> v = m.read_parameter(p.name);
      for (float &x : v) x *= 10.0f;
      m.write_parameter(p.name, v);
    }
  return m.generate(io.to_i32("greedy.prompt"), int(io.to_i32("greedy.tokens").size()), {});
}

TEST_P(GptParity, GreedyDecodingWithAKvCacheMatchesHuggingFace) {
  SafetensorsFile io = SafetensorsFile::read(kFixture + "io.safetensors");
  EXPECT_EQ(greedyTokens(GetParam(), DType::f32, io), io.to_i32("greedy.tokens"));
}

TEST_P(GptParity, Bf16GreedyDecodingMatchesHuggingFace) {
  SafetensorsFile io = SafetensorsFile::read(kFixture + "io.safetensors");
  EXPECT_EQ(greedyTokens(GetParam(), DType::bf16, io), io.to_i32("greedy.tokens"));
}

// The GPU's tile sizes (64x64x32 linear layers, 32-row attention blocks at 8
// warps, 1024-wide vocabulary chunks) checked before a GPU runs them: the
// same forward and gradients in the simulator.
TEST(GptParityGpuTiles, ForwardAndGradientsInTheSimulator) {
  SafetensorsFile model = SafetensorsFile::read(kFixture + "model.safetensors");
  SafetensorsFile io = SafetensorsFile::read(kFixture + "io.safetensors");
  SafetensorsFile grads = SafetensorsFile::read(kFixture + "grads.safetensors");
  GptModel m(fixtureConfig(), Backend::Sim);
  m.set_tiles(GptModel::gpu_tiles());
  m.load(model);
  const int B = int(io.at("tokens").shape[0]), T = int(io.at("tokens").shape[1]);
  const float loss = m.forward(io.to_i32("tokens"), io.to_i32("targets"), B, T);
  EXPECT_NEAR(loss, io.to_f32("loss")[0], 1e-5 * loss);
  compare("logits", m.logits(), io.to_f32("logits"), 1e-5);
  m.zero_grad();
  m.backward();
  for (const char *name : {"wte.weight", "h.0.attn.c_attn.weight", "h.1.mlp.c_fc.weight", "ln_f.bias"})
    compare(name, m.read_gradient(name), grads.to_f32(std::string("transformer.") + name), 2e-5);
}

// Hopper: at each chip's f32 tiles with tf32 matmuls, the linear layers'
// forward (through the transposed weights), the tied LM head and its input
// gradient (through wte's transpose), the backward's dx and the blocks'
// weight gradients (through x^T and dy^T) - both operands K-major - run on
// wgmma (m64nNk8, 128 x 256 or 128 x 128 x 32 at 8 warps) through TMA rings
// whose tensor maps round to tf32, as mma.sync rounds in registers; wte's
// gradient (x^T dy, both along B T) on wgmma too, its operands scattered
// into K-major cp.async rings 4 bytes a copy - and so the blocks' weight
// gradients with dw_transposed off; attention (32-row blocks at 8 warps: too
// few rows for wgmma) on mma.sync as on Ampere. The simulator running the
// sm_90a code agrees with it running the sm_80 code (mma.sync) up to the
// order of the sums.
TEST(GptParityGpuTiles, Tf32OnHopperMatchesAmpereInTheSimulator) {
  SafetensorsFile model = SafetensorsFile::read(kFixture + "model.safetensors");
  SafetensorsFile io = SafetensorsFile::read(kFixture + "io.safetensors");
  const int B = int(io.at("tokens").shape[0]), T = int(io.at("tokens").shape[1]);
  // sm_80; sm_90a; sm_90a with the weight gradients read as stored (x^T dy
  // scattered into K-major rings) instead of through transposes.
  std::vector<float> logits[3], grad[3], wteGrad[3];
  for (int i : {0, 1, 2}) {
    setenv("TEGULA_SIM_CHIP", i ? "sm_90a" : "sm_80", 1);
    struct Unset {
      ~Unset() { unsetenv("TEGULA_SIM_CHIP"); }
    } unset;
    GptModel m(fixtureConfig(), Backend::Sim, tl::precision::tf32);
    m.set_tiles(GptModel::gpu_tiles(DType::f32, i ? "sm_90a" : "sm_80").with(i == 2 ? "dw_transposed=0" : ""));
    m.load(model);
    m.forward(io.to_i32("tokens"), io.to_i32("targets"), B, T);
    logits[i] = m.logits();
    m.zero_grad();
    m.backward();
    grad[i] = m.read_gradient("h.0.mlp.c_fc.weight");
    wteGrad[i] = m.read_gradient("wte.weight");
  }
  compare("logits (tf32: wgmma vs mma.sync)", logits[1], logits[0], 1e-5);
  compare("h.0.mlp.c_fc.weight grad (tf32: wgmma vs mma.sync)", grad[1], grad[0], 1e-5);
  compare("wte.weight grad (tf32: wgmma vs mma.sync)", wteGrad[1], wteGrad[0], 1e-5);
  compare("h.0.mlp.c_fc.weight grad (tf32: wgmma, not transposed, vs mma.sync)", grad[2], grad[0], 1e-5);
}

// bf16 mixed precision at the GPU's bf16 tiles for each chip (128x128x32
// linear layers at 8 warps; attention's forward at 128-row blocks, its
// backward at 64 by 64 on sm_80 and 128 stepping 64 on sm_90a, all at 8
// warps), as sm_80 code (mma.sync) and as sm_90a code (wgmma), against
// Hugging Face within bf16's rounding.
TEST(GptParityGpuTiles, Bf16OnAmpereAndHopperInTheSimulator) {
  SafetensorsFile model = SafetensorsFile::read(kFixture + "model.safetensors");
  SafetensorsFile io = SafetensorsFile::read(kFixture + "io.safetensors");
  SafetensorsFile grads = SafetensorsFile::read(kFixture + "grads.safetensors");
  const int B = int(io.at("tokens").shape[0]), T = int(io.at("tokens").shape[1]);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    setenv("TEGULA_SIM_CHIP", chip, 1);
    struct Unset {
      ~Unset() { unsetenv("TEGULA_SIM_CHIP"); }
    } unset;
    GptModel m(fixtureConfig(), Backend::Sim, tl::precision::ieee, DType::bf16);
    m.set_tiles(GptModel::gpu_tiles(DType::bf16, chip));
    m.load(model);
    const float loss = m.forward(io.to_i32("tokens"), io.to_i32("targets"), B, T);
    EXPECT_NEAR(loss, io.to_f32("loss")[0], 2e-3 * loss);
    compare((std::string("bf16 logits ") + chip).c_str(), m.logits(), io.to_f32("logits"), 1.5e-2);
    m.zero_grad();
    m.backward();
    for (const char *name : {"wte.weight", "h.0.attn.c_attn.weight", "h.1.mlp.c_fc.weight"})
      compare((std::string("bf16 d ") + name + " " + chip).c_str(), m.read_gradient(name),
              grads.to_f32(std::string("transformer.") + name), 3e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GptParity, tegula::testing::gptBackends(), tegula::testing::gptBackendName);

} // namespace
