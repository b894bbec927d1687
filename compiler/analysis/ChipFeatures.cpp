//===- ChipFeatures.cpp - ops a chip lacks, refused at the user's line ---===//
#include "compiler/analysis/ChipFeatures.h"

#include "dialects/tile/TileDialect.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <cstdio>

using namespace mlir;

namespace tegula::analysis {
namespace {

/// sm_XY's XY (90 for "sm_90a"); 0 when `chip` is not of that form.
int smVersion(const std::string &chip) {
  int version = 0;
  if (std::sscanf(chip.c_str(), "sm_%d", &version) != 1)
    return 0;
  return version;
}

} // namespace

void checkChipFeatures(const std::string &kernel, ModuleOp tile, const std::string &chip) {
  const int sm = smVersion(chip);
  if (sm == 0 || sm >= 90)
    return;
  tile.walk([&](tile::AtomicRMWOp op) {
    // atom.add.noftz.bf16 is sm_90's (PTX ISA 7.8); f16's is sm_70's.
    if (op.getKind() != tile::AtomicRMWKind::Add || !tile::getElementTypeOrSelf(op.getValue().getType()).isBF16())
      return;
    std::string where;
    if (auto f = dyn_cast<FileLineColLoc>(op.getLoc()))
      where = fmt::format("{}:{}: error: ", f.getFilename().str(), f.getLine());
    throw Error(fmt::format("{}kernel '{}': tl::atomic_add on bf16 memory needs sm_90 (atom.add.bf16), not {}; "
                            "on earlier chips add into f16 or f32 memory",
                            where, kernel, chip));
  });
}

} // namespace tegula::analysis
