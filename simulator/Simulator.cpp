//===- Simulator.cpp - instrument, JIT and run a lowered kernel -----------===//
#include "simulator/Simulator.h"

#include "compiler/backend/PtxBackend.h"
#include "simulator/HostFunctions.h"
#include "simulator/HostJit.h"
#include "simulator/InstrumentForSimulator.h"
#include "simulator/MemoryProfile.h"
#include "simulator/PtxAsm.h"
#include "simulator/Tma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

using namespace mlir;

namespace tegula::sim {

struct SimKernel::Impl {
  std::string kernel;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<HostJit> jit;
  std::vector<Site> sites;
  /// What each place the kernel stops on purpose says (tegula.error_sites).
  std::vector<std::string> errorSites;
  std::vector<std::shared_ptr<const AsmProgram>> programs;
  std::vector<Type> argTypes;
  /// TMA tensor maps (use-tma): hidden arguments after the kernel's own;
  /// argument numbers count the kernel function's arguments.
  std::vector<runtime::TensorMapSpec> tensorMaps;
  size_t sharedBytes = 0;
  int threads = 0;
  int programsPerCta = 1; // 2: ping-pong (a hidden last argument counts the programs)
  int maxRegisters = 0; // the kernel's .maxnreg (nvvm.maxnreg), 0: none
  int clusterSize = 1;  // tilegpu.cluster_size: CTAs per cluster, along x
  mutable std::string ir;
};

namespace {
/// $TEGULA_SIM_PROFILE, read once: "1" prints every simulated launch's
/// memory profile.
bool profileFromEnvironment() {
  static const bool on = [] {
    const char *text = std::getenv("TEGULA_SIM_PROFILE");
    const std::string value = text ? text : "";
    if (value.empty() || value == "0")
      return false;
    if (value == "1")
      return true;
    throw Error(fmt::format("TEGULA_SIM_PROFILE is '{}'; 1 prints each simulated launch's memory profile, 0 or "
                            "unset does not",
                            value));
  }();
  return on;
}

/// $TEGULA_SIM_SCHEDULE, read once: a whole test suite can run under
/// another thread order.
std::pair<Schedule, uint64_t> scheduleFromEnvironment() {
  static const std::pair<Schedule, uint64_t> schedule = []() -> std::pair<Schedule, uint64_t> {
    const char *text = std::getenv("TEGULA_SIM_SCHEDULE");
    const std::string name = text ? text : "";
    if (name.empty() || name == "round-robin")
      return {Schedule::RoundRobin, 1};
    if (name == "lowest-first")
      return {Schedule::LowestFirst, 1};
    if (name == "highest-first")
      return {Schedule::HighestFirst, 1};
    if (name == "shuffled")
      return {Schedule::Shuffled, 1};
    if (name.starts_with("shuffled:")) {
      const std::string seed = name.substr(9);
      uint64_t value = 0;
      auto [end, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), value);
      if (ec == std::errc() && end == seed.data() + seed.size() && !seed.empty())
        return {Schedule::Shuffled, value};
    }
    throw Error(fmt::format("TEGULA_SIM_SCHEDULE={}: expected round-robin, lowest-first, highest-first, "
                            "shuffled or shuffled:SEED (a decimal number)",
                            name));
  }();
  return schedule;
}


std::string diagnosticText(Diagnostic &d) {
  std::string where;
  if (auto f = dyn_cast<FileLineColLoc>(d.getLocation()))
    where = fmt::format("{}:{}: ", f.getFilename().str(), f.getLine());
  return where + d.str();
}

/// Write one launch argument as the kernel's LLVM parameter type expects.
void marshal(const Arg &a, Type t, uint64_t &slot) {
  slot = 0;
  if (isa<LLVM::LLVMPointerType>(t)) {
    void *p = a.data();
    std::memcpy(&slot, &p, sizeof p);
  } else if (t.isF32()) {
    float f = float(a.as_float());
    std::memcpy(&slot, &f, 4);
  } else if (t.isF64()) {
    double f = a.as_float();
    std::memcpy(&slot, &f, 8);
  } else if (t.isF16() || t.isBF16()) {
    // Stored as the DSL's 16-bit types hold them: the raw bits.
    uint16_t bits = a.dtype() == DType::f16 ? float16(float(a.as_float())).bits
                                            : bfloat16(float(a.as_float())).bits;
    std::memcpy(&slot, &bits, 2);
  } else {
    int64_t v = a.as_int();
    std::memcpy(&slot, &v, t.getIntOrFloatBitWidth() <= 8 ? 1 : t.getIntOrFloatBitWidth() / 8);
  }
}

} // namespace

