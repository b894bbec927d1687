//===- DropUnusedTensorMaps.cpp - hidden tensor maps nothing reads --------===//
//
// Pass `drop-unused-tensor-maps`: use-tma gives every TMA descriptor a
// hidden kernel argument (its tensor map) and pipeline-dot-operands gives
// each ring another, with the ring's box and swizzle; the descriptor's own
// map then has no reader left. Each launch would still encode it (a
// cuTensorMapEncodeTiled call on a cache miss) and pass 128 more bytes of
// parameters. This pass erases the hidden arguments that neither an SSA
// use (a ring's copies) nor a TMA descriptor (`tilegpu.tensor_map = N`, with
// accesses) reads, with their entries in `tilegpu.tensor_maps`, and
// renumbers the descriptors that remain.
//
//===----------------------------------------------------------------------===//
#include "compiler/transforms/Passes.h"
#include "runtime/TensorMap.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace tegula {
#define GEN_PASS_DEF_DROPUNUSEDTENSORMAPS
#include "compiler/transforms/Passes.h.inc"
} // namespace tegula

using namespace mlir;
using namespace tegula;

namespace {

constexpr llvm::StringLiteral kMaps = "tilegpu.tensor_maps", kMapArg = "tilegpu.tensor_map";

struct DropUnusedTensorMapsPass
    : tegula::impl::DropUnusedTensorMapsBase<DropUnusedTensorMapsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto text = module->getAttrOfType<StringAttr>(kMaps);
    if (!text)
      return;
    std::vector<runtime::TensorMapSpec> specs = runtime::parseTensorMaps(text.str());
    SmallVector<func::FuncOp> kernels;
    module.walk([&](func::FuncOp fn) {
      if (fn->hasAttr("tile.kernel"))
        kernels.push_back(fn);
    });
    if (kernels.size() != 1)
      return; // the hidden arguments are one kernel's: nothing to match them with
    func::FuncOp fn = kernels.front();
    // Hidden arguments come last, one per spec, in order.
    const unsigned first = fn.getNumArguments() - unsigned(specs.size());

    // Descriptors left without accesses are dead; the rest name their map.
    SmallVector<tile::MakeTensorDescriptorOp> descriptors;
    fn.walk([&](tile::MakeTensorDescriptorOp d) {
      if (!d->hasAttr(kMapArg))
        return;
      if (d->use_empty())
        d.erase();
      else
        descriptors.push_back(d);
    });
    llvm::BitVector read(fn.getNumArguments());
    for (tile::MakeTensorDescriptorOp d : descriptors)
      read.set(unsigned(d->getAttrOfType<IntegerAttr>(kMapArg).getInt()));
    for (unsigned i = first; i < fn.getNumArguments(); ++i)
      if (!fn.getArgument(i).use_empty())
        read.set(i);

    Builder b(module.getContext());
    for (unsigned i = fn.getNumArguments(); i-- > first;) {
      if (read.test(i))
        continue;
      if (failed(fn.eraseArgument(i)))
        return signalPassFailure();
      specs.erase(specs.begin() + (i - first));
      for (tile::MakeTensorDescriptorOp d : descriptors) {
        const int64_t arg = d->getAttrOfType<IntegerAttr>(kMapArg).getInt();
        if (arg > int64_t(i))
          d->setAttr(kMapArg, b.getI32IntegerAttr(int32_t(arg - 1)));
      }
    }
    if (specs.empty())
      module->removeAttr(kMaps);
    else
      module->setAttr(kMaps, b.getStringAttr(runtime::serializeTensorMaps(specs)));
  }
};

} // namespace
