//===- ElementBytes.cpp - interpreter elements to and from memory ---------===//
//
// How the interpreter reads and writes one element of each storage type
// (floats held as double, integers as int64): f32/f64 as stored, bf16 and
// f16 through their 16-bit formats (round to nearest even), fp8 e4m3/e5m2
// through tegula/dtype.h's encoders, i1 as a byte.
//
//===----------------------------------------------------------------------===//
#include "compiler/interp/Tile.h"
#include "tegula/dtype.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cstring>

using namespace mlir;

namespace tegula::interp {

double readFloat(const char *p, Type t) {
  if (t.isF32()) { float v; std::memcpy(&v, p, 4); return v; }
  if (t.isF64()) { double v; std::memcpy(&v, p, 8); return v; }
  if (isa<Float8E4M3FNType>(t)) return fp8_e4m3_format::decode(uint8_t(*p));
  if (isa<Float8E5M2Type>(t)) return fp8_e5m2_format::decode(uint8_t(*p));
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  if (t.isBF16()) { bfloat16 v; v.bits = bits; return float(v); }
  float16 v; v.bits = bits; return float(v);
}

void writeFloat(char *p, Type t, double x) {
  if (t.isF32()) { float v = float(x); std::memcpy(p, &v, 4); return; }
  if (t.isF64()) { std::memcpy(p, &x, 8); return; }
  if (isa<Float8E4M3FNType>(t)) { *p = char(fp8_e4m3_format::encode(x)); return; }
  if (isa<Float8E5M2Type>(t)) { *p = char(fp8_e5m2_format::encode(x)); return; }
  uint16_t bits = t.isBF16() ? bfloat16(float(x)).bits : float16(float(x)).bits;
  std::memcpy(p, &bits, 2);
}

int64_t readInt(const char *p, Type t) {
  switch (t.getIntOrFloatBitWidth()) {
  case 1: return *reinterpret_cast<const uint8_t *>(p) != 0;
  case 8: { int8_t v; std::memcpy(&v, p, 1); return v; }
  case 16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case 32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  default: { int64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

void writeInt(char *p, Type t, int64_t x) {
  switch (t.getIntOrFloatBitWidth()) {
  case 1: { uint8_t v = x != 0; std::memcpy(p, &v, 1); return; }
  case 8: { int8_t v = int8_t(x); std::memcpy(p, &v, 1); return; }
  case 16: { int16_t v = int16_t(x); std::memcpy(p, &v, 2); return; }
  case 32: { int32_t v = int32_t(x); std::memcpy(p, &v, 4); return; }
  default: std::memcpy(p, &x, 8); return;
  }
}

} // namespace tegula::interp
