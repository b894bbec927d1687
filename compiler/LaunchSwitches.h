//===- LaunchSwitches.h - the TEGULA_* switches a launch reads ---*- C++ -*-===//
//
// The environment variables that change which code a launch or compile gets
// (TEGULA_BACKEND, TEGULA_WGMMA, TEGULA_CLUSTER_SIZE, ...), read in one pass
// over the environment, and the code paths they allow. Internal to
// compiler/Kernel.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/error.h"

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <unistd.h> // environ

namespace tegula::detail {

/// The code paths the TEGULA_WGMMA / TEGULA_TMA / TEGULA_OVERLAP_DOTS /
/// TEGULA_WARPGROUP_TURNS switches allow (all but warpgroup-turns by
/// default: it lost 4% on H100s, Pipeline.h).
struct CodePaths {
  bool wgmma = true, tma = true, overlapDots = true, warpgroupTurns = false;
  auto key() const { return std::tuple(wgmma, tma, overlapDots, warpgroupTurns); }
};

/// The TEGULA_* switches a launch reads, found in one pass over the
/// environment. They are read at every launch (a program may change them
/// between launches - the gemm benchmark flips TEGULA_WGMMA), and four
/// getenv calls cost a sixth of a launch's host time.
struct Switches {
  const char *backend = nullptr; // TEGULA_BACKEND
  const char *simChip = nullptr; // TEGULA_SIM_CHIP
  /// TEGULA_WGMMA=0: dots stay on mma.sync on sm_90a too (a way around the
  /// wgmma path, should it misbehave on a GPU).
  bool wgmmaOff = false;
  /// TEGULA_TMA=0: tensor descriptors use masked loads on sm_90a too.
  bool tmaOff = false;
  /// TEGULA_OVERLAP_DOTS=0: no overlap-chained-dots on sm_90a.
  bool overlapDotsOff = false;
  /// TEGULA_WARPGROUP_TURNS=1: warpgroup-turns on sm_90a (off otherwise).
  bool warpgroupTurnsOn = false;
  /// TEGULA_WARP_SPECIALIZE=1: every launch and compile asks for it.
  bool warpSpecialize = false;
  /// TEGULA_PING_PONG=1: likewise for ping-pong (and warp specialisation).
  bool pingPong = false;
  /// TEGULA_CLUSTER_SIZE=N: launches without a cluster size of their own ask
  /// for N (the text; checked where it is used).
  const char *clusterSize = nullptr;

  static Switches read() {
    Switches s;
    constexpr std::string_view prefix = "TEGULA_";
    for (char **e = environ; e && *e; ++e) {
      // No strlen of every variable: most fail at the first byte.
      if ((*e)[0] != 'T' || std::strncmp(*e, prefix.data(), prefix.size()) != 0)
        continue;
      const std::string_view rest(*e + prefix.size());
      const size_t eq = rest.find('=');
      if (eq == std::string_view::npos)
        continue;
      const std::string_view name = rest.substr(0, eq), value = rest.substr(eq + 1);
      if (name == "BACKEND")
        s.backend = *e + prefix.size() + eq + 1;
      else if (name == "SIM_CHIP")
        s.simChip = *e + prefix.size() + eq + 1;
      else if (name == "WGMMA")
        s.wgmmaOff = value == "0";
      else if (name == "TMA")
        s.tmaOff = value == "0";
      else if (name == "OVERLAP_DOTS")
        s.overlapDotsOff = value == "0";
      else if (name == "WARPGROUP_TURNS")
        s.warpgroupTurnsOn = value == "1";
      else if (name == "WARP_SPECIALIZE")
        s.warpSpecialize = value == "1";
      else if (name == "PING_PONG")
        s.pingPong = value == "1";
      else if (name == "CLUSTER_SIZE")
        s.clusterSize = *e + prefix.size() + eq + 1;
    }
    return s;
  }

  CodePaths paths() const { return {!wgmmaOff, !tmaOff, !overlapDotsOff, warpgroupTurnsOn}; }
  /// The cluster size kernel `name` runs at: `requested` (0: unset), else
  /// TEGULA_CLUSTER_SIZE's, else 1 - and 1 for a kernel that does not use
  /// clusters (`uses`: no tl::multicast load, no tl::cluster_size()).
  int clusterSizeFor(int requested, bool uses, bool pingPong, const std::string &name) const {
    int size = requested;
    if (size == 0 && clusterSize && *clusterSize) {
      const std::string_view text(clusterSize);
      if (text != "1" && text != "2" && text != "4")
        throw Error(fmt::format("TEGULA_CLUSTER_SIZE={} is not a cluster size: use 1, 2 or 4 CTAs per cluster",
                                text));
      size = text[0] - '0';
    }
    size = size == 0 ? 1 : size;
    if (size != 1 && size != 2 && size != 4)
      throw Error(fmt::format("kernel '{}': cluster_size {} is not supported: use 1, 2 or 4 CTAs per cluster", name,
                              size));
    if (!uses)
      return 1;
    if (size > 1 && pingPong)
      throw Error(fmt::format("kernel '{}': cluster_size {} with ping_pong is not supported (two programs a CTA "
                              "would each need their own multicast rings): use one of them",
                              name, size));
    return size;
  }
};

} // namespace tegula::detail
