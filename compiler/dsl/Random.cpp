//===- Random.cpp - counter-based random numbers in the DSL (Philox4x32) ---===//
//
// tl::philox, randint4x, randint, rand, randn: Random123's Philox4x32
// (Salmon et al., SC'11), the generator Triton's tl.rand uses - stateless,
// so each element's numbers depend only on (seed, offset) and every backend
// and launch configuration gives the same bits. Built from the DSL's own
// integer ops: 32-bit words live in i32 tiles (unsigned values' bits), and a
// word's high product is taken from a 64-bit multiply (LLVM turns it back
// into mul.hi.u32 on the GPU). Every op carries the caller's source location.
//
//===----------------------------------------------------------------------===//
#include "compiler/dsl/TraceState.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace tegula::tl {

namespace {

// Philox4x32's multipliers and Weyl key increments (Random123).
constexpr uint32_t kRoundA = 0xD2511F53u, kRoundB = 0xCD9E8D57u;
constexpr uint32_t kKeyA = 0x9E3779B9u, kKeyB = 0xBB67AE85u;

/// An unsigned 32-bit constant as the i32 literal with its bits.
int word(uint32_t v) { return int(int32_t(v)); }

/// `v` as an operand located at the caller's line.
operand at(const tensor &v, const Loc &loc) { return operand(v, loc); }

/// The high 32 bits of the unsigned product of word tile `a` and `m`.
tensor mulhi(const tensor &a, uint32_t m, const Loc &loc) {
  tensor wide = operand(a.to(i64, loc), loc) & operand(0xffffffffLL, loc);
  tensor product = operand(wide, loc) * operand(static_cast<long long>(m), loc);
  return (operand(product, loc) >> operand(32LL, loc)).to(i32, loc);
}

/// A word operand (a number, or an integer tile or scalar) as an i32 tile.
tensor asWord(const operand &v, const char *what, const Loc &loc) {
  if (v.kind == operand::Kind::Float)
    dsl::fail(loc, fmt::format("tl::philox: {} must be an integer, got a floating-point number", what));
  if (v.kind == operand::Kind::Int)
    return scalar_const(word(uint32_t(v.i)), i32, loc);
  if (v.t.is_pointer(loc) || !is_int(v.t.dtype(loc)) || v.t.dtype(loc) == i1)
    dsl::fail(loc, fmt::format("tl::philox: {} must be an integer tile or scalar, got {}", what,
                                  v.t.type_str(loc)));
  return v.t.dtype(loc) == i32 ? v.t : v.t.to(i32, loc); // wider: the low word
}

/// The 64-bit key of `seed` as (low word, high word); an i32 seed is sign
/// extended first (as Triton's), a number taken as 64 bits.
std::pair<tensor, tensor> keyOf(const operand &seed, const char *fn, const Loc &loc) {
  if (seed.kind == operand::Kind::Float)
    dsl::fail(loc, fmt::format("{}: the seed must be an integer, got a floating-point number", fn));
  if (seed.kind == operand::Kind::Int)
    return {scalar_const(word(uint32_t(uint64_t(seed.i))), i32, loc),
            scalar_const(word(uint32_t(uint64_t(seed.i) >> 32)), i32, loc)};
  if (seed.t.is_pointer(loc) || !is_int(seed.t.dtype(loc)) || seed.t.dtype(loc) == i1)
    dsl::fail(loc, fmt::format("{}: the seed must be an integer scalar or tile, got {}", fn, seed.t.type_str(loc)));
  tensor wide = seed.t.dtype(loc) == i64 ? seed.t : seed.t.to(i64, loc);
  return {wide.to(i32, loc), (operand(wide, loc) >> operand(32LL, loc)).to(i32, loc)};
}

/// 24 random bits of a word as an f32 in [0, 1): exact, never 1.
tensor unitInterval(const tensor &w, const Loc &loc) {
  tensor bits = operand(operand(w, loc) >> operand(8, loc), loc) & operand(0xffffff, loc);
  return operand(bits.to(f32, loc), loc) * operand(1.0 / 16777216.0, loc);
}

/// The counter of each element of `offset`: (low word, high word) of the
/// offset (an integer tile or scalar; i64 offsets use both words).
std::pair<tensor, tensor> counterOf(const tensor &offset, const char *fn, const Loc &loc) {
  if (offset.is_pointer(loc) || !is_int(offset.dtype(loc)) || offset.dtype(loc) == i1)
    dsl::fail(loc, fmt::format("{}: the offset must be an integer tile or scalar, got {}", fn, offset.type_str(loc)));
  if (offset.dtype(loc) != i64)
    return {offset.dtype(loc) == i32 ? offset : offset.to(i32, loc), scalar_const(0, i32, loc)};
  return {offset.to(i32, loc), (operand(offset, loc) >> operand(32LL, loc)).to(i32, loc)};
}

void checkRounds(int rounds, const char *fn, const Loc &loc) {
  if (rounds < 1 || rounds > 64)
    dsl::fail(loc, fmt::format("{}: rounds must be 1 to 64 (Philox4x32-10 uses 10), got {}", fn, rounds));
}

std::array<tensor, 4> philoxWords(tensor k0, tensor k1, std::array<tensor, 4> c, int rounds, const Loc &loc) {
  for (int r = 0; r < rounds; ++r) {
    // (hi, lo) of A c0 and of B c2; then the words cross.
    tensor hiA = mulhi(c[0], kRoundA, loc), loA = operand(c[0], loc) * operand(word(kRoundA), loc);
    tensor hiB = mulhi(c[2], kRoundB, loc), loB = operand(c[2], loc) * operand(word(kRoundB), loc);
    c = {operand(operand(hiB, loc) ^ at(c[1], loc), loc) ^ at(k0, loc), loB,
         operand(operand(hiA, loc) ^ at(c[3], loc), loc) ^ at(k1, loc), loA};
    if (r + 1 < rounds) {
      k0 = operand(k0, loc) + operand(word(kKeyA), loc);
      k1 = operand(k1, loc) + operand(word(kKeyB), loc);
    }
  }
  return c;
}

} // namespace

