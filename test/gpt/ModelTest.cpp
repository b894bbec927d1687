// ModelTest.cpp - the GPT-2 forward pass (models/gpt/Model) on a small
// random model against a double-precision reference written out here, layer
// by layer; checkpoints round-trip through safetensors bit-exactly; bad
// inputs are clear errors.
#include "TestUtil.h"
#include "gpt/GptTestUtil.h"
#include "models/gpt/Model.h"
#include "models/gpt/Safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace tegula;
using namespace tegula::gpt;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

GptConfig tiny() {
  GptConfig c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 64, c.vocab = 100, c.vocab_padded = 128, c.n_ctx = 32;
  return c;
}

/// GPT-2's forward in double from the model's parameters: the residual
/// stream after each block, the logits and the mean loss.
struct Reference {
  std::vector<std::vector<double>> blocks;
  std::vector<double> logits;
  double loss = 0;
};

Reference reference(const GptModel &m, const std::vector<int32_t> &tok, const std::vector<int32_t> &tgt, int B, int T) {
  const GptConfig &c = m.config();
  const int C = c.n_embd, H = c.n_head, D = C / H, BT = B * T;
  auto P = [&](const std::string &n) {
    std::vector<float> f = m.read_parameter(n);
    return std::vector<double>(f.begin(), f.end());
  };
  auto layernorm = [&](const std::vector<double> &x, const std::string &pre) {
    auto w = P(pre + ".weight"), b = P(pre + ".bias");
    std::vector<double> y(x.size());
    for (int r = 0; r < BT; ++r) {
      double mu = 0, var = 0;
      for (int i = 0; i < C; ++i) mu += x[size_t(r * C + i)];
      mu /= C;
      for (int i = 0; i < C; ++i) var += (x[size_t(r * C + i)] - mu) * (x[size_t(r * C + i)] - mu);
      const double rs = 1 / std::sqrt(var / C + 1e-5);
      for (int i = 0; i < C; ++i) y[size_t(r * C + i)] = (x[size_t(r * C + i)] - mu) * rs * w[size_t(i)] + b[size_t(i)];
    }
    return y;
  };
  auto linear = [&](const std::vector<double> &x, int K, int N, const std::string &pre) {
    auto w = P(pre + ".weight"), b = P(pre + ".bias");
    std::vector<double> y(size_t(BT) * size_t(N));
    for (int r = 0; r < BT; ++r)
      for (int n = 0; n < N; ++n) {
        double acc = b[size_t(n)];
        for (int k = 0; k < K; ++k) acc += x[size_t(r * K + k)] * w[size_t(k * N + n)];
        y[size_t(r * N + n)] = acc;
      }
    return y;
  };
  Reference ref;
  auto wte = P("wte.weight"), wpe = P("wpe.weight");
  std::vector<double> x(size_t(BT) * C);
  for (int r = 0; r < BT; ++r)
    for (int i = 0; i < C; ++i)
      x[size_t(r * C + i)] = wte[size_t(tok[size_t(r)] * C + i)] + wpe[size_t((r % T) * C + i)];
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    auto qkv = linear(layernorm(x, h + "ln_1"), C, 3 * C, h + "attn.c_attn");
    std::vector<double> att(size_t(BT) * C, 0.0);
    for (int b = 0; b < B; ++b)
      for (int hh = 0; hh < H; ++hh)
        for (int i = 0; i < T; ++i) {
          std::vector<double> s(size_t(i + 1));
          double mx = -INFINITY, sum = 0;
          for (int j = 0; j <= i; ++j) {
            double d = 0;
            for (int e = 0; e < D; ++e)
              d += qkv[size_t((b * T + i) * 3 * C + hh * D + e)] * qkv[size_t((b * T + j) * 3 * C + C + hh * D + e)];
            s[size_t(j)] = d / std::sqrt(double(D));
            mx = std::max(mx, s[size_t(j)]);
          }
          for (double &v : s) sum += (v = std::exp(v - mx));
          for (int e = 0; e < D; ++e) {
            double o = 0;
            for (int j = 0; j <= i; ++j) o += s[size_t(j)] / sum * qkv[size_t((b * T + j) * 3 * C + 2 * C + hh * D + e)];
            att[size_t((b * T + i) * C + hh * D + e)] = o;
          }
        }
    auto proj = linear(att, C, C, h + "attn.c_proj");
    for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    auto fc = linear(layernorm(x, h + "ln_2"), C, 4 * C, h + "mlp.c_fc");
    for (double &v : fc) v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    auto mlp = linear(fc, 4 * C, C, h + "mlp.c_proj");
    for (size_t i = 0; i < x.size(); ++i) x[i] += mlp[i];
    ref.blocks.push_back(x);
  }
  auto f = layernorm(x, "ln_f");
  ref.logits.assign(size_t(BT) * size_t(c.vocab), 0.0);
  for (int r = 0; r < BT; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int v = 0; v < c.vocab; ++v) {
      double d = 0;
      for (int i = 0; i < C; ++i) d += f[size_t(r * C + i)] * wte[size_t(v * C + i)];
      ref.logits[size_t(r * c.vocab + v)] = d;
      mx = std::max(mx, d);
    }
    for (int v = 0; v < c.vocab; ++v) sum += std::exp(ref.logits[size_t(r * c.vocab + v)] - mx);
    ref.loss += mx + std::log(sum) - ref.logits[size_t(r * c.vocab + tgt[size_t(r)])];
  }
  ref.loss /= BT;
  return ref;
}

