//===- AsyncGlobal.cpp - global bytes asynchronous copies still use -------===//
#include "simulator/AsyncGlobal.h"

#include "simulator/RuntimeInternal.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tegula::sim {
namespace {

struct Use {
  uintptr_t begin = 0, end = 0;
  AsyncGlobalUse use = AsyncGlobalUse::ReadByCopy;
  uint32_t site = 0;
  int thread = 0;
};

/// Ranges of one use by first byte: cp.async sources (16 bytes at most) and
/// bulk stores' runs (a box's rows) apart, so that a query looks back only
/// as far as each kind's longest range.
struct Index {
  std::multimap<uintptr_t, uint64_t> byBegin;
  size_t longest = 0; // the longest range ever added: how far back a query looks
};

/// The CTA's bytes in use, by token and by first byte.
struct State {
  std::map<uint64_t, Use> byToken;
  Index index[2]; // by AsyncGlobalUse
  uint64_t next = 1;
};

State *existing() { return static_cast<State *>(ctaExtension(CtaExtension::AsyncGlobal).get()); }

} // namespace

uint64_t asyncGlobalBegin(const void *p, size_t bytes, AsyncGlobalUse use, uint32_t site) {
  std::shared_ptr<void> &ext = ctaExtension(CtaExtension::AsyncGlobal);
  if (!ext)
    ext = std::make_shared<State>();
  State &s = *static_cast<State *>(ext.get());
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uint64_t token = s.next++;
  s.byToken[token] = Use{begin, begin + bytes, use, site, threadId()};
  Index &index = s.index[size_t(use)];
  index.byBegin.emplace(begin, token);
  index.longest = std::max(index.longest, bytes);
  return token;
}

void asyncGlobalEnd(uint64_t token) {
  State *s = existing();
  if (!s)
    return;
  auto it = s->byToken.find(token);
  if (it == s->byToken.end())
    return;
  Index &index = s->index[size_t(it->second.use)];
  auto [first, last] = index.byBegin.equal_range(it->second.begin);
  for (auto b = first; b != last; ++b)
    if (b->second == token) {
      index.byBegin.erase(b);
      break;
    }
  s->byToken.erase(it);
}

void checkAsyncGlobal(uintptr_t p, size_t bytes, AccessKind kind, uint32_t site) {
  const State *s = existing();
  if (!s || s->byToken.empty())
    return;
  for (AsyncGlobalUse use : {AsyncGlobalUse::WrittenByBulkStore, AsyncGlobalUse::ReadByCopy}) {
    const Index &index = s->index[size_t(use)];
    if (index.byBegin.empty() || (use == AsyncGlobalUse::ReadByCopy && kind == AccessKind::Read))
      continue; // reading what a cp.async reads is fine
    const uintptr_t from = p > index.longest ? p - index.longest : 0;
    for (auto it = index.byBegin.lower_bound(from); it != index.byBegin.end() && it->first < p + bytes; ++it) {
      const Use &u = s->byToken.at(it->second);
      if (u.end <= p)
        continue;
      const char *verb = kind == AccessKind::Read    ? "reads"
                         : kind == AccessKind::Write ? "writes"
                                                     : "atomically updates";
      const uintptr_t at = std::max(p, u.begin);
      if (use == AsyncGlobalUse::WrittenByBulkStore)
        fail(site, fmt::format("{} global bytes (offset {} of the {}-byte access) that the "
                               "cp.async.bulk.tensor store at {} (thread {}) may still be writing: "
                               "that thread's cp.async.bulk.wait_group (not .read) for it, then a "
                               "barrier, must come first",
                               verb, at - p, bytes, siteDescription(u.site), u.thread));
      fail(site, fmt::format("{} global bytes (offset {} of the {}-byte access) that the cp.async at {} "
                             "(thread {}) may still be reading: its cp.async.wait_group, then a barrier, "
                             "must come first",
                             verb, at - p, bytes, siteDescription(u.site), u.thread));
    }
  }
}

} // namespace tegula::sim
