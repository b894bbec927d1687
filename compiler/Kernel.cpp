//===- Kernel.cpp - trace, specialise, cache and launch kernels -----------===//
#include "tegula/kernel.h"

#include "compiler/LaunchChecks.h"
#include "compiler/LaunchSwitches.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "compiler/analysis/AccumulatorRegisters.h"
#include "compiler/backend/PtxBackend.h"
#include "compiler/backend/Sass.h"
#include "compiler/dsl/TraceState.h"
#include "compiler/interp/Interpreter.h"
#include "runtime/GpuLaunch.h"
#include "runtime/KernelCache.h"
#include "simulator/Simulator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <sstream>
#include <map>
#include <string_view>
#include <tuple>
#include <unistd.h> // environ
#include <mutex>

using namespace mlir;

namespace tegula {

using detail::Switches;

mlir::MLIRContext &globalContext() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    registerAllDialects(registry);
    auto *c = new MLIRContext(registry);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

Backend parse_backend(const std::string &name) {
  if (name == "interp")
    return Backend::Interp;
  if (name == "gpu" || name == "cuda")
    return Backend::GPU;
  if (name == "sim")
    return Backend::Sim;
  throw Error(fmt::format("unknown backend '{}'; available: interp, gpu (or cuda), sim", name));
}

namespace {

/// TEGULA_DUMP=tile,tilegpu,llvm,ptx,sim (or "all") prints those stages to stderr.
bool dumpEnabled(const char *stage) {
  const char *env = std::getenv("TEGULA_DUMP");
  if (!env || !*env)
    return false;
  std::string list = std::string(",") + env + ",";
  return list.find(",all,") != std::string::npos ||
         list.find(fmt::format(",{},", stage)) != std::string::npos;
}

void dumpStage(const std::string &kernel, const char *stage, const std::string &text) {
  fmt::print(stderr, "// ----- tegula: kernel '{}' after stage '{}' ----- //\n{}\n", kernel, stage,
             text);
}

std::string printModule(ModuleOp m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.print(os);
  return text;
}

/// The compiler's identity in cache keys: the version plus the path, size
/// and modification time of the file the compiler's code was loaded from -
/// libtegula.so when it is a shared library (a Python process's executable
/// is python3, unchanged by a rebuild of Tegula), else the executable - so a
/// rebuilt compiler never reads binaries an older build wrote.
const std::string &compilerIdentity() {
  static const std::string id = [] {
    std::error_code ec;
    std::filesystem::path exe;
    Dl_info info;
    if (dladdr(reinterpret_cast<const void *>(&compilerIdentity), &info) && info.dli_fname &&
        *info.dli_fname)
      exe = std::filesystem::canonical(info.dli_fname, ec);
    if (exe.empty() || ec)
      exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
      return std::string(TEGULA_VERSION);
    auto size = std::filesystem::file_size(exe, ec);
    auto mtime = std::filesystem::last_write_time(exe, ec).time_since_epoch().count();
    return fmt::format("{}+{}:{}:{}", TEGULA_VERSION, exe.string(), size, mtime);
  }();
  return id;
}

/// Process-wide compiled-kernel cache (memory + $TEGULA_CACHE_DIR).
runtime::KernelCache &kernelCache() {
  static runtime::KernelCache cache;
  return cache;
}

// A CompiledKernel as a cache blob: length-prefixed fields.
void putString(std::vector<char> &out, const std::string &s) {
  uint64_t n = s.size();
  out.insert(out.end(), reinterpret_cast<const char *>(&n), reinterpret_cast<const char *>(&n) + 8);
  out.insert(out.end(), s.begin(), s.end());
}
std::string getString(const std::vector<char> &in, size_t &pos) {
  uint64_t n;
  if (pos + 8 > in.size())
    throw Error("corrupt compiled-kernel cache entry");
  std::memcpy(&n, in.data() + pos, 8);
  pos += 8;
  if (pos + n > in.size())
    throw Error("corrupt compiled-kernel cache entry");
  std::string s(in.data() + pos, n);
  pos += n;
  return s;
}
std::vector<char> serialize(const CompiledKernel &k) {
  std::vector<char> out;
  putString(out, k.ptx);
  putString(out, std::string(k.cubin.begin(), k.cubin.end()));
  putString(out, fmt::format("{} {} {} {} {} {} {}", k.registers, k.shared_bytes, k.spill_bytes,
                             k.dynamic_shared_bytes, k.producer_warps, k.programs_per_cta, k.cluster_size));
  putString(out, k.ptxas_log);
  putString(out, k.tensor_maps);
  putString(out, runtime::serializeErrorSites(k.error_sites));
  return out;
}
CompiledKernel deserialize(const std::vector<char> &in) {
  CompiledKernel k;
  size_t pos = 0;
  k.ptx = getString(in, pos);
  std::string cubin = getString(in, pos);
  k.cubin.assign(cubin.begin(), cubin.end());
  std::istringstream numbers(getString(in, pos));
  numbers >> k.registers >> k.shared_bytes >> k.spill_bytes >> k.dynamic_shared_bytes >> k.producer_warps >>
      k.programs_per_cta;
  if (!(numbers >> k.cluster_size)) // an entry from before clusters
    k.cluster_size = 1;
  k.ptxas_log = getString(in, pos);
  if (pos < in.size())
    k.tensor_maps = getString(in, pos);
  if (pos < in.size())
    k.error_sites = runtime::parseErrorSites(getString(in, pos));
  return k;
}

} // namespace

namespace detail {

/// What a loaded GPU kernel was compiled for: chip, warps, stages, the
/// code paths allowed, warp specialised, ping-pong, cluster size.
using LoadedKey = std::tuple<std::string, int, int, std::tuple<bool, bool, bool, bool>, bool, bool, int, int>;

struct Specialization {
  OwningOpRef<ModuleOp> traced; // as built by the DSL
  OwningOpRef<ModuleOp> tile;   // after the tile-level pipeline
  std::string tileText;         // `tile` printed (on first GPU compile): part of cache keys
  std::mutex compileMutex;
  std::map<std::string, std::shared_ptr<const CompiledKernel>> compiled; // by options
  std::map<LoadedKey, std::shared_ptr<runtime::LoadedKernel>> loaded;
  // by chip, warps, stages, warp specialisation
  /// Keyed like `loaded`.
  std::map<LoadedKey, std::shared_ptr<sim::SimKernel>> simulated;
  /// The kernel runs in clusters when asked to: it has tl::multicast loads
  /// or reads tl::cluster_size(). Others ignore cluster_size.
  bool usesClusters = false;
};

struct KernelImpl {
  std::string name;
  std::vector<ParamInfo> params;
  std::vector<std::string> paramNames;
  Trampoline trampoline;
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<Specialization>> specs;

