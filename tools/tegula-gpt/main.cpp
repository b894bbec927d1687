//===- tegula-gpt: train and sample GPT-2 models written in Tegula ---------===//
//
// `tegula-gpt SUBCOMMAND --help` lists each one's options (Commands.h):
//   tegula-gpt tokenize --data input.txt --out tokens.bin [--vocab vocab.json --merges merges.txt]
//   tegula-gpt train (--data input.txt | --tokens tokens.bin) [--steps 200] [--batch 4] [--seq 64]
//                    [--layers 2 --heads 4 --embd 128] [--lr 1e-3] [--warmup 20]
//                    [--val-every 50] [--save model.safetensors] [--save-every N] [--seed 1]
//                    [--init model.safetensors | --resume model.safetensors]
//                    [--backend interp|sim|gpu] [--precision ieee|tf32|tf32x3] [--dtype f32|bf16]
//                    [--warp-specialize on|off] [--stream-k on|off] [--tiles name=value,...|@FILE|auto]
//                    [--stochastic-rounding on|off (bf16: the copy of the master weights)]
//   tegula-gpt tune  [--layers 12 --heads 12 --embd 768 --vocab 50257] [--batch 8] [--seq 1024]
//                    [--dtype bf16] [--steps 5] [--rounds 3] [--min-gain 0.005] [--choices name,...]
//                    [--tiles name=value,...|@FILE|auto] [--out tiles.txt] [--warp-specialize on|off]
//                    [--stream-k on|off]
//   tegula-gpt generate --model model.safetensors [--heads N]
//                    [--vocab vocab.json --merges merges.txt] [--prompt "text"] [--tokens 100]
//                    [--temperature 0.8] [--top-k 40] [--top-p 0.95] [--stop on|off] [--seed 1]
//
// train --save writes the model and beside it AdamW's state with the run's
// place (Resume.h): --resume continues the run as if it had not stopped;
// --init starts a new run from a checkpoint's weights (fine-tuning).
//
// generate reads the model's sizes from the checkpoint (its heads from
// --heads, its metadata or config.json beside it) and decodes with a KV
// cache, up to its context length (wpe's rows; train makes it --seq), and
// stops at <|endoftext|> (BPE), from which an empty prompt starts.
// Tokens are bytes (vocabulary 256) unless GPT-2's BPE files are given
// (tokenize writes them to a token file: a 16-byte header "TGTK", version,
// vocabulary size, token count, then little-endian i32 ids). Text or token files are
// memory-mapped; the last 10% is held out for the validation loss. Training
// is deterministic for a seed (but for the order of the token-embedding
// gradient's atomic sums).
//
// tune times training steps on the GPU with each alternative of the tiles
// no single measurement has settled (tile_choices: LayerNorm's rows a
// program, attention's forward tile, ping-pong GELU GEMMs...) and writes
// the fastest as a --tiles file (models/gpt/TileTuner.h, docs/gpt.md). It
// also keeps them for this GPU and setup (models/gpt/TunedTiles.h), where
// train --tiles auto (and tune --tiles auto, to start from them) finds them.
//
//===----------------------------------------------------------------------===//
#include "models/gpt/Checkpoint.h"
#include "models/gpt/Model.h"
#include "models/gpt/Safetensors.h"
#include "models/gpt/TileTuner.h"
#include "models/gpt/Tokenizer.h"
#include "models/gpt/TunedTiles.h"
#include "models/gpt/FileOutput.h"
#include "tools/tegula-gpt/Commands.h"
#include "tools/tegula-gpt/Resume.h"

#include "tegula/device.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <signal.h>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tegula;
using namespace tegula::gpt;
using tegula::gpt::cli::Options;
using tegula::gpt::cli::Resumed;
using tegula::gpt::cli::RunPlace;
using tegula::gpt::cli::modelMetadata;
using tegula::gpt::cli::newSaveId;

