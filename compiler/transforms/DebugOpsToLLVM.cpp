//===- DebugOpsToLLVM.cpp - tile.print and tile.assert on the GPU ---------===//
//
// print: every element once, by the thread and register that own it, as
// `[kernel] pid (x, y, z) idx (i, j) PREFIX value` (a scalar by thread 0), through
// CUDA's vprintf: the format string is a module constant, the arguments go
// through a local buffer (floats widened to double).
// assert: where the condition is false, stop with a report (the program and
// the element; StopWithReport.h): the launch fails with `FILE:LINE: device
// assertion failed: MESSAGE (pid (x, y, z) idx (i))`. No vprintf: a call
// makes ptxas serialise a kernel's wgmmas.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LoweringCommon.h"
#include "compiler/transforms/StopWithReport.h"
#include "runtime/DeviceErrorReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <fmt/format.h>

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::lowering {
namespace {

LLVM::LLVMFuncOp getOrInsertVprintf(OpBuilder &b, ModuleOp module) {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>("vprintf"))
    return fn;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  return LLVM::LLVMFuncOp::create(b, module.getLoc(), "vprintf",
                                  LLVM::LLVMFunctionType::get(b.getI32Type(), {ptr, ptr}));
}

Value formatString(OpBuilder &b, Location loc, ModuleOp module, const std::string &text) {
  static int counter = 0; // names only need to be unique within a module
  std::string name;
  do {
    name = fmt::format("tegula_printf_{}", counter++);
  } while (module.lookupSymbol(name));
  std::string bytes = text + '\0';
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal, name,
                           b.getStringAttr(bytes), /*alignment=*/1, /*addrSpace=*/0);
  }
  return LLVM::AddressOfOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), name);
}

/// The printf conversion and the value vprintf receives for `v`.
std::pair<std::string, Value> printable(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  if (isa<LLVM::LLVMPointerType>(t))
    return {"%p", v};
  if (isa<FloatType>(t)) // %g, as the interpreter prints: "28", "0.1", "1e-07"
    return {"%g", t.isF64() ? v : LLVM::FPExtOp::create(b, loc, b.getF64Type(), v).getResult()};
  unsigned w = t.getIntOrFloatBitWidth();
  if (w == 64)
    return {"%lld", v};
  if (w == 1)
    return {"%d", LLVM::ZExtOp::create(b, loc, b.getI32Type(), v).getResult()};
  if (w < 32)
    return {"%d", LLVM::SExtOp::create(b, loc, b.getI32Type(), v).getResult()};
  return {"%d", v};
}

