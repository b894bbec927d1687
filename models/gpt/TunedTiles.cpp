//===- TunedTiles.cpp - tuned tiles kept per GPU for `--tiles auto` -------===//
#include "models/gpt/TunedTiles.h"

#include "models/gpt/TileTuner.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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
} // namespace

std::string TuningSetup::str() const {
  return fmt::format("{} ({}); {} layers, {} heads, {} dims, vocabulary {}; B={} T={}; {}{}{}{}", device, chip,
                     config.n_layer, config.n_head, config.n_embd, config.vocab, batch, seq, storageName(storage),
                     storage == DType::f32 ? fmt::format(" at {}", precisionName(matmul)) : "",
                     warp_specialize ? ", warp specialised" : "", stream_k ? ", stream-K" : "");
}

std::string TuningSetup::file_name() const {
  return fmt::format("{}-{}-{}-{}-ws{}-sk{}-L{}-H{}-C{}-V{}-B{}-T{}.txt", fileSafe(chip), fileSafe(device),
                     storageName(storage), precisionName(matmul), int(warp_specialize), int(stream_k),
                     config.n_layer, config.n_head, config.n_embd, config.vocab, batch, seq);
}

std::string tuned_tiles_directory() {
  if (const char *d = std::getenv("TEGULA_GPT_TILES_DIR"); d && *d)
    return std::string(d) == "-" ? "" : d;
  std::string base;
  if (const char *d = std::getenv("TEGULA_CACHE_DIR"); d && *d)
    base = d;
  else if (const char *home = std::getenv("HOME"); home && *home)
    base = std::string(home) + "/.cache/tegula";
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
  const std::string path = dir + "/" + setup.file_name();
  // Written beside and renamed: a reader never sees half a file.
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    std::istringstream lines(comment);
    for (std::string line; std::getline(lines, line);)
      out << "# " << line << "\n";
    out << "# for " << setup.str() << "\n" << overrides << "\n";
    if (!out.flush())
      throw Error(fmt::format("cannot write the tuned tiles {}", partial));
  }
  std::filesystem::rename(partial, path, ec);
  if (ec)
    throw Error(fmt::format("cannot write the tuned tiles {}: {}", path, ec.message()));
  return path;
}

std::optional<std::string> load_tuned_tiles(const TuningSetup &setup) {
  const std::string dir = tuned_tiles_directory();
  if (dir.empty())
    return std::nullopt;
  const std::string path = dir + "/" + setup.file_name();
  if (!std::filesystem::is_regular_file(path))
    return std::nullopt;
  return tile_overrides_from("@" + path);
}

std::string resolve_tiles(const std::string &text, const TuningSetup &setup, std::string &note) {
  note.clear();
  if (text != "auto")
    return tile_overrides_from(text);
  if (const std::optional<std::string> tuned = load_tuned_tiles(setup)) {
    try { // kept by an older Tegula, its fields may have gone
      (void)GptModel::gpu_tiles(setup.storage, setup.chip, setup.matmul).with(*tuned);
    } catch (const Error &e) {
      note = fmt::format("tiles: the tuning kept in {}/{} no longer applies ({}) - the defaults; tune again",
                         tuned_tiles_directory(), setup.file_name(), e.what());
      return "";
    }
    note = fmt::format("tiles: tuned for this setup ({}/{}): {}", tuned_tiles_directory(), setup.file_name(),
                       tuned->empty() ? "the defaults won" : *tuned);
    return *tuned;
  }
  const GptConfig &c = setup.config;
  note = fmt::format("tiles: no tuning kept for {} in {} - the defaults; `tegula-gpt tune --layers {} --heads {} "
                     "--embd {} --vocab {} --batch {} --seq {} --dtype {}` keeps one",
                     setup.str(), tuned_tiles_directory().empty() ? "(no cache directory)" : tuned_tiles_directory(),
                     c.n_layer, c.n_head, c.n_embd, c.vocab, setup.batch, setup.seq, storageName(setup.storage));
  return "";
}

} // namespace tegula::gpt
