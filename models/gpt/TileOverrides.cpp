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

/// A field, its name, the least value it takes (0 where 0 means "the
/// default of another field", as kmajor_bm = 0 does; bools 0 or 1), and
/// whether a value (other than that 0) must be a power of two: tile extents
/// and warp counts are.
struct Field {
  const char *name;
  std::variant<int Tiles::*, bool Tiles::*> member;
  int least = 1;
  bool powerOfTwo = false;
};

#define TEGULA_INT(f, least) Field{#f, &Tiles::f, least, false}
#define TEGULA_POW2(f, least) Field{#f, &Tiles::f, least, true}
#define TEGULA_BOOL(f) Field{#f, &Tiles::f, 0, false}
const Field kFields[] = {
    TEGULA_POW2(bm, 1),
    TEGULA_POW2(bn, 1),
    TEGULA_POW2(bk, 1),
    TEGULA_POW2(linear_warps, 1),
    TEGULA_INT(linear_stages, 1),
    TEGULA_POW2(attention_bwd_block, 1),
    TEGULA_POW2(attention_bwd_step, 1),
    TEGULA_POW2(attention_warps, 1),
    TEGULA_POW2(attention_fwd_block, 1),
    TEGULA_POW2(attention_fwd_warps, 1),
    TEGULA_POW2(attention_fwd_step, 0),
    TEGULA_BOOL(attention_fwd_diagonal_mask_only),
    TEGULA_BOOL(attention_fwd_ws),
    TEGULA_BOOL(attention_bwd_ws),
    TEGULA_POW2(vocab_block, 1),
    TEGULA_INT(column_rows, 1),
    TEGULA_POW2(column_tile_rows, 1),
    TEGULA_POW2(column_block, 1),
    TEGULA_POW2(column_sum_rows, 1),
    TEGULA_POW2(column_sum_block, 1),
    TEGULA_POW2(kmajor_bm, 0),
    TEGULA_POW2(kmajor_bn, 0),
    TEGULA_POW2(kmajor_bk, 0),
    TEGULA_POW2(kmajor_warps, 0),
    TEGULA_INT(kmajor_stages, 0),
    TEGULA_POW2(kmajor_dw_bn, 0),
    TEGULA_BOOL(dw_transposed),
    TEGULA_POW2(row_warps, 1),
    TEGULA_POW2(ln_fwd_rows, 1),
    TEGULA_POW2(ln_fwd_block, 0),
    TEGULA_INT(ln_bwd_rows, 1),
    TEGULA_POW2(ln_bwd_tile_rows, 1),
    TEGULA_POW2(ln_bwd_warps, 1),
    TEGULA_POW2(ln_bwd_block, 0),
    TEGULA_INT(group_m, 0),
    TEGULA_POW2(head_bn, 0),
    TEGULA_POW2(head_warps, 0),
    TEGULA_INT(head_stages, 0),
    TEGULA_POW2(head_dw_bn, 0),
    TEGULA_POW2(dw_warps, 0),
    TEGULA_POW2(dw_bn, 0),
    TEGULA_BOOL(dw_stream_k),
    TEGULA_POW2(gelu_dx_bn, 0),
    TEGULA_POW2(gelu_dx_warps, 0),
    TEGULA_BOOL(gelu_ping_pong),
    TEGULA_INT(gelu_pp_fwd_stages, 1),
    TEGULA_POW2(gelu_pp_dx_bn, 1),
    TEGULA_INT(gelu_pp_dx_stages, 1),
};
#undef TEGULA_INT
#undef TEGULA_POW2
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

int valueOf(const Tiles &t, const Field &f) {
  return std::visit([&](auto member) { return int(t.*member); }, f.member);
}

/// "name=value" for t's fields, comma-separated; only those that differ
/// from *base where there is one.
std::string fieldsOf(const Tiles &t, const Tiles *base) {
  std::string out;
  for (const Field &f : kFields)
    if (!base || valueOf(t, f) != valueOf(*base, f))
      out += fmt::format("{}{}={}", out.empty() ? "" : ",", f.name, valueOf(t, f));
  return out;
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
      if (f.powerOfTwo && value != 0 && (value & (value - 1)) != 0)
        throw Error(fmt::format("GPT tiles: {} is a power of two (a tile extent or a warp count), not {}", name,
                                value));
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
  // The K-major GEMMs take their five fields together (kmajor_bm = 0: the
  // linear layers' tile for all five).
  if (!t.kmajor_bm && (t.kmajor_bn || t.kmajor_bk || t.kmajor_warps || t.kmajor_stages))
    throw Error("GPT tiles: kmajor_bn, kmajor_bk, kmajor_warps and kmajor_stages take effect with kmajor_bm "
                "(0: the K-major GEMMs run at the linear layers' tile); set all five");
  if (t.kmajor_bm && !(t.kmajor_bn && t.kmajor_bk && t.kmajor_warps && t.kmajor_stages))
    throw Error(fmt::format("GPT tiles: kmajor_bm={} needs kmajor_bn, kmajor_bk, kmajor_warps and kmajor_stages too "
                            "(now {}, {}, {}, {})",
                            t.kmajor_bm, t.kmajor_bn, t.kmajor_bk, t.kmajor_warps, t.kmajor_stages));
  return t;
}

std::string Tiles::str() const { return fieldsOf(*this, nullptr); }

std::string Tiles::diff(const Tiles &base) const { return fieldsOf(*this, &base); }

} // namespace tegula::gpt
