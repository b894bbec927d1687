//===- tegula-gpt: train and sample GPT-2 models written in Tegula ---------===//
//
//   tegula-gpt train --data input.txt [--steps 200] [--batch 4] [--seq 64]
//                    [--layers 2 --heads 4 --embd 128] [--lr 1e-3] [--warmup 20]
//                    [--val-every 50] [--save model.safetensors] [--seed 1]
//                    [--backend interp|sim|gpu]
//   tegula-gpt generate --model model.safetensors [--layers/--heads/--embd as trained]
//                    --prompt "text" [--tokens 100] [--temperature 0.8]
//                    [--top-k 40] [--top-p 0.95] [--seed 1]
//
// Tokens are bytes (vocabulary 256). The text file is memory-mapped; the last
// 10% is held out for the validation loss. Training is deterministic for a
// seed (but for the order of the token-embedding gradient's atomic sums).
//
//===----------------------------------------------------------------------===//
#include "models/gpt/Model.h"
#include "models/gpt/Safetensors.h"

#include "tegula/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <numeric>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tegula;
using namespace tegula::gpt;

namespace {

/// --name value options, with defaults and a clear error for unknown ones.
class Options {
public:
  Options(int argc, char **argv, int first, std::map<std::string, std::string> defaults)
      : values_(std::move(defaults)) {
    for (int i = first; i < argc; i += 2) {
      std::string key = argv[i];
      if (key.rfind("--", 0) != 0 || !values_.count(key.substr(2)))
        throw Error(fmt::format("unknown option '{}' (options: {})", key, names()));
      if (i + 1 >= argc)
        throw Error(fmt::format("option '{}' needs a value", key));
      values_[key.substr(2)] = argv[i + 1];
    }
  }
  std::string str(const std::string &k) const { return values_.at(k); }
  int integer(const std::string &k) const { return std::stoi(values_.at(k)); }
  float real(const std::string &k) const { return std::stof(values_.at(k)); }

private:
  std::string names() const {
    std::string out;
    for (auto &[k, v] : values_)
      out += (out.empty() ? "--" : ", --") + k;
    return out;
  }
  std::map<std::string, std::string> values_;
};

GptConfig configFrom(const Options &o) {
  GptConfig c;
  c.n_layer = o.integer("layers"), c.n_head = o.integer("heads"), c.n_embd = o.integer("embd");
  c.vocab = 256, c.vocab_padded = 256, c.n_ctx = std::max(64, o.integer("seq"));
  return c;
}

Backend backendFrom(const Options &o) { return parse_backend(o.str("backend")); }

/// A read-only memory map of a file: the token stream (bytes).
struct MappedFile {
  const uint8_t *data = nullptr;
  size_t size = 0;
  explicit MappedFile(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0)
      throw Error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
    size = size_t(st.st_size);
    void *p = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    close(fd);
    if (p == MAP_FAILED)
      throw Error(fmt::format("cannot map {}: {}", path, std::strerror(errno)));
    data = static_cast<const uint8_t *>(p);
  }
  ~MappedFile() {
    if (data)
      munmap(const_cast<uint8_t *>(data), size);
  }
};

std::string mib(int64_t bytes) { return fmt::format("{:.1f} MiB", double(bytes) / 1048576.0); }

void printMemory(const char *phase, const GptModel &m) {
  GptModel::Memory mem = m.memory();
  fmt::print("[memory] {:<16} parameters {}, gradients {}, AdamW {}, activations {}; total {}\n", phase,
             mib(mem.parameters), mib(mem.gradients), mib(mem.optimizer), mib(mem.activations), mib(mem.total()));
}

/// B random windows of T + 1 bytes from [begin, end): inputs and next-byte targets.
void sampleBatch(const MappedFile &f, size_t begin, size_t end, int B, int T, std::mt19937_64 &rng,
                 std::vector<int32_t> &tokens, std::vector<int32_t> &targets) {
  tokens.resize(size_t(B * T)), targets.resize(size_t(B * T));
  std::uniform_int_distribution<size_t> pick(begin, end - size_t(T) - 1);
  for (int b = 0; b < B; ++b) {
    const size_t at = pick(rng);
    for (int t = 0; t < T; ++t) {
      tokens[size_t(b * T + t)] = f.data[at + size_t(t)];
      targets[size_t(b * T + t)] = f.data[at + size_t(t) + 1];
    }
  }
}

