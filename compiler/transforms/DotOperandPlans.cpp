//===- DotOperandPlans.cpp - which ring a dot operand's load can fill ------===//
//
// pipeline-dot-operands' planning half: whether a dot operand's load (a
// pointer load, or a TMA descriptor load) can be issued ahead into a ring of
// shared-memory stages, and in which swizzled tile - mma.sync's (planned
// from the operand's fragments) or wgmma's (its descriptors' layouts). The
// rewriting that follows is PipelineDotOperands.cpp's and
// WarpSpecializeRings.cpp's.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/DotOperandRings.h"

#include "compiler/layout/OperandStaging.h"
#include "compiler/layout/WgmmaOperands.h"
#include "runtime/TensorMap.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace tegula;

namespace tegula::rings {
namespace {

/// The body ops `v` is computed with when they use only values from outside
/// the loop (pure, no regions), in body order; nothing otherwise.
std::optional<SmallVector<Operation *>> invariantSlice(scf::ForOp loop, Value v) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work = {v};
  while (!work.empty()) {
    Value w = work.pop_back_val();
    if (loop.isDefinedOutsideOfLoop(w))
      continue;
    Operation *def = w.getDefiningOp();
    if (!def || def->getBlock() != loop.getBody() || def->getNumRegions() || !isPure(def))
      return std::nullopt; // the induction variable, an iter_arg, nested or with effects
    if (slice.insert(def))
      work.append(def->operand_begin(), def->operand_end());
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : *loop.getBody())
    if (slice.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

/// The address computation `roots` depend on: the loop-body ops in body
/// order, when they depend only on the induction variable, values from
/// outside the loop (pure ops without regions) and affine carried values
/// (listed);
/// nothing otherwise.
std::optional<AddressSlice> addressSlice(scf::ForOp loop, ValueRange roots) {
  llvm::SetVector<Operation *> slice;
  AddressSlice out;
  SmallVector<Value> work(roots.begin(), roots.end());
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!v || v == loop.getInductionVar() || !loop.getBody()->getParent()->isAncestor(v.getParentRegion()))
      continue; // the induction variable, or defined outside the loop
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == loop.getBody()) {
      // An iter_arg: only pointers and integers advanced by a loop-invariant
      // amount.
      Value next = yield.getOperand(arg.getArgNumber() - 1), delta;
      if (auto add = next.getDefiningOp<tile::AddPtrOp>(); add && add.getPtr() == arg)
        delta = add.getOffset();
      else if (auto add = next.getDefiningOp<arith::AddIOp>(); add && add.getLhs() == arg)
        delta = add.getRhs();
      else if (add && add.getRhs() == arg)
        delta = add.getLhs();
      if (!delta)
        return std::nullopt;
      auto deltaOps = invariantSlice(loop, delta);
      if (!deltaOps)
        return std::nullopt;
      if (llvm::none_of(out.carried, [&](const AffineCarried &c) { return c.arg == arg; }))
        out.carried.push_back({arg, loop.getInitArgs()[arg.getArgNumber() - 1], delta, *deltaOps});
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != loop.getBody() || def->getNumRegions() || !isPure(def))
      return std::nullopt; // nested, or with effects
    if (slice.insert(def))
      work.append(def->operand_begin(), def->operand_end());
  }
  for (Operation &op : *loop.getBody())
    if (slice.contains(&op))
      out.ops.push_back(&op);
  return out;
}

bool zeroOrAbsent(Value other) {
  if (!other)
    return true;
  Attribute value;
  if (!matchPattern(other, m_Constant(&value)))
    return false;
  auto splat = dyn_cast<SplatElementsAttr>(value);
  if (!splat)
    return false;
  if (auto f = dyn_cast<FloatAttr>(splat.getSplatValue<Attribute>()))
    return f.getValue().isZero() && !f.getValue().isNegative();
  if (auto i = dyn_cast<IntegerAttr>(splat.getSplatValue<Attribute>()))
    return i.getValue().isZero();
  return false;
}

/// The same layout with its two output dims swapped.
layout::LinearLayout swapDims(const layout::LinearLayout &ll) {
  return ll.transposeOuts({"dim1", "dim0"}).renameOuts({"dim0", "dim1"});
}

