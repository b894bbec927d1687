//===- HostJit.cpp - compile a simulated kernel for this CPU --------------===//
#include "simulator/HostJit.h"

#include "simulator/HostFunctions.h"
#include "tegula/error.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tegula::sim {

struct HostJit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

namespace {

constexpr const char *kEntryName = "__tegula_sim_entry";

void initHostTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

std::string errorText(llvm::Error e) { return llvm::toString(std::move(e)); }

/// One builder for both the object we compile and the JIT that links it.
llvm::orc::JITTargetMachineBuilder targetMachineBuilder() {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  llvm::orc::JITTargetMachineBuilder jtmb(triple);
  jtmb.setCPU(HostJit::targetCpu());
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  jtmb.setCodeModel(llvm::CodeModel::Small);
  return jtmb;
}

/// `void __tegula_sim_entry(void **args)`: loads each argument through
/// args[i] and calls the kernel, so the runtime can call any signature.
void addPackedEntry(llvm::Module &m, llvm::Function &kernel) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto *entry = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, kEntryName, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<llvm::Value *> args;
  for (llvm::Argument &param : kernel.args()) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptr, entry->getArg(0), param.getArgNo());
    args.push_back(b.CreateLoad(param.getType(), b.CreateLoad(ptr, slot)));
  }
  b.CreateCall(&kernel, args);
  b.CreateRetVoid();
}

/// The symbols an object file uses but does not define.
std::vector<std::string> undefinedSymbols(const llvm::MemoryBuffer &object) {
  auto file = llvm::object::ObjectFile::createObjectFile(object.getMemBufferRef());
  if (!file)
    throw Error("simulator: cannot read the compiled object: " + errorText(file.takeError()));
  std::set<std::string> names;
  for (const llvm::object::SymbolRef &symbol : (*file)->symbols()) {
    auto flags = symbol.getFlags();
    if (!flags) {
      llvm::consumeError(flags.takeError());
      continue;
    }
    if (!(*flags & llvm::object::SymbolRef::SF_Undefined))
      continue;
    auto name = symbol.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    // The linker itself provides the GOT.
    if (!name->empty() && *name != "_GLOBAL_OFFSET_TABLE_")
      names.insert(name->str());
  }
  return {names.begin(), names.end()};
}

} // namespace

const char *HostJit::targetCpu() {
  // A fixed baseline, not the host's own model: the machine code, and the
  // library calls the code generator chooses (bf16/f16 conversions, fma,
  // roundf, ...), must not depend on which machine runs the simulator.
  return llvm::Triple(llvm::sys::getProcessTriple()).getArch() == llvm::Triple::x86_64
             ? "x86-64-v2"
             : "generic";
}

HostJit::~HostJit() = default;

std::unique_ptr<HostJit> HostJit::compile(mlir::ModuleOp module, const std::string &kernel) {
  initHostTarget();
  auto fail = [&](const std::string &what) {
    return Error(fmt::format("simulator: compiling kernel '{}' for the host failed: {}", kernel, what));
  };

  llvm::orc::JITTargetMachineBuilder jtmb = targetMachineBuilder();
  auto tm = jtmb.createTargetMachine();
  if (!tm)
    throw fail(errorText(tm.takeError()));

  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule = mlir::translateModuleToLLVMIR(module, *context, kernel);
  if (!llvmModule)
    throw fail("the module does not translate to LLVM IR");
  llvmModule->setDataLayout((*tm)->createDataLayout());
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  llvm::Function *fn = llvmModule->getFunction(kernel);
  if (!fn || fn->isDeclaration())
    throw Error(fmt::format("simulator: the module has no kernel '{}'", kernel));
  addPackedEntry(*llvmModule, *fn);

  // O2: the simulated code runs once per thread per CTA; its compile time
  // is small next to that.
  if (llvm::Error e = mlir::makeOptimizingTransformer(2, 0, tm->get())(llvmModule.get()))
    throw fail(errorText(std::move(e)));
  llvm::orc::SimpleCompiler compiler(**tm);
  auto object = compiler(*llvmModule);
  if (!object)
    throw fail(errorText(object.takeError()));

  auto result = std::unique_ptr<HostJit>(new HostJit());
  result->external_ = undefinedSymbols(**object);
  std::vector<std::pair<std::string, void *>> table = hostSymbols();
  std::vector<std::string> missing;
  for (const std::string &name : result->external_)
    if (std::none_of(table.begin(), table.end(), [&](auto &entry) { return entry.first == name; }))
      missing.push_back(name);
  if (!missing.empty())
    throw Error(fmt::format(
        "simulator: kernel '{}' calls {} the simulator does not provide: {} (its host symbol "
        "table is simulator/HostFunctions.cpp; nothing is taken from the process)",
        kernel, missing.size() == 1 ? "a function" : "functions", fmt::join(missing, ", ")));

  // Link against the table alone: no process symbols, no platform runtime.
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(jtmb))
                 .setLinkProcessSymbolsByDefault(false)
                 .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
                 .create();
  if (!jit)
    throw fail(errorText(jit.takeError()));
  llvm::orc::SymbolMap symbols;
  for (auto &[name, address] : table)
    symbols[(*jit)->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                              llvm::JITSymbolFlags::Exported};
  if (llvm::Error e = (*jit)->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))))
    throw fail(errorText(std::move(e)));
  if (llvm::Error e = (*jit)->addObjectFile(std::move(*object)))
    throw fail(errorText(std::move(e)));
  auto entry = (*jit)->lookup(kEntryName);
  if (!entry)
    throw fail(errorText(entry.takeError()));
  result->entry_ = entry->toPtr<Entry>();
  result->impl_ = std::make_unique<Impl>();
  result->impl_->jit = std::move(*jit);
  return result;
}

} // namespace tegula::sim
