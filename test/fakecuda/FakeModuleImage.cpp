//===- FakeModuleImage.cpp - the fake driver's reading of module images --===//
#include "FakeModuleImage.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>

namespace tegula::fakecuda {
namespace {

size_t ptxTypeBytes(std::string_view type) {
  if (type == ".u8" || type == ".s8" || type == ".b8")
    return 1;
  if (type == ".u16" || type == ".s16" || type == ".b16" || type == ".f16")
    return 2;
  if (type == ".u32" || type == ".s32" || type == ".b32" || type == ".f32")
    return 4;
  if (type == ".u64" || type == ".s64" || type == ".b64" || type == ".f64")
    return 8;
  return 0;
}

/// `fn(word)` for each whitespace-separated word of `text`.
template <class Fn> void forEachWord(std::string_view text, Fn fn) {
  for (size_t pos = 0; pos < text.size();) {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
    size_t end = pos;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])))
      ++end;
    if (end > pos)
      fn(text.substr(pos, end - pos));
    pos = end;
  }
}

/// The count of a declaration's `[N]`, 1 without one.
size_t arrayCount(std::string_view word) {
  const size_t open = word.find('[');
  return open == std::string_view::npos ? 1 : std::strtoull(std::string(word.substr(open + 1)).c_str(), nullptr, 10);
}

/// One `.param ...` declaration of an entry's parameter list.
Parameter parseParameter(std::string_view decl) {
  Parameter p;
  size_t count = 1;
  forEachWord(decl, [&](std::string_view word) {
    if (size_t bytes = ptxTypeBytes(word))
      p.bytes = bytes;
    else if (word == ".ptr")
      p.pointer = true;
    else if (word.find('[') != std::string_view::npos)
      count = arrayCount(word);
  });
  p.bytes *= count;
  p.tensorMap = count == 128 && p.bytes == 128;
  return p;
}

} // namespace

/// The entries of a PTX module: parameter lists and thread limits.
std::map<std::string, std::unique_ptr<Function>> parsePtx(std::string_view ptx) {
  std::map<std::string, std::unique_ptr<Function>> out;
  for (size_t at = ptx.find(".entry "); at != std::string_view::npos;
       at = ptx.find(".entry ", at + 1)) {
    size_t open = ptx.find('(', at), close = ptx.find(')', open);
    size_t body = ptx.find('{', close);
    if (open == std::string_view::npos || close == std::string_view::npos ||
        body == std::string_view::npos)
      break;
    auto fn = std::make_unique<Function>();
    std::string_view name = ptx.substr(at + 7, open - at - 7);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
      name.remove_suffix(1);
    fn->name = std::string(name);
    std::string_view list = ptx.substr(open + 1, close - open - 1);
    for (size_t p = list.find(".param"); p != std::string_view::npos; p = list.find(".param", p + 1)) {
      size_t end = std::min(list.find(',', p), list.size());
      fn->params.push_back(parseParameter(list.substr(p + 6, end - p - 6)));
    }
    std::string_view directives = ptx.substr(close + 1, body - close - 1);
    if (size_t at2 = directives.find(".maxnreg"); at2 != std::string_view::npos)
      fn->registers = std::atoi(std::string(directives.substr(at2 + 8)).c_str());
    for (const char *d : {".maxntid", ".reqntid"})
      if (size_t at2 = directives.find(d); at2 != std::string_view::npos) {
        // ".maxntid 384, 1, 1" or ".maxntid 384": missing dimensions are 1.
        std::string rest(directives.substr(at2 + std::strlen(d)));
        const char *c = rest.c_str();
        for (int i = 0; i < 3; ++i) {
          char *next = nullptr;
          unsigned long v = std::strtoul(c, &next, 10);
          fn->maxThreads[i] = next == c ? 1 : unsigned(v);
          c = next;
          while (*c == ' ' || *c == '\t')
            ++c;
          if (*c != ',')
            c = "";
          else
            ++c;
        }
      }
    out[fn->name] = std::move(fn);
  }
  return out;
}