/// A TMA descriptor load feeding a wgmma dot: its ring in wgmma's tile,
/// when a TMA swizzle writes exactly that tile.
std::optional<Operand> planTmaOperand(scf::ForOp loop, tile::DotOp dot, unsigned idx, int stages,
                                      tile::DescriptorLoadOp block, tile::TransOp trans, bool sharedLoad) {
  auto mma = cast<tilegpu::MmaEncodingAttr>(cast<RankedTensorType>(dot.getType()).getEncoding());
  auto type = cast<RankedTensorType>(block.getType());
  Value v = idx == 0 ? dot.getA() : dot.getB();
  // 16-bit operands, or 8-bit and tf32 ones (K-major only: wgmma's plan
  // says so; a tf32 ring feeds one dot, its tensor map rounding to tf32).
  const unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  if (!mma.isWgmma() || !block->hasAttr("tilegpu.tma") || !(sharedLoad || block->hasOneUse()) ||
      block->getBlock() != loop.getBody() || type.getRank() != 2 ||
      !(bits == 16 || bits == 8 || (bits == 32 && block->hasOneUse())))
    return std::nullopt;
  auto slice = addressSlice(loop, block.getOffsets());
  if (!slice)
    return std::nullopt;
  // In the operand's coordinates the rows run along dim 1 (as loaded) or dim
  // 0 (transposed); TMA writes rows of the tensor's innermost dimension.
  auto operandType = cast<RankedTensorType>(v.getType());
  auto plan = layout::planWgmmaOperandTile(
      int(idx), {int32_t(operandType.getDimSize(0)), int32_t(operandType.getDimSize(1))},
      trans ? 0 : 1, int(bits));
  if (!plan)
    return std::nullopt;
  const layout::SharedTile stored = trans ? plan->tile.transposed() : plan->tile;
  std::optional<int> swizzle = layout::tmaSwizzleBytes(stored);
  if (stored.contiguousDim != 1 || !swizzle)
    return std::nullopt;
  auto ring = tilegpu::SharedTilesType::get(dot.getContext(), unsigned(stages), type.getShape(),
                                            type.getElementType(), 1u, stored.rowXor,
                                            stored.blockElements);
  Operand op{tile::LoadOp(), block, std::move(*slice), ring, trans};
  op.swizzle = *swizzle;
  return op;
}

} // namespace

tile::DotPrecisionAttr f32Precision(tile::DotOp dot) {
  return getElementTypeOrSelf(dot.getA().getType()).isF32() ? dot.getPrecisionAttr()
                                                            : tile::DotPrecisionAttr();
}

std::optional<Operand> planOperand(scf::ForOp loop, tile::DotOp dot, unsigned idx, int stages,
                                   bool sharedLoad) {
  Value v = idx == 0 ? dot.getA() : dot.getB();
  // `load` or `tile.trans(load)` (a.trans(), b.trans() in the kernel): the
  // ring holds the tile as loaded, the dot reads it transposed. Layout
  // conversions on the way (coalesce moves loads to the layout their
  // addresses run along) only change who holds what: the ring is filled
  // from the load's own layout.
  SmallVector<Operation *> chain;
  auto through = [&](Value x) -> Value {
    auto c = x.getDefiningOp<tilegpu::ConvertLayoutOp>();
    if (!c || !x.hasOneUse() || c->getBlock() != loop.getBody())
      return x;
    chain.push_back(c);
    return c.getSrc();
  };
  Value operand = through(v);
  auto trans = operand.getDefiningOp<tile::TransOp>();
  if (trans && (!operand.hasOneUse() || trans->getBlock() != loop.getBody()))
    return std::nullopt;
  if (trans)
    chain.push_back(trans);
  Value loaded = through(trans ? trans.getSrc() : operand);
  if (auto block = loaded.getDefiningOp<tile::DescriptorLoadOp>()) {
    auto op = planTmaOperand(loop, dot, idx, stages, block, trans, sharedLoad);
    if (op)
      op->chain = chain;
    return op;
  }
  auto load = loaded.getDefiningOp<tile::LoadOp>();
  // The chain from the load to this dot is the dot's alone (a shared load
  // read directly has its other uses).
  if (!load || !(sharedLoad || loaded.hasOneUse()) || !(operand.hasOneUse() || (sharedLoad && operand == loaded)) ||
      load->getBlock() != loop.getBody() || !zeroOrAbsent(load.getOther()) || load.getIsVolatile())
    return std::nullopt; // (a volatile load is made where it stands, not ahead)
  auto type = cast<RankedTensorType>(loaded.getType());
  Type elem = type.getElementType();
  auto width = load->getAttrOfType<IntegerAttr>("tilegpu.vector_width");
  const int64_t bytes = (width ? width.getInt() : 1) * elem.getIntOrFloatBitWidth() / 8;
  // 16-bit operands; 8-bit ones (fp8, i8) everywhere - wgmma reads them as
  // they are, K-major; tf32 ones too: mma.sync rounds them in registers
  // after the read, wgmma (K-major) in the stage before it reads it - which
  // a ring read by two dots would do while the first one's group still
  // reads it.
  const unsigned bits = elem.getIntOrFloatBitWidth();
  auto mmaOf = cast<tilegpu::MmaEncodingAttr>(cast<RankedTensorType>(dot.getType()).getEncoding());
  const bool supported = bits == 16 || (bits == 8 && (mmaOf.isWgmma() || elem.isInteger(8))) ||
                         (elem.isF32() && (!mmaOf.isWgmma() || loaded.hasOneUse()));
  if (!supported || bytes < 4 || type.getRank() != 2)
    return std::nullopt;
  auto ptrType = cast<RankedTensorType>(load.getPtr().getType());
  layout::LinearLayout source = tilegpu::toLinearLayout(ptrType.getEncoding(), ptrType.getShape());
  if (!source.freeBits("register").empty() || !source.freeBits("lane").empty() ||
      !source.freeBits("warp").empty())
    return std::nullopt; // duplicated elements: two threads would copy one
  SmallVector<Value> roots = {load.getPtr()};
  if (load.getMask())
    roots.push_back(load.getMask());
  auto slice = addressSlice(loop, roots);
  if (!slice)
    return std::nullopt;
  auto mma = cast<tilegpu::MmaEncodingAttr>(cast<RankedTensorType>(dot.getType()).getEncoding());
  // Planned in the dot's coordinates, stored in the load's.
  const layout::LinearLayout operandSource = trans ? swapDims(source) : source;
  auto operandType = cast<RankedTensorType>(v.getType());
  auto toRing = [&](const layout::SharedTile &tile) {
    const layout::SharedTile stored = trans ? tile.transposed() : tile;
    return tilegpu::SharedTilesType::get(dot.getContext(), unsigned(stages), type.getShape(), elem,
                                         unsigned(stored.contiguousDim), stored.rowXor,
                                         stored.blockElements);
  };
  if (mma.isWgmma()) { // the tiles wgmma's descriptors read, along the source's contiguous dimension
    int contiguous = layout::contiguousDimOf(operandSource);
    // tf32 is read K-major only: a load along M or N scatters its elements
    // into the ring, one 4-byte copy each.
    const int kDim = idx == 0 ? 1 : 0;
    const bool scatter = bits == 32 && contiguous >= 0 && contiguous != kDim;
    if (scatter)
      contiguous = kDim;
    auto plan = contiguous < 0 ? std::nullopt
                               : layout::planWgmmaOperandTile(
                                     int(idx),
                                     {int32_t(operandType.getDimSize(0)), int32_t(operandType.getDimSize(1))},
                                     contiguous, int(bits));
    if (!plan)
      return std::nullopt;
    Operand op{load, tile::DescriptorLoadOp(), std::move(*slice), toRing(plan->tile), trans};
    op.chain = chain;
    if (scatter) {
      auto copy = layout::planScatterCopy({int32_t(type.getDimSize(0)), int32_t(type.getDimSize(1))},
                                          layout::contiguousDimOf(source), source.inDimSize("warp"),
                                          op.ring.tile());
      if (!copy)
        return std::nullopt;
      op.scatterEncoding = tilegpu::BlockedEncodingAttr::get(dot.getContext(), {1, 1}, copy->threadsPerWarp,
                                                             copy->warpsPerCTA, copy->order);
    }
    return op;
  }
  auto fragments = tilegpu::toLinearLayout(
      tilegpu::DotOperandEncodingAttr::get(dot.getContext(), idx, mma, bits), operandType.getShape());
  layout::SharedTile tile =
      layout::planOperandTile(operandSource, fragments, idx == 0,
                              int32_t(std::min<int64_t>(16, bytes) * 8 / bits), int(bits));
  Operand op{load, tile::DescriptorLoadOp(), std::move(*slice), toRing(tile), trans};
  op.chain = chain;
  return op;
}

