//===- LowerTileGPUToLLVM.cpp - tilegpu IR to per-thread LLVM + NVVM ------===//
//
// Each tile becomes the registers one thread holds: a tensor with layout L
// converts 1:N into L's register count of scalars. Index math comes from
// the layout: register r of thread (lane, warp) holds element
// L(r) ^ L(lane) ^ L(warp). Masked memory accesses are predicated PTX.
//
// Here: program ids, make_range, splat, addptr, constants, broadcast /
// expand_dims / convert_layout that stay within a thread, masked loads and
// stores (duplicated elements are stored once), loops and branches, and the
// pass itself. The other ops' patterns have files of their own (*ToLLVM.cpp:
// elementwise math, reductions, exchanges through shared memory, dots,
// wgmma, TMA, warp roles, fp8, cp.async, atomics, print/assert); an op
// none of them lowers fails with a message naming it.
//
//===----------------------------------------------------------------------===//
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/transforms/LoweringCommon.h"
#include "compiler/transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

#include <fmt/format.h>

namespace tegula {
#define GEN_PASS_DEF_LOWERTILEGPUTOLLVM
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;
using layout::LinearLayout;
using namespace tegula::lowering;

namespace {

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

struct ConstantPattern : OpConversionPattern<arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(arith::ConstantOp op, OneToNOpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    auto tensor = dyn_cast<RankedTensorType>(op.getType());
    if (!tensor)
      return failure();
    auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
    if (!splat)
      return rw.notifyMatchFailure(op, "only splat tile constants are lowered");
    Type scalar = getTypeConverter()->convertType(tensor.getElementType());
    auto value = cast<TypedAttr>(splat.getSplatValue<Attribute>());
    if (auto f = dyn_cast<FloatAttr>(value); f && isa<IntegerType>(scalar)) // fp8: its bits
      value = IntegerAttr::get(scalar, f.getValue().bitcastToAPInt());
    Value v = LLVM::ConstantOp::create(rw, op.getLoc(), scalar, value);
    rw.replaceOpWithMultiple(
        op, {SmallVector<Value>(size_t(layoutOf(tensor).inDimSize("register")), v)});
    return success();
  }
};

/// program_id / num_programs: the CTA's index / the grid's size.
template <typename TileOp, typename X, typename Y, typename Z>
struct GridQueryPattern : OpConversionPattern<TileOp> {
  using OpConversionPattern<TileOp>::OpConversionPattern;
  LogicalResult matchAndRewrite(TileOp op, typename TileOp::Adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type i32 = rw.getI32Type();
    switch (op.getAxis()) {
    case tile::ProgramAxis::X: rw.replaceOp(op, X::create(rw, loc, i32)); break;
    case tile::ProgramAxis::Y: rw.replaceOp(op, Y::create(rw, loc, i32)); break;
    case tile::ProgramAxis::Z: rw.replaceOp(op, Z::create(rw, loc, i32)); break;
    }
    return success();
  }
};

/// tl::cluster_size() where pipeline-dot-operands did not resolve it: the
/// module's tilegpu.launch_cluster_size, else 1.
struct ClusterSizePattern : OpConversionPattern<tile::ClusterSizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::ClusterSizeOp op, OpAdaptor, ConversionPatternRewriter &rw) const override {
    auto module = op->getParentOfType<ModuleOp>();
    auto size = module ? module->getAttrOfType<IntegerAttr>("tilegpu.launch_cluster_size") : IntegerAttr();
    rw.replaceOp(op, i32Const(rw, op.getLoc(), size ? size.getInt() : 1));
    return success();
  }
};

struct MakeRangePattern : OpConversionPattern<tile::MakeRangeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::MakeRangeOp op, OneToNOpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    LinearLayout ll = layoutOf(op.getType());
    SmallVector<Value> values;
    Value start = i32Const(rw, op.getLoc(), int32_t(op.getStart()));
    for (auto &c : coordinates(rw, op.getLoc(), ll))
      values.push_back(LLVM::AddOp::create(rw, op.getLoc(), c[0], start));
    rw.replaceOpWithMultiple(op, {values});
    return success();
  }
};

struct SplatPattern : OpConversionPattern<tile::SplatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::SplatOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    size_t n = size_t(layoutOf(op.getType()).inDimSize("register"));
    rw.replaceOpWithMultiple(op, {SmallVector<Value>(n, adaptor.getSrc()[0])});
    return success();
  }
};

