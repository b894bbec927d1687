//===- LoweringCommon.cpp - shared pieces of the tilegpu -> LLVM lowering -===//
#include "compiler/transforms/LoweringCommon.h"

#include "compiler/analysis/ScratchBarriers.h"
#include "compiler/analysis/SharedMemoryUsage.h"
#include "compiler/layout/OperandStaging.h"
#include "compiler/layout/WgmmaOperands.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <bit>

#include <fmt/format.h>

using namespace mlir;
using tegula::layout::LinearLayout;

namespace tegula::lowering {

LinearLayout layoutOf(Type t) {
  auto tensor = cast<RankedTensorType>(t);
  return tilegpu::toLinearLayout(tensor.getEncoding(), tensor.getShape());
}

Value i32Const(OpBuilder &b, Location loc, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, b.getI32Type(), b.getI32IntegerAttr(int32_t(v)));
}

namespace {
ModuleOp moduleAt(OpBuilder &b) {
  Operation *parent = b.getInsertionBlock()->getParentOp();
  return isa<ModuleOp>(parent) ? cast<ModuleOp>(parent) : parent->getParentOfType<ModuleOp>();
}
int64_t numWarps(ModuleOp module) {
  auto warps = module ? module->getAttrOfType<IntegerAttr>("tilegpu.num_warps") : IntegerAttr();
  return warps ? warps.getInt() : 4;
}
} // namespace

int64_t clusterSize(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  auto ctas = module ? module->getAttrOfType<IntegerAttr>("tilegpu.cluster_size") : IntegerAttr();
  return ctas ? ctas.getInt() : 1;
}

int64_t programsPerCta(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  auto programs = module ? module->getAttrOfType<IntegerAttr>("tilegpu.programs_per_cta") : IntegerAttr();
  return programs ? programs.getInt() : 1;
}

Value programThreadIndex(OpBuilder &b, Location loc) {
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  ModuleOp module = moduleAt(b);
  if (!module || programsPerCta(module) == 1 || warpRoleAt(b.getInsertionBlock()) != WarpRole::Consumer)
    return tid;
  // Program threads are a power of two (a warpgroup).
  return LLVM::AndOp::create(b, loc, tid, i32Const(b, loc, numWarps(module) * kWarpSize - 1));
}

Value isProgramLeader(OpBuilder &b, Location loc) {
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, programThreadIndex(b, loc), i32Const(b, loc, 0));
}

Value programSlot(OpBuilder &b, Location loc) {
  ModuleOp module = moduleAt(b);
  const WarpRole role = warpRoleAt(b.getInsertionBlock());
  if (!module || role == WarpRole::All || (role == WarpRole::Consumer && programsPerCta(module) == 1))
    return i32Const(b, loc, 0);
  const int64_t programThreads = numWarps(module) * kWarpSize;
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  if (role == WarpRole::Consumer)
    return LLVM::UDivOp::create(b, loc, tid, i32Const(b, loc, programThreads));
  // Producer warp w (after every consumer) serves program w.
  return LLVM::UDivOp::create(
      b, loc, LLVM::SubOp::create(b, loc, tid, i32Const(b, loc, programThreads * programsPerCta(module))),
      i32Const(b, loc, kWarpSize));
}

Value programIdX(OpBuilder &b, Location loc) {
  Value cta = NVVM::BlockIdXOp::create(b, loc, b.getI32Type());
  ModuleOp module = moduleAt(b);
  const int64_t programs = module ? programsPerCta(module) : 1;
  if (programs == 1)
    return cta;
  return LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, cta, i32Const(b, loc, programs)),
                             programSlot(b, loc));
}

std::pair<Value, Value> laneAndWarp(OpBuilder &b, Location loc) {
  Value tid = programThreadIndex(b, loc);
  Value lane = LLVM::AndOp::create(b, loc, tid, i32Const(b, loc, kWarpSize - 1));
  Value warp = LLVM::LShrOp::create(b, loc, tid, i32Const(b, loc, 5));
  return {lane, warp};
}

