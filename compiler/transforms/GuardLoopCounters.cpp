//===- GuardLoopCounters.cpp - a wrapping i32 loop counter stops the kernel ===//
//
// Pass `guard-loop-counters`: an i32 `scf.for` steps its counter in i32 (as
// Triton's loops do). When the step after the last iteration carries it past
// INT32_MAX it wraps to a negative value, below the bound again, and the
// loop goes on for about 2^32 / step more iterations, out of bounds. The
// interpreter, which counts in 64 bits, reports such a loop; this pass makes
// the compiled kernel say the same: before each loop whose bounds are not
// known safe, one compare (`ub > INT32_MAX - step + 1`, the bound within a
// step of the maximum), and under it the exact test (the last iteration's
// counter plus the step, in 64 bits) and a trap: the launch fails (the
// simulator says why, at the loop's line, as the interpreter does). Nothing runs
// in the loop, and nothing is live across it: lowering the loop itself so that
// it ends instead (a saturating latch, a second exit test, a rotated latch
// against `ub - step`) cost registers, spills and LLVM's loop shapes in the
// GEMMs and attention kernels. Loops whose constant bound and step cannot
// wrap are left alone; ones whose constant bounds always wrap are an error
// at the loop's line. Runs last on tilegpu IR, after the pipeliner, so the
// loops it guards are the ones the lowering emits.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

#include <fmt/format.h>

namespace tegula {
#define GEN_PASS_DEF_GUARDLOOPCOUNTERS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;

namespace {

std::optional<int64_t> constantInt(Value v) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return c.getSExtValue();
  return std::nullopt;
}

constexpr const char *kAdvice = "give the loop i64 bounds (x.to(tl::i64))";

struct GuardLoopCounters : tegula::impl::GuardLoopCountersBase<GuardLoopCounters> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      if (failed(guard(loop)))
        return signalPassFailure();
  }

  LogicalResult guard(scf::ForOp loop) {
    auto type = dyn_cast<IntegerType>(loop.getInductionVar().getType());
    // i64 counters would take centuries to wrap; unsigned loops compare
    // otherwise.
    if (!type || type.getWidth() != 32 || loop.getUnsignedCmp())
      return success();
    const int64_t max = INT32_MAX;
    std::optional<int64_t> lb = constantInt(loop.getLowerBound()), ub = constantInt(loop.getUpperBound()),
                           step = constantInt(loop.getStep());
    if (ub && step && *step > 0 && *ub + *step - 1 <= max)
      return success();
    if (lb && ub && step && *step > 0) {
      if (*lb >= *ub || *lb + (*ub - *lb - 1) / *step * *step + *step <= max)
        return success();
      return loop.emitError(fmt::format("this loop's i32 counter passes 2147483647 after its last iteration ({} to "
                                        "{} by {}): it would wrap around and the loop go on; {}",
                                        *lb, *ub, *step, kAdvice));
    }

    OpBuilder b(loop);
    Location loc = loop.getLoc();
    auto i32 = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(int32_t(v))); };
    auto i64 = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v)); };
    // The cheap test: the bound within a step of INT32_MAX (a runtime step
    // is positive: tl::range checks it before the loop).
    Value threshold = arith::AddIOp::create(b, loc, arith::SubIOp::create(b, loc, i32(max), loop.getStep()), i32(1));
    Value near = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, loop.getUpperBound(), threshold);
    auto nearIf = scf::IfOp::create(b, loc, near, /*withElseRegion=*/false);
    b.setInsertionPointToStart(nearIf.thenBlock());
    // The exact one, in 64 bits: last = lb + (ub - lb - 1) / step * step.
    Type wide = b.getI64Type();
    Value lo = arith::ExtSIOp::create(b, loc, wide, loop.getLowerBound());
    Value hi = arith::ExtSIOp::create(b, loc, wide, loop.getUpperBound());
    Value by = arith::MaxSIOp::create(b, loc, arith::ExtSIOp::create(b, loc, wide, loop.getStep()), i64(1));
    Value span = arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, hi, lo), i64(1));
    Value last = arith::AddIOp::create(
        b, loc, lo, arith::MulIOp::create(b, loc, arith::DivSIOp::create(b, loc, span, by), by));
    Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lo, hi);
    Value past = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, arith::AddIOp::create(b, loc, last, by),
                                       i64(max));
    // Through an opaque move: LLVM must not learn from the trap (it does
    // not return) that the loop's bound is small, or it widens counters to
    // 64 bits and reshapes loops (more registers in the GEMMs).
    Value wraps = arith::ExtUIOp::create(b, loc, b.getI32Type(), arith::AndIOp::create(b, loc, runs, past));
    Value hidden = LLVM::InlineAsmOp::create(b, loc, b.getI32Type(), ValueRange{wraps}, "mov.b32 $0, $1;", "=r,r",
                                             /*has_side_effects=*/true, /*is_align_stack=*/false,
                                             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                             ArrayAttr())
                       .getResult(0);
    auto wrapIf = scf::IfOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, hidden, i32(0)),
                                    /*withElseRegion=*/false);
    b.setInsertionPointToStart(wrapIf.thenBlock());
    // A trap, no message: a call (vprintf) anywhere in a kernel makes
    // ptxas serialise its wgmmas (C7510). The simulator reports the reason
    // the trap carries; the interpreter says it too.
    auto trap = LLVM::Trap::create(b, loc);
    trap->setAttr("tegula.trap_reason",
                  b.getStringAttr(fmt::format("this loop's i32 counter would pass 2147483647 after its last "
                                              "iteration, wrap around and the loop go on; {}",
                                              kAdvice)));
    return success();
  }
};

} // namespace