struct AddPtrPattern : OpConversionPattern<tile::AddPtrOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::AddPtrOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto ptrType = cast<tile::PtrType>(tile::getElementTypeOrSelf(op.getType()));
    Type elem = memoryType(ptrType.getPointeeType());
    Type llvmPtr = LLVM::LLVMPointerType::get(rw.getContext(), 1);
    SmallVector<Value> values;
    for (auto [p, off] : llvm::zip(adaptor.getPtr(), adaptor.getOffset()))
      values.push_back(LLVM::GEPOp::create(rw, op.getLoc(), llvmPtr, elem, p, ValueRange{off}));
    rw.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// broadcast, expand_dims and convert_layout: register moves within a thread.
template <typename OpTy>
struct RegisterRemapPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpConversionPattern<OpTy>::OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    auto srcType = cast<RankedTensorType>(op->getOperand(0).getType());
    auto dstType = cast<RankedTensorType>(op.getType());
    LinearLayout src = layoutOf(srcType), dst = layoutOf(dstType);
    std::function<std::vector<int32_t>(std::vector<int32_t>)> project;
    if constexpr (std::is_same_v<OpTy, tile::BroadcastOp>) {
      project = [&](std::vector<int32_t> c) {
        for (size_t d = 0; d < c.size(); ++d)
          if (srcType.getDimSize(int64_t(d)) == 1)
            c[d] = 0;
        return c;
      };
    } else if constexpr (std::is_same_v<OpTy, tile::ExpandDimsOp>) {
      unsigned axis = op.getAxis();
      project = [axis](std::vector<int32_t> c) {
        c.erase(c.begin() + axis);
        return c;
      };
    } else {
      project = [](std::vector<int32_t> c) { return c; };
    }
    std::optional<std::vector<int32_t>> map = analysis::inThreadRegisterMap(src, dst, project);
    if (!map)
      return rw.notifyMatchFailure(op, "moving data between threads is not lowered yet");
    SmallVector<Value> values;
    ValueRange in = adaptor.getOperands()[0];
    for (int32_t r : *map)
      values.push_back(in[size_t(r)]);
    rw.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// Registers, and lane/warp bits, that only repeat other threads' elements.
struct Ownership {
  SmallVector<bool> ownsRegister;
  int32_t laneMask = 0, warpMask = 0; // bits that must be zero to own

  explicit Ownership(const LinearLayout &ll) {
    for (int b : ll.freeBits("lane"))
      laneMask |= 1 << b;
    for (int b : ll.freeBits("warp"))
      warpMask |= 1 << b;
    std::vector<int> freeRegs = ll.freeBits("register");
    for (int32_t r = 0; r < ll.inDimSize("register"); ++r) {
      bool owns = true;
      for (int b : freeRegs)
        owns &= ((r >> b) & 1) == 0;
      ownsRegister.push_back(owns);
    }
  }
  /// i1: this thread stores the elements it holds (or nullptr: always).
  Value threadPredicate(OpBuilder &b, Location loc) const {
    if (!laneMask && !warpMask)
      return nullptr;
    auto [lane, warp] = laneAndWarp(b, loc);
    Value bits = LLVM::OrOp::create(
        b, loc, LLVM::AndOp::create(b, loc, lane, i32Const(b, loc, laneMask)),
        LLVM::ShlOp::create(b, loc, LLVM::AndOp::create(b, loc, warp, i32Const(b, loc, warpMask)),
                            i32Const(b, loc, 5)));
    return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, bits, i32Const(b, loc, 0));
  }
};

/// Elements per access chosen by the coalesce pass (1 when absent).
int64_t vectorWidth(Operation *op) {
  if (auto w = op->getAttrOfType<IntegerAttr>("tilegpu.vector_width"))
    return w.getInt();
  return 1;
}