std::shared_ptr<SimKernel> SimKernel::prepare(Operation *lowered, const std::string &kernel,
                                              const std::string &chip) {
  MLIRContext *ctx = lowered->getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);

  auto impl = std::make_unique<Impl>();
  impl->kernel = kernel;
  impl->module = OwningOpRef<ModuleOp>(cast<ModuleOp>(lowered->clone()));
  ModuleOp module = *impl->module;

  std::string errors;
  {
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
      errors += (errors.empty() ? "" : "\n") + diagnosticText(d);
      return success();
    });
    PassManager pm(ctx);
    pm.addPass(createInstrumentForSimulator());
    if (failed(pm.run(module)))
      throw Error(fmt::format("simulator: cannot simulate kernel '{}':\n{}", kernel, errors));
  }

  for (Attribute a : cast<ArrayAttr>(module->getAttr("tegula.sim.sites"))) {
    auto pair = cast<ArrayAttr>(a);
    impl->sites.push_back({cast<StringAttr>(pair[0]).str(), cast<StringAttr>(pair[1]).str()});
  }
  for (Attribute a : cast<ArrayAttr>(module->getAttr("tegula.sim.asm"))) {
    auto pair = cast<ArrayAttr>(a);
    impl->programs.push_back(
        AsmProgram::parse(cast<StringAttr>(pair[0]).str(), cast<StringAttr>(pair[1]).str()));
  }
  impl->sharedBytes = size_t(cast<IntegerAttr>(module->getAttr("tegula.sim.shared_bytes")).getInt());
  // What no GPU would launch is refused here too, as the runtime refuses it
  // there: a simulated run must not pass a kernel the hardware cannot hold.
  if (const size_t limit = backend::maxSharedBytesPerCta(chip); impl->sharedBytes > limit)
    throw Error(fmt::format("simulator: kernel '{}' needs {} bytes of shared memory per CTA; {} allows at most {} "
                            "(smaller tiles, fewer stages)",
                            kernel, impl->sharedBytes, chip.empty() ? std::string("no GPU") : chip, limit));
  if (auto errorSites = module->getAttrOfType<ArrayAttr>("tegula.error_sites"))
    for (Attribute site : errorSites)
      impl->errorSites.push_back(cast<StringAttr>(site).str());
  if (auto maps = module->getAttrOfType<StringAttr>("tilegpu.tensor_maps"))
    impl->tensorMaps = runtime::parseTensorMaps(maps.str());
  auto warps = module->getAttrOfType<IntegerAttr>("tilegpu.num_warps");
  auto producers = module->getAttrOfType<IntegerAttr>("tilegpu.producer_warps"); // warp specialisation
  auto programs = module->getAttrOfType<IntegerAttr>("tilegpu.programs_per_cta"); // ping-pong
  impl->programsPerCta = programs ? int(programs.getInt()) : 1;
  if (auto cluster = module->getAttrOfType<IntegerAttr>("tilegpu.cluster_size")) {
    impl->clusterSize = int(cluster.getInt());
    if (impl->clusterSize < 1 || impl->clusterSize > 16)
      throw Error(fmt::format("simulator: kernel '{}' has tilegpu.cluster_size {} (1 to 16 CTAs)", kernel,
                              impl->clusterSize));
  }
  impl->threads =
      int((warps ? warps.getInt() : 4) * impl->programsPerCta + (producers ? producers.getInt() : 0)) * kWarpSize;
  auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(kernel);
  if (!fn)
    throw Error(fmt::format("simulator: the module has no kernel '{}'", kernel));
  llvm::append_range(impl->argTypes, fn.getArgumentTypes());
  // The kernel's .maxnreg: lower-tilegpu-to-llvm derives nvvm.maxnreg from
  // the module's tilegpu.max_registers.
  if (auto regs = fn->getAttrOfType<IntegerAttr>("nvvm.maxnreg"))
    impl->maxRegisters = int(regs.getInt());
  else if (auto moduleRegs = module->getAttrOfType<IntegerAttr>("tilegpu.max_registers"))
    impl->maxRegisters = int(moduleRegs.getInt());
  impl->jit = HostJit::compile(module, kernel);

  std::shared_ptr<SimKernel> k(new SimKernel());
  k->impl_ = std::move(impl);
  return k;
}

SimKernel::~SimKernel() = default;

int SimKernel::threads() const { return impl_->threads; }

const std::vector<std::string> &SimKernel::externalSymbols() const {
  return impl_->jit->externalSymbols();
}

const std::string &SimKernel::instrumentedIR() const {
  if (impl_->ir.empty()) {
    llvm::raw_string_ostream os(impl_->ir);
    impl_->module->print(os);
  }
  return impl_->ir;
}