  void checkArgs(const std::vector<Arg> &args) const;
  /// The specialisation `args` select, as bytes, into `k`.
  void key(const std::vector<Arg> &args, std::string &k) const;
  Specialization &specialize(const std::vector<Arg> &args);
  std::unique_ptr<Specialization> trace(const std::vector<Arg> &args);
};

namespace {
const char *kindName(Arg::Kind k) {
  switch (k) {
  case Arg::Kind::Buffer: return "a buffer";
  case Arg::Kind::Int: return "an integer";
  case Arg::Kind::Float: return "a floating-point number";
  }
  return "?";
}
} // namespace

void KernelImpl::checkArgs(const std::vector<Arg> &args) const {
  if (args.size() != params.size()) {
    const std::vector<std::string> rest(paramNames.begin() + std::ptrdiff_t(std::min(args.size(), params.size())),
                                        paramNames.end());
    throw Error(fmt::format("kernel '{}' takes {} arguments ({}), {} {} given{}", name, params.size(),
                            fmt::join(paramNames, ", "), args.size(), args.size() == 1 ? "was" : "were",
                            args.size() < params.size() ? fmt::format(": missing {}", fmt::join(rest, ", "))
                                                        : fmt::format(": {} too many", args.size() - params.size())));
  }
  // Formatted only for an error: this runs on every launch.
  auto which = [&](size_t i) {
    return fmt::format("argument '{}' (#{}) of kernel '{}'", paramNames[i], i, name);
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamInfo &p = params[i];
    const Arg &a = args[i];
    switch (p.kind) {
    case ParamInfo::Kind::Pointer:
      if (a.kind() != Arg::Kind::Buffer)
        throw Error(fmt::format("{} expects a buffer of {}, got {}", which(i),
                                dtype_name(p.dtype), kindName(a.kind())));
      if (!p.any_dtype && a.dtype() != p.dtype)
        throw Error(fmt::format("{} expects a buffer of {}, got a buffer of {}", which(i),
                                dtype_name(p.dtype), dtype_name(a.dtype())));
      if (!a.data() && a.bytes() != 0 && !a.on_device()) // the CPU backends would read through it
        throw Error(fmt::format("{} is a null buffer of {} bytes", which(i), a.bytes()));
      // The GPU faults on an access its element size does not divide (the
      // simulator says so too); the interpreter would read it happily.
      if (size_t size = dtype_size(a.dtype()); size > 1 && a.address() % size != 0)
        throw Error(fmt::format("{} starts at address {:#x}, which is not a multiple of its {}-byte {} "
                                "elements: the GPU faults on misaligned accesses (a view at a byte offset?)",
                                which(i), a.address(), size, dtype_name(a.dtype())));
      break;
    case ParamInfo::Kind::Scalar:
    case ParamInfo::Kind::Constant:
      if (a.kind() == Arg::Kind::Buffer)
        throw Error(fmt::format("{} expects a scalar ({}), got a buffer", which(i),
                                dtype_name(p.dtype)));
      if (is_int(p.dtype) && a.kind() == Arg::Kind::Float)
        throw Error(fmt::format("{} expects an integer ({}), got a floating-point number",
                                which(i), dtype_name(p.dtype)));
      if (is_int(p.dtype) && a.past_int64())
        throw Error(fmt::format("{} is {}, which does not fit in {}", which(i), uint64_t(a.as_int()),
                                dtype_name(p.dtype)));
      if (is_float(p.dtype) && a.kind() == Arg::Kind::Float)
        if (std::optional<double> largest = detail::pastLargestFinite(a.as_float(), p.dtype))
          throw Error(fmt::format("{} is {}, which rounds past the largest finite {} ({})", which(i), a.as_float(),
                                  dtype_name(p.dtype), *largest));
      if (is_int(p.dtype) && p.dtype != DType::i1 && p.dtype != DType::i64) {
        int bits = int(dtype_size(p.dtype)) * 8;
        int64_t v = a.as_int(), lo = -(int64_t(1) << (bits - 1)), hi = (int64_t(1) << (bits - 1)) - 1;
        if (v < lo || v > hi)
          throw Error(fmt::format("{} is {}, which does not fit in {} [{}, {}]", which(i), v,
                                  dtype_name(p.dtype), lo, hi));
      }
      break;
    }
  }
}

namespace {
/// Like Triton, kernels specialise on 16-byte alignment of pointers and
/// divisibility by 16 of integer scalars: the GPU code can then vectorise.
/// A device buffer's alignment is its device address's; a staged host
/// buffer is judged by its host address (its device copy is always aligned,
/// so this can only be conservative).
bool divisibleBy16(const ParamInfo &p, const Arg &a) {
  if (p.kind == ParamInfo::Kind::Pointer)
    return a.address() % 16 == 0;
  if (p.kind == ParamInfo::Kind::Scalar && is_int(p.dtype) && p.dtype != DType::i1)
    return a.as_int() % 16 == 0;
  return false;
}

/// Like Triton, an integer scalar equal to 1 is traced as the constant 1: a
/// stride passed at run time (Triton's `stride_ak`) that is 1 then makes
/// runs the axis analysis sees, and the multiplications by it fold.
bool isOne(const ParamInfo &p, const Arg &a) {
  return p.kind == ParamInfo::Kind::Scalar && !p.any_dtype && is_int(p.dtype) && p.dtype != DType::i1 &&
         a.as_int() == 1;
}
} // namespace

void KernelImpl::key(const std::vector<Arg> &args, std::string &k) const {
  // Raw bytes, no formatting: this runs on every launch. Per parameter: a
  // tag, then what the specialisation depends on.
  k.clear();
  auto put = [&](char tag, const void *p, size_t n) {
    k.push_back(tag);
    k.append(static_cast<const char *>(p), n);
  };
  for (size_t i = 0; i < params.size(); ++i) {
    const uint32_t index = uint32_t(i);
    if (params[i].kind != ParamInfo::Kind::Constant && divisibleBy16(params[i], args[i]))
      put('d', &index, sizeof index);
    if (isOne(params[i], args[i]))
      put('1', &index, sizeof index);
    if (params[i].any_dtype) {
      const DType t = args[i].dtype();
      put('t', &t, sizeof t);
    } else if (params[i].kind == ParamInfo::Kind::Constant && is_float(params[i].dtype)) {
      const double v = args[i].as_float();
      put('f', &v, sizeof v);
    } else if (params[i].kind == ParamInfo::Kind::Constant) {
      const int64_t v = args[i].as_int();
      put('i', &v, sizeof v);
    }
  }
}

Specialization &KernelImpl::specialize(const std::vector<Arg> &args) {
  checkArgs(args);
  thread_local std::string k; // keeps its capacity: no allocation per launch
  key(args, k);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = specs.find(k);
  if (it == specs.end())
    it = specs.emplace(k, trace(args)).first;
  return *it->second;
}

namespace {
/// Turns MLIR diagnostics into `file:line: error: message` text.
struct DiagnosticCollector {
  std::string text;
  ScopedDiagnosticHandler handler;
  explicit DiagnosticCollector(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &d) {
          std::string where = "<unknown>";
          if (auto f = dyn_cast<FileLineColLoc>(d.getLocation()))
            where = fmt::format("{}:{}", f.getFilename().str(), f.getLine());
          const char *sev = d.getSeverity() == DiagnosticSeverity::Error ? "error" : "note";
          text += fmt::format("{}: {}: {}\n", where, sev, d.str());
          for (Diagnostic &note : d.getNotes())
            text += fmt::format("  note: {}\n", note.str());
          return success();
        }) {}
};
} // namespace

std::unique_ptr<Specialization> KernelImpl::trace(const std::vector<Arg> &args) {
  MLIRContext &ctx = globalContext();
  dsl::TraceState ts(&ctx);
  ts.kernelName = name;
  dsl::TraceScope scope(&ts);
  Location loc = NameLoc::get(StringAttr::get(&ctx, name));
  auto spec = std::make_unique<Specialization>();
  spec->traced = ModuleOp::create(loc);
  ts.builder.setInsertionPointToEnd(spec->traced->getBody());

  SmallVector<Type> argTypes;
  SmallVector<NamedAttribute> constants;
  for (size_t i = 0; i < params.size(); ++i) {
    Type elem = dsl::toMlirType(&ctx, params[i].any_dtype ? args[i].dtype() : params[i].dtype);
    switch (params[i].kind) {
    case ParamInfo::Kind::Pointer: argTypes.push_back(tile::PtrType::get(elem)); break;
    case ParamInfo::Kind::Scalar: argTypes.push_back(elem); break;
    case ParamInfo::Kind::Constant:
      constants.push_back(ts.builder.getNamedAttr(
          paramNames[i], is_float(params[i].dtype)
                             ? Attribute(ts.builder.getF64FloatAttr(args[i].as_float()))
                             : Attribute(ts.builder.getI64IntegerAttr(args[i].as_int()))));
      break;
    }
  }
  auto fn = func::FuncOp::create(ts.builder, loc, name,
                                 ts.builder.getFunctionType(argTypes, {}));
  fn->setAttr("tile.kernel", ts.builder.getUnitAttr());
  if (!constants.empty())
    fn->setAttr("tile.constants", ts.builder.getDictionaryAttr(constants));
  Block *entry = fn.addEntryBlock();
  std::vector<tl::tensor> values(params.size());
  unsigned argNo = 0;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].kind != ParamInfo::Kind::Constant) {
      fn.setArgAttr(argNo, "tile.name", ts.builder.getStringAttr(paramNames[i]));
      if (divisibleBy16(params[i], args[i]))
        fn.setArgAttr(argNo, "tile.divisibility", ts.builder.getI32IntegerAttr(16));
      if (isOne(params[i], args[i]))
        fn.setArgAttr(argNo, "tile.equal_to_one", ts.builder.getUnitAttr());
      values[i] = dsl::wrap(entry->getArgument(argNo++));
    }
  ts.builder.setInsertionPointToStart(entry);
  // Arguments equal to 1 (the parameter stays: launches pass the same list).
  for (size_t i = 0; i < params.size(); ++i)
    if (values[i].impl() && isOne(params[i], args[i])) {
      Value arg = dsl::unwrap(values[i], std::source_location::current());
      values[i] = dsl::wrap(arith::ConstantOp::create(ts.builder, arg.getLoc(), IntegerAttr::get(arg.getType(), 1)));
    }
  ts.func = fn;
  trampoline(values, args); // DSL errors propagate as tegula::Error
  dsl::eraseUnusableMarkers(ts);
  ts.builder.setInsertionPointToEnd(entry);
  func::ReturnOp::create(ts.builder, loc);

  DiagnosticCollector diags(ctx);
  if (failed(verify(*spec->traced)))
    throw Error(fmt::format("kernel '{}' traced to invalid IR:\n{}", name, diags.text));
  spec->traced->walk([&](Operation *op) {
    auto load = dyn_cast<tile::DescriptorLoadOp>(op);
    spec->usesClusters = spec->usesClusters || isa<tile::ClusterSizeOp>(op) || (load && load.getMulticast());
  });
  spec->tile = spec->traced->clone();
  if (failed(runTilePipeline(*spec->tile)))
    throw Error(fmt::format("kernel '{}': the tile pipeline failed:\n{}", name, diags.text));
  if (dumpEnabled("traced"))
    dumpStage(name, "traced", printModule(*spec->traced));
  if (dumpEnabled("tile"))
    dumpStage(name, "tile", printModule(*spec->tile));
  return spec;
}

} // namespace detail

