//===- MemoryProfile.h - what each access site costs in memory traffic ----===//
//
// The simulator runs a warp's lanes one after another, but the hardware
// serves a warp's access as one request: global memory moves the 32-byte
// sectors the lanes' bytes lie in, shared memory takes one wavefront per
// distinct word a bank must deliver. With a profile on (SimOptions::
// profileMemory, TEGULA_SIM_PROFILE=1), each thread-issued access (ld/st,
// atomics, cp.async, ldmatrix/stmatrix - not TMA or wgmma, which the async
// units issue) is grouped with its warp's lanes' same-numbered execution of
// the same site, and each group is priced as that request: so uncoalesced
// loads and bank conflicts show without a GPU (docs/simulator.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "simulator/Runtime.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace tegula::sim {

/// One lane's part of a request: its bytes [address, address + bytes).
struct LanePart {
  uintptr_t address = 0;
  uint32_t bytes = 0;
  int lane = 0;
};

/// 32-byte sectors a global request touches, and the fewest its distinct
/// bytes need (aligned: ceil(bytes / 32)); `bytes` gets the distinct bytes.
std::pair<uint64_t, uint64_t> globalSectors(std::span<const LanePart> parts, uint64_t &bytes);
/// Wavefronts a shared request takes: its lanes in phases of 128 bytes
/// (32 lanes of up to 4 bytes, 16 of 8, 8 of 16), each phase as many as the
/// most distinct 4-byte words one of the 32 banks holds (the same word is
/// broadcast); and the fewest, ceil(distinct bytes of a phase / 128) each.
std::pair<uint64_t, uint64_t> sharedWavefronts(std::span<const LanePart> parts, uint64_t &bytes);

class MemoryProfile {
public:
  explicit MemoryProfile(size_t threads) : executions_(threads) {}
  /// Thread `thread`'s access at `site`: part of the request its warp's
  /// lanes make at their same-numbered execution of the site.
  void access(int thread, uint32_t site, uintptr_t address, size_t bytes, Space space, AccessKind kind);
  /// A request whose lanes' parts arrive together (a warp collective).
  void request(uint32_t site, std::span<const LanePart> parts, Space space, AccessKind kind);
  /// Prices the requests still open (lanes that skipped an access) and
  /// starts the next CTA.
  void finishCta();
  /// By site, in site order.
  std::vector<SiteTraffic> totals() const;

private:
  /// A site's accesses of one space and kind (cp.async's global reads and
  /// shared writes are counted apart: a masked-off lane makes only the latter).
  static uint64_t slotOf(uint32_t site, Space space, AccessKind kind) {
    return uint64_t(site) << 8 | uint64_t(space) << 4 | uint64_t(kind);
  }
  struct Key {
    int warp;
    uint64_t slot;
    uint32_t execution;
    bool operator<(const Key &o) const {
      return std::tie(warp, slot, execution) < std::tie(o.warp, o.slot, o.execution);
    }
  };
  struct Open {
    uint32_t site;
    Space space;
    AccessKind kind;
    std::vector<LanePart> parts;
  };
  void price(uint32_t site, Space space, AccessKind kind, std::span<const LanePart> parts);

  std::vector<std::unordered_map<uint64_t, uint32_t>> executions_; // per thread, per slot
  std::map<Key, Open> open_;
  std::map<std::tuple<uint32_t, Space, AccessKind>, SiteTraffic> totals_;
};

/// A warp collective's request (ldmatrix's, stmatrix's rows) in the current
/// CTA's memory profile (nothing without one).
void profileRequest(uint32_t site, std::span<const LanePart> parts, Space space, AccessKind kind);

/// The profile as a table, the costliest sites first: per site its
/// requests, bytes, transactions against the ideal, and what and where it
/// is (`sites`: the kernel's site table).
std::string formatMemoryProfile(const std::string &kernel, const std::vector<SiteTraffic> &traffic,
                                const std::vector<Site> &sites);

} // namespace tegula::sim
