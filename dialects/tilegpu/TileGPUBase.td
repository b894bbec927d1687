//===- TileGPUBase.td - tilegpu dialect and layout attrs ---*- tablegen -*-===//
//
// `tilegpu` is the layout-aware level between `tile` and per-thread LLVM: the
// same tile ops, but every tensor carries a layout encoding that says which
// register, lane and warp holds each element. Every encoding lowers to one
// representation, a linear layout over GF(2) (compiler/layout).
//
//===----------------------------------------------------------------------===//
#ifndef TEGULA_TILEGPU_BASE
#define TEGULA_TILEGPU_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def TileGPU_Dialect : Dialect {
  let name = "tilegpu";
  let cppNamespace = "::tegula::tilegpu";
  let summary = "Layout-aware tiles: which thread holds which element";
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::tegula::tile::TileDialect"];
}

class TileGPU_Attr<string name, string attrMnemonic> : AttrDef<TileGPU_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def TileGPU_BlockedEncodingAttr : TileGPU_Attr<"BlockedEncoding", "blocked"> {
  let summary = "Each thread holds sizePerThread contiguous elements; threads, then warps, tile the rest";
  let description = [{
    `order[0]` is the fastest-varying dimension. Tiles smaller than one pass
    of the CTA hold duplicates; larger tiles repeat the pattern in more
    registers. Example: 128-bit f32 accesses along the rows of a 64x64 tile
    with 4 warps:
    `#tilegpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>`
  }];
  let parameters = (ins ArrayRefParameter<"int32_t">:$sizePerThread,
                        ArrayRefParameter<"int32_t">:$threadsPerWarp,
                        ArrayRefParameter<"int32_t">:$warpsPerCTA,
                        ArrayRefParameter<"int32_t">:$order);
  let assemblyFormat = [{
    `<` `{` `sizePerThread` `=` `[` $sizePerThread `]` `,`
            `threadsPerWarp` `=` `[` $threadsPerWarp `]` `,`
            `warpsPerCTA` `=` `[` $warpsPerCTA `]` `,`
            `order` `=` `[` $order `]` `}` `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getRank() const { return getOrder().size(); }
    int32_t getNumWarps() const;
  }];
}

def TileGPU_SliceEncodingAttr : TileGPU_Attr<"SliceEncoding", "slice"> {
  let summary = "The parent layout with dimension `dim` removed (a reduction's result)";
  let description = [{
    Threads that differed only along `dim` now hold the same element. Used
    for the result of reducing along `dim` and for the operand of
    expand_dims at `dim`.
  }];
  let parameters = (ins "unsigned":$dim, "::mlir::Attribute":$parent);
  let assemblyFormat = "`<` `{` `dim` `=` $dim `,` `parent` `=` $parent `}` `>`";
  let genVerifyDecl = 1;
}

#endif // TEGULA_TILEGPU_BASE
