//===- PtxAsmParse.cpp - parse the inline PTX subset ---------------------===//
#include "simulator/PtxAsmAlu.h"
#include "simulator/PtxAsmInstruction.h"

#include "simulator/Runtime.h"
#include "simulator/Tma.h"
#include "simulator/Wgmma.h"
#include "tegula/dtype.h"
#include "tegula/error.h"

#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <limits>
#include <optional>
#include <algorithm>

#include <fmt/format.h>

namespace tegula::sim {

using namespace ptx;

namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// Split at `sep` outside `{...}` and `[...]` (nested: vector operands).
/// Statements are split with nested = false: scope braces span statements.
std::vector<std::string> split(const std::string &s, char sep, bool nested = true) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char ch : s) {
    if (nested)
      depth += (ch == '{' || ch == '[') - (ch == '}' || ch == ']');
    if (ch == sep && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!trim(cur).empty())
    out.push_back(trim(cur));
  return out;
}

bool isIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%'; }

/// Registers: $N operands first (outputs, then inputs), then declared `%name`s.
struct Parser {
  std::string body;
  size_t numOperands = 0;
  std::map<std::string, int> declared;
  std::map<std::string, size_t> labels;
  std::vector<std::pair<size_t, std::string>> branchFixups; // instruction, label
  int nextRegister = 0;

  [[noreturn]] void unsupported(const std::string &what) const {
    throw Error(fmt::format("simulator: inline PTX not supported: {}\n  in:\n{}", what, body));
  }

  int registerOf(const std::string &name) {
    if (name.size() > 1 && name[0] == '$' && std::isdigit(static_cast<unsigned char>(name[1]))) {
      size_t n = std::stoul(name.substr(1));
      if (n >= numOperands)
        unsupported(fmt::format("operand {} (the asm has {})", name, numOperands));
      return int(n);
    }
    auto it = declared.find(name);
    if (it == declared.end())
      unsupported(fmt::format("undeclared register '{}'", name));
    return it->second;
  }

  Operand operand(const std::string &text) {
    Operand o;
    std::string t = trim(text);
    if (t.empty())
      unsupported("empty operand");
    if (t.front() == '{') {
      o.form = Operand::Vector;
      for (const std::string &r : split(t.substr(1, t.size() - 2), ','))
        o.regs.push_back(registerOf(r));
    } else if (t.front() == '[') {
      o.form = Operand::Address;
      std::string inner = trim(t.substr(1, t.size() - 2));
      size_t plus = inner.find('+');
      o.reg = registerOf(trim(inner.substr(0, plus)));
      if (plus != std::string::npos)
        o.value = std::stoll(trim(inner.substr(plus + 1)), nullptr, 0);
    } else if (t == "%cluster_ctarank" || t == "%cluster_nctarank") {
      o.form = Operand::Special;
      o.value = t == "%cluster_nctarank";
    } else if (t.front() == '$' || t.front() == '%' || declared.count(t)) { // `.reg .f32 t;` names need no %
      o.form = Operand::Register;
      o.reg = registerOf(t);
    } else if (t.size() > 2 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F' || t[1] == 'd' || t[1] == 'D')) {
      // 0f3F800000 (f32 bits), 0d3FF0000000000000 (f64 bits)
      o.floatBits = (t[1] == 'f' || t[1] == 'F') ? 32 : 64;
      o.value = int64_t(std::stoull(t.substr(2), nullptr, 16));
    } else if ((std::isdigit(static_cast<unsigned char>(t.front())) || t.front() == '-') &&
               t.find_first_of(".eE") != std::string::npos && t.find_first_of("xX") == std::string::npos) {
      o.floatBits = 64; // a decimal float literal: a double
      o.value = std::bit_cast<int64_t>(std::stod(t));
    } else if (std::isdigit(static_cast<unsigned char>(t.front())) || t.front() == '-') {
      o.value = std::stoll(t, nullptr, 0);
    } else {
      o.form = Operand::Label;
    }
    return o;
  }

