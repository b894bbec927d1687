//===- TmaToLLVM.cpp - tensor-descriptor loads through TMA (sm_90a) -------===//
//
// A `tile.descriptor_load` marked `tilegpu.tma` (use-tma) becomes one bulk
// tensor copy into its shared-memory buffer, completed through an mbarrier
// that follows the block:
//
//   all:    fence.proxy.async (earlier generic writes to the buffer come
//           first), bar.sync
//   thread 0: mbarrier.init [bar], 1; fence.mbarrier_init
//   all:    bar.sync
//   thread 0: mbarrier.arrive.expect_tx [bar], <block bytes>
//             cp.async.bulk.tensor.Nd [buffer], [tensor map, {coords}], [bar]
//   all:    mbarrier.try_wait.parity [bar], 0 until it succeeds
//           read their elements of the block (row-major, unswizzled)
//           bar.sync; thread 0: mbarrier.inval [bar]
//
// TMA fills the parts of the box outside the tensor with zeros. The tensor
// map is the kernel parameter use-tma added (`tilegpu.tensor_map`). Inline
// PTX throughout; the simulator runs the same text (simulator/Tma.h).
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

/// A TMA descriptor is the tensor map parameter use-tma added.
struct MakeTensorMapPattern : OpConversionPattern<tile::MakeTensorDescriptorOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::MakeTensorDescriptorOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    auto argNo = op->getAttrOfType<IntegerAttr>("tilegpu.tensor_map");
    if (!argNo)
      return rw.notifyMatchFailure(op, "not a TMA descriptor: run lower-tensor-descriptors");
    auto fn = op->getParentOfType<FunctionOpInterface>();
    rw.replaceOp(op, fn.getArgument(unsigned(argNo.getInt())));
    return success();
  }
};

struct TmaLoadPattern : OpConversionPattern<tile::DescriptorLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(tile::DescriptorLoadOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    if (!analysis::isTmaLoad(op))
      return rw.notifyMatchFailure(op, "not a TMA load: run lower-tensor-descriptors");
    if (!analysis::sharedOffset(op))
      return rw.notifyMatchFailure(op, kNoSharedOffset);
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    const int64_t rank = type.getRank();
    const int64_t blockBytes = analysis::tmaBlockBytes(op);
    const int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    Type ptr3 = LLVM::LLVMPointerType::get(rw.getContext(), 3);
    Value buffer = sharedBuffer(rw, loc, op);
    Value bar = LLVM::GEPOp::create(rw, loc, ptr3, rw.getI8Type(), buffer,
                                    ValueRange{i32Const(rw, loc, blockBytes)});
    Value tid = NVVM::ThreadIdXOp::create(rw, loc, rw.getI32Type());
    Value leader = LLVM::ICmpOp::create(rw, loc, LLVM::ICmpPredicate::eq, tid, i32Const(rw, loc, 0));

    // Earlier users of these bytes (generic proxy) are done before TMA writes.
    inlinePtx(rw, loc, Type(), {}, "fence.proxy.async.shared::cta;", "");
    NVVM::Barrier0Op::create(rw, loc);
    inlinePtx(rw, loc, Type(), {bar, leader},
              "@$1 mbarrier.init.shared::cta.b64 [$0], 1;\n@$1 fence.mbarrier_init.release.cluster;",
              "l,b");
    NVVM::Barrier0Op::create(rw, loc);
    // TMA coordinates run innermost first.
    SmallVector<Value> args = {buffer, adaptor.getDesc().front(), bar, leader};
    std::string coords;
    for (int64_t d = rank - 1; d >= 0; --d) {
      coords += fmt::format("{}${}", d == rank - 1 ? "" : ", ", args.size());
      args.push_back(adaptor.getOffsets()[size_t(d)].front());
    }
    std::string constraints = "l,l,l,b";
    for (int64_t d = 0; d < rank; ++d)
      constraints += ",r";
    inlinePtx(rw, loc, Type(), args,
              fmt::format("@$3 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$2], {0};\n"
                          "@$3 cp.async.bulk.tensor.{1}d.shared::cluster.global.tile."
                          "mbarrier::complete_tx::bytes [$0], [$1, {{{2}}}], [$2];",
                          bytes, rank, coords),
              constraints);
    inlinePtx(rw, loc, Type(), {bar},
              "{\n.reg .pred %tegula_done;\ntegula_wait:\n"
              "mbarrier.try_wait.parity.shared::cta.b64 %tegula_done, [$0], 0;\n"
              "@!%tegula_done bra tegula_wait;\n}",
              "l");

    // Each thread reads its elements of the row-major block.
    layout::LinearLayout ll = layoutOf(type);
    SmallVector<int64_t> rowStride(size_t(rank), 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      rowStride[size_t(d)] = rowStride[size_t(d + 1)] * type.getDimSize(d + 1);
    Type elem = type.getElementType();
    SmallVector<Value> values;
    for (const SmallVector<Value> &at : coordinates(rw, loc, ll)) {
      Value index = i32Const(rw, loc, 0);
      for (int64_t d = 0; d < rank; ++d)
        index = LLVM::AddOp::create(
            rw, loc, index,
            LLVM::MulOp::create(rw, loc, at[size_t(d)], i32Const(rw, loc, rowStride[size_t(d)])));
      Value p = LLVM::GEPOp::create(rw, loc, ptr3, elem, buffer, ValueRange{index});
      values.push_back(LLVM::LoadOp::create(rw, loc, elem, p));
    }
    // Everyone has passed the wait before the barrier is invalidated (its
    // bytes may serve another purpose next).
    NVVM::Barrier0Op::create(rw, loc);
    inlinePtx(rw, loc, Type(), {bar, leader}, "@$1 mbarrier.inval.shared::cta.b64 [$0];", "l,b");
    rw.replaceOpWithMultiple(op, {values});
    return success();
  }
};

} // namespace

void populateTmaPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<MakeTensorMapPattern, TmaLoadPattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
