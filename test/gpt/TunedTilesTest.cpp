// TunedTilesTest.cpp - tunings kept per GPU and setup (`--tiles auto`): a
// file per setup whose name any difference changes, read back as saved; a
// setup never tuned, or a tuning whose fields have gone, falls back to the
// defaults and says why.
#include "models/gpt/TunedTiles.h"

#include "tegula/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <optional>
#include <set>
#include <unistd.h>

using namespace tegula;
using namespace tegula::gpt;
using ::testing::HasSubstr;

namespace {

TuningSetup h100() {
  return {.device = "NVIDIA H100 80GB HBM3", .chip = "sm_90a", .config = GptConfig::gpt2_124m(), .batch = 8,
          .seq = 1024, .storage = DType::bf16};
}

/// Sets an environment variable for a scope, then puts back what was there.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> was;
  ScopedEnv(std::string n, const std::string &value) : name(std::move(n)) {
    if (const char *v = std::getenv(name.c_str()))
      was = v;
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (was)
      setenv(name.c_str(), was->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

/// TEGULA_GPT_TILES_DIR set to a fresh directory of this process's own for
/// one test.
struct TilesDir {
  std::string path = (std::filesystem::temp_directory_path() /
                      fmt::format("tegula-gpt-tiles-{}-{}", ::getpid(),
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                         .string();
  ScopedEnv env{"TEGULA_GPT_TILES_DIR", path};
  TilesDir() { std::filesystem::remove_all(path); }
  ~TilesDir() { std::filesystem::remove_all(path); }
};

TEST(GptTunedTiles, EverySetupFieldNamesItsOwnFile) {
  const TuningSetup base = h100();
  EXPECT_EQ(base.file_name(), "sm_90a-NVIDIA_H100_80GB_HBM3-bf16-ws1-sk1-L12-H12-C768-V50257-B8-T1024.txt");
  EXPECT_EQ(base.str(), "NVIDIA H100 80GB HBM3 (sm_90a); 12 layers, 12 heads, 768 dims, vocabulary 50257; B=8 "
                        "T=1024; bf16, warp specialised, stream-K");
  std::vector<TuningSetup> others(12, base);
  others[0].device = "NVIDIA H100 PCIe";
  others[1].chip = "sm_80";
  others[2].config.n_layer = 24;
  others[3].config.n_head = 16;
  others[4].config.n_embd = 1024;
  others[5].config.vocab = 256;
  others[6].batch = 16;
  others[7].seq = 512;
  others[8].storage = DType::f32;
  others[9].warp_specialize = false;
  others[10].stream_k = false;
  others[11].storage = DType::f32, others[11].matmul = tl::precision::ieee; // f32's dots: tf32 in others[8]
  std::set<std::string> names = {base.file_name()};
  for (const TuningSetup &s : others)
    EXPECT_TRUE(names.insert(s.file_name()).second) << s.str();
  EXPECT_THAT(others[8].file_name(), HasSubstr("-f32-tf32-"));
  // bf16's dots are bf16: its precision names nothing.
  TuningSetup bf16Ieee = base;
  bf16Ieee.matmul = tl::precision::ieee;
  EXPECT_EQ(bf16Ieee.file_name(), base.file_name());
  // The command that keeps a tuning names what differs from tune's defaults.
  EXPECT_EQ(base.tune_command(),
            "tegula-gpt tune --layers 12 --heads 12 --embd 768 --vocab 50257 --batch 8 --seq 1024 --dtype bf16");
  EXPECT_THAT(others[11].tune_command(), HasSubstr("--dtype f32 --precision ieee"));
  EXPECT_THAT(others[9].tune_command(), HasSubstr(" --warp-specialize off"));
  EXPECT_THAT(others[10].tune_command(), HasSubstr(" --stream-k off"));
  TuningSetup odd = base;
  odd.device = "GPU/with spaces:and*marks";
  EXPECT_THAT(odd.file_name(), HasSubstr("-GPU_with_spaces_and_marks-"));
}

TEST(GptTunedTiles, ASavedTuningReadsBackForItsSetupAlone) {
  TilesDir dir;
  const TuningSetup setup = h100();
  EXPECT_EQ(load_tuned_tiles(setup), std::nullopt);
  const std::string path = save_tuned_tiles(setup, "ln_fwd_rows=4,gelu_ping_pong=1", "tuned on an H100\n21.4 ms");
  EXPECT_EQ(path, dir.path + "/" + setup.file_name());
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "# tuned on an H100");
  EXPECT_EQ(load_tuned_tiles(setup), "ln_fwd_rows=4,gelu_ping_pong=1");
  TuningSetup other = setup;
  other.batch = 16;
  EXPECT_EQ(load_tuned_tiles(other), std::nullopt);
  // The last tuning wins; the defaults winning is kept too ("").
  save_tuned_tiles(setup, "", "again");
  EXPECT_EQ(load_tuned_tiles(setup), "");
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(GptTunedTiles, AutoResolvesToTheKeptTuningOrTheDefaults) {
  TilesDir dir;
  const TuningSetup setup = h100();
  std::string note;
  EXPECT_EQ(resolve_tiles("auto", setup, note), "");
  EXPECT_THAT(note, HasSubstr("no tuning kept for NVIDIA H100 80GB HBM3 (sm_90a)"));
  EXPECT_THAT(note, HasSubstr("`tegula-gpt tune --layers 12 --heads 12 --embd 768 --vocab 50257 --batch 8 --seq "
                              "1024 --dtype bf16` keeps one"));
  save_tuned_tiles(setup, "ln_fwd_rows=4", "");
  EXPECT_EQ(resolve_tiles("auto", setup, note), "ln_fwd_rows=4");
  EXPECT_THAT(note, HasSubstr("tiles: tuned for this setup"));
  EXPECT_THAT(note, HasSubstr(": ln_fwd_rows=4"));
  // As tegula-gpt tune keeps it, every field: the note names only those
  // that differ from this Tegula's defaults, and a tuning at the defaults
  // says so.
  const GptModel::Tiles defaults = GptModel::gpu_tiles(setup.storage, setup.chip, setup.matmul);
  save_tuned_tiles(setup, defaults.with("attention_bwd_ws=1,group_m=4").str(), "");
  EXPECT_EQ(GptModel::cpu_tiles().with(resolve_tiles("auto", setup, note)).str(),
            defaults.with("attention_bwd_ws=1,group_m=4").str());
  EXPECT_THAT(note, HasSubstr(".txt): attention_bwd_ws=1,group_m=4"));
  save_tuned_tiles(setup, defaults.str(), "");
  EXPECT_EQ(GptModel::cpu_tiles().with(resolve_tiles("auto", setup, note)).str(), defaults.str());
  EXPECT_THAT(note, HasSubstr(".txt): the defaults"));
  // Kept by an older Tegula: a field that has gone is the defaults, said.
  save_tuned_tiles(setup, "ln_rows=4", "");
  EXPECT_EQ(resolve_tiles("auto", setup, note), "");
  EXPECT_THAT(note, HasSubstr("cannot be used"));
  EXPECT_THAT(note, HasSubstr("no field 'ln_rows'"));
  EXPECT_THAT(note, HasSubstr("`tegula-gpt tune --layers 12"));
  // Unreadable (a directory where the file should be): the defaults, said.
  std::filesystem::remove(dir.path + "/" + setup.file_name());
  std::filesystem::create_directories(dir.path + "/" + setup.file_name());
  EXPECT_EQ(resolve_tiles("auto", setup, note), "");
  EXPECT_THAT(note, HasSubstr("cannot be used"));
  // Anything but "auto" is tile_overrides_from()'s, with no note.
  EXPECT_EQ(resolve_tiles("group_m=4", setup, note), "group_m=4");
  EXPECT_EQ(note, "");
  EXPECT_THROW(resolve_tiles("@/no/such/tiles.txt", setup, note), Error);
}

TEST(GptTunedTiles, NoDirectoryKeepsNothing) {
  {
    ScopedEnv none("TEGULA_GPT_TILES_DIR", "-");
    EXPECT_EQ(tuned_tiles_directory(), "");
    EXPECT_EQ(save_tuned_tiles(h100(), "ln_fwd_rows=4", ""), "");
    EXPECT_EQ(load_tuned_tiles(h100()), std::nullopt);
  }
  // The kernel cache's directory otherwise.
  ScopedEnv unset("TEGULA_GPT_TILES_DIR", "");
  ScopedEnv cache("TEGULA_CACHE_DIR", "/some/cache");
  EXPECT_EQ(tuned_tiles_directory(), "/some/cache/gpt-tiles");
}

TEST(GptTunedTiles, AFailedWriteLeavesNoPartialFile) {
  TilesDir dir;
  std::filesystem::create_directories(dir.path + "/" + h100().file_name()); // a directory in the way
  EXPECT_THROW(save_tuned_tiles(h100(), "ln_fwd_rows=4", ""), Error);
  for (const auto &entry : std::filesystem::directory_iterator(dir.path))
    EXPECT_NE(entry.path().extension(), ".partial") << entry.path();
}

} // namespace
