//===- AxisInfo.cpp - contiguity, divisibility, constancy of tiles --------===//
#include "compiler/analysis/AxisInfo.h"

#include "dialects/tile/TileDialect.h"
#include "dialects/tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <fmt/format.h>

#include <numeric>

using namespace mlir;

namespace tegula::analysis {
namespace {

constexpr int64_t kMaxDivisibility = int64_t(1) << 30;

int64_t pow2Divisor(int64_t v) {
  if (v == 0)
    return kMaxDivisibility;
  int64_t d = v & -v;
  return std::min(d < 0 ? -d : d, kMaxDivisibility);
}

std::vector<int64_t> shapeOf(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
  return {};
}

AxisInfo unknown(Value v) {
  AxisInfo info;
  size_t rank = shapeOf(v).size();
  info.contiguity.assign(rank, 1);
  info.divisibility.assign(rank, 1);
  info.constancy.assign(rank, 1);
  return info;
}

/// A value equal everywhere, with the given divisibility.
AxisInfo uniform(Value v, int64_t divisibility) {
  AxisInfo info;
  auto shape = shapeOf(v);
  info.contiguity.assign(shape.size(), 1);
  info.divisibility.assign(shape.size(), divisibility);
  info.constancy = shape;
  info.scalarDivisibility = divisibility;
  return info;
}

int64_t elementBytes(Type ptrLike) {
  auto ptr = cast<tile::PtrType>(tile::getElementTypeOrSelf(ptrLike));
  Type t = ptr.getPointeeType();
  return t.isInteger(1) ? 1 : t.getIntOrFloatBitWidth() / 8;
}

} // namespace

/// A run plus something constant over the run stays a run.
int64_t addContig(const AxisInfo &a, const AxisInfo &b, size_t d) {
  return std::max(std::gcd(a.contiguity[d], b.constancy[d]), std::gcd(b.contiguity[d], a.constancy[d]));
}

/// ptr + offset (elements of `bytes`), into `info` (shaped like the result).
AxisInfo addPtrInfo(const AxisInfo &p, const AxisInfo &o, int64_t bytes, AxisInfo info) {
  info.scalarDivisibility = std::min(p.scalarDivisibility, o.scalarDivisibility * bytes);
  for (size_t d = 0; d < info.contiguity.size(); ++d) {
    info.contiguity[d] = addContig(p, o, d);
    info.divisibility[d] = std::min(p.divisibility[d], std::min(kMaxDivisibility, o.divisibility[d] * bytes));
    info.constancy[d] = std::gcd(p.constancy[d], o.constancy[d]);
  }
  return info;
}

/// A loop-carried value advanced by `by` each iteration: init + by_1 + ...
/// + by_k. Runs survive only where `by` is constant over them (a run added to
/// itself is no longer one, as addContig would have it after one step).
AxisInfo accumulatedInfo(const AxisInfo &init, const AxisInfo &by, int64_t bytes, AxisInfo info) {
  info.scalarDivisibility = std::min(init.scalarDivisibility, by.scalarDivisibility * bytes);
  for (size_t d = 0; d < info.contiguity.size(); ++d) {
    info.contiguity[d] = std::gcd(init.contiguity[d], by.constancy[d]);
    info.divisibility[d] = std::min(init.divisibility[d], std::min(kMaxDivisibility, by.divisibility[d] * bytes));
    info.constancy[d] = std::gcd(init.constancy[d], by.constancy[d]);
  }
  return info;
}

std::string AxisInfo::toString() const {
  return fmt::format("contiguity=[{}] divisibility=[{}] constancy=[{}] scalar_divisibility={}",
                     fmt::join(contiguity, ","), fmt::join(divisibility, ","),
                     fmt::join(constancy, ","), scalarDivisibility);
}

AxisInfoAnalysis::AxisInfoAnalysis(Operation *root) {
  analyse(root);
  // Loop-carried pointers advanced by the same offset every iteration
  // (Triton's `ptrs += BK`) are init + k * offset: as contiguous as init,
  // divisible like both; so are integers (a block pointer's offsets,
  // `k += BK`). Set them, then analyse again so that their users see it
  // (the offsets' own info is known after the first pass).
  bool changed = false;
  root->walk([&](scf::ForOp loop) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
      Value next = yield.getOperand(unsigned(i));
      const AxisInfo &init = get(loop.getInitArgs()[i]);
      if (auto add = next.getDefiningOp<tile::AddPtrOp>(); add && add.getPtr() == arg) {
        info_[arg] = accumulatedInfo(init, get(add.getOffset()), elementBytes(add.getType()), unknown(arg));
      } else if (auto add = next.getDefiningOp<arith::AddIOp>(); add && llvm::is_contained(add->getOperands(), arg)) {
        Value by = add.getLhs() == arg ? add.getRhs() : add.getLhs();
        info_[arg] = accumulatedInfo(init, get(by), 1, unknown(arg));
      } else {
        continue;
      }
      carried_.insert(arg);
      changed = true;
    }
  });
  if (changed)
    analyse(root);
}

