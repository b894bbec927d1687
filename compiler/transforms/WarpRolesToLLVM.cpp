//===- WarpRolesToLLVM.cpp - which warps do what (sm_90a) -----------------===//
//
// A warp-specialised kernel splits its warps by role: the tile program's
// warps (consumers; in a ping-pong kernel two programs of one warpgroup
// each) come first, the producer warpgroup after them.
//
//   is_producer_warp   tid.x >= 32 * num_warps * programs_per_cta
//   is_warp_leader     lane 0
//   program_slot       the consumer warpgroup's index, or the producer
//                      warp's index among the producer warps
//   set_max_registers  setmaxnreg.{inc,dec}
//   barrier            bar.sync of the program's warps (ctaBarrier)
//
// and two consumer warpgroups take turns on the tensor cores (a ping-pong
// GEMM's programs, loop by loop; attention's warpgroups, burst by burst of
// wgmma issues) through two mbarriers in tilegpu.order_init's buffer: the
// turn barrier (phase t completes when the warpgroup holding turn t has
// ended it, 128 arrivals) and the retirement barrier (phase 0 completes
// when either takes no more turns; one arrival).
//
//===----------------------------------------------------------------------===//
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"

#include <fmt/format.h>

using namespace mlir;

namespace tegula::lowering {
namespace {

/// Threads of a warpgroup: the turn barrier counts one's arrivals.
constexpr int64_t kWarpgroupThreads = 4 * kWarpSize;

/// Threads of one program: 32 * num_warps.
int64_t programThreads(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  auto warps = module ? module->getAttrOfType<IntegerAttr>("tilegpu.num_warps") : IntegerAttr();
  return (warps ? warps.getInt() : 4) * kWarpSize;
}

struct IsProducerWarpPattern : OpConversionPattern<tilegpu::IsProducerWarpOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::IsProducerWarpOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    auto module = op->getParentOfType<ModuleOp>();
    if (!module || !module->hasAttr("tilegpu.producer_warps"))
      return rw.notifyMatchFailure(op, "the module has no producer warps (tilegpu.producer_warps)");
    Value tid = NVVM::ThreadIdXOp::create(rw, op.getLoc(), rw.getI32Type());
    rw.replaceOp(op, LLVM::ICmpOp::create(rw, op.getLoc(), LLVM::ICmpPredicate::uge, tid,
                                          i32Const(rw, op.getLoc(), programThreads(op) * programsPerCta(op))));
    return success();
  }
};

struct IsWarpLeaderPattern : OpConversionPattern<tilegpu::IsWarpLeaderOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::IsWarpLeaderOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Value tid = NVVM::ThreadIdXOp::create(rw, loc, rw.getI32Type());
    rw.replaceOp(op, LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq,
                                          LLVM::AndOp::create(rw, loc, tid, i32Const(rw, loc, kWarpSize - 1)),
                                          i32Const(rw, loc, 0)));
    return success();
  }
};

struct ProgramSlotPattern : OpConversionPattern<tilegpu::ProgramSlotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::ProgramSlotOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    rw.replaceOp(op, programSlot(rw, op.getLoc()));
    return success();
  }
};

struct SetMaxRegistersPattern : OpConversionPattern<tilegpu::SetMaxRegistersOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::SetMaxRegistersOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    inlinePtx(rw, op.getLoc(), Type(), {},
              fmt::format("setmaxnreg.{}.sync.aligned.u32 {};", op.getIncrease() ? "inc" : "dec", op.getCount()),
              "");
    rw.eraseOp(op);
    return success();
  }
};

/// The program's threads meet (ctaBarrier: bar.sync 0, or the consumers'
/// named barrier in a warp-specialised kernel).
struct BarrierPattern : OpConversionPattern<tilegpu::BarrierOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::BarrierOp op, OpAdaptor, ConversionPatternRewriter &rw) const override {
    if (op.getFenceAsyncProxy()) // a TMA copy after the barrier reads what the threads stored
      inlinePtx(rw, op.getLoc(), Type(), {}, "fence.proxy.async.global;", "");
    ctaBarrier(rw, op.getLoc());
    rw.eraseOp(op);
    return success();
  }
};

/// The turn barrier and the retirement barrier, in the kernel's
/// tilegpu.order_init buffer.
FailureOr<std::pair<Value, Value>> orderBarriers(OpBuilder &b, Location loc, Operation *op) {
  auto fn = op->getParentOfType<FunctionOpInterface>();
  tilegpu::OrderInitOp init;
  if (fn)
    fn->walk([&](tilegpu::OrderInitOp i) { init = i; });
  if (!init || !analysis::sharedOffset(init))
    return failure();
  Value turn = sharedBuffer(b, loc, init);
  Value retired = LLVM::GEPOp::create(b, loc, turn.getType(), b.getI8Type(), turn,
                                      ValueRange{i32Const(b, loc, analysis::kTmaBarrierBytes)});
  return std::pair{turn, retired};
}
constexpr const char *kNoOrder = "no tilegpu.order_init with a shared offset in the kernel";

