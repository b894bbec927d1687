//===- TunedTiles.cpp - tuned tiles kept per GPU for `--tiles auto` -------===//
#include "models/gpt/TunedTiles.h"

#include "models/gpt/TileTuner.h"
#include "runtime/KernelCache.h"
#include "tegula/device.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace tegula::gpt {

namespace {
const char *storageName(DType d) { return d == DType::bf16 ? "bf16" : "f32"; }

const char *precisionName(tl::precision p) {
  switch (p) {
  case tl::precision::ieee:
    return "ieee";
  case tl::precision::tf32:
    return "tf32";
  case tl::precision::tf32x3:
    return "tf32x3";
  }
  return "?";
}

/// Letters, digits, '.' and '-' as they are; anything else '_'.
std::string fileSafe(const std::string &s) {
  std::string out;
  for (char c : s)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return out.empty() ? "_" : out;
}

/// The precision of f32's dots in a name; bf16's dots are bf16.
std::string precisionPart(const TuningSetup &s) {
  return s.storage == DType::f32 ? fmt::format("-{}", precisionName(s.matmul)) : "";
}
} // namespace

std::string TuningSetup::str() const {
  return fmt::format("{} ({}); {} layers, {} heads, {} dims, vocabulary {}; B={} T={}; {}{}{}{}", device, chip,
                     config.n_layer, config.n_head, config.n_embd, config.vocab, batch, seq, storageName(storage),
                     storage == DType::f32 ? fmt::format(" at {}", precisionName(matmul)) : "",
                     warp_specialize ? ", warp specialised" : "", stream_k ? ", stream-K" : "");
}

std::string TuningSetup::file_name() const {
  return fmt::format("{}-{}-{}{}-ws{}-sk{}-L{}-H{}-C{}-V{}-B{}-T{}.txt", fileSafe(chip), fileSafe(device),
                     storageName(storage), precisionPart(*this), int(warp_specialize), int(stream_k),
                     config.n_layer, config.n_head, config.n_embd, config.vocab, batch, seq);
}

std::string TuningSetup::tune_command() const {
  // tune's defaults: --precision tf32, --warp-specialize on, --stream-k on.
  return fmt::format("tegula-gpt tune --layers {} --heads {} --embd {} --vocab {} --batch {} --seq {} --dtype {}{}{}{}",
                     config.n_layer, config.n_head, config.n_embd, config.vocab, batch, seq, storageName(storage),
                     storage == DType::f32 && matmul != tl::precision::tf32
                         ? fmt::format(" --precision {}", precisionName(matmul))
                         : "",
                     warp_specialize ? "" : " --warp-specialize off", stream_k ? "" : " --stream-k off");
}

TuningSetup TuningSetup::of(const GptModel &model, tl::precision matmul, int batch, int seq) {
  const DeviceInfo info = device_info();
  return {.device = info.name, .chip = info.chip, .config = model.config(), .batch = batch, .seq = seq,
          .storage = model.storage(), .matmul = matmul, .warp_specialize = model.warp_specialize(),
          .stream_k = model.stream_k_weight_gradients()};
}

std::string tuned_tiles_directory() {
  if (const char *d = std::getenv("TEGULA_GPT_TILES_DIR"); d && *d)
    return std::string(d) == "-" ? "" : d;
  const std::string base = runtime::KernelCache::defaultDirectory(); // the kernel cache's
  if (base.empty() || base == "-")
    return "";
  return base + "/gpt-tiles";
}

std::string save_tuned_tiles(const TuningSetup &setup, const std::string &overrides, const std::string &comment) {
  const std::string dir = tuned_tiles_directory();
  if (dir.empty())
    return "";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw Error(fmt::format("cannot make the tuned tiles' directory {}: {}", dir, ec.message()));
  const std::string path = dir + "/" + setup.file_name();
  // Written beside under a name of this process's own and renamed: a reader
  // never sees half a file, two tunings of one setup never mix.
  static std::atomic<unsigned> written{0};
  const std::string partial = fmt::format("{}.{}-{}.partial", path, ::getpid(), written++);
  bool ok;
  {
    std::ofstream out(partial, std::ios::trunc);
    std::istringstream lines(comment);
    for (std::string line; std::getline(lines, line);)
      out << "# " << line << "\n";
    out << "# for " << setup.str() << "\n" << overrides << "\n";
    ok = bool(out.flush());
  }
  if (ok)
    std::filesystem::rename(partial, path, ec);
  if (!ok || ec) {
    std::filesystem::remove(partial, ec);
    throw Error(fmt::format("cannot write the tuned tiles {}", path));
  }
  return path;
}

std::optional<std::string> load_tuned_tiles(const TuningSetup &setup) {
  const std::string dir = tuned_tiles_directory();
  if (dir.empty())
    return std::nullopt;
  const std::string path = dir + "/" + setup.file_name();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return std::nullopt; // anything else there that cannot be read: tile_overrides_from's error

  return tile_overrides_from("@" + path);
}

std::string resolve_tiles(const std::string &text, const TuningSetup &setup, std::string &note,
                          std::string_view fallback) {
  note.clear();
  if (text != "auto")
    return tile_overrides_from(text);
  std::optional<std::string> tuned;
  const GptModel::Tiles defaults = GptModel::gpu_tiles(setup.storage, setup.chip, setup.matmul);
  std::string differences;
  try { // unreadable, or kept by an older Tegula whose fields have gone
    tuned = load_tuned_tiles(setup);
    if (tuned)
      differences = defaults.with(*tuned).diff(defaults);
  } catch (const Error &e) {
    note = fmt::format("tiles: the tuning kept in {}/{} cannot be used ({}) - {}; `{}` keeps a new one",
                       tuned_tiles_directory(), setup.file_name(), e.what(), fallback, setup.tune_command());
    return "";
  }
  if (tuned) {
    note = fmt::format("tiles: tuned for this setup ({}/{}): {}", tuned_tiles_directory(), setup.file_name(),
                       differences.empty() ? "the defaults" : differences);
    return *tuned;
  }
  const std::string dir = tuned_tiles_directory();
  note = fmt::format("tiles: no tuning kept for {} ({}) - {}; `{}` keeps one", setup.str(),
                     dir.empty() ? "no cache directory" : dir + "/" + setup.file_name() + " does not exist", fallback,
                     setup.tune_command());
  return "";
}

} // namespace tegula::gpt