namespace {
/// XOR over the set bits of `index` of the basis vectors of `inDim`, per
/// output dimension: the thread-dependent part of every coordinate.
SmallVector<Value> threadPart(OpBuilder &b, Location loc, const LinearLayout &ll,
                              const std::string &inDim, Value index) {
  size_t rank = ll.outDims().size();
  SmallVector<Value> parts(rank, i32Const(b, loc, 0));
  int bits = std::countr_zero(uint32_t(ll.inDimSize(inDim)));
  for (int i = 0; i < bits; ++i) {
    std::vector<int32_t> basis = ll.basis(inDim, i);
    Value bit = LLVM::AndOp::create(
        b, loc, LLVM::LShrOp::create(b, loc, index, i32Const(b, loc, i)), i32Const(b, loc, 1));
    for (size_t d = 0; d < rank; ++d)
      if (basis[d])
        parts[d] = LLVM::XOrOp::create(
            b, loc, parts[d], LLVM::MulOp::create(b, loc, bit, i32Const(b, loc, basis[d])));
  }
  return parts;
}
} // namespace

SmallVector<SmallVector<Value>> coordinates(OpBuilder &b, Location loc, const LinearLayout &ll, bool addDisjoint) {
  auto [lane, warp] = laneAndWarp(b, loc);
  SmallVector<Value> lanePart = threadPart(b, loc, ll, "lane", lane);
  SmallVector<Value> warpPart = threadPart(b, loc, ll, "warp", warp);
  // The bits the thread parts may set, per output dimension (addDisjoint).
  SmallVector<int32_t> threadBits(ll.outDims().size(), 0);
  for (const char *dim : {"lane", "warp"})
    if (ll.hasInDim(dim))
      for (int i = 0; i < std::countr_zero(uint32_t(ll.inDimSize(dim))); ++i) {
        std::vector<int32_t> basis = ll.basis(dim, i);
        for (size_t d = 0; d < basis.size(); ++d)
          threadBits[d] |= basis[d];
      }
  SmallVector<Value> thread;
  for (size_t d = 0; d < lanePart.size(); ++d)
    thread.push_back(LLVM::XOrOp::create(b, loc, lanePart[d], warpPart[d]));
  SmallVector<SmallVector<Value>> out;
  for (int32_t r = 0; r < ll.inDimSize("register"); ++r) {
    std::vector<int32_t> regPart = ll.apply({{"register", r}});
    SmallVector<Value> c;
    for (size_t d = 0; d < regPart.size(); ++d) {
      Value constant = i32Const(b, loc, regPart[d]);
      c.push_back(addDisjoint && !(regPart[d] & threadBits[d])
                      ? Value(LLVM::AddOp::create(b, loc, thread[d], constant))
                      : Value(LLVM::XOrOp::create(b, loc, thread[d], constant)));
    }
    out.push_back(c);
  }
  return out;
}

/// The integer type and PTX register constraint used to move `elem` through
/// inline assembly.
std::pair<Type, std::string> asmRegister(Type elem) {
  MLIRContext *ctx = elem.getContext();
  unsigned w = memoryType(elem).getIntOrFloatBitWidth();
  if (w <= 16)
    return {IntegerType::get(ctx, 16), "h"};
  if (w == 32)
    return {IntegerType::get(ctx, 32), "r"};
  return {IntegerType::get(ctx, 64), "l"};
}

Value toAsmInt(OpBuilder &b, Location loc, Value v, Type asmType) {
  Type t = v.getType();
  if (isa<FloatType>(t)) {
    Type same = IntegerType::get(b.getContext(), t.getIntOrFloatBitWidth());
    v = LLVM::BitcastOp::create(b, loc, same, v);
    t = same;
  }
  if (t.getIntOrFloatBitWidth() < asmType.getIntOrFloatBitWidth())
    v = LLVM::ZExtOp::create(b, loc, asmType, v);
  return v;
}

Value fromAsmInt(OpBuilder &b, Location loc, Value v, Type elem) {
  if (elem.isInteger(1))
    return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, v,
                                LLVM::ConstantOp::create(b, loc, v.getType(),
                                                         b.getIntegerAttr(v.getType(), 0)));
  unsigned w = elem.getIntOrFloatBitWidth();
  if (v.getType().getIntOrFloatBitWidth() > w)
    v = LLVM::TruncOp::create(b, loc, IntegerType::get(b.getContext(), w), v);
  if (isa<FloatType>(elem) && LLVM::isCompatibleType(elem)) // (fp8 stays its i8 bits)
    v = LLVM::BitcastOp::create(b, loc, elem, v);
  return v;
}

