//===- AccelerateDot.cpp - tile.dot onto mma.sync layouts -----------------===//
#include "compiler/transforms/Passes.h"

#include "compiler/analysis/AxisInfo.h"
#include "compiler/layout/MmaLayouts.h"
#include "compiler/layout/WgmmaOperands.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "compiler/transforms/LayoutRewriting.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <optional>

namespace tegula {
#define GEN_PASS_DEF_ACCELERATEDOT
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// A dot accumulating across a loop: `acc` is the loop's iter_arg `i` and
/// the loop yields the dot's result there, through the conversion back to
/// the original layout. Then the iter_arg itself takes the mma layout: the
/// accumulator stays in the mma registers for the whole loop, converted once
/// before it and once after, instead of twice per iteration.
void keepAccumulatorInLoop(tile::DotOp mmaDot, tilegpu::ConvertLayoutOp in,
                           tilegpu::ConvertLayoutOp out) {
  auto arg = dyn_cast<BlockArgument>(in.getSrc());
  auto loop = arg ? dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()) : nullptr;
  if (!loop || arg.getArgNumber() == 0 || !out->hasOneUse())
    return;
  auto yield = dyn_cast<scf::YieldOp>(*out->getUsers().begin());
  const unsigned i = arg.getArgNumber() - 1; // after the induction variable
  if (!yield || yield->getParentOp() != loop || yield.getOperand(i) != out.getResult())
    return;
  Type mmaType = mmaDot.getType(), original = arg.getType();
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  // Before the loop: the initial accumulator, converted once.
  OpOperand &init = loop.getInitArgsMutable()[i];
  init.set(tilegpu::ConvertLayoutOp::create(b, loc, mmaType, init.get()));
  // In the loop: the argument is the mma accumulator; other users (if any)
  // get it back in their layout.
  arg.setType(mmaType);
  if (!arg.hasOneUse()) { // users besides `in` keep the original layout
    OpBuilder inside = OpBuilder::atBlockBegin(arg.getOwner());
    auto back = tilegpu::ConvertLayoutOp::create(inside, loc, original, arg);
    arg.replaceAllUsesExcept(back, SmallPtrSet<Operation *, 2>{back, in});
  }
  in.getResult().replaceAllUsesWith(arg);
  in.erase();
  yield->setOperand(i, mmaDot.getResult());
  if (out.use_empty())
    out.erase();
  // After the loop: the result, converted once.
  Value result = loop.getResult(i);
  result.setType(mmaType);
  b.setInsertionPointAfter(loop);
  auto after = tilegpu::ConvertLayoutOp::create(b, loc, original, result);
  result.replaceAllUsesExcept(after, after);
}

/// The operand element width of the mma.sync that computes `dot`, or 0:
/// f16/bf16 (m16n8k16), i8 with an i32 accumulator (m16n8k32), and f32
/// where the kernel asked for tf32 or tf32x3 (m16n8k8) - never for ieee,
/// which stays exact on the FMA path.
unsigned mmaOperandBits(tile::DotOp dot, RankedTensorType a, RankedTensorType b,
                        RankedTensorType c) {
  Type ea = a.getElementType(), eb = b.getElementType();
  if (ea != eb)
    return 0;
  if (ea.isInteger(8) && c.getElementType().isInteger(32))
    return 8; // m16n8k32 s8 -> s32
  if (!c.getElementType().isF32())
    return 0;
  if (ea.isF16() || ea.isBF16())
    return 16;
  return ea.isF32() && dot.getPrecision() != tile::DotPrecision::IEEE ? 32 : 0;
}

/// Warps along M and N (wm * wn = warps): the split that gives each warp
/// the fewest operand elements per k step (M/wm rows of A plus N/wn columns
/// of B: what it reads from shared memory and holds per k-slice), among those
/// where every warp has its own 16-row / 8-column instruction tiles; ties go
/// to more warps along M. Leftover warps (a tile too small for them all)
/// repeat along M.
std::pair<int32_t, int32_t> warpGrid(int64_t M, int64_t N, int32_t warps) {
  int32_t bestM = warps, bestN = 1;
  int64_t bestCost = -1;
  for (int32_t wm = warps; wm >= 1; wm /= 2) {
    const int32_t wn = warps / wm;
    if ((wm > 1 && M / wm < 16) || (wn > 1 && N / wn < 8))
      continue;
    const int64_t cost = std::max<int64_t>(16, M / wm) + std::max<int64_t>(8, N / wn);
    if (bestCost < 0 || cost < bestCost)
      bestM = wm, bestN = wn, bestCost = cost;
  }
  if (bestCost < 0) { // more warps than instruction tiles: the rest repeat along M
    bestN = int32_t(std::clamp<int64_t>(N / 8, 1, warps));
    bestM = warps / bestN;
  }
  return {bestM, bestN};
}

