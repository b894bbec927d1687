//===- InstrumentForSimulator.cpp - make lowered GPU code run on the host -===//
//
// Pass `instrument-for-simulator`: rewrites the per-thread LLVM + NVVM module
// the GPU back end would translate to PTX into one the host JIT can run, by
// changing only what a CPU lacks:
//   - special registers, bar.sync and shfl.sync become calls into the
//     simulator runtime (which runs each thread as a fiber);
//   - each inline PTX body is checked against the simulator's PTX subset and
//     becomes a call that interprets exactly that text;
//   - every global and shared load/store is preceded by a checking call
//     (bounds, alignment, read-only buffers, races);
//   - shared-memory globals become offsets into the CTA's shared memory, and
//     all address spaces become the host's one;
//   - traps report instead of killing the process.
// Every instrumented op gets a "site" (what it is, and the user's source
// line), listed in the module attribute `tegula.sim.sites`; the inline PTX
// bodies are listed in `tegula.sim.asm`; `tegula.sim.shared_bytes` is the
// shared memory a CTA needs.
//
//===----------------------------------------------------------------------===//
#include "simulator/InstrumentForSimulator.h"

#include "compiler/SourceLine.h"
#include "simulator/HostFunctions.h"
#include "simulator/PtxAsm.h"
#include "simulator/Runtime.h"
#include "simulator/TensorCore.h"
#include "tegula/error.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <map>
#include <set>

#include <fmt/format.h>

using namespace mlir;

namespace tegula::sim {
namespace {

std::string oneLine(llvm::StringRef text, size_t max = 72) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\t')
      c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' '))
      continue;
    out += c;
  }
  return out.size() > max ? out.substr(0, max - 3) + "..." : out;
}

/// What an inline-PTX site does, for error reports: its first memory
/// instruction, said in words ("a predicated load, ld.global.b32") - the
/// lowering's masked loads and stores are inline PTX, and quoting their
/// register shuffling says little. Other asm is quoted.
std::string describeInlinePtx(llvm::StringRef body) {
  llvm::SmallVector<llvm::StringRef> statements;
  body.split(statements, ';');
  for (llvm::StringRef statement : statements) {
    statement = statement.trim(" \t\n{}");
    const bool predicated = statement.starts_with("@");
    if (predicated)
      statement = statement.drop_until([](char c) { return c == ' ' || c == '\t'; }).trim();
    const llvm::StringRef op = statement.take_until([](char c) { return c == ' ' || c == '\t'; });
    const char *what = op.starts_with("ld.")              ? "load"
                       : op.starts_with("st.")            ? "store"
                       : op.starts_with("atom.") || op.starts_with("red.") ? "atomic"
                       : op.starts_with("cp.async.bulk")  ? "bulk copy"
                       : op.starts_with("cp.async")       ? "asynchronous copy"
                                                          : nullptr;
    if (what)
      return fmt::format("a {}{}, {} (inline PTX)", predicated ? "predicated " : "", what, op.str());
  }
  return "inline PTX `" + oneLine(body) + "`";
}

const std::map<llvm::StringRef, SpecialRegister> &specialRegisters() {
  static const std::map<llvm::StringRef, SpecialRegister> m = {
      {"nvvm.read.ptx.sreg.tid.x", SpecialRegister::TidX},
      {"nvvm.read.ptx.sreg.tid.y", SpecialRegister::TidY},
      {"nvvm.read.ptx.sreg.tid.z", SpecialRegister::TidZ},
      {"nvvm.read.ptx.sreg.ntid.x", SpecialRegister::NTidX},
      {"nvvm.read.ptx.sreg.ntid.y", SpecialRegister::NTidY},
      {"nvvm.read.ptx.sreg.ntid.z", SpecialRegister::NTidZ},
      {"nvvm.read.ptx.sreg.ctaid.x", SpecialRegister::CtaIdX},
      {"nvvm.read.ptx.sreg.ctaid.y", SpecialRegister::CtaIdY},
      {"nvvm.read.ptx.sreg.ctaid.z", SpecialRegister::CtaIdZ},
      {"nvvm.read.ptx.sreg.nctaid.x", SpecialRegister::NCtaIdX},
      {"nvvm.read.ptx.sreg.nctaid.y", SpecialRegister::NCtaIdY},
      {"nvvm.read.ptx.sreg.nctaid.z", SpecialRegister::NCtaIdZ},
      {"nvvm.read.ptx.sreg.laneid", SpecialRegister::LaneId},
      {"nvvm.read.ptx.sreg.warpid", SpecialRegister::WarpId},
      {"nvvm.read.ptx.sreg.nwarpid", SpecialRegister::NWarpId},
  };
  return m;
}