class GptModelTest : public tegula::testing::GptBackendTest {};

/// The column sums' partials (f32 elements): attention's backward's row per
/// `own` rows of a sequence [B cdiv(T, own), 3C], the fused GELU
/// backward's [B T / its BM, 4C], LayerNorm's backward's three [B T /
/// ln_bwd_rows, C].
int64_t columnPartials(const GptModel::Tiles &tiles, int64_t B, int64_t T, int64_t C) {
  const int64_t BT = B * T;
  return B * cdiv(T, tiles.attention_bwd_block) * 3 * C + cdiv(BT, tiles.geluDx()[0]) * 4 * C +
         3 * cdiv(BT, tiles.ln_bwd_rows) * C;
}

TEST_P(GptModelTest, ForwardMatchesTheDoubleReferenceLayerByLayer) {
  const int B = 2, T = 19; // T not a multiple of the attention block
  GptModel m(tiny(), GetParam());
  m.init_random(1234);
  std::mt19937 rng(9);
  std::vector<int32_t> tok(B * T), tgt(B * T);
  for (int i = 0; i < B * T; ++i)
    tok[size_t(i)] = int32_t(rng() % 100), tgt[size_t(i)] = int32_t(rng() % 100);
  const float loss = m.forward(tok, tgt, B, T);
  Reference ref = reference(m, tok, tgt, B, T);
  for (int l = 0; l < m.config().n_layer; ++l) {
    double err = tegula::testing::rel_error(m.block_output(l), ref.blocks[size_t(l)]);
    std::printf("[gpt] block %d: rel error %.2e\n", l, err);
    EXPECT_LT(err, 1e-5) << "block " << l;
  }
  double logitErr = tegula::testing::rel_error(m.logits(), ref.logits);
  std::printf("[gpt] logits rel error %.2e, loss %.6f vs %.6f\n", logitErr, loss, ref.loss);
  EXPECT_LT(logitErr, 1e-5);
  EXPECT_NEAR(loss, ref.loss, 1e-5 * ref.loss);
  EXPECT_NEAR(loss, std::log(100.0), 0.5); // a fresh model predicts ~uniformly
}

// f32 dots at tf32 (tensor cores, as torch's allow_tf32) stay close to exact.
TEST_P(GptModelTest, Tf32MatmulsStayCloseToExact) {
  const int B = 1, T = 16;
  GptModel exact(tiny(), GetParam()), fast(tiny(), GetParam(), tl::precision::tf32);
  exact.init_random(5);
  for (const ParamSpec &p : exact.parameters())
    fast.write_parameter(p.name, exact.read_parameter(p.name));
  std::vector<int32_t> tok(B * T), tgt(B * T);
  for (int i = 0; i < B * T; ++i)
    tok[size_t(i)] = int32_t((i * 37) % 100), tgt[size_t(i)] = int32_t((i * 11 + 3) % 100);
  const float a = exact.forward(tok, tgt, B, T), b = fast.forward(tok, tgt, B, T);
  EXPECT_NEAR(a, b, 1e-3 * a);
  EXPECT_LT(tegula::testing::rel_error(fast.logits(), tegula::testing::to_double(exact.logits())), 5e-3);
  exact.zero_grad(), fast.zero_grad();
  exact.backward(), fast.backward();
  const std::vector<float> g = exact.read_gradient("h.0.mlp.c_fc.weight");
  EXPECT_LT(tegula::testing::rel_error(fast.read_gradient("h.0.mlp.c_fc.weight"), tegula::testing::to_double(g)), 2e-2);
}

