//===- AtomicsToLLVM.cpp - tile.atomic_rmw / atomic_cas as PTX atom -------===//
//
// Each element is updated exactly once: by the thread and register that own
// it in the pointer tile's layout (copies skip it, and read the owner's old
// value through shared memory when it is used), or, for a scalar pointer,
// by thread 0, which then shares the old value through shared memory when
// the result is used; a scalar atomic's release and acquire order the whole
// program's accesses (a CTA barrier before and after it), as a
// single-threaded tile program expects. A tile atomic's order is each
// element's own. Predicated `atom.global` keeps the code branch-free, so
// atomics inside loops lower like everything else.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LoweringCommon.h"

#include "compiler/analysis/SharedMemoryUsage.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

#include <fmt/format.h>

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::lowering {
namespace {

/// The PTX `atom` operation and type for a kind on an element type, or ""
/// when PTX has no such atomic. "casloop:<instructions>" where PTX has no
/// atom for it: a compare-and-swap loop computing %tegula_new from
/// %tegula_seen (the value in memory) and $2 (the operand).
std::string atomSuffix(tile::AtomicRMWKind kind, Type elem, bool bf16AtomicAdd) {
  unsigned w = elem.getIntOrFloatBitWidth();
  bool isFloat = isa<FloatType>(elem);
  const bool isMax = kind == tile::AtomicRMWKind::Max;
  auto loop = [](const std::string &compute) { return "casloop:" + compute + " %tegula_new, %tegula_seen, $2;"; };
  if (w == 16) {
    // PTX's 16-bit atomics are f16 add (sm_70), bf16 add (sm_90) and
    // cas.b16 (sm_70); everything else is a cas.b16 loop.
    const std::string type = !isFloat ? "" : elem.isBF16() ? "bf16" : "f16";
    switch (kind) {
    case tile::AtomicRMWKind::Add:
      if (!isFloat)
        return loop("add.u16");
      if (elem.isF16() || bf16AtomicAdd)
        return "add.noftz." + type;
      // sm_80 has no add.bf16: a fused multiply-add by one rounds the sum once.
      return "casloop:.reg .b16 %tegula_one;\n\tmov.b16 %tegula_one, 0x3F80;\n\t"
             "fma.rn.bf16 %tegula_new, %tegula_seen, %tegula_one, $2;";
    case tile::AtomicRMWKind::Max:
    case tile::AtomicRMWKind::Min:
      return loop(fmt::format("{}.{}", isMax ? "max" : "min", isFloat ? "NaN." + type : "s16"));
    case tile::AtomicRMWKind::Xchg: return "casloop:mov.b16 %tegula_new, $2;";
    case tile::AtomicRMWKind::And: return loop("and.b16");
    case tile::AtomicRMWKind::Or: return loop("or.b16");
    case tile::AtomicRMWKind::Xor: return loop("xor.b16");
    }
    return "";
  }
  switch (kind) {
  case tile::AtomicRMWKind::Add:
    if (isFloat)
      return (w == 32 || w == 64) ? fmt::format("add.f{}", w) : "";
    return fmt::format("add.u{}", w);
  case tile::AtomicRMWKind::Max:
  case tile::AtomicRMWKind::Min:
    if (isFloat && w == 32) // NaN-propagating, like the interpreter: a compare-and-swap loop
      return loop(fmt::format("{}.NaN.f32", isMax ? "max" : "min"));
    if (isFloat) // f64 has no max.NaN: a NaN operand makes the sum NaN
      return fmt::format("casloop:.reg .pred %tegula_unordered;\n\t"
                         "{}.f64 %tegula_new, %tegula_seen, $2;\n\t"
                         "setp.nan.f64 %tegula_unordered, %tegula_seen, $2;\n\t"
                         "@%tegula_unordered add.f64 %tegula_new, %tegula_seen, $2;",
                         isMax ? "max" : "min");
    return fmt::format("{}.s{}", isMax ? "max" : "min", w);
  case tile::AtomicRMWKind::Xchg:
    return (w == 32 || w == 64) ? fmt::format("exch.b{}", w) : "";
  case tile::AtomicRMWKind::And: return fmt::format("and.b{}", w);
  case tile::AtomicRMWKind::Or: return fmt::format("or.b{}", w);
  case tile::AtomicRMWKind::Xor: return fmt::format("xor.b{}", w);
  }
  return "";
}

/// PTX's `.sem` of an atomic at GPU scope.
std::string semantics(tile::MemoryOrder order) {
  return tile::stringifyMemoryOrder(order).str();
}

/// Where PTX has no atomic for the operation (f32 max/min with NaN
/// propagation, 16-bit ones): load, compute, compare-and-swap until no one
/// intervened, on words of the element's width (32 or 16 bits).
Value predicatedCasLoop(OpBuilder &b, Location loc, const std::string &compute, const std::string &sem,
                        Value ptr, Value value, Value pred) {
  auto [asmType, reg] = asmRegister(value.getType());
  const unsigned w = asmType.getIntOrFloatBitWidth();
  std::string body =
      fmt::format("{{\n\t.reg .pred %tegula_p;\n\t.reg .b{0} %tegula_old, %tegula_seen, %tegula_new;\n\t"
                  "mov.b{0} $0, 0;\n\t"
                  "@!$3 bra TEGULA_CAS_DONE_${{:uid}};\n\t"
                  "ld.global.b{0} %tegula_old, [ $1 + 0 ];\n"
                  "TEGULA_CAS_LOOP_${{:uid}}:\n\t"
                  "mov.b{0} %tegula_seen, %tegula_old;\n\t",
                  w) +
      compute + "\n\t" +
      fmt::format("atom.{}.gpu.global.cas.b{} %tegula_old, [ $1 + 0 ], %tegula_seen, %tegula_new;\n\t", sem, w) +
      fmt::format("setp.ne.b{} %tegula_p, %tegula_old, %tegula_seen;\n\t", w) +
      "@%tegula_p bra TEGULA_CAS_LOOP_${:uid};\n\t" + fmt::format("mov.b{} $0, %tegula_old;\n", w) +
      "TEGULA_CAS_DONE_${:uid}:\n\t}";
  auto asmOp = LLVM::InlineAsmOp::create(
      b, loc, asmType, ValueRange{ptr, toAsmInt(b, loc, value, asmType), pred}, body,
      fmt::format("={0},l,{0},b", reg), /*has_side_effects=*/true, false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr(), ArrayAttr());
  return fromAsmInt(b, loc, asmOp.getResult(0), value.getType());
}

/// `mov $0, 0; @p atom.<sem>.gpu.global.<op> $0, [ptr], operands...`
Value predicatedAtom(OpBuilder &b, Location loc, const std::string &op, const std::string &sem, Type elem,
                     Value ptr, ValueRange operands, Value pred) {
  if (llvm::StringRef(op).starts_with("casloop:"))
    return predicatedCasLoop(b, loc, op.substr(8), sem, ptr, operands[0], pred);
  auto [asmType, reg] = asmRegister(elem);
  unsigned w = asmType.getIntOrFloatBitWidth();
  std::string ops, constraints = fmt::format("={},l", reg);
  SmallVector<Value> args = {ptr};
  for (size_t i = 0; i < operands.size(); ++i) {
    ops += fmt::format(", ${}", i + 2);
    constraints += "," + reg;
    args.push_back(toAsmInt(b, loc, operands[i], asmType));
  }
  int predIdx = int(operands.size()) + 2;
  constraints += ",b";
  args.push_back(pred);
  // At GPU scope, ordered as the op says (acq_rel by default, as Triton's:
  // locks and flags built from atomics order the accesses around them).
  std::string body = fmt::format("mov.b{0} $0, 0;\n\t@${1} atom.{4}.gpu.global.{2} $0, [ $1 + 0 ]{3};", w,
                                 predIdx, op, ops, sem);
  auto asmOp = LLVM::InlineAsmOp::create(b, loc, asmType, args, body, constraints,
                                         /*has_side_effects=*/true, false,
                                         LLVM::tailcallkind::TailCallKind::None,
                                         LLVM::AsmDialectAttr(), ArrayAttr());
  return fromAsmInt(b, loc, asmOp.getResult(0), elem);
}

/// Thread 0 holds `v`; give every thread its value (through `scratch`, the
/// op's shared-memory buffer: a barrier before the store, one before the
/// loads; the next user's leading barrier orders the loads before its writes).
Value broadcastFromThread0(OpBuilder &b, Location loc, Value v, Value isThread0, Value scratch) {
  ctaBarrier(b, loc);
  predicatedStore(b, loc, scratch, v, isThread0, "shared");
  ctaBarrier(b, loc);
  return LLVM::LoadOp::create(b, loc, v.getType(), scratch);
}

/// Each element's owner (the register and thread that ran its atomic) stores
/// its value in the element's slot of `scratch` (row-major); after a barrier
/// every copy reads it there. A barrier first: earlier users of the bytes are
/// done; the next user's leading barrier orders these reads before its writes.
void shareOwnersValues(OpBuilder &b, Location loc, SmallVector<Value> &values, ArrayRef<int64_t> shape,
                       const LinearLayout &ll, const Owners &owners, Value scratch) {
  Type ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  Type elem = values.front().getType();
  SmallVector<Value> slots;
  for (const SmallVector<Value> &at : coordinates(b, loc, ll)) {
    Value index = at[0];
    for (size_t d = 1; d < at.size(); ++d)
      index = LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, index, i32Const(b, loc, shape[d])), at[d]);
    slots.push_back(LLVM::GEPOp::create(b, loc, ptr3, elem, scratch, ValueRange{index}));
  }
  ctaBarrier(b, loc);
  for (size_t r = 0; r < values.size(); ++r)
    if (!(int32_t(r) & owners.duplicateRegisters))
      predicatedStore(b, loc, slots[r], values[r], owners.threadOwns, "shared");
  ctaBarrier(b, loc);
  for (size_t r = 0; r < values.size(); ++r)
    values[r] = LLVM::LoadOp::create(b, loc, elem, slots[r]);
}

