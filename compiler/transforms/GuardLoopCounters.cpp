//===- GuardLoopCounters.cpp - a wrapping loop counter stops the kernel ---===//
//
// Pass `guard-loop-counters`: an i32 `scf.for` steps its counter in i32 (as
// Triton's loops do), an i64 one in i64. When the step after the last
// iteration carries it past the type's maximum it wraps to a negative value,
// below the bound again, and the loop goes on (for about 2^32 / step more
// iterations in i32), out of bounds. The interpreter reports such a loop;
// this pass makes the compiled kernel stop: before each loop whose bounds
// are not known safe, one compare (`ub > MAX - step + 1`, the bound within a
// step of the maximum), and under it the exact test (the last iteration's
// counter against MAX - step, from ub - lb - 1 as an unsigned number) and a
// stop: the kernel reports the loop's line and traps, and the launch fails
// saying why (StopWithReport.h; the interpreter says it too). Nothing runs
// in the loop, and nothing is live across it: lowering the loop itself so
// that it ends instead (a saturating latch, a second exit test, a rotated
// latch against `ub - step`) cost registers, spills and LLVM's loop shapes
// in the GEMMs and attention kernels. Loops
// whose constant bound and step cannot wrap are left alone; ones whose
// constant bounds always wrap are an error at the loop's line. Runs last on
// tilegpu IR, after the pipeliner, so the loops it guards are the ones the
// lowering emits.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LoweringCommon.h"
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/StopWithReport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

#include <fmt/format.h>

namespace tegula {
#define GEN_PASS_DEF_GUARDLOOPCOUNTERS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;

namespace {

std::optional<APInt> constantInt(Value v) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return c;
  return std::nullopt;
}

/// What a loop whose counter of `width` bits would wrap should do instead.
std::string advice(unsigned width) {
  return width == 32 ? "give the loop i64 bounds (x.to(tl::i64))"
                     : "its bounds and step come within a step of the i64 limit";
}

struct GuardLoopCounters : tegula::impl::GuardLoopCountersBase<GuardLoopCounters> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      if (failed(guard(loop)))
        return signalPassFailure();
  }

  LogicalResult guard(scf::ForOp loop) {
    // Signed counters of 32 or 64 bits (tl::range's); unsigned loops compare
    // otherwise.
    auto type = dyn_cast<IntegerType>(loop.getInductionVar().getType());
    if (!type || (type.getWidth() != 32 && type.getWidth() != 64) || loop.getUnsignedCmp())
      return success();
    const unsigned width = type.getWidth();
    // A descending tl::range counts up on its negated bounds: its messages
    // say the user's.
    const int64_t sign = loop->hasAttr("tile.descending") ? -1 : 1;
    const APInt max = APInt::getSignedMaxValue(width);
    std::optional<APInt> lb = constantInt(loop.getLowerBound()), ub = constantInt(loop.getUpperBound()),
                         step = constantInt(loop.getStep());
    // In 128 bits, where nothing here overflows.
    auto wide = [](const APInt &v) { return v.sext(128); };
    const APInt wideMax = wide(max), one(128, 1);
    if (ub && step && step->isStrictlyPositive() && (wide(*ub) + wide(*step) - one).sle(wideMax))
      return success();
    if (lb && ub && step && step->isStrictlyPositive()) {
      const APInt lo = wide(*lb), hi = wide(*ub), by = wide(*step);
      if (lo.sge(hi) || (lo + (hi - lo - one).sdiv(by) * by + by).sle(wideMax))
        return success();
      return loop.emitError(fmt::format("this loop's i{} counter passes {} after its last iteration ({} to {} by {}): "
                                        "it would wrap around and the loop go on; {}",
                                        width, sign * max.getSExtValue(), sign * lb->getSExtValue(),
                                        sign * ub->getSExtValue(), sign * step->getSExtValue(), advice(width)));
    }

    OpBuilder b(loop);
    Location loc = loop.getLoc();
    auto constant = [&](const APInt &v) { return arith::ConstantOp::create(b, loc, IntegerAttr::get(type, v)); };
    const APInt oneN(width, 1);
    Value lo = loop.getLowerBound(), hi = loop.getUpperBound(), by = loop.getStep();
    // The cheap test: the bound within a step of the maximum (a runtime
    // step is positive: tl::range checks it before the loop).
    Value threshold = arith::AddIOp::create(b, loc, arith::SubIOp::create(b, loc, constant(max), by), constant(oneN));
    Value near = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, hi, threshold);
    auto nearIf = scf::IfOp::create(b, loc, near, /*withElseRegion=*/false);
    b.setInsertionPointToStart(nearIf.thenBlock());
    // The exact one: last = lb + (ub - lb - 1) / step * step passes
    // max - step. ub - lb - 1 is exact as an unsigned number where lb < ub;
    // last lies below ub.
    Value safeStep = arith::MaxSIOp::create(b, loc, by, constant(oneN));
    Value span = arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, hi, lo), constant(oneN));
    Value last = arith::AddIOp::create(
        b, loc, lo, arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, span, safeStep), safeStep));
    Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lo, hi);
    Value past = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, last,
                                       arith::SubIOp::create(b, loc, constant(max), safeStep));
    // Through an opaque move: LLVM must not learn from the trap (it does
    // not return) that the loop's bound is small, or it widens counters to
    // 64 bits and reshapes loops (more registers in the GEMMs).
    Value wraps = arith::ExtUIOp::create(b, loc, b.getI32Type(), arith::AndIOp::create(b, loc, runs, past));
    Value hidden = LLVM::InlineAsmOp::create(b, loc, b.getI32Type(), ValueRange{wraps}, "mov.b32 $0, $1;", "=r,r",
                                             /*has_side_effects=*/true, /*is_align_stack=*/false,
                                             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                             ArrayAttr())
                       .getResult(0);
    Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
    auto wrapIf = scf::IfOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, hidden, zero),
                                    /*withElseRegion=*/false);
    b.setInsertionPointToStart(wrapIf.thenBlock());
    // No call (vprintf) says why: a call anywhere in a kernel makes ptxas
    // serialise its wgmmas (C7510). The kernel leaves a report the runtime
    // reads; the simulator and the interpreter say it too.
    Type i32 = b.getI32Type();
    SmallVector<Value> program = {tegula::lowering::programIdX(b, loc), NVVM::BlockIdYOp::create(b, loc, i32),
                                  NVVM::BlockIdZOp::create(b, loc, i32)};
    tegula::lowering::stopWithReport(
        b, loc,
        fmt::format("this loop's i{} counter would pass {} after its last iteration, wrap around and the loop go on; "
                    "{}",
                    width, sign * max.getSExtValue(), advice(width)),
        program, {});
    return success();
  }
};

} // namespace