  static bool typeSuffix(const std::string &s, Kind &kind, unsigned &bits) {
    if (s.size() < 2 || !std::isdigit(static_cast<unsigned char>(s[1])))
      return false;
    switch (s[0]) {
    case 'b': kind = Kind::Bits; break;
    case 's': kind = Kind::Signed; break;
    case 'u': kind = Kind::Unsigned; break;
    case 'f': kind = Kind::Float; break;
    default: return false;
    }
    if (!std::all_of(s.begin() + 1, s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return false; // .f16x2 is a pair, not a half
    bits = unsigned(std::stoul(s.substr(1)));
    return bits == 8 || bits == 16 || bits == 32 || bits == 64;
  }

  /// wgmma.*, fence.proxy.async, mbarriers, bulk copies, named barriers and
  /// setmaxnreg (their own qualifiers).
  AsmProgram::Instruction asyncInstruction(const std::string &opcode, const std::string &operands,
                                           const std::string &stmt) {
    AsmProgram::Instruction in;
    in.text = stmt;
    std::vector<std::string> parts = split(opcode, '.');
    std::vector<Operand> ops;
    for (const std::string &o : split(operands, ','))
      ops.push_back(operand(o));
    auto expect = [&](size_t n) {
      if (ops.size() != n)
        unsupported(fmt::format("'{}' has {} operands, expected {}", stmt, ops.size(), n));
    };
    if (opcode == "fence.proxy.async.shared::cta" || opcode == "fence.proxy.async") {
      in.op = Op::FenceProxyAsync;
      expect(0);
    } else if (opcode == "fence.proxy.async.global") {
      // Generic global writes before it are visible to the async proxy (a
      // TMA copy reading them) after it; the simulator's global memory is
      // one, so there is nothing to do.
      in.op = Op::FenceProxyAsyncGlobal;
      expect(0);
    } else if (opcode == "wgmma.fence.sync.aligned") {
      in.op = Op::WgmmaFence;
      expect(0);
    } else if (opcode == "wgmma.commit_group.sync.aligned") {
      in.op = Op::WgmmaCommit;
      expect(0);
    } else if (opcode == "wgmma.wait_group.sync.aligned") {
      in.op = Op::WgmmaWait;
      expect(1);
      if (ops[0].form != Operand::Immediate)
        unsupported(fmt::format("'{}': the group count is an immediate", stmt));
      in.waitPending = int(ops[0].value);
    } else if (parts.size() == 8 && parts[1] == "mma_async" && parts[2] == "sync" &&
               parts[3] == "aligned") {
      in.op = Op::WgmmaMma;
      const std::string &shape = parts[4], &dtype = parts[5], &atype = parts[6];
      static const std::map<std::string, MmaKind> kinds = {
          {"bf16", MmaKind::BF16}, {"f16", MmaKind::F16}, {"tf32", MmaKind::TF32},
          {"e4m3", MmaKind::E4M3}, {"e5m2", MmaKind::E5M2}, {"s8", MmaKind::S8}};
      const bool integer = atype == "s8";
      if (dtype != (integer ? "s32" : "f32") || parts[7] != atype || !kinds.count(atype))
        unsupported(fmt::format("'{}' (the simulator models f32 += {{bf16, f16, tf32, e4m3, e5m2}} "
                                "and s32 += s8 products of one type)",
                                opcode));
      in.mmaKind = kinds.at(atype);
      const bool eight = in.mmaKind == MmaKind::E4M3 || in.mmaKind == MmaKind::E5M2 || integer;
      const int k = in.mmaKind == MmaKind::TF32 ? 8 : eight ? 32 : 16;
      size_t npos = shape.find('n'), kpos = shape.find('k');
      if (shape.rfind("m64n", 0) != 0 || kpos == std::string::npos ||
          std::stoi(shape.substr(kpos + 1)) != k)
        unsupported(fmt::format("'{}' (shape .{})", opcode, shape));
      in.wgmmaN = std::stoi(shape.substr(npos + 1, kpos - npos - 1));
      const bool sixteen = in.mmaKind == MmaKind::BF16 || in.mmaKind == MmaKind::F16;
      // A from registers ({a0..a3}) has no imm-trans-a.
      in.aFromRegisters = ops.size() > 1 && ops[1].form == Operand::Vector;
      // Integer wgmma has scale-d alone: no imm-scale-a/b, no transposes.
      expect(integer ? 4 : (sixteen ? 8 : 6) - (in.aFromRegisters && sixteen ? 1 : 0));
      if (ops[0].form != Operand::Vector || ops[0].regs.size() != size_t(in.wgmmaN / 2))
        unsupported(fmt::format("'{}': D is a vector of N/2 = {} registers", stmt, in.wgmmaN / 2));
      if (ops[3].form != Operand::Register && ops[3].form != Operand::Immediate)
        unsupported(fmt::format("'{}': scale-d is a predicate register", stmt));
      if ((in.aFromRegisters ? ops[1].regs.size() != 4 : ops[1].form != Operand::Register) ||
          ops[2].form != Operand::Register)
        unsupported(fmt::format("'{}': A is a descriptor or 4 registers, B a descriptor", stmt));
      for (size_t i = 4; i < ops.size(); ++i)
        if (ops[i].form != Operand::Immediate)
          unsupported(fmt::format("'{}': scales and transposes are immediates", stmt));
      if (!integer && (ops[4].value != 1 || ops[5].value != 1))
        unsupported(fmt::format("'{}': negated operands (imm-scale -1) are not modelled", stmt));
      if (sixteen && in.aFromRegisters)
        in.transB = ops[6].value != 0;
      else if (sixteen)
        in.transA = ops[6].value != 0, in.transB = ops[7].value != 0;
    } else if (opcode == "fence.mbarrier_init.release.cluster") {
      in.op = Op::Nop; // sequential memory: the (cluster) barrier after it orders the init
      expect(0);
    } else if (opcode == "mbarrier.init.shared::cta.b64") {
      in.op = Op::MbarrierInit;
      expect(2);
      requireAddress(ops[0], stmt);
    } else if (opcode == "mbarrier.arrive.shared::cta.b64") {
      in.op = Op::MbarrierArrive;
      expect(2);
      if (ops[0].form != Operand::Label) // `_`: the state is not kept
        unsupported(fmt::format("'{}': the arrival state goes to the sink `_`", stmt));
      requireAddress(ops[1], stmt);
    } else if (opcode == "bar.sync" || opcode == "barrier.sync" || opcode == "barrier.sync.aligned") {
      in.op = Op::NamedBarrier;
      expect(2);
      if (ops[1].form != Operand::Immediate)
        unsupported(fmt::format("'{}': the thread count is an immediate", stmt));
    } else if (opcode == "bar.warp.sync") {
      in.op = Op::WarpSync;
      expect(1);
      if (ops[0].form != Operand::Immediate)
        unsupported(fmt::format("'{}': the lane mask is an immediate", stmt));
    } else if (opcode == "setmaxnreg.inc.sync.aligned.u32" || opcode == "setmaxnreg.dec.sync.aligned.u32") {
      in.op = Op::SetMaxNReg;
      in.increase = opcode == "setmaxnreg.inc.sync.aligned.u32";
      expect(1);
      if (ops[0].form != Operand::Immediate || ops[0].value < 24 || ops[0].value > 256 || ops[0].value % 8)
        unsupported(fmt::format("'{}': the register count is an immediate from 24 to 256, a multiple of 8",
                                stmt));
    } else if (opcode == "mbarrier.arrive.expect_tx.shared::cta.b64") {
      in.op = Op::MbarrierArriveExpectTx;
      expect(3);
      if (ops[0].form != Operand::Label) // `_`: the state is not kept
        unsupported(fmt::format("'{}': the arrival state goes to the sink `_`", stmt));
      requireAddress(ops[1], stmt);
    } else if (opcode == "mbarrier.arrive.release.cluster.shared::cluster.b64" ||
               opcode == "mbarrier.arrive.shared::cluster.b64") { // .release.cta by default
      in.op = Op::MbarrierArriveCluster;
      expect(2);
      if (ops[0].form != Operand::Label) // `_`: the state is not kept
        unsupported(fmt::format("'{}': the arrival state goes to the sink `_`", stmt));
      requireAddress(ops[1], stmt);
    } else if (opcode == "barrier.cluster.arrive" || opcode == "barrier.cluster.arrive.release" ||
               opcode == "barrier.cluster.arrive.aligned" || opcode == "barrier.cluster.arrive.release.aligned") {
      in.op = Op::ClusterArrive;
      expect(0);
    } else if (opcode == "barrier.cluster.wait" || opcode == "barrier.cluster.wait.acquire" ||
               opcode == "barrier.cluster.wait.aligned" || opcode == "barrier.cluster.wait.acquire.aligned") {
      in.op = Op::ClusterWait;
      expect(0);
    } else if (opcode == "mapa.shared::cluster.u64") {
      in.op = Op::Mapa;
      expect(3);
      if (ops[0].form != Operand::Register || ops[1].form != Operand::Register ||
          (ops[2].form != Operand::Register && ops[2].form != Operand::Immediate))
        unsupported(fmt::format("'{}': mapa takes a result register, an address register and a rank", stmt));
    } else if (opcode == "mbarrier.try_wait.parity.shared::cta.b64" ||
               opcode == "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64") {
      in.op = Op::MbarrierTryWait;
      expect(3);
      if (ops[0].form != Operand::Register)
        unsupported(fmt::format("'{}': the result is a predicate register", stmt));
      requireAddress(ops[1], stmt);
    } else if (opcode == "mbarrier.inval.shared::cta.b64") {
      in.op = Op::MbarrierInval;
      expect(1);
      requireAddress(ops[0], stmt);
    } else if ((parts.size() == 9 || (parts.size() == 10 && parts[9] == "multicast::cluster")) &&
               parts[0] == "cp" && parts[1] == "async" && parts[2] == "bulk" &&
               parts[3] == "tensor" && parts[5] == "shared::cluster" && parts[6] == "global" &&
               parts[7] == "tile" && parts[8] == "mbarrier::complete_tx::bytes") {
      // Split at '.': "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
      // then ".multicast::cluster" with a CTA mask as the last operand.
      in.op = Op::BulkTensorLoad;
      in.multicast = parts.size() == 10;
      in.tensorRank = parts[4].size() == 2 && parts[4][1] == 'd' ? parts[4][0] - '0' : 0;
      if (in.tensorRank < 1 || in.tensorRank > 5)
        unsupported(fmt::format("'{}' (rank .{})", opcode, parts[4]));
      // [dst], [map, {c0, ...}], [bar] (, mask)
      std::vector<std::string> raw = split(operands, ',');
      if (raw.size() != (in.multicast ? 4u : 3u))
        unsupported(fmt::format("'{}' has {} operands, expected {}", stmt, raw.size(), in.multicast ? 4 : 3));
      std::string inner = trim(raw[1]);
      std::vector<std::string> mapAndCoords = split(inner.substr(1, inner.size() - 2), ',');
      if (inner.front() != '[' || mapAndCoords.size() != 2)
        unsupported(fmt::format("'{}': the source is [tensor map, {{coordinates}}]", stmt));
      ops = {operand(raw[0]), operand(mapAndCoords[0]), operand(mapAndCoords[1]), operand(raw[2])};
      if (in.multicast) {
        ops.push_back(operand(raw[3]));
        if (ops[4].form != Operand::Register && ops[4].form != Operand::Immediate)
          unsupported(fmt::format("'{}': the CTA mask is a register or an immediate", stmt));
      }
      requireAddress(ops[0], stmt);
      requireAddress(ops[3], stmt);
      if (ops[1].form != Operand::Register || ops[2].form != Operand::Vector ||
          ops[2].regs.size() != size_t(in.tensorRank))
        unsupported(fmt::format("'{}': a tensor-map register and {} coordinate registers", stmt,
                                in.tensorRank));
    } else if (parts.size() == 8 && parts[0] == "cp" && parts[2] == "bulk" && parts[3] == "tensor" &&
               parts[5] == "global" && parts[6] == "shared::cta" && parts[7] == "bulk_group") {
      // cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [map, {c0, ...}], [src]
      in.op = Op::BulkTensorStore;
      in.tensorRank = parts[4].size() == 2 && parts[4][1] == 'd' ? parts[4][0] - '0' : 0;
      if (in.tensorRank < 1 || in.tensorRank > 5)
        unsupported(fmt::format("'{}' (rank .{})", opcode, parts[4]));
      std::vector<std::string> raw = split(operands, ',');
      std::string inner = raw.empty() ? "" : trim(raw[0]);
      std::vector<std::string> mapAndCoords =
          inner.size() > 2 ? split(inner.substr(1, inner.size() - 2), ',') : std::vector<std::string>{};
      if (raw.size() != 2 || inner.front() != '[' || mapAndCoords.size() != 2)
        unsupported(fmt::format("'{}': the operands are [tensor map, {{coordinates}}], [source]", stmt));
      ops = {operand(mapAndCoords[0]), operand(mapAndCoords[1]), operand(raw[1])};
      requireAddress(ops[2], stmt);
      if (ops[0].form != Operand::Register || ops[1].form != Operand::Vector ||
          ops[1].regs.size() != size_t(in.tensorRank))
        unsupported(fmt::format("'{}': a tensor-map register and {} coordinate registers", stmt,
                                in.tensorRank));
    } else if (opcode == "cp.async.bulk.commit_group") {
      in.op = Op::BulkCommit;
      expect(0);
    } else if (opcode == "cp.async.bulk.wait_group.read" || opcode == "cp.async.bulk.wait_group") {
      in.op = opcode == "cp.async.bulk.wait_group" ? Op::BulkWait : Op::BulkWaitRead;
      expect(1);
      if (ops[0].form != Operand::Immediate)
        unsupported(fmt::format("'{}': the group count is an immediate", stmt));
      in.waitPending = int(ops[0].value);
    } else {
      unsupported(fmt::format("instruction '{}'", opcode));
    }
    for (const Operand &o : ops)
      if (o.form == Operand::Special)
        unsupported(fmt::format("'{}': special registers are read by mov alone", stmt));
    in.operands = std::move(ops);
    return in;
  }

  /// createpolicy.fractional.L2::<priority>.b64 d, fraction: an L2 cache
  /// policy for loads and stores that take one. The simulator has no caches:
  /// d is given 0, which those accesses ignore.
  AsmProgram::Instruction cachePolicy(const std::vector<std::string> &parts, const std::string &operands,
                                      const std::string &stmt) {
    static const std::set<std::string> qualifiers = {"fractional", "L2::evict_last", "L2::evict_first",
                                                     "L2::evict_normal", "L2::evict_unchanged", "b64"};
    for (size_t i = 1; i < parts.size(); ++i)
      if (!qualifiers.count(parts[i]))
        unsupported(fmt::format("'{}' (qualifier .{})", stmt, parts[i]));
    std::vector<std::string> ops = split(operands, ',');
    if (ops.size() < 1 || ops.size() > 2)
      unsupported(fmt::format("'{}' needs a destination and a fraction", stmt));
    AsmProgram::Instruction in;
    in.text = stmt;
    in.op = Op::Mov;
    in.bits = 64;
    in.operands = {operand(ops[0]), Operand{}};
    if (in.operands[0].form != Operand::Register)
      unsupported(fmt::format("'{}': the policy goes to a register", stmt));
    return in;
  }

  /// cp.async.{ca,cg}.shared.global{.L2::cache_hint} [dst], [src], size{,
  /// src-size}{, policy}: `in` carries the guard.
  AsmProgram::Instruction asyncCopy(const std::vector<std::string> &parts, const std::string &operands,
                                    const std::string &stmt, AsmProgram::Instruction in) {
    const bool hinted = parts.size() == 6 && parts[5] == "L2::cache_hint";
    if (parts[3] != "shared" || parts[4] != "global" || (parts.size() != 5 && !hinted))
      unsupported(fmt::format("'{}' (cp.async from global to shared memory, with .L2::cache_hint or without)", stmt));
    std::vector<Operand> ops;
    for (const std::string &o : split(operands, ','))
      ops.push_back(operand(o));
    const size_t fixed = 3 + (hinted ? 1 : 0);
    if (ops.size() != fixed && ops.size() != fixed + 1)
      unsupported(fmt::format("'{}': [dst], [src], size, an optional source size{}", stmt,
                              hinted ? " and the cache policy" : ""));
    requireAddress(ops[0], stmt);
    requireAddress(ops[1], stmt);
    if (ops[2].form != Operand::Immediate || (ops[2].value != 4 && ops[2].value != 8 && ops[2].value != 16))
      unsupported(fmt::format("'{}': the copy size is 4, 8 or 16", stmt));
    if (parts[2] == "cg" && ops[2].value != 16)
      unsupported(fmt::format("'{}': cp.async.cg copies 16 bytes", stmt));
    if (ops.size() == fixed) // no source size: all of them
      ops.insert(ops.begin() + 3, ops[2]);
    in.op = Op::CpAsync;
    in.operands = std::move(ops);
    return in;
  }

  void requireAddress(const Operand &o, const std::string &stmt) {
    if (o.form != Operand::Address)
      unsupported(fmt::format("'{}': expected an [address] operand", stmt));
  }

  AsmProgram::Instruction instruction(const std::string &stmt) {
    AsmProgram::Instruction in;
    in.text = stmt;
    std::string rest = stmt;
    if (rest[0] == '@') {
      size_t sp = rest.find_first_of(" \t");
      std::string g = rest.substr(1, sp - 1);
      in.guardNegated = g[0] == '!';
      in.guard = registerOf(in.guardNegated ? g.substr(1) : g);
      rest = trim(rest.substr(sp));
    }
    for (const char *prefix : {"wgmma.", "fence.proxy.async", "fence.mbarrier_init", "mbarrier.",
                               "cp.async.bulk.", "bar.sync", "bar.warp.sync", "barrier.sync",
                               "barrier.cluster.", "mapa.", "setmaxnreg."})
      if (rest.rfind(prefix, 0) == 0) {
        size_t sp = rest.find_first_of(" \t");
        AsmProgram::Instruction async =
            asyncInstruction(rest.substr(0, sp), sp == std::string::npos ? "" : rest.substr(sp), stmt);
        async.guard = in.guard;
        async.guardNegated = in.guardNegated;
        return async;
      }
    size_t sp = rest.find_first_of(" \t");
    std::string opcode = rest.substr(0, sp);
    std::string operands = sp == std::string::npos ? "" : rest.substr(sp);
    if (opcode == "cvt.rn.tf32.f32") {
      in.op = Op::CvtRnTf32;
      in.bits = 32;
      for (const std::string &o : split(operands, ','))
        in.operands.push_back(operand(o));
      if (in.operands.size() != 2 || in.operands[0].form != Operand::Register)
        unsupported(fmt::format("'{}' needs a destination register and a source", stmt));
      return in;
    }
    std::vector<std::string> parts = split(opcode, '.');
    const std::string &name = parts[0];
    if (isAluName(name)) {
      std::vector<Operand> aluOperands;
      for (const std::string &o : split(operands, ','))
        aluOperands.push_back(operand(o));
      parseAlu(parts, std::move(aluOperands), in, [&](const std::string &why) { unsupported(why); });
      return in;
    }
    if (name == "createpolicy")
      return cachePolicy(parts, operands, stmt);
    if (parts.size() >= 5 && name == "cp" && parts[1] == "async" && (parts[2] == "ca" || parts[2] == "cg"))
      return asyncCopy(parts, operands, stmt, in);
    static const std::map<std::string, Op> ops = {
        {"mov", Op::Mov}, {"ld", Op::Load}, {"st", Op::Store}, {"atom", Op::Atom},
        {"max", Op::Max}, {"min", Op::Min}, {"setp", Op::Setp}, {"bra", Op::Bra}};
    auto it = ops.find(name);
    if (it == ops.end())
      unsupported(fmt::format("instruction '{}'", opcode));
    in.op = it->second;
    bool typed = false, policyOperand = false;
    // Cache operators and eviction priorities: hints for caches the
    // simulator does not have.
    static const std::set<std::string> cacheHints = {
        "ca", "cg", "cs", "cv", "lu", "wb", "wt", "volatile", "L1::evict_normal", "L1::evict_unchanged",
        "L1::evict_first", "L1::evict_last", "L1::no_allocate"};
    for (size_t i = 1; i < parts.size(); ++i) {
      const std::string &q = parts[i];
      if ((name == "ld" || name == "st") && cacheHints.count(q)) {
        continue;
      } else if ((name == "ld" || name == "st") && q == "L2::cache_hint") {
        policyOperand = true; // a createpolicy register, last
      } else if (typeSuffix(q, in.kind, in.bits)) {
        typed = true;
      } else if (q == "bf16") {
        in.kind = Kind::Float, in.bits = 16, in.bfloat = true;
        typed = true;
      } else if (q == "noftz" && name == "atom") {
        // atom.add.noftz.f16/bf16: subnormals kept, as the simulator always does.
      } else if (q == "global") {
        in.space = Space::Global;
      } else if (q == "shared") {
        in.space = Space::Shared;
      } else if (q.size() > 1 && q[0] == 'v' && std::isdigit(static_cast<unsigned char>(q[1]))) {
        in.vector = unsigned(std::stoul(q.substr(1)));
      } else if (q == "NaN") {
        in.nanPropagating = true;
      } else if (q == "acq_rel" || q == "relaxed" || q == "acquire" || q == "release" ||
                 q == "gpu" || q == "cta" || q == "sys" || q == "uni") {
        // Orderings and scopes: one simulated thread runs at a time.
      } else if (name == "atom" && in.atomOp.empty()) {
        in.atomOp = q;
      } else if (name == "setp" && in.compare.empty()) {
        in.compare = q;
      } else {
        unsupported(fmt::format("'{}' (qualifier .{})", opcode, q));
      }
    }
    static const std::set<std::string> comparisons = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"};
    static const std::set<std::string> floatComparisons = {"equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
    if (in.op == Op::Setp && !comparisons.count(in.compare) &&
        !(in.kind == Kind::Float && floatComparisons.count(in.compare)))
      unsupported(fmt::format("'{}' (comparison .{})", opcode, in.compare));
    if (in.op != Op::Bra && !typed)
      unsupported(fmt::format("'{}' has no type", opcode));
    for (const std::string &o : split(operands, ',')) {
      Operand parsed = operand(o);
      if (parsed.floatBits != 0) { // a float literal: in the instruction's float type
        if (in.kind != Kind::Float || in.bits == 16)
          unsupported(fmt::format("'{}': a float literal in a {}-bit {} instruction", stmt, in.bits,
                                  in.kind == Kind::Float ? "float" : "integer"));
        if (parsed.floatBits == 64 && in.bits == 32)
          parsed.value = int64_t(std::bit_cast<uint32_t>(float(std::bit_cast<double>(parsed.value))));
        else if (parsed.floatBits == 32 && in.bits == 64)
          parsed.value = std::bit_cast<int64_t>(double(std::bit_cast<float>(uint32_t(parsed.value))));
        parsed.floatBits = 0;
      }
      in.operands.push_back(parsed);
    }
    if (in.op == Op::Bra) {
      if (in.operands.size() != 1 || in.operands[0].form != Operand::Label)
        unsupported(fmt::format("'{}' needs one label", stmt));
      branchFixups.push_back({0, trim(operands)});
    }
    size_t expected = in.op == Op::Bra ? 1 : in.op == Op::Mov || in.op == Op::Load || in.op == Op::Store ? 2
                    : in.op == Op::Atom ? (in.atomOp == "cas" ? 4 : 3) : 3;
    if (policyOperand)
      ++expected;
    if (in.operands.size() != expected)
      unsupported(fmt::format("'{}' has {} operands, expected {}", stmt, in.operands.size(), expected));
    if (policyOperand) {
      if (in.operands.back().form != Operand::Register)
        unsupported(fmt::format("'{}': the cache policy must be a register", stmt));
      in.operands.pop_back();
    }
    // mov $0, %cluster_ctarank (special registers nowhere else).
    for (size_t i = 0; i < in.operands.size(); ++i)
      if (in.operands[i].form == Operand::Special) {
        if (in.op != Op::Mov || i != 1)
          unsupported(fmt::format("'{}': special registers are read by mov alone", stmt));
        in.op = Op::MovClusterRegister;
      }
    return in;
  }
};

} // namespace

std::shared_ptr<const AsmProgram> AsmProgram::parse(const std::string &body,
                                                    const std::string &constraints) {
  std::shared_ptr<AsmProgram> program(new AsmProgram());
  for (const std::string &c : split(constraints, ',')) {
    if (c.empty() || c[0] == '~')
      continue; // clobbers
    if (c[0] == '=') {
      ++program->numOutputs_;
    } else {
      // An input tied to an output ("0"): the output register starts with it.
      if (std::all_of(c.begin(), c.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
        program->tied_.push_back({program->numInputs_, std::stoul(c)});
      ++program->numInputs_;
    }
  }
  for (auto [input, output] : program->tied_)
    if (output >= program->numOutputs_)
      throw Error(fmt::format("simulator: inline PTX input {} is tied to output {}, which does "
                              "not exist", input, output));
  Parser p;
  p.body = body;
  p.numOperands = program->numOutputs_ + program->numInputs_;
  p.nextRegister = int(p.numOperands);
  // Every expansion of the asm is a separate program: one uid is enough.
  std::string text = body;
  for (size_t at; (at = text.find("${:uid}")) != std::string::npos;)
    text.replace(at, 7, "0");
  for (std::string stmt : split(text, ';', /*nested=*/false)) {
    // Scope braces and labels may precede (or, for braces, follow) a statement.
    for (bool changed = true; changed;) {
      changed = false;
      stmt = trim(stmt);
      if (!stmt.empty() && (stmt[0] == '{' || stmt[0] == '}')) {
        stmt = stmt.substr(1);
        changed = true;
        continue;
      }
      if (!stmt.empty() && stmt.back() == '}' && stmt.find('{') == std::string::npos) {
        stmt.pop_back();
        changed = true;
        continue;
      }
      size_t n = 0;
      while (n < stmt.size() && isIdentifierChar(stmt[n]) && stmt[n] != '$' && stmt[n] != '%')
        ++n;
      if (n > 0 && n < stmt.size() && stmt[n] == ':') {
        p.labels[stmt.substr(0, n)] = program->code_.size();
        stmt = stmt.substr(n + 1);
        changed = true;
      }
    }
    if (stmt.empty())
      continue;
    if (stmt.rfind(".reg", 0) == 0) {
      // .reg .b32 %a, %b;
      std::string names = trim(stmt.substr(4));
      size_t sp = names.find_first_of(" \t");
      for (const std::string &n : split(names.substr(sp), ','))
        p.declared[n] = p.nextRegister++;
      continue;
    }
    program->code_.push_back(p.instruction(stmt));
    if (program->code_.back().op == Op::Bra)
      p.branchFixups.back().first = program->code_.size() - 1;
  }
  for (auto &[index, label] : p.branchFixups) {
    auto it = p.labels.find(label);
    if (it == p.labels.end())
      p.unsupported(fmt::format("branch to unknown label '{}'", label));
    program->code_[index].operands[0].value = int64_t(it->second);
  }
  program->numRegisters_ = size_t(p.nextRegister);
  program->registersOnly_ = std::all_of(program->code_.begin(), program->code_.end(), [](const Instruction &in) {
    return in.op == Op::Mov || in.op == Op::Alu || in.op == Op::Max || in.op == Op::Min || in.op == Op::Setp ||
           in.op == Op::Bra || in.op == Op::CvtRnTf32;
  });
  return program;
}

} // namespace tegula::sim