std::string ptxType(Type elem) {
  unsigned w = memoryType(elem).getIntOrFloatBitWidth();
  return w == 8 ? "u8" : fmt::format("b{}", w);
}

SmallVector<Value> packWords(OpBuilder &b, Location loc, ValueRange values) {
  Type elem = values[0].getType();
  const unsigned perWord = 32 / elem.getIntOrFloatBitWidth();
  auto vec = VectorType::get({int64_t(perWord)}, elem);
  SmallVector<Value> words;
  for (size_t i = 0; i < values.size(); i += perWord) {
    Value v = LLVM::PoisonOp::create(b, loc, vec);
    for (unsigned j = 0; j < perWord; ++j)
      v = LLVM::InsertElementOp::create(b, loc, v, values[i + j], i32Const(b, loc, j));
    words.push_back(LLVM::BitcastOp::create(b, loc, b.getI32Type(), v));
  }
  return words;
}

SmallVector<Value> unpackWords(OpBuilder &b, Location loc, ValueRange words, Type elem) {
  const unsigned perWord = 32 / elem.getIntOrFloatBitWidth();
  auto vec = VectorType::get({int64_t(perWord)}, elem);
  SmallVector<Value> values;
  for (Value w : words) {
    Value v = LLVM::BitcastOp::create(b, loc, vec, w);
    for (unsigned j = 0; j < perWord; ++j)
      values.push_back(LLVM::ExtractElementOp::create(b, loc, v, i32Const(b, loc, j)));
  }
  return values;
}

CacheQualifiers cacheQualifiers(tile::CacheModifier cache, tile::EvictionPolicy evict, bool isVolatile) {
  CacheQualifiers q;
  if (isVolatile)
    q.opcode = ".volatile.global";
  else if (cache != tile::CacheModifier::None)
    q.opcode += "." + tile::stringifyCacheModifier(cache).str();
  else if (evict != tile::EvictionPolicy::Normal) {
    // L1's priority is a qualifier; L2's needs a policy register (PTX's
    // .L2::evict_* qualifiers are for 256-bit accesses only), as Triton does.
    const std::string priority = tile::stringifyEvictionPolicy(evict).str();
    q.opcode += fmt::format(".L1::{}.L2::cache_hint", priority);
    q.policy = fmt::format("createpolicy.fractional.L2::{}.b64 %tegula_policy, 1.0;", priority);
  }
  return q;
}

std::string withCachePolicy(const CacheQualifiers &q, const std::string &access) {
  if (q.policy.empty())
    return access + ";";
  return fmt::format("{{\n\t.reg .b64 %tegula_policy;\n\t{}\n\t{}, %tegula_policy;\n\t}}", q.policy, access);
}

void predicatedStore(OpBuilder &b, Location loc, Value ptr, ValueRange values, Value pred,
                     llvm::StringRef space, const CacheQualifiers &hints) {
  if (values.size() > 4) { // e.g. 8 x bf16: st.v4.b32
    SmallVector<Value> words = packWords(b, loc, values);
    return predicatedStore(b, loc, ptr, words, pred, space, hints);
  }
  Type elem = values[0].getType();
  auto [asmType, reg] = asmRegister(elem);
  size_t w = values.size();
  std::string type = ptxType(elem) == "u8" ? "b8" : ptxType(elem);
  SmallVector<Value> args = {ptr};
  std::string regs, constraints = "l";
  for (size_t i = 0; i < w; ++i) {
    args.push_back(toAsmInt(b, loc, values[i], asmType));
    regs += fmt::format("{}${}", i ? ", " : "", i + 1);
    constraints += "," + reg;
  }
  args.push_back(pred);
  constraints += ",b";
  const std::string opcode = space == "global" ? hints.opcode : "." + space.str();
  std::string body = withCachePolicy(
      hints, fmt::format("@${0} st{1}{2}.{3} [ $0 + 0 ], {4}", w + 1, opcode, w > 1 ? fmt::format(".v{}", w) : "",
                         type, w > 1 ? "{" + regs + "}" : regs));
  LLVM::InlineAsmOp::create(b, loc, TypeRange{}, args, body, constraints,
                            /*has_side_effects=*/true, false,
                            LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                            ArrayAttr());
}