Kernel::Kernel(std::string name, std::vector<ParamInfo> params,
               std::vector<std::string> paramNames, detail::Trampoline fn)
    : impl_(std::make_shared<detail::KernelImpl>()) {
  // The name becomes the PTX entry's: LLVM aborts the process on one it
  // cannot spell, ptxas fails on another without naming it.
  const bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                          std::all_of(name.begin(), name.end(), [](char c) {
                            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                          });
  if (!identifier)
    throw Error(fmt::format("kernel name '{}' is not an identifier ([A-Za-z_][A-Za-z0-9_]*: it names the GPU "
                            "entry point)",
                            name));
  for (size_t i = 0; i < paramNames.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (paramNames[i] == paramNames[j])
        throw Error(fmt::format("kernel '{}': parameters #{} and #{} are both named '{}'", name, j, i,
                                paramNames[i]));
  if (!paramNames.empty() && paramNames.size() != params.size())
    throw Error(fmt::format("kernel '{}' has {} parameters but {} names were given", name,
                            params.size(), paramNames.size()));
  for (size_t i = paramNames.size(); i < params.size(); ++i)
    paramNames.push_back(fmt::format("arg{}", i));
  impl_->name = std::move(name);
  impl_->params = std::move(params);
  impl_->paramNames = std::move(paramNames);
  impl_->trampoline = std::move(fn);
}

const std::string &Kernel::name() const { return impl_->name; }
const std::vector<ParamInfo> &Kernel::params() const { return impl_->params; }
const std::vector<std::string> &Kernel::param_names() const { return impl_->paramNames; }

size_t Kernel::num_specializations() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->specs.size();
}