Value addSwizzledTensorMap(Operand &op) {
  auto desc = op.block.getDesc().getDefiningOp<tile::MakeTensorDescriptorOp>();
  auto fn = op.block->getParentOfType<func::FuncOp>();
  auto module = fn->getParentOfType<ModuleOp>();
  auto text = module->getAttrOfType<StringAttr>("tilegpu.tensor_maps");
  auto argNo = desc ? desc->getAttrOfType<IntegerAttr>("tilegpu.tensor_map") : IntegerAttr();
  if (!text || !argNo)
    return Value();
  std::vector<runtime::TensorMapSpec> specs = runtime::parseTensorMaps(text.str());
  // Hidden arguments come last, one per spec, in order.
  const int64_t first = int64_t(fn.getNumArguments()) - int64_t(specs.size());
  runtime::TensorMapSpec spec = specs.at(size_t(argNo.getInt() - first));
  const layout::SharedTile tile = op.ring.tile();
  spec.box = {int32_t(tile.shape[0] / op.multicastCtas), int32_t(tile.rowBytes() * 8 / tile.elementBits)};
  spec.swizzle = op.swizzle;
  spec.tf32 = op.roundedByTma();
  specs.push_back(spec);
  unsigned arg = fn.getNumArguments();
  MLIRContext *ctx = fn.getContext();
  Builder b(ctx);
  (void)fn.insertArgument(arg, LLVM::LLVMPointerType::get(ctx), DictionaryAttr(), fn.getLoc());
  fn.setArgAttr(arg, LLVM::LLVMDialect::getByValAttrName(),
                TypeAttr::get(LLVM::LLVMArrayType::get(b.getI8Type(), 128)));
  fn.setArgAttr(arg, LLVM::LLVMDialect::getAlignAttrName(), b.getI64IntegerAttr(64));
  module->setAttr("tilegpu.tensor_maps", b.getStringAttr(runtime::serializeTensorMaps(specs)));
  return fn.getArgument(arg);
}


} // namespace tegula::rings
