// DeviceBufferTest.cpp - the device-buffer and event API where it can be
// checked on the CPU: launch arguments made from device buffers, the
// interpreter refusing them, misuse reported before the driver is touched,
// alignment specialisation by device address, and the "no CUDA driver"
// errors (skipped, with the reason, where a driver exists).
#include "examples/kernels.h"
#include "tegula/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <type_traits>

using namespace tegula;
using ::testing::HasSubstr;

namespace {

static_assert(!std::is_copy_constructible_v<DeviceBuffer>, "DeviceBuffer owns its memory");
static_assert(std::is_nothrow_move_constructible_v<DeviceBuffer>);
static_assert(!std::is_copy_constructible_v<Event>);

template <class F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a tegula::Error";
  return "";
}

TEST(DeviceBuffer, EmptyBuffersNeedNoDriver) {
  DeviceBuffer a, b(0, DType::i32);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.dtype(), DType::i32);
  EXPECT_EQ(b.device_ptr(), 0u);
  DeviceBuffer c = std::move(b);
  EXPECT_EQ(c.dtype(), DType::i32);
  copy(a, a); // zero bytes: nothing to do
}

TEST(DeviceBuffer, ArgFromDeviceBuffer) {
  DeviceBuffer b(0, DType::f16);
  const DeviceBuffer &cb = b;
  Arg w(b), r(cb);
  EXPECT_EQ(w.kind(), Arg::Kind::Buffer);
  EXPECT_TRUE(w.on_device());
  EXPECT_FALSE(w.readonly());
  EXPECT_TRUE(r.readonly()); // const -> read-only, like host buffers
  EXPECT_EQ(w.dtype(), DType::f16);
  EXPECT_EQ(w.data(), nullptr); // no host address to dereference
  std::vector<float> host(4);
  EXPECT_FALSE(Arg(host).on_device());
  EXPECT_EQ(Arg(host).address(), reinterpret_cast<uintptr_t>(host.data()));
}

TEST(DeviceBuffer, InterpreterRefusesDeviceBuffersByName) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  DeviceBuffer out(0, DType::f32);
  std::vector<float> x(16), y(16);
  std::string err = errorOf([&] {
    k({.grid = {1}, .backend = Backend::Interp}, x, y, out, 0, 16);
  });
  EXPECT_THAT(err, HasSubstr("argument 'out' (#2) of kernel 'vector_add' is in device memory"));
  EXPECT_THAT(err, HasSubstr("CPU interpreter"));
  EXPECT_THAT(err, HasSubstr("Backend::GPU"));
  err = errorOf([&] { k({.grid = {1}, .backend = Backend::Sim}, x, y, out, 0, 16); });
  EXPECT_THAT(err, HasSubstr("but this launch runs on the CTA simulator"));
}

TEST(DeviceBuffer, DtypeMismatchIsALaunchError) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  DeviceBuffer x(0, DType::f32), y(0, DType::f32), out(0, DType::i32);
  std::string err = errorOf([&] { k({.grid = {1}, .backend = Backend::GPU}, x, y, out, 0, 16); });
  EXPECT_THAT(err, HasSubstr("argument 'out' (#2) of kernel 'vector_add' expects a buffer of f32, "
                             "got a buffer of i32"));
}

TEST(DeviceBuffer, MisuseIsReportedBeforeTheDriver) {
  DeviceBuffer b(0, DType::f32);
  std::vector<int32_t> ints(3);
  std::vector<float> floats(3);
  EXPECT_THAT(errorOf([&] { b.upload(ints); }),
              HasSubstr("DeviceBuffer::upload: the buffer holds f32 but the host data is i32"));
  EXPECT_THAT(errorOf([&] { b.download(floats); }),
              HasSubstr("DeviceBuffer::download: elements [0, 3) are outside the buffer of 0 "
                        "elements"));
  EXPECT_THAT(errorOf([&] { b.upload(floats, 1); }), HasSubstr("elements [1, 4)"));
  EXPECT_THAT(errorOf([&] { (void)tegula::time_ms([] {}, 0); }),
              HasSubstr("tegula::time_ms: needs iters >= 1"));
}

TEST(DeviceBuffer, AlignmentSpecialisationUsesTheDeviceAddress) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  std::vector<float> host(64);
  std::span<float> odd(host.data() + 1, 16); // 4 bytes past a 16-byte boundary
  DeviceBuffer dev(0, DType::f32);             // address 0: divisible by 16
  ASSERT_NE(reinterpret_cast<uintptr_t>(odd.data()) % 16, 0u);
  std::string hostIr = k.ir({odd, odd, odd, 15, 16});
  std::string devIr = k.ir({dev, dev, dev, 15, 16});
  auto count = [](const std::string &s) {
    size_t n = 0;
    for (size_t p = s.find("tile.divisibility"); p != std::string::npos;
         p = s.find("tile.divisibility", p + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count(hostIr), 0u) << hostIr;
  EXPECT_EQ(count(devIr), 3u) << devIr;
}

TEST(DeviceBufferWithoutDriver, AllocationEventsAndTimingSaySo) {
  std::string why;
  if (gpu_available(&why))
    GTEST_SKIP() << "a GPU is present; this test covers machines without one";
  EXPECT_THAT(why, HasSubstr("no CUDA driver"));
  EXPECT_THAT(errorOf([] { DeviceBuffer b(16, DType::f32); }), HasSubstr("no CUDA driver"));
  EXPECT_THAT(errorOf([] { Event e; }), HasSubstr("no CUDA driver"));
  EXPECT_THAT(errorOf([] { (void)time_ms([] {}, 3); }), HasSubstr("no CUDA driver"));
  EXPECT_THAT(errorOf([] { (void)device_info(); }), HasSubstr("no CUDA driver"));
  EXPECT_THAT(errorOf([] { synchronize(); }), HasSubstr("no CUDA driver"));
  std::vector<float> h(4);
  EXPECT_THAT(errorOf([&] { (void)DeviceBuffer::from(h); }), HasSubstr("no CUDA driver"));
}

TEST(DeviceBufferWithoutDriver, GpuLaunchOnDeviceBuffersSaysSo) {
  if (gpu_available())
    GTEST_SKIP() << "a GPU is present; this test covers machines without one";
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  DeviceBuffer x(0, DType::f32), y(0, DType::f32), out(0, DType::f32);
  EXPECT_THAT(errorOf([&] { k({.grid = {1}, .backend = Backend::GPU}, x, y, out, 0, 16); }),
              HasSubstr("no CUDA driver"));
}

} // namespace
