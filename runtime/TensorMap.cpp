//===- TensorMap.cpp - resolving and encoding TMA tensor maps -------------===//
#include "runtime/TensorMap.h"

#include "runtime/CudaDriver.h"
#include "tegula/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

namespace tegula::runtime {

namespace {
std::string paramName(const std::vector<std::string> &names, int i) {
  return size_t(i) < names.size() ? names[size_t(i)] : fmt::format("arg{}", i);
}

int64_t valueOf(const TensorMapValue &v, const std::vector<Arg> &args) {
  return v.arg >= 0 ? args.at(size_t(v.arg)).as_int() * v.value : v.value;
}

std::string describe(const TensorMapValue &v, const std::vector<std::string> &names) {
  if (v.arg < 0)
    return std::string();
  return v.value == 1 ? fmt::format(" (argument '{}')", paramName(names, v.arg))
                      : fmt::format(" (argument '{}' x {})", paramName(names, v.arg), v.value);
}
/// `m`'s strides in elements, for messages.
std::vector<uint64_t> strideElements(const ResolvedTensorMap &m, int64_t elem) {
  std::vector<uint64_t> out;
  for (uint64_t s : m.strideBytes)
    out.push_back(s / uint64_t(elem));
  return out;
}
} // namespace

ResolvedTensorMap resolveTensorMap(const TensorMapSpec &spec, uint64_t address,
                                   const std::vector<Arg> &args,
                                   const std::vector<std::string> &paramNames,
                                   const std::string &kernel) {
  ResolvedTensorMap r;
  r.address = address;
  r.dtype = spec.dtype;
  r.swizzle = spec.swizzle;
  r.tf32 = spec.tf32;
  // Formatted only for an error: this runs on every launch of a TMA kernel.
  auto what = [&] {
    return fmt::format("kernel '{}': the tensor descriptor over argument '{}'{}", kernel,
                       paramName(paramNames, spec.base), spec.where.empty() ? "" : " (" + spec.where + ")");
  };
  if (spec.tf32 && spec.dtype != DType::f32)
    throw Error(fmt::format("{} rounds to tf32, which only an f32 tensor map does (it is {})", what(),
                            dtype_name(spec.dtype)));
  if (address % 16 != 0)
    throw Error(fmt::format("{} needs a 16-byte aligned base (TMA), but its address is {} mod 16",
                            what(), address % 16));
  const int64_t elem = int64_t(dtype_size(spec.dtype));
  const size_t rank = spec.shape.size();
  for (size_t d = 0; d < rank; ++d) {
    int64_t extent = valueOf(spec.shape[d], args);
    if (extent < 1 || extent > (int64_t(1) << 32))
      throw Error(fmt::format("{}: extent {} is {}{}; extents are 1 to 2^32", what(), d, extent,
                              describe(spec.shape[d], paramNames)));
    r.shape.push_back(uint64_t(extent));
    int64_t stride = valueOf(spec.strides[d], args);
    if (d + 1 < rank && (stride < 1 || (stride * elem) % 16 != 0 || stride * elem >= (int64_t(1) << 40)))
      throw Error(fmt::format("{}: stride {} is {} elements ({} bytes){}; TMA needs each stride but the "
                              "last to be a positive multiple of 16 bytes below 2^40",
                              what(), d, stride, stride * elem, describe(spec.strides[d], paramNames)));
    r.strideBytes.push_back(uint64_t(stride * elem));
    r.box.push_back(uint32_t(spec.box[d]));
  }
  // TMA clips to the extents, not to the allocation: a map reaching past its
  // buffer would read (or a store write) other memory on a GPU.
  if (size_t(spec.base) < args.size() && args[size_t(spec.base)].bytes()) {
    uint64_t end = uint64_t(elem);
    for (size_t d = 0; d < rank; ++d)
      end += (r.shape[d] - 1) * r.strideBytes[d];
    const uint64_t bytes = args[size_t(spec.base)].bytes();
    if (end > bytes)
      throw Error(fmt::format("{}: its extents [{}] and strides [{}] (elements) reach byte {}, past the {} "
                              "bytes the argument holds",
                              what(), fmt::join(r.shape, ", "), fmt::join(strideElements(r, elem), ", "), end,
                              bytes));
  }
  return r;
}

TensorMapBytes encodeTensorMapForGpu(const ResolvedTensorMap &map, const std::string &kernel) {
  Driver &d = Driver::get();
  CUtensorMapDataType type;
  if (map.tf32 && map.dtype != DType::f32)
    throw Error(fmt::format("kernel '{}': a tensor map rounding to tf32 must be of f32, not {}", kernel,
                            dtype_name(map.dtype)));
  switch (map.dtype) {
  case DType::i8: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
  case DType::i16: type = CU_TENSOR_MAP_DATA_TYPE_UINT16; break;
  case DType::i32: type = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
  case DType::i64: type = CU_TENSOR_MAP_DATA_TYPE_INT64; break;
  case DType::f16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
  case DType::bf16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
  case DType::f32: type = map.tf32 ? CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
  case DType::f64: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT64; break;
  case DType::f8e4m3: case DType::f8e5m2: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
  default:
    throw Error(fmt::format("kernel '{}': TMA has no tensor maps of {}", kernel, dtype_name(map.dtype)));
  }
  // The driver wants dimensions innermost first, and strides without the
  // innermost (it is the element size).
  const size_t rank = map.shape.size();
  std::vector<cuuint64_t> dims(rank), strides(rank > 1 ? rank - 1 : 1);
  std::vector<cuuint32_t> box(rank), elementStrides(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = map.shape[rank - 1 - i];
    box[i] = map.box[rank - 1 - i];
    if (i + 1 < rank)
      strides[i] = map.strideBytes[rank - 2 - i];
  }
  CUtensorMapSwizzle swizzle;
  switch (map.swizzle) {
  case 0: swizzle = CU_TENSOR_MAP_SWIZZLE_NONE; break;
  case 32: swizzle = CU_TENSOR_MAP_SWIZZLE_32B; break;
  case 64: swizzle = CU_TENSOR_MAP_SWIZZLE_64B; break;
  case 128: swizzle = CU_TENSOR_MAP_SWIZZLE_128B; break;
  default: // the kernel's descriptors assume the swizzle: never fall back to none
    throw Error(fmt::format("kernel '{}': a {}-byte TMA swizzle does not exist (0, 32, 64 or 128)", kernel,
                            map.swizzle));
  }
  TensorMapBytes out;
  static_assert(sizeof(CUtensorMap) == sizeof(out.bytes));
  d.check(d.cuTensorMapEncodeTiled(reinterpret_cast<CUtensorMap *>(out.bytes.data()), type,
                                   cuuint32_t(rank), reinterpret_cast<void *>(map.address),
                                   dims.data(), strides.data(), box.data(), elementStrides.data(),
                                   CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   swizzle,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          "cuTensorMapEncodeTiled", kernel);
  return out;
}

// One spec per line: "base dtype rank  (arg value){shape} (arg value){strides} box... swizzle [tf32]"
namespace {
/// Everything an encoding depends on, as bytes: the cache's key.
/// Everything an encoding depends on, as bytes, into `key` (a buffer each
/// thread reuses: a cache hit allocates nothing).
void cacheKey(const ResolvedTensorMap &m, std::string &key) {
  key.clear();
  auto put = [&](const void *p, size_t n) { key.append(static_cast<const char *>(p), n); };
  const uint64_t head[5] = {m.address, uint64_t(m.dtype), uint64_t(m.swizzle), uint64_t(m.tf32),
                            uint64_t(m.shape.size())};
  put(head, sizeof head);
  put(m.shape.data(), m.shape.size() * sizeof(uint64_t));
  put(m.strideBytes.data(), m.strideBytes.size() * sizeof(uint64_t));
  put(m.box.data(), m.box.size() * sizeof(uint32_t));
}
} // namespace

TensorMapBytes TensorMapCache::get(const ResolvedTensorMap &map, const Encoder &encode) {
  thread_local std::string key;
  cacheKey(map, key);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      entries_.splice(entries_.begin(), entries_, it->second);
      ++stats_.hits;
      return it->second->second;
    }
  }
  TensorMapBytes bytes = encode(map); // outside the lock: it may throw, or take a while
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.misses;
  if (index_.count(key)) // another thread encoded it meanwhile
    return bytes;
  entries_.emplace_front(key, bytes);
  index_.emplace(key, entries_.begin());
  if (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
  return bytes;
}

size_t TensorMapCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

TensorMapCache::Stats TensorMapCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

TensorMapCache &TensorMapCache::gpu() {
  static TensorMapCache cache;
  return cache;
}

std::string serializeTensorMaps(const std::vector<TensorMapSpec> &specs) {
  std::string out;
  for (const TensorMapSpec &s : specs) {
    out += fmt::format("{} {} {}", s.base, int(s.dtype), s.shape.size());
    for (const auto *values : {&s.shape, &s.strides})
      for (const TensorMapValue &v : *values)
        out += fmt::format(" {} {}", v.arg, v.value);
    for (int32_t b : s.box)
      out += fmt::format(" {}", b);
    out += fmt::format(" {}{}", s.swizzle, s.tf32 ? " tf32" : "");
    // Length-prefixed: a path may hold spaces.
    if (!s.where.empty())
      out += fmt::format(" @{}:{}", s.where.size(), s.where);
    out += "\n";
  }
  return out;
}

std::vector<TensorMapSpec> parseTensorMaps(const std::string &text) {
  std::vector<TensorMapSpec> specs;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty())
      continue;
    std::istringstream in(line);
    TensorMapSpec s;
    int dtype = 0;
    size_t rank = 0;
    in >> s.base >> dtype >> rank;
    s.dtype = DType(dtype);
    s.shape.resize(rank);
    s.strides.resize(rank);
    for (auto *values : {&s.shape, &s.strides})
      for (TensorMapValue &v : *values)
        in >> v.arg >> v.value;
    s.box.resize(rank);
    for (int32_t &b : s.box)
      in >> b;
    in >> s.swizzle;
    bool ok = bool(in);
    std::string flag; // optional: tf32, then @N:where
    if (ok && in >> flag && flag == "tf32") {
      s.tf32 = true;
      flag.clear();
      in >> flag;
    }
    if (ok && !flag.empty()) {
      // `flag` holds "@N:" and the where's first word; the rest follows.
      std::string rest;
      std::getline(in, rest);
      const std::string tail = flag + rest;
      const size_t colon = tail.find(':');
      size_t n = 0;
      ok = tail[0] == '@' && colon != std::string::npos && colon > 1 && colon <= 10 &&
           std::all_of(tail.begin() + 1, tail.begin() + std::ptrdiff_t(colon),
                       [](char c) { return c >= '0' && c <= '9'; });
      if (ok) {
        n = std::stoul(tail.substr(1, colon - 1));
        ok = tail.size() - colon - 1 == n;
      }
      if (ok)
        s.where = tail.substr(colon + 1);
    }
    if (!ok)
      throw Error("corrupt tensor-map record in a compiled kernel: '" + line + "'");
    specs.push_back(std::move(s));
  }
  return specs;
}

} // namespace tegula::runtime