int train(const Options &o) {
  const GptConfig config = configFrom(o);
  const int B = o.integer("batch"), T = o.integer("seq"), steps = o.integer("steps");
  MappedFile data(o.str("data"));
  const size_t split = data.size * 9 / 10;
  if (split < size_t(T) + 2 || data.size - split < size_t(T) + 2)
    throw Error(fmt::format("{} has {} bytes: too few for windows of {} with a 10% validation split",
                            o.str("data"), data.size, T + 1));
  GptModel model(config, backendFrom(o));
  model.init_random(uint64_t(o.integer("seed")));
  fmt::print("GPT: {} layers, {} heads, {} dims, vocabulary 256 (bytes); {:.2f}M parameters; B={} T={}; {}\n",
             config.n_layer, config.n_head, config.n_embd, double(model.num_parameters()) / 1e6, B, T,
             o.str("backend"));
  printMemory("model", model);
  std::mt19937_64 rng(uint64_t(o.integer("seed")));
  std::vector<int32_t> tokens, targets;
  const float maxLr = o.real("lr");
  const int valEvery = o.integer("val-every");
  for (int step = 0; step < steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    sampleBatch(data, 0, split, B, T, rng, tokens, targets);
    const float loss = model.forward(tokens, targets, B, T);
    if (step == 0)
      printMemory("after forward", model);
    model.zero_grad();
    model.backward();
    const float norm = model.clip_grad_norm(1.0f);
    const float lr = GptModel::learning_rate(step, o.integer("warmup"), steps, maxLr, maxLr / 10);
    model.step({.lr = lr});
    if (step == 0)
      printMemory("after step", model);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("step {:5}/{}  loss {:.4f}  lr {:.2e}  norm {:.3f}  {:.0f} tok/s\n", step + 1, steps, loss, lr, norm,
               double(B * T) / s);
    if (valEvery > 0 && ((step + 1) % valEvery == 0 || step + 1 == steps)) {
      std::mt19937_64 valRng(7); // the same validation windows every time
      double sum = 0;
      for (int i = 0; i < 4; ++i) {
        sampleBatch(data, split, data.size, B, T, valRng, tokens, targets);
        sum += model.forward(tokens, targets, B, T);
      }
      fmt::print("validation loss {:.4f}\n", sum / 4);
    }
  }
  if (!o.str("save").empty()) {
    std::vector<std::vector<float>> values;
    std::vector<TensorToWrite> tensors;
    for (const ParamSpec &p : model.parameters())
      values.push_back(model.read_parameter(p.name));
    for (size_t i = 0; i < values.size(); ++i)
      tensors.push_back({model.parameters()[i].name, model.parameters()[i].shape, values[i]});
    write_safetensors(o.str("save"), tensors, {{"format", "pt"}, {"tokenizer", "bytes"}});
    fmt::print("saved {}\n", o.str("save"));
  }
  return 0;
}

/// Samples a token from logits with temperature, top-k and top-p.
int sample(std::vector<float> logits, float temperature, int topK, float topP, std::mt19937_64 &rng) {
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
  if (temperature <= 0)
    return order[0]; // greedy
  if (topK > 0 && size_t(topK) < order.size())
    order.resize(size_t(topK));
  std::vector<double> p;
  const double mx = logits[size_t(order[0])];
  double sum = 0;
  for (int i : order)
    sum += p.emplace_back(std::exp((logits[size_t(i)] - mx) / temperature));
  double kept = 0;
  size_t n = 0;
  while (n < p.size() && (n == 0 || kept / sum < topP))
    kept += p[n++];
  std::discrete_distribution<size_t> pick(p.begin(), p.begin() + std::ptrdiff_t(n));
  return order[pick(rng)];
}

int generate(const Options &o) {
  const GptConfig config = configFrom(o);
  GptModel model(config, backendFrom(o));
  model.load(SafetensorsFile::read(o.str("model")));
  std::string text = o.str("prompt");
  if (text.empty())
    throw Error("generate: --prompt must not be empty");
  std::mt19937_64 rng(uint64_t(o.integer("seed")));
  fmt::print("{}", text);
  for (int i = 0; i < o.integer("tokens"); ++i) {
    // The whole (trailing) context each time: no KV cache yet.
    const size_t T = std::min(text.size(), size_t(config.n_ctx));
    std::vector<int32_t> tokens;
    for (size_t j = text.size() - T; j < text.size(); ++j)
      tokens.push_back(uint8_t(text[j]));
    model.forward(tokens, {}, 1, int(T));
    std::vector<float> logits = model.logits();
    std::vector<float> last(logits.end() - config.vocab, logits.end());
    const char next = char(sample(last, o.real("temperature"), o.integer("top-k"), o.real("top-p"), rng));
    text.push_back(next);
    fmt::print("{}", next);
    std::fflush(stdout);
  }
  fmt::print("\n");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::map<std::string, std::string> common = {
      {"layers", "2"}, {"heads", "4"}, {"embd", "128"}, {"seq", "64"}, {"seed", "1"}, {"backend", "interp"}};
  try {
    if (argc >= 2 && !std::strcmp(argv[1], "train")) {
      auto d = common;
      d.insert({{"data", ""}, {"steps", "200"}, {"batch", "4"}, {"lr", "1e-3"}, {"warmup", "20"},
                {"val-every", "50"}, {"save", ""}});
      Options o(argc, argv, 2, d);
      if (o.str("data").empty())
        throw Error("train: --data FILE is required");
      return train(o);
    }
    if (argc >= 2 && !std::strcmp(argv[1], "generate")) {
      auto d = common;
      d.insert({{"model", ""}, {"prompt", ""}, {"tokens", "100"}, {"temperature", "0.8"}, {"top-k", "40"},
                {"top-p", "0.95"}});
      Options o(argc, argv, 2, d);
      if (o.str("model").empty())
        throw Error("generate: --model FILE is required");
      return generate(o);
    }
    fmt::print(stderr, "usage: tegula-gpt train --data FILE [options] | generate --model FILE --prompt TEXT "
                       "[options]\n(see tools/tegula-gpt/main.cpp for the options)\n");
    return 64;
  } catch (const Error &e) {
    fmt::print(stderr, "tegula-gpt: {}\n", e.what());
    return 1;
  } catch (const std::exception &e) { // std::stoi and friends
    fmt::print(stderr, "tegula-gpt: bad option value ({})\n", e.what());
    return 1;
  }
}
