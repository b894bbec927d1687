//===- MemoryProfile.cpp - access sites priced as warp-wide requests ------===//
#include "simulator/MemoryProfile.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

namespace tegula::sim {
namespace {

/// The distinct bytes of `parts`: their ranges, sorted and merged.
std::vector<std::pair<uintptr_t, uintptr_t>> distinctRanges(std::span<const LanePart> parts) {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (const LanePart &p : parts)
    if (p.bytes)
      ranges.push_back({p.address, p.address + p.bytes});
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uintptr_t, uintptr_t>> merged;
  for (auto r : ranges)
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  return merged;
}

uint64_t totalBytes(const std::vector<std::pair<uintptr_t, uintptr_t>> &ranges) {
  uint64_t n = 0;
  for (auto [begin, end] : ranges)
    n += end - begin;
  return n;
}

constexpr uint64_t kSectorBytes = 32, kWavefrontBytes = 128, kBanks = 32, kBankBytes = 4;

const char *spaceName(Space s) { return s == Space::Global ? "global" : "shared"; }
const char *kindName(AccessKind k) {
  return k == AccessKind::Read ? "read" : k == AccessKind::Write ? "write" : "atomic";
}

} // namespace

std::pair<uint64_t, uint64_t> globalSectors(std::span<const LanePart> parts, uint64_t &bytes) {
  const auto ranges = distinctRanges(parts);
  bytes = totalBytes(ranges);
  uint64_t sectors = 0;
  uintptr_t counted = 0; // sectors below this are counted
  for (auto [begin, end] : ranges) {
    uintptr_t first = std::max<uintptr_t>(begin / kSectorBytes, counted), last = (end - 1) / kSectorBytes;
    if (last >= first)
      sectors += last - first + 1;
    counted = std::max<uintptr_t>(counted, last + 1);
  }
  return {sectors, (bytes + kSectorBytes - 1) / kSectorBytes};
}

std::pair<uint64_t, uint64_t> sharedWavefronts(std::span<const LanePart> parts, uint64_t &bytes) {
  uint32_t widest = 1;
  for (const LanePart &p : parts)
    widest = std::max(widest, p.bytes);
  // Lanes a 128-byte phase serves: 32 of up to 4 bytes, 16 of 8, 8 of 16.
  const int lanesPerPhase = int(kWavefrontBytes / std::max<uint64_t>(widest, kBankBytes));
  std::map<int, std::vector<LanePart>> phases;
  for (const LanePart &p : parts)
    phases[p.lane / std::max(lanesPerPhase, 1)].push_back(p);
  uint64_t wavefronts = 0, ideal = 0;
  bytes = 0;
  for (auto &[phase, lanes] : phases) {
    std::array<std::set<uintptr_t>, kBanks> words; // per bank, the distinct words asked of it
    for (const LanePart &p : lanes)
      for (uintptr_t w = p.address / kBankBytes; w <= (p.address + std::max<uint32_t>(p.bytes, 1) - 1) / kBankBytes;
           ++w)
        words[w % kBanks].insert(w);
    size_t most = 0;
    for (const auto &bank : words)
      most = std::max(most, bank.size());
    const uint64_t phaseBytes = totalBytes(distinctRanges(lanes));
    bytes += phaseBytes;
    wavefronts += most;
    ideal += (phaseBytes + kWavefrontBytes - 1) / kWavefrontBytes;
  }
  return {wavefronts, ideal};
}

void MemoryProfile::access(int thread, uint32_t site, uintptr_t address, size_t bytes, Space space,
                           AccessKind kind) {
  const uint64_t slot = slotOf(site, space, kind);
  const uint32_t execution = executions_[size_t(thread)][slot]++;
  const Key key{thread / kWarpSize, slot, execution};
  Open &open = open_[key];
  open.site = site;
  open.space = space;
  open.kind = kind;
  open.parts.push_back({address, uint32_t(bytes), thread % kWarpSize});
  if (open.parts.size() == size_t(kWarpSize)) { // every lane is in: price it now
    price(site, space, kind, open.parts);
    open_.erase(key);
  }
}

void MemoryProfile::request(uint32_t site, std::span<const LanePart> parts, Space space, AccessKind kind) {
  price(site, space, kind, parts);
}

void MemoryProfile::price(uint32_t site, Space space, AccessKind kind, std::span<const LanePart> parts) {
  SiteTraffic &t = totals_[{site, space, kind}];
  t.site = site, t.space = space, t.kind = kind;
  uint64_t bytes = 0;
  auto [transactions, ideal] = space == Space::Global ? globalSectors(parts, bytes) : sharedWavefronts(parts, bytes);
  ++t.requests;
  t.bytes += bytes;
  t.transactions += transactions;
  t.ideal += ideal;
}

void MemoryProfile::finishCta() {
  for (auto &[key, open] : open_)
    price(open.site, open.space, open.kind, open.parts);
  open_.clear();
  for (auto &counts : executions_)
    counts.clear();
}

std::vector<SiteTraffic> MemoryProfile::totals() const {
  std::vector<SiteTraffic> out;
  for (const auto &[key, t] : totals_)
    out.push_back(t);
  return out;
}

std::string formatMemoryProfile(const std::string &kernel, const std::vector<SiteTraffic> &traffic,
                                const std::vector<Site> &sites) {
  // One row per instruction text and source line (a line's tile access is
  // several instructions, one per register group, each its own site).
  struct Row {
    SiteTraffic t;
    int instructions = 0;
    std::string where;
  };
  std::map<std::tuple<Space, AccessKind, std::string>, Row> byText;
  uint64_t sectors = 0, idealSectors = 0, wavefronts = 0, idealWavefronts = 0;
  for (const SiteTraffic &t : traffic) {
    (t.space == Space::Global ? sectors : wavefronts) += t.transactions;
    (t.space == Space::Global ? idealSectors : idealWavefronts) += t.ideal;
    std::string where;
    if (t.site < sites.size())
      where = sites[t.site].location.empty() ? sites[t.site].what
                                              : fmt::format("{} at {}", sites[t.site].what, sites[t.site].location);
    Row &row = byText[{t.space, t.kind, where}];
    row.where = where;
    row.t.space = t.space, row.t.kind = t.kind;
    row.t.requests += t.requests, row.t.bytes += t.bytes, row.t.transactions += t.transactions,
        row.t.ideal += t.ideal;
    ++row.instructions;
  }
  std::vector<Row> rows;
  for (auto &[key, row] : byText)
    rows.push_back(row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row &a, const Row &b) { return a.t.transactions > b.t.transactions; });
  auto percent = [](uint64_t ideal, uint64_t actual) { return actual ? 100.0 * double(ideal) / double(actual) : 100.0; };
  std::string out = fmt::format(
      "[tegula sim] memory profile of '{}': global {} sectors of 32 bytes ({:.1f}% of them needed), shared {} "
      "wavefronts ({:.1f}% needed; the rest are bank conflicts)\n",
      kernel, sectors, percent(idealSectors, sectors), wavefronts, percent(idealWavefronts, wavefronts));
  out += fmt::format("  {:<6} {:<6} {:>10} {:>12} {:>12} {:>12} {:>7}  {}\n", "space", "kind", "requests", "bytes",
                     "sectors/wf", "ideal", "needed", "instructions x site");
  for (const Row &r : rows)
    out += fmt::format("  {:<6} {:<6} {:>10} {:>12} {:>12} {:>12} {:>6.1f}%  {} x {}\n", spaceName(r.t.space),
                       kindName(r.t.kind), r.t.requests, r.t.bytes, r.t.transactions, r.t.ideal,
                       percent(r.t.ideal, r.t.transactions), r.instructions, r.where);
  return out;
}

} // namespace tegula::sim