struct LoadPattern : OpConversionPattern<tile::LoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::LoadOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type elem = tile::getElementTypeOrSelf(op.getType());
    Type scalar = getTypeConverter()->convertType(elem);
    Type mem = memoryType(elem);
    auto [asmType, reg] = asmRegister(elem);
    unsigned bits = asmType.getIntOrFloatBitWidth();
    size_t w = size_t(vectorWidth(op));
    SmallVector<Value> values;
    ValueRange ptrs = adaptor.getPtr();
    const CacheQualifiers hints = cacheQualifiers(op.getCache(), op.getEvict(), op.getIsVolatile());
    const bool hinted = hints.opcode != ".global";
    for (size_t k = 0; k < ptrs.size(); k += w) {
      if (!op.getMask() && !hinted) {
        if (w == 1) {
          Value v = LLVM::LoadOp::create(rw, loc, mem, ptrs[k], mem.getIntOrFloatBitWidth() / 8);
          values.push_back(elem.isInteger(1) ? fromAsmInt(rw, loc, v, elem) : v);
          continue;
        }
        auto vecType = VectorType::get({int64_t(w)}, mem);
        Value vec = LLVM::LoadOp::create(rw, loc, vecType, ptrs[k],
                                         unsigned(w * mem.getIntOrFloatBitWidth() / 8));
        for (size_t i = 0; i < w; ++i) {
          Value v = LLVM::ExtractElementOp::create(rw, loc, vec, i32Const(rw, loc, int64_t(i)));
          values.push_back(elem.isInteger(1) ? fromAsmInt(rw, loc, v, elem) : v);
        }
        continue;
      }
      // mov the defaults, then one (vector) load where the predicate holds;
      // the coalesce pass proved the mask constant over the group.
      SmallVector<Value> defaults;
      for (size_t i = 0; i < w; ++i) {
        Value other = op.getOther()
                          ? adaptor.getOther()[k + i]
                          : LLVM::ConstantOp::create(rw, loc, scalar, rw.getZeroAttr(scalar));
        defaults.push_back(elem.isInteger(1) ? LLVM::ZExtOp::create(rw, loc, mem, other).getResult()
                                             : other);
      }
      // PTX vectors have at most four elements: more narrow ones (8 x bf16,
      // 16 x i8) move as 32-bit words.
      const bool words = w > 4;
      if (words)
        defaults = packWords(rw, loc, defaults);
      const size_t n = defaults.size();
      Type regType = words ? rw.getI32Type() : asmType;
      std::string regKind = words ? "r" : reg, type = words ? "b32" : ptxType(elem);
      const unsigned regBits = words ? 32 : bits;
      std::string body, constraints, outs;
      // (A load with cache hints is an asm statement, masked or not.)
      Value pred = op.getMask() ? adaptor.getMask()[k]
                                : LLVM::ConstantOp::create(rw, loc, rw.getI1Type(), rw.getBoolAttr(true)).getResult();
      SmallVector<Value> args = {ptrs[k], pred};
      for (size_t i = 0; i < n; ++i) {
        args.push_back(toAsmInt(rw, loc, defaults[i], regType));
        body += fmt::format("mov.b{} ${}, ${};\n\t", regBits, i, n + 2 + i);
        outs += fmt::format("{}${}", i ? ", " : "", i);
        constraints += fmt::format("={},", regKind);
      }
      constraints += "l,b";
      for (size_t i = 0; i < n; ++i)
        constraints += "," + regKind;
      body += withCachePolicy(hints, fmt::format("@${} ld{}{}.{} {}, [ ${} + 0 ]", n + 1, hints.opcode,
                                                 n > 1 ? fmt::format(".v{}", n) : "", type,
                                                 n > 1 ? "{" + outs + "}" : outs, n));
      Type resultType = n == 1 ? regType
                               : Type(LLVM::LLVMStructType::getLiteral(
                                     rw.getContext(), SmallVector<Type>(n, regType)));
      auto asmOp = LLVM::InlineAsmOp::create(
          rw, loc, resultType, args, body, constraints, /*has_side_effects=*/true, false,
          LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
      SmallVector<Value> raw;
      for (size_t i = 0; i < n; ++i)
        raw.push_back(n == 1 ? asmOp.getResult(0)
                             : LLVM::ExtractValueOp::create(rw, loc, asmOp.getResult(0),
                                                            ArrayRef<int64_t>{int64_t(i)})
                                   .getResult());
      if (words)
        for (Value v : unpackWords(rw, loc, raw, mem))
          values.push_back(elem.isInteger(1) ? fromAsmInt(rw, loc, v, elem) : v);
      else
        for (Value v : raw)
          values.push_back(fromAsmInt(rw, loc, v, elem));
    }
    if (isa<RankedTensorType>(op.getType()))
      rw.replaceOpWithMultiple(op, {values});
    else
      rw.replaceOp(op, values[0]);
    return success();
  }
};

