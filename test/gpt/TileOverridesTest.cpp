// TileOverridesTest.cpp - GptModel::Tiles set by name (tegula-gpt train
// --tiles, gpt2-train --tiles, Python's override_tiles): values land in their
// fields, bad names and values are clear errors, and a model run at other
// attention tiles, or with its GELU GEMMs ping-pong, computes what it
// computes at its own.
#include "TestUtil.h"
#include "models/gpt/Linear.h"
#include "models/gpt/Model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

using namespace tegula;
using namespace tegula::gpt;
using ::testing::HasSubstr;

namespace {

/// One block of 64 wide, 2 heads, a 50-token vocabulary.
GptConfig oneBlock() {
  GptConfig c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 64, c.vocab = 50, c.vocab_padded = 64, c.n_ctx = 64;
  return c;
}

/// `n` random tokens and targets below `vocab`.
std::pair<std::vector<int32_t>, std::vector<int32_t>> randomBatch(int n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> tok(static_cast<size_t>(n)), tgt(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    tok[size_t(i)] = int32_t(rng() % unsigned(vocab)), tgt[size_t(i)] = int32_t(rng() % unsigned(vocab));
  return {tok, tgt};
}

/// A oneBlock() model on `backend` at cpu_tiles(), its weights drawn from
/// `seed`, after one forward (its loss in `loss`) and backward of (tok, tgt).
std::unique_ptr<GptModel> afterOneBackward(Backend backend, unsigned seed, const std::vector<int32_t> &tok,
                                           const std::vector<int32_t> &tgt, int B, int T, float &loss) {
  auto m = std::make_unique<GptModel>(oneBlock(), backend);
  m->set_tiles(GptModel::cpu_tiles());
  m->init_random(seed);
  loss = m->forward(tok, tgt, B, T);
  m->zero_grad();
  m->backward();
  return m;
}

/// A model of `like`'s config and backend at cpu_tiles() with `overrides`,
/// holding `like`'s parameters.
std::unique_ptr<GptModel> copyAtTiles(const GptModel &like, const std::string &overrides) {
  auto m = std::make_unique<GptModel>(like.config(), like.backend());
  m->set_tiles(GptModel::cpu_tiles().with(overrides));
  for (const ParamSpec &p : like.parameters())
    m->write_parameter(p.name, like.read_parameter(p.name));
  return m;
}

TEST(GptTiles, OverridesSetTheirFieldsAndNothingElse) {
  const GptModel::Tiles base = GptModel::gpu_tiles(DType::bf16, "sm_90a");
  const GptModel::Tiles t =
      base.with(" attention_fwd_block=64, attention_fwd_warps = 4,attention_fwd_ws=0,group_m=0,,dw_stream_k=1");
  EXPECT_EQ(t.attention_fwd_block, 64);
  EXPECT_EQ(t.attention_fwd_warps, 4);
  EXPECT_FALSE(t.attention_fwd_ws);
  EXPECT_EQ(t.group_m, 0);
  EXPECT_TRUE(t.dw_stream_k);
  // Every other field as it was: str() lists them all.
  GptModel::Tiles back = t;
  back.attention_fwd_block = base.attention_fwd_block, back.attention_fwd_warps = base.attention_fwd_warps;
  back.attention_fwd_ws = base.attention_fwd_ws, back.group_m = base.group_m;
  EXPECT_EQ(back.str(), base.str());
  EXPECT_THAT(t.str(), HasSubstr("attention_fwd_block=64,"));
  EXPECT_THAT(t.str(), HasSubstr("attention_fwd_ws=0"));
  // str() reads back as the same tiles.
  EXPECT_EQ(GptModel::cpu_tiles().with(t.str()).str(), t.str());
  EXPECT_EQ(base.with("").str(), base.str());
}

TEST(GptTiles, BadOverridesAreClearErrors) {
  const GptModel::Tiles base = GptModel::gpu_tiles();
  auto error = [&](const std::string &overrides) {
    try {
      (void)base.with(overrides);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error("attention_block=64"), HasSubstr("no field 'attention_block'"));
  EXPECT_THAT(error("attention_block=64"), HasSubstr("attention_fwd_block")); // the fields are listed
  EXPECT_THAT(error("bm"), HasSubstr("'bm' is not name=value"));
  EXPECT_THAT(error("bm=sixty"), HasSubstr("bm's value 'sixty' is not an integer"));
  EXPECT_THAT(error("bm=64x"), HasSubstr("is not an integer"));
  EXPECT_THAT(error("bm=0"), HasSubstr("bm is at least 1, not 0"));
  EXPECT_THAT(error("group_m=-1"), HasSubstr("group_m is at least 0, not -1"));
  EXPECT_THAT(error("attention_fwd_ws=2"), HasSubstr("attention_fwd_ws is 0 or 1, not 2"));
  EXPECT_THAT(error("attention_fwd_warps=3"), HasSubstr("attention_fwd_warps is a power of two"));
  EXPECT_THAT(error("kmajor_bm=128"), HasSubstr("kmajor_bm=128 needs kmajor_bn, kmajor_bk"));
  EXPECT_THAT(error("kmajor_bn=128"), HasSubstr("take effect with kmajor_bm"));
  EXPECT_EQ(error("kmajor_bm=128,kmajor_bn=128,kmajor_bk=32,kmajor_warps=8,kmajor_stages=3"), "no error");
}

// The model at other attention tiles (its forward's block, the backward's
// blocks) computes the same loss and gradients to rounding: what the tiles
// change is the order of the sums.
TEST(GptTiles, AModelRunsAtOverriddenAttentionTiles) {
  GptConfig c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 32, c.vocab = 50, c.vocab_padded = 64, c.n_ctx = 64;
  const int B = 2, T = 45; // the interpreter's 16-row blocks and these 32-row ones both ragged
  std::mt19937 rng(3);
  std::vector<int32_t> tok(B * T), tgt(B * T);
  for (int i = 0; i < B * T; ++i)
    tok[size_t(i)] = int32_t(rng() % 50), tgt[size_t(i)] = int32_t(rng() % 50);
  GptModel base(c, Backend::Interp), other(c, Backend::Interp);
  other.set_tiles(other.tiles().with("attention_fwd_block=32,attention_bwd_block=32,attention_bwd_step=16"));
  base.init_random(4), other.init_random(4);
  const float a = base.forward(tok, tgt, B, T), b = other.forward(tok, tgt, B, T);
  EXPECT_NEAR(a, b, 1e-5f * a);
  base.zero_grad(), other.zero_grad();
  base.backward(), other.backward();
  for (const ParamSpec &p : base.parameters()) {
    const std::vector<float> want = base.read_gradient(p.name);
    EXPECT_LT(tegula::testing::rel_error(other.read_gradient(p.name), std::vector<double>(want.begin(), want.end())),
              1e-5)
        << p.name;
  }
}

// ln_fwd_rows: LayerNorm's forward (and the residual add before it) at 2
// and 4 rows a program, each row on the warps it had alone (row_warps), in
// the simulator: the same logits bit for bit (80 rows; 4 and 2 divide them,
// the ragged last program is KernelsTest's).
TEST(GptTiles, LayerNormAtSeveralRowsAProgramComputesWhatOneRowDoes) {
  const GptConfig c = oneBlock();
  const int B = 2, T = 40;
  const auto [tok, tgt] = randomBatch(B * T, c.vocab, 7);
  GptModel one(c, Backend::Sim);
  one.set_tiles(GptModel::cpu_tiles().with("row_warps=2"));
  one.init_random(8);
  one.forward(tok, tgt, B, T);
  const std::vector<float> want = one.logits();
  for (const char *rows : {"ln_fwd_rows=4", "ln_fwd_rows=2"}) {
    const auto several = copyAtTiles(one, std::string("row_warps=2,") + rows);
    several->forward(tok, tgt, B, T);
    EXPECT_EQ(several->logits(), want) << rows;
  }
  // The rows in chunks (ln_fwd_block: 64 columns as 4 x 16 or 2 x 32): the
  // same logits up to the order of the LayerNorms' sums.
  for (const char *chunks : {"ln_fwd_block=16", "ln_fwd_rows=4,ln_fwd_block=32"}) {
    const auto chunked = copyAtTiles(one, std::string("row_warps=2,") + chunks);
    chunked->forward(tok, tgt, B, T);
    const std::vector<float> got = chunked->logits();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::abs(want[i]))) << chunks << " at " << i;
  }
}

// ln_bwd_block: LayerNorm's backward with its rows in chunks (64 columns as
// 4 x 16, or 2 x 32 at 2 rows a step) computes the gradients one block does,
// to the order of its row sums, in the simulator.
TEST(GptTiles, LayerNormBackwardInChunksComputesWhatOneBlockDoes) {
  const GptConfig c = oneBlock();
  const int B = 2, T = 40;
  const auto [tok, tgt] = randomBatch(B * T, c.vocab, 11);
  float loss = 0;
  const std::unique_ptr<GptModel> oneBlockModel = afterOneBackward(Backend::Sim, 9, tok, tgt, B, T, loss);
  const GptModel &one = *oneBlockModel;
  for (const char *chunks : {"ln_bwd_block=16", "ln_bwd_block=32,ln_bwd_tile_rows=2",
                             "ln_bwd_block=32,ln_bwd_tile_rows=4,ln_bwd_warps=4"}) { // the last: a warp a row
    SCOPED_TRACE(chunks);
    const auto chunked = copyAtTiles(one, chunks);
    EXPECT_EQ(chunked->forward(tok, tgt, B, T), loss); // the forward is the same
    chunked->zero_grad();
    chunked->backward();
    for (const ParamSpec &p : one.parameters()) {
      const std::vector<float> want = one.read_gradient(p.name), got = chunked->read_gradient(p.name);
      EXPECT_LT(tegula::testing::rel_error(got, std::vector<double>(want.begin(), want.end())), 1e-5) << p.name;
    }
  }
}

// head_dw_bn: wte's gradient (the tied LM head's, dlogits^T lnf) at N
// blocks of 32 and 64 (the width of the model's 64 columns) instead of
// dwBlockN's 16 (the linear layers' 32 halved: 4 tiles on the CPU backends'
// 3 programs take two waves, 8 half-width ones three half-waves): each
// column's sum runs over the same rows in the same order, so every gradient
// is the same bit for bit, in the interpreter.
TEST(GptTiles, WteGradientAtAnotherNBlockIsTheSame) {
  const GptConfig c = oneBlock();
  const int B = 2, T = 40;
  const auto [tok, tgt] = randomBatch(B * T, c.vocab, 13);
  float loss = 0;
  const std::unique_ptr<GptModel> baseModel = afterOneBackward(Backend::Interp, 10, tok, tgt, B, T, loss);
  const GptModel &base = *baseModel;
  for (const char *width : {"head_dw_bn=32", "head_dw_bn=64"}) {
    SCOPED_TRACE(width);
    const auto other = copyAtTiles(base, width);
    EXPECT_EQ(other->tiles().head_dw_bn, std::atoi(std::strchr(width, '=') + 1));
    EXPECT_EQ(other->forward(tok, tgt, B, T), loss);
    other->zero_grad();
    other->backward();
    for (const ParamSpec &p : base.parameters())
      EXPECT_EQ(other->read_gradient(p.name), base.read_gradient(p.name)) << p.name;
  }
}

// dw_bn: the blocks' weight gradients at N blocks of 16 and 64 instead of
// 32, stream-K (the default; its runs split K elsewhere, so the sums are
// associated otherwise: 1e-5) and one program a tile (the same bits), over
// two micro-batches - the second adds into the gradient - in the interpreter.
TEST(GptTiles, WeightGradientsAtAnotherNBlockAreTheSame) {
  const GptConfig c = oneBlock();
  const int B = 2, T = 40;
  const auto [tok, tgt] = randomBatch(B * T, c.vocab, 17);
  for (bool streamK : {true, false}) {
    SCOPED_TRACE(streamK ? "stream-K" : "one program a tile");
    GptModel base(c, Backend::Interp);
    base.set_tiles(GptModel::cpu_tiles());
    base.set_stream_k_weight_gradients(streamK);
    base.init_random(12);
    base.zero_grad();
    for (int micro = 0; micro < 2; ++micro) {
      base.forward(tok, tgt, B, T);
      base.backward();
    }
    for (const char *width : {"dw_bn=16", "dw_bn=64"}) {
      SCOPED_TRACE(width);
      const auto other = copyAtTiles(base, width);
      other->set_stream_k_weight_gradients(streamK);
      other->zero_grad();
      for (int micro = 0; micro < 2; ++micro) {
        other->forward(tok, tgt, B, T);
        other->backward();
      }
      for (const ParamSpec &p : base.parameters()) {
        const std::vector<float> want = base.read_gradient(p.name), got = other->read_gradient(p.name);
        if (streamK)
          EXPECT_LT(tegula::testing::rel_error(got, std::vector<double>(want.begin(), want.end())), 1e-5) << p.name;
        else
          EXPECT_EQ(got, want) << p.name;
      }
    }
  }
}

// gelu_ping_pong: the GELU GEMMs' tiles become 4-warp programs at the
// ping-pong fields' stages and N block; off, they are what they were.
TEST(GptTiles, GeluPingPongTiles) {
  const GptModel::Tiles base = GptModel::gpu_tiles(DType::bf16, "sm_90a");
  EXPECT_FALSE(base.gelu_ping_pong);
  using Tile = std::array<int, 5>;
  EXPECT_EQ(base.geluForward(), (Tile{base.bm, base.bn, base.bk, base.linear_warps, base.linear_stages}));
  EXPECT_EQ(base.geluDx(), (Tile{base.kmajor()[0], base.gelu_dx_bn, base.kmajor()[2], base.gelu_dx_warps,
                                 base.kmajor()[4]}));
  const GptModel::Tiles pp = base.with("gelu_ping_pong=1,gelu_pp_fwd_stages=2,gelu_pp_dx_bn=32,gelu_pp_dx_stages=5");
  EXPECT_EQ(pp.geluForward(), (Tile{base.bm, base.bn, base.bk, 4, 2}));
  EXPECT_EQ(pp.geluDx(), (Tile{base.kmajor()[0], 32, base.kmajor()[2], 4, 5}));
  EXPECT_EQ(base.with("gelu_ping_pong=1").geluForward()[4], 3); // 128 x 128 x 64 bf16: 4 stages do not fit
  EXPECT_THROW((void)base.with("gelu_pp_dx_bn=48"), Error);      // a tile extent: a power of two
  EXPECT_THROW((void)base.with("gelu_pp_fwd_stages=0"), Error);
}

// The GELU GEMMs ping-pong (Hopper code in the simulator: two 4-warp
// programs a CTA on TMA rings, the persistent grid two programs an SM)
// compute what they compute one program a CTA: the same logits bit for bit
// (the forward's tile is the same), the same gradients to the order of the
// bias gradient's column sums (c_proj's dx runs at another N block). bf16
// storage, 80 rows: two 64-row blocks, the last ragged.
TEST(GptTiles, GeluPingPongComputesWhatTheWarpSpecialisedGemmsDo) {
  setenv("TEGULA_SIM_CHIP", "sm_90a", 1);
  struct Unset {
    ~Unset() { unsetenv("TEGULA_SIM_CHIP"); }
  } unset;
  const GptConfig c = oneBlock();
  const int B = 2, T = 40;
  const auto [tok, tgt] = randomBatch(B * T, c.vocab, 5);
  // wgmma-sized linear tiles (64 rows a warpgroup), persistent in groups of
  // 2 row blocks; the ping-pong dx at half the N block.
  const std::string tiles = "bm=64,bn=32,bk=16,linear_stages=2,group_m=2";
  GptModel plain(c, Backend::Sim, tl::precision::ieee, DType::bf16);
  GptModel pingPong(c, Backend::Sim, tl::precision::ieee, DType::bf16);
  plain.set_tiles(GptModel::cpu_tiles().with(tiles));
  pingPong.set_tiles(
      GptModel::cpu_tiles().with(tiles + ",gelu_ping_pong=1,gelu_pp_fwd_stages=2,gelu_pp_dx_bn=16,gelu_pp_dx_stages=3"));
  // Those kernels do compile as ping-pong ones at these tiles.
  namespace k = tegula::gpt::kernels;
  std::vector<bfloat16> t(16);
  std::vector<float> f(16);
  const CompileOptions pp{.chip = "sm_90a", .num_warps = 4, .num_stages = 2, .ping_pong = true, .assemble = false};
  EXPECT_EQ(kernel("fwd", k::matmul_bias_fwd_tma<bfloat16>,
                   {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"})
                .compile({t, t, t, t, t, 80, 256, 64, true, 64, 32, 16, 2}, pp)
                .programs_per_cta,
            2);
  EXPECT_EQ(kernel("dx_gelu", k::matmul_bwd_dx_gelu_tma<bfloat16>,
                   {"dy", "w", "pre", "dpre", "partial", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"})
                .compile({t, t, t, t, f, 80, 64, 256, 64, 16, 16, 2}, pp)
                .programs_per_cta,
            2);
  plain.init_random(6);
  for (const ParamSpec &p : plain.parameters())
    pingPong.write_parameter(p.name, plain.read_parameter(p.name));
  EXPECT_EQ(plain.forward(tok, tgt, B, T), pingPong.forward(tok, tgt, B, T));
  EXPECT_EQ(plain.logits(), pingPong.logits());
  plain.zero_grad(), pingPong.zero_grad();
  plain.backward(), pingPong.backward();
  for (const ParamSpec &p : plain.parameters()) {
    const std::vector<float> want = plain.read_gradient(p.name);
    EXPECT_LT(tegula::testing::rel_error(pingPong.read_gradient(p.name), std::vector<double>(want.begin(), want.end())),
              1e-5)
        << p.name;
  }
}

} // namespace
