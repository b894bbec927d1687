//===- DeviceErrorReport.h - why a kernel stopped, from the GPU -*- C++ -*-===//
//
// A trap on the GPU has no message: the launch fails and the context is
// lost. A kernel that stops on purpose (a failed tl::device_assert, a loop
// counter about to wrap) therefore leaves a report first. Each such place in
// a kernel is a numbered *site* whose text the compiler keeps with the
// binary (CompiledKernel::error_sites). The first thread to stop claims the
// module's `tegula_error_claim_<kernel>` word (an atomic in device memory),
// writes the site, its program id and the element's index into a record the
// runtime put in mapped host memory (the module's
// `tegula_error_report_<kernel>` holds its address), fences system-wide and traps; the threads that lose
// the claim wait for that trap (exiting would release barriers the others
// wait at). Host memory stays readable after the context is lost, so
// the runtime reads the record when the fault surfaces and says where and
// why. No call is involved: a call (vprintf) in a kernel makes ptxas
// serialise its wgmmas. The simulator runs the same code against a record
// of its own.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tegula::runtime {

/// The module globals the compiled code uses, named after the kernel so that
/// modules linked into one image (nvlink, relocatable code) do not clash.
inline std::string errorReportGlobal(std::string_view kernel) { // u64: the record's address, 0: none
  return "tegula_error_report_" + std::string(kernel);
}
inline std::string errorClaimGlobal(std::string_view kernel) { // u32: 0 until a thread claims
  return "tegula_error_claim_" + std::string(kernel);
}
/// On both globals in MLIR: which word it is (0: the report's address, 1:
/// the claim), for the simulator, which keeps its own per launch.
inline constexpr const char *kErrorWordAttr = "tegula.error_word";

/// Index coordinates a record holds (a tile of higher rank reports its first ones).
inline constexpr int kErrorReportMaxRank = 8;

/// The record, in 32-bit words; the compiler writes it at these offsets.
struct DeviceErrorRecord {
  uint32_t site = 0;         // 1 + the site's number, written last; 0: nothing reported
  uint32_t program[3] = {};  // the program id (x, y, z)
  uint32_t rank = 0;         // how many of `index` hold the element's coordinates
  int32_t index[kErrorReportMaxRank] = {};
  uint32_t unused = 0;
  uint64_t device = 0; // host's own: the record's device address, copied from here (pinned) into the module
};
static_assert(sizeof(DeviceErrorRecord) == 64);
inline constexpr int64_t kErrorReportSiteOffset = offsetof(DeviceErrorRecord, site);
inline constexpr int64_t kErrorReportProgramOffset = offsetof(DeviceErrorRecord, program);
inline constexpr int64_t kErrorReportRankOffset = offsetof(DeviceErrorRecord, rank);
inline constexpr int64_t kErrorReportIndexOffset = offsetof(DeviceErrorRecord, index);

/// A failed tl::device_assert's site text (after the file and line).
inline std::string deviceAssertionMessage(std::string_view message) {
  return "device assertion failed: " + std::string(message);
}

/// "SITE TEXT (pid (x, y, z) idx (i, j))"; empty when nothing was reported.
/// A site number the table lacks is said as such, never indexed past.
std::string describeDeviceError(const DeviceErrorRecord &record, const std::vector<std::string> &sites);

/// The sites as one string (the compiled-kernel cache stores it) and back.
std::string serializeErrorSites(const std::vector<std::string> &sites);
std::vector<std::string> parseErrorSites(const std::string &text);

/// A GPU module's record: a slot of mapped host memory whose device address
/// is written into the module's `tegula_error_report_<kernel>`. Modules without
/// sites get none, nor do any when no mapped memory can be had (a warning:
/// their kernels still stop, without a report). Destroyed after its module
/// is unloaded: a record that holds a report stays listed, others are reused.
class DeviceErrorSlot {
public:
  /// `module` is a CUmodule of the current context.
  static std::unique_ptr<DeviceErrorSlot> attach(void *module, const std::string &kernel,
                                                 std::vector<std::string> sites);
  ~DeviceErrorSlot();
  DeviceErrorSlot(const DeviceErrorSlot &) = delete;
  DeviceErrorSlot &operator=(const DeviceErrorSlot &) = delete;

private:
  DeviceErrorSlot() = default;
  friend std::string describeDeviceErrors();
  std::string kernel_;
  std::vector<std::string> sites_;
  DeviceErrorRecord *record_ = nullptr;
  friend struct SlotPool;
};

/// What every attached kernel reported ("kernel 'K' stopped: ..."), one
/// line each; empty when none did. Driver::check adds it to a kernel fault.
std::string describeDeviceErrors();

} // namespace tegula::runtime