// f32 at tf32 keeps its linear layers' weights transposed for their forward
// (K-major, wgmma's order), and wte's for the LM head's input gradient:
// after a step the copies follow the updated master - the next forward and
// backward give what a model loaded with those weights gives, bit for bit -
// and so they do after write_parameter.
TEST_P(GptModelTest, Tf32TransposedWeightsFollowEveryUpdate) {
  const int B = 1, T = 32; // B T reaches the CPU tiles' K-major tile (32): linearTn runs
  std::vector<int32_t> tok(B * T), tgt(B * T);
  for (int i = 0; i < B * T; ++i)
    tok[size_t(i)] = int32_t((i * 37) % 100), tgt[size_t(i)] = int32_t((i * 11 + 3) % 100);
  GptModel trained(tiny(), GetParam(), tl::precision::tf32), loaded(tiny(), GetParam(), tl::precision::tf32);
  int64_t matrices = 0; // the transposed copies: the blocks' matrices and wte
  for (const ParamSpec &p : trained.parameters())
    matrices += p.shape.size() == 2 && p.name != "wpe.weight" ? p.numel() : 0;
  EXPECT_EQ(trained.memory().parameters, (trained.num_parameters() + matrices) * 4);
  trained.init_random(5);
  const std::vector<float> before = (trained.forward(tok, tgt, B, T), trained.logits());
  trained.zero_grad();
  trained.backward();
  trained.step({.lr = 1e-2f});
  trained.forward(tok, tgt, B, T);
  for (const ParamSpec &p : trained.parameters())
    loaded.write_parameter(p.name, trained.read_parameter(p.name));
  loaded.forward(tok, tgt, B, T);
  EXPECT_EQ(trained.logits(), loaded.logits()) << "the forward after the step read stale transposed weights";
  EXPECT_NE(trained.logits(), before);
  trained.zero_grad(), loaded.zero_grad();
  trained.backward(), loaded.backward();
  // Scratch: the column sums' partials and the weight gradients' transposed
  // x and dy (B T x 5 n_embd f32).
  const int64_t C = tiny().n_embd, BT = int64_t(B) * T;
  EXPECT_EQ(trained.memory().scratch, (columnPartials(trained.tiles(), B, T, C) + BT * 5 * C) * 4);
  for (const char *name : {"h.0.attn.c_attn.weight", "h.1.mlp.c_fc.weight", "ln_f.weight"})
    EXPECT_EQ(trained.read_gradient(name), loaded.read_gradient(name)) << name << ": stale transposed weights";
  // The weight gradients (through x^T and dy^T at tf32) accumulate: a
  // second forward and backward without zero_grad doubles them (a second
  // backward of one forward is refused: the first wrote the logits'
  // gradient over them).
  const std::vector<float> once = trained.read_gradient("h.1.mlp.c_fc.weight");
  EXPECT_THAT(tegula::testing::error_of([&] { trained.backward(); }), HasSubstr("once per forward()"));
  EXPECT_THAT(tegula::testing::error_of([&] { (void)trained.logits(); }), HasSubstr("logits() after backward()"));
  trained.forward(tok, tgt, B, T);
  trained.backward();
  std::vector<double> twice;
  for (float g : once)
    twice.push_back(2.0 * g);
  EXPECT_LT(tegula::testing::rel_error(trained.read_gradient("h.1.mlp.c_fc.weight"), twice), 1e-5);
  // And after write_parameter: the step's weights again, as at first.
  GptModel fresh(tiny(), GetParam(), tl::precision::tf32);
  fresh.init_random(5);
  for (const ParamSpec &p : fresh.parameters())
    trained.write_parameter(p.name, fresh.read_parameter(p.name));
  trained.forward(tok, tgt, B, T);
  EXPECT_EQ(trained.logits(), before);
}

// Persistent GEMMs (Tiles::group_m; on the GPU, sm_90a's bf16 default when
// warp specialised): 3 programs (the CPU backends' count) walk the tiles of
// the [B T, N] outputs in groups of 2 row blocks - 81 rows make 3 blocks, the
// last ragged, so every program takes several tiles - and the model computes
// exactly what one program a tile does: the loss, the logits and every
// gradient, in f32 and bf16. Without warp specialisation the tiles are one a
// program again.
TEST_P(GptModelTest, PersistentGemmsComputeWhatOneProgramATileDoes) {
  const int B = 3, T = 27;
  std::mt19937 rng(8);
  std::vector<int32_t> tok(B * T), tgt(B * T);
  for (int i = 0; i < B * T; ++i)
    tok[size_t(i)] = int32_t(rng() % 100), tgt[size_t(i)] = int32_t(rng() % 100);
  for (DType storage : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(storage));
    GptModel plain(tiny(), GetParam(), tl::precision::ieee, storage);
    GptModel persistent(tiny(), GetParam(), tl::precision::ieee, storage);
    GptModel::Tiles tiles = GptModel::cpu_tiles();
    plain.set_tiles(tiles);
    tiles.group_m = 2;
    persistent.set_tiles(tiles);
    ASSERT_TRUE(persistent.warp_specialize()); // the default: group_m applies
    plain.init_random(21);
    for (const ParamSpec &p : plain.parameters())
      persistent.write_parameter(p.name, plain.read_parameter(p.name));
    EXPECT_EQ(plain.forward(tok, tgt, B, T), persistent.forward(tok, tgt, B, T));
    const std::vector<float> plainLogits = plain.logits();
    EXPECT_EQ(plainLogits, persistent.logits());
    plain.zero_grad(), persistent.zero_grad();
    plain.backward(), persistent.backward();
    for (const ParamSpec &p : plain.parameters()) {
      const std::vector<float> want = plain.read_gradient(p.name), got = persistent.read_gradient(p.name);
      if (p.name != "wte.weight") {
        EXPECT_EQ(want, got) << p.name;
        continue;
      }
      // The token embedding's scatter adds with atomics (Kernels.h): on the
      // GPU repeated tokens' rows sum in any order, so wte's gradient is
      // equal only to rounding (the LM head's share is exact either way).
      ASSERT_EQ(want.size(), got.size());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(want[i], got[i], 1e-6f * (1.0f + std::fabs(want[i]))) << "wte.weight[" << i << "]";
    }
    persistent.set_warp_specialize(false);
    persistent.forward(tok, tgt, B, T);
    EXPECT_EQ(plainLogits, persistent.logits());
  }
}

