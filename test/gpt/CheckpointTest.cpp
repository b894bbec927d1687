// CheckpointTest.cpp - a checkpoint's configuration (checkpoint_config): the
// sizes from Hugging Face's tensor names and shapes, the head count from the
// caller, the file's metadata (GptModel::save) or config.json beside it.
#include "TestUtil.h"
#include "gpt/GptTestUtil.h"
#include "models/gpt/Checkpoint.h"
#include "models/gpt/Model.h"
#include "models/gpt/Safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <span>

using namespace tegula;
using namespace tegula::gpt;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

const std::string kFixture = tegula::testing::fixtureDir("models/gpt/parity/fixture");

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("tegula-checkpoint-" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

/// A small model of `layers` blocks (2 heads, 64 wide, vocabulary 300,
/// context 32), initialised, saved to `dir/name`: the file's path.
std::string savedSmallModel(const TempDir &dir, int layers, const std::string &name, GptConfig *config = nullptr) {
  GptConfig small;
  small.n_layer = layers, small.n_head = 2, small.n_embd = 64, small.vocab = 300, small.vocab_padded = 384;
  small.n_ctx = 32;
  GptModel m(small, Backend::Interp);
  m.init_random(1);
  const std::string saved = (dir.path / name).string();
  m.save(saved);
  if (config)
    *config = small;
  return saved;
}

TEST(CheckpointConfig, SizesComeFromHuggingFacesTensors) {
  // The fixture: transformers' names ("transformer." prefix), 2 blocks.
  const GptConfig c = checkpoint_config(SafetensorsFile::read(kFixture + "model.safetensors"), 4);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_embd, 128);
  EXPECT_EQ(c.vocab, 512);
  EXPECT_EQ(c.vocab_padded, 512);
  EXPECT_EQ(c.n_ctx, 64);
}

TEST(CheckpointConfig, HeadsFromTheSavedMetadataOrConfigJsonBeside) {
  TempDir dir;
  GptConfig small;
  const std::string saved = savedSmallModel(dir, 3, "saved.safetensors", &small);
  const GptConfig c = checkpoint_config(SafetensorsFile::read(saved));
  GptModel m(small, Backend::Interp);
  m.init_random(1);
  m.save(saved, {{"n_head", "7"}}); // the model's own count wins
  EXPECT_EQ(checkpoint_config(SafetensorsFile::read(saved)).n_head, 2);
  EXPECT_EQ(c.n_layer, 3);
  EXPECT_EQ(c.n_head, 2);
  EXPECT_EQ(c.vocab, 300);
  EXPECT_EQ(c.vocab_padded, 384); // rounded up to 128
  EXPECT_EQ(c.n_ctx, 32);
  // Hugging Face's files carry no n_head: config.json beside them does.
  const std::string copy = (dir.path / "model.safetensors").string();
  std::filesystem::copy_file(kFixture + "model.safetensors", copy);
  EXPECT_EQ(config_json_beside(copy), (dir.path / "config.json").string());
  SafetensorsFile hf = SafetensorsFile::read(copy);
  EXPECT_THAT(tegula::testing::error_of([&] { checkpoint_config(hf, 0, config_json_beside(copy)); }),
              HasSubstr("number of heads is not in the weights"));
  std::ofstream(config_json_beside(copy)) << R"({"n_head": 8, "n_layer": 2})";
  EXPECT_EQ(checkpoint_config(hf, 0, config_json_beside(copy)).n_head, 8);
  EXPECT_EQ(checkpoint_config(hf, 4, config_json_beside(copy)).n_head, 4); // the caller's first
  std::ofstream(config_json_beside(copy)) << R"({"n_layer": 2})";
  EXPECT_THAT(tegula::testing::error_of([&] { checkpoint_config(hf, 0, config_json_beside(copy)); }),
              HasSubstr("no integer \"n_head\""));
  EXPECT_THAT(tegula::testing::error_of([&] { checkpoint_config(hf, 3); }),
              HasSubstr("n_embd 128 is not a multiple of n_head 3"));
}

