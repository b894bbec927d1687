//===- Checkpoint.cpp - a GPT-2 checkpoint's configuration -----------------===//
#include "models/gpt/Checkpoint.h"

#include "models/gpt/Safetensors.h"
#include "tegula/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

namespace tegula::gpt {
namespace {

/// `file`'s tensor `name`, with or without the "transformer." prefix.
const SafeTensor *find(const SafetensorsFile &file, const std::string &name) {
  if (file.contains(name))
    return &file.at(name);
  if (file.contains("transformer." + name))
    return &file.at("transformer." + name);
  return nullptr;
}

int headsFromJson(const std::string &path) {
  std::ifstream in(path);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception &e) {
    throw Error(fmt::format("{}: not JSON ({})", path, e.what()));
  }
  if (!config.contains("n_head") || !config["n_head"].is_number_integer())
    throw Error(fmt::format("{}: no integer \"n_head\"", path));
  const int64_t heads = config["n_head"].get<int64_t>();
  if (heads < 1 || heads > std::numeric_limits<int>::max())
    throw Error(fmt::format("{}: \"n_head\" is {}, not a positive count of heads", path, heads));
  return int(heads);
}

} // namespace

std::string config_json_beside(const std::string &path) {
  return (std::filesystem::path(path).parent_path() / "config.json").string();
}

std::string optimizer_state_beside(const std::string &path) {
  constexpr std::string_view ext = ".safetensors";
  const bool hasExt = path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  return (hasExt ? path.substr(0, path.size() - ext.size()) : path) + ".state.safetensors";
}

GptConfig checkpoint_config(const SafetensorsFile &file, int n_head, const std::string &config_json) {
  const SafeTensor *wte = find(file, "wte.weight"), *wpe = find(file, "wpe.weight");
  if (!wte || !wpe)
    throw Error(fmt::format("checkpoint: no '{}' tensor - not a GPT-2 checkpoint", wte ? "wpe.weight" : "wte.weight"));
  if (wte->shape.size() != 2 || wpe->shape.size() != 2 || wte->shape[1] != wpe->shape[1])
    throw Error(fmt::format("checkpoint: wte [{}] and wpe [{}] are not [vocab, n_embd] and [n_ctx, n_embd]",
                            fmt::join(wte->shape, ", "), fmt::join(wpe->shape, ", ")));
  std::set<int> blocks;
  for (const std::string &name : file.names()) {
    const std::string_view n = name.rfind("transformer.", 0) == 0 ? std::string_view(name).substr(12) : name;
    if (n.rfind("h.", 0) == 0)
      blocks.insert(std::atoi(std::string(n.substr(2)).c_str()));
  }
  if (blocks.empty() || *blocks.rbegin() + 1 != int(blocks.size()))
    throw Error(fmt::format("checkpoint: the blocks h.{{i}} are not numbered 0 .. n - 1 ({} found)", blocks.size()));
  GptConfig c;
  c.n_layer = int(blocks.size());
  c.vocab = int(wte->shape[0]), c.n_embd = int(wte->shape[1]), c.n_ctx = int(wpe->shape[0]);
  c.vocab_padded = int((c.vocab + 127) / 128 * 128);
  int saidHeads = 0; // the file's own word, which a given count must not contradict
  if (auto it = file.metadata().find("n_head"); it != file.metadata().end()) {
    const std::string &v = it->second;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), saidHeads);
    if (ec != std::errc() || end != v.data() + v.size() || saidHeads < 1)
      throw Error(fmt::format("checkpoint: its metadata's n_head '{}' is not a positive integer", v));
  }
  if (n_head > 0 && saidHeads > 0 && n_head != saidHeads)
    throw Error(fmt::format("checkpoint: {} heads were asked for (tegula-gpt --heads, Python n_head=), but the file's "
                            "metadata says n_head {}: the model was trained with {}",
                            n_head, saidHeads, saidHeads));
  if (n_head > 0) {
    c.n_head = n_head;
  } else if (saidHeads > 0) {
    c.n_head = saidHeads;
  } else if (!config_json.empty() && std::filesystem::exists(config_json)) {
    c.n_head = headsFromJson(config_json);
  } else {
    throw Error(fmt::format("checkpoint: the number of heads is not in the weights or the file's metadata; give "
                            "it (tegula-gpt --heads, Python n_head=) or put Hugging Face's config.json beside "
                            "the file{}",
                            config_json.empty() ? "" : fmt::format(" ({} is missing)", config_json)));
  }
  c.validate();
  return c;
}

} // namespace tegula::gpt