// zero_grad() clears nothing: the next backward's first writers store. After
// two accumulated backwards at T 32 (= n_ctx) leave every gradient nonzero,
// zero_grad and one backward at T 20 give what a fresh model's one backward
// gives - wpe's rows 20..31 zero again; and zero_grad then a read gives zeros.
// f32, bf16 and f32 at tf32 (stream-K and transposed weight gradients, the
// column sums, wte's through the LM head with the token scatter after it).
TEST_P(GptModelTest, ZeroGradStoresInsteadOfClearing) {
  std::mt19937 rng(12);
  auto batch = [&](int B, int T) {
    std::pair<std::vector<int32_t>, std::vector<int32_t>> b;
    for (int i = 0; i < B * T; ++i)
      b.first.push_back(int32_t(rng() % 100)), b.second.push_back(int32_t(rng() % 100));
    return b;
  };
  const auto [longTok, longTgt] = batch(2, 32);
  const auto [tok, tgt] = batch(3, 20);
  // f32 at tf32 takes the weight gradients from transposed copies
  // (matmulDwTn), whose first writer stores too.
  for (auto [storage, precision] : {std::pair{DType::f32, tl::precision::ieee}, std::pair{DType::bf16, tl::precision::ieee},
                                    std::pair{DType::f32, tl::precision::tf32}}) {
    SCOPED_TRACE(fmt::format("{} {}", dtype_name(storage), precision == tl::precision::tf32 ? "tf32" : "ieee"));
    GptModel used(tiny(), GetParam(), precision, storage), fresh(tiny(), GetParam(), precision, storage);
    used.init_random(4);
    for (const ParamSpec &p : used.parameters())
      fresh.write_parameter(p.name, used.read_parameter(p.name));
    for (int i = 0; i < 2; ++i) {
      used.forward(longTok, longTgt, 2, 32);
      used.backward();
    }
    used.zero_grad();
    for (const ParamSpec &p : used.parameters())
      for (float g : used.read_gradient(p.name))
        ASSERT_EQ(g, 0.0f) << p.name << " after zero_grad";
    used.forward(longTok, longTgt, 2, 32);
    used.backward();
    used.zero_grad();
    used.forward(tok, tgt, 3, 20), fresh.forward(tok, tgt, 3, 20);
    used.backward(), fresh.backward();
    for (const ParamSpec &p : used.parameters()) {
      const std::vector<float> want = fresh.read_gradient(p.name), got = used.read_gradient(p.name);
      if (p.name != "wte.weight") { // wte: the token scatter's atomics add in any order on the GPU
        EXPECT_EQ(want, got) << p.name;
        continue;
      }
      ASSERT_EQ(want.size(), got.size());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(want[i], got[i], 1e-6f * (1.0f + std::fabs(want[i]))) << "wte.weight[" << i << "]";
    }
    const std::vector<float> wpe = used.read_gradient("wpe.weight");
    const int C = tiny().n_embd;
    EXPECT_TRUE(std::all_of(wpe.begin() + 20 * C, wpe.end(), [](float g) { return g == 0.0f; }))
        << "wpe's rows past T keep the earlier backwards' gradients";
    EXPECT_TRUE(std::any_of(wpe.begin(), wpe.begin() + 20 * C, [](float g) { return g != 0.0f; }));
  }
}

