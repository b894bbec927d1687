//===- Wgmma.h - Hopper's asynchronous warpgroup MMA -------------*- C++ -*-===//
//
// wgmma.mma_async (sm_90a) as the PTX ISA defines it, for the simulator:
// both operands read from shared memory through 64-bit matrix descriptors,
// the accumulator in the registers of the 128 threads of a warpgroup.
//
// The instruction is asynchronous, and the model keeps it so: issuing it
// records the operation; the shared memory is read, and the result
// computed, only when a wgmma.wait_group covering its group runs - the
// latest moment the hardware may read. Until then the thread's accumulator
// registers hold placeholders (NaNs tagged with a slot number), so code that
// uses them before the wait computes NaN, as it would read undefined
// registers on a GPU. A later wgmma taking them as its accumulator is
// fine (the tensor cores chain them); the wait that passes them through
// (its asm takes the accumulators as in/out operands) replaces them with
// the results. Hazards reported:
//   - shared memory an in-flight wgmma reads changing before its wait;
//   - a byte it reads written by an ordinary store without a
//     fence.proxy.async since (Runtime.h, checkAsyncProxyRead);
//   - accumulators written by ordinary instructions without a wgmma.fence;
//   - groups still in flight when the thread exits.
//
// Fragment of m64nNk*: thread t of the warpgroup (warp w = t / 32, lane l)
// holds d[i], i < N/2, at row 16w + l/4 + 8 * ((i / 2) % 2), column
// 8 * (i / 4) + 2 * (l % 4) + i % 2 - mma.sync's C fragment, one per warp and
// 8 columns.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "simulator/TensorCore.h"

#include <cstddef>
#include <cstdint>

namespace tegula::sim {

/// Byte offset in the shared window of element (mn, k) of an operand
/// (A: mn = row m; B: mn = column n) that `descriptor` describes, K-major
/// (K contiguous) or MN-major (the .trans form), decoded per the PTX ISA's
/// canonical layouts and swizzles. Throws tegula::Error for descriptors the
/// model does not cover (no swizzle, a base offset).
int64_t wgmmaElementOffset(uint64_t descriptor, bool kMajor, int elementBytes, int32_t mn,
                           int32_t k);

/// wgmma.fence.sync.aligned.
void wgmmaFence();
/// wgmma.mma_async.sync.aligned.m64n{n}k{16 | 8}.f32.{f16|bf16|tf32}: this
/// thread's n/2 accumulator values (f32 bits) in `acc`, replaced by
/// placeholders; `scaleD` false ignores them (D = A B).
void wgmmaMmaAsync(MmaKind kind, int n, uint64_t descA, uint64_t descB, bool scaleD, bool transA,
                   bool transB, uint32_t *acc, uint32_t site);
/// The same with A from registers (`.. {d}, {a0, a1, a2, a3}, b-desc, ..`):
/// this lane's 4 registers of A's fragment (per warp, mma.sync's m16 A
/// layout: f16/bf16 two values each, tf32 one), gathered across the warp.
void wgmmaMmaAsyncRegisterA(MmaKind kind, int n, const uint32_t aRegs[4], uint64_t descB,
                            bool scaleD, bool transB, uint32_t *acc, uint32_t site);
/// wgmma.commit_group.sync.aligned.
void wgmmaCommitGroup();
/// wgmma.wait_group.sync.aligned `pending`: completes all but the `pending`
/// most recent groups, then replaces the placeholders among `values` whose
/// results are known.
void wgmmaWaitGroup(int pending, uint32_t *values, size_t count, uint32_t site);
/// At thread exit: fails if wgmma groups are still in flight.
void wgmmaThreadExit();

} // namespace tegula::sim
