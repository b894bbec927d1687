//===- Safetensors.cpp - reading and writing .safetensors files -----------===//
#include "models/gpt/Safetensors.h"
#include "models/gpt/FileOutput.h"

#include "tegula/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace tegula::gpt {
namespace {

using nlohmann::json;

/// Bytes per element of the dtypes the format defines.
int64_t elementBytes(const std::string &dtype) {
  static const std::map<std::string, int64_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2},
      {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},     {"U32", 4},     {"F32", 4},
      {"F64", 8},  {"I64", 8}, {"U64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

constexpr uint64_t kMaxHeaderBytes = 100 << 20; // the reference reader's limit

} // namespace

int64_t SafeTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

DType SafeTensor::tegula_dtype() const {
  static const std::map<std::string, DType> types = {
      {"BOOL", DType::i1}, {"I8", DType::i8},   {"I16", DType::i16}, {"I32", DType::i32},
      {"I64", DType::i64}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"F32", DType::f32},
      {"F64", DType::f64}};
  auto it = types.find(dtype);
  if (it == types.end())
    throw Error(fmt::format("safetensors: dtype {} has no Tegula element type", dtype));
  return it->second;
}

SafetensorsFile SafetensorsFile::read(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("safetensors: {} is a directory, not a .safetensors file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(fmt::format("safetensors: cannot open {}", path));
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec)
    throw Error(fmt::format("safetensors: cannot read the size of {}: {}", path, ec.message()));
  std::vector<std::byte> contents(size);
  if (!in.read(reinterpret_cast<char *>(contents.data()), std::streamsize(contents.size())))
    throw Error(fmt::format("safetensors: cannot read {}", path));
  return parse(std::move(contents), path);
}

SafetensorsFile SafetensorsFile::parse(std::vector<std::byte> contents, const std::string &what) {
  SafetensorsFile f;
  f.what_ = what;
  auto fail = [&](const std::string &why) -> Error {
    return Error(fmt::format("safetensors: {}: {}", what, why));
  };
  if (contents.size() < 8)
    throw fail(fmt::format("{} bytes: too short for the 8-byte header length", contents.size()));
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = headerBytes << 8 | uint64_t(contents[size_t(i)]);
  if (headerBytes > kMaxHeaderBytes || headerBytes > contents.size() - 8)
    throw fail(fmt::format("the header claims {} bytes, but the file has {} after the length",
                           headerBytes, contents.size() - 8));
  json header;
  // A name twice at the top level (JSON keeps the last, silently) is an
  // error: which tensor the file means is unclear.
  std::set<std::string> names;
  std::string repeated;
  auto noDuplicates = [&](int depth, json::parse_event_t event, json &parsed) {
    if (depth == 1 && event == json::parse_event_t::key && !names.insert(parsed.get<std::string>()).second &&
        repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  try {
    const char *text = reinterpret_cast<const char *>(contents.data() + 8);
    header = json::parse(text, text + headerBytes, noDuplicates);
  } catch (const json::parse_error &e) {
    throw fail(fmt::format("the header is not valid JSON ({})", e.what()));
  }
  if (!repeated.empty())
    throw fail(fmt::format("the header names {} twice", json(repeated).dump()));
  if (!header.is_object())
    throw fail("the header is not a JSON object");
  const size_t dataStart = 8 + size_t(headerBytes), dataBytes = contents.size() - dataStart;
  f.contents_ = std::move(contents);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto &[name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object())
        throw fail("__metadata__ is not an object");
      for (auto &[k, v] : entry.items()) {
        if (!v.is_string())
          throw fail(fmt::format("metadata value '{}' is not a string", k));
        f.metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string &why) { return fail(fmt::format("tensor '{}': {}", name, why)); };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets"))
      throw bad("needs dtype, shape and data_offsets");
    SafeTensor t;
    if (!entry["dtype"].is_string() || !elementBytes(entry["dtype"].get<std::string>()))
      throw bad(fmt::format("unknown dtype {}", entry["dtype"].dump()));
    t.dtype = entry["dtype"].get<std::string>();
    if (!entry["shape"].is_array())
      throw bad("shape is not an array");
    // The product of the nonzero extents must fit in an int64 (numel()'s
    // partial products then do, in any order): a shape whose count wraps
    // around would pass the byte-count check below.
    uint64_t extents = 1;
    for (const json &d : entry["shape"]) {
      if (!d.is_number_unsigned())
        throw bad(fmt::format("shape {} has a negative or non-integer extent", entry["shape"].dump()));
      const uint64_t e = d.get<uint64_t>();
      if (e != 0 && (__builtin_mul_overflow(extents, e, &extents) || extents > uint64_t(INT64_MAX)))
        throw bad(fmt::format("shape {} has more elements than a tensor can hold", entry["shape"].dump()));
      t.shape.push_back(int64_t(e));
    }
    const json &off = entry["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw bad("data_offsets is not [begin, end]");
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end || end > dataBytes)
      throw bad(fmt::format("data_offsets [{}, {}] are outside the {} data bytes", begin, end, dataBytes));
    uint64_t want = 0;
    if (__builtin_mul_overflow(uint64_t(t.numel()), uint64_t(elementBytes(t.dtype)), &want))
      throw bad(fmt::format("shape {} of {} has more bytes than a file can hold", entry["shape"].dump(), t.dtype));
    if (end - begin != want)
      throw bad(fmt::format("{} bytes for shape {} of {} ({} bytes)", end - begin, entry["shape"].dump(),
                            t.dtype, want));
    t.bytes = std::span<const std::byte>(f.contents_.data() + dataStart + begin, end - begin);
    ranges.push_back({begin, end});
    f.tensors_[name] = std::move(t);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      throw fail(fmt::format("tensors overlap in the data (bytes {}-{} and {}-{})", ranges[i - 1].first,
                             ranges[i - 1].second, ranges[i].first, ranges[i].second));
  return f;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (auto &[name, t] : tensors_)
    out.push_back(name);
  return out;
}

const SafeTensor &SafetensorsFile::at(const std::string &name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw Error(fmt::format("safetensors: {} has no tensor '{}'", what_, name));
  return it->second;
}

std::vector<float> SafetensorsFile::to_f32(const std::string &name,
                                           const std::vector<int64_t> &expectShape) const {
  const SafeTensor &t = at(name);
  auto shapeText = [](const std::vector<int64_t> &s) { return fmt::format("[{}]", fmt::join(s, ", ")); };
  if (!expectShape.empty() && t.shape != expectShape)
    throw Error(fmt::format("safetensors: {}: tensor '{}' has shape {}, expected {}", what_, name,
                            shapeText(t.shape), shapeText(expectShape)));
  std::vector<float> out(size_t(t.numel()));
  const std::byte *p = t.bytes.data();
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == "F32") {
      uint32_t u;
      std::memcpy(&u, p + 4 * i, 4);
      out[i] = std::bit_cast<float>(u);
    } else if (t.dtype == "F64") {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      out[i] = float(d);
    } else if (t.dtype == "BF16" || t.dtype == "F16") {
      uint16_t u;
      std::memcpy(&u, p + 2 * i, 2);
      if (t.dtype == "BF16") {
        bfloat16 b;
        b.bits = u;
        out[i] = float(b);
      } else {
        float16 h;
        h.bits = u;
        out[i] = float(h);
      }
    } else {
      throw Error(fmt::format("safetensors: {}: tensor '{}' is {}, not a floating-point type", what_,
                              name, t.dtype));
    }
  }
  return out;
}

