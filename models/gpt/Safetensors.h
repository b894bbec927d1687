//===- Safetensors.h - reading and writing .safetensors files -*- C++ -*-===//
//
// The safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON - {"name": {"dtype": "F32", "shape": [..],
// "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}} - then the
// tensors' bytes, row-major, little-endian, offsets relative to the end of
// the header. GPT-2's checkpoints (model.safetensors) use it.
//
// Reading checks everything a damaged or hostile file could get wrong (the
// header's length and JSON, each entry's fields, offsets inside the file and
// matching dtype x shape, no overlaps) and says which tensor and what.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/dtype.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tegula::gpt {

/// One tensor of a file: its element type as the file spells it ("F32",
/// "BF16", ...), shape and bytes.
struct SafeTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;

  int64_t numel() const;
  /// Tegula's element type; throws tegula::Error for types Tegula has not
  /// (U8, F8_E4M3, ...), naming them.
  DType tegula_dtype() const;
};

/// A .safetensors file read into memory.
class SafetensorsFile {
public:
  /// Reads and validates `path`; throws tegula::Error naming the file and
  /// the problem.
  static SafetensorsFile read(const std::string &path);
  /// Parses a file's contents (as read() does); `what` names it in errors.
  static SafetensorsFile parse(std::vector<std::byte> contents, const std::string &what);

  /// Tensor names, sorted.
  std::vector<std::string> names() const;
  bool contains(const std::string &name) const { return tensors_.count(name) != 0; }
  /// The tensor `name`; throws tegula::Error when there is none.
  const SafeTensor &at(const std::string &name) const;
  /// The tensor's elements as f32 (from F32, F16, BF16 or F64), checking
  /// the shape when `expectShape` is given.
  std::vector<float> to_f32(const std::string &name, const std::vector<int64_t> &expectShape = {}) const;
  /// The tensor's elements as i32 (from I64 or I32; values must fit).
  std::vector<int32_t> to_i32(const std::string &name) const;
  const std::map<std::string, std::string> &metadata() const { return metadata_; }

private:
  std::string what_;
  std::vector<std::byte> contents_;
  std::map<std::string, SafeTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to write: f32 elements stored as `dtype` ("F32", "BF16" or
/// "F16", rounded to nearest even).
struct TensorToWrite {
  std::string name;
  std::vector<int64_t> shape;
  std::span<const float> values;
  std::string dtype = "F32";
};

/// The bytes of a safetensors file holding `tensors` (in name order, as
/// Hugging Face's writer places them) and `metadata`.
std::vector<std::byte> serialize_safetensors(const std::vector<TensorToWrite> &tensors,
                                             const std::map<std::string, std::string> &metadata = {});
/// Writes them to `path` (whole or not at all: write_file_replacing).
void write_safetensors(const std::string &path, const std::vector<TensorToWrite> &tensors,
                       const std::map<std::string, std::string> &metadata = {});

} // namespace tegula::gpt