std::string Kernel::ir(const std::vector<Arg> &args, const std::string &stage,
                       bool debugInfo) const {
  detail::Specialization &spec = impl_->specialize(args);
  ModuleOp m;
  if (stage == "traced")
    m = *spec.traced;
  else if (stage == "tile")
    m = *spec.tile;
  else
    throw Error(fmt::format("unknown IR stage '{}' (available: traced, tile)", stage));
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (debugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  m.print(os, flags);
  return text;
}

namespace {

/// The module's TMA tensor maps (use-tma), their argument numbers turned
/// from the kernel function's runtime arguments into the DSL parameters'.
std::vector<runtime::TensorMapSpec> tensorMapsOf(ModuleOp module,
                                                 const std::vector<ParamInfo> &params) {
  auto text = module->getAttrOfType<StringAttr>("tilegpu.tensor_maps");
  if (!text)
    return {};
  std::vector<int> paramOf; // function argument -> parameter
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].kind != ParamInfo::Kind::Constant)
      paramOf.push_back(int(i));
  std::vector<runtime::TensorMapSpec> specs = runtime::parseTensorMaps(text.str());
  for (runtime::TensorMapSpec &s : specs) {
    s.base = paramOf.at(size_t(s.base));
    for (auto *values : {&s.shape, &s.strides})
      for (runtime::TensorMapValue &v : *values)
        if (v.arg >= 0)
          v.arg = paramOf.at(size_t(v.arg));
  }
  return specs;
}

