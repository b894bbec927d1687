//===- PtxBackend.cpp - LLVM dialect + NVVM -> PTX -> cubin ---------------===//
#include "compiler/backend/PtxBackend.h"

#include "tegula/error.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace tegula::backend {

std::string cudaRoot() {
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  return "/usr/local/cuda";
}

namespace {

constexpr const char *kTriple = "nvptx64-nvidia-cuda";

void initNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::string libdevicePath() {
  if (const char *p = std::getenv("TEGULA_LIBDEVICE"); p && *p)
    return p;
  return cudaRoot() + "/nvvm/libdevice/libdevice.10.bc";
}

bool callsLibdevice(const llvm::Module &m) {
  for (const llvm::Function &f : m)
    if (f.isDeclaration() && f.getName().starts_with("__nv_"))
      return true;
  return false;
}

/// Link the libdevice functions the module calls, then make them internal so
/// the optimiser inlines and drops them.
void linkLibdevice(llvm::Module &m) {
  std::string path = libdevicePath();
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> lib = llvm::parseIRFile(path, diag, m.getContext());
  if (!lib)
    throw Error(fmt::format("cannot read libdevice at {} (needed for math functions; set "
                            "TEGULA_LIBDEVICE or CUDA_HOME): {}",
                            path, diag.getMessage().str()));
  lib->setTargetTriple(m.getTargetTriple());
  lib->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(lib), llvm::Linker::LinkOnlyNeeded))
    throw Error("linking libdevice failed");
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && f.getName().starts_with("__nv_"))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  // libdevice reads this flag through __nvvm_reflect: no flush-to-zero.
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
}

/// The "NN" of "+ptxNN", or -1.
int ptxVersionOf(const std::string &features) {
  std::smatch m;
  static const std::regex ptx(R"(\+ptx([0-9]+))");
  return std::regex_search(features, m, ptx) ? std::stoi(m[1]) : -1;
}

} // namespace

std::string ptxFeaturesFor(const std::string &chip) {
  // The PTX ISA version that introduced each chip (LLVM's NVPTX refuses an
  // older one); Ampere, Ada and Hopper all take ptxas 13's minimum, 8.0.
  static const std::map<std::string, int> introducedIn = {
      {"sm_80", 70},   {"sm_86", 71},   {"sm_87", 74},   {"sm_89", 78},   {"sm_90", 78},
      {"sm_90a", 80},  {"sm_100", 86},  {"sm_100a", 86}, {"sm_100f", 88}, {"sm_103", 88},
      {"sm_103a", 88}, {"sm_103f", 88}, {"sm_110", 90},  {"sm_110a", 90}, {"sm_110f", 90},
      {"sm_120", 87},  {"sm_120a", 87}, {"sm_120f", 88}, {"sm_121", 88},  {"sm_121a", 88},
      {"sm_121f", 88}};
  auto it = introducedIn.find(chip);
  if (it == introducedIn.end())
    throw Error(fmt::format("chip '{}' is not one Tegula compiles for: sm_80, sm_86, sm_87, sm_89, "
                            "sm_90, sm_90a (Hopper's wgmma and TMA), or Blackwell's sm_100, sm_103, "
                            "sm_110, sm_120, sm_121 (and their a/f variants; sm_80's code path)",
                            chip));
  return fmt::format("+ptx{}", std::max(it->second, 80));
}

std::string translateToPtx(mlir::ModuleOp module, const Target &target) {
  initNvptx();
  const std::string features = target.features.empty() ? ptxFeaturesFor(target.chip) : target.features;
  if (const int want = ptxVersionOf(ptxFeaturesFor(target.chip)), have = ptxVersionOf(features);
      have >= 0 && have < want)
    throw Error(fmt::format("PTX ISA {}.{} is too old for {} (it needs {}.{}): drop the PTX "
                            "version to use the chip's, or raise it",
                            have / 10, have % 10, target.chip, want / 10, want % 10));
  mlir::DialectRegistry registry;
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> m = mlir::translateModuleToLLVMIR(module, llvmContext);
  if (!m)
    throw Error("translating the LLVM dialect to LLVM IR failed (see the diagnostics above)");

  llvm::Triple triple(kTriple);
  std::string err;
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!llvmTarget)
    throw Error(fmt::format("LLVM has no NVPTX target: {}", err));
  auto level = target.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : target.optLevel == 0 ? llvm::CodeGenOptLevel::None
                                      : llvm::CodeGenOptLevel::Default;
  std::unique_ptr<llvm::TargetMachine> tm(llvmTarget->createTargetMachine(
      triple, target.chip, features, llvm::TargetOptions(), std::nullopt, std::nullopt,
      level));
  if (!tm)
    throw Error(fmt::format("cannot create an NVPTX target machine for {} {}", target.chip,
                            features));
  m->setTargetTriple(triple);
  m->setDataLayout(tm->createDataLayout());
  if (callsLibdevice(*m))
    linkLibdevice(*m);

  // Optimise with the standard pipeline plus NVPTX's own passes (NVVMReflect).
  if (target.optLevel > 0) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel o = target.optLevel >= 3   ? llvm::OptimizationLevel::O3
                                : target.optLevel == 2 ? llvm::OptimizationLevel::O2
                                                       : llvm::OptimizationLevel::O1;
    pb.buildPerModuleDefaultPipeline(o).run(*m, mam);
  }

  llvm::SmallString<0> ptx;
  {
    llvm::raw_svector_ostream os(ptx);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
      throw Error("the NVPTX target cannot emit assembly");
    pm.run(*m);
  }
  return std::string(ptx.str());
}

