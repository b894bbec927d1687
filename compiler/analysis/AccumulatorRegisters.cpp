//===- AccumulatorRegisters.cpp - dot accumulators a thread can hold -----===//
#include "compiler/analysis/AccumulatorRegisters.h"

#include "dialects/tile/TileDialect.h"
#include "tegula/error.h"

#include <fmt/format.h>

using namespace mlir;

namespace tegula::analysis {

void checkAccumulatorRegisters(const std::string &kernel, ModuleOp tile, int numWarps) {
  tile.walk([&](tile::DotOp dot) {
    auto type = cast<RankedTensorType>(dot.getResult().getType());
    const int64_t words = type.getNumElements() * type.getElementType().getIntOrFloatBitWidth() / 32;
    auto registersOver = [&](int64_t warps) { return (words + warps * 32 - 1) / (warps * 32); };
    const int64_t limit = 2 * kMaxRegistersPerThread;
    if (registersOver(numWarps) <= limit)
      return;
    std::string where;
    if (auto f = dyn_cast<FileLineColLoc>(dot.getLoc()))
      where = fmt::format(" at {}:{}", f.getFilename().str(), f.getLine());
    std::string elementName;
    llvm::raw_string_ostream(elementName) << type.getElementType();
    // The warps that would bring it under the limit, if a CTA has them.
    int64_t enough = numWarps;
    while (enough <= 32 && registersOver(enough) > limit)
      enough *= 2;
    throw Error(fmt::format("kernel '{}': the dot{} accumulates a {}x{} {} tile: {} registers a thread over {} warps, "
                            "more than twice the {} a thread has (it would live in local memory, and compile for "
                            "minutes); use smaller blocks{}",
                            kernel, where, type.getDimSize(0), type.getDimSize(1), elementName,
                            registersOver(numWarps), numWarps, kMaxRegistersPerThread,
                            enough <= 32 ? fmt::format(" or num_warps={}", enough) : std::string()));
  });
}

} // namespace tegula::analysis