/// Dots in a chain: the A operand of one computed from another's result
/// (through elementwise ops, reductions, broadcasts, conversions) with the
/// same M, as attention's P V after Q K^T. Both take warps along M only:
/// then the first accumulator, cast to 16 bits, is the second's A operand
/// register for register (propagate-mma-layout relies on it).
llvm::DenseSet<Operation *> chainedDots(ModuleOp module) {
  llvm::DenseSet<Operation *> chained;
  module.walk([&](tile::DotOp second) {
    const int64_t M = cast<RankedTensorType>(second.getType()).getDimSize(0);
    SmallVector<Value> work{second.getA()};
    llvm::SmallPtrSet<Operation *, 32> seen;
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || !seen.insert(def).second)
        continue;
      if (auto first = dyn_cast<tile::DotOp>(def)) {
        if (cast<RankedTensorType>(first.getType()).getDimSize(0) == M) {
          chained.insert(first);
          chained.insert(second);
        }
        continue;
      }
      if (isElementwise(def) ||
          isa<tile::ReduceOp, tile::ExpandDimsOp, tile::BroadcastOp, tilegpu::ConvertLayoutOp>(def))
        for (Value o : def->getOperands())
          if (isa<RankedTensorType>(o.getType()))
            work.push_back(o);
    }
  });
  return chained;
}

/// An operand computed outside the loop around its dot (attention's
/// Q tile) is read into its fragments once, before the loop, rather than
/// staged through shared memory every iteration - when its fragments fit in
/// a few registers per thread.
Value fragmentsBeforeLoop(tile::DotOp dot, Value operand, RankedTensorType fragmentType,
                          int64_t numWarps) {
  auto loop = dot->getParentOfType<scf::ForOp>();
  constexpr int64_t kMaxElementsPerThread = 64;
  if (!loop || !loop.isDefinedOutsideOfLoop(operand) ||
      fragmentType.getNumElements() > kMaxElementsPerThread * 32 * numWarps)
    return operand;
  while (auto outer = loop->getParentOfType<scf::ForOp>()) {
    if (!outer.isDefinedOutsideOfLoop(operand))
      break;
    loop = outer;
  }
  OpBuilder b(loop);
  return tilegpu::ConvertLayoutOp::create(b, operand.getLoc(), fragmentType, operand);
}

