//===- ConvertTileToTileGPU.cpp - assign layouts to every tile ------------===//
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace tegula {
#define GEN_PASS_DEF_CONVERTTILETOTILEGPU
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

RankedTensorType withEncoding(RankedTensorType t, Attribute encoding) {
  return RankedTensorType::get(t.getShape(), t.getElementType(), encoding);
}

/// Insert `convert_layout(v) -> type` before `user`, or return v if it
/// already has that type.
Value convertTo(OpBuilder &b, Value v, Type type, Operation *user) {
  if (v.getType() == type)
    return v;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(user);
  return tilegpu::ConvertLayoutOp::create(b, user->getLoc(), type, v);
}

/// A scan's layout (ScanToLLVM needs one ordered along the axis): the axis
/// fastest, its lanes and then its warps first, each thread a run of
/// consecutive elements of it; the other dimensions as the default spreads
/// them (leftover lanes and warps repeat along the slowest one).
Attribute scanEncoding(MLIRContext *ctx, ArrayRef<int64_t> shape, int axis, int numWarps) {
  const int rank = int(shape.size());
  SmallVector<int32_t> order = {int32_t(axis)}, spt(size_t(rank), 1), tpw(size_t(rank), 1), wpc(size_t(rank), 1);
  for (int d = rank - 1; d >= 0; --d)
    if (d != axis)
      order.push_back(int32_t(d));
  int32_t lanes = 32;
  for (int32_t d : order) {
    const int32_t take = int32_t(std::min<int64_t>(lanes, shape[size_t(d)]));
    tpw[size_t(d)] = take;
    lanes /= take;
  }
  tpw[size_t(order.back())] *= lanes;
  int32_t warps = numWarps;
  const int32_t alongAxis =
      int32_t(std::min<int64_t>(warps, std::max<int64_t>(1, shape[size_t(axis)] / tpw[size_t(axis)])));
  wpc[size_t(axis)] = alongAxis;
  warps /= alongAxis;
  for (int32_t d : llvm::reverse(order)) {
    if (d == axis)
      continue;
    const int32_t take = int32_t(std::min<int64_t>(warps, std::max<int64_t>(1, shape[size_t(d)] / tpw[size_t(d)])));
    wpc[size_t(d)] = take;
    warps /= take;
  }
  wpc[size_t(order.back())] *= warps;
  spt[size_t(axis)] = int32_t(std::max<int64_t>(1, shape[size_t(axis)] / (int64_t(tpw[size_t(axis)]) * wpc[size_t(axis)])));
  return tilegpu::BlockedEncodingAttr::get(ctx, spt, tpw, wpc, order);
}

struct ConvertTileToTileGPUPass
    : tegula::impl::ConvertTileToTileGPUBase<ConvertTileToTileGPUPass> {
  using ConvertTileToTileGPUBase::ConvertTileToTileGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (numWarps < 1 || (numWarps & (numWarps - 1)) != 0) {
      module.emitError() << "num-warps must be a power of two, got " << int(numWarps);
      return signalPassFailure();
    }
    // 16-byte accesses for the narrowest element a function loads or
    // stores (4 f32, 8 bf16, 16 i8 per thread): one layout for every tile of
    // the function, so data, pointers and masks agree without conversions.
    llvm::DenseMap<Operation *, int> vectorElements;
    module.walk([&](func::FuncOp fn) {
      int minBits = 32;
      fn.walk([&](Operation *op) {
        Value data = isa<tile::LoadOp>(op)    ? op->getResult(0)
                     : isa<tile::StoreOp>(op) ? cast<tile::StoreOp>(op).getValue()
                                              : Value();
        if (auto t = data ? dyn_cast<RankedTensorType>(data.getType()) : nullptr)
          if (t.getElementType().isIntOrFloat())
            minBits = std::min<int>(minBits, std::max<int>(8, int(t.getElementType().getIntOrFloatBitWidth())));
      });
      vectorElements[fn] = 128 / minBits;
    });
    auto defaultType = [&](Type t, Operation *where) -> Type {
      auto tensor = dyn_cast<RankedTensorType>(t);
      if (!tensor || tensor.getEncoding())
        return t;
      auto fn = isa<func::FuncOp>(where) ? cast<func::FuncOp>(where) : where->getParentOfType<func::FuncOp>();
      return withEncoding(tensor, tilegpu::defaultBlockedEncoding(ctx, tensor.getShape(), numWarps,
                                                                  fn ? vectorElements.lookup(fn) : 4));
    };

    // 1. Every tensor value (block arguments and results) gets its default.
    module.walk([&](Operation *op) {
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            arg.setType(defaultType(arg.getType(), op));
      for (OpResult r : op->getResults())
        r.setType(defaultType(r.getType(), op));
      // A tensor constant's value carries its type too.
      if (auto cst = dyn_cast<arith::ConstantOp>(op))
        if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue()))
          if (dense.getType() != cst.getType())
            cst.setValueAttr(dense.reshape(cast<ShapedType>(cst.getType())));
    });
    module.walk([&](func::FuncOp fn) {
      if (fn.isExternal())
        return;
      SmallVector<Type> results;
      for (Type t : fn.getFunctionType().getResults())
        results.push_back(defaultType(t, fn));
      fn.setType(FunctionType::get(ctx, fn.getBody().getArgumentTypes(), results));
    });

    // 2. Make layout relations hold.
    OpBuilder b(ctx);
    module.walk([&](Operation *op) {
      if (auto reduce = dyn_cast<tile::ReduceOp>(op)) {
        auto srcType = cast<RankedTensorType>(reduce.getSrcs()[0].getType());
        for (OpResult r : reduce.getResults()) {
          auto resType = dyn_cast<RankedTensorType>(r.getType());
          if (!resType)
            continue; // a 1-D reduction yields a scalar
          Type sliced = withEncoding(
              resType, tilegpu::SliceEncodingAttr::get(ctx, uint32_t(reduce.getAxis()),
                                                       srcType.getEncoding()));
          r.setType(sliced);
          // Users keep seeing the default layout.
          b.setInsertionPointAfter(reduce);
          auto back = tilegpu::ConvertLayoutOp::create(b, reduce.getLoc(), resType, r);
          r.replaceAllUsesExcept(back, back);
        }
      } else if (auto scan = dyn_cast<tile::ScanOp>(op)) {
        // Operands and results in the scan's layout; users see the default.
        auto first = cast<RankedTensorType>(scan.getSrcs()[0].getType());
        Attribute enc = scanEncoding(ctx, first.getShape(), int(scan.getAxis()), int(numWarps));
        for (OpOperand &src : scan->getOpOperands())
          src.set(convertTo(b, src.get(), withEncoding(cast<RankedTensorType>(src.get().getType()), enc), op));
        for (OpResult r : scan.getResults()) {
          auto resType = cast<RankedTensorType>(r.getType());
          r.setType(withEncoding(resType, enc));
          b.setInsertionPointAfter(scan);
          auto back = tilegpu::ConvertLayoutOp::create(b, scan.getLoc(), resType, r);
          r.replaceAllUsesExcept(back, back);
        }
      } else if (auto expand = dyn_cast<tile::ExpandDimsOp>(op)) {
        auto resType = cast<RankedTensorType>(expand.getType());
        auto srcType = cast<RankedTensorType>(expand.getSrc().getType());
        Type want = withEncoding(srcType, tilegpu::SliceEncodingAttr::get(
                                              ctx, uint32_t(expand.getAxis()),
                                              resType.getEncoding()));
        expand.getSrcMutable().assign(convertTo(b, expand.getSrc(), want, op));
      } else if (auto bcast = dyn_cast<tile::BroadcastOp>(op)) {
        auto resType = cast<RankedTensorType>(bcast.getType());
        auto srcType = cast<RankedTensorType>(bcast.getSrc().getType());
        Type want = withEncoding(srcType, resType.getEncoding());
        bcast.getSrcMutable().assign(convertTo(b, bcast.getSrc(), want, op));
      } else if (auto asmOp = dyn_cast<tile::ElementwiseInlineAsmOp>(op)) {
        // Each register of the asm pairs its arguments' registers: one layout.
        Attribute enc = cast<RankedTensorType>(asmOp.getResults()[0].getType()).getEncoding();
        for (OpOperand &arg : asmOp->getOpOperands())
          arg.set(convertTo(b, arg.get(), withEncoding(cast<RankedTensorType>(arg.get().getType()), enc), op));
      } else if (auto gather = dyn_cast<tile::GatherOp>(op)) {
        // Each result register reads by the index register it pairs with.
        Type want = withEncoding(gather.getIndex().getType(), cast<RankedTensorType>(gather.getType()).getEncoding());
        gather.getIndexMutable().assign(convertTo(b, gather.getIndex(), want, op));
      }
    });
    // tl::debug_barrier: the GPU's barrier of the program's threads.
    module.walk([&](tile::DebugBarrierOp barrier) {
      b.setInsertionPoint(barrier);
      tilegpu::BarrierOp::create(b, barrier.getLoc());
      barrier.erase();
    });
    module->setAttr("tilegpu.num_warps", b.getI32IntegerAttr(numWarps));
  }
};

} // namespace
