// TileTunerTest.cpp - the model's tiles chosen by timing training steps
// (models/gpt/TileTuner.h): coordinate descent keeps the fastest alternative
// of each choice on top of the best so far, only a clear win replaces the
// current tiles, medians of interleaved rounds count, alternatives that
// cannot run are left out with their errors; the step timer leaves the
// weights where they were and refuses tiles whose loss is off; every
// chip's choices parse; a --tiles file reads back.
#include "models/gpt/Model.h"
#include "models/gpt/TileTuner.h"

#include "tegula/error.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

using namespace tegula;
using namespace tegula::gpt;
using ::testing::HasSubstr;

namespace {

using Tiles = GptModel::Tiles;

const std::vector<TileChoice> kChoices = {
    {"gelu_ping_pong", {"", "gelu_ping_pong=1"}},
    {"ln_bwd", {"", "ln_bwd_tile_rows=2,ln_bwd_warps=8"}},
    {"ln_fwd_rows", {"", "ln_fwd_rows=4", "ln_fwd_rows=8"}},
};

/// A made-up step time: 10 ms, less 0.5 with ping-pong, less 1 at 4 rows a
/// program - but only with ping-pong on (so the choice sees the earlier
/// one's win) - and 0.3 more with LayerNorm's backward at 8 warps.
double madeUpStep(const Tiles &t) {
  return 10.0 - (t.gelu_ping_pong ? 0.5 : 0.0) - (t.gelu_ping_pong && t.ln_fwd_rows == 4 ? 1.0 : 0.0) +
         (t.ln_bwd_warps == 8 ? 0.3 : 0.0);
}

TEST(GptTileTuner, KeepsTheFastestAlternativeOfEachChoiceOnTopOfTheBestSoFar) {
  const Tiles start = GptModel::gpu_tiles(DType::bf16, "sm_90a");
  std::vector<std::string> seen;
  const TileTuning r = tune_tiles(start, kChoices, [&](const Tiles &t) {
    seen.push_back(t.str());
    return madeUpStep(t);
  });
  EXPECT_EQ(r.overrides, "ln_fwd_rows=4,gelu_ping_pong=1"); // Tiles::diff's order: the fields'
  EXPECT_EQ(r.tiles.str(), start.with("gelu_ping_pong=1,ln_fwd_rows=4").str());
  EXPECT_DOUBLE_EQ(r.start_ms, 10.0);
  EXPECT_DOUBLE_EQ(r.tuned_ms, 8.5);
  // Each alternative once a round, 3 rounds: (2 + 2 + 3) x 3 timings, then
  // the start against the tuned tiles, 2 x 3; a trial an alternative, in
  // order, the tiles so far first, then the last comparison.
  EXPECT_EQ(seen.size(), 27u);
  EXPECT_EQ(seen[21], start.str());
  EXPECT_EQ(seen[22], r.tiles.str());
  ASSERT_EQ(r.trials.size(), 9u);
  EXPECT_EQ(r.trials[0].choice, "gelu_ping_pong");
  EXPECT_EQ(r.trials[0].overrides, "");
  EXPECT_DOUBLE_EQ(r.trials[1].ms, 9.5);
  EXPECT_EQ(r.trials[3].overrides, "ln_bwd_tile_rows=2,ln_bwd_warps=8");
  EXPECT_DOUBLE_EQ(r.trials[3].ms, 9.8);
  EXPECT_DOUBLE_EQ(r.trials[5].ms, 8.5); // ln_fwd_rows=4 with ping-pong on
  EXPECT_EQ(r.trials[7].choice, "(start, tuned)");
  EXPECT_EQ(r.trials[7].overrides, "");
  EXPECT_DOUBLE_EQ(r.trials[7].ms, 10.0);
  EXPECT_EQ(r.trials[8].overrides, r.overrides);
  EXPECT_DOUBLE_EQ(r.trials[8].ms, 8.5);
  for (const TileTrial &t : r.trials)
    EXPECT_EQ(t.error, "");
}

TEST(GptTileTuner, StartsFromACopyOfTheTilesItIsGiven) {
  // tegula-gpt tune passes model.tiles(), which the measure sets: the start
  // must not follow it.
  Tiles live = GptModel::gpu_tiles(DType::bf16, "sm_90a");
  const std::string before = live.str();
  const TileTuning r = tune_tiles(live, kChoices, [&](const Tiles &t) {
    live = t;
    return madeUpStep(t);
  });
  EXPECT_EQ(r.overrides, "ln_fwd_rows=4,gelu_ping_pong=1");
  EXPECT_EQ(r.tiles.diff(GptModel::gpu_tiles(DType::bf16, "sm_90a")), r.overrides);
  EXPECT_DOUBLE_EQ(r.start_ms, 10.0);
  EXPECT_NE(live.str(), before);
}

TEST(GptTileTuner, TheLastComparisonGivesTheSpeedup) {
  // The clock slows as the tuning goes on (a GPU warming up): the start's
  // first timing would flatter the tuned tiles; timed against them at the
  // end, the start shows what the tuning gained - here nothing.
  const Tiles start = GptModel::gpu_tiles(DType::bf16, "sm_90a");
  int calls = 0;
  const TileTuning r = tune_tiles(start, {{"ln_fwd_rows", {"", "ln_fwd_rows=4"}}}, [&](const Tiles &t) {
    const double slower = 1.0 + 0.1 * calls++;
    return (t.ln_fwd_rows == 4 ? 0.9 : 1.0) * slower;
  }, {.rounds = 1});
  EXPECT_EQ(r.overrides, "ln_fwd_rows=4"); // 1.0 against 0.99
  EXPECT_DOUBLE_EQ(r.start_ms, 1.2);       // the last round: start, then tuned
  EXPECT_DOUBLE_EQ(r.tuned_ms, 0.9 * 1.3);
  // No choices: the start alone, `rounds` times.
  calls = 0;
  const TileTuning none = tune_tiles(start, {}, [&](const Tiles &) { return double(++calls); });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(none.overrides, "");
  EXPECT_DOUBLE_EQ(none.start_ms, 2.0);
  EXPECT_DOUBLE_EQ(none.tuned_ms, 2.0);
}

TEST(GptTileTuner, OnlyAClearWinReplacesTheCurrentTiles) {
  const Tiles start = GptModel::gpu_tiles(DType::bf16, "sm_90a");
  auto measure = [](const Tiles &t) { return t.ln_fwd_rows == 4 ? 9.97 : 10.0; }; // 0.3% faster
  EXPECT_EQ(tune_tiles(start, kChoices, measure).overrides, "");
  EXPECT_EQ(tune_tiles(start, kChoices, measure, {.min_gain = 0.001}).overrides, "ln_fwd_rows=4");
}

TEST(GptTileTuner, TheMedianOfInterleavedRoundsCounts) {
  const Tiles start = GptModel::cpu_tiles();
  // The alternative's second timing is an outlier (a clock that stalled):
  // its median still wins. The rounds alternate: as is, the alternative, ...
  std::vector<int> order;
  int alternativeRuns = 0;
  const TileTuning r = tune_tiles(start, {{"ln_fwd_rows", {"", "ln_fwd_rows=4"}}}, [&](const Tiles &t) {
    order.push_back(t.ln_fwd_rows);
    if (t.ln_fwd_rows == 1)
      return 6.0;
    return ++alternativeRuns == 2 ? 100.0 : 5.0;
  });
  EXPECT_EQ(order, (std::vector<int>{1, 4, 1, 4, 1, 4, /* the start against the tuned */ 1, 4, 1, 4, 1, 4}));
  EXPECT_EQ(r.overrides, "ln_fwd_rows=4");
  EXPECT_DOUBLE_EQ(r.trials[1].ms, 5.0);
  // One round: one timing each.
  order.clear();
  tune_tiles(start, {{"ln_fwd_rows", {"", "ln_fwd_rows=4"}}}, [&](const Tiles &t) {
    order.push_back(t.ln_fwd_rows);
    return 1.0;
  }, {.rounds = 1});
  EXPECT_EQ(order.size(), 3u); // the start, the alternative (no win), the start
  EXPECT_THROW(tune_tiles(start, kChoices, madeUpStep, {.rounds = 0}), Error);
}

TEST(GptTileTuner, AnAlternativeThatCannotRunIsLeftOutWithItsError) {
  const Tiles start = GptModel::gpu_tiles(DType::bf16, "sm_90a");
  int eightRuns = 0;
  const TileTuning r = tune_tiles(start, {{"ln_fwd_rows", {"", "ln_fwd_rows=8", "ln_fwd_rows=4"}}}, [&](const Tiles &t) {
    if (t.ln_fwd_rows == 8) {
      ++eightRuns;
      throw Error("kernel layernorm_fwd uses 300 KiB of shared memory");
    }
    return t.ln_fwd_rows == 4 ? 1.0 : 2.0;
  });
  EXPECT_EQ(eightRuns, 1) << "a failed alternative is not tried again in later rounds";
  EXPECT_EQ(r.overrides, "ln_fwd_rows=4");
  ASSERT_EQ(r.trials.size(), 5u);
  EXPECT_EQ(r.trials[1].overrides, "ln_fwd_rows=8");
  EXPECT_THAT(r.trials[1].error, HasSubstr("300 KiB"));
  EXPECT_EQ(r.trials[1].ms, 0.0);
}

TEST(GptTileTuner, StartTilesThatCannotRunAndBadChoicesAreErrors) {
  const Tiles start = GptModel::gpu_tiles(DType::bf16, "sm_90a");
  try {
    tune_tiles(start, kChoices, [](const Tiles &) -> double { throw Error("no kernel image for this device"); });
    FAIL() << "the start cannot run";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("the tiles to start from do not run: no kernel image"));
  }
  // A later choice's current tiles (the winners so far) failing says which.
  try {
    int calls = 0; // the first choice's 2 x 3 timings run
    tune_tiles(start, kChoices, [&](const Tiles &t) -> double {
      if (++calls > 6)
        throw Error("launch failed");
      return t.gelu_ping_pong ? 1.0 : 2.0;
    });
    FAIL() << "the chosen tiles stopped running";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("chosen so far (gelu_ping_pong=1) do not run: launch failed"));
  }
  auto error = [&](const std::vector<TileChoice> &choices) {
    try {
      tune_tiles(start, choices, madeUpStep);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error({{"empty", {}}}), HasSubstr("the choice 'empty' has no alternatives"));
  EXPECT_THAT(error({{"typo", {"", "ln_fwd_row=4"}}}), HasSubstr("choice 'typo': GPT tiles: no field 'ln_fwd_row'"));
}

