//===- DLPack.h - the DLPack C ABI, as much as Tegula reads ----*- C++ -*-===//
//
// The array-exchange structures of the DLPack specification (v0.8 layout,
// the one `__dlpack__()` returns in a "dltensor" capsule), declared from the
// spec so the extension needs no extra header.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace tegula::python::dlpack {

enum DeviceType : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kCUDAManaged = 13 };
enum TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kBool = 6 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};
struct DataType {
  uint8_t code, bits;
  uint16_t lanes;
};
struct Tensor {
  void *data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t *shape;
  int64_t *strides; // null: compact row-major
  uint64_t byte_offset;
};
struct ManagedTensor {
  Tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(ManagedTensor *self);
};

} // namespace tegula::python::dlpack
