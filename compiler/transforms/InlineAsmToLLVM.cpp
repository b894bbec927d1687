//===- InlineAsmToLLVM.cpp - tl::inline_asm_elementwise, register by register -===//
//
// tile.elementwise_inline_asm becomes one llvm.inline_asm per `pack`
// registers the thread holds: its arguments' registers (every tile in the
// result's layout) packed pack at a time into an integer of pack x their
// bits, the first lowest, and its outputs unpacked the same way. A thread
// whose register count `pack` does not divide pads the last group with
// zeros and drops what the asm makes of them. A 16-bit float is passed as
// its bits (an "h" register); f32 and f64 as they are ("f", "d" or "r").
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/LoweringCommon.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace tegula::lowering {
namespace {

struct ElementwiseInlineAsmPattern : OpConversionPattern<tile::ElementwiseInlineAsmOp> {
  using OpConversionPattern::OpConversionPattern;

  /// The type an element (or `pack` of them) travels in.
  static Type registerType(OpBuilder &b, Type elem, int pack) {
    const unsigned bits = elem.getIntOrFloatBitWidth();
    if (pack == 1 && (elem.isF32() || elem.isF64() || isa<IntegerType>(elem)))
      return elem;
    return b.getIntegerType(bits * unsigned(pack));
  }

  LogicalResult matchAndRewrite(tile::ElementwiseInlineAsmOp op, OneToNOpAdaptor adaptor,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getResults()[0].getType());
    for (Type t : llvm::concat<const Type>(op.getArgs().getTypes(), op.getResults().getTypes()))
      if (cast<RankedTensorType>(t).getEncoding() != resultType.getEncoding())
        return op.emitOpError() << "expects every argument in its results' layout, got " << t;
    const int pack = int(op.getPack());
    const size_t n = size_t(layoutOf(resultType).inDimSize("register"));
    const TypeConverter &types = *getTypeConverter();

    SmallVector<Type> elems, outTypes;
    for (Value r : op.getResults()) {
      Type elem = types.convertType(getElementTypeOrSelf(r.getType()));
      elems.push_back(elem);
      outTypes.push_back(registerType(rw, elem, pack));
    }
    Type asmResult = outTypes.size() == 1
                         ? outTypes[0]
                         : Type(LLVM::LLVMStructType::getLiteral(rw.getContext(), outTypes));

    // One element of an argument as an integer of its width (or as itself).
    auto asInteger = [&](Value v) -> Value {
      Type t = v.getType();
      if (isa<IntegerType>(t))
        return v;
      return LLVM::BitcastOp::create(rw, loc, rw.getIntegerType(t.getIntOrFloatBitWidth()), v);
    };
    auto fromInteger = [&](Value v, Type elem) -> Value {
      return v.getType() == elem ? v : LLVM::BitcastOp::create(rw, loc, elem, v).getResult();
    };

    SmallVector<SmallVector<Value>> results(op.getNumResults());
    for (size_t first = 0; first < n; first += size_t(pack)) {
      SmallVector<Value> operands;
      for (ValueRange regs : adaptor.getArgs()) {
        Type elem = regs[0].getType();
        Type reg = registerType(rw, elem, pack);
        if (pack == 1) {
          operands.push_back(reg == elem ? regs[first] : asInteger(regs[first]));
          continue;
        }
        const unsigned bits = elem.getIntOrFloatBitWidth();
        Value word = LLVM::ConstantOp::create(rw, loc, reg, 0);
        for (size_t j = 0; j < size_t(pack) && first + j < n; ++j) {
          Value part = LLVM::ZExtOp::create(rw, loc, reg, asInteger(regs[first + j]));
          if (j)
            part = LLVM::ShlOp::create(rw, loc, part, LLVM::ConstantOp::create(rw, loc, reg, int64_t(bits * j)));
          word = LLVM::OrOp::create(rw, loc, word, part);
        }
        operands.push_back(word);
      }
      auto asmOp = LLVM::InlineAsmOp::create(rw, loc, asmResult, operands, op.getAsmString(), op.getConstraints(),
                                             /*has_side_effects=*/!op.getPure(), /*is_align_stack=*/false,
                                             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                             ArrayAttr());
      for (size_t r = 0; r < outTypes.size(); ++r) {
        Value out = outTypes.size() == 1
                        ? asmOp.getResult(0)
                        : LLVM::ExtractValueOp::create(rw, loc, asmOp.getResult(0), ArrayRef<int64_t>{int64_t(r)})
                              .getResult();
        if (pack == 1) {
          results[r].push_back(fromInteger(out, elems[r]));
          continue;
        }
        const unsigned bits = elems[r].getIntOrFloatBitWidth();
        Type narrow = rw.getIntegerType(bits);
        for (size_t j = 0; j < size_t(pack) && first + j < n; ++j) {
          Value part = out;
          if (j)
            part = LLVM::LShrOp::create(rw, loc, part, LLVM::ConstantOp::create(rw, loc, outTypes[r], int64_t(bits * j)));
          results[r].push_back(fromInteger(LLVM::TruncOp::create(rw, loc, narrow, part), elems[r]));
        }
      }
    }
    SmallVector<ValueRange> replacements(results.begin(), results.end());
    rw.replaceOpWithMultiple(op, replacements);
    return success();
  }
};

} // namespace

void populateInlineAsmPatterns(const TileTypeConverter &types, RewritePatternSet &patterns) {
  patterns.add<ElementwiseInlineAsmPattern>(types, patterns.getContext());
}

} // namespace tegula::lowering
