//===- AsyncGlobal.h - global bytes asynchronous copies still use --*- C++ -*-===//
//
// A cp.async reads its global source at some moment between its issue and
// the wait for its group; a bulk tensor store writes its box at some moment
// before the wait for its group's writes (cp.async.bulk.wait_group, not
// .read). The simulator performs each at one moment of its own (the
// cp.async at the wait, the store's writes at that wait or when its thread
// exits), so a program that touches those bytes in between would see
// whatever the simulator chose - the hardware may choose otherwise. Such an
// access is reported instead: a generic read or write of bytes a bulk store
// is still writing, a generic write of bytes a cp.async is still reading.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "simulator/Runtime.h"

#include <cstddef>
#include <cstdint>

namespace tegula::sim {

enum class AsyncGlobalUse { ReadByCopy, WrittenByBulkStore };

/// [p, p + bytes) is in use by the current thread's asynchronous copy issued
/// at `site` until asyncGlobalEnd(token).
uint64_t asyncGlobalBegin(const void *p, size_t bytes, AsyncGlobalUse use, uint32_t site);
void asyncGlobalEnd(uint64_t token);

/// A generic global access by the current thread: reported where it
/// overlaps bytes a bulk store may still be writing (any access), or bytes
/// a cp.async may still be reading (a write or an atomic).
void checkAsyncGlobal(uintptr_t p, size_t bytes, AccessKind kind, uint32_t site);

} // namespace tegula::sim