/// vprintf(text, {pid, idx..., value?}) under `cond`.
void printIf(ConversionPatternRewriter &rw, Location loc, Operation *fn, Value cond,
             const std::string &text, ArrayRef<Value> args) {
  auto module = fn->getParentOfType<ModuleOp>();
  LLVM::LLVMFuncOp vprintf = getOrInsertVprintf(rw, module);
  Type ptr = LLVM::LLVMPointerType::get(rw.getContext());
  auto ifOp = scf::IfOp::create(rw, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Type> types;
  for (Value a : args)
    types.push_back(a.getType());
  auto structType = LLVM::LLVMStructType::getLiteral(rw.getContext(), types);
  Value buffer;
  {
    // One buffer per call site, allocated at the function's entry.
    OpBuilder::InsertionGuard entry(rw);
    rw.setInsertionPointToStart(&fn->getRegion(0).front());
    buffer = LLVM::AllocaOp::create(rw, loc, ptr, structType, i32Const(rw, loc, 1));
  }
  for (auto [i, a] : llvm::enumerate(args)) {
    Value field = LLVM::GEPOp::create(rw, loc, ptr, structType, buffer,
                                      ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
    LLVM::StoreOp::create(rw, loc, a, field);
  }
  LLVM::CallOp::create(rw, loc, vprintf, ValueRange{formatString(rw, loc, module, text), buffer});
}

Operation *enclosingFunction(Operation *op) {
  if (Operation *fn = op->getParentOfType<func::FuncOp>())
    return fn;
  return op->getParentOfType<LLVM::LLVMFuncOp>();
}

std::string indexFormat(RankedTensorType t) {
  std::string f = " idx (";
  for (int64_t d = 0; d < t.getRank(); ++d)
    f += d ? ", %d" : "%d";
  return f + ")";
}

struct AssertPattern : OpConversionPattern<tile::AssertOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::AssertOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Operation *fn = enclosingFunction(op);
    if (!fn)
      return rw.notifyMatchFailure(op, "assert outside a kernel");
    Type i32 = rw.getI32Type();
    SmallVector<Value> pid = {programIdX(rw, loc),
                              NVVM::BlockIdYOp::create(rw, loc, i32),
                              NVVM::BlockIdZOp::create(rw, loc, i32)};
    Value one = LLVM::ConstantOp::create(rw, loc, rw.getI1Type(), rw.getBoolAttr(true));
    const std::string message = runtime::deviceAssertionMessage(op.getMessage().str());
    auto stopIf = [&](Value failed, ValueRange index) {
      auto ifOp = scf::IfOp::create(rw, loc, failed, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(rw);
      rw.setInsertionPointToStart(ifOp.thenBlock());
      stopWithReport(rw, loc, message, pid, index);
    };
    auto tensor = dyn_cast<RankedTensorType>(op.getCond().getType());
    if (!tensor) {
      stopIf(LLVM::XOrOp::create(rw, loc, adaptor.getCond()[0], one), {});
      rw.eraseOp(op);
      return success();
    }
    // One stop per thread, for its first failing element: the registers'
    // failures and coordinates folded from the last to the first (a stop
    // per register was as much cold code as the tile has registers).
    LinearLayout ll = layoutOf(tensor);
    Owners owners = ownersOf(rw, loc, ll);
    auto coords = coordinates(rw, loc, ll);
    Value anyFailed;
    SmallVector<Value> index;
    for (int32_t r = ll.inDimSize("register") - 1; r >= 0; --r) {
      if (r & owners.duplicateRegisters)
        continue;
      Value failed = LLVM::XOrOp::create(rw, loc, adaptor.getCond()[size_t(r)], one);
      const auto &at = coords[size_t(r)];
      if (!anyFailed) {
        anyFailed = failed;
        index.assign(at.begin(), at.end());
        continue;
      }
      for (auto [i, c] : llvm::enumerate(at))
        index[i] = LLVM::SelectOp::create(rw, loc, failed, c, index[i]);
      anyFailed = LLVM::OrOp::create(rw, loc, failed, anyFailed);
    }
    stopIf(LLVM::AndOp::create(rw, loc, anyFailed, owners.threadOwns), index);
    rw.eraseOp(op);
    return success();
  }
};

struct PrintPattern : OpConversionPattern<tile::PrintOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::PrintOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Operation *fn = enclosingFunction(op);
    if (!fn)
      return rw.notifyMatchFailure(op, "print outside a kernel");
    Type i32 = rw.getI32Type();
    Value pid[3] = {programIdX(rw, loc), NVVM::BlockIdYOp::create(rw, loc, i32),
                    NVVM::BlockIdZOp::create(rw, loc, i32)};
    Value tid = programThreadIndex(rw, loc);
    Value thread0 = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq, tid, i32Const(rw, loc, 0));
    // "[kernel]" first, as the interpreter prints: launches' lines interleave.
    std::string kernelName;
    for (char c : cast<SymbolOpInterface>(fn).getName().str())
      kernelName += c == '%' ? std::string("%%") : std::string(1, c);

    auto emit = [&](Value cond, const std::string &idxFormat, ArrayRef<Value> idx, Value value) {
      std::string conv;
      SmallVector<Value> args = {pid[0], pid[1], pid[2]};
      args.append(idx.begin(), idx.end());
      if (value) {
        OpBuilder::InsertionGuard guard(rw);
        auto [c, arg] = printable(rw, loc, value);
        conv = c;
        args.push_back(arg);
      }
      // "v =" and the value are separated by a space, as the interpreter prints.
      std::string prefix = op.getPrefix().str();
      if (!prefix.empty() && !conv.empty() && prefix.back() != ' ')
        prefix += ' ';
      printIf(rw, loc, fn, cond,
              fmt::format("[{}] pid (%d, %d, %d){} {}{}\n", kernelName, idxFormat, prefix, conv), args);
    };

    for (auto [operand, values] : llvm::zip(op.getArgs(), adaptor.getArgs())) {
      auto tensor = dyn_cast<RankedTensorType>(operand.getType());
      if (!tensor) {
        emit(thread0, "", {}, values[0]);
        continue;
      }
      LinearLayout ll = layoutOf(tensor);
      Owners owners = ownersOf(rw, loc, ll);
      auto coords = coordinates(rw, loc, ll);
      std::string idxFormat = indexFormat(tensor);
      for (int32_t r = 0; r < ll.inDimSize("register"); ++r)
        if (!(r & owners.duplicateRegisters))
          emit(owners.threadOwns, idxFormat, coords[size_t(r)], values[size_t(r)]);
    }
    if (op.getArgs().empty())
      emit(thread0, "", {}, Value());
    rw.eraseOp(op);
    return success();
  }
};

} // namespace

void populatePrintPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<PrintPattern, AssertPattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
