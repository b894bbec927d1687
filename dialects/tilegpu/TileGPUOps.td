//===- TileGPUOps.td - tilegpu operations ------------------*- tablegen -*-===//
#ifndef TEGULA_TILEGPU_OPS
#define TEGULA_TILEGPU_OPS

include "TileGPUBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinTypes.td"

class TileGPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<TileGPU_Dialect, mnemonic, traits>;

def TileGPU_ConvertLayoutOp : TileGPU_Op<"convert_layout",
    [Pure, SameOperandsAndResultShape, SameOperandsAndResultElementType]> {
  let summary = "Move a tile's elements to the threads of another layout";
  let description = [{
    Lowered to register moves, warp shuffles or a round trip through shared
    memory, whichever the two layouts need (see classifyConversion).
  }];
  let arguments = (ins AnyRankedTensor:$src);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

#endif // TEGULA_TILEGPU_OPS