struct OrderInitPattern : OpConversionPattern<tilegpu::OrderInitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::OrderInitOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto bars = orderBarriers(rw, loc, op);
    if (failed(bars))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    Value leader = isProgramLeader(rw, loc);
    inlinePtx(rw, loc, Type(), {bars->first, bars->second, leader},
              fmt::format("@$2 mbarrier.init.shared::cta.b64 [$0], {};\n"
                          "@$2 mbarrier.init.shared::cta.b64 [$1], 1;\n"
                          "@$2 fence.mbarrier_init.release.cluster;",
                          kWarpgroupThreads),
              "l,l,b");
    ctaBarrier(rw, loc);
    rw.eraseOp(op);
    return success();
  }
};

struct OrderWaitPattern : OpConversionPattern<tilegpu::OrderWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::OrderWaitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto bars = orderBarriers(rw, loc, op);
    if (failed(bars))
      return rw.notifyMatchFailure(op, kNoOrder);
    // Turn 0 starts at once; turn t waits for phase t - 1 of the turn
    // barrier, unless the other warpgroup has retired. Without a turn: the
    // consumer warpgroup w's next, w + 2k - only its parity counts, and a
    // fresh barrier lets the first through (phase -1 counts as complete).
    Value parity, first;
    if (Value turn = adaptor.getTurn()) {
      parity = LLVM::AndOp::create(rw, loc, LLVM::SubOp::create(rw, loc, turn, i32Const(rw, loc, 1)),
                                   i32Const(rw, loc, 1));
      first = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq, turn, i32Const(rw, loc, 0));
    } else {
      Value tid = NVVM::ThreadIdXOp::create(rw, loc, rw.getI32Type());
      Value warpgroup = LLVM::UDivOp::create(rw, loc, tid, i32Const(rw, loc, kWarpgroupThreads));
      parity = LLVM::XOrOp::create(rw, loc, LLVM::AndOp::create(rw, loc, warpgroup, i32Const(rw, loc, 1)),
                                   i32Const(rw, loc, 1));
      first = LLVM::ConstantOp::create(rw, loc, rw.getI1Type(), rw.getBoolAttr(false));
    }
    inlinePtx(rw, loc, Type(), {bars->first, parity, bars->second, first},
              "{\n.reg .pred %tegula_go;\n@$3 bra tegula_turn_done;\ntegula_turn:\n"
              "mbarrier.try_wait.parity.shared::cta.b64 %tegula_go, [$0], $1;\n"
              "@%tegula_go bra tegula_turn_done;\n"
              "mbarrier.try_wait.parity.shared::cta.b64 %tegula_go, [$2], 0;\n"
              "@!%tegula_go bra tegula_turn;\ntegula_turn_done:\n}",
              "l,r,l,b");
    rw.eraseOp(op);
    return success();
  }
};

/// Named barriers 3 and 4: consumer warpgroup w's own (ids 0, 1 and 2 are
/// the CTA's, the consumers' and ping-pong program 1's).
constexpr int64_t kFirstWarpgroupBarrier = 3;

/// order_arrive: every thread of the warpgroup arrives on the turn barrier,
/// then waits at the warpgroup's named barrier. mbarrier waits tell phases
/// apart only by parity: a warp that reached its next order_wait while a
/// sibling warp had still to arrive would take the warpgroup's own open
/// phase for the other's completed one (and arrive twice in it).
struct OrderArrivePattern : OpConversionPattern<tilegpu::OrderArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::OrderArriveOp op, OpAdaptor, ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto bars = orderBarriers(rw, loc, op);
    if (failed(bars))
      return rw.notifyMatchFailure(op, kNoOrder);
    Value tid = NVVM::ThreadIdXOp::create(rw, loc, rw.getI32Type());
    Value id = LLVM::AddOp::create(rw, loc, LLVM::UDivOp::create(rw, loc, tid, i32Const(rw, loc, kWarpgroupThreads)),
                                   i32Const(rw, loc, kFirstWarpgroupBarrier));
    inlinePtx(rw, loc, Type(), {bars->first, id},
              fmt::format("mbarrier.arrive.shared::cta.b64 _, [$0];\nbar.sync $1, {};", kWarpgroupThreads),
              "l,r,~{memory}");
    rw.eraseOp(op);
    return success();
  }
};

/// order_retire: the program's first thread arrives on the retirement barrier.
struct OrderRetirePattern : OpConversionPattern<tilegpu::OrderRetireOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tilegpu::OrderRetireOp op, OpAdaptor, ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto bars = orderBarriers(rw, loc, op);
    if (failed(bars))
      return rw.notifyMatchFailure(op, kNoOrder);
    inlinePtx(rw, loc, Type(), {bars->second, isProgramLeader(rw, loc)},
              "@$1 mbarrier.arrive.shared::cta.b64 _, [$0];", "l,b");
    rw.eraseOp(op);
    return success();
  }
};

} // namespace

void populateWarpRolePatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<IsProducerWarpPattern, IsWarpLeaderPattern, ProgramSlotPattern, SetMaxRegistersPattern, BarrierPattern,
               OrderInitPattern, OrderWaitPattern, OrderArrivePattern, OrderRetirePattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
