// AutotuneTest.cpp - tegula::Autotuner: which config it launches, when it
// times, what it restores, what it remembers on disk, and its errors - in the
// interpreter (with a measure of the test's own) and, through the recording
// fake driver, on the GPU path with CUDA events (the fake's "kernels" take
// as long as the test makes them).
#include "FakeDriverTest.h"
#include "TestUtil.h"
#include "examples/kernels.h"
#include "tegula/tegula.h"

#include <fmt/format.h>
#include <gmock/gmock.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;
namespace fake = tegula::fakecuda;
using fake::paramAs;

namespace {


Kernel vectorAdd() { return kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"}); }

std::vector<TuneConfig> blockConfigs() {
  return {{{{"BLOCK", 128}}, 1, 1}, {{{"BLOCK", 256}}, 2, 1}, {{{"BLOCK", 512}}, 4, 1}};
}

Grid blocksOf(const TuneConfig &c, const TunedArgs &a) { return {uint32_t(cdiv(a["n"], c["BLOCK"]))}; }

void flagged(tl::ptr<float> out, tl::constant<bool> on) { tl::store(out, on.value ? 1.0f : 0.0f); }

/// acc += x: a kernel that reads what it writes, so each timed run changes
/// the next one's input.
void addInto(tl::ptr<float> acc, tl::ptr<float> x, tl::scalar<int32_t> n, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::store(acc + offs, tl::load(acc + offs, mask) + tl::load(x + offs, mask), mask);
}


/// A measure of the test's own: each config "takes" what `ms` says, keyed
/// by BLOCK; runs it once (so the launch really happens) and counts.
struct TableMeasure {
  std::map<int64_t, double> ms;
  int *calls;
  double operator()(const TuneConfig &c, const std::function<void()> &run) const {
    ++*calls;
    run();
    return ms.at(c["BLOCK"]);
  }
};

AutotuneOptions noDisk(AutotuneOptions o = {}) {
  o.cache_on_disk = false; // ctest's TEGULA_CACHE_DIR outlives a run: no test sees another's choices
  return o;
}

void expectSum(const std::vector<float> &out, const std::vector<float> &x, const std::vector<float> &y) {
  ASSERT_EQ(out.size(), x.size());
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(out[i], x[i] + y[i]) << i;
}

TEST(Autotune, TheInterpreterRunsTheFirstConfigWithoutTiming) {
  Autotuner add(vectorAdd(), blockConfigs(), blocksOf, noDisk({.key = {"n"}}));
  const int n = 1000;
  const std::vector<float> x = random_vector<float>(n), y = random_vector<float>(n);
  std::vector<float> out = poisoned<float>(n);
  add({.backend = Backend::Interp}, x, y, out, n);
  expectSum(out, x, y);
  EXPECT_EQ(add.best({.backend = Backend::Interp}, {x, y, out, n})["BLOCK"], 128);
  EXPECT_TRUE(add.trials({.backend = Backend::Interp}, {x, y, out, n}).empty());
}

TEST(Autotune, AMeasureChoosesTheFastestOncePerKey) {
  int calls = 0;
  Autotuner add(vectorAdd(), blockConfigs(), blocksOf,
                noDisk({.key = {"n"}, .measure = TableMeasure{{{128, 3.0}, {256, 1.0}, {512, 2.0}}, &calls}}));
  const LaunchOptions opts{.backend = Backend::Interp};
  for (int n : {1000, 1000, 777}) {
    const std::vector<float> x = random_vector<float>(n), y = random_vector<float>(n);
    std::vector<float> out = poisoned<float>(n);
    add(opts, x, y, out, n);
    expectSum(out, x, y);
    EXPECT_EQ(add.best(opts, {x, y, out, n})["BLOCK"], 256);
  }
  EXPECT_EQ(calls, 6) << "three configs for n = 1000, three for n = 777 (a key of its own), none again";
  const std::vector<float> x(1000), y(1000);
  std::vector<float> out(1000);
  const std::vector<TuneTrial> trials = add.trials(opts, {x, y, out, 1000});
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_EQ(trials[0].config["BLOCK"], 128);
  EXPECT_EQ(trials[0].ms, 3.0);
  EXPECT_EQ(trials[1].ms, 1.0);
  EXPECT_TRUE(trials[2].error.empty());
}

TEST(Autotune, ValuesOutsideTheKeyShareItsChoice) {
  int calls = 0;
  Autotuner add(vectorAdd(), blockConfigs(), blocksOf,
                noDisk({.measure = TableMeasure{{{128, 1.0}, {256, 2.0}, {512, 3.0}}, &calls}}));
  for (int n : {100, 200}) {
    const std::vector<float> x = random_vector<float>(n), y = random_vector<float>(n);
    std::vector<float> out = poisoned<float>(n);
    add({.backend = Backend::Interp}, x, y, out, n);
    expectSum(out, x, y);
  }
  EXPECT_EQ(calls, 3) << "n is not in the key";
}

TEST(Autotune, AConfigThatFailsIsSkippedAndItsErrorKept) {
  int calls = 0;
  // BLOCK = 300 is no power of two: tl::arange refuses it while tracing.
  Autotuner add(vectorAdd(), {{{{"BLOCK", 300}}, 4, 1}, {{{"BLOCK", 256}}, 4, 1}}, blocksOf,
                noDisk({.measure = TableMeasure{{{300, 0.5}, {256, 2.0}}, &calls}}));
  const int n = 600;
  const std::vector<float> x = random_vector<float>(n), y = random_vector<float>(n);
  std::vector<float> out = poisoned<float>(n);
  add({.backend = Backend::Interp}, x, y, out, n);
  expectSum(out, x, y);
  const std::vector<TuneTrial> trials = add.trials({.backend = Backend::Interp}, {x, y, out, n});
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_THAT(trials[0].error, HasSubstr("powers of two"));
  EXPECT_EQ(add.best({.backend = Backend::Interp}, {x, y, out, n})["BLOCK"], 256);
}

TEST(Autotune, AMeasureThatReturnsNoTimeSkipsItsConfig) {
  const AutotuneOptions o = noDisk({.measure = [](const TuneConfig &c, const std::function<void()> &run) {
    run();
    return c["BLOCK"] == 128 ? std::nan("") : c["BLOCK"] == 256 ? -1.0 : 5.0;
  }});
  Autotuner add(vectorAdd(), blockConfigs(), blocksOf, o);
  const std::vector<float> x(100, 1.0f), y(100, 2.0f);
  std::vector<float> out(100);
  EXPECT_EQ(add.best({.backend = Backend::Interp}, {x, y, out, 100})["BLOCK"], 512);
  const std::vector<TuneTrial> trials = add.trials({.backend = Backend::Interp}, {x, y, out, 100});
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_THAT(trials[0].error, HasSubstr("the measure returned nan ms"));
  EXPECT_THAT(trials[1].error, HasSubstr("the measure returned -1 ms"));
}

TEST(Autotune, ConstantsAreNeverCutToFitAndBoolsAreZeroOrOne) {
  int calls = 0;
  // 2^32 + 256 would be 256 cut to 32 bits: the launch refuses it instead.
  Autotuner add(vectorAdd(), {{{{"BLOCK", (int64_t(1) << 32) + 256}}}, {{{"BLOCK", 256}}}}, blocksOf,
                noDisk({.measure = TableMeasure{{{(int64_t(1) << 32) + 256, 0.5}, {256, 2.0}}, &calls}}));
  const std::vector<float> x(300, 1.0f), y(300, 2.0f);
  std::vector<float> out(300);
  add({.backend = Backend::Interp}, x, y, out, 300);
  EXPECT_EQ(out[299], 3.0f);
  const std::vector<TuneTrial> trials = add.trials({.backend = Backend::Interp}, {x, y, out, 300});
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_THAT(trials[0].error, HasSubstr("does not fit in i32"));
  try {
    Autotuner(kernel("flagged", flagged, {"out", "on"}), {{{{"on", 2}}}}, [](const TuneConfig &, const TunedArgs &) {
      return Grid{1};
    });
    FAIL() << "a bool of 2";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("gives the bool 'on' 2: 0 or 1"));
  }
}

TEST(Autotune, ReadOnlyRestoredArraysAreLeftAloneAndOtherErrorsPutArraysBack) {
  const std::vector<float> x(100, 1.0f), y(100, 2.0f); // const: read-only
  std::vector<float> acc(100, 1.0f);
  Autotuner readOnly(vectorAdd(), blockConfigs(), blocksOf,
                     noDisk({.restore = {"x", "y"}, .measure = [](const TuneConfig &, const std::function<void()> &run) {
                               run();
                               return 1.0;
                             }}));
  std::vector<float> out(100);
  readOnly({.backend = Backend::Interp}, x, y, out, 100);
  EXPECT_EQ(out[0], 3.0f);
  // A measure's own exception (not a config's failure) ends the tuning -
  // with the restored arrays as they were.
  Autotuner throwing(kernel("add_into", addInto, {"acc", "x", "n", "BLOCK"}), blockConfigs(), blocksOf,
                     noDisk({.restore = {"acc"}, .measure = [](const TuneConfig &, const std::function<void()> &run) -> double {
                               run();
                               throw std::runtime_error("the measure broke");
                             }}));
  EXPECT_THROW(throwing({.backend = Backend::Interp}, acc, x, 100), std::runtime_error);
  EXPECT_EQ(acc[0], 1.0f);
}

TEST(Autotune, AGridFunctionThatAsksTheTunerItIsTuningIsTold) {
  Autotuner *self = nullptr;
  const std::vector<float> x(8), y(8);
  std::vector<float> out(8);
  Autotuner add(vectorAdd(), blockConfigs(),
                [&](const TuneConfig &c, const TunedArgs &a) {
                  self->best({.backend = Backend::Interp}, {x, y, out, 8});
                  return blocksOf(c, a);
                },
                noDisk({.measure = [](const TuneConfig &, const std::function<void()> &run) {
                  run();
                  return 1.0;
                }}));
  self = &add;
  try {
    add({.backend = Backend::Interp}, x, y, out, 8);
    FAIL() << "it would wait for itself";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("launched or queried the tuner while it tunes"));
  }
  Autotuner readsAnArray(vectorAdd(), blockConfigs(), [](const TuneConfig &, const TunedArgs &a) {
    return Grid{uint32_t(a["x"])};
  }, noDisk());
  EXPECT_THROW(readsAnArray({.backend = Backend::Interp}, x, y, out, 8), Error);
}