struct InstrumentForSimulatorPass
    : PassWrapper<InstrumentForSimulatorPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InstrumentForSimulatorPass)
  StringRef getArgument() const final { return "instrument-for-simulator"; }
  StringRef getDescription() const final {
    return "Rewrite lowered LLVM + NVVM code to run on the host under the CTA simulator";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect>();
  }

  ModuleOp module;
  SmallVector<Attribute> sites, asmBodies;
  Type ptrType, i32, i64;

  int32_t addSite(Operation *op, const std::string &what) {
    Builder b(op->getContext());
    sites.push_back(b.getStrArrayAttr({what, sourceLine(op->getLoc())}));
    return int32_t(sites.size() - 1);
  }

  Value i32Const(OpBuilder &b, Location loc, int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(int32_t(v)));
  }
  Value i64Const(OpBuilder &b, Location loc, int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
  }

  LLVM::LLVMFuncOp hook(StringRef name, Type result, ArrayRef<Type> args) {
    if (auto f = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
      return f;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Type r = result ? result : LLVM::LLVMVoidType::get(module.getContext());
    return LLVM::LLVMFuncOp::create(b, module.getLoc(), name, LLVM::LLVMFunctionType::get(r, args));
  }

  Value call(OpBuilder &b, Location loc, LLVM::LLVMFuncOp fn, ValueRange args) {
    auto c = LLVM::CallOp::create(b, loc, fn, args);
    return c.getNumResults() ? c.getResult() : Value();
  }

  /// The address a load, store or atomic accesses.
  static Value addressOf(Operation *op) {
    if (auto l = dyn_cast<LLVM::LoadOp>(op))
      return l.getAddr();
    if (auto s = dyn_cast<LLVM::StoreOp>(op))
      return s.getAddr();
    if (auto a = dyn_cast<LLVM::AtomicRMWOp>(op))
      return a.getPtr();
    return cast<LLVM::AtomicCmpXchgOp>(op).getPtr();
  }

  /// Bits of a scalar in an i64 (zero-extended), and back.
  Value toI64(OpBuilder &b, Location loc, Value v) {
    Type t = v.getType();
    if (isa<LLVM::LLVMPointerType>(t))
      return LLVM::PtrToIntOp::create(b, loc, i64, v);
    if (auto f = dyn_cast<FloatType>(t))
      v = LLVM::BitcastOp::create(b, loc, b.getIntegerType(f.getWidth()), v);
    unsigned w = v.getType().getIntOrFloatBitWidth();
    return w == 64 ? v : LLVM::ZExtOp::create(b, loc, i64, v).getResult();
  }
  Value fromI64(OpBuilder &b, Location loc, Value v, Type t) {
    if (isa<LLVM::LLVMPointerType>(t))
      return LLVM::IntToPtrOp::create(b, loc, t, v);
    unsigned w = t.getIntOrFloatBitWidth();
    if (w < 64)
      v = LLVM::TruncOp::create(b, loc, b.getIntegerType(w), v);
    if (isa<FloatType>(t))
      v = LLVM::BitcastOp::create(b, loc, t, v);
    return v;
  }

  /// `n` slots of `elem` in the function's entry block (registers that
  /// the runtime reads or writes through a pointer).
  Value entrySlots(Operation *op, Type elem, size_t n) {
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    OpBuilder entry = OpBuilder::atBlockBegin(&fn.getBody().front());
    auto arrayType = LLVM::LLVMArrayType::get(elem, std::max<size_t>(n, 1));
    return LLVM::AllocaOp::create(entry, op->getLoc(), ptrType, arrayType, i64Const(entry, op->getLoc(), 1));
  }
  void storeSlots(OpBuilder &b, Location loc, Value slots, Type elem, ValueRange values) {
    for (auto [i, v] : llvm::enumerate(values)) {
      Value p = LLVM::GEPOp::create(b, loc, ptrType, elem, slots, ArrayRef<LLVM::GEPArg>{int32_t(i)});
      LLVM::StoreOp::create(b, loc, v, p);
    }
  }
  /// Read `n` slots back as the struct (or, for one, the scalar) `resultType`.
  Value loadSlots(OpBuilder &b, Location loc, Value slots, Type elem, Type resultType) {
    auto s = dyn_cast<LLVM::LLVMStructType>(resultType);
    size_t n = s ? s.getBody().size() : 1;
    SmallVector<Value> values;
    for (size_t i = 0; i < n; ++i) {
      Value p = LLVM::GEPOp::create(b, loc, ptrType, elem, slots, ArrayRef<LLVM::GEPArg>{int32_t(i)});
      values.push_back(LLVM::LoadOp::create(b, loc, elem, p));
    }
    if (!s)
      return values[0];
    Value out = LLVM::UndefOp::create(b, loc, s);
    for (auto [i, v] : llvm::enumerate(values))
      out = LLVM::InsertValueOp::create(b, loc, out, v, ArrayRef<int64_t>{int64_t(i)});
    return out;
  }

  /// nvvm.mma.sync, nvvm.ldmatrix, nvvm.stmatrix and cp.async: the runtime's tensor-core
  /// semantics (TensorCore.h). Only the shapes and types it models.
  LogicalResult rewriteTensorCoreOp(Operation *op, bool &handled) {
    handled = true;
    OpBuilder b(op);
    Location loc = op->getLoc();
    Type f32 = b.getF32Type();
    if (auto mma = dyn_cast<NVVM::MmaOp>(op)) {
      auto shape = mma.getShape();
      std::optional<NVVM::MMATypes> aType = mma.getMultiplicandAPtxType();
      if (!aType)
        aType = NVVM::MmaOp::inferOperandMMAType(
            getElementTypeOrSelf(mma.getOperandA()[0].getType()), false);
      std::optional<MmaKind> kind;
      if (aType == NVVM::MMATypes::f16 && shape.getK() == 16) kind = MmaKind::F16;
      if (aType == NVVM::MMATypes::bf16 && shape.getK() == 16) kind = MmaKind::BF16;
      if (aType == NVVM::MMATypes::tf32 && shape.getK() == 8) kind = MmaKind::TF32;
      if (aType == NVVM::MMATypes::s8 && shape.getK() == 32) kind = MmaKind::S8;
      const NVVM::MMATypes accum = kind == MmaKind::S8 ? NVVM::MMATypes::s32 : NVVM::MMATypes::f32;
      if (!kind || shape.getM() != 16 || shape.getN() != 8 || mma.accumPtxType() != accum ||
          mma.getLayoutA() != NVVM::MMALayout::row || mma.getLayoutB() != NVVM::MMALayout::col)
        return op->emitOpError("is not modelled by the simulator (it has m16n8k16 f16/bf16 and "
                               "m16n8k8 tf32 with f32 accumulators, m16n8k32 s8 with s32, row.col)");
      auto asI32 = [&](ValueRange vs) {
        SmallVector<Value> out;
        for (Value v : vs)
          out.push_back(v.getType().isInteger(32) ? v : LLVM::BitcastOp::create(b, loc, i32, v).getResult());
        return out;
      };
      Value a = entrySlots(op, i32, 4), bb = entrySlots(op, i32, 2), c = entrySlots(op, f32, 4),
            d = entrySlots(op, f32, 4);
      storeSlots(b, loc, a, i32, asI32(mma.getOperandA()));
      storeSlots(b, loc, bb, i32, asI32(mma.getOperandB()));
      // s32 accumulators travel as their bits in the f32 slots.
      SmallVector<Value> cValues;
      for (Value v : mma.getOperandC())
        cValues.push_back(v.getType().isInteger(32) ? LLVM::BitcastOp::create(b, loc, f32, v).getResult() : v);
      storeSlots(b, loc, c, f32, cValues);
      int32_t site = addSite(op, fmt::format("mma.sync.m16n8k{}.{}", shape.getK(),
                                             NVVM::stringifyMMATypes(*aType).str()));
      call(b, loc, hook("__tegula_sim_mma", {}, {i32, ptrType, ptrType, ptrType, ptrType, i32}),
           {i32Const(b, loc, int32_t(*kind)), a, bb, c, d, i32Const(b, loc, site)});
      op->getResult(0).replaceAllUsesWith(
          loadSlots(b, loc, d, kind == MmaKind::S8 ? i32 : f32, op->getResult(0).getType()));
      op->erase();
      return success();
    }
    if (auto ld = dyn_cast<NVVM::LdMatrixOp>(op)) {
      if (ld.getShape().getM() != 8 || ld.getShape().getN() != 8 ||
          ld.getEltType() != NVVM::LdStMatrixEltType::B16)
        return op->emitOpError("is not modelled by the simulator (it has m8n8 b16)");
      bool trans = ld.getLayout() == NVVM::MMALayout::col;
      int32_t site = addSite(op, fmt::format("ldmatrix.x{}{}", ld.getNum(), trans ? ".trans" : ""));
      Value out = entrySlots(op, i32, 4);
      call(b, loc, hook("__tegula_sim_ldmatrix", {}, {i32, i32, ptrType, ptrType, i32}),
           {i32Const(b, loc, int32_t(ld.getNum())), i32Const(b, loc, trans), ld.getPtr(), out,
            i32Const(b, loc, site)});
      op->getResult(0).replaceAllUsesWith(loadSlots(b, loc, out, i32, op->getResult(0).getType()));
      op->erase();
      return success();
    }
    if (auto st = dyn_cast<NVVM::StMatrixOp>(op)) {
      if (st.getShape().getM() != 8 || st.getShape().getN() != 8 || st.getEltType() != NVVM::LdStMatrixEltType::B16)
        return op->emitOpError("is not modelled by the simulator (it has m8n8 b16)");
      const bool trans = st.getLayout() == NVVM::MMALayout::col;
      const auto count = int32_t(st.getSources().size());
      int32_t site = addSite(op, fmt::format("stmatrix.x{}{}", count, trans ? ".trans" : ""));
      Value words = entrySlots(op, i32, 4);
      storeSlots(b, loc, words, i32, st.getSources());
      call(b, loc, hook("__tegula_sim_stmatrix", {}, {i32, i32, ptrType, ptrType, i32}),
           {i32Const(b, loc, count), i32Const(b, loc, trans), st.getPtr(), words, i32Const(b, loc, site)});
      op->erase();
      return success();
    }
    if (auto cp = dyn_cast<NVVM::CpAsyncOp>(op)) {
      int32_t site = addSite(op, fmt::format("cp.async.{}.shared.global ({} bytes)",
                                             NVVM::stringifyLoadCacheModifierKind(cp.getModifier()).str(),
                                             cp.getSize()));
      Value srcSize = cp.getCpSize() ? cp.getCpSize() : i32Const(b, loc, int32_t(cp.getSize()));
      call(b, loc, hook("__tegula_sim_cp_async", {}, {ptrType, ptrType, i32, i32, i32}),
           {cp.getDst(), cp.getSrc(), i32Const(b, loc, int32_t(cp.getSize())), srcSize,
            i32Const(b, loc, site)});
      op->erase();
      return success();
    }
    if (isa<NVVM::CpAsyncCommitGroupOp>(op)) {
      call(b, loc, hook("__tegula_sim_cp_async_commit", {}, {}), {});
      op->erase();
      return success();
    }
    if (auto wait = dyn_cast<NVVM::CpAsyncWaitGroupOp>(op)) {
      call(b, loc, hook("__tegula_sim_cp_async_wait", {}, {i32, i32}),
           {i32Const(b, loc, int32_t(wait.getN())),
            i32Const(b, loc, addSite(op, fmt::format("cp.async.wait_group {}", wait.getN())))});
      op->erase();
      return success();
    }
    handled = false;
    return success();
  }

  LogicalResult rewriteInlineAsm(LLVM::InlineAsmOp op, DataLayout &) {
    std::string body = op.getAsmString().str(), constraints = op.getConstraints().str();
    try {
      AsmProgram::parse(body, constraints);
    } catch (const Error &e) {
      return op.emitOpError() << e.what();
    }
    Builder attrs(op.getContext());
    asmBodies.push_back(attrs.getStrArrayAttr({body, constraints}));
    int32_t program = int32_t(asmBodies.size() - 1);
    int32_t site = addSite(op, describeInlinePtx(body));

    OpBuilder b(op);
    Location loc = op.getLoc();
    // Operand and result buffers live in the entry block (one per asm op).
    SmallVector<Type> resultTypes;
    Type structType;
    if (op.getNumResults()) {
      Type t = op.getResult(0).getType();
      if (auto s = dyn_cast<LLVM::LLVMStructType>(t)) {
        structType = s;
        llvm::append_range(resultTypes, s.getBody());
      } else {
        resultTypes.push_back(t);
      }
    }
    Value in = entrySlots(op, i64, op.getOperands().size());
    Value out = entrySlots(op, i64, resultTypes.size());
    SmallVector<Value> bits;
    for (Value v : op.getOperands())
      bits.push_back(toI64(b, loc, v));
    storeSlots(b, loc, in, i64, bits);
    call(b, loc, hook("__tegula_sim_asm", {}, {i32, ptrType, ptrType, i32}),
         {i32Const(b, loc, program), in, out, i32Const(b, loc, site)});
    SmallVector<Value> results;
    for (auto [i, t] : llvm::enumerate(resultTypes)) {
      Value p = LLVM::GEPOp::create(b, loc, ptrType, i64, out, ArrayRef<LLVM::GEPArg>{int32_t(i)});
      results.push_back(fromI64(b, loc, LLVM::LoadOp::create(b, loc, i64, p), t));
    }
    if (structType) {
      Value s = LLVM::UndefOp::create(b, loc, structType);
      for (auto [i, v] : llvm::enumerate(results))
        s = LLVM::InsertValueOp::create(b, loc, s, v, ArrayRef<int64_t>{int64_t(i)});
      op.getResult(0).replaceAllUsesWith(s);
    } else if (!results.empty()) {
      op.getResult(0).replaceAllUsesWith(results[0]);
    }
    op.erase();
    return success();
  }

  /// NVVM intrinsics the lowering calls by name become the host function
  /// that computes what the instruction does (HostFunctions.cpp).
  LogicalResult rewriteNvvmIntrinsic(LLVM::CallIntrinsicOp op) {
    static const std::map<std::string, std::string> hostFunctions = {
        {"llvm.nvvm.ex2.approx.ftz.f32", "__tegula_sim_ex2_approx_ftz_f32"},
        {"llvm.nvvm.div.full", "__tegula_sim_div_full"},
        {"llvm.nvvm.rcp.approx.ftz.f", "__tegula_sim_rcp_approx_ftz_f32"},
        {"llvm.tanh.f32", "__tegula_sim_tanh_approx_f32"}};
    auto it = hostFunctions.find(op.getIntrin().str());
    if (it == hostFunctions.end())
      return op->emitOpError() << "'" << op.getIntrin() << "' is not supported by the simulator";
    OpBuilder b(op);
    auto fn = hook(it->second, op.getResult(0).getType(), llvm::to_vector(op.getArgs().getTypes()));
    op.getResult(0).replaceAllUsesWith(call(b, op.getLoc(), fn, op.getArgs()));
    op->erase();
    return success();
  }

  LogicalResult rewriteNvvm(Operation *op) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    StringRef name = op->getName().getStringRef();
    if (auto it = specialRegisters().find(name); it != specialRegisters().end()) {
      Value v = call(b, loc, hook("__tegula_sim_sreg", i32, {i32}), {i32Const(b, loc, int32_t(it->second))});
      op->getResult(0).replaceAllUsesWith(v);
      op->erase();
      return success();
    }
    if (isa<NVVM::NanosleepOp>(op)) { // a pause: nothing to simulate
      op->erase();
      return success();
    }
    if (isa<NVVM::Barrier0Op>(op) || (isa<NVVM::BarrierOp>(op) && op->getNumOperands() == 0 &&
                                      op->getNumResults() == 0)) {
      call(b, loc, hook("__tegula_sim_barrier", {}, {i32}), {i32Const(b, loc, addSite(op, "bar.sync 0"))});
      op->erase();
      return success();
    }
    if (auto shfl = dyn_cast<NVVM::ShflOp>(op)) {
      Type t = shfl.getVal().getType();
      if (shfl.getReturnValueAndIsValid() || !(t.isInteger(32) || t.isF32()))
        return op->emitOpError("is not supported by the simulator (only 32-bit values without "
                               "the valid flag)");
      ShuffleMode mode = ShuffleMode::Bfly;
      switch (shfl.getKind()) {
      case NVVM::ShflKind::bfly: mode = ShuffleMode::Bfly; break;
      case NVVM::ShflKind::up: mode = ShuffleMode::Up; break;
      case NVVM::ShflKind::down: mode = ShuffleMode::Down; break;
      case NVVM::ShflKind::idx: mode = ShuffleMode::Idx; break;
      }
      int32_t site = addSite(op, fmt::format("shfl.sync.{}", stringifyShflKind(shfl.getKind()).str()));
      Value v = shfl.getVal();
      if (t.isF32())
        v = LLVM::BitcastOp::create(b, loc, i32, v);
      Value r = call(b, loc, hook("__tegula_sim_shfl", i32, {i32, i32, i32, i32, i32, i32}),
                     {i32Const(b, loc, int32_t(mode)), shfl.getThreadMask(), v, shfl.getOffset(),
                      shfl.getMaskAndClamp(), i32Const(b, loc, site)});
      if (t.isF32())
        r = LLVM::BitcastOp::create(b, loc, t, r);
      op->getResult(0).replaceAllUsesWith(r);
      op->erase();
      return success();
    }
    bool handled = false;
    if (failed(rewriteTensorCoreOp(op, handled)))
      return failure();
    if (handled)
      return success();
    return op->emitOpError("is not supported by the simulator yet");
  }

  void runOnOperation() override {
    module = getOperation();
    MLIRContext *ctx = &getContext();
    ptrType = LLVM::LLVMPointerType::get(ctx);
    i32 = IntegerType::get(ctx, 32);
    i64 = IntegerType::get(ctx, 64);
    DataLayout layout(module);

    // Shared-memory globals: consecutive 16-byte aligned offsets. The error
    // report's globals: which word of the report each is.
    std::map<std::string, int64_t> sharedOffset;
    std::map<std::string, int32_t> errorWord;
    int64_t sharedBytes = 0;
    for (auto global : module.getOps<LLVM::GlobalOp>()) {
      if (auto word = global->getAttrOfType<IntegerAttr>(runtime::kErrorWordAttr))
        errorWord[global.getSymName().str()] = int32_t(word.getInt());
      if (global.getAddrSpace() != 3)
        continue;
      sharedBytes = (sharedBytes + 15) / 16 * 16;
      sharedOffset[global.getSymName().str()] = sharedBytes;
      int64_t size = int64_t(layout.getTypeSize(global.getGlobalType()));
      // `extern .shared` (dynamic shared memory): as large as the launch
      // makes it, which the lowering recorded.
      if (global.getLinkage() == LLVM::Linkage::External && size == 0)
        if (auto dyn = module->getAttrOfType<IntegerAttr>("tilegpu.dynamic_shared_bytes"))
          size = dyn.getInt();
      sharedBytes += size;
    }

    // What needs rewriting, noted before address spaces disappear.
    // The address is read from `op` when the access is instrumented: the
    // rewrites before that replace values (a shared global's address).
    struct Access {
      Operation *op;
      Type type;
      AccessKind kind;
      unsigned space;
    };
    SmallVector<Access> accesses;
    SmallVector<Operation *> nvvmOps, traps, casts;
    SmallVector<LLVM::InlineAsmOp> asmOps;
    SmallVector<LLVM::CallIntrinsicOp> nvvmIntrinsics;
    SmallVector<LLVM::AddressOfOp> sharedRefs;
    bool failedWalk = false;
    SmallVector<LLVM::AddressOfOp> reportRefs;
    module.walk([&](Operation *op) {
      auto space = [](Value p) { return cast<LLVM::LLVMPointerType>(p.getType()).getAddressSpace(); };
      if (op->hasAttr("tegula.error_report"))
        return; // the report's own words (StopWithReport.h), not the kernel's memory
      if (auto l = dyn_cast<LLVM::LoadOp>(op))
        accesses.push_back({op, l.getType(), AccessKind::Read, space(l.getAddr())});
      else if (auto s = dyn_cast<LLVM::StoreOp>(op))
        accesses.push_back({op, s.getValue().getType(), AccessKind::Write, space(s.getAddr())});
      else if (auto a = dyn_cast<LLVM::AtomicRMWOp>(op))
        accesses.push_back({op, a.getVal().getType(), AccessKind::Atomic, space(a.getPtr())});
      else if (auto a = dyn_cast<LLVM::AtomicCmpXchgOp>(op))
        accesses.push_back({op, a.getVal().getType(), AccessKind::Atomic, space(a.getPtr())});
      else if (auto a = dyn_cast<LLVM::InlineAsmOp>(op))
        asmOps.push_back(a);
      else if (auto a = dyn_cast<LLVM::AddressOfOp>(op); a && sharedOffset.count(a.getGlobalName().str()))
        sharedRefs.push_back(a);
      else if (auto a = dyn_cast<LLVM::AddressOfOp>(op); a && errorWord.count(a.getGlobalName().str()))
        reportRefs.push_back(a);
      else if (isa<LLVM::Trap>(op))
        traps.push_back(op);
      else if (isa<LLVM::AddrSpaceCastOp>(op))
        casts.push_back(op);
      else if (isa<NVVM::NVVMDialect>(op->getDialect()))
        nvvmOps.push_back(op);
      else if (auto i = dyn_cast<LLVM::CallIntrinsicOp>(op); i && i.getIntrin().starts_with("llvm.nvvm."))
        nvvmIntrinsics.push_back(i);
      else if (auto call = dyn_cast<LLVM::CallOp>(op); call && !call.getCallee()) {
        op->emitOpError("indirect calls are not supported by the simulator");
        failedWalk = true;
      }
    });
    if (failedWalk)
      return signalPassFailure();

    // One address space: the host's.
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](LLVM::LLVMPointerType t) -> std::optional<Type> {
      return t.getAddressSpace() ? std::optional<Type>(ptrType) : std::nullopt;
    });
    replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true, /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);
    for (Operation *cast : casts) {
      cast->getResult(0).replaceAllUsesWith(cast->getOperand(0));
      cast->erase();
    }
    for (LLVM::AddressOfOp ref : sharedRefs) {
      OpBuilder b(ref);
      Value base = call(b, ref.getLoc(), hook("__tegula_sim_shared", ptrType, {i64}),
                        {i64Const(b, ref.getLoc(), sharedOffset[ref.getGlobalName().str()])});
      ref.getResult().replaceAllUsesWith(base);
      ref.erase();
    }
    // The report's words are the launch's (SimErrorReport), reset for each.
    for (LLVM::AddressOfOp ref : reportRefs) {
      OpBuilder b(ref);
      const int32_t which = errorWord[ref.getGlobalName().str()];
      ref.getResult().replaceAllUsesWith(
          call(b, ref.getLoc(), hook("__tegula_sim_error_word", ptrType, {i32}), {i32Const(b, ref.getLoc(), which)}));
      ref.erase();
    }
    for (auto global : llvm::make_early_inc_range(module.getOps<LLVM::GlobalOp>())) {
      if (sharedOffset.count(global.getSymName().str()) || errorWord.count(global.getSymName().str()))
        global.erase();
      else if (global.getAddrSpace() != 0)
        global.setAddrSpace(0);
    }

    for (const Access &a : accesses) {
      if (a.space != 1 && a.space != 3)
        continue; // thread-local stack (allocas): the host's own memory
      OpBuilder b(a.op);
      Location loc = a.op->getLoc();
      uint64_t bytes = layout.getTypeSize(a.type);
      const char *kind = a.kind == AccessKind::Read ? "load" : a.kind == AccessKind::Write ? "store" : "atomic";
      int32_t site = addSite(a.op, fmt::format("{} of {} bytes ({})", kind, bytes,
                                               a.space == 3 ? "shared" : "global"));
      int32_t flags = int32_t(a.space << 2 | uint32_t(a.kind));
      call(b, loc, hook("__tegula_sim_access", {}, {ptrType, i64, i32, i32}),
           {addressOf(a.op), i64Const(b, loc, int64_t(bytes)), i32Const(b, loc, flags), i32Const(b, loc, site)});
    }
    for (Operation *trap : traps) {
      OpBuilder b(trap);
      // A kernel that stops on purpose says why in its report, which the
      // trap quotes (StopWithReport.h).
      call(b, trap->getLoc(), hook("__tegula_sim_trap", {}, {i32}),
           {i32Const(b, trap->getLoc(), addSite(trap, "trap"))});
      trap->erase();
    }
    for (Operation *op : nvvmOps)
      if (failed(rewriteNvvm(op)))
        return signalPassFailure();
    for (LLVM::CallIntrinsicOp op : nvvmIntrinsics)
      if (failed(rewriteNvvmIntrinsic(op)))
        return signalPassFailure();
    for (LLVM::InlineAsmOp op : asmOps)
      if (failed(rewriteInlineAsm(op, layout)))
        return signalPassFailure();

    // NVVM attributes mean nothing on the host; neither does the GPU target.
    std::set<std::string> known;
    for (auto &[name, ptr] : hostSymbols())
      known.insert(name);
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
      for (NamedAttribute attr : llvm::to_vector(fn->getDiscardableAttrs()))
        if (attr.getName().strref().starts_with("nvvm."))
          fn->removeAttr(attr.getName());
      // A by-value tensor map becomes a plain pointer to the launch's copy
      // (the packed entry passes pointers).
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        for (StringRef attr : {NVVM::NVVMDialect::getGridConstantAttrName(),
                               LLVM::LLVMDialect::getByValAttrName(),
                               LLVM::LLVMDialect::getAlignAttrName()})
          fn.removeArgAttr(i, attr);
      if (fn.isExternal() && !known.count(fn.getName().str())) {
        fn.emitError() << "the kernel calls '" << fn.getName()
                       << "', which the simulator does not provide (its host symbol table is "
                          "simulator/HostFunctions.cpp)";
        return signalPassFailure();
      }
    }
    Builder b(ctx);
    module->removeAttr("llvm.target_triple");
    module->removeAttr("llvm.data_layout");
    module->setAttr("tegula.sim.sites", b.getArrayAttr(sites));
    module->setAttr("tegula.sim.asm", b.getArrayAttr(asmBodies));
    module->setAttr("tegula.sim.shared_bytes", b.getI64IntegerAttr(sharedBytes));
  }
};

} // namespace

std::unique_ptr<Pass> createInstrumentForSimulator() {
  return std::make_unique<InstrumentForSimulatorPass>();
}

void registerSimulatorPasses() { PassRegistration<InstrumentForSimulatorPass>(); }

} // namespace tegula::sim