Value inlinePtx(OpBuilder &b, Location loc, Type result, ValueRange args, const std::string &body,
                const std::string &constraints) {
  auto op = LLVM::InlineAsmOp::create(b, loc, result ? TypeRange{result} : TypeRange{}, args, body,
                                      constraints, /*has_side_effects=*/true, false,
                                      LLVM::tailcallkind::TailCallKind::None,
                                      LLVM::AsmDialectAttr(), ArrayAttr());
  return result ? op.getResult(0) : Value();
}

bool isWgmmaDot(Operation *op) {
  if (!isa<tilegpu::DotSharedOp, tilegpu::DotSharedBOp>(op))
    return false;
  auto mma = dyn_cast_if_present<tilegpu::MmaEncodingAttr>(
      cast<RankedTensorType>(op->getResult(0).getType()).getEncoding());
  return mma && mma.isWgmma();
}

WarpRole warpRoleAt(Block *block) {
  for (Region *r = block->getParent(); r && r->getParentOp(); r = r->getParentOp()->getParentRegion())
    if (auto split = dyn_cast<scf::IfOp>(r->getParentOp()); split && split->hasAttr("tilegpu.warp_specialized"))
      return r == &split.getElseRegion() ? WarpRole::Consumer : WarpRole::Producer;
  return WarpRole::All;
}

void ctaBarrier(OpBuilder &b, Location loc) {
  auto module = b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  if (warpRoleAt(b.getInsertionBlock()) != WarpRole::Consumer || !module) {
    NVVM::Barrier0Op::create(b, loc);
    return;
  }
  const int64_t consumerThreads = numWarps(module) * kWarpSize;
  if (programsPerCta(module) == 1) {
    inlinePtx(b, loc, Type(), {}, fmt::format("bar.sync 1, {};", consumerThreads), "~{memory}");
    return;
  }
  // Each program's warpgroup has a barrier of its own: 1 + its slot.
  Value id = LLVM::AddOp::create(b, loc, programSlot(b, loc), i32Const(b, loc, 1));
  inlinePtx(b, loc, Type(), {id}, fmt::format("bar.sync $0, {};", consumerThreads), "r,~{memory}");
}

void leadingBarrier(OpBuilder &b, Location loc, Operation *op) {
  if (!op->hasAttr(analysis::kSkipLeadingBarrierAttr))
    ctaBarrier(b, loc);
}

Value ringStage(OpBuilder &b, Location loc, Value ring, Value stage, tilegpu::SharedTilesType type) {
  return LLVM::GEPOp::create(
      b, loc, ring.getType(), b.getI8Type(), ring,
      ValueRange{LLVM::MulOp::create(b, loc, stage, i32Const(b, loc, type.tileBytes()))});
}

Value tf32Bits(OpBuilder &b, Location loc, Value f, bool cvt) {
  Type i32 = b.getI32Type();
  if (cvt) // one instruction; see the header for its low 13 bits
    return LLVM::InlineAsmOp::create(b, loc, i32, ValueRange{f}, "cvt.rn.tf32.f32 $0, $1;", "=r,f",
                                     /*has_side_effects=*/false, /*is_align_stack=*/false,
                                     LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
        .getResult(0);
  Value u = LLVM::BitcastOp::create(b, loc, i32, f);
  Value exp = LLVM::AndOp::create(b, loc, u, i32Const(b, loc, 0x7f800000));
  Value special =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, exp, i32Const(b, loc, 0x7f800000));
  // Ties to even: add 0xfff plus the lowest kept bit, then drop 13 bits.
  Value lowestKept = LLVM::AndOp::create(b, loc, LLVM::LShrOp::create(b, loc, u, i32Const(b, loc, 13)),
                                         i32Const(b, loc, 1));
  Value bias = LLVM::AddOp::create(b, loc, lowestKept, i32Const(b, loc, 0xfff));
  Value rounded = LLVM::AndOp::create(b, loc, LLVM::AddOp::create(b, loc, u, bias),
                                      i32Const(b, loc, int32_t(0xffffe000u)));
  return LLVM::SelectOp::create(b, loc, special, u, rounded);
}