TEST(Autotune, BestWithoutAGridToTuneWithSaysSo) {
  int calls = 0;
  Autotuner add(vectorAdd(), blockConfigs(), nullptr, noDisk({.measure = TableMeasure{{{128, 1.0}}, &calls}}));
  const std::vector<float> x(8), y(8);
  std::vector<float> out(8);
  try {
    add.best({.backend = Backend::Interp}, {x, y, out, 8});
    FAIL() << "nothing to launch the configs with";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("no grid function to launch its configs with"));
  }
  EXPECT_EQ(calls, 0);
}

TEST(Autotune, WhenNoConfigRunsTheErrorListsEach) {
  int calls = 0;
  Autotuner add(vectorAdd(), {{{{"BLOCK", 300}}, 4, 1}, {{{"BLOCK", 384}}, 8, 1}}, blocksOf,
                noDisk({.measure = TableMeasure{{{300, 1.0}, {384, 1.0}}, &calls}}));
  std::vector<float> x(10), y(10), out(10);
  try {
    add({.backend = Backend::Interp}, x, y, out, 10);
    FAIL() << "no config can run";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("autotuning kernel 'vector_add': none of its 2 configs ran"));
    EXPECT_THAT(e.what(), HasSubstr("BLOCK=300 warps=4 stages=1: "));
    EXPECT_THAT(e.what(), HasSubstr("BLOCK=384 warps=8 stages=1: "));
  }
}

