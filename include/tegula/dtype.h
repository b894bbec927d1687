// dtype.h - element types of Tegula tiles and their host-side C++ types.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace tegula {

/// Element types a tile can hold (and a pointer can point at).
/// f8e4m3 / f8e5m2 (fp8, OCP formats E4M3FN and E5M2) are storage types:
/// convert them to f16/f32 to compute; dots on them are exact.
enum class DType : uint8_t { i1, i8, i16, i32, i64, f16, bf16, f32, f64, f8e4m3, f8e5m2 };

/// "f32", "bf16", "f8e4m3", ... (inline: every library, the runtime's too, uses them).
inline std::string_view dtype_name(DType t) {
  switch (t) {
  case DType::i1: return "i1";
  case DType::i8: return "i8";
  case DType::i16: return "i16";
  case DType::i32: return "i32";
  case DType::i64: return "i64";
  case DType::f16: return "f16";
  case DType::bf16: return "bf16";
  case DType::f32: return "f32";
  case DType::f64: return "f64";
  case DType::f8e4m3: return "f8e4m3";
  case DType::f8e5m2: return "f8e5m2";
  }
  return "?";
}
/// Size of one element in bytes in global memory (i1 is stored as one byte).
inline size_t dtype_size(DType t) {
  switch (t) {
  case DType::i1: case DType::i8: case DType::f8e4m3: case DType::f8e5m2: return 1;
  case DType::i16: case DType::f16: case DType::bf16: return 2;
  case DType::i32: case DType::f32: return 4;
  case DType::i64: case DType::f64: return 8;
  }
  return 0;
}
inline bool is_float(DType t) { return t >= DType::f16; }
inline bool is_int(DType t) { return t <= DType::i64; }

/// bfloat16 on the host: the upper half of an IEEE f32, rounded to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) { bits = round(f); }
  operator float() const { return std::bit_cast<float>(uint32_t(bits) << 16); }
  static uint16_t round(float f) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40); // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

/// An f32 rounded to tf32 (its sign, exponent and top 10 mantissa bits; the
/// low 13 bits zero) to nearest, ties to even - as TMA rounds a tensor map
/// of CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 and as tl::precision::tf32 dots round
/// their operands on every backend. Infinities and NaNs are left as they
/// are; a value that rounds past the largest tf32 becomes infinity.
inline float round_to_tf32(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7f800000u) != 0x7f800000u)
    u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
  return std::bit_cast<float>(u);
}

/// IEEE binary16 on the host, converted with round-to-nearest-even.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f);
  operator float() const;
};

/// The 8-bit float formats: E exponent bits, M mantissa bits, bias
/// 2^(E-1) - 1. E4M3FN has no infinities (S.1111.111 is NaN, the largest
/// finite value 448); E5M2 is IEEE-like (largest finite 57344).
/// Conversion from wider floats rounds to nearest even and saturates:
/// values beyond the largest finite one (infinities too) become it, as
/// PTX's cvt.rn.satfinite does; NaN stays NaN (0x7f).
template <int E, int M> struct fp8_format {
  static constexpr int bias = (1 << (E - 1)) - 1;
  static constexpr bool has_inf = E == 5;
  static constexpr uint8_t max_code = has_inf ? 0x7b : 0x7e; // largest finite, positive
  static constexpr uint8_t nan_code = 0x7f;

  static float decode(uint8_t bits) {
    const int e = (bits >> M) & ((1 << E) - 1), m = bits & ((1 << M) - 1);
    const float sign = bits & 0x80 ? -1.0f : 1.0f;
    if (has_inf && e == (1 << E) - 1)
      return m ? NAN : sign * INFINITY;
    if (!has_inf && (bits & 0x7f) == 0x7f)
      return NAN;
    if (e == 0)
      return sign * std::ldexp(float(m), 1 - bias - M);
    return sign * std::ldexp(float((1 << M) + m), e - bias - M);
  }

  static uint8_t encode(double x) {
    if (std::isnan(x))
      return nan_code;
    const uint8_t sign = std::signbit(x) ? 0x80 : 0;
    const double a = std::fabs(x);
    const double max_finite = decode(max_code);
    if (a >= max_finite)
      return sign | max_code;
    int code;
    if (a < std::ldexp(1.0, 1 - bias)) { // subnormal: multiples of 2^(1-bias-M)
      code = int(std::nearbyint(std::ldexp(a, bias - 1 + M)));
    } else {
      int ex;
      std::frexp(a, &ex); // a = f * 2^ex, f in [0.5, 1)
      const int e = ex - 1;
      int q = int(std::nearbyint((std::ldexp(a, -e) - 1.0) * (1 << M)));
      code = ((e + bias) << M) + q; // q == 2^M carries into the exponent
    }
    return uint8_t(sign | std::min(code, int(max_code)));
  }
};
using fp8_e4m3_format = fp8_format<4, 3>;
using fp8_e5m2_format = fp8_format<5, 2>;

/// fp8 on the host (DType::f8e4m3, DType::f8e5m2): the bits, converted as
/// fp8_format says.
struct float8_e4m3 {
  uint8_t bits = 0;
  float8_e4m3() = default;
  float8_e4m3(float f) : bits(fp8_e4m3_format::encode(f)) {}
  operator float() const { return fp8_e4m3_format::decode(bits); }
};
struct float8_e5m2 {
  uint8_t bits = 0;
  float8_e5m2() = default;
  float8_e5m2(float f) : bits(fp8_e5m2_format::encode(f)) {}
  operator float() const { return fp8_e5m2_format::decode(bits); }
};

/// The DType of a host C++ element type.
template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::i1; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<float16> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<float8_e4m3> { static constexpr DType value = DType::f8e4m3; };
template <> struct dtype_of<float8_e5m2> { static constexpr DType value = DType::f8e5m2; };
template <class T> inline constexpr DType dtype_of_v = dtype_of<std::remove_cv_t<T>>::value;

} // namespace tegula
