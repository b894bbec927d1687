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
  let useDefaultTypePrinterParser = 1;
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

def TileGPU_MmaEncodingAttr : TileGPU_Attr<"MmaEncoding", "mma"> {
  let summary = "The accumulator of mma.sync (m16n8) or wgmma (m64nN): a 2-D tile spread over warps as C fragments";
  let description = [{
    Each warp owns 16 x 8 instruction tiles of the [M, N] tile; within one, lane
    l holds rows l/4 and l/4 + 8, columns 2*(l%4) and 2*(l%4) + 1. Warps are
    row-major over `warpsPerCTA` ([warps along M, warps along N]); a larger
    tile repeats in more registers (along N, then M). The linear layout is
    `mmaAccumulatorLayout` (compiler/layout/MmaLayouts.h).
    `version` says which instruction computes it: 2, mma.sync (the default,
    not printed); 3, Hopper's wgmma.mma_async, where warps 4g..4g+3 (all along
    M) form warpgroup g and one m64nN instruction covers 64 rows x N columns
    of the same registers.
    `#tilegpu.mma<{warpsPerCTA = [2, 2]}>`, `#tilegpu.mma<{warpsPerCTA = [4, 1], version = 3}>`
  }];
  let parameters = (ins ArrayRefParameter<"int32_t">:$warpsPerCTA,
                        DefaultValuedParameter<"unsigned", "2">:$version);
  let assemblyFormat = "`<` `{` `warpsPerCTA` `=` `[` $warpsPerCTA `]` (`,` `version` `=` $version^)? `}` `>`";
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<int32_t>":$warpsPerCTA), [{
      return $_get($_ctxt, warpsPerCTA, 2u);
    }]>
  ];
  let extraClassDeclaration = [{
    int32_t getNumWarps() const;
    /// wgmma (sm_90a) rather than mma.sync.
    bool isWgmma() const { return getVersion() == 3; }
  }];
}

def TileGPU_DotOperandEncodingAttr : TileGPU_Attr<"DotOperandEncoding", "dot_operand"> {
  let summary = "Operand A (opIdx 0, [M, K]) or B (opIdx 1, [K, N]) of the mma whose accumulator is `parent`";
  let description = [{
    The registers mma.sync reads, for elements of `elementBits` (16: f16/bf16,
    m16n8k16; 32: tf32, m16n8k8; 8: i8, m16n8k32), packed 32 / elementBits to
    a register. A is the same in every warp along N, B in every warp along M.
    The linear layout is `mmaOperandLayout`.
    `#tilegpu.dot_operand<{opIdx = 0, parent = #mma, elementBits = 16}>`
  }];
  let parameters = (ins "unsigned":$opIdx, "::mlir::Attribute":$parent, "unsigned":$elementBits);
  let assemblyFormat = [{
    `<` `{` `opIdx` `=` $opIdx `,` `parent` `=` $parent `,` `elementBits` `=` $elementBits `}` `>`
  }];
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def TileGPU_SharedTilesType : TypeDef<TileGPU_Dialect, "SharedTiles"> {
  let mnemonic = "shared";
  let summary = "`stages` tiles of one shape in shared memory, one after the other";
  let description = [{
    A ring of shared-memory tiles filled asynchronously (tilegpu.async_load)
    and read by tilegpu.dot_shared. Each tile is stored row by row along
    `contiguousDim`, its 16-byte chunks XORed with `swizzle` (bit i of the
    row index flips chunk bits swizzle[i]; layout::SharedTile). `blockElements`
    (0: none): rows wider than that are stored as consecutive blocks of that
    many elements per row - the swizzle atoms of wgmma's operands.
    `!tilegpu.shared<3 x [128, 32] x bf16, contiguousDim = 1, swizzle = [0, 2, 1]>`
    `!tilegpu.shared<3 x [32, 128] x bf16, contiguousDim = 1, swizzle = [1, 2, 4], blockElements = 64>`
  }];
  let parameters = (ins "unsigned":$stages, ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType, "unsigned":$contiguousDim,
                        OptionalArrayRefParameter<"int32_t">:$swizzle,
                        DefaultValuedParameter<"int32_t", "0">:$blockElements);
  let assemblyFormat = [{
    `<` $stages `x` `[` $shape `]` `x` $elementType `,` `contiguousDim` `=` $contiguousDim
    (`,` `swizzle` `=` `[` $swizzle^ `]`)? (`,` `blockElements` `=` $blockElements^)? `>`
  }];
  let builders = [
    TypeBuilder<(ins "unsigned":$stages, "::llvm::ArrayRef<int64_t>":$shape,
                     "::mlir::Type":$elementType, "unsigned":$contiguousDim,
                     "::llvm::ArrayRef<int32_t>":$swizzle), [{
      return $_get($_ctxt, stages, shape, elementType, contiguousDim, swizzle, 0);
    }]>
  ];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// One stage's placement (shape, order, swizzle).
    ::tegula::layout::SharedTile tile() const;
    int64_t tileBytes() const;
  }];
}

#endif // TEGULA_TILEGPU_BASE
