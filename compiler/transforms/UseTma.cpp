//===- UseTma.cpp - serve tensor-descriptor loads with TMA (sm_90a) -------===//
//
// Pass `use-tma`: a `tile.make_tensor_descriptor` whose base, extents and
// strides are kernel arguments (possibly widened) or constants can be
// encoded on the host at launch. For each, the kernel gets a hidden
// argument - the 128-byte tensor map, by value in param space
// (`llvm.byval`, 64-byte aligned; lower-tilegpu-to-llvm makes it
// `nvvm.grid_constant` once the function is a kernel, so its address can be
// taken) - and the module's `tilegpu.tensor_maps` records how a launch
// builds it (runtime/TensorMap.h, argument numbers counting the kernel's
// runtime arguments). The descriptor is marked `tilegpu.tensor_map = N`
// (its argument) and its loads and stores `tilegpu.tma`;
// `lower-tilegpu-to-llvm` turns loads into cp.async.bulk.tensor completing
// on an mbarrier, stores into a bulk copy out of shared memory. A descriptor
// only stored through, or only loaded through, gets a swizzled map
// (`swizzledBlockBytes`): its stores (`tilegpu.tma_swizzle`) stage the block
// in a swizzled tile, which the threads fill without bank conflicts, and
// copy it out a box per block of swizzle-wide rows; its loads land a box per
// such block in the same tile, which the threads read without bank
// conflicts in any layout - a GEMM epilogue's operand straight into the
// accumulator's (ldmatrix), where a row-major block put a fragment's eight
// rows on the same banks. (A dot's operand rings make maps of their own.)
//
//===----------------------------------------------------------------------===//
#include "compiler/SourceLine.h"
#include "compiler/layout/WgmmaOperands.h"
#include "compiler/transforms/Passes.h"
#include "runtime/TensorMap.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"

namespace tegula {
#define GEN_PASS_DEF_USETMA
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// The kernel argument (times a constant) or constant `v` is, seen through
/// widening casts: what the host can compute from the launch's arguments.
std::optional<runtime::TensorMapValue> hostValue(Value v, func::FuncOp fn) {
  while (auto ext = v.getDefiningOp<arith::ExtSIOp>())
    v = ext.getIn();
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (arg.getOwner() == &fn.getBody().front())
      return runtime::TensorMapValue{int(arg.getArgNumber()), 1};
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return runtime::TensorMapValue{-1, c.getSExtValue()};
  if (auto mul = v.getDefiningOp<arith::MulIOp>()) { // e.g. a row stride H * D
    auto lhs = hostValue(mul.getLhs(), fn), rhs = hostValue(mul.getRhs(), fn);
    if (lhs && rhs && (lhs->arg < 0 || rhs->arg < 0))
      return runtime::TensorMapValue{std::max(lhs->arg, rhs->arg), lhs->value * rhs->value};
  }
  return std::nullopt;
}

std::optional<DType> dtypeOf(Type t) {
  if (t.isF16()) return DType::f16;
  if (t.isBF16()) return DType::bf16;
  if (t.isF32()) return DType::f32;
  if (t.isF64()) return DType::f64;
  if (t.isInteger(8)) return DType::i8;
  if (t.isInteger(16)) return DType::i16;
  if (t.isInteger(32)) return DType::i32;
  if (t.isInteger(64)) return DType::i64;
  if (isa<Float8E4M3FNType>(t)) return DType::f8e4m3;
  if (isa<Float8E5M2Type>(t)) return DType::f8e5m2;
  return std::nullopt;
}

/// The swizzle (bytes) of the tile a store of `block` stages it in, or a
/// load lands it in, when there is one (layout::tmaStoreTile).
std::optional<int> swizzledBlockBytes(RankedTensorType block) {
  if (block.getRank() != 2)
    return std::nullopt;
  auto tile = layout::tmaStoreTile({int32_t(block.getDimSize(0)), int32_t(block.getDimSize(1))},
                                   int(block.getElementTypeBitWidth()));
  if (!tile)
    return std::nullopt;
  return tile->rowBytes();
}

struct UseTmaPass : tegula::impl::UseTmaBase<UseTmaPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    std::vector<runtime::TensorMapSpec> specs;
    module.walk([&](func::FuncOp fn) {
      if (!fn->hasAttr("tile.kernel"))
        return;
      SmallVector<tile::MakeTensorDescriptorOp> descs;
      fn.walk([&](tile::MakeTensorDescriptorOp d) { descs.push_back(d); });
      for (tile::MakeTensorDescriptorOp desc : descs) {
        auto accesses = llvm::make_filter_range(desc->getUsers(), [](Operation *u) {
          return isa<tile::DescriptorLoadOp, tile::DescriptorStoreOp>(u);
        });
        if (accesses.empty())
          continue;
        runtime::TensorMapSpec spec;
        auto base = dyn_cast<BlockArgument>(desc.getBase());
        if (!base || base.getOwner() != &fn.getBody().front())
          continue; // an offset base: the masked path handles it
        spec.base = int(base.getArgNumber());
        bool hostKnown = true;
        for (auto [values, out] : {std::pair{desc.getShape(), &spec.shape},
                                   std::pair{desc.getStrides(), &spec.strides}})
          for (Value v : values) {
            auto hv = hostValue(v, fn);
            hostKnown = hostKnown && hv.has_value();
            if (hv)
              out->push_back(*hv);
          }
        RankedTensorType block = desc.getType().getBlockType();
        std::optional<DType> dtype = dtypeOf(block.getElementType());
        if (!hostKnown || !dtype)
          continue;
        spec.box.assign(block.getShape().begin(), block.getShape().end());
        spec.dtype = *dtype;
        spec.where = sourceLine(desc.getLoc());
        // Only stored through, or only loaded through: the block leaves
        // from, or lands in, a swizzled tile, one box per swizzle-wide block
        // of columns (TmaToLLVM.cpp).
        std::optional<int> swizzle;
        if (llvm::all_of(accesses, [](Operation *u) { return isa<tile::DescriptorStoreOp>(u); }) ||
            llvm::all_of(accesses, [](Operation *u) { return isa<tile::DescriptorLoadOp>(u); }))
          if ((swizzle = swizzledBlockBytes(block))) {
            spec.box.back() = int32_t(*swizzle * 8 / int64_t(block.getElementTypeBitWidth()));
            spec.swizzle = *swizzle;
          }

        // The hidden argument: the tensor map, by value.
        unsigned argNo = fn.getNumArguments();
        auto ptr = LLVM::LLVMPointerType::get(ctx);
        if (failed(fn.insertArgument(argNo, ptr, DictionaryAttr(), desc.getLoc())))
          return signalPassFailure();
        Builder b(ctx);
        fn.setArgAttr(argNo, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(LLVM::LLVMArrayType::get(b.getI8Type(), 128)));
        fn.setArgAttr(argNo, LLVM::LLVMDialect::getAlignAttrName(), b.getI64IntegerAttr(64));
        desc->setAttr("tilegpu.tensor_map", b.getI32IntegerAttr(int32_t(argNo)));
        for (Operation *access : accesses) {
          access->setAttr("tilegpu.tma", b.getUnitAttr());
          if (swizzle)
            access->setAttr("tilegpu.tma_swizzle", b.getI32IntegerAttr(*swizzle));
        }
        specs.push_back(std::move(spec));
      }
    });
    if (!specs.empty())
      module->setAttr("tilegpu.tensor_maps",
                      StringAttr::get(ctx, runtime::serializeTensorMaps(specs)));
  }
};

} // namespace