TEST(GptTileTuner, AlternativesThatComeToTheSameTilesRunOnce) {
  const Tiles start = GptModel::gpu_tiles(DType::bf16, "sm_90a"); // ln_fwd_rows 1
  int runs = 0;
  const TileTuning r = tune_tiles(start, {{"ln_fwd_rows", {"", "ln_fwd_rows=1", "ln_fwd_rows=4"}}},
                                  [&](const Tiles &) { return ++runs, 1.0; }, {.rounds = 1});
  EXPECT_EQ(runs, 3); // as is, ln_fwd_rows=4, and the start once more at the end
  ASSERT_EQ(r.trials.size(), 3u);
  EXPECT_EQ(r.trials[1].overrides, "ln_fwd_rows=4");
}

TEST(GptTileTuner, EveryChipsChoicesApplyToItsTiles) {
  for (DType storage : {DType::f32, DType::bf16})
    for (const char *chip : {"sm_80", "sm_90a"})
      for (tl::precision p : {tl::precision::tf32, tl::precision::ieee})
        for (bool ws : {false, true}) {
          const Tiles base = GptModel::gpu_tiles(storage, chip, p);
          const std::vector<TileChoice> choices = tile_choices(storage, chip, p, ws);
          const std::string where = fmt::format("{} {} {} ws {}", dtype_name(storage), chip, int(p), ws);
          ASSERT_FALSE(choices.empty()) << where;
          std::set<std::string> names;
          for (const TileChoice &c : choices) {
            EXPECT_TRUE(names.insert(c.name).second) << where << ": " << c.name << " twice";
            ASSERT_GE(c.alternatives.size(), 3u) << where << ": " << c.name;
            EXPECT_EQ(c.alternatives[0], "") << where << ": " << c.name;
            // The second: the defaults of every field the others set (a start
            // from --tiles can go back to them).
            EXPECT_NE(c.alternatives[1], "") << where << ": " << c.name;
            EXPECT_EQ(base.with(c.alternatives[1]).str(), base.str()) << where << ": " << c.alternatives[1];
            for (size_t i = 2; i < c.alternatives.size(); ++i)
              EXPECT_NE(base.with(c.alternatives[i]).str(), base.str())
                  << where << ": " << c.alternatives[i] << " changes nothing";
          }
          // Ping-pong needs the producer warpgroup: only bf16 warp specialised on sm_90a.
          EXPECT_EQ(names.count("gelu_ping_pong"), size_t(storage == DType::bf16 && ws && chip == std::string("sm_90a")))
              << where;
        }
}

