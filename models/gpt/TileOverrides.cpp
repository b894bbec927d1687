//===- TileOverrides.cpp - GptModel::Tiles by name ------------------------===//
//
// The model's tile sizes, warps and switches set by name, so a run can try
// other tiles without a rebuild (tegula-gpt train --tiles, gpt2-train
// --tiles, Python's GptModel.override_tiles):
//
//   attention_fwd_block=64,attention_fwd_warps=4,attention_fwd_ws=0
//
//===----------------------------------------------------------------------===//
#include "models/gpt/Model.h"

#include "tegula/error.h"

#include <fmt/format.h>

#include <charconv>
#include <variant>

namespace tegula::gpt {
namespace {

using Tiles = GptModel::Tiles;

/// A field, its name, and the least value it takes (0 where 0 means "the
/// default of another field", as kmajor_bm = 0 does; bools 0 or 1).
struct Field {
  const char *name;
  std::variant<int Tiles::*, bool Tiles::*> member;
  int least = 1;
};

#define TEGULA_INT(f, least) Field{#f, &Tiles::f, least}
#define TEGULA_BOOL(f) Field{#f, &Tiles::f, 0}
const Field kFields[] = {
    TEGULA_INT(bm, 1),
    TEGULA_INT(bn, 1),
    TEGULA_INT(bk, 1),
    TEGULA_INT(linear_warps, 1),
    TEGULA_INT(linear_stages, 1),
    TEGULA_INT(attention_bwd_block, 1),
    TEGULA_INT(attention_bwd_step, 1),
    TEGULA_INT(attention_warps, 1),
    TEGULA_INT(attention_fwd_block, 1),
    TEGULA_INT(attention_fwd_warps, 1),
    TEGULA_BOOL(attention_fwd_diagonal_mask_only),
    TEGULA_BOOL(attention_fwd_ws),
    TEGULA_INT(vocab_block, 1),
    TEGULA_INT(column_rows, 1),
    TEGULA_INT(column_tile_rows, 1),
    TEGULA_INT(column_block, 1),
    TEGULA_INT(column_sum_rows, 1),
    TEGULA_INT(column_sum_block, 1),
    TEGULA_INT(kmajor_bm, 0),
    TEGULA_INT(kmajor_bn, 0),
    TEGULA_INT(kmajor_bk, 0),
    TEGULA_INT(kmajor_warps, 0),
    TEGULA_INT(kmajor_stages, 0),
    TEGULA_INT(kmajor_dw_bn, 0),
    TEGULA_INT(row_warps, 1),
    TEGULA_INT(ln_bwd_rows, 1),
    TEGULA_INT(ln_bwd_tile_rows, 1),
    TEGULA_INT(ln_bwd_warps, 1),
    TEGULA_INT(group_m, 0),
    TEGULA_INT(head_bn, 0),
    TEGULA_INT(head_warps, 0),
    TEGULA_INT(head_stages, 0),
    TEGULA_INT(dw_warps, 0),
    TEGULA_BOOL(dw_stream_k),
    TEGULA_INT(gelu_dx_bn, 0),
    TEGULA_INT(gelu_dx_warps, 0),
};
#undef TEGULA_INT
#undef TEGULA_BOOL

std::string fieldNames() {
  std::string names;
  for (const Field &f : kFields)
    names += fmt::format("{}{}", names.empty() ? "" : ", ", f.name);
  return names;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return s;
}

} // namespace

void Tiles::set(std::string_view name, int value) {
  for (const Field &f : kFields) {
    if (name != f.name)
      continue;
    if (auto *b = std::get_if<bool Tiles::*>(&f.member)) {
      if (value != 0 && value != 1)
        throw Error(fmt::format("GPT tiles: {} is 0 or 1, not {}", name, value));
      this->*(*b) = value != 0;
    } else {
      if (value < f.least)
        throw Error(fmt::format("GPT tiles: {} is at least {}, not {}", name, f.least, value));
      this->*std::get<int Tiles::*>(f.member) = value;
    }
    return;
  }
  throw Error(fmt::format("GPT tiles: no field '{}' (the fields: {})", name, fieldNames()));
}

Tiles Tiles::with(std::string_view overrides) const {
  Tiles t = *this;
  while (!overrides.empty()) {
    const size_t comma = overrides.find(',');
    const std::string_view entry = trim(overrides.substr(0, comma));
    overrides = comma == std::string_view::npos ? std::string_view() : overrides.substr(comma + 1);
    if (entry.empty())
      continue;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos)
      throw Error(fmt::format("GPT tiles: '{}' is not name=value", entry));
    const std::string_view name = trim(entry.substr(0, eq)), text = trim(entry.substr(eq + 1));
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
      throw Error(fmt::format("GPT tiles: {}'s value '{}' is not an integer", name, text));
    t.set(name, value);
  }
  return t;
}

std::string Tiles::str() const {
  std::string out;
  for (const Field &f : kFields) {
    const int value = std::visit([&](auto member) { return int(this->*member); }, f.member);
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", f.name, value);
  }
  return out;
}

} // namespace tegula::gpt