Owners ownersOf(OpBuilder &b, Location loc, const LinearLayout &ll) {
  Owners o;
  int32_t laneMask = 0, warpMask = 0;
  for (int bit : ll.freeBits("register")) o.duplicateRegisters |= 1 << bit;
  for (int bit : ll.freeBits("lane")) laneMask |= 1 << bit;
  for (int bit : ll.freeBits("warp")) warpMask |= 1 << bit;
  auto [lane, warp] = laneAndWarp(b, loc);
  o.threadOwns = LLVM::ICmpOp::create(
      b, loc, LLVM::ICmpPredicate::eq,
      LLVM::OrOp::create(b, loc, LLVM::AndOp::create(b, loc, lane, i32Const(b, loc, laneMask)),
                         LLVM::AndOp::create(b, loc, warp, i32Const(b, loc, warpMask))),
      i32Const(b, loc, 0));
  return o;
}

Value sharedBuffer(OpBuilder &b, Location loc, Operation *op) {
  std::optional<int64_t> offset = analysis::sharedOffset(op);
  assert(offset && "shared-memory user without an offset");
  Type ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  Value base = LLVM::AddressOfOp::create(b, loc, ptr3, kScratchSymbol);
  Value at = i32Const(b, loc, *offset);
  if (auto stride = op->getAttrOfType<IntegerAttr>(analysis::kSharedSlotStrideAttr))
    at = LLVM::AddOp::create(b, loc, at,
                             LLVM::MulOp::create(b, loc, programSlot(b, loc), i32Const(b, loc, stride.getInt())));
  else if (*offset == 0)
    return base;
  return LLVM::GEPOp::create(b, loc, ptr3, b.getI8Type(), base, ValueRange{at});
}

Type memoryType(Type pointee) {
  // i1 is stored as a byte; fp8 is its byte (LLVM has no fp8 types).
  if (pointee.isInteger(1) || (isa<FloatType>(pointee) && !LLVM::isCompatibleType(pointee)))
    return IntegerType::get(pointee.getContext(), pointee.getIntOrFloatBitWidth() == 1 ? 8 : pointee.getIntOrFloatBitWidth());
  return pointee;
}

TileTypeConverter::TileTypeConverter(MLIRContext *ctx, bool tf32Cvt) : LLVMTypeConverter(ctx), tf32Cvt(tf32Cvt) {
  addConversion([ctx](tile::PtrType) -> Type { return LLVM::LLVMPointerType::get(ctx, 1); });
  // A tensor descriptor on TMA is its tensor map's address (a kernel
  // parameter).
  addConversion([ctx](tile::TensorDescType) -> Type { return LLVM::LLVMPointerType::get(ctx); });
  // A ring of shared tiles is its base address.
  addConversion([ctx](tilegpu::SharedTilesType) -> Type { return LLVM::LLVMPointerType::get(ctx, 3); });
  addConversion([this](RankedTensorType t, SmallVectorImpl<Type> &out)
                    -> std::optional<LogicalResult> {
    if (!t.getEncoding())
      return std::nullopt;
    Type elem = convertType(t.getElementType());
    if (!elem)
      return failure();
    out.append(size_t(layoutOf(t).inDimSize("register")), elem);
    return success();
  });
}

