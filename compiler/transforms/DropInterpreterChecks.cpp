//===- DropInterpreterChecks.cpp - assertions only the interpreter makes --===//
//
// Pass `drop-interpreter-checks`: `tile.assert {interpreter_only}` is a
// rule compiled code trusts (a block pointer's unchecked dimensions stay
// inside the tensor); the interpreter checks it, the GPU does not pay for
// it. Erased before anything else in the GPU pipeline; the condition's
// arithmetic, dead after, goes at the next canonicalisation.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"
#include "dialects/tile/TileDialect.h"

namespace tegula {
#define GEN_PASS_DEF_DROPINTERPRETERCHECKS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

struct DropInterpreterChecksPass : tegula::impl::DropInterpreterChecksBase<DropInterpreterChecksPass> {
  void runOnOperation() override {
    getOperation().walk([](tile::AssertOp op) {
      if (op.getInterpreterOnly())
        op.erase();
    });
  }
};

} // namespace
