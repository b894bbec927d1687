// DeviceBufferGpuTest.cpp - device-resident buffers, copies and events on a
// real GPU, and example kernels launched on device buffers against the
// interpreter. Without a CUDA driver each test is skipped with the reason.
#include "TestUtil.h"
#include "examples/kernels.h"
#include "tegula/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>

using namespace tegula;
using namespace tegula::testing;
using ::testing::HasSubstr;

namespace {

class DeviceGpu : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!gpu_available(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
};

LaunchOptions on(Backend b, Grid g, int warps = 4) {
  return {.grid = g, .num_warps = warps, .backend = b};
}

TEST_F(DeviceGpu, DeviceInfoIsFilledIn) {
  DeviceInfo info = device_info();
  EXPECT_FALSE(info.name.empty());
  EXPECT_THAT(info.chip, HasSubstr("sm_"));
  EXPECT_GT(info.driver_version, 0);
  EXPECT_GT(info.total_memory, size_t(1) << 30);
  std::printf("[device] %s (%s), driver %d, %.1f GiB, nominal %.0f GB/s\n", info.name.c_str(),
              info.chip.c_str(), info.driver_version, info.total_memory / 1073741824.0,
              info.nominal_bandwidth_gbs());
}

TEST_F(DeviceGpu, UploadDownloadRoundTripAndRanges) {
  auto host = random_vector<float>(1000);
  DeviceBuffer b = DeviceBuffer::from(host);
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b.bytes(), 4000u);
  EXPECT_EQ(b.device_ptr() % 256, 0u); // cuMemAlloc's alignment
  EXPECT_EQ(b.to_host<float>(), host);
  std::vector<float> part(10);
  b.download(part, 990);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), host.begin() + 990));
  std::vector<float> patch(5, 7.0f);
  b.upload(patch, 3);
  auto after = b.to_host<float>();
  EXPECT_EQ(after[2], host[2]);
  EXPECT_EQ(after[3], 7.0f);
  EXPECT_EQ(after[7], 7.0f);
  EXPECT_EQ(after[8], host[8]);
  std::vector<float> tooMany(11);
  EXPECT_THROW(b.download(tooMany, 990), Error);
}

TEST_F(DeviceGpu, FillAndDeviceToDeviceCopy) {
  DeviceBuffer a(4096, DType::f32), b(4096, DType::i32);
  a.fill_bytes(0xff);
  for (float v : a.to_host<float>())
    ASSERT_TRUE(std::isnan(v));
  auto host = random_vector<float>(4096);
  a.upload(host);
  copy(a, b); // same bytes, different dtype: a raw copy
  auto bits = b.to_host<int32_t>();
  EXPECT_EQ(std::memcmp(bits.data(), host.data(), host.size() * 4), 0);
  DeviceBuffer small(10, DType::f32);
  EXPECT_THAT([&] {
    try { copy(a, small); } catch (const Error &e) { return std::string(e.what()); }
    return std::string();
  }(), HasSubstr("the source has 16384 bytes"));
}

TEST_F(DeviceGpu, MovedBuffersKeepTheirMemory) {
  auto host = random_vector<float>(100);
  DeviceBuffer a = DeviceBuffer::from(host);
  uint64_t ptr = a.device_ptr();
  DeviceBuffer b = std::move(a);
  EXPECT_EQ(a.device_ptr(), 0u);
  EXPECT_EQ(b.device_ptr(), ptr);
  DeviceBuffer c(5, DType::f32);
  c = std::move(b); // frees c's old allocation
  EXPECT_EQ(c.to_host<float>(), host);
}

