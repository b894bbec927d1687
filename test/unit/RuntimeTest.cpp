// RuntimeTest.cpp - the driver loader without a driver, the kernel cache:
// memory and disk levels, corruption, atomic writes, concurrency; and what
// a kernel's error report says.
#include "runtime/CudaDriver.h"
#include "runtime/DeviceErrorReport.h"
#include "runtime/KernelCache.h"
#include "tegula/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace tegula;
using namespace tegula::runtime;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

TEST(CudaDriver, MissingDriverIsAClearError) {
  std::string why;
  if (Driver::available(&why))
    GTEST_SKIP() << "a CUDA driver is present; this test covers machines without one";
  EXPECT_THAT(why, HasSubstr("no CUDA driver"));
  try {
    Driver::get();
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("no CUDA driver: cannot load libcuda.so.1"));
    EXPECT_THAT(e.what(), HasSubstr("TEGULA_BACKEND=interp"));
  }
}

/// A kernel's error sites travel with its cached binary: any text survives,
/// and a corrupt table is an error, never a crash or a loop.
TEST(DeviceErrorReport, SitesSurviveTheCacheAndCorruptTablesAreErrors) {
  const std::vector<std::string> sites = {"k.cpp:3: device assertion failed: a:b", "", "two\nlines 12:",
                                          std::string(300, 'x')};
  EXPECT_EQ(parseErrorSites(serializeErrorSites(sites)), sites);
  EXPECT_TRUE(parseErrorSites("").empty());
  for (const char *corrupt : {"5:abc", "x:abc", ":abc", "3", "18446744073709551595:", "99999999999999999999999:a",
                              "3:abc4"})
    EXPECT_THAT([&] { parseErrorSites(corrupt); }, ::testing::ThrowsMessage<Error>(HasSubstr("corrupt"))) << corrupt;
}

/// What a record says: the site's text, the program, the element's index
/// (at most kErrorReportMaxRank coordinates), nothing when no site is set.
TEST(DeviceErrorReport, ARecordSaysItsSiteProgramAndElement) {
  const std::vector<std::string> sites = {"k.cpp:3: device assertion failed: in range", "k.cpp:9: a loop"};
  DeviceErrorRecord r;
  EXPECT_EQ(describeDeviceError(r, sites), "");
  r.site = 1;
  r.program[0] = 4, r.program[1] = 1, r.program[2] = 2;
  r.rank = 2;
  r.index[0] = 17, r.index[1] = -3;
  EXPECT_EQ(describeDeviceError(r, sites),
            "k.cpp:3: device assertion failed: in range (pid (4, 1, 2) idx (17, -3))");
  r.site = 2;
  r.rank = 0;
  EXPECT_EQ(describeDeviceError(r, sites), "k.cpp:9: a loop (pid (4, 1, 2))");
  r.rank = 1000; // never read past the record
  EXPECT_THAT(describeDeviceError(r, sites), HasSubstr("idx (17, -3, 0, 0, 0, 0, 0, 0)"));
  r.site = 3;
  EXPECT_THAT(describeDeviceError(r, sites), HasSubstr("a stop at site 2, which its kernel does not list"));
}

TEST(CudaDriver, ErrorsNameTheCallTheCodeAndTheKernel) {
  if (!Driver::available())
    GTEST_SKIP() << "no CUDA driver on this machine: cannot check driver error text";
  try {
    Driver::get().check(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(f, 1, 1, 1)", "softmax");
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("cuLaunchKernel failed for kernel 'softmax': "
                                    "CUDA_ERROR_INVALID_VALUE"));
  }
}

class KernelCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("tegula-cache-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
  CacheKey key{"module { tile ir }", "num_warps=4", "sm_80", "0.1.0", "ptxas 13.0"};
  static KernelCache::Blob blob(const std::string &s) { return {s.begin(), s.end()}; }
};

TEST_F(KernelCacheTest, KeyCoversEveryPart) {
  std::string h = key.hash();
  EXPECT_EQ(h.size(), 64u);
  for (std::string CacheKey::*part : {&CacheKey::ir, &CacheKey::options, &CacheKey::arch,
                                      &CacheKey::tegulaVersion, &CacheKey::ptxasVersion}) {
    CacheKey other = key;
    other.*part += "x";
    EXPECT_NE(other.hash(), h);
  }
  // Length prefixes keep ("ab", "c") apart from ("a", "bc").
  CacheKey a = key, b = key;
  a.ir = "ab", a.options = "c";
  b.ir = "a", b.options = "bc";
  EXPECT_NE(a.hash(), b.hash());
}