void storeSharedTile(OpBuilder &b, Location loc, ValueRange values, RankedTensorType type,
                     const layout::SharedTile &tile, Value base, bool stmatrix, std::optional<int32_t> onlyBlock) {
  layout::LinearLayout source = layoutOf(type);
  Type ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  auto skip = [&](int32_t reg) { return onlyBlock && layout::tmaStoreBlockOf(source, tile, reg) != *onlyBlock; };
  if (auto rows = stmatrix ? layout::stmatrixRows(source, tile) : std::nullopt) {
    // Group g: registers 8g..8g+7 as four words, each lane addressing its row.
    auto at = coordinates(b, loc, rows->compose(tile.offsetLayout()));
    for (auto [g, offset] : llvm::enumerate(at)) {
      if (skip(int32_t(8 * g)))
        continue;
      Value p = LLVM::GEPOp::create(b, loc, ptr3, values.front().getType(), base, ValueRange{offset[0]});
      NVVM::StMatrixOp::create(b, loc, p, packWords(b, loc, values.slice(8 * g, 8)), NVVM::MMALayout::row,
                               NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8), NVVM::LdStMatrixEltType::B16);
    }
    return;
  }
  layout::LinearLayout offsets = source.compose(tile.offsetLayout());
  const int32_t vector = layout::vectorElementsOf(offsets, 128 / int32_t(type.getElementTypeBitWidth()));
  Owners owners = ownersOf(b, loc, source);
  auto at = coordinates(b, loc, offsets);
  for (int32_t r = 0; r < source.inDimSize("register"); r += vector) {
    if ((r & owners.duplicateRegisters) || skip(r))
      continue;
    ValueRange group = values.slice(size_t(r), size_t(vector));
    SmallVector<Value> words = vector == 1 ? SmallVector<Value>(group) : packWords(b, loc, group);
    Value p = LLVM::GEPOp::create(b, loc, ptr3, values[size_t(r)].getType(), base, ValueRange{at[size_t(r)][0]});
    predicatedStore(b, loc, p, words, owners.threadOwns, "shared");
  }
}

SmallVector<Value> loadSharedTile(OpBuilder &b, Location loc, RankedTensorType type, Type elem,
                                  const layout::SharedTile &tile, Value base) {
  layout::LinearLayout target = layoutOf(type);
  Type ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  SmallVector<Value> out(size_t(target.inDimSize("register")));
  if (auto rows = layout::stmatrixRows(target, tile)) {
    // ldmatrix.x4 reads what stmatrix.x4 writes: group g is registers
    // 8g..8g+7, four words of a lane, each lane addressing its row.
    Type i32 = b.getI32Type();
    Type words = LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(4, i32));
    auto at = coordinates(b, loc, rows->compose(tile.offsetLayout()));
    for (auto [g, offset] : llvm::enumerate(at)) {
      Value p = LLVM::GEPOp::create(b, loc, ptr3, elem, base, ValueRange{offset[0]});
      Value read = NVVM::LdMatrixOp::create(b, loc, words, p, 4, NVVM::MMALayout::row,
                                            NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
                                            NVVM::LdStMatrixEltType::B16);
      SmallVector<Value> w;
      for (int64_t j = 0; j < 4; ++j)
        w.push_back(LLVM::ExtractValueOp::create(b, loc, read, j));
      for (auto [i, v] : llvm::enumerate(unpackWords(b, loc, w, elem)))
        out[8 * g + i] = v;
    }
    return out;
  }
  const int32_t bits = int32_t(elem.getIntOrFloatBitWidth());
  layout::LinearLayout offsets = target.compose(tile.offsetLayout());
  int32_t vector = layout::vectorElementsOf(offsets, 128 / bits);
  if (vector * bits < 32 || bits > 32)
    vector = 1; // narrower than a word, or wider elements: one by one
  const int32_t wordsPerVector = vector * bits / 32;
  auto at = coordinates(b, loc, offsets);
  for (int32_t r = 0; r < target.inDimSize("register"); r += vector) {
    Value p = LLVM::GEPOp::create(b, loc, ptr3, elem, base, ValueRange{at[size_t(r)][0]});
    if (vector == 1) {
      out[size_t(r)] = LLVM::LoadOp::create(b, loc, elem, p);
      continue;
    }
    Value vec = LLVM::LoadOp::create(b, loc, VectorType::get({wordsPerVector}, b.getI32Type()), p,
                                     /*alignment=*/unsigned(wordsPerVector * 4));
    SmallVector<Value> w;
    for (int32_t j = 0; j < wordsPerVector; ++j)
      w.push_back(LLVM::ExtractElementOp::create(b, loc, vec, i32Const(b, loc, j)));
    SmallVector<Value> values;
    if (bits == 32)
      for (Value word : w)
        values.push_back(LLVM::BitcastOp::create(b, loc, elem, word));
    else
      values = unpackWords(b, loc, w, elem);
    for (auto [i, v] : llvm::enumerate(values))
      out[size_t(r) + i] = v;
  }
  return out;
}

} // namespace tegula::lowering
