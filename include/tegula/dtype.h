// dtype.h - element types of Tegula tiles and their host-side C++ types.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace tegula {

/// Element types a tile can hold (and a pointer can point at).
enum class DType : uint8_t { i1, i8, i16, i32, i64, f16, bf16, f32, f64 };

std::string_view dtype_name(DType t);
/// Size of one element in bytes in global memory (i1 is stored as one byte).
size_t dtype_size(DType t);
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

/// IEEE binary16 on the host, converted with round-to-nearest-even.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f);
  operator float() const;
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
template <class T> inline constexpr DType dtype_of_v = dtype_of<std::remove_cv_t<T>>::value;

} // namespace tegula
