//===- TileBase.td - tile dialect, types and attributes ----*- tablegen -*-===//
//
// The `tile` dialect is the hardware-neutral IR produced by tracing a Tegula
// DSL kernel: one single-threaded program over tiles (ranked tensors) of
// values and of pointers. It has no notion of threads or layouts.
//
//===----------------------------------------------------------------------===//
#ifndef TEGULA_TILE_BASE
#define TEGULA_TILE_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinTypes.td"
include "mlir/IR/CommonTypeConstraints.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::tegula::tile";
  let summary = "Single-threaded tile programs over tensors of values and pointers";
  let description = [{
    Tiles are ranked tensors with static, power-of-two extents. Elementwise
    math uses the `arith` and `math` dialects directly on those tensors; this
    dialect adds what they lack: program ids, ranges, shape manipulation,
    pointers, masked memory access, dot, reductions, atomics and debugging.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  let useDefaultTypePrinterParser = 1;
  let hasConstantMaterializer = 1;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class Tile_Type<string name, string typeMnemonic> : TypeDef<Tile_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def Tile_PtrType : Tile_Type<"Ptr", "ptr"> {
  let summary = "Pointer to an element in global memory";
  let description = [{
    `!tile.ptr<f32>` points at one `f32` in global memory. Tiles of pointers
    are ranked tensors of this type, e.g. `tensor<128x!tile.ptr<f32>>`.
  }];
  let parameters = (ins "::mlir::Type":$pointeeType);
  let assemblyFormat = "`<` $pointeeType `>`";
  let builders = [
    TypeBuilderWithInferredContext<(ins "::mlir::Type":$pointeeType), [{
      return $_get(pointeeType.getContext(), pointeeType);
    }]>
  ];
  let genVerifyDecl = 1;
}

def Tile_TensorDescType : Tile_Type<"TensorDesc", "tensordesc"> {
  let summary = "A global tensor read and written one block at a time (TMA)";
  let description = [{
    `!tile.tensordesc<tensor<64x64xbf16>>` describes a tensor in global memory
    (base pointer, shape and strides, made by `tile.make_tensor_descriptor`)
    that `tile.descriptor_load` and `tile.descriptor_store` access one
    64x64 block at a time; elements outside the shape read as zero and are
    not written. On sm_90a it becomes a TMA tensor map.
  }];
  let parameters = (ins "::mlir::RankedTensorType":$blockType);
  let assemblyFormat = "`<` $blockType `>`";
  let builders = [
    TypeBuilderWithInferredContext<(ins "::mlir::RankedTensorType":$blockType), [{
      return $_get(blockType.getContext(), blockType);
    }]>
  ];
  let genVerifyDecl = 1;
}

// Element types a tile may hold and a pointer may point at.
def Tile_Float : AnyTypeOf<[F16, BF16, F32, F64, F8E4M3FN, F8E5M2], "floating-point">;
def Tile_Int : AnyTypeOf<[I1, I8, I16, I32, I64], "signless integer">;
def Tile_OffsetInt : AnyTypeOf<[I8, I16, I32, I64], "i8/i16/i32/i64">;
def Tile_Elem : AnyTypeOf<[Tile_Float, Tile_Int, Tile_PtrType]>;

// A tile: a ranked tensor with static power-of-two extents.
class Tile_TensorOf<list<Type> allowed, string what> : Type<
    And<[RankedTensorOf<allowed>.predicate,
         CPred<"::tegula::tile::hasTileShape($_self)">]>,
    "tile of " # what # " (static power-of-two extents)",
    "::mlir::RankedTensorType">;

def Tile_Tensor : Tile_TensorOf<[Tile_Elem], "values or pointers">;
def Tile_PtrTensor : Tile_TensorOf<[Tile_PtrType], "pointers">;
def Tile_IntTensor : Tile_TensorOf<[Tile_Int], "integers">;
def Tile_OffsetTensor : Tile_TensorOf<[Tile_OffsetInt], "offsets">;
def Tile_BoolTensor : Tile_TensorOf<[I1], "i1">;
def Tile_I32Tensor : Tile_TensorOf<[I32], "i32">;

// "Like" = a scalar or a tile of it.
def Tile_PtrLike : AnyTypeOf<[Tile_PtrType, Tile_PtrTensor], "pointer or tile of pointers">;
def Tile_IntLike : AnyTypeOf<[Tile_Int, Tile_IntTensor], "integer or tile of integers">;
def Tile_OffsetLike : AnyTypeOf<[Tile_OffsetInt, Tile_OffsetTensor],
                                "i8/i16/i32/i64 offset or tile of offsets">;
def Tile_BoolLike : AnyTypeOf<[I1, Tile_BoolTensor], "i1 or tile of i1">;
def Tile_Any : AnyTypeOf<[Tile_Elem, Tile_Tensor]>;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Tile_ProgramAxis : I32EnumAttr<"ProgramAxis", "grid axis", [
    I32EnumAttrCase<"X", 0, "x">, I32EnumAttrCase<"Y", 1, "y">,
    I32EnumAttrCase<"Z", 2, "z">]> {
  let cppNamespace = "::tegula::tile";
}

def Tile_DotPrecision : I32EnumAttr<"DotPrecision", "fp32 dot precision", [
    I32EnumAttrCase<"IEEE", 0, "ieee">, I32EnumAttrCase<"TF32", 1, "tf32">,
    I32EnumAttrCase<"TF32x3", 2, "tf32x3">]> {
  let cppNamespace = "::tegula::tile";
}

def Tile_AtomicRMWKind : I32EnumAttr<"AtomicRMWKind", "atomic read-modify-write", [
    I32EnumAttrCase<"Add", 0, "add">, I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">, I32EnumAttrCase<"Xchg", 3, "xchg">,
    I32EnumAttrCase<"And", 4, "and">, I32EnumAttrCase<"Or", 5, "or">,
    I32EnumAttrCase<"Xor", 6, "xor">]> {
  let cppNamespace = "::tegula::tile";
}

def Tile_MemoryOrder : I32EnumAttr<"MemoryOrder", "memory ordering of an atomic", [
    I32EnumAttrCase<"Relaxed", 0, "relaxed">, I32EnumAttrCase<"Acquire", 1, "acquire">,
    I32EnumAttrCase<"Release", 2, "release">, I32EnumAttrCase<"AcqRel", 3, "acq_rel">]> {
  let cppNamespace = "::tegula::tile";
}

// PTX's cache operators (Triton's cache_modifier): loads take ca, cg, cs
// and cv, stores wb, cg, cs and wt.
def Tile_CacheModifier : I32EnumAttr<"CacheModifier", "cache operator of a load or store", [
    I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"CA", 1, "ca">,
    I32EnumAttrCase<"CG", 2, "cg">, I32EnumAttrCase<"CS", 3, "cs">,
    I32EnumAttrCase<"CV", 4, "cv">, I32EnumAttrCase<"WB", 5, "wb">,
    I32EnumAttrCase<"WT", 6, "wt">]> {
  let cppNamespace = "::tegula::tile";
}

// Triton's eviction_policy: the priority of the accessed lines in L1 and L2.
def Tile_EvictionPolicy : I32EnumAttr<"EvictionPolicy", "cache eviction priority", [
    I32EnumAttrCase<"Normal", 0, "normal">, I32EnumAttrCase<"EvictFirst", 1, "evict_first">,
    I32EnumAttrCase<"EvictLast", 2, "evict_last">]> {
  let cppNamespace = "::tegula::tile";
}

#endif // TEGULA_TILE_BASE
