//===- DeviceBuffer.cpp - device-resident buffers and copies --------------===//
#include "runtime/CudaDriver.h"
#include "runtime/GpuLaunch.h"
#include "tegula/device.h"

#include <fmt/format.h>

#include <utility>

namespace tegula {

using runtime::Driver;

DeviceBuffer::DeviceBuffer(size_t count, DType dtype) : dtype_(dtype) {
  if (count == 0)
    return; // nothing to hold: no driver needed
  runtime::currentDevice(); // "no CUDA driver ..." here
  Driver &d = Driver::get();
  CUdeviceptr ptr = 0;
  size_t bytes = count * dtype_size(dtype);
  CUresult r = d.cuMemAlloc(&ptr, bytes);
  if (r != CUDA_SUCCESS)
    throw Error(fmt::format("cuMemAlloc failed for a DeviceBuffer of {} x {} ({} bytes): {}",
                            count, dtype_name(dtype), bytes, d.describe(r)));
  ptr_ = ptr;
  count_ = count;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() noexcept {
  if (!ptr_)
    return;
  // Best effort: a destructor cannot report, and after a sticky fault (or at
  // process exit) the driver may refuse.
  try {
    runtime::currentDevice();
    Driver &d = Driver::get();
    d.cuMemFree(static_cast<CUdeviceptr>(ptr_));
  } catch (...) {
  }
  ptr_ = 0;
  count_ = 0;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), count_(std::exchange(other.count_, 0)),
      dtype_(other.dtype_) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, 0);
    count_ = std::exchange(other.count_, 0);
    dtype_ = other.dtype_;
  }
  return *this;
}

namespace {
/// Misuse is reported before the driver is touched, with both sides named.
void checkRange(const DeviceBuffer &b, const char *what, size_t count, DType dtype,
                size_t offset) {
  if (dtype != b.dtype())
    throw Error(fmt::format("DeviceBuffer::{}: the buffer holds {} but the host data is {}",
                            what, dtype_name(b.dtype()), dtype_name(dtype)));
  if (offset > b.size() || count > b.size() - offset)
    throw Error(fmt::format("DeviceBuffer::{}: elements [{}, {}) are outside the buffer of {} "
                            "elements",
                            what, offset, offset + count, b.size()));
}
} // namespace

void DeviceBuffer::upload_bytes(const void *host, size_t count, DType dtype, size_t offset) {
  checkRange(*this, "upload", count, dtype, offset);
  if (count == 0)
    return;
  runtime::currentDevice();
  Driver &d = Driver::get();
  size_t esz = dtype_size(dtype_);
  d.check(d.cuMemcpyHtoD(static_cast<CUdeviceptr>(ptr_ + offset * esz), host, count * esz),
          "cuMemcpyHtoD");
}

void DeviceBuffer::download_bytes(void *host, size_t count, DType dtype, size_t offset) const {
  checkRange(*this, "download", count, dtype, offset);
  if (count == 0)
    return;
  runtime::currentDevice();
  Driver &d = Driver::get();
  size_t esz = dtype_size(dtype_);
  d.check(d.cuMemcpyDtoH(host, static_cast<CUdeviceptr>(ptr_ + offset * esz), count * esz),
          "cuMemcpyDtoH");
}

void DeviceBuffer::fill_bytes(uint8_t value) {
  if (empty())
    return;
  runtime::currentDevice();
  Driver &d = Driver::get();
  d.check(d.cuMemsetD8(static_cast<CUdeviceptr>(ptr_), value, bytes()), "cuMemsetD8");
}

void copy(const DeviceBuffer &src, DeviceBuffer &dst) {
  if (src.bytes() != dst.bytes())
    throw Error(fmt::format("tegula::copy: the source has {} bytes ({} x {}) but the "
                            "destination {} ({} x {})",
                            src.bytes(), src.size(), dtype_name(src.dtype()), dst.bytes(),
                            dst.size(), dtype_name(dst.dtype())));
  if (src.empty())
    return;
  runtime::currentDevice();
  Driver &d = Driver::get();
  d.check(d.cuMemcpyDtoD(static_cast<CUdeviceptr>(dst.device_ptr()),
                         static_cast<CUdeviceptr>(src.device_ptr()), src.bytes()),
          "cuMemcpyDtoD");
}

} // namespace tegula