namespace {

/// The most tokens a vocabulary may have here (GPT-2's is 50257; the
/// largest models' some 256K).
constexpr int kMaxVocab = 1 << 24;

GptConfig configFrom(const Options &o, int vocab) {
  GptConfig c;
  c.n_layer = o.integer("layers", 1, 1024), c.n_head = o.integer("heads", 1, 1024);
  c.n_embd = o.integer("embd", 1, 1 << 16);
  // The context is the trained window: positions past it would have
  // embeddings that training never touched (GPT-2's n_ctx is its T too).
  c.vocab = vocab, c.vocab_padded = int(cdiv(vocab, 128) * 128), c.n_ctx = o.integer("seq", 1, 1 << 20);
  return c;
}

/// --batch and --seq, whose product (the tokens a step) must fit an int.
std::pair<int, int> batchAndSeq(const Options &o) {
  const int B = o.integer("batch", 1, 1 << 20), T = o.integer("seq", 1, 1 << 20);
  if (int64_t(B) * T > std::numeric_limits<int32_t>::max())
    throw Error(fmt::format("--batch {} x --seq {} is {} tokens a step; at most {}", B, T, int64_t(B) * T,
                            std::numeric_limits<int32_t>::max()));
  return {B, T};
}

constexpr char kTokenMagic[4] = {'T', 'G', 'T', 'K'};


Backend backendFrom(const Options &o) {
  const Backend b = parse_backend(o.str("backend"));
  std::string why;
  if (b == Backend::GPU && !gpu_available(&why)) // its advice names the runtime's variable, not our option
    throw Error(fmt::format("--backend {}: {}; --backend interp or sim run on the CPU", o.str("backend"),
                            why.substr(0, why.find(" — "))));
  return b;
}

/// --precision of the f32 dots: tf32 (tensor cores) by default on the GPU.
tl::precision precisionFrom(const Options &o) {
  std::string p = o.str("precision");
  if (p.empty())
    p = backendFrom(o) == Backend::GPU ? "tf32" : "ieee";
  if (p == "ieee") return tl::precision::ieee;
  if (p == "tf32") return tl::precision::tf32;
  if (p == "tf32x3") return tl::precision::tf32x3;
  throw Error(fmt::format("--precision is ieee, tf32 or tf32x3, not '{}'", p));
}

const char *precisionName(tl::precision p) {
  return p == tl::precision::tf32 ? "tf32" : p == tl::precision::tf32x3 ? "tf32x3" : "ieee";
}

/// --dtype of the weights and activations: f32, or bf16 (mixed precision:
/// f32 master weights, gradients and AdamW state).
DType storageFrom(const Options &o) {
  const std::string d = o.str("dtype");
  if (d == "f32") return DType::f32;
  if (d == "bf16") return DType::bf16;
  throw Error(fmt::format("--dtype is f32 or bf16, not '{}'", d));
}

/// An on|off option: --warp-specialize (default on: sm_90a gives the
/// model's TMA-fed loops a producer warpgroup and runs its GEMMs
/// persistent), --stream-k (default on: the blocks' weight gradients as
/// stream-K GEMMs) - docs/gpt.md.
bool onOff(const Options &o, const char *name) {
  const std::string v = o.str(name);
  if (v == "on") return true;
  if (v == "off") return false;
  throw Error(fmt::format("--{} is on or off, not '{}'", name, v));
}

/// What a tuning of `model` at B x T on this GPU holds for (--tiles auto).
TuningSetup tuningSetup(const GptModel &model, const Options &o, int B, int T) {
  return TuningSetup::of(model, precisionFrom(o), B, T);
}

/// A read-only memory map of a file: the token stream (bytes).
struct MappedFile {
  const uint8_t *data = nullptr;
  size_t size = 0;
  explicit MappedFile(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0)
      throw Error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) {
      close(fd);
      throw Error(fmt::format("{} is {}; give a regular file", path,
                              S_ISDIR(st.st_mode) ? "a directory" : "not a regular file (a device, a pipe or a socket)"));
    }
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

/// Bytes in the unit that shows them (a tiny model's are KiB, GPT-2's MiB).
std::string mib(int64_t bytes) {
  if (bytes < 1024)
    return fmt::format("{} B", bytes);
  if (bytes < (int64_t(1) << 20))
    return fmt::format("{:.1f} KiB", double(bytes) / 1024.0);
  if (bytes < (int64_t(1) << 30))
    return fmt::format("{:.1f} MiB", double(bytes) / 1048576.0);
  return fmt::format("{:.2f} GiB", double(bytes) / 1073741824.0);
}

/// A time left as people say it: 42s, 3m07s, 2h05m.
std::string duration(double seconds) {
  const int64_t s = int64_t(std::llround(std::max(0.0, seconds)));
  if (s < 60)
    return fmt::format("{}s", s);
  if (s < 3600)
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
}

/// A parameter count as people say it: 124.44M, 20.5K.
std::string count(int64_t n) {
  if (n < 1000)
    return std::to_string(n);
  if (n < 1000000)
    return fmt::format("{:.1f}K", double(n) / 1e3);
  return fmt::format("{:.2f}M", double(n) / 1e6);
}

void printMemory(const char *phase, const GptModel &m) {
  GptModel::Memory mem = m.memory();
  fmt::print("[memory] {:<16} parameters {}, gradients {}, AdamW {}, activations {} ({} per layer), scratch {}; "
             "total {}, peak {}\n",
             phase, mib(mem.parameters), mib(mem.gradients), mib(mem.optimizer), mib(mem.activations),
             mib(mem.activations_per_layer), mib(mem.scratch), mib(mem.total()), mib(mem.peak));
}

/// The training stream: a text file's bytes, or a token file's ids, mapped.
struct TokenStream {
  std::unique_ptr<MappedFile> file;
  size_t count = 0;
  int vocab = 256;
  bool bytes = true;
  int32_t at(size_t i) const {
    if (bytes)
      return file->data[i];
    int32_t v;
    std::memcpy(&v, file->data + 16 + 4 * i, 4);
    return v;
  }
  /// A fingerprint of the stream (a resumed run notes a change): FNV-1a
  /// over its count and at most 65536 evenly spaced tokens - cheap for a
  /// file of billions.
  std::string fingerprint() const {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](uint64_t v) {
      for (int i = 0; i < 8; ++i, v >>= 8)
        h = (h ^ (v & 0xff)) * 0x100000001b3ull;
    };
    mix(count), mix(uint64_t(vocab));
    const size_t stride = std::max<size_t>(1, count / 65536);
    for (size_t i = 0; i < count; i += stride)
      mix(uint64_t(uint32_t(at(i))));
    return fmt::format("{:016x}", h);
  }
  static TokenStream open(const Options &o) {
    TokenStream s;
    if (!o.str("tokens").empty()) {
      s.file = std::make_unique<MappedFile>(o.str("tokens"));
      uint32_t header[4] = {};
      if (s.file->size < 16 || (std::memcpy(header, s.file->data, 16), std::memcmp(header, kTokenMagic, 4)) ||
          header[1] != 1 || (s.file->size - 16) % 4)
        throw Error(fmt::format("{} is not a token file (tegula-gpt tokenize writes them)", o.str("tokens")));
      if (header[2] < 2 || header[2] > uint32_t(kMaxVocab))
        throw Error(fmt::format("{}: its header gives a vocabulary of {} tokens; tegula-gpt takes 2 to {}",
                                o.str("tokens"), header[2], kMaxVocab));
      s.bytes = false, s.vocab = int(header[2]), s.count = (s.file->size - 16) / 4;
      // The header's count (0 in files of older tokenizers): a file cut
      // short (a full disk) is not taken for whole.
      if (header[3] != 0 && header[3] != s.count)
        throw Error(fmt::format("{}: its header says {} tokens, the file holds {}: it was cut short (tokenize it "
                                "again)",
                                o.str("tokens"), header[3], s.count));
      // Every id inside the vocabulary, checked once here rather than at
      // the step whose batch meets a bad one.
      for (size_t i = 0; i < s.count; ++i)
        if (const int32_t id = s.at(i); id < 0 || id >= s.vocab)
          throw Error(fmt::format("{}: token {} (of {}) is {}, outside its vocabulary [0, {})", o.str("tokens"), i,
                                  s.count, id, s.vocab));
    } else {
      s.file = std::make_unique<MappedFile>(o.str("data"));
      s.count = s.file->size;
    }
    return s;
  }
};