TEST(Autotune, RestoredArraysSeeOnlyTheRealLaunch) {
  for (bool restore : {false, true}) {
    int calls = 0;
    AutotuneOptions o{.measure = TableMeasure{{{128, 2.0}, {256, 1.0}, {512, 3.0}}, &calls}};
    if (restore)
      o.restore = {"acc"};
    Autotuner add(kernel("add_into", addInto, {"acc", "x", "n", "BLOCK"}), blockConfigs(), blocksOf, noDisk(o));
    const int n = 300;
    std::vector<float> acc(n, 1.0f), x(n, 2.0f);
    add({.backend = Backend::Interp}, acc, x, n);
    // Tuning ran each of the three configs once; the launch ran once more.
    EXPECT_EQ(acc[n - 1], restore ? 3.0f : 9.0f) << "restore = " << restore;
  }
}

TEST(Autotune, BadDefinitionsAndLaunchesAreNamed) {
  auto message = [](auto &&f) {
    try {
      f();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("(nothing thrown)");
  };
  const Kernel k = vectorAdd();
  EXPECT_THAT(message([&] { Autotuner(k, {}, blocksOf); }), HasSubstr("no configs to choose from"));
  EXPECT_THAT(message([&] { Autotuner(k, {{{{"BLOCKS", 128}}}}, blocksOf); }),
              HasSubstr("tuned constant 'BLOCKS' is not one of its parameters (x, y, out, n, BLOCK)"));
  EXPECT_THAT(message([&] { Autotuner(k, {{{{"n", 128}}}}, blocksOf); }),
              HasSubstr("'n' is not an integer tl::constant parameter"));
  EXPECT_THAT(message([&] { Autotuner(k, {{{{"BLOCK", 128}}}, {{}, 4, 3}}, blocksOf); }),
              HasSubstr("sets {} but the first sets {BLOCK}"));
  EXPECT_THAT(message([&] { Autotuner(k, {{{{"BLOCK", 128}, {"BLOCK", 256}}}}, blocksOf); }),
              HasSubstr("names 'BLOCK' twice"));
  EXPECT_THAT(message([&] { Autotuner(k, {{{{"BLOCK", 128}}, 0, 3}}, blocksOf); }),
              HasSubstr("needs num_warps and num_stages >= 1"));
  EXPECT_THAT(message([&] { Autotuner(k, blockConfigs(), blocksOf, {.key = {"m"}}); }),
              HasSubstr("key 'm' is not one of its parameters"));
  EXPECT_THAT(message([&] { Autotuner(k, blockConfigs(), blocksOf, {.key = {"BLOCK"}}); }),
              HasSubstr("key 'BLOCK' is a constant the configs set"));
  EXPECT_THAT(message([&] { Autotuner(k, blockConfigs(), blocksOf, {.restore = {"n"}}); }),
              HasSubstr("restore 'n' is not an array parameter"));
  EXPECT_THAT(message([&] { Autotuner(k, blockConfigs(), blocksOf, {.reps = 0}); }),
              HasSubstr("needs warmup >= 0 and reps >= 1"));

  Autotuner add(k, blockConfigs(), blocksOf, noDisk());
  std::vector<float> x(8), y(8), out(8);
  EXPECT_THAT(message([&] { Autotuner(k, blockConfigs(), nullptr, noDisk())({.backend = Backend::Interp}, x, y, out, 8); }),
              HasSubstr("no grid function (give one to the Autotuner or the launch)"));
  // A launch's own grid instead of the tuner's.
  Autotuner(k, blockConfigs(), nullptr, noDisk()).launch({.backend = Backend::Interp}, {x, y, out, 8}, blocksOf);
  EXPECT_EQ(out[7], x[7] + y[7]);
  EXPECT_THAT(message([&] { add({.backend = Backend::Interp}, x, y, out, 8, 128); }),
              HasSubstr("autotuned kernel 'vector_add' takes 4 arguments (x, y, out, n; BLOCK come from its "
                        "configs), 5 were given"));
  Autotuner badGrid(k, blockConfigs(), [](const TuneConfig &c, const TunedArgs &a) {
    return Grid{uint32_t(a["m"] / c["BLOCK"])};
  }, noDisk());
  EXPECT_THAT(message([&] { badGrid({.backend = Backend::Interp}, x, y, out, 8); }),
              HasSubstr("the kernel has no parameter 'm' (parameters: x, y, out, n, BLOCK)"));
}

/// TEGULA_CACHE_DIR pointed at a fresh directory for one test.
class AutotuneDisk : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("tegula-autotune-{}", ::getpid());
    std::filesystem::remove_all(dir_);
    const char *old = std::getenv("TEGULA_CACHE_DIR");
    old_ = old ? old : "";
    setenv("TEGULA_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    setenv("TEGULA_CACHE_DIR", old_.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::string old_;
};

TEST_F(AutotuneDisk, AChoiceOutlivesTheTunerAndADamagedFileIsTunedAgain) {
  int calls = 0;
  const AutotuneOptions o{.key = {"n"}, .measure = TableMeasure{{{128, 3.0}, {256, 2.0}, {512, 1.0}}, &calls}};
  const int n = 1000;
  const std::vector<float> x = random_vector<float>(n), y = random_vector<float>(n);
  std::vector<float> out = poisoned<float>(n);
  Autotuner(vectorAdd(), blockConfigs(), blocksOf, o)({.backend = Backend::Interp}, x, y, out, n);
  EXPECT_EQ(calls, 3);
  std::vector<std::filesystem::path> files;
  for (const auto &e : std::filesystem::directory_iterator(dir_ / "autotune"))
    files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_THAT(files[0].filename().string(), ::testing::StartsWith("vector_add-"));

  // A new tuner of the same kernel and configs (the next process) times nothing.
  Autotuner again(vectorAdd(), blockConfigs(), blocksOf, o);
  out = poisoned<float>(n);
  again({.backend = Backend::Interp}, x, y, out, n);
  expectSum(out, x, y);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(again.best({.backend = Backend::Interp}, {x, y, out, n})["BLOCK"], 512);

  // Another list of configs is another file.
  std::vector<TuneConfig> fewer = blockConfigs();
  fewer.pop_back();
  Autotuner(vectorAdd(), fewer, blocksOf, o)({.backend = Backend::Interp}, x, y, out, n);
  EXPECT_EQ(calls, 5);

  // The file: one line per key - where it ran, the arrays' types (and
  // alignment), the key's values - then the config's index and time.
  std::stringstream text;
  text << std::ifstream(files[0]).rdbuf();
  const std::string key = text.str().substr(0, text.str().find('\t'));
  EXPECT_THAT(key, ::testing::MatchesRegex("interp x:f32(/16)? y:f32(/16)? out:f32(/16)? n=1000"));
  EXPECT_THAT(text.str(), ::testing::StartsWith(key + "\t2\t1.0"));
  // What the file says is what runs (config 0 here), without timing.
  std::ofstream(files[0], std::ios::trunc) << key << "\t0\t3.0\n";
  EXPECT_EQ(Autotuner(vectorAdd(), blockConfigs(), blocksOf, o).best({.backend = Backend::Interp}, {x, y, out, n})["BLOCK"],
            128);
  EXPECT_EQ(calls, 5);
  // A choice on disk that no longer runs (another build's) is tuned again.
  std::vector<TuneConfig> failingFirst = blockConfigs();
  failingFirst[0] = {{{"BLOCK", 300}}, 1, 1}; // no power of two: does not trace
  const AutotuneOptions o2{.key = {"n"},
                           .measure = TableMeasure{{{300, 0.1}, {256, 2.0}, {512, 1.0}}, &calls}};
  Autotuner(vectorAdd(), failingFirst, blocksOf, o2)({.backend = Backend::Interp}, x, y, out, n); // tunes: 512
  std::filesystem::path second;
  for (const auto &e : std::filesystem::directory_iterator(dir_ / "autotune"))
    if (e.path() != files[0]) {
      std::stringstream t;
      t << std::ifstream(e.path()).rdbuf();
      if (t.str().find(key + "\t2\t") != std::string::npos)
        second = e.path();
    }
  ASSERT_FALSE(second.empty()) << "the failing-first list's file";
  std::ofstream(second, std::ios::trunc) << key << "\t0\t0.1\n"; // points at BLOCK = 300
  const int before = calls;
  out = poisoned<float>(n);
  Autotuner(vectorAdd(), failingFirst, blocksOf, o2)({.backend = Backend::Interp}, x, y, out, n);
  expectSum(out, x, y);
  EXPECT_EQ(calls, before + 3) << "tuned again";

  // An index past the list (a damaged line) is not trusted.
  std::ofstream(files[0], std::ios::trunc) << key << "\t7\t1.0\ngarbage\n";
  Autotuner(vectorAdd(), blockConfigs(), blocksOf, o)({.backend = Backend::Interp}, x, y, out, n);
  EXPECT_EQ(calls, 14);
}

// --- the GPU path through the fake driver: CUDA events time each config ---

using AutotuneGpu = fake::FakeDriverTest;


TEST_F(AutotuneGpu, EventsTimeEachConfigAndTheFastestIsKept) {
  // The fake's vector_add takes 3 ms at 1 warp, 1 ms at 2, 2 ms at 4 - and
  // adds, so the results are checked too.
  fake::tegula_fake_cuda_on_launch([](const fake::Launch &l) {
    const std::map<unsigned, int> ms = {{32, 3}, {64, 1}, {128, 2}};
    std::this_thread::sleep_for(std::chrono::milliseconds(ms.at(l.block[0])));
    const auto *x = reinterpret_cast<const float *>(paramAs<uint64_t>(l, 0));
    const auto *y = reinterpret_cast<const float *>(paramAs<uint64_t>(l, 1));
    auto *out = reinterpret_cast<float *>(paramAs<uint64_t>(l, 2));
    for (int i = 0; i < paramAs<int32_t>(l, 3); ++i)
      out[i] = x[i] + y[i];
  });
  Autotuner add(vectorAdd(), blockConfigs(), blocksOf, noDisk({.key = {"n"}, .warmup = 1, .reps = 3}));
  const int n = 1000;
  const std::vector<float> xh = random_vector<float>(n), yh = random_vector<float>(n);
  DeviceBuffer x = DeviceBuffer::from(xh), y = DeviceBuffer::from(yh), out(n, DType::f32);
  Stream stream;
  const LaunchOptions opts{.backend = Backend::GPU, .stream = stream.handle()};
  add(opts, x, y, out, n);
  stream.synchronize();
  std::vector<float> got(n);
  out.download(got);
  expectSum(got, xh, yh);

  const std::vector<fake::Launch> launches = fake::tegula_fake_cuda_launches();
  ASSERT_EQ(launches.size(), 3u * (1 + 3) + 1) << "warm-up and timed launches of each config, then the launch";
  EXPECT_EQ(launches.back().block[0], 64u);
  EXPECT_EQ(launches.back().grid[0], 4u) << "cdiv(1000, 256)";
  for (const fake::Launch &l : launches)
    EXPECT_EQ(l.stream, reinterpret_cast<CUstream>(stream.handle())) << "timed on the launch's stream";
  const std::vector<TuneTrial> trials = add.trials(opts, {x, y, out, n});
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_NEAR(trials[0].ms, 3.0, 1.0);
  EXPECT_NEAR(trials[1].ms, 1.0, 0.9);
  EXPECT_NEAR(trials[2].ms, 2.0, 0.9);
  EXPECT_EQ(add.best(opts, {x, y, out, n})["BLOCK"], 256);
}

TEST_F(AutotuneGpu, DeviceArraysAreRestoredAfterEachConfig) {
  fake::tegula_fake_cuda_on_launch([](const fake::Launch &l) { // acc += x
    auto *acc = reinterpret_cast<float *>(paramAs<uint64_t>(l, 0));
    const auto *x = reinterpret_cast<const float *>(paramAs<uint64_t>(l, 1));
    for (int i = 0; i < paramAs<int32_t>(l, 2); ++i)
      acc[i] += x[i];
  });
  Autotuner add(kernel("add_into", addInto, {"acc", "x", "n", "BLOCK"}), blockConfigs(), blocksOf,
                noDisk({.restore = {"acc"}, .warmup = 1, .reps = 2}));
  const int n = 100;
  DeviceBuffer acc = DeviceBuffer::from(std::vector<float>(n, 1.0f)), x = DeviceBuffer::from(std::vector<float>(n, 2.0f));
  add({.backend = Backend::GPU}, acc, x, n);
  std::vector<float> got(n);
  acc.download(got);
  EXPECT_EQ(got[0], 3.0f) << "9 tuning launches were undone";
  EXPECT_EQ(got[n - 1], 3.0f);
}

} // namespace
