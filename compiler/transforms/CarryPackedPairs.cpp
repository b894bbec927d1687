//===- CarryPackedPairs.cpp - branches pass 2-element vectors whole -------===//
//
// Pass `carry-packed-pairs`: lower-tilegpu-to-llvm converts tiles to one
// scalar per register, so a tile carried round a loop becomes that many
// block arguments. Where a pair of them carries both halves of one
// 2-element vector on every incoming edge (`extractelement %v[0]` and
// `extractelement %v[1]`, as a paired f32 → bf16 conversion leaves them),
// the block takes the vector instead and extracts the halves itself.
//
// Why: a rotated attention loop computes P = bf16(softmax) in one iteration
// and packs it into the next iteration's wgmma operand. Carried as scalars,
// LLVM scalarises the paired conversion (each half reaches a phi on its
// own) and repacks in the next iteration: two cvt.rn.bf16.f32 and a pack
// per pair instead of one cvt.rn.bf16x2.f32. Carried whole, the extract →
// insert → bitcast chain in the next iteration folds away.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"

#include <optional>

namespace tegula {
#define GEN_PASS_DEF_CARRYPACKEDPAIRS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

/// `extractelement %vector[index]` of a 2-element vector.
struct Half {
  Value vector;
  int64_t index;
};

std::optional<Half> halfOf(Value v) {
  auto extract = v.getDefiningOp<LLVM::ExtractElementOp>();
  if (!extract)
    return std::nullopt;
  auto type = dyn_cast<VectorType>(extract.getVector().getType());
  APInt index;
  if (!type || type.isScalable() || type.getNumElements() != 2 ||
      !matchPattern(extract.getPosition(), m_ConstantInt(&index)))
    return std::nullopt;
  return Half{extract.getVector(), index.getSExtValue()};
}

/// One incoming edge of a block: a branch and which of its successors.
struct Edge {
  mutable BranchOpInterface branch;
  unsigned successor;
  SuccessorOperands operands() const { return branch.getSuccessorOperands(successor); }
  Value operand(unsigned arg) const { return operands()[arg]; }
};

/// Every edge into `block`, or nothing when one is not a plain branch.
std::optional<SmallVector<Edge>> edgesInto(Block &block) {
  SmallVector<Edge> edges;
  for (BlockOperand &use : block.getUses()) {
    auto branch = dyn_cast<BranchOpInterface>(use.getOwner());
    if (!branch || branch.getSuccessorOperands(use.getOperandNumber()).getProducedOperandCount())
      return std::nullopt;
    edges.push_back({branch, use.getOperandNumber()});
  }
  return edges;
}

/// The argument that takes the second half of what `first` takes the first
/// of, on every edge; -1 when there is none.
int partnerOf(unsigned first, Block &block, ArrayRef<Edge> edges) {
  SmallVector<Value> vectors;
  for (const Edge &edge : edges) {
    std::optional<Half> half = halfOf(edge.operand(first));
    if (!half || half->index != 0)
      return -1;
    vectors.push_back(half->vector);
  }
  for (unsigned second = 0; second < block.getNumArguments(); ++second) {
    if (second == first)
      continue;
    bool pairs = true;
    for (size_t e = 0; e < edges.size() && pairs; ++e) {
      std::optional<Half> half = halfOf(edges[e].operand(second));
      pairs = half && half->index == 1 && half->vector == vectors[e];
    }
    if (pairs)
      return int(second);
  }
  return -1;
}

/// Passes the vector whole into `block` in place of arguments `first` and
/// `second`.
void carryWhole(Block &block, ArrayRef<Edge> edges, unsigned first, unsigned second) {
  BlockArgument first_ = block.getArgument(first), second_ = block.getArgument(second);
  Value vector0 = halfOf(edges.front().operand(first))->vector;
  BlockArgument packed = block.addArgument(vector0.getType(), first_.getLoc());
  for (const Edge &edge : edges)
    edge.operands().append(halfOf(edge.operand(first))->vector);

  OpBuilder b = OpBuilder::atBlockBegin(&block);
  Location loc = first_.getLoc();
  auto half = [&](int32_t i) -> Value {
    Value position = LLVM::ConstantOp::create(b, loc, b.getI32Type(), i);
    return LLVM::ExtractElementOp::create(b, loc, packed, position);
  };
  first_.replaceAllUsesWith(half(0));
  second_.replaceAllUsesWith(half(1));
  for (unsigned arg : {std::max(first, second), std::min(first, second)}) {
    for (const Edge &edge : edges)
      edge.operands().erase(arg);
    block.eraseArgument(arg);
  }
}

/// Pairs `block`'s arguments until none is left to pair; true if any was.
bool pairArguments(Block &block) {
  std::optional<SmallVector<Edge>> edges = edgesInto(block);
  if (!edges || edges->empty())
    return false;
  bool changed = false;
  for (unsigned first = 0; first < block.getNumArguments();) {
    int second = partnerOf(first, block, *edges);
    if (second < 0) {
      ++first;
      continue;
    }
    carryWhole(block, *edges, first, unsigned(second));
    changed = true; // arguments shifted: look at `first` again
  }
  return changed;
}

struct CarryPackedPairsPass : tegula::impl::CarryPackedPairsBase<CarryPackedPairsPass> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::LLVMFuncOp fn) {
      // A block's new vector can pair the arguments of the blocks it
      // branches to (a loop's exit takes what its body carried).
      for (bool changed = true; changed;) {
        changed = false;
        for (Block &block : llvm::drop_begin(fn.getBody()))
          changed |= pairArguments(block);
      }
    });
  }
};

} // namespace