namespace {
std::string queryPtxasVersion();
} // namespace

std::optional<std::string> findPtxas() {
  if (const char *p = std::getenv("TEGULA_PTXAS"); p && *p)
    return std::string(p);
  std::string candidate = cudaRoot() + "/bin/ptxas";
  if (llvm::sys::fs::can_execute(candidate))
    return candidate;
  if (auto found = llvm::sys::findProgramByName("ptxas"))
    return *found;
  return std::nullopt;
}

std::string ptxasVersion() {
  static const std::string version = [] { return queryPtxasVersion(); }();
  return version;
}

namespace {
std::string queryPtxasVersion() {
  auto ptxas = findPtxas();
  if (!ptxas)
    return "none";
  llvm::SmallString<128> out;
  llvm::sys::fs::createTemporaryFile("tegula-ptxas-version", "txt", out);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out),
                                                llvm::StringRef(out)};
  llvm::sys::ExecuteAndWait(*ptxas, {*ptxas, "--version"}, std::nullopt, redirects);
  std::ifstream in(out.c_str());
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty())
      last = line;
  llvm::sys::fs::remove(out);
  return last.empty() ? "unknown" : last;
}
} // namespace

std::vector<ResourceReport> parsePtxasLog(const std::string &log) {
  std::vector<ResourceReport> reports;
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex stack(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      reports.push_back(ResourceReport{m[1].str()});
      continue;
    }
    if (reports.empty())
      continue;
    ResourceReport &r = reports.back();
    if (std::regex_search(line, m, stack)) {
      r.stackBytes = std::stoi(m[1].str());
      r.spillStoreBytes = std::stoi(m[2].str());
      r.spillLoadBytes = std::stoi(m[3].str());
    }
    if (std::regex_search(line, m, regs))
      r.registers = std::stoi(m[1].str());
    if (std::regex_search(line, m, barriers))
      r.barriers = std::stoi(m[1].str());
    if (std::regex_search(line, m, smem))
      r.sharedBytes = std::stoi(m[1].str());
  }
  return reports;
}

Cubin assemble(const std::string &ptx, const Target &target) {
  auto ptxas = findPtxas();
  if (!ptxas)
    throw Error("ptxas not found (install the CUDA toolkit, or set TEGULA_PTXAS or CUDA_HOME)");
  llvm::SmallString<128> dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("tegula-ptxas", dir))
    throw Error(fmt::format("cannot create a temporary directory: {}", ec.message()));
  std::string ptxPath = (dir + "/kernel.ptx").str(), cubinPath = (dir + "/kernel.cubin").str(),
              logPath = (dir + "/ptxas.log").str();
  {
    std::ofstream out(ptxPath, std::ios::binary);
    out << ptx;
  }
  std::vector<llvm::StringRef> args = {*ptxas, "-v", "-arch", target.chip, "-o", cubinPath,
                                       ptxPath};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(logPath),
                                                llvm::StringRef(logPath)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*ptxas, args, std::nullopt, redirects, 0, 0, &execError);
  std::ifstream logIn(logPath);
  std::string log((std::istreambuf_iterator<char>(logIn)), std::istreambuf_iterator<char>());
  if (rc != 0) {
    std::string cmd;
    for (llvm::StringRef a : args)
      cmd += (cmd.empty() ? "" : " ") + a.str();
    throw Error(fmt::format("ptxas failed (exit code {}){}\n  reproduce: {}\n  PTX kept at: "
                            "{}\n{}",
                            rc, execError.empty() ? "" : ": " + execError, cmd, ptxPath, log));
  }
  Cubin result;
  std::ifstream bin(cubinPath, std::ios::binary);
  result.data.assign(std::istreambuf_iterator<char>(bin), std::istreambuf_iterator<char>());
  result.log = log;
  result.kernels = parsePtxasLog(log);
  llvm::sys::fs::remove_directories(dir);
  return result;
}

} // namespace tegula::backend