RunStats SimKernel::run(Grid grid, const std::vector<ParamInfo> &params,
                        const std::vector<std::string> &paramNames, const std::vector<Arg> &args,
                        const SimOptions &options) const {
  LaunchConfig config;
  config.kernel = impl_->kernel;
  config.grid = grid;
  // Ping-pong: CTA c runs programs 2c and 2c + 1.
  const int programs = impl_->programsPerCta;
  config.grid.x = unsigned((uint64_t(grid.x) + unsigned(programs) - 1) / unsigned(programs));
  // Clusters group the CTA grid (CUDA refuses a launch that does not fill them).
  config.clusterSize = impl_->clusterSize;
  if (config.grid.x % unsigned(config.clusterSize) != 0)
    throw Error(clusterGridError(impl_->kernel, config.clusterSize, config.grid.x));
  config.threads = impl_->threads;
  config.maxRegisters = impl_->maxRegisters;
  config.sharedBytes = impl_->sharedBytes;
  config.sites = &impl_->sites;
  config.detectRaces = options.detectRaces;
  config.lastCtaFirst = options.lastCtaFirst;
  const bool printProfile = !options.profileMemory && profileFromEnvironment();
  config.profileMemory = options.profileMemory.value_or(printProfile);
  std::tie(config.schedule, config.scheduleSeed) =
      options.schedule ? std::pair(*options.schedule, options.scheduleSeed) : scheduleFromEnvironment();

  std::vector<uint64_t> slots;
  slots.reserve(args.size() + impl_->tensorMaps.size() + 1);
  std::vector<int> paramOfSlot; // kernel function argument -> DSL parameter
  const size_t ownArgs = impl_->argTypes.size() - impl_->tensorMaps.size() - (programs > 1 ? 1 : 0);
  for (size_t i = 0; i < params.size() && i < args.size(); ++i) {
    if (params[i].kind == ParamInfo::Kind::Constant)
      continue;
    paramOfSlot.push_back(int(i));
    if (slots.size() >= ownArgs)
      throw Error(fmt::format("simulator: kernel '{}' takes {} runtime arguments, got more",
                              impl_->kernel, ownArgs));
    if (slots.size() >= impl_->argTypes.size())
      throw Error(fmt::format("simulator: kernel '{}' takes {} runtime arguments, got more",
                              impl_->kernel, impl_->argTypes.size()));
    slots.emplace_back();
    marshal(args[i], impl_->argTypes[slots.size() - 1], slots.back());
    if (params[i].kind == ParamInfo::Kind::Pointer && args[i].bytes() > 0) {
      auto begin = reinterpret_cast<uintptr_t>(args[i].data());
      config.buffers.push_back({begin, begin + args[i].bytes(),
                                i < paramNames.size() ? paramNames[i] : fmt::format("arg{}", i),
                                args[i].readonly()});
    }
  }
  if (slots.size() != ownArgs)
    throw Error(fmt::format("simulator: kernel '{}' takes {} runtime arguments, got {}",
                            impl_->kernel, ownArgs, slots.size()));
  // Hidden arguments: the tensor maps, in the simulator's encoding, passed
  // by reference as a byval parameter is.
  std::vector<runtime::TensorMapBytes> maps;
  maps.reserve(impl_->tensorMaps.size());
  for (runtime::TensorMapSpec spec : impl_->tensorMaps) {
    spec.base = paramOfSlot.at(size_t(spec.base));
    for (auto *values : {&spec.shape, &spec.strides})
      for (runtime::TensorMapValue &v : *values)
        if (v.arg >= 0)
          v.arg = paramOfSlot.at(size_t(v.arg));
    uint64_t address = reinterpret_cast<uintptr_t>(args[size_t(spec.base)].data());
    maps.push_back(encodeForSimulator(
        runtime::resolveTensorMap(spec, address, args, paramNames, impl_->kernel)));
    slots.push_back(reinterpret_cast<uintptr_t>(maps.back().bytes.data()));
  }
  if (programs > 1)
    slots.push_back(grid.x); // the launch's programs along x
  std::sort(config.buffers.begin(), config.buffers.end(),
            [](const Buffer &a, const Buffer &b) { return a.begin < b.begin; });
  std::vector<void *> packed;
  for (uint64_t &s : slots)
    packed.push_back(&s);

  setAsmPrograms(&impl_->programs);
  capturePrintf(options.printed);
  SimErrorReport report; // a fresh record and claim for each launch
  report.address = reinterpret_cast<uintptr_t>(&report.record);
  report.sites = &impl_->errorSites;
  setErrorReport(&report);
  struct Reset {
    ~Reset() {
      setAsmPrograms(nullptr);
      capturePrintf(nullptr);
      setErrorReport(nullptr);
    }
  } reset;
  RunStats stats = runGrid(config, impl_->jit->entry(), packed.data());
  if (printProfile)
    std::fputs(memoryProfile(stats).c_str(), stderr);
  return stats;
}

std::string SimKernel::memoryProfile(const RunStats &stats) const {
  return formatMemoryProfile(impl_->kernel, stats.traffic, impl_->sites);
}

} // namespace tegula::sim
