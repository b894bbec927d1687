//===- Tma.h - mbarriers and TMA bulk tensor copies (sm_90a) -----*- C++ -*-===//
//
// The simulator's model of Hopper's transaction barriers and tensor memory
// accelerator, as the PTX ISA defines them:
//   - an mbarrier (8 bytes of shared memory) has an expected arrival count,
//     a pending count, a transaction count (bytes) and a phase; a phase
//     completes when every arrival and every byte it expects has arrived,
//     and the next one begins;
//   - mbarrier.try_wait.parity P succeeds once the phase with parity P has
//     completed; a thread that fails yields to the others;
//   - cp.async.bulk.tensor copies a box of a tensor (described by a tensor
//     map) into shared memory, zeros where the box leaves the tensor, and
//     completes its bytes on an mbarrier.
// The copy lands at once, but its bytes belong to the async proxy until the
// phase that counts them completes: a thread reading them before it has
// observed that phase (its try_wait succeeded) is reported - the hardware
// may not have written them yet. So are: barriers used before
// mbarrier.init, generic writes to bytes a copy owns, copies into bytes the
// generic proxy wrote without a fence.proxy.async, tensor maps not made by
// this simulator, and a phase that never completes (all threads waiting).
//
// Tensor maps here are the simulator's own 128-byte encoding (the real
// format is the driver's secret): SimTensorMap, written by encodeForSimulator.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/TensorMap.h"

#include <cstddef>
#include <cstdint>

namespace tegula::sim {

/// The simulator's tensor map for a resolved one (runtime/TensorMap.h).
runtime::TensorMapBytes encodeForSimulator(const runtime::ResolvedTensorMap &map);

/// mbarrier.init.shared::cta.b64 [bar], count.
void mbarrierInit(void *bar, uint32_t count, uint32_t site);
/// mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes.
void mbarrierArriveExpectTx(void *bar, uint32_t bytes, uint32_t site);
/// mbarrier.arrive: one arrival, no transaction bytes (a consumer telling
/// the producer it is done with a stage).
void mbarrierArrive(void *bar, uint32_t site);
/// mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity.
bool mbarrierTryWait(void *bar, uint32_t parity, uint32_t site);
/// mbarrier.inval.shared::cta.b64 [bar].
void mbarrierInval(void *bar, uint32_t site);
/// cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::
/// complete_tx::bytes [dst], [map, {coords...}], [bar]; `coords` innermost
/// first, as in PTX.
void bulkTensorLoad(void *dst, const void *map, const int32_t *coords, int rank, void *bar,
                    uint32_t site);
/// The same with .multicast::cluster: the box lands at `dst`'s offset in
/// every CTA of the cluster whose bit (rank) is set in `ctaMask`, and
/// completes its bytes on the mbarrier at `bar`'s offset in each of them -
/// each destination's own checks and state, as if it had issued the copy.
void bulkTensorLoadMulticast(void *dst, const void *map, const int32_t *coords, int rank, void *bar,
                             uint16_t ctaMask, uint32_t site);
/// mbarrier.arrive{.release.cluster}.shared::cluster.b64 _, [bar]: one
/// arrival on the mbarrier at a shared::cluster address, in whichever CTA
/// of the cluster it lives.
void mbarrierArriveCluster(void *bar, uint32_t site);
/// cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [map,
/// {coords...}], [src]: the box from shared memory into the tensor, clipped
/// to it. The shared bytes count as read (by the async proxy) until a
/// cp.async.bulk.wait_group.read completes the group: writes to them before
/// are reported, and so are generic writes to them not fenced since.
void bulkTensorStore(const void *map, const int32_t *coords, int rank, const void *src,
                     uint32_t site);
/// cp.async.bulk.commit_group: this thread's bulk stores since the last one.
void bulkCommitGroup();
/// cp.async.bulk.wait_group.read `pending`: all but the `pending` most recent
/// groups have read their shared memory.
void bulkWaitGroupRead(int pending);
/// cp.async.bulk.wait_group `pending`: all but the `pending` most recent
/// groups have read their shared memory and written their global memory -
/// which the simulator does then (until then a generic access to those
/// global bytes is reported: AsyncGlobal.h).
void bulkWaitGroup(int pending);
/// The current thread exits: its bulk stores' global writes land (the
/// grid's completion waits for them).
void bulkStoreThreadExit();

/// A shared-memory read of `bytes` at `offset` by the current thread:
/// reported if a bulk copy it has not waited for owns those bytes.
void checkTmaRead(size_t offset, size_t bytes, uint32_t site);
/// A generic write: reported if a bulk copy owns those bytes; else they
/// stop being the copy's.
void checkTmaWrite(size_t offset, size_t bytes, uint32_t site);

} // namespace tegula::sim