/// Whether Hopper's wgmma computes `dot` ([M, K] x [K, N], operands of
/// `bits`: 16, or 32 at tf32): whole warpgroups along M, each warp with its
/// own 16-row slices; N in m64nN instructions (N a multiple of 8, up to 256
/// at a time); K in k16 (k8 for tf32) steps; each operand placeable in shared
/// memory as wgmma reads it - along either dimension for 16 bits (whichever
/// the values turn out to be contiguous along), K-major for tf32.
bool fitsWgmma(int64_t M, int64_t N, int64_t K, int64_t numWarps, unsigned bits) {
  auto pow2 = [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
  const int64_t instrK = bits == 32 ? 8 : bits == 8 ? 32 : 16;
  if (numWarps % 4 || M % (16 * numWarps) || N % 8 || (N > 256 && N % 256) ||
      K % instrK || !pow2(M) || !pow2(N) || !pow2(K))
    return false;
  auto plannable = [&](int operand, std::vector<int32_t> shape, int contiguous) {
    return layout::planWgmmaOperandTile(operand, shape, contiguous, int(bits)).has_value();
  };
  const std::vector<int32_t> a = {int32_t(M), int32_t(K)}, b = {int32_t(K), int32_t(N)};
  if (bits != 16) // tf32 and fp8: both operands K-major
    return plannable(0, a, 1) && plannable(1, b, 0);
  for (int contiguous : {0, 1})
    if (!plannable(0, a, contiguous) || !plannable(1, b, contiguous))
      return false;
  return true;
}

/// The dimension along which the values of 2-D `v` are contiguous in
/// memory, as loaded (through layout conversions and transposes): a
/// descriptor's block along its last dimension, a pointer load where the
/// pointers run in steps of one element; -1 when unknown.
int contiguousDimOfLoad(analysis::AxisInfoAnalysis &axis, Value v) {
  bool transposed = false;
  for (;;) {
    if (auto convert = v.getDefiningOp<tilegpu::ConvertLayoutOp>())
      v = convert.getSrc();
    else if (auto trans = v.getDefiningOp<tile::TransOp>())
      v = trans.getSrc(), transposed = !transposed;
    else
      break;
  }
  int dim = -1;
  if (v.getDefiningOp<tile::DescriptorLoadOp>()) {
    dim = 1;
  } else if (auto load = v.getDefiningOp<tile::LoadOp>()) {
    const std::vector<int64_t> &runs = axis.get(load.getPtr()).contiguity;
    if (runs.size() == 2 && std::max(runs[0], runs[1]) > 1)
      dim = runs[0] > runs[1] ? 0 : 1;
  }
  return dim < 0 ? -1 : transposed ? 1 - dim : dim;
}

/// What `v` is loaded as: the value behind its layout conversions and
/// transposes.
Value throughConversionsAndTransposes(Value v) {
  for (;;) {
    if (auto convert = v.getDefiningOp<tilegpu::ConvertLayoutOp>())
      v = convert.getSrc();
    else if (auto trans = v.getDefiningOp<tile::TransOp>())
      v = trans.getSrc();
    else
      return v;
  }
}

/// Whether `v` is a tile loaded through pointers (through layout conversions
/// and transposes): its elements can be copied one by one (4-byte cp.async
/// for 32-bit ones) into a ring laid out otherwise than the load runs.
bool isPointerLoaded(Value v) { return throughConversionsAndTransposes(v).getDefiningOp<tile::LoadOp>() != nullptr; }

/// Whether `v` is a loaded tile (through layout conversions and transposes),
/// which pipeline-dot-operands may bring through a ring as it is.
bool isLoaded(Value v) {
  v = throughConversionsAndTransposes(v);
  return v.getDefiningOp<tile::LoadOp>() || v.getDefiningOp<tile::DescriptorLoadOp>();
}

struct AccelerateDotPass : tegula::impl::AccelerateDotBase<AccelerateDotPass> {
  using AccelerateDotBase::AccelerateDotBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto warpsAttr = module->getAttrOfType<IntegerAttr>("tilegpu.num_warps");
    const int64_t numWarps = warpsAttr ? warpsAttr.getInt() : 4;
    MLIRContext *ctx = &getContext();
    const llvm::DenseSet<Operation *> chained = chainedDots(module);
    std::optional<analysis::AxisInfoAnalysis> axis; // for i8 and tf32 dots on sm_90a only
    module.walk([&](tile::DotOp dot) {
      auto aT = cast<RankedTensorType>(dot.getA().getType());
      auto bT = cast<RankedTensorType>(dot.getB().getType());
      auto cT = cast<RankedTensorType>(dot.getType());
      if (!cT.getEncoding() || isa<tilegpu::MmaEncodingAttr>(cT.getEncoding()))
        return;
      const int64_t M = cT.getDimSize(0), N = cT.getDimSize(1), K = aT.getDimSize(1);
      // fp8: wgmma reads it on sm_90a (whole warpgroups, K in k32 steps,
      // both operands K-major in shared memory; not chained); anywhere else
      // the operands widen to f16 - exactly - and the dot continues as f16.
      const bool fp8 = isa<Float8E4M3FNType, Float8E5M2Type>(aT.getElementType());
      const bool fp8Wgmma = fp8 && chip == "sm_90a" && !chained.contains(dot) &&
                            fitsWgmma(M, N, K, numWarps, 8);
      // i8 x i8 -> i32 likewise (wgmma .s32.s8.s8) when both operands arrive
      // K-major (so their loads can fill wgmma's tiles in a ring as they
      // are); otherwise mma.sync m16n8k32, which pipelines either order.
      auto contiguousAlong = [&](Value v) {
        if (!axis)
          axis.emplace(module);
        return contiguousDimOfLoad(*axis, v);
      };
      const bool s8Wgmma = aT.getElementType().isInteger(8) && bT.getElementType().isInteger(8) &&
                           cT.getElementType().isInteger(32) && chip == "sm_90a" &&
                           !chained.contains(dot) && fitsWgmma(M, N, K, numWarps, 8) &&
                           contiguousAlong(dot.getA()) == 1 && contiguousAlong(dot.getB()) == 0;
      const bool eightBitWgmma = fp8Wgmma || s8Wgmma;
      if (fp8 && !fp8Wgmma) {
        OpBuilder b(dot);
        auto widen = [&](Value v) {
          auto t = cast<RankedTensorType>(v.getType());
          return arith::ExtFOp::create(
              b, dot.getLoc(), RankedTensorType::get(t.getShape(), b.getF16Type(), t.getEncoding()), v);
        };
        dot.getAMutable().assign(widen(dot.getA()));
        dot.getBMutable().assign(widen(dot.getB()));
        aT = cast<RankedTensorType>(dot.getA().getType());
        bT = cast<RankedTensorType>(dot.getB().getType());
      }
      const unsigned bits = fp8Wgmma ? 8u : mmaOperandBits(dot, aT, bT, cT);
      if (!bits || M % 16 || N % 8 || K % layout::mmaInstructionShape(int(bits)).k)
        return; // the FMA lowering takes it
      auto [wm, wn] = warpGrid(M, N, int32_t(numWarps));
      if (chained.contains(dot)) { // warps along M as far as M has 16-row blocks
        wm = int32_t(std::min<int64_t>(numWarps, M / 16));
        wn = int32_t(numWarps) / wm;
      }
      // Hopper: wgmma where it fits (a chained dot's A operand then comes
      // from registers, the previous accumulator's): 16-bit operands, or f32
      // at tf32 precision (tf32x3's split products stay on mma.sync).
      // wgmma reads tf32 K-major only: an operand loaded along M or N
      // comes through pointers, whose elements 4-byte cp.async copies
      // scatter into a K-major ring (pipeline-dot-operands); a TMA box
      // along M or N could fill none, so such a dot stays on mma.sync,
      // which pipelines either order.
      const bool tf32 = bits == 32 && dot.getPrecision() == tile::DotPrecision::TF32;
      // Only where the other operand is loaded too, or loop-invariant: a tf32
      // A computed in the loop (attention's P V, a chained dot) has no way
      // into wgmma's registers, so such a dot would go unpipelined -
      // mma.sync converts A and pipelines B alone.
      auto dotLoop = dot->getParentOfType<scf::ForOp>();
      auto ringable = [&](Value other) {
        return !chained.contains(dot) && (isLoaded(other) || !dotLoop || dotLoop.isDefinedOutsideOfLoop(other));
      };
      auto readableAtTf32 = [&](Value v, int kDim, Value other) {
        const int along = contiguousAlong(v);
        return along < 0 || along == kDim || (isPointerLoaded(v) && ringable(other));
      };
      const bool wgmmaType = bits == 16 || (tf32 && chip == "sm_90a" && readableAtTf32(dot.getA(), 1, dot.getB()) &&
                                            readableAtTf32(dot.getB(), 0, dot.getA()));
      const bool wgmma =
          eightBitWgmma || (chip == "sm_90a" && wgmmaType && fitsWgmma(M, N, K, numWarps, bits));
      if (wgmma)
        wm = int32_t(numWarps), wn = 1;
      auto mma = tilegpu::MmaEncodingAttr::get(ctx, {wm, wn}, wgmma ? 3u : 2u);
      auto retype = [](RankedTensorType t, Attribute enc) {
        return RankedTensorType::get(t.getShape(), t.getElementType(), enc);
      };
      OpBuilder b(dot);
      Location loc = dot.getLoc();
      // Operands keep their layouts: the lowering stages them through
      // swizzled shared memory and reads each k-slice's fragments (ldmatrix
      // where it applies) right before its mma.sync (DotToLLVM).
      Value a = dot.getA(), bv = dot.getB();
      if (wgmma) {
        // B keeps its layout: the lowering stores it into the swizzled tile
        // wgmma's descriptors read; so does A, unless it is loop-invariant
        // (then its fragments are read once, and wgmma takes A from registers;
        // 8-bit A always comes from shared memory).
        if (!eightBitWgmma)
          a = fragmentsBeforeLoop(
              dot, a, retype(aT, tilegpu::DotOperandEncodingAttr::get(ctx, 0, mma, bits)), numWarps);
      } else {
        auto aFragments = retype(aT, tilegpu::DotOperandEncodingAttr::get(ctx, 0, mma, bits));
        a = fragmentsBeforeLoop(dot, a, aFragments, numWarps);
        // A tf32 A computed in the loop (attention's P or dS, an mma
        // accumulator whose registers are not tf32's A fragments) moves into
        // its fragments by a conversion of its own - the shared-memory round
        // trip the lowering would otherwise stage it with - so that
        // pipeline-dot-operands can bring B alone through a cp.async ring.
        auto loop = dot->getParentOfType<scf::ForOp>();
        if (bits == 32 && a == dot.getA() && loop && !loop.isDefinedOutsideOfLoop(a) && !isLoaded(a))
          a = tilegpu::ConvertLayoutOp::create(b, dot.getLoc(), aFragments, a);
        bv = fragmentsBeforeLoop(
            dot, bv, retype(bT, tilegpu::DotOperandEncodingAttr::get(ctx, 1, mma, bits)), numWarps);
      }
      auto accIn = tilegpu::ConvertLayoutOp::create(b, loc, retype(cT, mma), dot.getAcc());
      auto onTensorCores =
          tile::DotOp::create(b, loc, retype(cT, mma), a, bv, accIn, dot.getPrecisionAttr());
      auto resultOut = tilegpu::ConvertLayoutOp::create(b, loc, cT, onTensorCores.getResult());
      dot.replaceAllUsesWith(resultOut.getResult());
      dot.erase();
      keepAccumulatorInLoop(onTensorCores, accIn, resultOut);
    });
  }
};

} // namespace