/// B random windows of T + 1 tokens from [begin, end): inputs and next-token targets.
void sampleBatch(const TokenStream &f, size_t begin, size_t end, int B, int T, std::mt19937_64 &rng,
                 std::vector<int32_t> &tokens, std::vector<int32_t> &targets) {
  tokens.resize(size_t(B * T)), targets.resize(size_t(B * T));
  std::uniform_int_distribution<size_t> pick(begin, end - size_t(T) - 1);
  for (int b = 0; b < B; ++b) {
    const size_t at = pick(rng);
    for (int t = 0; t < T; ++t) {
      tokens[size_t(b * T + t)] = f.at(at + size_t(t));
      targets[size_t(b * T + t)] = f.at(at + size_t(t) + 1);
    }
  }
}

/// A BPE needs both of its files: one alone is a mistake, not byte tokens.
void requireBothBpeFiles(const Options &o) {
  if (o.str("vocab").empty() != o.str("merges").empty())
    throw Error(fmt::format("GPT-2's BPE needs --vocab vocab.json and --merges merges.txt; only --{} is given",
                            o.str("vocab").empty() ? "merges" : "vocab"));
}

/// The file option `output` names is none of the run's `inputs` (options
/// that name files): writing it would destroy that input.
void checkNotAnInput(const Options &o, const std::string &output, std::initializer_list<const char *> inputs) {
  const std::string out = o.str(output);
  if (out.empty())
    return;
  for (const char *input : inputs) {
    std::string in = o.str(input);
    if (in.rfind('@', 0) == 0) // --tiles @FILE
      in = in.substr(1);
    std::error_code ec;
    if (!in.empty() && std::filesystem::equivalent(in, out, ec))
      throw Error(fmt::format("--{} {} is the --{} file; it would be overwritten (give another file name)", output,
                              out, input));
  }
}

int tokenize(const Options &o) {
  requireBothBpeFiles(o);
  checkNotAnInput(o, "out", {"data", "vocab", "merges"});
  MappedFile text(o.str("data"));
  std::string_view view(reinterpret_cast<const char *>(text.data), text.size);
  std::vector<int32_t> ids;
  int vocab = 256;
  if (!o.str("vocab").empty()) {
    BpeTokenizer bpe = BpeTokenizer::load(o.str("vocab"), o.str("merges"));
    ids = bpe.encode(view), vocab = bpe.vocab_size();
  } else {
    ids = ByteTokenizer::encode(view);
  }
  const std::string out = o.str("out");
  // Magic, version 1, vocabulary, the count (0 past 2^32 - 1: not checked).
  uint32_t header[4] = {0, 1, uint32_t(vocab), ids.size() <= UINT32_MAX ? uint32_t(ids.size()) : 0};
  std::memcpy(header, kTokenMagic, 4);
  write_file_replacing(out, {std::as_bytes(std::span(header)), std::as_bytes(std::span(ids))}, "tokenize");
  fmt::print("{}: {} bytes -> {} tokens (vocabulary {}) in {}\n", o.str("data"), text.size, ids.size(), vocab, out);
  return 0;
}