/// A copy of `tile` through the GPU pipeline: per-thread LLVM + NVVM, what
/// both the PTX back end and the simulator start from.
OwningOpRef<ModuleOp> lowerForGpu(const std::string &name, ModuleOp tile,
                                  const GpuPipelineOptions &options) {
  analysis::checkAccumulatorRegisters(name, tile, options.numWarps);
  OwningOpRef<ModuleOp> module = tile.clone();
  detail::DiagnosticCollector diags(globalContext());
  auto dump = [&](const char *stage, ModuleOp m) {
    if (dumpEnabled(stage))
      dumpStage(name, stage, printModule(m));
  };
  if (failed(runGpuPipeline(*module, options, dump)))
    throw Error(fmt::format("kernel '{}' cannot be compiled for the GPU yet:\n{}", name,
                            diags.text.empty() ? "a pass of the GPU pipeline failed without saying why (a compiler "
                                                 "bug: please report it with the kernel; TEGULA_DUMP=tile prints its "
                                                 "IR)"
                                               : diags.text));
  return module;
}
} // namespace

std::string CompiledKernel::sass() const { return backend::disassemble(cubin); }

CompiledKernel Kernel::compile(const std::vector<Arg> &args, const CompileOptions &opts) const {
  const Switches env = Switches::read();
  CompileOptions withEnv = opts;
  withEnv.ping_pong = opts.ping_pong || env.pingPong;
  withEnv.warp_specialize = opts.warp_specialize || env.warpSpecialize || withEnv.ping_pong;
  withEnv.cluster_size =
      env.clusterSizeFor(opts.cluster_size, impl_->specialize(args).usesClusters, withEnv.ping_pong, impl_->name);
  return compile(args, withEnv, env.paths());
}