/// Per element: which register/thread performs it, and the values it needs.
template <typename OpTy>
LogicalResult lowerAtomic(OpTy op, ValueRange ptrs, ArrayRef<ValueRange> operands,
                          ValueRange mask, const std::string &atom,
                          ConversionPatternRewriter &rw) {
  Location loc = op.getLoc();
  Type elem = tile::getElementTypeOrSelf(op.getResult().getType());
  auto ptrTensor = dyn_cast<RankedTensorType>(op.getPtr().getType());
  bool used = !op.getResult().use_empty();
  if (!ptrTensor && used && !analysis::sharedOffset(op))
    return rw.notifyMatchFailure(op, kNoSharedOffset);
  if (!ptrTensor) {
    // The program's atomic is thread 0's; its ordering covers the whole
    // program's accesses through the program's barrier: a release after every
    // thread's earlier stores (a stream-K partial block, then its arrival), an
    // acquire before every thread's later loads (the broadcast's barriers do
    // that when the old value is used).
    const tile::MemoryOrder order = op.getSem();
    const bool releases = order == tile::MemoryOrder::Release || order == tile::MemoryOrder::AcqRel;
    const bool acquires = order == tile::MemoryOrder::Acquire || order == tile::MemoryOrder::AcqRel;
    if (releases)
      ctaBarrier(rw, loc);
    Value isThread0 = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq,
                                           programThreadIndex(rw, loc),
                                           i32Const(rw, loc, 0));
    Value pred = mask.empty() ? isThread0 : LLVM::AndOp::create(rw, loc, mask[0], isThread0).getResult();
    SmallVector<Value> args;
    for (ValueRange v : operands)
      args.push_back(v[0]);
    Value old = predicatedAtom(rw, loc, atom, semantics(order), elem, ptrs[0], args, pred);
    if (acquires && !used)
      ctaBarrier(rw, loc);
    rw.replaceOp(op, used ? broadcastFromThread0(rw, loc, old, isThread0, sharedBuffer(rw, loc, op))
                          : old);
    return success();
  }
  LinearLayout ll = layoutOf(ptrTensor);
  const bool shareOlds = used && !ll.isInjective(); // copies of an element wait for its owner's old value
  if (shareOlds && !analysis::sharedOffset(op))
    return rw.notifyMatchFailure(op, kNoSharedOffset);
  Owners owners = ownersOf(rw, loc, ll);
  int32_t dupRegs = owners.duplicateRegisters;
  Value owner = owners.threadOwns;
  SmallVector<Value> results;
  for (size_t r = 0; r < ptrs.size(); ++r) {
    Value pred = (int32_t(r) & dupRegs) ? LLVM::ConstantOp::create(rw, loc, rw.getI1Type(),
                                                                   rw.getBoolAttr(false))
                                               .getResult()
                                        : owner;
    if (!mask.empty())
      pred = LLVM::AndOp::create(rw, loc, pred, mask[r]);
    SmallVector<Value> args;
    for (ValueRange v : operands)
      args.push_back(v[r]);
    results.push_back(predicatedAtom(rw, loc, atom, semantics(op.getSem()), elem, ptrs[r], args, pred));
  }
  if (shareOlds)
    shareOwnersValues(rw, loc, results, ptrTensor.getShape(), ll, owners, sharedBuffer(rw, loc, op));
  rw.replaceOpWithMultiple(op, {results});
  return success();
}

