//===- StopWithReport.cpp - a kernel stops and says why -------------------===//
#include "compiler/transforms/StopWithReport.h"

#include "compiler/SourceLine.h"

#include "runtime/DeviceErrorReport.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <fmt/format.h>

using namespace mlir;

namespace tegula::lowering {
namespace {

/// The site's number in the module's table, adding it when new.
int64_t siteNumber(ModuleOp module, const std::string &text) {
  SmallVector<Attribute> sites;
  if (auto existing = module->getAttrOfType<ArrayAttr>("tegula.error_sites"))
    llvm::append_range(sites, existing.getValue());
  for (auto [i, s] : llvm::enumerate(sites))
    if (cast<StringAttr>(s).getValue() == text)
      return int64_t(i);
  sites.push_back(StringAttr::get(module.getContext(), text));
  module->setAttr("tegula.error_sites", ArrayAttr::get(module.getContext(), sites));
  return int64_t(sites.size()) - 1;
}

/// A zero-initialised module global in device memory the runtime finds by
/// name; `word` says which (runtime::kErrorWordAttr).
void declareGlobal(OpBuilder &b, ModuleOp module, StringRef name, Type type, int64_t alignment, int32_t word) {
  if (module.lookupSymbol(name))
    return;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto global = LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/false, LLVM::Linkage::External,
                                       name, b.getIntegerAttr(type, 0), uint64_t(alignment), /*addrSpace=*/1);
  global->setAttr(runtime::kErrorWordAttr, b.getI32IntegerAttr(word));
}

/// The kernel the builder is in: the report's globals are named after it.
StringRef kernelName(OpBuilder &b) {
  Operation *op = b.getInsertionBlock()->getParentOp();
  auto fn = isa<FunctionOpInterface>(op) ? cast<FunctionOpInterface>(op) : op->getParentOfType<FunctionOpInterface>();
  return fn.getName();
}

/// The simulator leaves these accesses alone: they are the report's own.
template <class Op> Op mark(Op op) {
  op->setAttr("tegula.error_report", UnitAttr::get(op->getContext()));
  return op;
}

} // namespace

Operation *stopWithReport(OpBuilder &b, Location loc, StringRef message, ValueRange program, ValueRange index) {
  ModuleOp module = b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  const int64_t site = siteNumber(module, siteText(loc, message));
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto global = LLVM::LLVMPointerType::get(ctx, 1), generic = LLVM::LLVMPointerType::get(ctx);
  const std::string claimName = runtime::errorClaimGlobal(kernelName(b));
  const std::string reportName = runtime::errorReportGlobal(kernelName(b));
  declareGlobal(b, module, claimName, i32, 4, /*word=*/1);
  declareGlobal(b, module, reportName, i64, 8, /*word=*/0);
  auto constant = [&](Type t, int64_t v) { return LLVM::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, v)); };

  // The claim is an atomic in device memory: PCIe need not carry atomics to
  // the host's.
  Value claim = LLVM::AddressOfOp::create(b, loc, global, claimName);
  auto cas = mark(LLVM::AtomicCmpXchgOp::create(b, loc, claim, constant(i32, 0), constant(i32, 1),
                                                LLVM::AtomicOrdering::monotonic, LLVM::AtomicOrdering::monotonic));
  Value won = LLVM::ExtractValueOp::create(b, loc, cas, 1);
  auto ifWon = scf::IfOp::create(b, loc, won, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifWon.thenBlock());
    Value slot = LLVM::AddressOfOp::create(b, loc, global, reportName);
    Value address = mark(LLVM::LoadOp::create(b, loc, i64, slot));
    // 0: no runtime gave the module a record (a cubin loaded elsewhere).
    auto ifRecord = scf::IfOp::create(
        b, loc, LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, address, constant(i64, 0)),
        /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifRecord.thenBlock());
    Value record = LLVM::IntToPtrOp::create(b, loc, generic, address);
    auto put = [&](int64_t offset, Value v) {
      Value at = LLVM::GEPOp::create(b, loc, generic, b.getI8Type(), record, ArrayRef<LLVM::GEPArg>{int32_t(offset)});
      mark(LLVM::StoreOp::create(b, loc, v, at, /*alignment=*/4, /*isVolatile=*/true));
    };
    for (auto [i, p] : llvm::enumerate(program))
      put(runtime::kErrorReportProgramOffset + 4 * int64_t(i), p);
    const int64_t rank = std::min<int64_t>(int64_t(index.size()), runtime::kErrorReportMaxRank);
    put(runtime::kErrorReportRankOffset, constant(i32, rank));
    for (int64_t i = 0; i < rank; ++i)
      put(runtime::kErrorReportIndexOffset + 4 * i, index[size_t(i)]);
    // The site last, after the rest is visible: the host reads a record
    // whose site is set as whole.
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::seq_cst);
    put(runtime::kErrorReportSiteOffset, constant(i32, site + 1));
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::seq_cst);
    // Another thread reports; its trap stops this one's grid too. Until it
    // lands (microseconds) this one waits, about 4 ms, then traps itself:
    // exiting would release barriers the others wait at, and their work on
    // what this thread never made could fault before the report is out.
    // Four sleeps, not a loop, which LLVM would unroll at every site.
    b.setInsertionPointToStart(ifWon.elseBlock());
    Value millisecond = constant(i32, 1000000); // the longest one sleep takes
    for (int i = 0; i < 4; ++i)
      NVVM::NanosleepOp::create(b, loc, millisecond);
  }
  return LLVM::Trap::create(b, loc);
}

} // namespace tegula::lowering