struct StorePattern : OpConversionPattern<tile::StoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::StoreOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type elem = tile::getElementTypeOrSelf(op.getValue().getType());
    std::optional<Ownership> owner;
    if (auto t = dyn_cast<RankedTensorType>(op.getPtr().getType()))
      owner.emplace(layoutOf(t));
    // A tile's duplicates are stored once; a scalar (held by every thread)
    // by thread 0 only.
    Value threadOwns = owner ? owner->threadPredicate(rw, loc)
                             : LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq,
                                                    programThreadIndex(rw, loc),
                                                    i32Const(rw, loc, 0))
                                   .getResult();
    ValueRange ptrs = adaptor.getPtr(), vals = adaptor.getValue();
    size_t w = size_t(vectorWidth(op));
    const CacheQualifiers hints = cacheQualifiers(op.getCache(), op.getEvict(), op.getIsVolatile());
    const bool hinted = hints.opcode != ".global";
    for (size_t k = 0; k < ptrs.size(); k += w) {
      if (owner && !owner->ownsRegister[k])
        continue; // another register of this thread stores the same element(s)
      Value pred = op.getMask() ? adaptor.getMask()[k] : Value();
      if (threadOwns)
        pred = pred ? Value(LLVM::AndOp::create(rw, loc, pred, threadOwns)) : threadOwns;
      SmallVector<Value> group;
      for (size_t i = 0; i < w; ++i)
        group.push_back(elem.isInteger(1)
                            ? LLVM::ZExtOp::create(rw, loc, rw.getI8Type(), vals[k + i]).getResult()
                            : vals[k + i]);
      if (pred || hinted) {
        if (!pred)
          pred = LLVM::ConstantOp::create(rw, loc, rw.getI1Type(), rw.getBoolAttr(true));
        predicatedStore(rw, loc, ptrs[k], group, pred, "global", hints);
        continue;
      }
      Type mem = memoryType(elem);
      unsigned align = unsigned(w * mem.getIntOrFloatBitWidth() / 8);
      if (w == 1) {
        LLVM::StoreOp::create(rw, loc, group[0], ptrs[k], align);
        continue;
      }
      Value vec = LLVM::PoisonOp::create(rw, loc, VectorType::get({int64_t(w)}, mem));
      for (size_t i = 0; i < w; ++i)
        vec = LLVM::InsertElementOp::create(rw, loc, vec, group[i], i32Const(rw, loc, int64_t(i)));
      LLVM::StoreOp::create(rw, loc, vec, ptrs[k], align);
    }
    rw.eraseOp(op);
    return success();
  }
};