std::array<tensor, 4> philox(operand seed_lo, operand seed_hi, operand c0, operand c1, operand c2, operand c3,
                             int rounds, Loc loc) {
  dsl::current(loc); // outside a trace: the usual error
  checkRounds(rounds, "tl::philox", loc);
  return philoxWords(asWord(seed_lo, "seed_lo", loc), asWord(seed_hi, "seed_hi", loc),
                     {asWord(c0, "c0", loc), asWord(c1, "c1", loc), asWord(c2, "c2", loc), asWord(c3, "c3", loc)},
                     rounds, loc);
}

std::array<tensor, 4> randint4x(operand seed, const tensor &offset, int rounds, Loc loc) {
  dsl::current(loc); // outside a trace: the usual error
  checkRounds(rounds, "tl::randint4x", loc);
  auto [k0, k1] = keyOf(seed, "tl::randint4x", loc);
  auto [lo, hi] = counterOf(offset, "tl::randint4x", loc);
  tensor zero = scalar_const(0, i32, loc);
  return philoxWords(k0, k1, {lo, hi, zero, zero}, rounds, loc);
}

tensor randint(operand seed, const tensor &offset, int rounds, Loc loc) {
  return randint4x(seed, offset, rounds, loc)[0];
}

tensor rand(operand seed, const tensor &offset, int rounds, Loc loc) {
  return unitInterval(randint4x(seed, offset, rounds, loc)[0], loc);
}

tensor randn(operand seed, const tensor &offset, int rounds, Loc loc) {
  std::array<tensor, 4> w = randint4x(seed, offset, rounds, loc);
  // Box-Muller: u1 in (0, 1] keeps the logarithm finite.
  tensor u1 = operand(1.0 / 16777216.0, loc) + at(unitInterval(w[0], loc), loc);
  tensor u2 = unitInterval(w[1], loc);
  tensor radius = sqrt(operand(-2.0f, loc) * at(log(u1, loc), loc), loc);
  return at(radius, loc) * at(cos(operand(6.283185307179586f, loc) * at(u2, loc), loc), loc);
}

} // namespace tegula::tl