/// Ctrl-C (or SIGTERM: kill, timeout, a batch system) during training: the
/// step in flight finishes, the model is saved (with --save) and the run ends
/// with 128 + the signal; a second one ends it at once - but not inside a
/// save, which holds both signals off until its two files are whole.
volatile std::sig_atomic_t g_stopSignal = 0;
void onStopSignal(int sig) {
  g_stopSignal = sig;
  std::signal(sig, SIG_DFL);
}
struct StopSignalsHeld {
  sigset_t held{}, before{};
  StopSignalsHeld() {
    sigemptyset(&held);
    sigaddset(&held, SIGINT);
    sigaddset(&held, SIGTERM);
    sigprocmask(SIG_BLOCK, &held, &before);
  }
  ~StopSignalsHeld() { sigprocmask(SIG_SETMASK, &before, nullptr); }
};

/// The configuration of a run that starts from the checkpoint `file` (at
/// `path`; --init, --resume): its sizes; --layers, --heads and --embd, where
/// given, must agree. --seq, not given, is at most its context.
GptConfig checkpointConfigFor(Options &o, const SafetensorsFile &file, const std::string &path, int vocab) {
  const GptConfig c = checkpoint_config(file, o.given("heads") ? o.integer("heads", 1, 1024) : 0,
                                        config_json_beside(path));
  for (auto [name, value] : {std::pair{"layers", c.n_layer}, {"heads", c.n_head}, {"embd", c.n_embd}})
    if (o.given(name) && o.integer(name) != value)
      throw Error(fmt::format("--{} {}: the model in {} has {} (its sizes are the checkpoint's)", name, o.str(name),
                              path, value));
  if (c.vocab != vocab)
    throw Error(fmt::format("the model in {} has a vocabulary of {} tokens, the data {} ({})", path, c.vocab, vocab,
                            vocab == 256 ? "bytes: tokenize it with the model's --vocab and --merges" : "token file"));
  if (o.integer("seq", 1) > c.n_ctx) {
    if (o.given("seq"))
      throw Error(fmt::format("--seq {} is longer than the context of the model in {} ({} positions)", o.str("seq"),
                              path, c.n_ctx));
    o.adopt("seq", std::to_string(c.n_ctx));
  }
  return c;
}