// Three blocks: block 0's activation gradients reuse block 2's buffer (two
// alternate), so a block reading what another left there shows here. The
// gradients of sampled parameters of every block, the embeddings and ln_f
// against central differences of the loss (f32, exact dots).
TEST_P(GptModelTest, GradientsOfThreeBlocksMatchFiniteDifferences) {
  GptConfig c = tiny();
  c.n_layer = 3;
  const int B = 2, T = 12;
  std::mt19937 rng(17);
  std::vector<int32_t> tok(B * T), tgt(B * T);
  for (int i = 0; i < B * T; ++i)
    tok[size_t(i)] = int32_t(rng() % 100), tgt[size_t(i)] = int32_t(rng() % 100);
  GptModel m(c, GetParam());
  m.init_random(3);
  m.forward(tok, tgt, B, T);
  m.zero_grad();
  m.backward();
  for (const char *name : {"h.0.attn.c_attn.weight", "h.0.mlp.c_fc.weight", "h.0.ln_1.weight", "h.1.mlp.c_proj.bias",
                           "h.2.attn.c_proj.weight", "h.2.ln_2.bias", "ln_f.weight", "wpe.weight", "wte.weight"}) {
    const std::vector<float> grad = m.read_gradient(name), w = m.read_parameter(name);
    for (int s = 0; s < 2; ++s) {
      size_t i = rng() % w.size();
      if (std::string(name) == "wte.weight") // a row the batch uses: tokens[0]'s
        i = size_t(tok[0]) * size_t(c.n_embd) + rng() % size_t(c.n_embd);
      const float h = 1e-2f;
      auto at = [&](float v) {
        std::vector<float> moved = w;
        moved[i] = v;
        m.write_parameter(name, moved);
        return double(m.forward(tok, tgt, B, T));
      };
      const double fd = (at(w[i] + h) - at(w[i] - h)) / (2 * h);
      m.write_parameter(name, w);
      EXPECT_NEAR(grad[i], fd, 2e-3 + 2e-2 * std::abs(fd)) << name << "[" << i << "]";
    }
  }
}

// Mixed precision: bf16 weights and activations (f32 math, f32 master
// weights, gradients and AdamW state) against the f32 model on the same
// weights - the forward to bf16's 8-bit mantissa, every parameter's gradient
// close, and the step updates the master in f32 and the bf16 copy with it.
TEST_P(GptModelTest, Bf16MixedPrecisionTracksF32) {
  const int B = 2, T = 19;
  GptModel f32(tiny(), GetParam()), bf16(tiny(), GetParam(), tl::precision::ieee, DType::bf16);
  EXPECT_EQ(bf16.storage(), DType::bf16);
  f32.init_random(11);
  for (const ParamSpec &p : f32.parameters())
    bf16.write_parameter(p.name, f32.read_parameter(p.name));
  std::mt19937 rng(4);
  std::vector<int32_t> tok(B * T), tgt(B * T);
  for (int i = 0; i < B * T; ++i)
    tok[size_t(i)] = int32_t(rng() % 100), tgt[size_t(i)] = int32_t(rng() % 100);
  const float a = f32.forward(tok, tgt, B, T), b = bf16.forward(tok, tgt, B, T);
  ASSERT_FALSE(std::isnan(b));
  for (int l = 0; l < tiny().n_layer; ++l) {
    double err = tegula::testing::rel_error(bf16.block_output(l), tegula::testing::to_double(f32.block_output(l)));
    std::printf("[gpt bf16] block %d: rel error %.2e vs f32\n", l, err);
    EXPECT_LT(err, 1.5e-2) << "block " << l;
  }
  const double logitErr = tegula::testing::rel_error(bf16.logits(), tegula::testing::to_double(f32.logits()));
  std::printf("[gpt bf16] logits rel error %.2e, loss %.5f vs %.5f\n", logitErr, b, a);
  EXPECT_LT(logitErr, 1.5e-2);
  EXPECT_NEAR(b, a, 2e-3 * a);

  f32.zero_grad(), bf16.zero_grad();
  f32.backward(), bf16.backward();
  double worst = 0;
  for (const ParamSpec &p : f32.parameters()) {
    const std::vector<float> g = f32.read_gradient(p.name), h = bf16.read_gradient(p.name);
    for (float v : h)
      ASSERT_TRUE(std::isfinite(v)) << p.name;
    // Gradients that are rounding noise in f32 (c_attn's key bias: exactly 0
    // in exact arithmetic) have no relative error to speak of.
    double norm = 0;
    for (float v : g) norm += double(v) * v;
    if (std::sqrt(norm) < 1e-5)
      continue;
    const double err = tegula::testing::rel_error(h, tegula::testing::to_double(g));
    worst = std::max(worst, err);
    EXPECT_LT(err, 3e-2) << p.name;
  }
  std::printf("[gpt bf16] worst gradient rel error %.2e vs f32\n", worst);

  // The step: AdamW on the f32 master weights (their gradients are f32 too),
  // after which the bf16 model runs on the rounded new weights.
  f32.step({.lr = 1e-3f}), bf16.step({.lr = 1e-3f});
  int close = 0, total = 0, representable = 0;
  for (const ParamSpec &p : f32.parameters()) {
    const std::vector<float> w = bf16.read_parameter(p.name), ref = f32.read_parameter(p.name);
    for (size_t i = 0; i < w.size(); ++i, ++total) {
      close += std::abs(w[i] - ref[i]) <= 2.0f * 1e-3f + 1e-7f; // Adam's first step moves ~lr per element
      representable += float(bfloat16(w[i])) == w[i];
    }
  }
  EXPECT_EQ(close, total) << "master weights more than two steps apart";
  // The master weights are f32: few of them are bf16 numbers (zeros, ones and
  // the padding are).
  std::printf("[gpt bf16] %d of %d master weights are bf16 numbers\n", representable, total);
  EXPECT_LT(representable, total / 4);
  const float after32 = f32.forward(tok, tgt, B, T), after16 = bf16.forward(tok, tgt, B, T);
  std::printf("[gpt bf16] loss after one step %.5f vs f32 %.5f\n", after16, after32);
  EXPECT_LT(after16, b);
  EXPECT_NEAR(after16, after32, 2e-3 * after32);
}