TEST(CheckpointConfig, AFileThatIsNotGpt2IsAClearError) {
  TempDir dir;
  const std::string path = (dir.path / "other.safetensors").string();
  std::vector<float> v(4, 1.0f);
  write_safetensors(path, {{"encoder.weight", {2, 2}, v}});
  EXPECT_THAT(tegula::testing::error_of([&] { checkpoint_config(SafetensorsFile::read(path), 2); }),
              HasSubstr("no 'wte.weight' tensor"));
  std::vector<float> two(2, 1.0f);
  write_safetensors(path, {{"wte.weight", {2, 2}, v}, {"wpe.weight", {2, 2}, v}, {"h.0.ln_1.weight", {2}, two}},
                    {{"n_head", "2x"}});
  EXPECT_THAT(tegula::testing::error_of([&] { checkpoint_config(SafetensorsFile::read(path)); }),
              HasSubstr("metadata's n_head '2x' is not a positive integer"));
  write_safetensors(path, {{"wte.weight", {2, 2}, v}, {"wpe.weight", {2, 2}, v}, {"h.1.ln_1.weight", {2}, two}});
  EXPECT_THAT(tegula::testing::error_of([&] { checkpoint_config(SafetensorsFile::read(path), 2); }),
              HasSubstr("not numbered 0 .. n - 1"));
}

// A checkpoint loads whole or not at all: a tensor the model has no
// parameter for (a file of more layers), an untied LM head or a head count
// its metadata contradicts are errors, not a model run on part of it.
TEST(CheckpointLoad, AnotherModelsCheckpointIsRefused) {
  TempDir dir;
  GptConfig three;
  const std::string saved = savedSmallModel(dir, 3, "three.safetensors", &three);
  GptModel big(three, Backend::Interp);
  big.load(SafetensorsFile::read(saved));
  GptConfig two = three;
  two.n_layer = 2;
  GptModel small(two, Backend::Interp);
  EXPECT_THAT(tegula::testing::error_of([&] { small.load(SafetensorsFile::read(saved)); }),
              AllOf(HasSubstr("checkpoint: 12 tensors this model (2 layers) has no parameter for: h.2."),
                    HasSubstr(", ...; a checkpoint of another model or configuration")));
  EXPECT_THAT(tegula::testing::error_of([&] { checkpoint_config(SafetensorsFile::read(saved), 4); }),
              HasSubstr("4 heads were asked for (tegula-gpt --heads, Python n_head=), but the file's metadata says "
                        "n_head 2"));
  EXPECT_EQ(checkpoint_config(SafetensorsFile::read(saved), 2).n_head, 2); // agreeing is fine

  // Hugging Face's extras: the causal-mask buffers are skipped, a tied
  // lm_head (equal to wte) is accepted, an untied one refused.
  std::vector<std::vector<float>> values;
  std::vector<TensorToWrite> tensors;
  values.reserve(big.parameters().size() + 3);
  for (const ParamSpec &p : big.parameters()) {
    values.push_back(big.read_parameter(p.name));
    std::vector<int64_t> shape = p.shape;
    if (p.name == "wte.weight") {
      shape[0] = three.vocab;
      values.back().resize(size_t(shape[0] * shape[1]));
    }
    tensors.push_back({p.name, shape, values.back()});
  }
  values.push_back(std::vector<float>(16, 1.0f));
  tensors.push_back({"h.0.attn.bias", {1, 1, 4, 4}, values.back()});
  tensors.push_back({"h.1.attn.masked_bias", {1}, std::span<const float>(values.back()).first(1)});
  const std::vector<float> wte = values.front();
  tensors.push_back({"lm_head.weight", {three.vocab, three.n_embd}, wte});
  GptModel loaded(three, Backend::Interp);
  loaded.load(SafetensorsFile::parse(serialize_safetensors(tensors), "hf"));
  EXPECT_EQ(loaded.read_parameter("h.2.mlp.c_proj.weight"), big.read_parameter("h.2.mlp.c_proj.weight"));
  std::vector<float> untied = wte;
  untied[5] += 1.0f;
  tensors.back() = {"lm_head.weight", {three.vocab, three.n_embd}, untied};
  EXPECT_THAT(tegula::testing::error_of([&] { loaded.load(SafetensorsFile::parse(serialize_safetensors(tensors), "hf")); }),
              HasSubstr("'lm_head.weight' differs from wte.weight; Tegula's GPT ties the LM head"));
  tensors.back() = {"h.0.attn.c_attn.scale", {1}, std::span<const float>(wte).first(1)};
  EXPECT_THAT(tegula::testing::error_of([&] { loaded.load(SafetensorsFile::parse(serialize_safetensors(tensors), "hf")); }),
              HasSubstr("1 tensor this model (3 layers) has no parameter for: h.0.attn.c_attn.scale;"));
}

