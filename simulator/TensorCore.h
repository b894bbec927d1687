//===- TensorCore.h - mma.sync, ld/stmatrix, cp.async semantics -*- C++ -*-===//
//
// Warp-level tensor-core instructions as the PTX ISA defines them, for the
// simulator. Each call is made by one simulated thread with its own
// registers, like the instruction; mma.sync, ldmatrix and stmatrix are warp
// collectives (all 32 lanes take part), cp.async is per thread and copies
// only when its group is waited for, so reading too early shows garbage.
//
// Fragment layouts (groupID = lane / 4, tig = lane % 4), from the PTX ISA:
//   m16n8k16 f16/bf16: A 4 x b32 (8 halves) a_i at row groupID (+8 for
//     i in {2,3,6,7}), col 2*tig + (i & 1) (+8 for i >= 4); B 2 x b32 (4 halves)
//     b_i at row 2*tig + (i & 1) (+8 for i >= 2), col groupID.
//   m16n8k8 tf32: A 4 x b32 a_i at row groupID (+8 for i odd), col tig (+4
//     for i >= 2); B 2 x b32 b_i at row tig (+4 for i = 1), col groupID.
//   C/D (both, f32): c_i at row groupID (+8 for i >= 2), col 2*tig + (i & 1).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace tegula::sim {

enum class MmaKind { F16, BF16, TF32, S8, E4M3, E5M2 };

/// The value of one operand element of `kind` from its bits (f16/bf16: the
/// low 16; tf32: the top 19 of an f32; s8, e4m3, e5m2: the low byte).
float operandValue(MmaKind kind, uint32_t bits);

/// mma.sync.aligned.{m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 |
/// m16n8k8.row.col.f32.tf32.tf32.f32 | m16n8k32.row.col.s32.s8.s8.s32}: this
/// lane's `a` (4 registers), `b` (2) and `c` (4 floats; for s8 the bits of 4
/// s32 values, summed with wrap-around); writes its 4 of `d`.
void mmaSync(MmaKind kind, const uint32_t a[4], const uint32_t b[2], const float c[4], float d[4],
             uint32_t site);

/// ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16: lanes 8j..8j+7 give
/// the 16-byte rows of matrix j (`rowAddress` in shared memory); this lane
/// receives one b32 (two halves) of each matrix in `d[0..count)`.
void ldmatrix(int count, bool trans, const void *rowAddress, uint32_t *d, uint32_t site);

/// stmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16 (sm_90): ldmatrix
/// backwards - lanes 8j..8j+7 give the 16-byte rows of matrix j
/// (`rowAddress`), this lane's `s[0..count)` the b32 (two halves) it holds
/// of each matrix, which all land once every lane has arrived.
void stmatrix(int count, bool trans, void *rowAddress, const uint32_t *s, uint32_t site);

/// cp.async.{ca,cg}.shared.global [dst], [src], cpSize, srcSize: copies
/// srcSize bytes and zero-fills the rest of cpSize (4, 8 or 16), once the
/// group it is committed to is waited for.
void cpAsync(void *sharedDst, const void *globalSrc, int cpSize, int srcSize, uint32_t site);
/// cp.async.commit_group: the copies issued since the last commit form a group.
void cpAsyncCommitGroup();
/// The current thread exits: its copies never waited for no longer read
/// their sources (AsyncGlobal.h).
void cpAsyncThreadExit();
/// cp.async.wait_group n: all but the n most recent committed groups are
/// complete (uncommitted copies are not).
void cpAsyncWaitGroup(int n, uint32_t site);
/// cp.async.wait_all: commit, then wait for every group.
void cpAsyncWaitAll(uint32_t site);

} // namespace tegula::sim