INSTANTIATE_TEST_SUITE_P(Backends, GptModelTest, tegula::testing::gptBackends(), tegula::testing::gptBackendName);

/// Trains a 2-layer model for 30 steps on a repeated sentence: the loss of
/// the first and of the last step.
std::pair<float, float> trainOnARepeatedSentence(DType storage) {
  GptConfig c = tiny();
  c.vocab = 64, c.vocab_padded = 64;
  GptModel m(c, Backend::Interp, tl::precision::ieee, storage);
  m.init_random(3);
  const std::string text = "the quick brown fox jumps over the lazy dog. ";
  const int B = 2, T = 16;
  std::vector<int32_t> tok(B * T), tgt(B * T);
  float first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    for (int b = 0; b < B; ++b) // windows sliding over the repeated sentence
      for (int t = 0; t < T; ++t) {
        const size_t at = size_t(step * 3 + b * 7 + t);
        tok[size_t(b * T + t)] = int32_t(text[at % text.size()] % 64);
        tgt[size_t(b * T + t)] = int32_t(text[(at + 1) % text.size()] % 64);
      }
    const float loss = m.forward(tok, tgt, B, T);
    EXPECT_FALSE(std::isnan(loss)) << "step " << step;
    (step == 0 ? first : last) = loss;
    m.zero_grad();
    m.backward();
    m.step({.lr = 3e-3f});
  }
  std::printf("[gpt %s] loss %.3f -> %.3f in 30 steps\n", std::string(dtype_name(storage)).c_str(), first, last);
  return {first, last};
}

TEST(GptModel, LossFallsOnARepetitiveCorpusWithin30Steps) {
  auto [first, last] = trainOnARepeatedSentence(DType::f32);
  EXPECT_LT(last, 0.5f * first);
}

TEST(GptModel, LossFallsWithin30StepsInBf16MixedPrecision) {
  auto [first, last] = trainOnARepeatedSentence(DType::bf16);
  EXPECT_LT(last, 0.5f * first);
}

