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
#include "tools/tegula-gpt/CommandLine.h"
#include "tools/tegula-gpt/TokenStream.h"
#include "tools/tegula-gpt/Train.h"

#include "tegula/device.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <unistd.h>

using namespace tegula;
using namespace tegula::gpt;
using namespace tegula::gpt::cli;

namespace {

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
  fmt::print("{}", idsInOut ? fmt::format("{}", fmt::join(ids, " ")) : prompt); // ids as they are printed after
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
