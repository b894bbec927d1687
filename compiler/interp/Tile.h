//===- Tile.h - the interpreter's value representation ----------*- C++ -*-===//
#pragma once

#include "mlir/IR/Types.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tegula::interp {

/// A runtime tile (or scalar, when `shape` is empty). Floats are held as
/// doubles rounded to their element type after every operation; integers as
/// int64 wrapped to their width (i1 is 0/1); pointers as (buffer, byte
/// offset) so each access can be checked against its own buffer.
struct Tile {
  enum class Kind { Float, Int, Ptr };
  Kind kind;
  mlir::Type elem; // element type (for pointers, the !tile.ptr type)
  std::vector<int64_t> shape;
  std::vector<double> f;      // Kind::Float
  std::vector<int64_t> i;     // Kind::Int values; Kind::Ptr byte offsets
  std::vector<int32_t> buf;   // Kind::Ptr buffer index

  size_t size() const {
    size_t n = 1;
    for (int64_t d : shape)
      n *= size_t(d);
    return n;
  }
};
using TileRef = std::shared_ptr<const Tile>;

/// An empty tile of `size` elements of `elem`, shaped `shape`.
std::shared_ptr<Tile> makeTile(mlir::Type elem, std::vector<int64_t> shape);
/// Round a double to the precision of a float type.
double roundTo(mlir::Type floatType, double v);
/// Wrap an integer to the width of an integer type (i1 -> 0/1).
int64_t wrapTo(mlir::Type intType, int64_t v);

/// An element of type `t` as memory holds it (Interpreter.cpp): floats of
/// every width (f16, bf16 and fp8 rounded to nearest even), integers
/// (i1 as a byte).
double readFloat(const char *p, mlir::Type t);
void writeFloat(char *p, mlir::Type t, double x);
int64_t readInt(const char *p, mlir::Type t);
void writeInt(char *p, mlir::Type t, int64_t x);

} // namespace tegula::interp