CompiledKernel Kernel::compile(const std::vector<Arg> &args, const CompileOptions &opts,
                               const detail::CodePaths &paths) const {
  detail::Specialization &spec = impl_->specialize(args);
  static const bool havePtxas = backend::findPtxas().has_value();
  bool assemble = opts.assemble && havePtxas;
  const bool warpSpecialize = opts.warp_specialize || opts.ping_pong;
  detail::checkMaxRegisters(opts.max_registers, impl_->name);
  detail::checkWarpsAndStages(opts.num_warps, opts.num_stages, impl_->name);
  std::string optionKey = fmt::format(
      "chip={};num_warps={};num_stages={};cubin={};wgmma={};tma={};overlap={};turns={};ws={};pp={};cluster={};maxnreg={}",
      opts.chip, opts.num_warps, opts.num_stages, assemble, paths.wgmma, paths.tma, paths.overlapDots,
      paths.warpgroupTurns, warpSpecialize, opts.ping_pong, opts.cluster_size, opts.max_registers);
  // Dumping GPU stages means compiling for real, not reading a cache.
  bool dumping = dumpEnabled("tilegpu") || dumpEnabled("llvm") || dumpEnabled("ptx") || dumpEnabled("sass");
  std::lock_guard<std::mutex> lock(spec.compileMutex);
  if (auto it = spec.compiled.find(optionKey); it != spec.compiled.end() && !dumping)
    return *it->second; // the fast path: no hashing, no I/O

  const std::string &name = impl_->name;
  auto compileNow = [&]() -> std::vector<char> {
    backend::ptxFeaturesFor(opts.chip); // an unknown chip fails here, named, before any pass
    OwningOpRef<ModuleOp> module = lowerForGpu(name, *spec.tile,
                                               {.numWarps = opts.num_warps,
                                                .numStages = opts.num_stages,
                                                .chip = opts.chip,
                                                .warpSpecialize = warpSpecialize,
                                                .pingPong = opts.ping_pong,
                                                .clusterSize = opts.cluster_size,
                                                .useWgmma = paths.wgmma,
                                                .useTma = paths.tma,
                                                .overlapDots = paths.overlapDots,
                                                .warpgroupTurns = paths.warpgroupTurns,
                                                .maxRegisters = opts.max_registers});
    CompiledKernel out;
    if (auto dyn = (*module)->getAttrOfType<IntegerAttr>("tilegpu.dynamic_shared_bytes"))
      out.dynamic_shared_bytes = int(dyn.getInt());
    // What the chip cannot hold fails here, named, as the simulator and the
    // runtime refuse it - not at a launch, nor as a kernel to inspect.
    if (const size_t limit = backend::maxSharedBytesPerCta(opts.chip); size_t(out.dynamic_shared_bytes) > limit)
      throw Error(fmt::format("kernel '{}' needs {} bytes of shared memory per CTA; {} allows at most {} (smaller "
                              "tiles, fewer stages)",
                              name, out.dynamic_shared_bytes, opts.chip, limit));
    if (auto producers = (*module)->getAttrOfType<IntegerAttr>("tilegpu.producer_warps"))
      out.producer_warps = int(producers.getInt());
    if (auto programs = (*module)->getAttrOfType<IntegerAttr>("tilegpu.programs_per_cta"))
      out.programs_per_cta = int(programs.getInt());
    if (auto cluster = (*module)->getAttrOfType<IntegerAttr>("tilegpu.cluster_size"))
      out.cluster_size = int(cluster.getInt());
    // A producer warpgroup and a second program (ping-pong) add warps.
    const int warps = opts.num_warps * std::max(out.programs_per_cta, 1) + out.producer_warps;
    if (warps > 32)
      throw Error(fmt::format("kernel '{}': {} warps a CTA ({} a program{}{}) are more than the 32 (1024 threads) a "
                              "CTA can hold: launch fewer num_warps",
                              name, warps, opts.num_warps,
                              out.programs_per_cta > 1 ? fmt::format(" x {} programs", out.programs_per_cta) : "",
                              out.producer_warps ? fmt::format(" + {} producer warps", out.producer_warps) : ""));
    out.tensor_maps = runtime::serializeTensorMaps(tensorMapsOf(*module, impl_->params));
    if (auto sites = (*module)->getAttrOfType<ArrayAttr>("tegula.error_sites"))
      for (Attribute site : sites)
        out.error_sites.push_back(cast<StringAttr>(site).str());
    backend::Target target{opts.chip, /*features: the chip's=*/"", 3};
    out.ptx = backend::translateToPtx(*module, target);
    if (dumpEnabled("ptx"))
      dumpStage(name, "ptx", out.ptx);
    if (assemble) {
      backend::Cubin cubin = backend::assemble(out.ptx, target);
      out.cubin = std::move(cubin.data);
      out.ptxas_log = cubin.log;
      for (const auto &k : cubin.kernels)
        if (k.kernel == name) {
          out.registers = k.registers;
          out.shared_bytes = k.sharedBytes;
          out.spill_bytes = k.spillStoreBytes + k.spillLoadBytes;
        }
      if (dumpEnabled("sass")) {
        std::string sass;
        try {
          sass = out.sass();
        } catch (const Error &e) { // a missing nvdisasm must not fail the compile
          sass = fmt::format("(no SASS: {})", e.what());
        }
        dumpStage(name, "sass", sass);
      }
    }
    return serialize(out);
  };
  if (spec.tileText.empty())
    spec.tileText = printModule(*spec.tile);
  runtime::CacheKey key{spec.tileText, optionKey, opts.chip, compilerIdentity(),
                        assemble ? backend::ptxasVersion() : "none"};
  if (dumping)
    return deserialize(compileNow());
  auto compiled = std::make_shared<const CompiledKernel>(
      deserialize(kernelCache().getOrCompile(key, compileNow)));
  spec.compiled.emplace(optionKey, compiled);
  return *compiled;
}

namespace {
/// The lowered module of `tile`, instrumented and JIT-compiled for the
/// simulator.
std::shared_ptr<sim::SimKernel> simulate(const std::string &name, ModuleOp tile,
                                         const GpuPipelineOptions &options) {
  OwningOpRef<ModuleOp> module = lowerForGpu(name, tile, options);
  auto simulated = sim::SimKernel::prepare(module->getOperation(), name, options.chip);
  if (dumpEnabled("sim"))
    dumpStage(name, "sim", simulated->instrumentedIR());
  return simulated;
}

} // namespace

namespace {
/// `opts.backend`, else $TEGULA_BACKEND, else the interpreter.
Backend backendOf(const LaunchOptions &opts, const Switches &env) {
  if (opts.backend)
    return *opts.backend;
  if (env.backend && *env.backend)
    try {
      return parse_backend(env.backend);
    } catch (const Error &e) {
      throw Error(fmt::format("TEGULA_BACKEND={}: {}", env.backend, e.what()));
    }
  return Backend::Interp;
}

/// The simulator's target: `opts.chip`, else $TEGULA_SIM_CHIP (the whole
/// program's simulated code for another target, e.g. sm_90a), else sm_80.
std::string simChipOf(const LaunchOptions &opts, const Switches &env) {
  const std::string chip =
      !opts.chip.empty() ? opts.chip : env.simChip && *env.simChip ? std::string(env.simChip) : "sm_80";
  backend::ptxFeaturesFor(chip); // a chip Tegula does not compile for is named here, as compile names it
  return chip;
}
} // namespace