struct AtomicRMWPattern : OpConversionPattern<tile::AtomicRMWOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::AtomicRMWOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Type elem = tile::getElementTypeOrSelf(op.getValue().getType());
    const auto &types = static_cast<const TileTypeConverter &>(*getTypeConverter());
    std::string atom = atomSuffix(op.getKind(), elem, types.bf16AtomicAdd);
    if (atom.empty())
      return rw.notifyMatchFailure(op, "this atomic kind and element type are not lowered yet");
    return lowerAtomic(op, adaptor.getPtr(), {adaptor.getValue()},
                       op.getMask() ? adaptor.getMask() : ValueRange(), atom, rw);
  }
};

struct AtomicCASPattern : OpConversionPattern<tile::AtomicCASOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::AtomicCASOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Type elem = tile::getElementTypeOrSelf(op.getValue().getType());
    unsigned w = elem.getIntOrFloatBitWidth();
    if (w != 16 && w != 32 && w != 64)
      return rw.notifyMatchFailure(op, "compare-and-swap of 16, 32 or 64 bits");
    return lowerAtomic(op, adaptor.getPtr(), {adaptor.getCmp(), adaptor.getValue()}, ValueRange(),
                       fmt::format("cas.b{}", w), rw);
  }
};

} // namespace

void populateAtomicPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<AtomicRMWPattern, AtomicCASPattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