/// The kernels of a cubin (ELF): one `.text.NAME` section each; parameter
/// sizes, offsets and thread limits from `.nv.info.NAME`, whose entries are
/// {format, attribute, u16 value or payload size}: KPARAM_INFO (0x17) holds
/// {u32 index, u16 ordinal, u16 offset, u32 flags} with the size in
/// flags >> 18 and 0x400 set for a parameter the PTX declared `.ptr` (as
/// ptxas 13 writes them); MAX_THREADS (0x05) holds .maxntid's three values.
/// The register counts are in the module's `.nv.info`: REGCOUNT (0x2f)
/// holds {u32 symbol, u32 registers}, the symbol a `.text.NAME` section's
/// sh_info names.
std::map<std::string, std::unique_ptr<Function>> parseCubin(const char *elf) {
  auto read = [&](uint64_t at, auto &value) { std::memcpy(&value, elf + at, sizeof value); };
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  read(0x28, shoff);
  read(0x3A, shentsize);
  read(0x3C, shnum);
  read(0x3E, shstrndx);
  auto section = [&](uint16_t i, uint32_t &name, uint64_t &offset, uint64_t &size) {
    const uint64_t sh = shoff + uint64_t(i) * shentsize;
    read(sh, name);
    read(sh + 0x18, offset);
    read(sh + 0x20, size);
  };
  uint32_t unused;
  uint64_t namesAt, namesSize;
  section(shstrndx, unused, namesAt, namesSize);
  std::map<std::string, std::unique_ptr<Function>> out;
  std::map<std::string, std::pair<uint64_t, uint64_t>> infos;
  std::map<uint32_t, Function *> bySymbol;
  std::map<uint32_t, int> registers; // by symbol
  for (uint16_t i = 0; i < shnum; ++i) {
    uint32_t name;
    uint64_t offset, size;
    section(i, name, offset, size);
    std::string_view sectionName(elf + namesAt + name);
    if (sectionName.starts_with(".text.")) {
      auto fn = std::make_unique<Function>();
      fn->name = std::string(sectionName.substr(6));
      uint32_t symbol;
      read(shoff + uint64_t(i) * shentsize + 0x2C, symbol); // sh_info: the symbol (older
      bySymbol[symbol & 0xffffff] = fn.get();                // toolchains: registers in bits 24-31)
      out[fn->name] = std::move(fn);
    } else if (sectionName.starts_with(".nv.info.")) {
      infos[std::string(sectionName.substr(9))] = {offset, size};
    } else if (sectionName == ".nv.info") {
      for (uint64_t at = offset, end = offset + size; at + 4 <= end;) {
        uint8_t format, attribute;
        uint16_t value;
        read(at, format);
        read(at + 1, attribute);
        read(at + 2, value);
        if (format == 0x04 && attribute == 0x2f && value >= 8) {
          uint32_t symbol, count;
          read(at + 4, symbol);
          read(at + 8, count);
          registers[symbol] = int(count);
        }
        at += 4 + (format == 0x04 ? value : 0);
      }
    }
  }
  for (auto [symbol, count] : registers)
    if (auto fn = bySymbol.find(symbol); fn != bySymbol.end())
      fn->second->registers = count;
  for (auto &[name, fn] : out) {
    auto info = infos.find(name);
    if (info == infos.end())
      continue;
    std::map<uint16_t, Parameter> byOrdinal;
    for (uint64_t at = info->second.first, end = at + info->second.second; at + 4 <= end;) {
      uint8_t format, attribute;
      uint16_t value;
      read(at, format);
      read(at + 1, attribute);
      read(at + 2, value);
      const uint64_t payload = at + 4;
      at = payload + (format == 0x04 ? value : 0);
      if (format == 0x04 && attribute == 0x17 && value >= 12) {
        uint16_t ordinal;
        uint32_t flags;
        read(payload + 4, ordinal);
        read(payload + 8, flags);
        Parameter p;
        p.bytes = flags >> 18;
        p.pointer = (flags & 0x400) != 0;
        p.tensorMap = p.bytes == 128;
        byOrdinal[ordinal] = p;
      } else if (format == 0x04 && attribute == 0x05 && value >= 12) {
        for (int d = 0; d < 3; ++d)
          read(payload + 4 * uint64_t(d), fn->maxThreads[d]);
      }
    }
    for (auto &[ordinal, p] : byOrdinal)
      fn->params.push_back(p);
  }
  return out;
}

/// Definitions `[.visible] .global [.align N] .TYPE NAME[[COUNT]][ = ...];`,
/// one a line (as LLVM writes them); declarations of others' (.extern) are not.
std::map<std::string, size_t> parsePtxGlobals(std::string_view ptx) {
  std::map<std::string, size_t> out;
  for (size_t at = ptx.find(".global "); at != std::string_view::npos; at = ptx.find(".global ", at + 1)) {
    const size_t lineStart = ptx.rfind('\n', at) + 1; // npos + 1 == 0
    const size_t end = std::min(ptx.find_first_of(";=", at), ptx.find('\n', at));
    std::string_view before = ptx.substr(lineStart, at - lineStart);
    if (before.find_first_not_of(" \t") != std::string_view::npos && before.find(".visible") == std::string_view::npos)
      continue; // an instruction (ld.global ...), not a declaration
    std::string_view decl = ptx.substr(at + 8, end == std::string_view::npos ? std::string_view::npos : end - at - 8);
    size_t bytes = 0, count = 1;
    std::string name;
    forEachWord(decl, [&](std::string_view word) {
      if (size_t b = ptxTypeBytes(word)) {
        bytes = b;
      } else if (word[0] != '.' && !std::isdigit(static_cast<unsigned char>(word[0]))) {
        name = std::string(word.substr(0, word.find('[')));
        count = arrayCount(word);
      }
    });
    if (!name.empty() && bytes)
      out[name] = bytes * count;
  }
  return out;
}

/// The `.symtab` section's objects (STT_OBJECT), named in its linked string table.
std::map<std::string, size_t> parseCubinGlobals(const char *elf) {
  auto read = [&](uint64_t at, auto &value) { std::memcpy(&value, elf + at, sizeof value); };
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  read(0x28, shoff);
  read(0x3A, shentsize);
  read(0x3C, shnum);
  std::map<std::string, size_t> out;
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + uint64_t(i) * shentsize;
    uint32_t type = 0, link = 0;
    uint64_t offset = 0, size = 0, entsize = 0;
    read(sh + 0x04, type);
    read(sh + 0x18, offset);
    read(sh + 0x20, size);
    read(sh + 0x28, link);
    read(sh + 0x38, entsize);
    if (type != 2 /* SHT_SYMTAB */ || entsize < 24)
      continue;
    uint64_t stringsAt = 0;
    read(shoff + uint64_t(link) * shentsize + 0x18, stringsAt);
    for (uint64_t at = offset; at + 24 <= offset + size; at += entsize) {
      uint32_t name = 0;
      uint8_t info = 0;
      uint16_t section = 0;
      uint64_t bytes = 0;
      read(at, name);
      read(at + 4, info);
      read(at + 6, section);
      read(at + 16, bytes);
      if ((info & 0xf) == 1 /* STT_OBJECT */ && section != 0 /* SHN_UNDEF: another module's */)
        out[std::string(elf + stringsAt + name)] = size_t(bytes);
    }
  }
  return out;
}

} // namespace tegula::fakecuda