int train(const Options &given) {
  Options o = given;
  if (!o.str("init").empty() && !o.str("resume").empty())
    throw Error("give --init (weights to start a new run from) or --resume (a run to continue), not both");
  const std::string from = o.str("resume").empty() ? o.str("init") : o.str("resume");
  const bool resuming = !o.str("resume").empty();
  if (resuming && o.given("seed"))
    throw Error("--resume continues the saved run's random streams (its batches, its stochastic rounding): --seed "
                "does not apply");
  const TokenStream data = TokenStream::open(o);
  // Both files read whole before anything is written: --save may name the
  // file resumed from.
  std::optional<SafetensorsFile> start, state;
  Resumed resumed;
  const std::string option = resuming ? "--resume" : "--init";
  if (!from.empty()) {
    constexpr std::string_view stateExt = ".state.safetensors";
    if (from.size() > stateExt.size() && from.compare(from.size() - stateExt.size(), stateExt.size(), stateExt) == 0)
      throw Error(fmt::format("{} {}: that is an optimizer state; give the model file beside it ({}.safetensors)",
                              option, from, from.substr(0, from.size() - stateExt.size())));
    if (!std::filesystem::exists(from))
      throw Error(fmt::format("{} {}: no such file", option, from));
    start = SafetensorsFile::read(from);
  }
  RunPlace place{.step = 0, .saveId = "", .dataFingerprint = data.fingerprint(), .backend = o.str("backend"),
                 .precision = ""};
  if (resuming) {
    const std::string statePath = optimizer_state_beside(from);
    if (!std::filesystem::exists(statePath))
      throw Error(fmt::format("--resume {}: no optimizer state beside it ({}; tegula-gpt train --save writes both); "
                              "--init {} starts a new run from its weights",
                              from, statePath, from));
    state = SafetensorsFile::read(statePath);
    place.precision = precisionName(precisionFrom(o));
    resumed = resumeRun(o, start->metadata(), state->metadata(), from, place);
    if (o.str("save").empty())
      fmt::print(stderr, "warning: no --save: the resumed run's training is not kept (--save {} continues the "
                         "file)\n",
                 from);
  }
  const GptConfig config = start ? checkpointConfigFor(o, *start, from, data.vocab) : configFrom(o, data.vocab);
  const auto [B, T] = batchAndSeq(o);
  const int steps = o.integer("steps", 1), warmup = o.integer("warmup", 0), valEvery = o.integer("val-every", 0);
  const int saveEvery = o.integer("save-every", 0);
  const float maxLr = o.real("lr", 0, 1e6);
  const uint64_t seed = o.seed("seed");
  if (resumed.step >= steps)
    throw Error(fmt::format("--resume {}: the run has taken {} steps of --steps {}; give a larger --steps to train on",
                            from, resumed.step, steps));
  if (saveEvery > 0 && o.str("save").empty())
    throw Error("--save-every saves to the --save file: give --save too");
  checkNotAnInput(o, "save", {"data", "tokens", "tiles", "init"});
  if (!o.str("save").empty()) {
    check_file_creatable(o.str("save"), "--save");
    check_file_creatable(optimizer_state_beside(o.str("save")), "--save (its optimizer state)");
  }
  const size_t split = data.count * 9 / 10;
  if (split < size_t(T) + 2 || data.count - split < size_t(T) + 2)
    throw Error(fmt::format("the data has {} tokens: too few for windows of {} with a 10% validation split",
                            data.count, T + 1));
  GptModel model(config, backendFrom(o), precisionFrom(o), storageFrom(o));
  model.set_warp_specialize(onOff(o, "warp-specialize"));
  model.set_stream_k_weight_gradients(onOff(o, "stream-k"));
  const bool stochastic = onOff(o, "stochastic-rounding");
  if (stochastic && model.storage() != DType::bf16)
    throw Error("--stochastic-rounding rounds the bf16 copy of the master weights: give --dtype bf16 (f32 has none)");
  if (!o.str("tiles").empty()) { // GptModel::Tiles::with (docs/gpt.md); @FILE: tegula-gpt tune's; auto: its kept one
    std::string overrides = o.str("tiles"), note;
    if (overrides == "auto") {
      if (model.backend() != Backend::GPU)
        throw Error("--tiles auto reads the tiles tegula-gpt tune kept for a GPU: give --backend gpu");
      overrides = resolve_tiles(overrides, tuningSetup(model, o, B, T), note);
      fmt::print("{}\n", note);
    }
    model.set_tiles(model.tiles().with(tile_overrides_from(overrides)));
    fmt::print("tiles: {}\n", model.tiles().str());
  }
  model.init_random(seed); // also stochastic rounding's seed where a checkpoint replaces the weights
  if (start)
    model.load(*start);
  if (state)
    model.load_optimizer(*state);
  fmt::print("GPT: {} layers, {} heads, {} dims, vocabulary {} ({}); {} parameters; B={} T={}; {} tokens; {}, "
             "{}\n",
             config.n_layer, config.n_head, config.n_embd, config.vocab, data.bytes ? "bytes" : "token file",
             count(model.num_parameters()), B, T, data.count, o.str("backend"),
             model.storage() == DType::bf16 ? "bf16 (f32 master weights)" : "f32");
  if (resuming)
    fmt::print("resuming {} at step {} of {}{}{}\n", from, resumed.step, steps, resumed.notes.empty() ? "" : "; ",
               fmt::join(resumed.notes, "; "));
  else if (start)
    fmt::print("starting from the weights of {}\n", from);
  printMemory("model", model);
  model.init_optimizer();
  printMemory("after optimizer", model);
  std::mt19937_64 rng = resuming ? resumed.batchRng : std::mt19937_64(seed);
  std::vector<int32_t> tokens, targets;
  // MFU against the device's dense bf16 peak (as llm.c reports it); only on
  // GPUs whose peak is known.
  double peakFlops = 0;
  if (backendFrom(o) == Backend::GPU) {
    const std::string name = device_info().name;
    peakFlops = name.find("H100") != std::string::npos || name.find("H200") != std::string::npos ? 989e12
                : name.find("A100") != std::string::npos                                         ? 312e12
                                                                                               : 0;
  }
  // The model (Hugging Face's names) and, beside it, AdamW's state with the
  // run's place (Resume.h): what --resume continues from.
  place.precision = precisionName(precisionFrom(o));
  auto save = [&](int stepsTaken) {
    StopSignalsHeld held; // both files whole, or the old pair untouched
    place.step = stepsTaken, place.saveId = newSaveId();
    model.save(o.str("save"), modelMetadata(config.vocab, place));
    model.save_optimizer(optimizer_state_beside(o.str("save")), runMetadata(o, place, rng));
  };
  g_stopSignal = 0;
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
  struct RestoreSignals {
    ~RestoreSignals() {
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
    }
  } restore;
  double laterSteps = 0; // seconds, the steps after the first
  int laterCount = 0;
  for (int step = resumed.step; step < steps; ++step) {
    if (const int sig = g_stopSignal) {
      const char *what = sig == SIGTERM ? "terminated (SIGTERM)" : "interrupted";
      if (!o.str("save").empty()) {
        save(step);
        fmt::print("{} after step {} of {}: saved {} (train --resume {} continues)\n", what, step, steps,
                   o.str("save"), o.str("save"));
      } else {
        fmt::print("{} after step {} of {} (no --save: nothing is saved)\n", what, step, steps);
      }
      return 128 + sig;
    }
    auto start = std::chrono::steady_clock::now();
    sampleBatch(data, 0, split, B, T, rng, tokens, targets);
    const float loss = model.forward(tokens, targets, B, T);
    if (step == resumed.step)
      printMemory("after forward", model);
    model.zero_grad();
    model.backward();
    const float norm = model.clip_grad_norm(1.0f);
    // A diverged run stops here: its weights are NaN from this step on,
    // and a checkpoint of them would only generate garbage.
    if (!std::isfinite(loss) || !std::isfinite(norm))
      throw Error(fmt::format("training diverged at step {}: loss {}, gradient norm {}{}; a smaller --lr (now {:g}) "
                              "or a longer --warmup may help",
                              step + 1, loss, norm, o.str("save").empty() ? "" : "; nothing is saved", maxLr));
    if (step == resumed.step)
      printMemory("after backward", model);
    const float lr = GptModel::learning_rate(step, warmup, steps, maxLr, maxLr / 10);
    model.step({.lr = lr, .stochastic_rounding = stochastic});
    if (step == resumed.step)
      printMemory("after step", model);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double tokPerS = double(B * T) / s;
    // The time left at the mean step so far, the first (which compiles the
    // kernels) left out once there are others.
    if (step > resumed.step)
      laterSteps += s, ++laterCount;
    const double meanStep = laterCount ? laterSteps / laterCount : s;
    fmt::print("step {:5}/{}  loss {:.4f}  lr {:.2e}  norm {:.3f}  {:.0f} tok/s{}{}\n", step + 1, steps, loss, lr, norm,
               tokPerS,
               peakFlops > 0 ? fmt::format("  MFU {:.1f}%", 100.0 * tokPerS * model.training_flops_per_token(T) / peakFlops)
                             : std::string(),
               step + 1 < steps ? "  eta " + duration(meanStep * (steps - step - 1)) : std::string());
    if (valEvery > 0 && ((step + 1) % valEvery == 0 || step + 1 == steps)) {
      std::mt19937_64 valRng(7); // the same validation windows every time
      double sum = 0;
      for (int i = 0; i < 4; ++i) {
        sampleBatch(data, split, data.count, B, T, valRng, tokens, targets);
        sum += model.forward(tokens, targets, B, T);
      }
      fmt::print("validation loss {:.4f}\n", sum / 4);
    }
    if (saveEvery > 0 && (step + 1) % saveEvery == 0 && step + 1 < steps) {
      save(step + 1);
      fmt::print("saved {} at step {}\n", o.str("save"), step + 1);
    }
  }
  if (!o.str("save").empty()) {
    save(steps);
    fmt::print("saved {}\n", o.str("save"));
  }
  return 0;
}