void AxisInfoAnalysis::analyse(Operation *root) {
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto fn = dyn_cast<func::FuncOp>(op)) {
      for (BlockArgument arg : fn.getArguments()) {
        int64_t div = 1;
        if (auto a = fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "tile.divisibility"))
          div = a.getInt();
        info_[arg] = uniform(arg, div);
      }
    }
    // A loop's induction variable lb + k * step divides like gcd(lb, step);
    // loop-carried values stay unknown.
    if (auto loop = dyn_cast<scf::ForOp>(op))
      info_[loop.getInductionVar()] =
          uniform(loop.getInductionVar(), std::min(get(loop.getLowerBound()).scalarDivisibility,
                                                   get(loop.getStep()).scalarDivisibility));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (!info_.count(arg) && !carried_.contains(arg))
            info_[arg] = unknown(arg);
    for (Value r : op->getResults())
      info_[r] = compute(op, r);
  });
}

const AxisInfo &AxisInfoAnalysis::get(Value v) {
  auto it = info_.find(v);
  if (it == info_.end())
    it = info_.insert({v, unknown(v)}).first;
  return it->second;
}

AxisInfo AxisInfoAnalysis::compute(Operation *op, Value result) {
  auto shape = shapeOf(result);
  size_t rank = shape.size();
  // Constants.
  APInt cst;
  if (matchPattern(result, m_ConstantInt(&cst)))
    return uniform(result, pow2Divisor(cst.getSExtValue()));
  if (auto splat = dyn_cast<tile::SplatOp>(op))
    return uniform(result, get(splat.getSrc()).scalarDivisibility);
  if (auto range = dyn_cast<tile::MakeRangeOp>(op)) {
    AxisInfo info;
    info.contiguity = {shape[0]};
    info.divisibility = {pow2Divisor(int32_t(range.getStart()))};
    info.constancy = {1};
    info.scalarDivisibility = info.divisibility[0];
    return info;
  }
  // Widening keeps runs and divisors (offsets never wrap: i32 indices
  // widened to i64 for pointer arithmetic).
  if (isa<tilegpu::ConvertLayoutOp, arith::ExtSIOp, arith::ExtUIOp>(op))
    return get(op->getOperand(0));
  // The kernel's promise (checked by the interpreter) where it says more:
  // longer aligned runs start where shorter ones did, so what held for the
  // runs' starts still does.
  if (auto assume = dyn_cast<tile::AssumeOp>(op)) {
    AxisInfo info = get(assume.getSrc());
    ArrayRef<int64_t> divisibility = assume.getDivisibility(), contiguity = assume.getContiguity();
    for (size_t d = 0; d < rank; ++d) {
      info.contiguity[d] = std::max(info.contiguity[d], contiguity[d]);
      info.divisibility[d] = std::max(info.divisibility[d], divisibility[d]);
    }
    // The first element starts a run along every dimension.
    for (int64_t v : divisibility)
      info.scalarDivisibility = std::max(info.scalarDivisibility, v);
    return info;
  }
  if (auto bcast = dyn_cast<tile::BroadcastOp>(op)) {
    AxisInfo src = get(bcast.getSrc()), info = src;
    auto srcShape = shapeOf(bcast.getSrc());
    for (size_t d = 0; d < rank; ++d)
      if (srcShape[d] == 1 && shape[d] != 1) {
        info.contiguity[d] = 1;
        info.constancy[d] = shape[d];
      }
    return info;
  }
  if (auto expand = dyn_cast<tile::ExpandDimsOp>(op)) {
    AxisInfo src = get(expand.getSrc()), info = src;
    unsigned axis = expand.getAxis();
    auto at = [&](std::vector<int64_t> &v, int64_t x) { v.insert(v.begin() + axis, x); };
    if (src.contiguity.empty()) { // a scalar source has no per-dim info
      info = uniform(result, src.scalarDivisibility);
      return info;
    }
    // Every element along the new axis is a first element of some run:
    // only what holds for all elements (not just run starts) carries over.
    int64_t div = kMaxDivisibility;
    for (size_t d = 0; d < src.contiguity.size(); ++d)
      div = std::min(div, src.contiguity[d] > 1 ? int64_t(1) : src.divisibility[d]);
    at(info.contiguity, 1);
    at(info.divisibility, div);
    at(info.constancy, 1);
    return info;
  }
  auto binary = [&](auto combineContig, auto combineDiv) {
    AxisInfo a = get(op->getOperand(0)), b = get(op->getOperand(1));
    AxisInfo info = unknown(result);
    info.scalarDivisibility = combineDiv(a.scalarDivisibility, b.scalarDivisibility);
    for (size_t d = 0; d < rank; ++d) {
      info.contiguity[d] = combineContig(a, b, d);
      info.divisibility[d] = combineDiv(a.divisibility[d], b.divisibility[d]);
      info.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    }
    return info;
  };
  auto minDiv = [](int64_t x, int64_t y) { return std::min(x, y); };
  // Sign extension and truncation keep runs and multiples (of values that
  // fit: a descending loop's i64 counter truncated to its i32 index). Not
  // zero extension: a run through -1 to 0 would jump.
  if (isa<arith::ExtSIOp, arith::TruncIOp>(op)) {
    AxisInfo info = get(op->getOperand(0));
    if (info.contiguity.size() == rank)
      return info;
  }
  if (isa<arith::AddIOp>(op))
    return binary(addContig, minDiv);
  if (isa<arith::SubIOp>(op)) // a run minus a constant stays a run (not the reverse)
    return binary([](const AxisInfo &a, const AxisInfo &b, size_t d) { return std::gcd(a.contiguity[d], b.constancy[d]); },
                  minDiv);
  if (isa<arith::MulIOp>(op)) {
    // A run's divisibility describes its first element only; scaled, every
    // element is a run start, so a run operand contributes divisibility 1.
    AxisInfo a = get(op->getOperand(0)), b = get(op->getOperand(1));
    AxisInfo info = unknown(result);
    info.scalarDivisibility =
        std::min(kMaxDivisibility, a.scalarDivisibility * b.scalarDivisibility);
    for (size_t d = 0; d < rank; ++d) {
      int64_t da = a.contiguity[d] > 1 ? 1 : a.divisibility[d];
      int64_t db = b.contiguity[d] > 1 ? 1 : b.divisibility[d];
      info.divisibility[d] = std::min(kMaxDivisibility, da * db);
      info.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    }
    return info;
  }
  if (auto add = dyn_cast<tile::AddPtrOp>(op))
    return addPtrInfo(get(add.getPtr()), get(add.getOffset()), elementBytes(add.getType()), unknown(result));
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    // `run < n`: a run starting at a multiple of g with n a multiple of g
    // compares the same for all its g elements.
    // Only ordered comparisons with the run on the "<" side have a boundary
    // at a multiple of n: `run < n`, `run >= n`, `n > run`, `n <= run`.
    using P = arith::CmpIPredicate;
    P p = cmp.getPredicate();
    bool runLeft = p == P::slt || p == P::ult || p == P::sge || p == P::uge;
    bool runRight = p == P::sgt || p == P::ugt || p == P::sle || p == P::ule;
    AxisInfo a = get(cmp.getLhs()), b = get(cmp.getRhs());
    AxisInfo info = unknown(result);
    for (size_t d = 0; d < rank; ++d) {
      int64_t c = std::gcd(a.constancy[d], b.constancy[d]);
      int64_t g = std::min(a.divisibility[d], b.divisibility[d]);
      if (runLeft && b.constancy[d] == shape[d])
        c = std::max(c, std::gcd(a.contiguity[d], g));
      if (runRight && a.constancy[d] == shape[d])
        c = std::max(c, std::gcd(b.contiguity[d], g));
      info.constancy[d] = c;
    }
    return info;
  }
  if (auto select = dyn_cast<arith::SelectOp>(op)) {
    // Per element, one of two tiles (offsets, or pointers into one of two
    // buffers): a run survives where both operands run alike and the
    // condition holds still over it.
    AxisInfo c = get(select.getCondition()), a = get(select.getTrueValue()), b = get(select.getFalseValue());
    AxisInfo info = unknown(result);
    info.scalarDivisibility = std::min(a.scalarDivisibility, b.scalarDivisibility);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t cond = c.constancy.empty() ? shape[d] : c.constancy[d]; // a scalar condition
      if (a.contiguity[d] == b.contiguity[d] && cond % a.contiguity[d] == 0) {
        info.contiguity[d] = a.contiguity[d];
        info.divisibility[d] = std::min(a.divisibility[d], b.divisibility[d]);
      }
      info.constancy[d] = std::gcd(cond, std::gcd(a.constancy[d], b.constancy[d]));
    }
    return info;
  }
  if (isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(op)) {
    AxisInfo a = get(op->getOperand(0)), b = get(op->getOperand(1));
    AxisInfo info = unknown(result);
    for (size_t d = 0; d < rank; ++d)
      info.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    return info;
  }
  return unknown(result);
}

int64_t maxVectorWidth(AxisInfoAnalysis &axis, Value ptr, Value mask, unsigned dim) {
  auto type = dyn_cast<RankedTensorType>(ptr.getType());
  if (!type)
    return 1;
  const AxisInfo &p = axis.get(ptr);
  int64_t bytes = elementBytes(type);
  int64_t width = std::min<int64_t>(p.contiguity[dim], 16 / bytes);
  width = std::min(width, std::max<int64_t>(1, p.divisibility[dim] / bytes));
  if (mask)
    width = std::min(width, axis.get(mask).constancy[dim]);
  // Round down to a power of two.
  int64_t w = 1;
  while (w * 2 <= width)
    w *= 2;
  return w;
}

} // namespace tegula::analysis
