//===- DeviceErrorReport.cpp - why a kernel stopped, from the GPU ---------===//
#include "runtime/DeviceErrorReport.h"

#include "runtime/CudaDriver.h"
#include "tegula/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

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
    size_t n = 0, digits = at;
    for (; digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) && n <= text.size(); ++digits)
      n = n * 10 + size_t(text[digits] - '0');
    if (digits == at || digits >= text.size() || text[digits] != ':' || n > text.size() - digits - 1)
      throw Error("corrupt compiled-kernel cache entry (its error sites)");
    sites.push_back(text.substr(digits + 1, n));
    at = digits + 1 + n;
  }
  return sites;
}

/// Records in pages of mapped, pinned host memory; a slot per module that
/// has sites, reused once its module is unloaded - unless it holds a report.
struct SlotPool {
  // Recursive: a driver call made under the lock may fail with a kernel
  // fault, and Driver::check then reads the records.
  std::recursive_mutex mutex;
  std::vector<DeviceErrorRecord *> free;
  std::set<const DeviceErrorSlot *> attached;
  std::vector<std::unique_ptr<DeviceErrorSlot>> retired; // unloaded, with a report to tell
  bool warned = false;

  /// A cleared record that knows its device address; null (after a warning
  /// once) when the driver has no mapped memory to give.
  DeviceErrorRecord *take(Driver &d, const std::string &kernel) {
    if (free.empty()) {
      constexpr size_t kPage = 4096;
      void *host = nullptr;
      CUdeviceptr device = 0;
      CUresult r = d.cuMemHostAlloc(&host, kPage, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
      if (r == CUDA_SUCCESS) {
        r = d.cuMemHostGetDevicePointer(&device, host, 0);
        if (r != CUDA_SUCCESS)
          d.cuMemFreeHost(host);
      }
      if (r != CUDA_SUCCESS) {
        if (!warned)
          std::fprintf(stderr, "tegula: kernel '%s': no mapped host memory for kernels' error reports (%s); a kernel "
                       "that stops on purpose will not say why\n", kernel.c_str(), d.describe(r).c_str());
        warned = true;
        return nullptr;
      }
      // Last first, so slots go out in address order.
      for (size_t i = kPage / sizeof(DeviceErrorRecord); i-- > 0;) {
        auto *record = static_cast<DeviceErrorRecord *>(host) + i;
        *record = DeviceErrorRecord{};
        record->device = device + i * sizeof(DeviceErrorRecord);
        free.push_back(record);
      }
    }
    DeviceErrorRecord *record = free.back();
    free.pop_back();
    const uint64_t device = record->device;
    *record = DeviceErrorRecord{}; // nothing an earlier module left
    record->device = device;
    return record;
  }
};

namespace {
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
  const std::string name = errorReportGlobal(kernel);
  const CUresult found = d.cuModuleGetGlobal(&global, &bytes, static_cast<CUmodule>(module), name.c_str());
  if (found == CUDA_ERROR_NOT_FOUND)
    return nullptr; // sites the lowering dropped with their code
  d.check(found, "cuModuleGetGlobal", kernel);
  if (bytes != sizeof(uint64_t))
    throw Error(fmt::format("kernel '{}': its module's {} is {} bytes, not 8", kernel, name, bytes));
  SlotPool &p = pool();
  std::unique_ptr<DeviceErrorSlot> slot(new DeviceErrorSlot());
  slot->kernel_ = kernel;
  slot->sites_ = std::move(sites);
  {
    std::lock_guard<std::recursive_mutex> lock(p.mutex);
    slot->record_ = p.take(d, kernel);
  }
  if (!slot->record_)
    return nullptr;
  // From pinned memory the copy is complete when it returns: a launch on
  // any stream after this load finds the address.
  const CUresult copied = d.cuMemcpyHtoD(global, &slot->record_->device, sizeof(uint64_t));
  std::lock_guard<std::recursive_mutex> lock(p.mutex);
  if (copied != CUDA_SUCCESS) {
    p.free.push_back(slot->record_);
    slot->record_ = nullptr;
    d.check(copied, "cuMemcpyHtoD", kernel);
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
  if (record_->site == 0) {
    p.free.push_back(record_);
    return;
  }
  // Its kernel stopped: the fault may surface after the module is gone.
  auto kept = std::unique_ptr<DeviceErrorSlot>(new DeviceErrorSlot());
  kept->kernel_ = std::move(kernel_);
  kept->sites_ = std::move(sites_);
  kept->record_ = std::exchange(record_, nullptr);
  p.retired.push_back(std::move(kept));
}

std::string describeDeviceErrors() {
  SlotPool &p = pool();
  std::lock_guard<std::recursive_mutex> lock(p.mutex);
  std::string out;
  auto describe = [&](const DeviceErrorSlot &slot) {
    DeviceErrorRecord record;
    // The GPU wrote it; the fence before its trap made it visible.
    std::atomic_thread_fence(std::memory_order_acquire);
    std::memcpy(&record, slot.record_, sizeof record);
    if (record.site)
      out += fmt::format("{}kernel '{}' stopped: {}", out.empty() ? "" : "\n", slot.kernel_,
                         describeDeviceError(record, slot.sites_));
  };
  for (const DeviceErrorSlot *slot : p.attached)
    describe(*slot);
  for (const auto &slot : p.retired)
    describe(*slot);
  return out;
}

} // namespace tegula::runtime