/// The choices `names` (comma-separated) picks from `all`, in its order;
/// all of them for "".
std::vector<TileChoice> pickChoices(const std::vector<TileChoice> &all, const std::string &names) {
  if (names.empty())
    return all;
  std::vector<TileChoice> picked;
  std::string known;
  for (const TileChoice &c : all)
    known += (known.empty() ? "" : ", ") + c.name;
  size_t from = 0;
  while (from <= names.size()) {
    const size_t comma = std::min(names.find(',', from), names.size());
    const std::string name = names.substr(from, comma - from);
    from = comma + 1;
    if (name.empty())
      continue;
    auto it = std::find_if(all.begin(), all.end(), [&](const TileChoice &c) { return c.name == name; });
    if (it == all.end())
      throw Error(fmt::format("tune: no choice '{}' for this model and GPU (its choices: {})", name, known));
    if (std::any_of(picked.begin(), picked.end(), [&](const TileChoice &c) { return c.name == name; }))
      throw Error(fmt::format("tune: the choice '{}' is named twice in --choices", name));
    picked.push_back(*it);
  }
  return picked;
}

int tune(const Options &o) {
  if (backendFrom(o) != Backend::GPU)
    throw Error("tune times training steps on a GPU (--backend gpu): the interpreter's and the simulator's speed "
                "say nothing about a GPU's");
  const int vocab = o.integer("vocab", 2, kMaxVocab);
  GptConfig config = configFrom(o, vocab);
  config.n_ctx = std::max(config.n_ctx, 1024);
  const auto [B, T] = batchAndSeq(o);
  const int steps = o.integer("steps", 1), rounds = o.integer("rounds", 1);
  const uint64_t seed = o.seed("seed");
  checkNotAnInput(o, "out", {"tiles"});
  if (!o.str("out").empty())
    check_file_creatable(o.str("out"), "--out");
  GptModel model(config, Backend::GPU, precisionFrom(o), storageFrom(o));
  model.set_warp_specialize(onOff(o, "warp-specialize"));
  model.set_stream_k_weight_gradients(onOff(o, "stream-k"));
  std::string note; // --tiles auto: start from the tuning kept for this setup
  const std::string start = resolve_tiles(o.str("tiles"), tuningSetup(model, o, B, T), note);
  if (!note.empty())
    fmt::print("{}\n", note);
  model.set_tiles(model.tiles().with(start));
  const DeviceInfo info = device_info();
  const std::vector<TileChoice> choices = pickChoices(
      tile_choices(model.storage(), info.chip, precisionFrom(o), model.warp_specialize()), o.str("choices"));
  model.init_random(seed);
  model.init_optimizer();
  std::mt19937_64 rng(seed);
  std::vector<int32_t> tokens(size_t(B) * size_t(T)), targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = int32_t(rng() % uint64_t(vocab)), targets[i] = int32_t(rng() % uint64_t(vocab));
  const std::string what = fmt::format("{} layers, {} heads, {} dims, vocabulary {}; B={} T={}; {}{}", config.n_layer,
                                       config.n_head, config.n_embd, vocab, B, T,
                                       model.storage() == DType::bf16 ? "bf16" : "f32",
                                       model.warp_specialize() ? ", warp specialised" : "");
  fmt::print("tune: {} on {} ({}); {} choices, {} rounds of {} steps each\n", what, info.name, info.chip,
             choices.size(), rounds, steps);
  StepTimer timer(model, tokens, targets, B, T, steps);
  TileTunerOptions options;
  options.rounds = rounds;
  options.min_gain = o.real("min-gain", 0, 1);
  options.progress = [](const TileTrial &t) {
    if (t.error.empty())
      fmt::print("  {:<16} {:<72} {:9.3f} ms a step\n", t.choice, t.overrides.empty() ? "(as is)" : t.overrides, t.ms);
    else
      fmt::print("  {:<16} {:<72} error: {}\n", t.choice, t.overrides, t.error);
    std::fflush(stdout);
  };
  const TileTuning tuned = tune_tiles(model.tiles(), choices, std::ref(timer), options);
  // What differs from the defaults: --tiles' start and the tuning's wins.
  const std::string overrides =
      tuned.tiles.diff(GptModel::gpu_tiles(model.storage(), info.chip, precisionFrom(o)));
  fmt::print("tuned: {} ({:.3f} ms a step, {:.3f} at the start: {:.3f}x)\n",
             overrides.empty() ? "the defaults" : overrides, tuned.tuned_ms, tuned.start_ms,
             tuned.start_ms / tuned.tuned_ms);
  // Every field, not only those that differ: a later Tegula's defaults do
  // not change what was tuned (the comments list the differences).
  const std::string differs = fmt::format("differs from the defaults in: {}", overrides.empty() ? "none" : overrides);
  if (!o.str("out").empty()) {
    // Tuned for one model, dtype and GPU (the comments say which): give
    // train the same --dtype.
    const std::string text = fmt::format(
        "# tegula-gpt tune on {} ({}), driver {}\n# {}\n# {:.3f} ms a step tuned, {:.3f} at the start\n# {}\n{}\n",
        info.name, info.chip, info.driver_version, what, tuned.tuned_ms, tuned.start_ms, differs, tuned.tiles.str());
    write_file_replacing(o.str("out"), {std::as_bytes(std::span(text))}, "tune");
    fmt::print("wrote {} (tegula-gpt train --tiles @{})\n", o.str("out"), o.str("out"));
  }
  // Kept for --tiles auto on this GPU and setup (the last tuning wins) -
  // after --out, and a failure only warns: the tuning is printed above.
  try {
    const std::string kept = save_tuned_tiles(
        tuningSetup(model, o, B, T), tuned.tiles.str(),
        fmt::format("tegula-gpt tune on {} ({}), driver {}\n{:.3f} ms a step tuned, {:.3f} at the start\n{}", info.name,
                    info.chip, info.driver_version, tuned.tuned_ms, tuned.start_ms, differs));
    if (!kept.empty())
      fmt::print("kept {} (tegula-gpt train --tiles auto at the same setup)\n", kept);
  } catch (const Error &e) {
    fmt::print(stderr, "warning: the tuning is not kept for --tiles auto: {}\n", e.what());
  }
  return 0;
}

