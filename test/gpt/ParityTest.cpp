// ParityTest.cpp - Tegula's GPT-2 against Hugging Face's on the committed
// fixture (models/gpt/parity/make_fixture.py: a seeded random 2-layer model
// run by transformers + torch on the CPU): the same checkpoint loaded, the
// same tokens; every block's output, the logits and the loss compared, with
// the errors printed. In the interpreter and the simulator.
#include "TestUtil.h"
#include "models/gpt/Model.h"
#include "models/gpt/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tegula;
using namespace tegula::gpt;

namespace {

const std::string kFixture = TEGULA_SOURCE_DIR "/models/gpt/parity/fixture/";

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
  std::printf("[parity] %-8s max abs %.2e, rel %.2e\n", what, maxAbs, rel);
  EXPECT_LT(rel, tol) << what;
}

class GptParity : public ::testing::TestWithParam<Backend> {};

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

INSTANTIATE_TEST_SUITE_P(Backends, GptParity, ::testing::Values(Backend::Interp, Backend::Sim),
                         [](const auto &info) { return info.param == Backend::Sim ? "sim" : "interp"; });

} // namespace