GptConfig tinyModel() {
  GptConfig c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 32, c.vocab = 40, c.vocab_padded = 64, c.n_ctx = 16;
  return c;
}

TEST(GptTileTuner, TheStepTimerLeavesTheWeightsAndRefusesALossThatMoved) {
  GptModel model(tinyModel(), Backend::Interp);
  model.init_random(3);
  model.init_optimizer();
  const int B = 2, T = 16;
  std::mt19937 rng(5);
  std::vector<int32_t> tokens(B * T), targets(B * T);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = int32_t(rng() % 40), targets[i] = int32_t(rng() % 40);
  const std::vector<float> wte = model.read_parameter("wte.weight");
  StepTimer timer(model, tokens, targets, B, T, 1);
  EXPECT_TRUE(std::isnan(timer.reference_loss()));
  const double ms = timer(GptModel::cpu_tiles());
  EXPECT_GT(ms, 0.0);
  EXPECT_NEAR(timer.reference_loss(), std::log(40.0), 0.5);
  // Learning rate 0: the weights are where they were, so the loss is too.
  EXPECT_EQ(model.read_parameter("wte.weight"), wte);
  // Other tiles computing the same model: measured; the model keeps them.
  EXPECT_GT(timer(GptModel::cpu_tiles().with("row_warps=1,ln_fwd_rows=2")), 0.0);
  EXPECT_EQ(model.tiles().ln_fwd_rows, 2);
  // Tiles that computed another loss (here: other weights) are refused.
  std::vector<float> moved = wte;
  for (float &w : moved)
    w *= 50.0f;
  model.write_parameter("wte.weight", moved);
  auto errorOf = [&] {
    try {
      timer(GptModel::cpu_tiles());
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(errorOf(), HasSubstr("the loss is")) << "the loss moved";
  EXPECT_THAT(errorOf(), HasSubstr("at the first ones measured"));
  // A loss that is not finite never passes.
  std::vector<float> nan = wte;
  nan[0] = std::nanf("");
  model.write_parameter("wte.weight", nan);
  EXPECT_THAT(errorOf(), HasSubstr("the loss is nan"));
  EXPECT_THROW(StepTimer(model, tokens, targets, B, T, 0), Error);
  EXPECT_THROW(StepTimer(model, tokens, targets, B + 1, T, 1), Error);
}

TEST(GptTileTuner, ATilesFileReadsBack) {
  EXPECT_EQ(tile_overrides_from("ln_fwd_rows=4"), "ln_fwd_rows=4");
  EXPECT_EQ(tile_overrides_from(""), "");
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tegula-tiles-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".txt"))
                               .string();
  {
    std::ofstream f(path);
    f << "# tegula-gpt tune on an H100\n# 21.4 ms a step\ngelu_ping_pong=1, ln_fwd_rows=4  # the winners\n\n"
         "attention_fwd_ws=0,\r\n";
  }
  EXPECT_EQ(tile_overrides_from("@" + path), "gelu_ping_pong=1, ln_fwd_rows=4,attention_fwd_ws=0");
  EXPECT_EQ(GptModel::gpu_tiles(DType::bf16, "sm_90a").with(tile_overrides_from("@" + path)).ln_fwd_rows, 4);
  std::filesystem::remove(path);
  try {
    tile_overrides_from("@" + path);
    FAIL() << "no such file";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read the tiles file " + path));
  }
}

} // namespace