// memory() counts exactly the bytes the model allocates, computed here from
// the configuration: parameters (f32 master, + the bf16 copy), f32
// gradients and AdamW state, the activations of B x T (storage-typed
// tensors, f32 statistics, each with its gradient; the batch's tokens and
// targets) and the scratch: clipping's and the column sums' partials, the
// stream-K weight gradients' workspace. (On the GPU path the same equality
// holds for the device memory the driver saw: GptDriverPathTest.)
TEST(GptModel, MemoryAccountingIsWhatTheModelAllocates) {
  const GptConfig c = tiny();
  const int B = 2, T = 19, BT = B * T, C = c.n_embd, H = c.n_head, L = c.n_layer, Vp = c.vocab_padded;
  for (DType storage : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(storage)));
    GptModel m(c, Backend::Interp, tl::precision::ieee, storage);
    const int64_t n = m.num_parameters(), e = int64_t(dtype_size(storage));
    EXPECT_EQ(m.memory().parameters, n * (storage == DType::bf16 ? 6 : 4));
    EXPECT_EQ(m.memory().gradients, 0); // until a backward: a model that only generates holds none
    EXPECT_EQ(m.memory().optimizer, 0);
    m.init_optimizer();
    EXPECT_EQ(m.memory().optimizer, n * 8);
    m.init_random(2);
    std::vector<int32_t> tok(size_t(BT), 3), tgt(size_t(BT), 4);
    m.forward(tok, tgt, B, T);
    // A block: 18 [B T, C] tensors (qkv 3, the MLP's three 4), statistics
    // with their gradients; the gradients of 12 of the tensors (not fch,
    // attproj, fcproj) in two buffers the blocks take turns with.
    const int64_t perLayer = 18 * int64_t(BT) * C * e + 2 * (4 * int64_t(BT) + int64_t(B) * H * T) * 4;
    // The embeddings' and ln_f's output with their gradients, the logits
    // (their gradient written over them), four statistics of a row (ln_f's
    // mean and rstd, the loss and its logsumexp) and attention's delta with
    // theirs.
    const int64_t rest = 2 * 2 * int64_t(BT) * C * e + int64_t(BT) * Vp * e +
                         2 * (4 * int64_t(BT) + int64_t(B) * H * T) * 4 +
                         std::min<int64_t>(L, 2) * 12 * int64_t(BT) * C * e +
                         2 * int64_t(BT) * 4; // the batch: tokens and targets
    GptModel::Memory mem = m.memory();
    EXPECT_EQ(mem.activations_per_layer, perLayer);
    EXPECT_EQ(mem.activations, L * perLayer + rest);
    m.zero_grad();
    m.backward();
    m.clip_grad_norm(1.0f);
    mem = m.memory();
    EXPECT_EQ(mem.gradients, n * 4);
    // The stream-K weight gradients' workspace: two f32 partial blocks for
    // each of the CPU backends' 3 programs, an i32 counter a tile of the
    // MLP's gradients.
    const GptModel::Tiles &t = m.tiles();
    const int dwn = t.dw_bn ? t.dw_bn : t.bn; // the blocks' weight gradients' N block
    const int64_t streamK = 2 * 3 * int64_t(t.bm) * dwn * 4 +
                            std::max(cdiv(C, t.bm) * cdiv(4 * C, dwn), cdiv(4 * C, t.bm) * cdiv(C, dwn)) * 4;
    EXPECT_EQ(mem.scratch, (cdiv(n, 4096) + 1) * 4 + columnPartials(m.tiles(), B, T, C) * 4 + streamK);
    EXPECT_EQ(mem.total(), mem.parameters + mem.gradients + mem.optimizer + mem.activations + mem.scratch);
    EXPECT_EQ(mem.peak, mem.total());
    m.forward(std::vector<int32_t>(size_t(T), 3), {}, 1, T); // smaller activations: the peak stays
    EXPECT_LT(m.memory().total(), mem.peak);
    EXPECT_EQ(m.memory().peak, mem.peak);
  }
}

// Generation ends after the stop token (Hugging Face's eos_token_id), and
// each token reaches on_token as it is chosen. A model whose every logit is 0
// but the stop token's (ln_f gives its bias, 1s; wte's row 42 alone is not
// zero) chooses it at every step.
TEST(GptModel, GenerationEndsAtTheStopToken) {
  GptModel m(tiny(), Backend::Interp);
  const int32_t stop = 42;
  for (const ParamSpec &p : m.parameters()) {
    std::vector<float> v(size_t(p.numel()), 0.0f);
    if (p.name == "ln_f.bias")
      std::fill(v.begin(), v.end(), 1.0f);
    if (p.name == "wte.weight")
      std::fill_n(v.begin() + int64_t(stop) * m.config().n_embd, m.config().n_embd, 1.0f);
    m.write_parameter(p.name, v);
  }
  std::vector<int32_t> seen;
  GptModel::Sampling greedy{.stop_tokens = {7, stop}, .on_token = [&](int32_t t) { seen.push_back(t); }};
  EXPECT_EQ(m.generate({1, 2}, 5, greedy), std::vector<int32_t>{stop});
  EXPECT_EQ(seen, std::vector<int32_t>{stop});
  EXPECT_EQ(m.generate({1, 2}, 3, {}), std::vector<int32_t>(3, stop)); // no stop token: all 3
  EXPECT_EQ(m.memory().gradients, 0); // generating allocates no gradients
  EXPECT_THAT(tegula::testing::error_of([&] { m.generate({1}, 1, {.stop_tokens = {100}}); }),
              HasSubstr("a stop token is a token of the vocabulary [0, 100), not 100"));
}

TEST(GptModel, CheckpointsRoundTripThroughSafetensors) {
  GptModel a(tiny(), Backend::Interp), b(tiny(), Backend::Interp);
  a.init_random(7);
  std::vector<std::vector<float>> values;
  std::vector<TensorToWrite> tensors;
  for (const ParamSpec &p : a.parameters()) {
    values.push_back(a.read_parameter(p.name));
    std::vector<int64_t> shape = p.shape;
    if (p.name == "wte.weight") { // the file holds the real vocabulary only
      shape[0] = a.config().vocab;
      values.back().resize(size_t(shape[0] * shape[1]));
    }
    tensors.push_back({"transformer." + p.name, shape, values.back()});
  }
  b.load(SafetensorsFile::parse(serialize_safetensors(tensors), "ckpt"));
  for (const ParamSpec &p : a.parameters())
    ASSERT_EQ(a.read_parameter(p.name), b.read_parameter(p.name)) << p.name; // bit-exact
}