std::vector<int32_t> SafetensorsFile::to_i32(const std::string &name) const {
  const SafeTensor &t = at(name);
  if (t.dtype != "I64" && t.dtype != "I32")
    throw Error(fmt::format("safetensors: {}: tensor '{}' is {}, not an integer type", what_, name, t.dtype));
  std::vector<int32_t> out(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t v = 0;
    if (t.dtype == "I64") {
      std::memcpy(&v, t.bytes.data() + 8 * i, 8);
    } else {
      int32_t w;
      std::memcpy(&w, t.bytes.data() + 4 * i, 4);
      v = w;
    }
    if (v < INT32_MIN || v > INT32_MAX)
      throw Error(fmt::format("safetensors: {}: tensor '{}' holds {}, which does not fit in i32", what_, name, v));
    out[i] = int32_t(v);
  }
  return out;
}

std::vector<std::byte> serialize_safetensors(const std::vector<TensorToWrite> &tensors,
                                             const std::map<std::string, std::string> &metadata) {
  std::vector<const TensorToWrite *> order;
  for (const TensorToWrite &t : tensors)
    order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto *a, auto *b) { return a->name < b->name; });
  json header = json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorToWrite *t : order) {
    if (t->name == "__metadata__")
      throw Error("safetensors: '__metadata__' is the header's metadata key, not a tensor name");
    const int64_t bytes = elementBytes(t->dtype);
    if (t->dtype != "F32" && t->dtype != "BF16" && t->dtype != "F16")
      throw Error(fmt::format("safetensors: tensor '{}': writing {} is not supported (F32, BF16, F16)",
                              t->name, t->dtype));
    int64_t numel = 1;
    for (int64_t d : t->shape)
      numel *= d;
    if (numel != int64_t(t->values.size()))
      throw Error(fmt::format("safetensors: tensor '{}': {} values for shape [{}]", t->name,
                              t->values.size(), fmt::join(t->shape, ", ")));
    if (header.contains(t->name))
      throw Error(fmt::format("safetensors: tensor '{}' is given twice", t->name));
    header[t->name] = {{"dtype", t->dtype}, {"shape", t->shape},
                       {"data_offsets", {offset, offset + uint64_t(numel * bytes)}}};
    offset += uint64_t(numel * bytes);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' '); // the data starts 8-byte aligned
  std::vector<std::byte> out(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i)
    out[size_t(i)] = std::byte(uint64_t(text.size()) >> (8 * i) & 0xff);
  std::memcpy(out.data() + 8, text.data(), text.size());
  std::byte *data = out.data() + 8 + text.size();
  for (const TensorToWrite *t : order) {
    for (float v : t->values) {
      if (t->dtype == "F32") {
        uint32_t u = std::bit_cast<uint32_t>(v);
        std::memcpy(data, &u, 4);
        data += 4;
      } else {
        uint16_t u = t->dtype == "BF16" ? bfloat16(v).bits : float16(v).bits;
        std::memcpy(data, &u, 2);
        data += 2;
      }
    }
  }
  return out;
}

void write_safetensors(const std::string &path, const std::vector<TensorToWrite> &tensors,
                       const std::map<std::string, std::string> &metadata) {
  const std::vector<std::byte> bytes = serialize_safetensors(tensors, metadata);
  write_file_replacing(path, {std::span<const std::byte>(bytes)}, "safetensors");
}

} // namespace tegula::gpt