std::string Kernel::launch_target(const LaunchOptions &opts) const {
  const Switches env = Switches::read();
  const Backend backend = backendOf(opts, env);
  if (backend == Backend::Interp)
    return "interp";
  std::string where;
  if (backend == Backend::GPU) {
    const runtime::GpuDevice &device = runtime::currentDevice();
    where = fmt::format("gpu {} {}", device.name, opts.chip.empty() ? device.chip() : opts.chip);
  } else {
    where = "sim " + simChipOf(opts, env);
  }
  const detail::CodePaths paths = env.paths();
  std::string target = fmt::format("{}{}{}{}{}{}{}", where, paths.wgmma ? "" : " no-wgmma", paths.tma ? "" : " no-tma",
                     paths.overlapDots ? "" : " no-overlap-dots", paths.warpgroupTurns ? " warpgroup-turns" : "",
                     env.warpSpecialize ? " ws" : "", env.pingPong ? " pp" : "");
  if (env.clusterSize && *env.clusterSize && std::string_view(env.clusterSize) != "1")
    target += fmt::format(" cluster{}", env.clusterSize);
  return target;
}

std::shared_ptr<runtime::LoadedKernel> Kernel::loadOnGpu(detail::Specialization &spec, const LaunchOptions &opts,
                                                          const std::vector<Arg> &args, const Switches &env,
                                                          int clusterSize) const {
  const runtime::GpuDevice &device = runtime::currentDevice(); // "no CUDA driver" here
  CompileOptions copts{.chip = opts.chip.empty() ? device.chip() : opts.chip,
                       .num_warps = opts.num_warps,
                       .num_stages = opts.num_stages,
                       .warp_specialize = opts.warp_specialize || env.warpSpecialize,
                       .ping_pong = opts.ping_pong || env.pingPong,
                       .cluster_size = clusterSize,
                       .max_registers = opts.max_registers};
  copts.warp_specialize = copts.warp_specialize || copts.ping_pong;
  const detail::LoadedKey key{copts.chip, copts.num_warps, copts.num_stages, env.paths().key(),
                              copts.warp_specialize, copts.ping_pong, copts.cluster_size, copts.max_registers};
  {
    std::lock_guard<std::mutex> lock(spec.compileMutex);
    // (A load that threw left its slot empty.)
    if (auto it = spec.loaded.find(key); it != spec.loaded.end() && it->second)
      return it->second; // the fast path: no copy of the compiled binary
  }
  CompiledKernel compiled = compile(args, copts, env.paths());
  std::lock_guard<std::mutex> lock(spec.compileMutex);
  auto &slot = spec.loaded[key];
  if (!slot)
    slot = runtime::LoadedKernel::load(compiled.cubin, compiled.ptx, impl_->name, compiled.dynamic_shared_bytes,
                                       runtime::parseTensorMaps(compiled.tensor_maps), compiled.producer_warps,
                                       compiled.programs_per_cta, compiled.cluster_size, compiled.error_sites);
  return slot;
}

int Kernel::max_resident_programs(const LaunchOptions &opts, const std::vector<Arg> &args) const {
  detail::Specialization &spec = impl_->specialize(args);
  const Switches env = Switches::read();
  if (backendOf(opts, env) != Backend::GPU)
    throw Error(fmt::format("kernel '{}': max_resident_programs asks the CUDA driver how many programs fit on the "
                            "GPU at once; this launch runs on the {} (launch on the GPU backend, or size the grid "
                            "yourself there)",
                            impl_->name, backendOf(opts, env) == Backend::Sim ? "CTA simulator" : "CPU interpreter"));
  detail::checkMaxRegisters(opts.max_registers, impl_->name);
  detail::checkWarpsAndStages(opts.num_warps, opts.num_stages, impl_->name);
  const int clusterSize =
      env.clusterSizeFor(opts.cluster_size, spec.usesClusters, opts.ping_pong || env.pingPong, impl_->name);
  std::shared_ptr<runtime::LoadedKernel> kernel = loadOnGpu(spec, opts, args, env, clusterSize);
  return runtime::maxResidentCtas(*kernel, opts.num_warps) * kernel->programsPerCta();
}

namespace {
/// A bool scalar (or constant) given as an integer: any nonzero is true, on
/// every backend - compiled code reads the low bit of its byte, so 2 would
/// be false on the GPU and the simulator's `where` gave neither branch. A
/// copy of `args` with such values made 0 or 1, or `args` when none is.
const std::vector<Arg> &boolsAsZeroOrOne(const std::vector<ParamInfo> &params, const std::vector<Arg> &args,
                                         std::vector<Arg> &copy) {
  for (size_t i = 0; i < params.size() && i < args.size(); ++i) {
    if (params[i].kind == ParamInfo::Kind::Pointer || params[i].dtype != DType::i1 ||
        args[i].kind() != Arg::Kind::Int)
      continue;
    const int64_t v = args[i].as_int();
    if (v == 0 || v == 1)
      continue;
    if (copy.empty())
      copy = args;
    copy[i] = Arg(v != 0);
  }
  return copy.empty() ? args : copy;
}
} // namespace