TEST(GptModel, BadConfigsAndInputsAreClearErrors) {
  GptConfig c = tiny();
  c.n_embd = 66;
  EXPECT_THAT(tegula::testing::error_of([&] { GptModel(c, Backend::Interp); }), HasSubstr("n_embd 66 is not a multiple of n_head 4"));
  c.n_embd = 60;
  EXPECT_THAT(tegula::testing::error_of([&] { GptModel(c, Backend::Interp); }), HasSubstr("head size n_embd / n_head = 15"));
  c = tiny();
  c.vocab_padded = 50;
  EXPECT_THAT(tegula::testing::error_of([&] { GptModel(c, Backend::Interp); }), HasSubstr("vocab_padded 50 is smaller than vocab 100"));
  // The LM head's rows go through tensor descriptors in bf16 and f32 at tf32.
  c.vocab_padded = 102;
  EXPECT_THAT(tegula::testing::error_of([&] { GptModel(c, Backend::Interp, tl::precision::tf32); }),
              HasSubstr("vocab_padded 102 makes the LM head's rows 408 bytes; its tensor descriptors need a multiple "
                        "of 16 bytes (pad the vocabulary to a multiple of 4)"));
  EXPECT_THAT(tegula::testing::error_of([&] { GptModel(c, Backend::Interp, tl::precision::ieee, DType::bf16); }),
              HasSubstr("pad the vocabulary to a multiple of 8"));
  EXPECT_NO_THROW(GptModel(c, Backend::Interp)); // f32 at ieee: pointer loads
  EXPECT_THAT(tegula::testing::error_of([&] { GptModel(tiny(), Backend::Interp, tl::precision::ieee, DType::f16); }),
              HasSubstr("f16 storage is not supported: f32, or bf16 with f32 master weights (f16 would need loss scaling"));
  GptModel m(tiny(), Backend::Interp);
  // A model nobody filled ran on zeros: a plausible loss of ln(vocab).
  const std::string neverSet = "parameters were never set (wte.weight, wpe.weight, h.0.ln_1.weight, ...): call "
                               "init_random(seed), load a checkpoint, or write each one";
  EXPECT_THAT(tegula::testing::error_of([&] { m.forward({1, 2, 3, 4}, {2, 3, 4, 5}, 1, 4); }),
              AllOf(HasSubstr("GPT forward: " + std::to_string(m.parameters().size()) + " of the model's"),
                    HasSubstr(neverSet)));
  EXPECT_THAT(tegula::testing::error_of([&] { m.generate({1, 2}, 2, {}); }), HasSubstr("GPT generate: "));
  for (const ParamSpec &p : m.parameters()) // all but one written: that one is named
    if (p.name != "h.0.mlp.c_fc.bias")
      m.write_parameter(p.name, std::vector<float>(size_t(p.numel()), 0.01f));
  EXPECT_THAT(tegula::testing::error_of([&] { m.forward({1, 2, 3, 4}, {}, 1, 4); }),
              HasSubstr("GPT forward: 1 of the model's " + std::to_string(m.parameters().size()) +
                        " parameters were never set (h.0.mlp.c_fc.bias)"));
  m.init_random(1);
  EXPECT_THAT(tegula::testing::error_of([&] { m.forward({1, 2, 3}, {}, 1, 4); }), HasSubstr("3 tokens and 0 targets for B x T = 4"));
  EXPECT_THAT(tegula::testing::error_of([&] { m.forward({1, 200}, {}, 1, 2); }), HasSubstr("token 200 is outside the vocabulary"));
  EXPECT_THAT(tegula::testing::error_of([&] { m.forward(std::vector<int32_t>(40), {}, 1, 40); }), HasSubstr("n_ctx = 32"));
  std::vector<float> one = {1.0f};
  EXPECT_THAT(tegula::testing::error_of([&] { m.load(SafetensorsFile::parse(serialize_safetensors({{"wte.weight", {1}, one}}), "small")); }),
              HasSubstr("tensor 'wte.weight' has shape [1], expected [100, 64]"));
  EXPECT_THAT(tegula::testing::error_of([&] { m.generate({1, 2}, -3, {}); }),
              HasSubstr("GPT generate: the count of new tokens is 0 or more, not -3"));
  // A NaN in the weights (a run that diverged) is an error, not whatever
  // token an undefined sort and draw give.
  const ParamSpec &lnf = *std::find_if(m.parameters().begin(), m.parameters().end(),
                                       [](const ParamSpec &p) { return p.name == "ln_f.weight"; });
  std::vector<float> poisoned(size_t(lnf.numel()), 1.0f);
  poisoned[3] = NAN;
  m.write_parameter("ln_f.weight", poisoned);
  for (float temperature : {0.0f, 0.8f})
    EXPECT_THAT(tegula::testing::error_of([&] { m.generate({1, 2}, 2, {.temperature = temperature}); }),
                HasSubstr("the model's logit for token 0 is nan (are there NaN or inf values in its weights?"));
}

} // namespace
