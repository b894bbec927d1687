//===- InlineAsm.cpp - tl::inline_asm_elementwise ---------------------------===//
//
// PTX of the kernel's own on every element: the arguments broadcast to one
// shape, one tile.elementwise_inline_asm with a result per type. The checks
// the op's verifier makes are made here first, at the user's line.
//
//===----------------------------------------------------------------------===//
#include "compiler/dsl/TraceState.h"

#include "dialects/tile/TileDialect.h"

#include "llvm/ADT/StringExtras.h"

#include <fmt/format.h>

using namespace mlir;

namespace tegula::tl {

namespace {

/// Outputs ("=...") and inputs named by an LLVM constraint string.
std::pair<size_t, size_t> countConstraints(const std::string &constraints) {
  size_t outputs = 0, inputs = 0;
  for (StringRef c : llvm::split(StringRef(constraints), ',')) {
    c = c.trim();
    if (c.empty() || c.starts_with("~"))
      continue;
    ++(c.starts_with("=") ? outputs : inputs);
  }
  return {outputs, inputs};
}

} // namespace

std::vector<tensor> inline_asm_elementwise(const std::string &asm_string, const std::string &constraints,
                                           const std::vector<tensor> &args, const std::vector<DType> &dtypes,
                                           bool is_pure, int pack, Loc loc) {
  dsl::TraceState &ts = dsl::current(loc);
  const char *fn = "tl::inline_asm_elementwise";
  if (args.empty())
    dsl::fail(loc, fmt::format("{} needs at least one argument (the results take the arguments' shape)", fn));
  if (dtypes.empty())
    dsl::fail(loc, fmt::format("{} needs at least one result type", fn));
  auto [outputs, inputs] = countConstraints(constraints);
  if (outputs != dtypes.size() || inputs != args.size())
    dsl::fail(loc, fmt::format("{}: the constraints \"{}\" name {} output(s) and {} input(s), but there are {} result "
                               "type(s) and {} argument(s)",
                               fn, constraints, outputs, inputs, dtypes.size(), args.size()));
  if (pack < 1 || (pack & (pack - 1)) != 0)
    dsl::fail(loc, fmt::format("{}: pack is a power of two (elements per register), got {}", fn, pack));

  SmallVector<Value> values;
  std::vector<int64_t> shape;
  for (const tensor &a : args) {
    Value v = dsl::unwrap(a, loc);
    dsl::requireNumber(v, loc, fmt::format("an argument of {}", fn));
    shape = dsl::commonShape(shape, dsl::shapeOf(v), loc, fn);
    values.push_back(v);
  }
  if (shape.empty())
    dsl::fail(loc, fmt::format("{} runs on tiles, and every argument is a scalar: make one a tile (tl::full)", fn));
  dsl::checkTileShape(shape, loc, fn);
  // A register of 16, 32 or 64 bits per operand: pack x the element's bits.
  auto checkRegister = [&](Type elem, const std::string &what) {
    if (elem.isInteger(1))
      dsl::fail(loc, fmt::format("{}: {} is a bool tile; pass it as i8 or i32 (.to(tl::i32))", fn, what));
    const unsigned bits = elem.getIntOrFloatBitWidth() * unsigned(pack);
    if (bits != 16 && bits != 32 && bits != 64)
      dsl::fail(loc, fmt::format("{}: {} ({}) at pack {} fills {} bits, but a register holds 16, 32 or 64: "
                                 "pack {} fills 32",
                                 fn, what, dsl::describeType(elem), pack, bits, 32 / elem.getIntOrFloatBitWidth()));
  };
  for (auto [k, v] : llvm::enumerate(values)) {
    checkRegister(dsl::elementOf(v), fmt::format("argument {}", k));
    v = dsl::broadcastTo(ts, v, shape, loc, fn);
  }
  SmallVector<Type> resultTypes;
  for (auto [k, dt] : llvm::enumerate(dtypes)) {
    Type elem = dsl::toMlirType(ts.ctx, dt);
    checkRegister(elem, fmt::format("result {}", k));
    resultTypes.push_back(RankedTensorType::get(shape, elem));
  }
  auto op = tile::ElementwiseInlineAsmOp::create(ts.builder, dsl::toLoc(ts.ctx, loc), resultTypes,
                                                 ts.builder.getStringAttr(asm_string),
                                                 ts.builder.getStringAttr(constraints),
                                                 ts.builder.getBoolAttr(is_pure),
                                                 ts.builder.getI32IntegerAttr(pack), values);
  std::vector<tensor> results;
  for (Value r : op.getResults())
    results.push_back(dsl::wrap(r));
  return results;
}

tensor inline_asm_elementwise(const std::string &asm_string, const std::string &constraints,
                              const std::vector<tensor> &args, DType dtype, bool is_pure, int pack, Loc loc) {
  return inline_asm_elementwise(asm_string, constraints, args, std::vector<DType>{dtype}, is_pure, pack, loc)[0];
}

} // namespace tegula::tl