void Kernel::launch(const LaunchOptions &opts, const std::vector<Arg> &given) const {
  std::vector<Arg> normalized;
  const std::vector<Arg> &args = boolsAsZeroOrOne(impl_->params, given, normalized);
  detail::Specialization &spec = impl_->specialize(args);
  const Switches env = Switches::read();
  const Backend backend = backendOf(opts, env);
  const int clusterSize =
      env.clusterSizeFor(opts.cluster_size, spec.usesClusters, opts.ping_pong || env.pingPong, impl_->name);
  // CUDA's limits, on every backend: a grid the GPU refuses fails here too.
  if (opts.grid.x > 2147483647u || opts.grid.y > 65535u || opts.grid.z > 65535u)
    throw Error(fmt::format("kernel '{}': grid ({}, {}, {}) is larger than a GPU launches (x up to 2147483647, "
                            "y and z up to 65535); fold the extra programs into x",
                            impl_->name, opts.grid.x, opts.grid.y, opts.grid.z));
  // Checked on every backend (the CPU ones ignore the cap), so a launch the
  // GPU would refuse fails in the interpreter and the simulator too.
  detail::checkMaxRegisters(opts.max_registers, impl_->name);
  detail::checkWarpsAndStages(opts.num_warps, opts.num_stages, impl_->name);
  // A chip no backend compiles for is a mistake on the interpreter too (it
  // ignores the chip): the same launch would fail on the GPU.
  if (!opts.chip.empty())
    backend::ptxFeaturesFor(opts.chip);
  // Every backend holds a cluster launch to CUDA's rules, so a kernel
  // behaves the same everywhere.
  if (clusterSize > 1 && opts.grid.x % unsigned(clusterSize) != 0)
    throw Error(fmt::format("kernel '{}': grid.x = {} is not a multiple of cluster_size {} (a thread-block "
                            "cluster's programs are consecutive along x)",
                            impl_->name, opts.grid.x, clusterSize));
  // An empty grid (n = 0 elements: cdiv(0, BLOCK) programs) runs nothing,
  // as in Triton - after every check above, so a bad launch still fails.
  if (opts.grid.x == 0 || opts.grid.y == 0 || opts.grid.z == 0)
    return;
  // Only the GPU reads device memory; the CPU backends would need copies the
  // caller did not ask for.
  if (backend != Backend::GPU)
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].on_device())
        throw Error(fmt::format(
            "argument '{}' (#{}) of kernel '{}' is in device memory (a DeviceBuffer or a device "
            "array), but this launch runs on the {}, which reads host memory: pass a host buffer "
            "(download() it, or .cpu() / .get() in Python), or launch on the GPU backend "
            "(Backend::GPU, backend=\"gpu\")",
            impl_->paramNames[i], i, impl_->name,
            backend == Backend::Sim ? "CTA simulator" : "CPU interpreter"));
  switch (backend) {
  case Backend::Interp: {
    interp::Launch launch;
    launch.kernelName = impl_->name;
    launch.grid = opts.grid;
    launch.clusterSize = clusterSize;
    launch.args = &args;
    launch.paramNames = impl_->paramNames;
    for (size_t i = 0; i < impl_->params.size(); ++i)
      if (impl_->params[i].kind != ParamInfo::Kind::Constant)
        launch.argIndex.push_back(i);
    auto fn = *spec.tile->getOps<func::FuncOp>().begin();
    interp::run(fn, launch);
    return;
  }
  case Backend::GPU: {
    std::shared_ptr<runtime::LoadedKernel> kernel = loadOnGpu(spec, opts, args, env, clusterSize);
    runtime::launchKernel(*kernel, opts.grid, opts.num_warps, impl_->params, args, opts.stream,
                          impl_->paramNames);
    return;
  }
  case Backend::Sim: {
    std::shared_ptr<sim::SimKernel> simulated;
    {
      std::lock_guard<std::mutex> lock(spec.compileMutex);
      const std::string chip = simChipOf(opts, env);
      const detail::CodePaths paths = env.paths();
      const GpuPipelineOptions pipeline{.numWarps = opts.num_warps,
                                        .numStages = opts.num_stages,
                                        .chip = chip,
                                        .warpSpecialize = opts.warp_specialize || env.warpSpecialize ||
                                                          opts.ping_pong || env.pingPong,
                                        .pingPong = opts.ping_pong || env.pingPong,
                                        .clusterSize = clusterSize,
                                        .useWgmma = paths.wgmma,
                                        .useTma = paths.tma,
                                        .overlapDots = paths.overlapDots,
                                        .warpgroupTurns = paths.warpgroupTurns};
      std::shared_ptr<sim::SimKernel> &slot =
          spec.simulated[{chip, pipeline.numWarps, pipeline.numStages, paths.key(),
                          pipeline.warpSpecialize, pipeline.pingPong, pipeline.clusterSize, 0}];
      if (!slot)
        slot = simulate(impl_->name, *spec.tile, pipeline);
      simulated = slot;
    }
    simulated->run(opts.grid, impl_->params, impl_->paramNames, args);
    return;
  }
  }
}

} // namespace tegula
