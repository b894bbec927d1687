//===- DeviceErrorReport.cpp - why a kernel stopped, from the GPU ---------===//
#include "runtime/DeviceErrorReport.h"

#include "runtime/CudaDriver.h"
#include "tegula/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>

namespace tegula::runtime {

std::string describeDeviceError(const DeviceErrorRecord &record, const std::vector<std::string> &sites) {
  if (record.site == 0)
    return {};
  const std::string text = record.site <= sites.size()
                               ? sites[record.site - 1]
                               : fmt::format("a stop at site {}, which its kernel does not list", record.site - 1);
  std::string where = fmt::format("pid ({}, {}, {})", record.program[0], record.program[1], record.program[2]);
  const uint32_t rank = std::min<uint32_t>(record.rank, kErrorReportMaxRank);
  if (rank)
    where += fmt::format(" idx ({})", fmt::join(record.index, record.index + rank, ", "));
  return fmt::format("{} ({})", text, where);
}

// Length-prefixed, since a message may hold any character.
std::string serializeErrorSites(const std::vector<std::string> &sites) {
  std::string out;
  for (const std::string &s : sites)
    out += fmt::format("{}:{}", s.size(), s);
  return out;
}

std::vector<std::string> parseErrorSites(const std::string &text) {
  std::vector<std::string> sites;
  for (size_t at = 0; at < text.size();) {
    const size_t colon = text.find(':', at);
    if (colon == std::string::npos)
      throw Error("corrupt compiled-kernel cache entry (error sites)");
    const size_t n = std::stoull(text.substr(at, colon - at));
    if (colon + 1 + n > text.size())
      throw Error("corrupt compiled-kernel cache entry (error sites)");
    sites.push_back(text.substr(colon + 1, n));
    at = colon + 1 + n;
  }
  return sites;
}

namespace {
/// Records in pages of mapped, pinned host memory; a slot per module that
/// has sites, reused when its module is unloaded.
struct SlotPool {
  // Recursive: a driver call made under the lock may fail with a kernel
  // fault, and Driver::check then reads the records.
  std::recursive_mutex mutex;
  std::vector<std::pair<DeviceErrorRecord *, CUdeviceptr>> free;
  std::set<const DeviceErrorSlot *> attached;

  std::pair<DeviceErrorRecord *, CUdeviceptr> take(Driver &d, const std::string &kernel) {
    if (free.empty()) {
      constexpr size_t kPage = 4096;
      void *host = nullptr;
      d.check(d.cuMemHostAlloc(&host, kPage, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
              "cuMemHostAlloc", kernel);
      std::memset(host, 0, kPage);
      CUdeviceptr device = 0;
      d.check(d.cuMemHostGetDevicePointer(&device, host, 0), "cuMemHostGetDevicePointer", kernel);
      // Last first, so slots go out in address order.
      for (size_t i = kPage / sizeof(DeviceErrorRecord); i-- > 0;)
        free.emplace_back(static_cast<DeviceErrorRecord *>(host) + i, device + i * sizeof(DeviceErrorRecord));
    }
    auto slot = free.back();
    free.pop_back();
    return slot;
  }
};

SlotPool &pool() {
  static SlotPool *p = new SlotPool; // never destroyed: modules unload at exit
  return *p;
}
} // namespace

std::unique_ptr<DeviceErrorSlot> DeviceErrorSlot::attach(void *module, const std::string &kernel,
                                                         std::vector<std::string> sites) {
  if (sites.empty())
    return nullptr;
  Driver &d = Driver::get();
  CUdeviceptr global = 0;
  size_t bytes = 0;
  const CUresult found = d.cuModuleGetGlobal(&global, &bytes, static_cast<CUmodule>(module), kErrorReportGlobal);
  if (found == CUDA_ERROR_NOT_FOUND)
    return nullptr; // sites the lowering dropped with their code
  d.check(found, "cuModuleGetGlobal", kernel);
  if (bytes != sizeof(uint64_t))
    throw Error(fmt::format("kernel '{}': its module's {} is {} bytes, not 8", kernel, kErrorReportGlobal, bytes));
  SlotPool &p = pool();
  std::lock_guard<std::recursive_mutex> lock(p.mutex);
  auto [record, device] = p.take(d, kernel);
  std::unique_ptr<DeviceErrorSlot> slot(new DeviceErrorSlot());
  slot->kernel_ = kernel;
  slot->sites_ = std::move(sites);
  slot->record_ = record;
  try {
    const uint64_t address = device;
    d.check(d.cuMemcpyHtoD(global, &address, sizeof address), "cuMemcpyHtoD", kernel);
  } catch (...) {
    p.free.emplace_back(record, device);
    slot->record_ = nullptr;
    throw;
  }
  p.attached.insert(slot.get());
  return slot;
}

DeviceErrorSlot::~DeviceErrorSlot() {
  if (!record_)
    return;
  SlotPool &p = pool();
  std::lock_guard<std::recursive_mutex> lock(p.mutex);
  p.attached.erase(this);
  *record_ = DeviceErrorRecord{};
  CUdeviceptr device = 0;
  if (Driver::available() && Driver::get().cuMemHostGetDevicePointer(&device, record_, 0) == CUDA_SUCCESS)
    p.free.emplace_back(record_, device);
}

std::string describeDeviceErrors() {
  SlotPool &p = pool();
  std::lock_guard<std::recursive_mutex> lock(p.mutex);
  std::string out;
  for (const DeviceErrorSlot *slot : p.attached) {
    DeviceErrorRecord record;
    // The GPU wrote it; the fence before its trap made it visible.
    std::atomic_thread_fence(std::memory_order_acquire);
    std::memcpy(&record, slot->record_, sizeof record);
    if (record.site == 0)
      continue;
    out += fmt::format("{}kernel '{}' stopped: {}", out.empty() ? "" : "\n", slot->kernel_,
                       describeDeviceError(record, slot->sites_));
  }
  return out;
}

} // namespace tegula::runtime
