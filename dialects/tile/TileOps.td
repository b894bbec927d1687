//===- TileOps.td - tile dialect operations ----------------*- tablegen -*-===//
#ifndef TEGULA_TILE_OPS
#define TEGULA_TILE_OPS

include "TileBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

// Global memory, the resource loads, stores and atomics touch.
def Tile_GlobalMemory : Resource<"::tegula::tile::GlobalMemory">;

//===----------------------------------------------------------------------===//
// Grid
//===----------------------------------------------------------------------===//

def Tile_ProgramIdOp : Tile_Op<"program_id", [Pure]> {
  let summary = "Index of the running program along a grid axis";
  let arguments = (ins Tile_ProgramAxis:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict";
}

def Tile_NumProgramsOp : Tile_Op<"num_programs", [Pure]> {
  let summary = "Number of programs launched along a grid axis";
  let arguments = (ins Tile_ProgramAxis:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict";
}

def Tile_ClusterSizeOp : Tile_Op<"cluster_size", [Pure]> {
  let summary = "Programs per thread-block cluster: the launch's cluster_size (1 without clusters)";
  let description = [{
    Programs C*c .. C*c + C-1 along x form cluster c. The interpreter takes
    C from the launch; the GPU pipeline from its cluster-size option
    (pipeline-dot-operands records it as tilegpu.launch_cluster_size), so a
    kernel's tiles follow the clusters it runs in on every backend.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Creating and reshaping tiles
//===----------------------------------------------------------------------===//

def Tile_MakeRangeOp : Tile_Op<"make_range", [Pure]> {
  let summary = "1-D tile [start, end) of i32; end - start is a power of two";
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs Tile_I32Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_SplatOp : Tile_Op<"splat", [Pure,
    TypesMatchWith<"result element type matches the scalar", "result", "src",
                   "::mlir::cast<::mlir::RankedTensorType>($_self).getElementType()">]> {
  let summary = "Tile with every element equal to a scalar";
  let arguments = (ins Tile_Elem:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Tile_BroadcastOp : Tile_Op<"broadcast", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Repeat size-1 dimensions of a tile to a larger shape";
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_ExpandDimsOp : Tile_Op<"expand_dims", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Insert a size-1 dimension at `axis`";
  let arguments = (ins Tile_Tensor:$src, I32Attr:$axis);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_ReshapeOp : Tile_Op<"reshape", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Reinterpret a tile with a new shape of the same element count (row-major)";
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_TransOp : Tile_Op<"trans", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Permute the dimensions of a tile";
  let description = [{
    Result dimension `i` is source dimension `order[i]`.
  }];
  let arguments = (ins Tile_Tensor:$src, DenseI32ArrayAttr:$order);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_GatherOp : Tile_Op<"gather", [Pure]> {
  let summary = "Pick elements of a tile along one dimension by index";
  let description = [{
    result[i_0, ..., i_axis, ..., i_n] = src[i_0, ..., index[i_0, ..., i_axis, ..., i_n], ..., i_n]:
    the result has the shape of `index` (i32), which matches src's in every
    dimension but `axis` (Triton's tl.gather). An index outside
    [0, src.shape[axis]) is an error in the interpreter; compiled code
    clamps it into that range (no access outside the staged tile).
  }];
  let arguments = (ins Tile_Tensor:$src, Tile_Tensor:$index, I32Attr:$axis);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src `[` $index `]` attr-dict `:` type($src) `,` type($index) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_HistogramOp : Tile_Op<"histogram", [Pure]> {
  let summary = "Count the values of a 1-D integer tile into bins of width 1 from 0";
  let description = [{
    result[b] = the number of elements of `src` equal to b, for b in
    [0, bins) (Triton's tl.histogram); values outside that range are not
    counted. On the GPU the counts are made by shared-memory atomics.
  }];
  let arguments = (ins Tile_Tensor:$src);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointers and memory
//===----------------------------------------------------------------------===//

def Tile_AddPtrOp : Tile_Op<"addptr", [Pure, AllTypesMatch<["ptr", "result"]>]> {
  let summary = "Advance pointers by a number of elements (not bytes)";
  let arguments = (ins Tile_PtrLike:$ptr, Tile_OffsetLike:$offset);
  let results = (outs Tile_PtrLike:$result);
  let assemblyFormat = "$ptr `,` $offset attr-dict `:` type($ptr) `,` type($offset)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_LoadOp : Tile_Op<"load", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    TypesMatchWith<"result is the pointee of ptr", "ptr", "result",
                   "::tegula::tile::getPointeeLikeType($_self)">,
    OptionalTypesMatchWith<"mask is a tile of i1 shaped like ptr", "ptr", "mask",
                   "::tegula::tile::getI1LikeType($_self)">,
    OptionalTypesMatchWith<"other is the pointee of ptr", "ptr", "other",
                   "::tegula::tile::getPointeeLikeType($_self)">]> {
  let summary = "Masked load; masked-off elements take `other`, or zero when absent";
  let description = [{
    `cache` (a PTX cache operator) and `evict` (an eviction priority) are
    hints for the GPU's caches, one or the other; a `volatile` load is made
    where it stands, every time (it counts as a write: never merged with
    another, hoisted, dropped or pipelined).
  }];
  let arguments = (ins Tile_PtrLike:$ptr, Optional<Tile_BoolLike>:$mask,
                       Optional<Tile_Any>:$other,
                       DefaultValuedAttr<Tile_CacheModifier, "::tegula::tile::CacheModifier::None">:$cache,
                       DefaultValuedAttr<Tile_EvictionPolicy, "::tegula::tile::EvictionPolicy::Normal">:$evict,
                       UnitAttr:$isVolatile);
  let results = (outs Tile_Any:$result);
  let assemblyFormat = [{
    $ptr (`,` $mask^)? (`,` $other^)? (`cache` `=` $cache^)? (`evict` `=` $evict^)? (`volatile` $isVolatile^)?
    attr-dict `:` type($ptr)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tile_StoreOp : Tile_Op<"store", [
    MemoryEffects<[MemWrite<Tile_GlobalMemory>]>,
    TypesMatchWith<"value is the pointee of ptr", "ptr", "value",
                   "::tegula::tile::getPointeeLikeType($_self)">,
    OptionalTypesMatchWith<"mask is a tile of i1 shaped like ptr", "ptr", "mask",
                   "::tegula::tile::getI1LikeType($_self)">]> {
  let summary = "Masked store; masked-off elements are not written";
  let description = [{
    `cache`, `evict` and `volatile` as on tile.load (stores take the cache
    operators wb, cg, cs and wt).
  }];
  let arguments = (ins Tile_PtrLike:$ptr, Tile_Any:$value, Optional<Tile_BoolLike>:$mask,
                       DefaultValuedAttr<Tile_CacheModifier, "::tegula::tile::CacheModifier::None">:$cache,
                       DefaultValuedAttr<Tile_EvictionPolicy, "::tegula::tile::EvictionPolicy::Normal">:$evict,
                       UnitAttr:$isVolatile);
  let assemblyFormat = [{
    $ptr `,` $value (`,` $mask^)? (`cache` `=` $cache^)? (`evict` `=` $evict^)? (`volatile` $isVolatile^)?
    attr-dict `:` type($ptr)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tile_AtomicRMWOp : Tile_Op<"atomic_rmw", [
    MemoryEffects<[MemRead<Tile_GlobalMemory>, MemWrite<Tile_GlobalMemory>]>,
    TypesMatchWith<"value is the pointee of ptr", "ptr", "value",
                   "::tegula::tile::getPointeeLikeType($_self)">,
    TypesMatchWith<"result is the pointee of ptr", "ptr", "result",
                   "::tegula::tile::getPointeeLikeType($_self)">,
    OptionalTypesMatchWith<"mask is a tile of i1 shaped like ptr", "ptr", "mask",
                   "::tegula::tile::getI1LikeType($_self)">]> {
  let summary = "Atomic read-modify-write per element; returns the old values";
  let description = [{
    `sem` orders the memory accesses around the atomic at GPU scope (PTX's
    `.sem`): acq_rel by default; relaxed for accumulations, where only the
    update matters.
  }];
  let arguments = (ins Tile_AtomicRMWKind:$kind, Tile_PtrLike:$ptr,
                       Tile_Any:$value, Optional<Tile_BoolLike>:$mask,
                       DefaultValuedAttr<Tile_MemoryOrder, "::tegula::tile::MemoryOrder::AcqRel">:$sem);
  let results = (outs Tile_Any:$result);
  let assemblyFormat = [{
    $kind `,` $ptr `,` $value (`,` $mask^)? (`sem` `=` $sem^)? attr-dict `:` type($ptr)
  }];
  let hasVerifier = 1;
}

def Tile_AtomicCASOp : Tile_Op<"atomic_cas", [
    MemoryEffects<[MemRead<Tile_GlobalMemory>, MemWrite<Tile_GlobalMemory>]>,
    TypesMatchWith<"cmp is the pointee of ptr", "ptr", "cmp",
                   "::tegula::tile::getPointeeLikeType($_self)">,
    TypesMatchWith<"value is the pointee of ptr", "ptr", "value",
                   "::tegula::tile::getPointeeLikeType($_self)">,
    TypesMatchWith<"result is the pointee of ptr", "ptr", "result",
                   "::tegula::tile::getPointeeLikeType($_self)">]> {
  let summary = "Atomic compare-and-swap per element; returns the old values";
  let arguments = (ins Tile_PtrLike:$ptr, Tile_Any:$cmp, Tile_Any:$value,
                       DefaultValuedAttr<Tile_MemoryOrder, "::tegula::tile::MemoryOrder::AcqRel">:$sem);
  let results = (outs Tile_Any:$result);
  let assemblyFormat = "$ptr `,` $cmp `,` $value (`sem` `=` $sem^)? attr-dict `:` type($ptr)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor descriptors (block access to a strided global tensor; TMA on sm_90a)
//===----------------------------------------------------------------------===//

def Tile_MakeTensorDescriptorOp : Tile_Op<"make_tensor_descriptor", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "Describe a strided global tensor accessed one block at a time";
  let description = [{
    `shape` and `strides` (in elements) have one entry per dimension of the
    block type; the innermost stride is 1. The base must be 16-byte aligned
    and the other strides multiples of 16 bytes (TMA's rules, checked on
    every backend so a kernel behaves the same everywhere).
  }];
  let arguments = (ins Tile_PtrType:$base, Variadic<I64>:$shape, Variadic<I64>:$strides);
  let results = (outs Tile_TensorDescType:$result);
  let assemblyFormat = [{
    $base `,` `[` $shape `]` `,` `[` $strides `]` attr-dict `:` type($base) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_DescriptorLoadOp : Tile_Op<"descriptor_load", [
    MemoryEffects<[MemRead<Tile_GlobalMemory>]>]> {
  let summary = "Load the block at `offsets`; elements outside the tensor read as zero";
  let description = [{
    `multicast`: the programs of a thread-block cluster (consecutive program
    ids along x, LaunchOptions::cluster_size of them) all load the same
    blocks through this op, in the same order - so a TMA ring may fetch each
    block once for the whole cluster (pipeline-dot-operands' cluster-size).
    The result is the same; the interpreter checks the promise.
  }];
  let arguments = (ins Tile_TensorDescType:$desc, Variadic<I32>:$offsets, UnitAttr:$multicast);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "$desc `[` $offsets `]` attr-dict `:` type($desc) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_DescriptorStoreOp : Tile_Op<"descriptor_store", [
    MemoryEffects<[MemWrite<Tile_GlobalMemory>]>]> {
  let summary = "Store a block at `offsets`; elements outside the tensor are not written";
  let arguments = (ins Tile_TensorDescType:$desc, Variadic<I32>:$offsets, Tile_Tensor:$value);
  let assemblyFormat = [{
    $desc `[` $offsets `]` `,` $value attr-dict `:` type($desc) `,` type($value)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

def Tile_DotOp : Tile_Op<"dot", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "Matrix product d = a * b + acc";
  let description = [{
    `a` is MxK, `b` is KxN, `acc` and the result MxN. f16/bf16 operands
    accumulate in f32. For f32 operands the precision is explicit: `ieee`
    (full fp32 FMA), `tf32` (tensor-core tf32 inputs) or `tf32x3`.
  }];
  let arguments = (ins Tile_Tensor:$a, Tile_Tensor:$b, Tile_Tensor:$acc,
                       Tile_DotPrecision:$precision);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc `,` $precision attr-dict `:` type($a) `*` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_ReduceOp : Tile_Op<"reduce", [Pure, SingleBlock]> {
  let summary = "Reduce tiles along one axis with a combiner region";
  let description = [{
    Reduces N tiles of the same shape along `axis` together (N = 2 carries an
    index for argmax). The combiner takes 2N scalars (N accumulated values,
    then N new values) and yields N scalars with `tile.reduce.return`. A
    result is a scalar when the source is 1-D.
  }];
  let arguments = (ins Variadic<Tile_Tensor>:$srcs, I32Attr:$axis);
  let results = (outs Variadic<Tile_Any>:$results);
  let regions = (region SizedRegion<1>:$combiner);
  let assemblyFormat = [{
    `(` $srcs `)` attr-dict `:` functional-type($srcs, $results) $combiner
  }];
  let hasRegionVerifier = 1;
}

def Tile_ScanOp : Tile_Op<"scan", [Pure, SingleBlock]> {
  let summary = "Inclusive scan of tiles along one axis with a combiner region";
  let description = [{
    Element i of each result combines elements 0..i of the operands along
    `axis` (with `reverse`, elements i..n-1), in order: the combiner takes 2N
    scalars (N values so far - the earlier elements - then N new values) and
    yields N with `tile.reduce.return`. It must be associative; it need not
    be commutative. Results have the operands' types (tl::cumsum,
    tl::cumprod, tl::associative_scan).
  }];
  let arguments = (ins Variadic<Tile_Tensor>:$srcs, I32Attr:$axis, UnitAttr:$reverse);
  let results = (outs Variadic<Tile_Tensor>:$results);
  let regions = (region SizedRegion<1>:$combiner);
  let assemblyFormat = [{
    `(` $srcs `)` attr-dict `:` functional-type($srcs, $results) $combiner
  }];
  let hasRegionVerifier = 1;
}

def Tile_ReduceReturnOp : Tile_Op<"reduce.return",
    [Pure, ParentOneOf<["ReduceOp", "ScanOp"]>, Terminator, ReturnLike]> {
  let summary = "Yield the combined values of a reduction or scan step";
  let arguments = (ins Variadic<Tile_Elem>:$results);
  let assemblyFormat = "$results attr-dict `:` type($results)";
}

//===----------------------------------------------------------------------===//
// Promises the compiler relies on
//===----------------------------------------------------------------------===//

def Tile_AssumeOp : Tile_Op<"assume", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "The kernel's promise about an integer's runs and divisors (tl::multiple_of, tl::max_contiguous)";
  let description = [{
    The value itself, with what the kernel promises about it: along each
    dimension d, the elements come in aligned groups of `contiguity[d]`
    consecutive values (+1 each), and the first element of each group is a
    multiple of `divisibility[d]` (a scalar has one divisibility and no
    contiguity). The axis analysis takes the promise where it knows less, so
    loads and stores through offsets built from it may be vectorised. The
    interpreter checks it; compiled code relies on it.
  }];
  let arguments = (ins Tile_IntLike:$src, DenseI64ArrayAttr:$divisibility, DenseI64ArrayAttr:$contiguity);
  let results = (outs Tile_IntLike:$result);
  let assemblyFormat = "$src `divisibility` `=` $divisibility `contiguity` `=` $contiguity attr-dict `:` type($src)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The kernel's own PTX
//===----------------------------------------------------------------------===//

def Tile_ElementwiseInlineAsmOp : Tile_Op<"elementwise_inline_asm", [Elementwise,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<ConditionallySpeculatable>]> {
  let summary = "Run PTX of the kernel's own on every element (tl::inline_asm_elementwise)";
  let description = [{
    Each result element is what `asm_string` computes from the same element
    of every argument (Triton's inline_asm_elementwise). `constraints` is
    LLVM's: one `=r`-style output per result, then one input per argument.
    With `pack` > 1 the asm sees `pack` elements at a time, packed into one
    register of pack x the element's bits (the first element lowest) - e.g.
    four i8 in an `r`; which elements share a register is the layout's
    choice. A `pure` asm has no effects and may be moved, recomputed or
    dropped; otherwise it is kept in place as if it touched global memory.
    Every argument and result has the results' shape.
  }];
  let arguments = (ins StrAttr:$asm_string, StrAttr:$constraints, BoolAttr:$pure, I32Attr:$pack,
                       Variadic<Tile_Tensor>:$args);
  let results = (outs Variadic<Tile_Tensor>:$results);
  let assemblyFormat = [{
    $asm_string `,` $constraints `pure` `=` $pure `pack` `=` $pack (`(` $args^ `:` type($args) `)`)?
    attr-dict `->` type($results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Debugging
//===----------------------------------------------------------------------===//

def Tile_PrintOp : Tile_Op<"print", [MemoryEffects<[MemWrite<Tile_GlobalMemory>]>]> {
  let summary = "Print values with a prefix, once per program";
  let arguments = (ins StrAttr:$prefix, Variadic<Tile_Any>:$args);
  let assemblyFormat = "$prefix ($args^ `:` type($args))? attr-dict";
}

def Tile_DebugBarrierOp : Tile_Op<"debug_barrier",
    [MemoryEffects<[MemRead<Tile_GlobalMemory>, MemWrite<Tile_GlobalMemory>]>]> {
  let summary = "Every thread of the program meets here (tl::debug_barrier)";
  let description = [{
    The program's threads wait for each other, and their memory accesses
    before it are visible to one another after it: tilegpu.barrier (bar.sync)
    on the GPU; nothing in the interpreter, which runs the program as one.
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_AssertOp : Tile_Op<"assert", [MemoryEffects<[MemWrite<Tile_GlobalMemory>]>]> {
  let summary = "Stop the kernel with `message` where `cond` is false";
  let description = [{
    tl::device_assert, and the DSL's own checks of what the kernel states. An
    `interpreter_only` assertion checks a rule compiled code relies on without
    paying for it (a block pointer's unchecked dimensions stay inside the
    tensor): the interpreter checks it as it checks tile.assume's promises,
    and the GPU pipeline drops it first (drop-interpreter-checks).
  }];
  let arguments = (ins Tile_BoolLike:$cond, StrAttr:$message, UnitAttr:$interpreter_only);
  let assemblyFormat = "$cond `,` $message attr-dict `:` type($cond)";
}

#endif // TEGULA_TILE_OPS
