//===- Device.cpp - the public view of the current GPU --------------------===//
#include "runtime/CudaDriver.h"
#include "runtime/GpuLaunch.h"
#include "tegula/device.h"

namespace tegula {

using runtime::Driver;

bool gpu_available(std::string *why) {
  if (!Driver::available(why))
    return false;
  try {
    runtime::currentDevice(); // no device, or one older than sm_80
  } catch (const Error &e) {
    if (why)
      *why = e.what();
    return false;
  }
  return true;
}

DeviceInfo device_info() {
  const runtime::GpuDevice &dev = runtime::currentDevice();
  Driver &d = Driver::get();
  DeviceInfo info;
  info.ordinal = dev.ordinal;
  info.name = dev.name;
  info.chip = dev.chip();
  info.driver_version = d.version();
  CUdevice handle;
  d.check(d.cuDeviceGet(&handle, dev.ordinal), "cuDeviceGet");
  d.check(d.cuDeviceTotalMem(&info.total_memory, handle), "cuDeviceTotalMem");
  d.check(d.cuDeviceGetAttribute(&info.memory_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
                                 handle),
          "cuDeviceGetAttribute");
  d.check(d.cuDeviceGetAttribute(&info.memory_bus_bits,
                                 CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, handle),
          "cuDeviceGetAttribute");
  info.multiprocessors = dev.multiprocessors;
  return info;
}

void synchronize() {
  runtime::currentDevice();
  Driver &d = Driver::get();
  d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
}

} // namespace tegula
