//===- HostFunctions.h - host definitions for simulated code -----*- C++ -*-===//
//
// The symbols the instrumented module links against: the __tegula_sim_*
// runtime hooks (special registers, barriers, shuffles, access checks,
// shared memory, inline PTX), libdevice's __nv_* math and vprintf.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DeviceErrorReport.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tegula::sim {

class AsmProgram;

/// nvvm.shfl.sync's kinds, as passed to __tegula_sim_shfl.
enum class ShuffleMode : int32_t { Bfly, Up, Down, Idx };

/// Name -> address of every host function simulated code may call.
std::vector<std::pair<std::string, void *>> hostSymbols();

/// The inline-asm programs `__tegula_sim_asm(i, ...)` runs (per host thread).
void setAsmPrograms(const std::vector<std::shared_ptr<const AsmProgram>> *programs);

/// Collect vprintf output into `into` instead of stdout (null: stdout).
void capturePrintf(std::string *into);

/// A launch's error report (runtime/DeviceErrorReport.h): the words the
/// kernel's `tegula_error_report_<kernel>` and `tegula_error_claim_<kernel>`
/// stand for, the record and its kernel's sites. A trap after a claim says
/// what the record holds. One per host thread's launch; null: none.
struct SimErrorReport {
  uint64_t address = 0; // of `record`
  uint32_t claim = 0;
  runtime::DeviceErrorRecord record;
  const std::vector<std::string> *sites = nullptr;
};
void setErrorReport(SimErrorReport *report);

} // namespace tegula::sim