/// --ids on: token ids separated by spaces or commas, each in [0, vocab).
std::vector<int32_t> idsFrom(const std::string &text, int vocab) {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at < text.size()) {
    if (text[at] == ' ' || text[at] == ',') {
      ++at;
      continue;
    }
    const size_t end = std::min(text.find_first_of(" ,", at), text.size());
    const std::string word = text.substr(at, end - at);
    int64_t id = -1;
    const auto [stop, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
    if (ec != std::errc() || stop != word.data() + word.size() || id < 0 || id >= vocab)
      throw Error(fmt::format("--prompt with --ids on: '{}' is not a token id of the model's vocabulary [0, {})", word,
                              vocab));
    ids.push_back(int32_t(id));
    at = end;
  }
  if (ids.empty())
    throw Error("--prompt with --ids on holds no token id");
  return ids;
}

int generate(const Options &o) {
  requireBothBpeFiles(o);
  // Every option checked before the checkpoint is read.
  const std::string prompt = o.str("prompt");
  const int asked = o.integer("tokens", 0);
  GptModel::Sampling sampling{.temperature = o.real("temperature", 0, 1e6), .top_k = o.integer("top-k", 0),
                              .top_p = o.real("top-p", 0, 1), .seed = o.seed("seed")};
  if (sampling.top_p <= 0)
    throw Error(fmt::format("--top-p is a probability mass in (0, 1] (1: no cut), not '{}'", o.str("top-p")));
  const bool idsInOut = onOff(o, "ids");
  std::optional<BpeTokenizer> bpe;
  if (!o.str("vocab").empty())
    bpe = BpeTokenizer::load(o.str("vocab"), o.str("merges"));
  // The sizes from the checkpoint (Hugging Face's or ours), the heads from
  // --heads, the file's metadata or config.json beside it.
  const SafetensorsFile file = SafetensorsFile::read(o.str("model"));
  const GptConfig config = checkpoint_config(file, o.integer("heads", 0, 1024), config_json_beside(o.str("model")));
  const int vocab = bpe ? bpe->vocab_size() : 256;
  if (vocab != config.vocab && (bpe || !idsInOut))
    throw Error(fmt::format("generate: the {} has {} tokens, the model's vocabulary {}{}",
                            bpe ? "BPE vocabulary" : "byte tokenizer", vocab, config.vocab,
                            bpe ? "" : " (a BPE model: give its --vocab and --merges; any model: --ids on)"));
  // GPT-2's <|endoftext|> ends a text: generation stops there (--stop), and
  // an empty prompt starts from it, as Hugging Face's and llm.c's do.
  const int32_t endOfText = bpe ? bpe->token_id("<|endoftext|>") : -1;
  if (o.given("stop") && onOff(o, "stop") && endOfText < 0)
    throw Error(fmt::format("--stop on ends at <|endoftext|>, which {}", bpe ? "this BPE vocabulary has not"
                                                                             : "only a BPE model (--vocab, --merges) has"));
  if (prompt.empty() && endOfText < 0)
    throw Error(fmt::format("generate: give a --prompt: {} no <|endoftext|> token to start from",
                            bpe ? "this BPE vocabulary has" : "a model without --vocab/--merges has"));
  std::vector<int32_t> ids;
  if (prompt.empty())
    ids = {endOfText};
  else if (idsInOut)
    ids = idsFrom(prompt, config.vocab);
  else
    ids = bpe ? bpe->encode(prompt) : ByteTokenizer::encode(prompt);
  auto text = [&](const std::vector<int32_t> &v) {
    return idsInOut ? fmt::format(" {}", fmt::join(v, " ")) : bpe ? bpe->decode(v) : ByteTokenizer::decode(v);
  };
  // The prompt must leave room for a token; the tokens asked for beyond
  // the context are said to be cut (when asked for: --tokens' default is
  // cut quietly), not dropped silently.
  if (int64_t(ids.size()) >= config.n_ctx)
    throw Error(fmt::format("generate: the prompt is {} tokens and the model's context {}: give a prompt of at most "
                            "{} tokens",
                            ids.size(), config.n_ctx, config.n_ctx - 1));
  const int n = std::min(asked, config.n_ctx - int(ids.size()));
  if (n < asked && o.given("tokens"))
    fmt::print(stderr, "generate: {} tokens, not {}: the prompt's {} and they fill the context of {}\n", n, asked,
               ids.size(), config.n_ctx);
  GptModel model(config, backendFrom(o), precisionFrom(o), storageFrom(o));
  model.set_warp_specialize(onOff(o, "warp-specialize"));
  model.load(file);
  // Each token printed as it comes (a token may hold part of a UTF-8
  // character: its bytes go out as they are and the terminal joins them).
  if (onOff(o, "stop") && endOfText >= 0)
    sampling.stop_tokens = {endOfText};
  sampling.on_token = [&](int32_t id) {
    if (id == endOfText && !sampling.stop_tokens.empty() && !idsInOut) // the end of the text, not a part of it
      return;
    fmt::print("{}", text({id}));
    std::fflush(stdout);
  };
  fmt::print("{}", prompt);
  std::fflush(stdout);
  if (n > 0)
    model.generate(ids, n, sampling);
  fmt::print("\n");
  return 0;
}