/// Every op that needs shared memory has an aligned buffer inside the
/// module's `total` bytes (else the error names the op and the fix).
LogicalResult checkSharedOffsets(ModuleOp module, int64_t total) {
  WalkResult result = module.walk([&](Operation *op) {
    int64_t bytes = analysis::sharedScratchBytes(op);
    if (bytes == 0)
      return WalkResult::advance();
    std::optional<int64_t> offset = analysis::sharedOffset(op);
    if (auto stride = op->getAttrOfType<IntegerAttr>(analysis::kSharedSlotStrideAttr))
      bytes += stride.getInt() * (programsPerCta(op) - 1); // a copy per program
    if (!offset) {
      op->emitError() << "needs " << bytes << " bytes of shared memory but has no "
                      << analysis::kSharedOffsetAttr << ": run allocate-shared-memory first";
      return WalkResult::interrupt();
    }
    if (*offset < 0 || *offset % analysis::kSharedAlignment != 0 || *offset + bytes > total) {
      op->emitError() << "shared-memory buffer [" << *offset << ", " << *offset + bytes
                      << ") is not a " << analysis::kSharedAlignment
                      << "-byte aligned part of the module's " << total << " bytes ("
                      << analysis::kSharedBytesAttr << "): run allocate-shared-memory again";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// A ping-pong kernel runs programs 2c and 2c + 1 on CTA c: program_id(x)
/// becomes 2 * ctaid.x + slot and num_programs(x) the launch's count of
/// programs, a hidden i32 argument after all others (the runtime passes it;
/// the CTAs are half as many, rounded up).
void runProgramsPerCta(ModuleOp module, ArrayRef<std::string> kernels) {
  const int64_t programs = programsPerCta(module);
  module.walk([&](func::FuncOp fn) {
    if (fn.isExternal() || !llvm::is_contained(kernels, fn.getName().str()))
      return;
    OpBuilder b(fn.getContext());
    Type i32 = b.getI32Type();
    (void)fn.insertArgument(fn.getNumArguments(), i32, DictionaryAttr(), fn.getLoc());
    Value count = fn.getArgument(fn.getNumArguments() - 1);
    SmallVector<Operation *> queries;
    fn.walk([&](Operation *op) {
      if (auto id = dyn_cast<tile::ProgramIdOp>(op); id && id.getAxis() == tile::ProgramAxis::X)
        queries.push_back(op);
      if (auto n = dyn_cast<tile::NumProgramsOp>(op); n && n.getAxis() == tile::ProgramAxis::X)
        queries.push_back(op);
    });
    for (Operation *op : queries) {
      if (isa<tile::NumProgramsOp>(op)) {
        op->getResult(0).replaceAllUsesWith(count);
        op->erase();
        continue;
      }
      b.setInsertionPointAfter(op);
      Location loc = op->getLoc();
      Value first = arith::MulIOp::create(b, loc, op->getResult(0),
                                          arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(int32_t(programs))));
      Value id = arith::AddIOp::create(b, loc, first, tilegpu::ProgramSlotOp::create(b, loc, i32));
      op->getResult(0).replaceAllUsesExcept(id, first.getDefiningOp());
    }
  });
}

struct LowerTileGPUToLLVMPass
    : tegula::impl::LowerTileGPUToLLVMBase<LowerTileGPUToLLVMPass> {
  using LowerTileGPUToLLVMBase::LowerTileGPUToLLVMBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto warpsAttr = module->getAttrOfType<IntegerAttr>("tilegpu.num_warps");
    if (!warpsAttr) {
      module.emitError() << "run convert-tile-to-tilegpu first (no tilegpu.num_warps)";
      return signalPassFailure();
    }
    // Kernel entry points, and attributes LLVM translation would not know.
    SmallVector<std::string> kernels;
    module.walk([&](func::FuncOp fn) {
      if (fn->hasAttr("tile.kernel"))
        kernels.push_back(fn.getName().str());
      for (StringRef attr : {"tile.kernel", "tile.constants"})
        fn->removeAttr(attr);
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        for (StringRef attr : {"tile.name", "tile.divisibility"})
          fn.removeArgAttr(i, attr);
    });

    if (programsPerCta(module) > 1)
      runProgramsPerCta(module, kernels);

    // Shared memory: allocate-shared-memory gave every user a buffer within
    // the module's total; one global holds them all.
    int64_t sharedBytes = 0;
    if (auto total = module->getAttrOfType<IntegerAttr>(analysis::kSharedBytesAttr))
      sharedBytes = total.getInt();
    if (failed(checkSharedOffsets(module, sharedBytes)))
      return signalPassFailure();
    if (sharedBytes > 0) {
      // Up to 48 KiB a static array; beyond, `extern .shared` (dynamic shared
      // memory) whose size the launch provides.
      const bool dynamic = sharedBytes > analysis::kMaxStaticSharedBytes;
      OpBuilder b(ctx);
      b.setInsertionPointToStart(module.getBody());
      LLVM::GlobalOp::create(b, module.getLoc(),
                             LLVM::LLVMArrayType::get(b.getI8Type(), dynamic ? 0 : uint64_t(sharedBytes)),
                             /*isConstant=*/false,
                             dynamic ? LLVM::Linkage::External : LLVM::Linkage::Internal,
                             kScratchSymbol, Attribute(),
                             /*alignment=*/analysis::kWgmmaTileAlignment, /*addrSpace=*/3);
      if (dynamic)
        module->setAttr(analysis::kDynamicSharedBytesAttr,
                        IntegerAttr::get(IntegerType::get(ctx, 32), sharedBytes));
    }
    module->setAttr(analysis::kSharedBytesAttr,
                    IntegerAttr::get(IntegerType::get(ctx, 32), sharedBytes));

    // cvt.rn.tf32.f32 from sm_90 on (PTX ISA 7.8).
    const bool tf32Cvt = StringRef(chip).starts_with("sm_9") || StringRef(chip).starts_with("sm_1");
    TileTypeConverter types(ctx, tf32Cvt);
    types.bf16AtomicAdd = tf32Cvt; // the same chips: sm_90 on (PTX ISA 7.8)
    RewritePatternSet patterns(ctx);
    populateReducePatterns(types, patterns);
    populateScanPatterns(types, patterns);
    populateExchangePatterns(types, patterns);
    populateHistogramPatterns(types, patterns);
    populateDotOperandPatterns(types, patterns);
    populateDotPatterns(types, patterns);
    populateWgmmaPatterns(types, patterns);
    populateTmaPatterns(types, patterns);
    populateWarpRolePatterns(types, patterns);
    populateFp8Patterns(types, patterns);
    populateAsyncCopyPatterns(types, patterns);
    populateAtomicPatterns(types, patterns);
    populatePrintPatterns(types, patterns);
    populateElementwisePatterns(types, patterns);
    populateInlineAsmPatterns(types, patterns);
    patterns.add<ConstantPattern, MakeRangePattern, SplatPattern, AddPtrPattern, LoadPattern,
                 StorePattern, GridQueryPattern<tile::ProgramIdOp, NVVM::BlockIdXOp, NVVM::BlockIdYOp,
                                  NVVM::BlockIdZOp>,
                 GridQueryPattern<tile::NumProgramsOp, NVVM::GridDimXOp, NVVM::GridDimYOp,
                                  NVVM::GridDimZOp>,
                 ClusterSizePattern,
                 RegisterRemapPattern<tile::BroadcastOp>, RegisterRemapPattern<tile::ExpandDimsOp>>(
        types, ctx);
    // In-thread moves beat any exchange through shared memory when they apply.
    patterns.add<RegisterRemapPattern<tilegpu::ConvertLayoutOp>>(types, ctx, /*benefit=*/3);
    populateFuncToLLVMConversionPatterns(types, patterns);
    populateLibDeviceConversionPatterns(types, patterns, /*benefit=*/10);
    arith::populateArithToLLVMConversionPatterns(types, patterns);
    populateMathToLLVMConversionPatterns(types, patterns);

    ConversionTarget target(*ctx);
    target.addLegalDialect<LLVM::LLVMDialect, NVVM::NVVMDialect>();
    target.addIllegalDialect<tile::TileDialect, tilegpu::TileGPUDialect, arith::ArithDialect,
                             math::MathDialect, func::FuncDialect>();
    target.addLegalOp<ModuleOp>();
    // Loops and branches keep their structure; their tiles become registers.
    scf::populateSCFStructuralTypeConversionsAndLegality(types, patterns, target);
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // Then structured control flow becomes branches, and branches LLVM.
    {
      RewritePatternSet toCF(ctx);
      populateSCFToControlFlowConversionPatterns(toCF);
      if (failed(applyPatternsGreedily(module, std::move(toCF))))
        return signalPassFailure();
      RewritePatternSet toLLVM(ctx);
      cf::populateControlFlowToLLVMConversionPatterns(types, toLLVM);
      arith::populateArithToLLVMConversionPatterns(types, toLLVM);
      ConversionTarget llvmTarget(*ctx);
      llvmTarget.addLegalDialect<LLVM::LLVMDialect, NVVM::NVVMDialect>();
      llvmTarget.addLegalOp<ModuleOp>();
      if (failed(applyFullConversion(module, llvmTarget, std::move(toLLVM))))
        return signalPassFailure();
    }

    // A warp-specialised kernel's producer warps run after the tile
    // program's (both programs' in a ping-pong kernel).
    auto producers = module->getAttrOfType<IntegerAttr>("tilegpu.producer_warps");
    int32_t threads =
        int32_t(warpsAttr.getInt() * programsPerCta(module) + (producers ? producers.getInt() : 0)) * kWarpSize;
    for (const std::string &name : kernels)
      if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name)) {
        fn->setAttr("nvvm.kernel", UnitAttr::get(ctx));
        fn->setAttr("nvvm.maxntid", DenseI32ArrayAttr::get(ctx, {threads, 1, 1}));
        // Warp specialisation with setmaxnreg: the kernel declares its
        // per-thread register count (the pool setmaxnreg moves registers in).
        if (auto regs = module->getAttrOfType<IntegerAttr>("tilegpu.max_registers"))
          fn->setAttr("nvvm.maxnreg", IntegerAttr::get(IntegerType::get(ctx, 32), regs.getInt()));
        // Multicast TMA rings: the kernel runs in clusters of CTAs along x
        // (.reqnctapercluster: a plain launch forms them).
        if (const int64_t ctas = clusterSize(module); ctas > 1)
          fn->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(), DenseI32ArrayAttr::get(ctx, {int32_t(ctas), 1, 1}));
        // By-value parameters are TMA tensor maps (use-tma), whose address
        // the bulk copies take: they stay in param space.
        for (unsigned i = 0; i < fn.getNumArguments(); ++i)
          if (fn.getArgAttr(i, LLVM::LLVMDialect::getByValAttrName()))
            fn.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(), UnitAttr::get(ctx));
      }
  }
};

} // namespace
