//===- Passes.td - Tegula's passes -------------------------*- tablegen -*-===//
#ifndef TEGULA_PASSES
#define TEGULA_PASSES

include "mlir/Pass/PassBase.td"

def DropInterpreterChecks : Pass<"drop-interpreter-checks", "mlir::ModuleOp"> {
  let summary = "Erase the assertions only the interpreter checks";
  let description = [{
    `tile.assert ... {interpreter_only}` states a rule compiled code relies
    on without checking it (a block pointer's dimensions outside
    `boundary_check` stay inside the tensor, as Triton's do): the interpreter
    checks it on every launch; compiled code does not pay for it. Runs first
    in the GPU pipeline, so that the conditions' arithmetic, dead once the
    assertion is gone, never reaches the layout passes.
  }];
}

def DefineArithEdgeCases : Pass<"define-arith-edge-cases", "mlir::ModuleOp"> {
  let summary = "Give arith's undefined inputs the DSL's answers";
  let description = [{
    Integer division and remainder by zero (x / 0 = -1, x % 0 = x), signed
    INT_MIN / -1 (INT_MIN; remainder 0), shifts by the element's width or
    more (0, or the sign for a signed right shift) and float-to-integer
    conversions out of range (saturating; NaN gives 0) are undefined in
    `arith` and LLVM. The pass rewrites them into selects around a safe
    operand so that the GPU, the simulator and the interpreter agree.
    Constant operands that cannot reach a case are left alone. Runs first in
    the GPU pipeline, on tile IR.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ConvertTileToTileGPU : Pass<"convert-tile-to-tilegpu", "mlir::ModuleOp"> {
  let summary = "Give every tile a layout: tile IR becomes tilegpu IR";
  let description = [{
    Every tensor gets the default blocked layout for its shape over
    `num-warps` warps. Where an op relates its operands' and results' layouts
    the pass makes that relation hold, inserting `tilegpu.convert_layout`:
    a reduction's result is the slice of its operand's layout, an
    expand_dims operand is the slice of its result's layout, and a broadcast
    operand shares its result's layout. The module records
    `tilegpu.num_warps`. Later passes (coalesce, remove-layout-conversions)
    improve the choice; this one only makes it consistent.
  }];
  let options = [
    Option<"numWarps", "num-warps", "int", "4", "warps per CTA (program)">
  ];
  let dependentDialects = ["::tegula::tilegpu::TileGPUDialect"];
}

def UseTma : Pass<"use-tma", "mlir::ModuleOp"> {
  let summary = "Serve tensor-descriptor loads with TMA (sm_90a)";
  let description = [{
    A `tile.make_tensor_descriptor` in a kernel whose base is a pointer
    argument and whose extents and strides are arguments (possibly widened
    with arith.extsi) or constants gets a hidden kernel argument: its
    tensor map, 128 bytes by value (`llvm.byval`, `llvm.align = 64`; it
    becomes `nvvm.grid_constant` with the kernel), which each launch encodes
    on the host. The
    module attribute `tilegpu.tensor_maps` records how (runtime/TensorMap.h;
    argument numbers count the kernel's arguments), the descriptor is marked
    `tilegpu.tensor_map = N` and its loads and stores `tilegpu.tma`:
    `lower-tilegpu-to-llvm` emits cp.async.bulk.tensor into shared memory
    with an mbarrier for loads, and out of shared memory (a bulk group) for
    stores. Other descriptors are left to `lower-tensor-descriptors`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def OrderGlobalAccesses : Pass<"order-global-accesses", "mlir::ModuleOp"> {
  let summary = "A barrier between a store and a later load of the same buffer that other threads' elements reach";
  let description = [{
    A tile program is one thread of control: a load after a store of the
    same addresses reads what was stored. Its GPU threads are not: when the
    load's elements belong to other threads than the store's (another
    layout, other pointers), nothing orders their accesses. Before such a
    load - a `tile.load` after a `tile.store` through a pointer from the
    same kernel argument (or one the pass cannot trace), with no barrier
    between - this pass puts a `tilegpu.barrier`. A store and a load through
    the same pointer tile in the same layout touch each element from one
    thread and need none; pointers from different arguments are taken not
    to alias. Loops are followed around (a store late in an iteration, a
    load early in the next) and both arms of an `scf.if`.
  }];
  let dependentDialects = ["::tegula::tilegpu::TileGPUDialect"];
}

def DropUnusedTensorMaps : Pass<"drop-unused-tensor-maps", "mlir::ModuleOp"> {
  let summary = "Erase hidden tensor-map arguments nothing reads";
  let description = [{
    After `pipeline-dot-operands` has given each TMA ring a tensor map of
    its own (the ring's box and swizzle), the descriptor's map use-tma added
    has no reader left; every launch would still encode and pass it. The
    hidden arguments that neither an SSA use nor a TMA descriptor
    (`tilegpu.tensor_map = N`) reads are erased with their entries in
    `tilegpu.tensor_maps`; the remaining descriptors are renumbered.
    Descriptors without accesses are erased first.
  }];
}

def LowerTensorDescriptors : Pass<"lower-tensor-descriptors", "mlir::ModuleOp"> {
  let summary = "Tensor-descriptor block accesses as masked loads and stores";
  let description = [{
    Each `tile.descriptor_load` / `tile.descriptor_store` becomes a tile of
    pointers to its block (base + coordinates x strides, in i64) and a mask
    of the elements inside the tensor (a load fills the rest with zeros, as
    TMA does). Each `tile.make_tensor_descriptor` becomes `tile.assert`s of
    TMA's stride rule (positive multiples of 16 bytes), so a kernel refused
    on sm_90a is refused on every target.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def AccelerateDot : Pass<"accelerate-dot", "mlir::ModuleOp"> {
  let summary = "Put tile.dot on tensor cores: mma.sync layouts for its operands and result";
  let description = [{
    A `tile.dot` with f16 or bf16 operands, an f32 accumulator and a shape
    mma.sync tiles (M a multiple of 16, N of 8, K of 16) gets the
    `#tilegpu.mma` layout for its accumulator and result and the
    `#tilegpu.dot_operand` layouts for its operands, with
    `tilegpu.convert_layout`s in and out; `lower-tilegpu-to-llvm` then emits
    `nvvm.mma.sync` (m16n8k16) for it. The CTA's warps split over M first
    (as many as M has 16-row blocks), then N. A dot accumulating across an
    `scf.for` (its accumulator the loop's iter_arg, its result yielded
    there) keeps the accumulator in the mma layout: the iter_arg changes
    layout, converted once before the loop and once after. Every other dot
    keeps its blocked layouts and the FMA lowering (f32 `ieee` is never
    tf32).

    With `chip=sm_90a` a 16-bit dot whose shape fits Hopper's warpgroup MMA
    (warps a multiple of 4, M a multiple of 16 x warps, N a multiple of 8 and
    at most 256 or a multiple of 256, K of 16; not chained to another dot)
    gets `#tilegpu.mma<{..., version = 3}>`: wgmma.mma_async reads both
    operands from shared memory (docs/hopper.md).
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"sm_80\"",
           "the target: sm_90a puts fitting dots on wgmma, others on mma.sync">
  ];
  let dependentDialects = ["::tegula::tilegpu::TileGPUDialect"];
}

def PropagateMmaLayout : Pass<"propagate-mma-layout", "mlir::ModuleOp"> {
  let summary = "Run the users of a tensor-core dot's result in the mma layout";
  let description = [{
    From every conversion out of a `#tilegpu.mma` dot result, the
    elementwise ops, reductions (into slices of the mma layout), expand_dims
    and broadcasts the data reaches move into the mma layout; conversions
    are left where the data leaves them (stores, yields, other ops), and a
    16-bit A operand of a following tensor-core dot is converted straight
    into its `dot_operand` layout - with warps along M only, the same
    registers (a dot chain, as in attention, moves no data). An `scf.if`
    whose branches both yield data converted out of one mma layout yields
    it in that layout, and the data moves on from the if's result (attention
    masking its scores only on the blocks that need it). Tiles from
    outside are converted in; run remove-layout-conversions after it.
  }];
}

def RemoveLayoutConversions : Pass<"remove-layout-conversions", "mlir::ModuleOp"> {
  let summary = "Rematerialise cheap values in the layout their users need";
  let description = [{
    A `convert_layout` of a value that is cheap to compute in any layout
    (splat, make_range, splat constants, and elementwise ops or broadcasts
    of such values) is replaced by computing the value directly in the
    target layout, so it never moves between threads. Chains fold; what is
    left is a conversion of genuinely distributed data (a load, a reduction).
  }];
}

def PipelineDotOperands : Pass<"pipeline-dot-operands", "mlir::ModuleOp"> {
  let summary = "Software pipelining: a loop's dot operands arrive by cp.async, num-stages ahead";
  let description = [{
    In an `scf.for` with a constant positive step, a tensor-core `tile.dot`
    (16-bit operands, #tilegpu.mma result) whose two operands are
    `tile.load`s of that iteration (zero or no `other`, addresses computed
    from the induction variable, values from outside the loop and pointer
    tiles carried by the loop and advanced by a loop-invariant offset - their
    value at iteration k is init + k * offset -, copies of 4-16 bytes, no
    duplicated elements) is rewritten:
    a ring of `num-stages` swizzled shared tiles per operand
    (`tilegpu.alloc_shared`, swizzle from layout::planOperandTile); a
    prologue issuing the loads of the first num-stages - 1 iterations as
    `tilegpu.async_load` (cp.async; iterations past the end are masked off,
    which zero-fills and reads nothing); in the loop, `tilegpu.async_wait`
    (this iteration's stage complete, then a barrier), `tilegpu.dot_shared`
    on this iteration's stages, and the loads of iteration i + num-stages - 1
    into the stage just freed; after it, a wait for the rest. num-stages 1
    (or 0) leaves loops alone.

    `warp-specialize` (TMA rings, sm_90a): a loop at the top of the kernel
    (or in a tile loop there, with the same K iterations for every tile)
    whose operands arrive by TMA gets its own producer. The kernel gains a
    producer warpgroup (module attribute tilegpu.producer_warps = 4) that
    runs only a copy of the loop's address computation: for each iteration
    it waits until the consumers released the stage (a second mbarrier per
    stage, tilegpu.tma_wait {released}) and issues the TMA copies into it,
    up to num-stages iterations ahead; it gives its registers to the
    consumers (setmaxnreg). The tile program's warps (the consumers) only
    wait for stages, run the dots and release each stage once its wgmma
    group has completed (tilegpu.tma_arrive); a load several dots read fills
    one ring, whose stage the consumers wait for once and release once, after
    every dot of the iteration. Their barriers become
    `bar.sync 1` over the consumer warps. Needs the producer's values -
    loop bounds, the loads' coordinates - to be computed from scalars
    (kernel arguments, program ids, arithmetic); otherwise the loop is
    pipelined as without it. A loop's `tile.warp_specialize` (bool, from
    tl::loop_options, on it or on a loop around it) asks for or refuses
    this whatever the option; the first loop asking that can have it does.

    `ping-pong` (with warp-specialize, num_warps 4): the CTA runs two
    programs (module attribute tilegpu.programs_per_cta = 2), each on its own
    consumer warpgroup, so one program's mainloop runs while the other stores
    its result. A loop with one dot takes turns (tilegpu.order_wait /
    order_arrive / order_retire) and the programs share its rings, which the
    producer fills turn by turn; otherwise the rings hold both programs'
    stages (program w's after program w - 1's) and producer warp w fills
    program w's. Each program's code is guarded by its program id being in
    the launch (the lowering maps program_id to 2 * ctaid + slot and
    num_programs to a hidden argument).

    `cluster-size` C (with warp-specialize, 2 or 4, not with ping-pong):
    rings whose load is a `tile.descriptor_load {multicast}` (tl::multicast:
    the C programs of a cluster - consecutive program ids along x - load the
    same blocks in the same order) are fetched once per cluster: each CTA's
    producer copies 1/C of the stage's rows (`tilegpu.tma_load {multicast}`,
    the ring's tensor map boxing that slice) into every CTA of the cluster,
    and every ring's release barrier counts the consumer warps of all C CTAs
    (each consumer warp arrives in every CTA). The module gets
    tilegpu.cluster_size = C; the CTAs meet at a cluster barrier after the
    mbarriers' initialisation and before they are invalidated
    (tilegpu.cluster_sync). Where no multicast load qualifies nothing changes.
  }];
  let options = [
    Option<"numStages", "num-stages", "int", "3", "shared-memory stages per operand (1: off)">,
    Option<"warpSpecialize", "warp-specialize", "bool", "false",
           "TMA rings get a producer warpgroup (sm_90a)">,
    Option<"pingPong", "ping-pong", "bool", "false",
           "with warp-specialize at num_warps 4: two programs per CTA, each on its own consumer warpgroup">,
    Option<"clusterSize", "cluster-size", "int", "1",
           "with warp-specialize: CTAs per thread-block cluster; tl::multicast loads of TMA rings are "
           "fetched once per cluster">
  ];
  let dependentDialects = ["::tegula::tilegpu::TileGPUDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def Coalesce : Pass<"coalesce", "mlir::ModuleOp"> {
  let summary = "Choose the vector width of every load and store";
  let description = [{
    From the contiguity, divisibility and constancy of the pointers and masks
    (AxisInfo: make_range runs, 16-byte aligned pointer arguments and
    integer arguments divisible by 16 from kernel specialisation), and from
    the registers the layout keeps contiguous, each tile load, store and
    atomic gets `tilegpu.vector_width` (elements per access, up to 16
    bytes) and `tilegpu.vector_dim`. The lowering emits one vector access per
    group, e.g. `ld.global.v4.b32` for f32.
  }];
}

def StageInvariantWgmmaOperands : Pass<"stage-invariant-wgmma-operands", "mlir::ModuleOp"> {
  let summary = "Loop-invariant wgmma A operands move from registers to shared memory (sm_90a)";
  let description = [{
    A wgmma dot in an `scf.for` that reads its A operand from registers
    (`tilegpu.dot_shared_b`) where that tile is defined outside the loop
    (attention's Q, the attention backward's K, V, Q and dO, an MLP's
    input rows) is rewritten to read both operands from shared memory
    (`tilegpu.dot_shared`): the tile is stored once before the loop into a
    one-stage ring in wgmma's K-major layout (`tilegpu.store_shared`,
    fencing the async proxy). ptxas 13.0 gives such loop-invariant fragment
    registers to other values inside the loop (measured on an H100: wrong
    results; visible in the SASS), and FlashAttention-3 keeps Q in shared
    memory too. A tile several dots of the loop read is stored once. A
    kernel whose rings live during the loop leave no room for it (227 KiB)
    is rejected with the sizes.
  }];
  let dependentDialects = ["::tegula::tilegpu::TileGPUDialect", "::mlir::arith::ArithDialect"];
}

def OverlapChainedDots : Pass<"overlap-chained-dots", "mlir::ModuleOp"> {
  let summary = "Rotate loops of two chained wgmma dots: the work between them runs under the second";
  let description = [{
    FlashAttention-3's intra-warpgroup overlap, for any loop of that shape.
    An `scf.for` whose body issues two wgmma dots (`tilegpu.dot_shared` /
    `dot_shared_b` with a version-3 mma result, each followed by its
    `wgmma_wait` 0) - the first not depending on the previous iteration's
    second (attention: S = Q K^T, softmax, O = P V + alpha O) - is rotated
    by half an iteration: after a prologue running the first half of
    iteration 0 (up to the second dot's ring wait), iteration j issues
    iteration j+1's first dot, then its own second dot, waits for the first
    (`wgmma_wait 1`: the second stays in flight) and runs iteration j+1's
    work on it (the softmax) while the tensor cores compute the second; then
    waits for that (its A fragments kept alive: `keepA`) and runs what
    depends on it (the rescaled accumulator). An epilogue issues the last
    second dot. Loops that may not run at all get the prologue and epilogue
    under `scf.if lb < ub`. Only TMA rings (per-stage mbarriers: their
    waits and releases commute across rings); the two halves must use
    rings of their own and nothing else with side effects but loads. The
    tiles live during the overlap (both accumulators, two sets of A
    fragments) must fit the thread's registers; a loop-invariant first A
    (attention's Q) is already in shared memory
    (stage-invariant-wgmma-operands runs first).
    `explain` remarks why a loop with two wgmma dots is not rotated.
  }];
  let options = [
    Option<"explain", "explain", "bool", "false", "remark on loops left as they are, and why">
  ];
  let dependentDialects = ["::tegula::tilegpu::TileGPUDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def WarpgroupTurns : Pass<"warpgroup-turns", "mlir::ModuleOp"> {
  let summary = "Two consumer warpgroups take turns issuing their wgmma dots (FlashAttention-3's ping-pong)";
  let description = [{
    In a warp-specialised kernel (sm_90a) with two consumer warpgroups - 8
    warps, or ping-pong's two programs of 4 - and a loop of two wgmma dots
    (attention's forward), each burst of wgmma issues (dots in one block
    with only scalar arithmetic and the consumers' ring waits between them:
    the rotated loop's next S = Q K^T and this P V) is bracketed by
    `tilegpu.order_wait` (no turn: the warpgroup's next) and
    `tilegpu.order_arrive`: the warpgroups alternate, so one's softmax runs
    while the other's dots keep the tensor cores busy. `tilegpu.order_init`
    goes before the warp split and `tilegpu.order_retire` at the end of the
    consumers. Kernels whose loops already take turns (a ping-pong GEMM) and
    loops with more dots (attention's backward) are left alone. Runs after
    `overlap-chained-dots`. `explain` remarks why a kernel is left alone.
  }];
  let options = [
    Option<"explain", "explain", "bool", "false", "remark on kernels left as they are, and why">
  ];
  let dependentDialects = ["::tegula::tilegpu::TileGPUDialect"];
}

def AllocateSharedMemory : Pass<"allocate-shared-memory", "mlir::ModuleOp"> {
  let summary = "Give every shared-memory user an offset; record the total";
  let description = [{
    Each op whose lowering needs shared memory (cross-warp reductions,
    convert_layout / trans / reshape that move elements between threads,
    the FMA dot's operands, the old value of a scalar atomic) owns a buffer
    live over an interval of the program order: while the op runs; a
    reduction's or conversion's until the next such op on every path,
    where that adds no bytes to the total or, for a small one (up to 1 KiB:
    a reduction's partials), while the kernel stays within 48 KiB - so that
    `elide-scratch-barriers` finds the two apart; a
    buffer that outlives its op (made before a loop and used in it, or
    carried across iterations) lives for the whole loop. Buffers whose
    intervals overlap get disjoint bytes; the rest reuse them. Offsets are
    multiples of 16 (largest buffer first, lowest offset that fits) and are
    recorded as `tilegpu.shared_offset` on each op; the module records the
    total as `tilegpu.shared_bytes`. `lower-tilegpu-to-llvm` addresses each
    buffer at its offset and keeps the barriers around every use.
  }];
}

def ElideScratchBarriers : Pass<"elide-scratch-barriers", "mlir::ModuleOp"> {
  let summary = "Drop the leading barrier of scratch users whose bytes are free";
  let description = [{
    A cross-warp reduction, a scan's warp totals and a convert_layout
    through shared memory lower to: barrier (earlier users of the bytes are
    done), writes to the op's buffer, barrier, reads. After
    `allocate-shared-memory`, an op whose buffer no access since the last
    barrier on any path to it may touch (in practice: the previous such
    op's reads, in other bytes) gets `tilegpu.skip_leading_barrier`, and the
    lowering leaves its first barrier out. Ops the analysis does not model
    (rings, TMA, dots, atomics, warp-specialised branches, ping-pong
    programs) keep their barrier. Two reductions a row in a loop then take
    two barriers an iteration instead of four.
  }];
}

def GuardLoopCounters : Pass<"guard-loop-counters", "mlir::ModuleOp"> {
  let summary = "Stop the kernel where a loop counter would wrap around";
  let description = [{
    An i32 (or i64) `scf.for` whose step after the last iteration carries
    the counter past its type's maximum wraps to a negative value and runs
    on. Before each loop whose constant bound and step cannot rule it out,
    the pass inserts one compare (the bound within a step of the maximum)
    and, under it, the exact test (in the counter's width, unsigned) and a
    stop with a report (StopWithReport.h: the reason and the loop's line,
    which the runtime reads after the trap; no vprintf, which makes ptxas
    serialise wgmmas). Constant bounds that always wrap are an error
    at the loop. Nothing is added inside loops. Runs on tilegpu IR after
    the pipeliner.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

def LowerTileGPUToLLVM : Pass<"lower-tilegpu-to-llvm", "mlir::ModuleOp"> {
  let summary = "tilegpu IR to per-thread code: LLVM dialect + NVVM";
  let description = [{
    Each tile becomes the registers a thread holds (1:N type conversion),
    with index math from the tile's linear layout. Kernels become
    `llvm.func` with `nvvm.kernel` and `nvvm.maxntid`; math calls libdevice.
    Loops and branches (scf) keep their structure with converted types, then
    become LLVM branches. Reductions use shuffles and shared memory, layout
    conversions/trans/reshape that cross threads go through shared memory
    (each op at the `tilegpu.shared_offset` that allocate-shared-memory
    gave it, in one global of the module's `tilegpu.shared_bytes`),
    dot becomes FMAs, atomics predicated `atom`, print `vprintf`, assert
    `vprintf` + trap. Float atomic max/min and the 16-bit atomics PTX lacks
    (all but f16 add, sm_90's bf16 add and cas.b16) are compare-and-swap
    loops. `chip`: the target; from sm_90 on, f32 values round to tf32
    with one `cvt.rn.tf32.f32` instead of integer arithmetic (both nearest,
    ties to even), and bf16 atomic adds are atom.add.noftz.bf16.
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"sm_80\"",
           "target: sm_80, or sm_90a (cvt.rn.tf32.f32 rounds to tf32)">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::cf::ControlFlowDialect", "::mlir::scf::SCFDialect"];
}

def CarryPackedPairs : Pass<"carry-packed-pairs", "mlir::ModuleOp"> {
  let summary = "Branches pass a 2-element vector whole where they carried its halves";
  let description = [{
    After `lower-tilegpu-to-llvm`, a tile carried round a loop is one block
    argument per register. Where two arguments of a block take
    `extractelement %v[0]` and `extractelement %v[1]` of the same
    2-element vector on every incoming edge (a paired f32 → bf16/f16
    conversion), the block takes `%v` and extracts the halves itself. A P
    tile carried round a rotated attention loop then stays packed: one
    `cvt.rn.bf16x2.f32` a pair, and no repacking for the next wgmma.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // TEGULA_PASSES