/// Text and token files are memory-mapped: one that shrinks while a run
/// reads it (regenerated in place) raises SIGBUS, said here as what it is.
void onSigbus(int) {
  static const char message[] = "tegula-gpt: a memory-mapped input (--data or --tokens) shrank while it was read "
                                "(SIGBUS): keep it unchanged during a run, or write the new one to another file\n";
  [[maybe_unused]] ssize_t n = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(1);
}

} // namespace

int main(int argc, char **argv) {
  std::signal(SIGBUS, onSigbus);
  // A line a step, even into a file or a pipe: a log is never lost in a buffer.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  using tegula::gpt::cli::Command;
  const std::string sub = argc >= 2 ? argv[1] : "";
  if (sub == "--help" || sub == "-h" || sub == "help") {
    fmt::print("{}", tegula::gpt::cli::usage());
    return 0;
  }
  try {
    for (const Command &c : tegula::gpt::cli::commands()) {
      if (sub != c.name)
        continue;
      // --help where an option's name goes (not a value: --prompt -h).
      for (int i = 2; i < argc; i += std::strchr(argv[i], '=') || std::strncmp(argv[i], "--", 2) ? 1 : 2)
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
          fmt::print("{}\n\n{}", c.about, Options::help("usage: " + c.usage, c.options));
          return 0;
        }
      Options o(argc, argv, 2, c.options);
      if (sub == "tokenize") {
        if (o.str("data").empty() || o.str("out").empty())
          throw Error("tokenize: --data FILE and --out FILE are required");
        return tokenize(o);
      }
      if (sub == "train") {
        if (o.str("data").empty() == o.str("tokens").empty())
          throw Error("train: give --data FILE (text, byte tokens) or --tokens FILE (tegula-gpt tokenize)");
        return train(o);
      }
      if (sub == "tune")
        return tune(o);
      if (o.str("model").empty())
        throw Error("generate: --model FILE is required");
      return generate(o);
    }
    fmt::print(stderr, "{}{}", sub.empty() ? "" : fmt::format("tegula-gpt: no subcommand '{}'\n", sub),
               tegula::gpt::cli::usage());
    return 64;
  } catch (const Error &e) {
    fmt::print(stderr, "tegula-gpt: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc &) {
    fmt::print(stderr, "tegula-gpt: out of memory (a smaller model, --batch or --seq needs less)\n");
    return 1;
  } catch (const std::exception &e) {
    fmt::print(stderr, "tegula-gpt: {}\n", e.what());
    return 1;
  }
}
