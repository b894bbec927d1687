//===- TileGPUOps.td - tilegpu operations ------------------*- tablegen -*-===//
#ifndef TEGULA_TILEGPU_OPS
#define TEGULA_TILEGPU_OPS

include "TileGPUBase.td"
include "dialects/tile/TileBase.td"
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

//===----------------------------------------------------------------------===//
// Software pipelining: rings of shared tiles filled with cp.async
//===----------------------------------------------------------------------===//

def TileGPU_AllocSharedOp : TileGPU_Op<"alloc_shared"> {
  let summary = "Shared memory for a ring of tiles (allocate-shared-memory places it)";
  let description = [{
    `mbarriers`: the ring is filled by TMA (tilegpu.tma_load); one 8-byte
    mbarrier per stage follows the tiles. `released`: a warp-specialised
    ring - a second mbarrier per stage follows, on which the consumer
    threads release the stage (tilegpu.tma_arrive) and the producer waits
    before refilling it. `tf32`: f32 tiles that TMA rounds to tf32 as they
    land (their tensor maps are CU_TENSOR_MAP_DATA_TYPE_TFLOAT32): the wgmma
    dots reading them need not round the stage in place.
  }];
  let arguments = (ins UnitAttr:$mbarriers, UnitAttr:$released, UnitAttr:$tf32);
  let results = (outs TileGPU_SharedTilesType:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TileGPU_AsyncLoadOp : TileGPU_Op<"async_load"> {
  let summary = "Copy a tile from global memory into one stage of a ring, asynchronously";
  let description = [{
    Each thread copies the elements its layout gives it (cp.async, up to 16
    bytes at a time) into stage `stage` of `dst`; masked-off elements are
    zero-filled (a source size of 0), so `other` is 0. Then one commit
    group: tilegpu.async_wait counts these.
  }];
  let arguments = (ins TileGPU_SharedTilesType:$dst, I32:$stage, AnyRankedTensor:$ptr,
                       Optional<AnyRankedTensor>:$mask);
  let assemblyFormat = [{
    $dst `[` $stage `]` `,` $ptr (`,` $mask^)? attr-dict `:` type($dst) `,` type($ptr) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

def TileGPU_AsyncWaitOp : TileGPU_Op<"async_wait"> {
  let summary = "Wait until at most `pending` async_load groups are in flight, then a barrier";
  let description = [{
    `buffers`: rings whose copies this wait completes when nothing else reads
    them afterwards (the wait after a pipelined loop), so that their shared
    memory is not reused while copies may still land in it.
    `fenceAsyncProxy`: the copies are read next by the async proxy (wgmma):
    each thread fences (fence.proxy.async) between its wait and the barrier.
  }];
  let arguments = (ins Variadic<TileGPU_SharedTilesType>:$buffers, I32Attr:$pending,
                       UnitAttr:$fenceAsyncProxy);
  let assemblyFormat = "($buffers^ `:` type($buffers))? attr-dict";
}

def TileGPU_StoreSharedOp : TileGPU_Op<"store_shared"> {
  let summary = "Write a tile held in registers into one stage of a ring, between two barriers";
  let description = [{
    A barrier (the stage's earlier readers are done), then each element's
    owner (one thread where the layout repeats it) stores it, up to 16
    bytes at a time, at the stage's swizzled offsets; then, with
    `fenceAsyncProxy` (wgmma reads the stage next), each thread fences
    (fence.proxy.async), and a barrier. stage-invariant-wgmma-operands
    keeps a loop-invariant wgmma A operand there (attention's Q) instead of
    in registers.
  }];
  let arguments = (ins AnyRankedTensor:$src, TileGPU_SharedTilesType:$dst, I32:$stage,
                       UnitAttr:$fenceAsyncProxy);
  let assemblyFormat = [{
    $src `,` $dst `[` $stage `]` attr-dict `:` type($src) `,` type($dst)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Rings filled by TMA (sm_90a): one mbarrier per stage
//===----------------------------------------------------------------------===//

def TileGPU_TmaInitOp : TileGPU_Op<"tma_init"> {
  let summary = "Initialise the ring's per-stage mbarriers (one arrival each), then a barrier";
  let arguments = (ins TileGPU_SharedTilesType:$ring);
  let assemblyFormat = "$ring attr-dict `:` type($ring)";
}

def TileGPU_TmaLoadOp : TileGPU_Op<"tma_load", [AttrSizedOperandSegments]> {
  let summary = "Fill one stage of a ring from a tensor map with TMA";
  let description = [{
    Thread 0 expects the stage's bytes on its mbarrier and issues one
    cp.async.bulk.tensor per block of the ring's tile (rows of the tensor
    map's swizzle width), box origin `coords` (element coordinates,
    outermost first) plus the block's column offset. Zeros land where the
    box leaves the tensor. `map`: the kernel's tensor-map parameter.

    Rings that are filled, waited for and released together share one
    mbarrier a stage (one wait and one release a stage instead of one a
    ring): `signals` names the ring whose stage mbarrier the copies complete
    on (this ring's own when absent), and `expectBytes` the bytes this
    thread announces there before its copies (the stage's tile bytes when
    absent). The group's first load announces the whole group's bytes; the
    others, which signal its ring, announce none (0) - that mbarrier expects
    one arrival a phase.

    `multicast` C (a thread-block cluster of C CTAs): the CTA of rank r
    copies only rows [r, r + 1) * rows / C of each block (the tensor map's
    box is that slice) and the copy lands in every CTA of the cluster,
    completing on each one's stage mbarrier - which still expects the whole
    stage: every CTA's producer issues its slice of the same block.
  }];
  let arguments = (ins TileGPU_SharedTilesType:$ring, I32:$stage, AnyType:$map,
                       Variadic<I32>:$coords, Optional<TileGPU_SharedTilesType>:$signals,
                       OptionalAttr<I64Attr>:$expectBytes, OptionalAttr<I64Attr>:$multicast);
  let assemblyFormat = [{
    $ring `[` $stage `]` `,` $map `[` $coords `]` (`signals` $signals^)? attr-dict `:` type($ring) `,` type($map)
    (`,` type($signals)^)?
  }];
  let hasVerifier = 1;
}

def TileGPU_TmaWaitOp : TileGPU_Op<"tma_wait"> {
  let summary = "Wait for stage `stage` of each ring (mbarrier phase parity `phase`), then a barrier";
  let description = [{
    Every thread spins on mbarrier.try_wait.parity until the copies of the
    stage have landed; the barrier after it also tells the producer that
    every thread is done with the iterations before (their stages may be
    refilled). `released` (a warp-specialised producer): wait instead for
    the consumers' release of the stage (tilegpu.tma_arrive), no barrier.
    `noBarrier` (warp-specialised consumers): no barrier after the wait -
    each thread has seen the copies land itself, and the release mbarrier,
    not a barrier, tells the producer when the stage is free.
  }];
  let arguments = (ins Variadic<TileGPU_SharedTilesType>:$rings, I32:$stage, I32:$phase,
                       UnitAttr:$released, UnitAttr:$noBarrier);
  let assemblyFormat = [{
    $rings `[` $stage `]` `,` $phase attr-dict `:` type($rings)
  }];
}

def TileGPU_TmaArriveOp : TileGPU_Op<"tma_arrive"> {
  let summary = "Each consumer warp releases stage `stage` of each ring (warp specialisation)";
  let description = [{
    Every consumer thread runs it; the warp's lanes meet (bar.warp.sync) and
    lane 0 arrives on the stage's release barrier (rings with `released`):
    the warp no longer reads the stage, so the producer may refill it once
    every consumer warp has arrived. (One arrival a warp, as CUTLASS and
    ThunderKittens release stages, instead of 32.)
  }];
  let arguments = (ins Variadic<TileGPU_SharedTilesType>:$rings, I32:$stage);
  let assemblyFormat = "$rings `[` $stage `]` attr-dict `:` type($rings)";
}

def TileGPU_ClusterSyncOp : TileGPU_Op<"cluster_sync"> {
  let summary = "Every thread of every CTA of the thread-block cluster meets (barrier.cluster)";
  let description = [{
    A cluster kernel's CTAs write into each other's shared memory (multicast
    TMA copies) and arrive on each other's mbarriers: they meet once their
    mbarriers are initialised, before any of that, and again before the
    mbarriers are invalidated and the CTA exits, after all of it. Every
    thread runs it (arrive with release semantics, then wait with acquire).
  }];
  let assemblyFormat = "attr-dict";
}

def TileGPU_IsProducerWarpOp : TileGPU_Op<"is_producer_warp", [Pure]> {
  let summary = "True in a warp-specialised kernel's producer warps";
  let description = [{
    The module's `tilegpu.producer_warps` warps run after the `num_warps`
    that run the tile program: true where the thread index is at least
    32 * num_warps.
  }];
  let results = (outs I1:$result);
  let assemblyFormat = "attr-dict";
}

def TileGPU_IsWarpLeaderOp : TileGPU_Op<"is_warp_leader", [Pure]> {
  let summary = "True in lane 0 of every warp";
  let description = [{
    A warp-specialised kernel's producer runs in one thread per program it
    serves: its waits and copies need no other, and a thread that waits on
    a release mbarrier must not still be waiting when the consumers, done,
    invalidate it (a lagging lane could).
  }];
  let results = (outs I1:$result);
  let assemblyFormat = "attr-dict";
}

def TileGPU_OrderInitOp : TileGPU_Op<"order_init"> {
  let summary = "The turn and retirement mbarriers of consumer warpgroups that take turns";
  let description = [{
    Before the split, every thread: thread 0 initialises two mbarriers in
    the op's shared buffer (16 bytes, live to the kernel's end) - the turn
    barrier, whose phase t completes when the warpgroup holding turn t has
    ended it (128 arrivals: one consumer warpgroup), and the retirement
    barrier, whose phase 0 completes when either warpgroup takes no more
    turns - then a barrier. Turns alternate between the two consumer
    warpgroups: a ping-pong GEMM's programs take turn 2j + slot for their
    j-th K loop; warpgroups that take turns at each burst of wgmma issues
    (`warpgroup-turns`) number theirs implicitly (warpgroup w: w, w + 2, ...).
  }];
  let assemblyFormat = "attr-dict";
}

def TileGPU_OrderWaitOp : TileGPU_Op<"order_wait"> {
  let summary = "Wait for the warpgroup's turn";
  let description = [{
    Every thread of the warpgroup spins until the turn barrier completed
    phase `turn` - 1 (the other warpgroup ended its turn) or the retirement
    barrier its phase 0 (the other takes no more turns); turn 0 starts at
    once. Without `turn`: the warpgroup's next turn (consumer warpgroup w
    holds turns w, w + 2, ...: only the parity matters, and a fresh barrier
    lets turn 0 through).
  }];
  let arguments = (ins Optional<I32>:$turn);
  let assemblyFormat = "($turn^)? attr-dict";
}

def TileGPU_OrderArriveOp : TileGPU_Op<"order_arrive"> {
  let summary = "End the warpgroup's turn: every thread arrives on the turn barrier";
  let description = [{
    Then the warpgroup's threads meet at its own named barrier (3 + its
    index): no warp waits for its next turn while its warpgroup's phase is
    still open - a wait sees only the parity of phases, and would take that
    open phase's predecessor for the other warpgroup's turn.
  }];
  let assemblyFormat = "attr-dict";
}

def TileGPU_OrderRetireOp : TileGPU_Op<"order_retire"> {
  let summary = "The program takes no more turns: its first thread arrives on the retirement barrier";
  let assemblyFormat = "attr-dict";
}

def TileGPU_ProgramSlotOp : TileGPU_Op<"program_slot", [Pure]> {
  let summary = "Which of its CTA's programs a thread serves (ping-pong)";
  let description = [{
    A ping-pong kernel (module attribute `tilegpu.programs_per_cta` = 2)
    runs two programs per CTA, each on its own consumer warpgroup, and the
    producer warpgroup's warp w fills program w's rings. The slot is the
    consumer warpgroup's index (thread index / (32 * num_warps)) in the
    consumers, the warp's index among the producer warps in the producer
    (those past the programs serve none; without the attribute, warp 0
    serves the one program), else 0. Program p of the launch is slot p % 2
    of CTA p / 2.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict";
}

def TileGPU_SetMaxRegistersOp : TileGPU_Op<"set_max_registers"> {
  let summary = "setmaxnreg: move registers between warpgroups (sm_90a)";
  let description = [{
    Every thread of the warpgroup executes it: `increase` raises its
    per-thread register limit to `count`, otherwise lowers it (24..256, a
    multiple of 8). The producer warpgroup gives registers up for the
    consumers' accumulators.
  }];
  let arguments = (ins I32Attr:$count, UnitAttr:$increase);
  let assemblyFormat = "attr-dict";
}

def TileGPU_BarrierOp : TileGPU_Op<"barrier"> {
  let summary = "Every thread of the program meets here; their memory accesses so far are ordered before the ones after";
  let description = [{
    bar.sync: the program's threads wait for each other, and each one's
    global and shared accesses before it are visible to the others after it
    (a warp-specialised kernel's consumers: their named barrier; ping-pong:
    each program's own). `order-global-accesses` puts one between a store
    and a later load of the same buffer whose elements other threads own:
    the tile program runs as one thread of control, its threads do not.
    With `fenceAsyncProxy` every thread first fences the async proxy for
    global memory (fence.proxy.async.global): a TMA copy after the barrier
    reads the buffer through the async proxy, which sees the threads'
    ordinary stores only after such a fence.
  }];
  let arguments = (ins UnitAttr:$fenceAsyncProxy);
  let assemblyFormat = "attr-dict";
}

def TileGPU_TmaStoreWaitOp : TileGPU_Op<"tma_store_wait"> {
  let summary = "The program leader waits until its TMA stores have read their shared memory";
  let description = [{
    cp.async.bulk.wait_group.read 0 by the thread that issues the program's
    TMA stores. A warp-specialised persistent kernel's stores in its tile
    loop (marked `tilegpu.tma_store_deferred`) wait for their copy's read
    of the staged block only before the next store stages one - not right
    after issuing, which would hold the leader's warp, and its warpgroup's
    next wgmma, back while the copy reads - and once after the loop, here:
    the kernel's shared memory must outlive the last copy's read.
    With `writes`: cp.async.bulk.wait_group 0 - the stores' global writes
    complete too (and become visible to the generic proxy), as
    `order-global-accesses` asks before a later access of the same buffer
    (with a barrier after it, for the other threads).
  }];
  let arguments = (ins UnitAttr:$writes);
  let assemblyFormat = "attr-dict";
}

def TileGPU_TmaReleaseOp : TileGPU_Op<"tma_release"> {
  let summary = "Invalidate the ring's mbarriers (after a barrier): its bytes may be reused";
  let arguments = (ins TileGPU_SharedTilesType:$ring);
  let assemblyFormat = "$ring attr-dict `:` type($ring)";
}

def TileGPU_DotSharedOp : TileGPU_Op<"dot_shared"> {
  let summary = "tile.dot on tensor cores with both operands read from ring stages";
  let description = [{
    `a[sa] * b[sb] + acc`: A [M, K] and B [K, N] are read from shared memory
    with ldmatrix, k-slice by k-slice, into the fragments of the mma.sync
    whose accumulator layout `acc` and the result carry (#tilegpu.mma); with
    a wgmma accumulator (version 3) wgmma.mma_async reads the stages through
    matrix descriptors (the rings are in its layouts) and the result is in
    flight: only a tilegpu.wgmma_wait, or the accumulator of another such
    dot_shared, may use it. `transposeA` / `transposeB`: the ring holds the
    operand transposed (as the kernel loaded it before `tile.trans`: [K, M]
    for A, [N, K] for B). Both take f32 operands at `precision` tf32
    (mma.sync rounds them in registers after the read, wgmma's lowering
    a cp.async ring's stage in place before it - a TMA ring's tensor map
    rounded it as it landed: alloc_shared {tf32}) and i8 ones with an i32
    accumulator;
    mma.sync also tf32x3, wgmma also fp8.
  }];
  let arguments = (ins TileGPU_SharedTilesType:$a, I32:$aStage, TileGPU_SharedTilesType:$b,
                       I32:$bStage, AnyRankedTensor:$acc, UnitAttr:$transposeA,
                       UnitAttr:$transposeB, OptionalAttr<Tile_DotPrecision>:$precision);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $a `[` $aStage `]` `,` $b `[` $bStage `]` `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TileGPU_DotSharedBOp : TileGPU_Op<"dot_shared_b"> {
  let summary = "tile.dot on tensor cores with A in registers and B read from a ring stage";
  let description = [{
    `a * b[sb] + acc`: A [M, K] is already this mma's fragments
    (#tilegpu.dot_operand: a loop-invariant operand, or a chained dot's), B
    [K, N] is read from shared memory as for tilegpu.dot_shared (ldmatrix,
    or a wgmma descriptor - then the result is in flight like dot_shared's).
    `transposeB`: the ring holds B transposed, as loaded ([N, K]).
    Element types and `precision` as for tilegpu.dot_shared.
  }];
  let arguments = (ins AnyRankedTensor:$a, TileGPU_SharedTilesType:$b, I32:$bStage,
                       AnyRankedTensor:$acc, UnitAttr:$transposeB,
                       OptionalAttr<Tile_DotPrecision>:$precision);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $a `,` $b `[` $bStage `]` `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TileGPU_WgmmaWaitOp : TileGPU_Op<"wgmma_wait", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "Wait until at most `pending` wgmma groups are in flight; `acc` passes through";
  let description = [{
    wgmma.wait_group: the accumulator of a wgmma dot_shared, as its registers
    are once all but the `pending` most recent groups have completed. With
    `pending` = 1 the last group (whose result this is) may still be in
    flight: the value is only a later dot_shared's accumulator or another
    wgmma_wait's operand. `keepA` (overlap-chained-dots: other code runs
    between a dot_shared_b and its wait): the A fragments that dot's wgmmas
    read from registers pass through the wait too, so nothing reuses their
    registers while the tensor cores may still read them.
  }];
  let arguments = (ins AnyRankedTensor:$acc, I32Attr:$pending, UnitAttr:$keepA);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$acc attr-dict `:` type($acc)";
}

#endif // TEGULA_TILEGPU_OPS
