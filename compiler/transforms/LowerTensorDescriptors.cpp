//===- LowerTensorDescriptors.cpp - descriptor blocks as masked accesses --===//
//
// Pass `lower-tensor-descriptors`: every `tile.descriptor_load` and
// `tile.descriptor_store` becomes a tile of pointers to its block (base +
// sum of coordinate x stride, in i64) and a mask of the coordinates inside
// the tensor, as a user would write it by hand; later passes vectorise it
// like any load. Each `tile.make_tensor_descriptor` asserts TMA's stride
// rule, so a kernel that would be refused on sm_90a is refused everywhere.
// On sm_90a `use-tma` runs first and takes the descriptors TMA can serve.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <fmt/format.h>

#include <numeric>

namespace tegula {
#define GEN_PASS_DEF_LOWERTENSORDESCRIPTORS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// Pointers to the block of `desc` at `offsets`, and the mask of its
/// elements inside the tensor.
std::pair<Value, Value> blockPointers(OpBuilder &b, Location loc,
                                      tile::MakeTensorDescriptorOp desc, ValueRange offsets) {
  RankedTensorType block = desc.getType().getBlockType();
  int64_t rank = block.getRank();
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto shaped = [&](Type elem) { return RankedTensorType::get(block.getShape(), elem); };
  Value offset, mask;
  for (int64_t d = 0; d < rank; ++d) {
    // Coordinates along d, shaped [1, .., B_d, .., 1] then broadcast.
    int64_t extent = block.getDimSize(d);
    auto range = tile::MakeRangeOp::create(b, loc, RankedTensorType::get({extent}, i32), 0,
                                           int32_t(extent));
    Value start = tile::SplatOp::create(b, loc, range.getType(), offsets[d]);
    Value coord = arith::ExtSIOp::create(b, loc, RankedTensorType::get({extent}, i64),
                                         arith::AddIOp::create(b, loc, start, range));
    for (int64_t axis = 0; axis < rank; ++axis) {
      if (axis == d)
        continue;
      SmallVector<int64_t> shape(cast<RankedTensorType>(coord.getType()).getShape());
      shape.insert(shape.begin() + axis, 1);
      coord = tile::ExpandDimsOp::create(b, loc, RankedTensorType::get(shape, i64), coord,
                                         b.getI32IntegerAttr(int32_t(axis)));
    }
    if (rank > 1)
      coord = tile::BroadcastOp::create(b, loc, shaped(i64), coord);
    auto splat = [&](Value scalar) { return tile::SplatOp::create(b, loc, shaped(i64), scalar); };
    Value zero = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(shaped(i64), int64_t(0)));
    Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, coord, zero);
    Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, coord,
                                        splat(desc.getShape()[d]));
    Value inside = arith::AndIOp::create(b, loc, above, below);
    Value term = d + 1 == rank ? coord
                               : arith::MulIOp::create(b, loc, coord, splat(desc.getStrides()[d]))
                                     .getResult();
    offset = offset ? arith::AddIOp::create(b, loc, offset, term).getResult() : term;
    mask = mask ? arith::AndIOp::create(b, loc, mask, inside).getResult() : inside;
  }
  Value base = tile::SplatOp::create(b, loc, shaped(desc.getBase().getType()), desc.getBase());
  Value ptrs = tile::AddPtrOp::create(b, loc, base.getType(), base, offset);
  return {ptrs, mask};
}

/// TMA's rule on strides (in bytes: positive multiples of 16), as a device
/// assertion so every backend refuses what sm_90a would.
void assertStrides(OpBuilder &b, tile::MakeTensorDescriptorOp desc) {
  Location loc = desc.getLoc();
  RankedTensorType block = desc.getType().getBlockType();
  int64_t bytes = block.getElementType().getIntOrFloatBitWidth() / 8;
  Type i64 = b.getI64Type();
  auto c = [&](int64_t v) { return arith::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v)); };
  for (int64_t d = 0; d + 1 < block.getRank(); ++d) {
    Value stride = desc.getStrides()[d];
    Value inBytes = arith::MulIOp::create(b, loc, stride, c(bytes));
    Value rem = arith::RemSIOp::create(b, loc, inBytes, c(16));
    Value whole = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem, c(0));
    Value positive = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, stride, c(0));
    Value ok = arith::AndIOp::create(b, loc, whole, positive);
    tile::AssertOp::create(
        b, loc, ok,
        b.getStringAttr(fmt::format("tensor descriptor stride {} must be a positive multiple of "
                                    "16 bytes ({} elements of {} bytes)",
                                    d, 16 / std::gcd<int64_t>(16, bytes), bytes)));
  }
}

struct LowerTensorDescriptorsPass
    : tegula::impl::LowerTensorDescriptorsBase<LowerTensorDescriptorsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> accesses;
    getOperation().walk([&](Operation *op) {
      // Accesses use-tma gave to TMA stay for lower-tilegpu-to-llvm.
      if (isa<tile::DescriptorLoadOp, tile::DescriptorStoreOp>(op) && !op->hasAttr("tilegpu.tma"))
        accesses.push_back(op);
    });
    for (Operation *op : accesses) {
      auto desc = op->getOperand(0).getDefiningOp<tile::MakeTensorDescriptorOp>();
      if (!desc) {
        op->emitOpError("needs its descriptor made by tile.make_tensor_descriptor in the kernel");
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto [ptrs, mask] = blockPointers(b, loc, desc, op->getOperands().slice(1, desc.getShape().size()));
      if (auto load = dyn_cast<tile::DescriptorLoadOp>(op)) {
        Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(load.getType()));
        load.replaceAllUsesWith(tile::LoadOp::create(b, loc, ptrs, mask, zero).getResult());
      } else {
        tile::StoreOp::create(b, loc, ptrs, cast<tile::DescriptorStoreOp>(op).getValue(), mask);
      }
      op->erase();
    }
    getOperation().walk([&](tile::MakeTensorDescriptorOp desc) {
      // A tensor map's rules are checked on the host, when it is encoded.
      if (desc->hasAttr("tilegpu.tensor_map")) {
        if (desc->use_empty())
          desc.erase();
        return;
      }
      OpBuilder b(desc);
      assertStrides(b, desc);
      desc.erase();
    });
  }
};

} // namespace