TEST_F(KernelCacheTest, MemoryThenDisk) {
  int compiles = 0;
  auto compile = [&] { ++compiles; return blob("cubin-bytes"); };
  {
    KernelCache cache(dir.string());
    EXPECT_EQ(cache.getOrCompile(key, compile), blob("cubin-bytes"));
    EXPECT_EQ(cache.getOrCompile(key, compile), blob("cubin-bytes"));
    EXPECT_EQ(compiles, 1);
    EXPECT_EQ(cache.stats().memoryHits, 1u);
    EXPECT_TRUE(fs::exists(cache.entryPath(key)));
  }
  KernelCache fresh(dir.string()); // a new process, in effect
  EXPECT_EQ(fresh.getOrCompile(key, compile), blob("cubin-bytes"));
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(fresh.stats().diskHits, 1u);
}

TEST_F(KernelCacheTest, CorruptOrTruncatedEntriesAreRecompiled) {
  int compiles = 0;
  auto compile = [&] { ++compiles; return blob(std::string(1000, 'k')); };
  std::string path;
  {
    KernelCache cache(dir.string());
    cache.getOrCompile(key, compile);
    path = cache.entryPath(key);
  }
  auto size = fs::file_size(path);
  // Truncate.
  fs::resize_file(path, size - 10);
  {
    KernelCache cache(dir.string());
    EXPECT_EQ(cache.getOrCompile(key, compile).size(), 1000u);
    EXPECT_EQ(cache.stats().corruptEntries, 1u);
    EXPECT_EQ(compiles, 2);
  }
  // Flip a payload byte: the size is right, the checksum is not.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(size - 1));
    f.put('X');
  }
  {
    KernelCache cache(dir.string());
    EXPECT_EQ(cache.getOrCompile(key, compile), blob(std::string(1000, 'k')));
    EXPECT_EQ(cache.stats().corruptEntries, 1u);
    EXPECT_EQ(compiles, 3);
  }
  // Garbage in place of an entry.
  std::ofstream(path, std::ios::trunc) << "not a cache entry";
  KernelCache cache(dir.string());
  cache.getOrCompile(key, compile);
  EXPECT_EQ(compiles, 4);
}

TEST_F(KernelCacheTest, WritesLeaveNoTemporaryFiles) {
  KernelCache cache(dir.string());
  for (int i = 0; i < 5; ++i) {
    CacheKey k = key;
    k.ir += std::to_string(i);
    cache.getOrCompile(k, [&] { return blob("x"); });
  }
  int files = 0;
  for (auto &e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().extension(), ".bin") << e.path();
    ++files;
  }
  EXPECT_EQ(files, 5);
}

TEST_F(KernelCacheTest, ConcurrentRequestsCompileOnce) {
  KernelCache cache(dir.string());
  std::atomic<int> compiles{0};
  auto compile = [&] {
    ++compiles;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return blob("slow");
  };
  std::vector<std::thread> threads;
  std::atomic<int> correct{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      if (cache.getOrCompile(key, compile) == blob("slow"))
        ++correct;
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(correct.load(), 8);
}

TEST_F(KernelCacheTest, FailedCompilesAreNotCached) {
  KernelCache cache(dir.string());
  EXPECT_THROW(cache.getOrCompile(key, []() -> KernelCache::Blob { throw Error("ptxas failed"); }),
               Error);
  EXPECT_EQ(cache.getOrCompile(key, [&] { return blob("ok"); }), blob("ok"));
}

TEST_F(KernelCacheTest, DiskLevelCanBeDisabled) {
  KernelCache cache("-");
  int compiles = 0;
  cache.getOrCompile(key, [&] { ++compiles; return blob("x"); });
  KernelCache other("-");
  other.getOrCompile(key, [&] { ++compiles; return blob("x"); });
  EXPECT_EQ(compiles, 2);
  EXPECT_FALSE(fs::exists(dir));
}

TEST(KernelCacheDefaults, DirectoryFromEnvironment) {
  ::setenv("TEGULA_CACHE_DIR", "/tmp/tegula-env-cache", 1);
  EXPECT_EQ(KernelCache::defaultDirectory(), "/tmp/tegula-env-cache");
  ::unsetenv("TEGULA_CACHE_DIR");
  if (const char *home = std::getenv("HOME"))
    EXPECT_EQ(KernelCache::defaultDirectory(), std::string(home) + "/.cache/tegula");
}

} // namespace
