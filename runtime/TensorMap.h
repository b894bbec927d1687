//===- TensorMap.h - TMA tensor maps a launch encodes on the host -*- C++ -*-===//
//
// A tensor descriptor the compiler hands to TMA (sm_90a) becomes a hidden
// kernel parameter: a 128-byte tensor map, passed by value
// (__grid_constant__). The compiler records how to build it from the launch
// arguments (TensorMapSpec); each launch resolves the spec against its
// arguments, checks TMA's rules with errors that name the parameter, and
// encodes it - with cuTensorMapEncodeTiled on the GPU, in the simulator's
// own format (simulator/Tma.h) in the simulator.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/error.h"
#include "tegula/kernel.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tegula::runtime {

/// Where one extent or stride comes from: a launch argument (`arg` >= 0,
/// an index into the kernel's parameters) times `value` (a row stride of
/// H * D with H an argument and D a constant), or the constant `value`.
struct TensorMapValue {
  int arg = -1;
  int64_t value = 0;
};

/// How to build one tensor map from a launch's arguments. Dimensions are
/// outermost first, as the kernel writes them.
struct TensorMapSpec {
  int base = 0; // the parameter whose buffer the map describes
  std::vector<TensorMapValue> shape, strides; // elements
  std::vector<int32_t> box;                   // the block shape
  DType dtype = DType::f32;
  /// 0, or 32/64/128: the box's rows (that many bytes) are written to shared
  /// memory with 16-byte chunks XORed as wgmma's swizzled tiles expect.
  int swizzle = 0;
  /// f32 maps only: TMA rounds each element to tf32 (nearest even) as it
  /// lands (CU_TENSOR_MAP_DATA_TYPE_TFLOAT32) - the rings of tf32 dots, so
  /// the consumers need not round the stage in place.
  bool tf32 = false;
  /// The descriptor's file:line in the kernel's source ("": unknown), for
  /// the launch's errors.
  std::string where;
};

/// One value per dimension, at most 5 (TMA's largest rank), held inline: a
/// launch resolves its tensor maps without touching the heap.
template <class T>
class TensorMapDims {
public:
  static constexpr size_t kMaxRank = 5;
  TensorMapDims() = default;
  TensorMapDims(std::initializer_list<T> values) {
    for (T v : values)
      push_back(v);
  }
  void push_back(T v) {
    if (size_ == kMaxRank)
      throw Error(fmt::format("a TMA tensor map has at most {} dimensions", kMaxRank));
    values_[size_++] = v;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T &operator[](size_t i) { return values_[i]; }
  const T &operator[](size_t i) const { return values_[i]; }
  const T *data() const { return values_.data(); }
  const T &back() const { return values_[size_ - 1]; }
  const T *begin() const { return values_.data(); }
  const T *end() const { return values_.data() + size_; }

private:
  std::array<T, kMaxRank> values_{};
  size_t size_ = 0;
};

/// A spec resolved against one launch: what the encoder needs.
struct ResolvedTensorMap {
  uint64_t address = 0; // of the first element, as the kernel sees it
  TensorMapDims<uint64_t> shape, strideBytes; // outermost first; strideBytes[rank-1] = element size
  TensorMapDims<uint32_t> box;
  DType dtype = DType::f32;
  int swizzle = 0;
  bool tf32 = false;
};

/// Resolve `spec` for a launch whose buffer `spec.base` sits at `address`
/// (the device address on the GPU, the host address in the simulator).
/// Throws tegula::Error naming the kernel and parameter when TMA's rules
/// fail: a 16-byte aligned base, strides that are positive multiples of
/// 16 bytes below 2^40, extents from 1 to 2^32.
ResolvedTensorMap resolveTensorMap(const TensorMapSpec &spec, uint64_t address,
                                   const std::vector<Arg> &args,
                                   const std::vector<std::string> &paramNames,
                                   const std::string &kernel);

/// The 128 bytes of a tensor map, 64-byte aligned as a kernel parameter.
struct alignas(64) TensorMapBytes {
  std::array<uint8_t, 128> bytes{};
};

/// Encode for the GPU with the driver's cuTensorMapEncodeTiled (the spec's
/// swizzle and tf32 rounding, out-of-bounds elements read as zero).
TensorMapBytes encodeTensorMapForGpu(const ResolvedTensorMap &map, const std::string &kernel);

/// Encoded tensor maps by everything that goes into one (address, extents,
/// strides, box, type, swizzle): launches that repeat their buffers and
/// shapes - every step of a training loop - reuse the 128 bytes instead of
/// calling the encoder again (cuTensorMapEncodeTiled costs microseconds of
/// host time per map, per launch). An encoding is a pure function of those
/// inputs, so a hit is always right, even for a buffer freed and allocated
/// again at the same address. Least recently used entries leave first;
/// thread-safe.
class TensorMapCache {
public:
  using Encoder = std::function<TensorMapBytes(const ResolvedTensorMap &)>;
  explicit TensorMapCache(size_t capacity = 4096) : capacity_(capacity ? capacity : 1) {}
  /// The encoding of `map`: cached, else `encode(map)` (kept unless it throws).
  TensorMapBytes get(const ResolvedTensorMap &map, const Encoder &encode);
  size_t size() const;
  struct Stats {
    uint64_t hits = 0, misses = 0;
  };
  Stats stats() const;
  /// The process's cache of the GPU's encodings.
  static TensorMapCache &gpu();

private:
  using Entry = std::pair<std::string, TensorMapBytes>;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_; // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  Stats stats_;
};

/// The specs as text and back: they travel in the kernel cache beside the
/// cubin and in the lowered module as an attribute.
std::string serializeTensorMaps(const std::vector<TensorMapSpec> &specs);
std::vector<TensorMapSpec> parseTensorMaps(const std::string &text);

} // namespace tegula::runtime