// AdamW's state saved beside the weights and loaded into a fresh model: the
// next step moves both models' parameters exactly alike (the moments, the
// bias correction's step count and the stochastic-rounding seed came back).
TEST(OptimizerState, ASavedRunContinuesExactly) {
  TempDir dir;
  GptConfig c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 32, c.vocab = 70, c.vocab_padded = 128, c.n_ctx = 16;
  const int B = 2, T = 8;
  std::vector<int32_t> tokens(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i)
    tokens[size_t(i)] = (i * 7) % c.vocab, targets[size_t(i)] = (i * 11 + 3) % c.vocab;
  auto trainStep = [&](GptModel &m) {
    m.forward(tokens, targets, B, T);
    m.zero_grad();
    m.backward();
    m.clip_grad_norm(1.0f);
    m.step({.lr = 1e-2f, .stochastic_rounding = true});
  };
  GptModel first(c, Backend::Interp, tl::precision::ieee, DType::bf16);
  first.init_random(5);
  trainStep(first), trainStep(first);
  const std::string model = (dir.path / "m.safetensors").string(), state = optimizer_state_beside(model);
  EXPECT_EQ(state, (dir.path / "m.state.safetensors").string());
  first.save(model);
  first.save_optimizer(state, {{"note", "kept"}});
  EXPECT_THAT(tegula::testing::error_of([&] { first.save_optimizer(state, {{"seed", "9"}}); }),
              HasSubstr("the metadata key 'seed' is the state's own"));

  GptModel resumed(c, Backend::Interp, tl::precision::ieee, DType::bf16);
  resumed.load(SafetensorsFile::read(model));
  const SafetensorsFile stateFile = SafetensorsFile::read(state);
  EXPECT_EQ(stateFile.metadata().at("note"), "kept");
  resumed.load_optimizer(stateFile);
  EXPECT_EQ(resumed.optimizer_steps(), 2);
  trainStep(first), trainStep(resumed);
  for (const ParamSpec &p : first.parameters())
    ASSERT_EQ(resumed.read_parameter(p.name), first.read_parameter(p.name)) << p.name;

  // Another model's state, a file that is no state, a damaged moment: each
  // an error that leaves the model as it was.
  GptConfig wider = c;
  wider.n_embd = 64;
  GptModel other(wider, Backend::Interp);
  EXPECT_THAT(tegula::testing::error_of([&] { other.load_optimizer(stateFile); }),
              HasSubstr("optimizer state: saved for n_embd 32, this model has 64: the state of another model"));
  EXPECT_THAT(tegula::testing::error_of([&] { resumed.load_optimizer(SafetensorsFile::read(model)); }),
              HasSubstr("optimizer state: the file is not one"));
  std::vector<TensorToWrite> tensors;
  std::vector<std::vector<float>> values;
  for (const std::string &name : stateFile.names())
    values.push_back(stateFile.to_f32(name));
  for (size_t i = 0; i < values.size(); ++i)
    tensors.push_back({stateFile.names()[i], stateFile.at(stateFile.names()[i]).shape, values[i]});
  const auto names = stateFile.names();
  const size_t v = size_t(std::find_if(names.begin(), names.end(),
                                       [](const std::string &n) { return n.rfind("adam.v.", 0) == 0; }) -
                          names.begin());
  ASSERT_LT(v, names.size());
  values[v][0] = -1.0f; // a negative second moment
  tensors[v].values = values[v];
  const SafetensorsFile bad = SafetensorsFile::parse(serialize_safetensors(tensors, stateFile.metadata()), "bad");
  const std::string error = tegula::testing::error_of([&] { resumed.load_optimizer(bad); });
  EXPECT_THAT(error, HasSubstr("hold a non-finite (or negative second) moment"));
  tensors.erase(tensors.begin()); // adam.m of the first parameter
  EXPECT_THAT(tegula::testing::error_of([&] {
                resumed.load_optimizer(SafetensorsFile::parse(serialize_safetensors(tensors, stateFile.metadata()), "cut"));
              }),
              HasSubstr("(the file is cut short or of another model)"));
  EXPECT_EQ(resumed.optimizer_steps(), 3);
}

} // namespace