TEST_F(DeviceGpu, EventsTimeACopy) {
  DeviceBuffer a(size_t(1) << 24, DType::f32), b(size_t(1) << 24, DType::f32); // 64 MiB each
  Event start, stop;
  EXPECT_THROW(stop.elapsed_ms(start), Error); // never recorded
  start.record();
  copy(a, b);
  stop.record();
  stop.synchronize();
  float ms = stop.elapsed_ms(start);
  EXPECT_GT(ms, 0.0f);
  Timing t = time_ms([&] { copy(a, b); }, 5, 1);
  EXPECT_EQ(t.iters, 5);
  EXPECT_GT(t.min, 0.0);
  EXPECT_LE(t.min, t.median);
  EXPECT_LE(t.median, t.max);
  std::printf("[timing] 64 MiB D2D copy: %.3f ms median, %.0f GB/s\n", t.median,
              2.0 * a.bytes() / (t.median * 1e-3) / 1e9);
}

TEST_F(DeviceGpu, VectorAddOnDeviceBuffersMatchesTheInterpreter) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  for (int n : {1, 1000, 1025, 100003}) {
    SCOPED_TRACE(fmt::format("n={}", n));
    auto x = random_vector<float>(size_t(n)), y = random_vector<float>(size_t(n));
    auto ref = poisoned<float>(size_t(n));
    Grid g{uint32_t(cdiv(n, 1024))};
    k(on(Backend::Interp, g), x, y, ref, n, 1024);
    DeviceBuffer dx = DeviceBuffer::from(x), dy = DeviceBuffer::from(y), dout(n, DType::f32);
    dout.fill_bytes(0xff);
    const DeviceBuffer &cx = dx;
    k(on(Backend::GPU, g), cx, dy, dout, n, 1024); // asynchronous: download waits
    EXPECT_EQ(rel_error(dout.to_host<float>(), to_double(ref)), 0.0);
  }
}

TEST_F(DeviceGpu, SoftmaxAndLayerNormOnDeviceBuffers) {
  auto sm = kernel("softmax", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
  auto ln = kernel("layernorm", examples::layernorm<float>,
                   {"x", "weight", "bias", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"});
  const int rows = 9, cols = 1000;
  auto x = random_vector<float>(size_t(rows * cols), -5, 5);
  auto w = random_vector<float>(cols), b = random_vector<float>(cols);
  DeviceBuffer dx = DeviceBuffer::from(x), dw = DeviceBuffer::from(w), db = DeviceBuffer::from(b);
  DeviceBuffer dy(x.size(), DType::f32), dm(rows, DType::f32), dr(rows, DType::f32);

  auto ref = poisoned<float>(x.size());
  sm(on(Backend::Interp, {rows}), x, ref, cols, 1024);
  dy.fill_bytes(0xff);
  sm(on(Backend::GPU, {rows}, 8), dx, dy, cols, 1024);
  EXPECT_LT(rel_error(dy.to_host<float>(), to_double(ref)), 1e-5);

  auto y = poisoned<float>(x.size()), m = poisoned<float>(rows), r = poisoned<float>(rows);
  ln(on(Backend::Interp, {rows}), x, w, b, y, m, r, cols, 1e-5f, 256);
  dy.fill_bytes(0xff);
  ln(on(Backend::GPU, {rows}), dx, dw, db, dy, dm, dr, cols, 1e-5f, 256);
  EXPECT_LT(rel_error(dy.to_host<float>(), to_double(y)), 1e-5);
  EXPECT_LT(rel_error(dm.to_host<float>(), to_double(m)), 1e-5);
  EXPECT_LT(rel_error(dr.to_host<float>(), to_double(r)), 1e-5);
}

TEST_F(DeviceGpu, HostAndDeviceBuffersMix) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  const int n = 5000;
  auto x = random_vector<float>(n), y = random_vector<float>(n);
  auto ref = poisoned<float>(n), out = poisoned<float>(n);
  Grid g{uint32_t(cdiv(n, 1024))};
  k(on(Backend::Interp, g), x, y, ref, n, 1024);
  DeviceBuffer dx = DeviceBuffer::from(x);
  k(on(Backend::GPU, g), dx, y, out, n, 1024); // y staged in, out staged back
  EXPECT_EQ(rel_error(out, to_double(ref)), 0.0);
}

} // namespace
