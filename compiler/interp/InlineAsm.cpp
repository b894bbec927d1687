//===- InlineAsm.cpp - tl::inline_asm_elementwise in the interpreter -------===//
//
// The interpreter holds floats as doubles and integers as int64; the PTX
// sees registers. Each element goes to its bits in the element type (as
// memory would hold it), `pack` consecutive elements (row-major) share a
// register, the first lowest, and the results come back the same way.
//
//===----------------------------------------------------------------------===//
#include "compiler/interp/InlineAsm.h"

#include "simulator/PtxAsm.h"
#include "tegula/error.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cstring>
#include <map>
#include <mutex>

#include <fmt/format.h>

using namespace mlir;

namespace tegula::interp {

namespace {

uint64_t elementBits(const Tile &t, size_t k) {
  char bytes[8] = {};
  const unsigned width = t.elem.getIntOrFloatBitWidth();
  if (t.kind == Tile::Kind::Float)
    writeFloat(bytes, t.elem, t.f[k]);
  else
    writeInt(bytes, t.elem, t.i[k]);
  uint64_t bits = 0;
  std::memcpy(&bits, bytes, width / 8);
  return bits;
}

void setElement(Tile &t, size_t k, uint64_t bits) {
  char bytes[8];
  std::memcpy(bytes, &bits, 8);
  if (t.kind == Tile::Kind::Float)
    t.f[k] = readFloat(bytes, t.elem);
  else
    t.i[k] = readInt(bytes, t.elem);
}

/// The parsed program of an asm body and its constraints, parsed once per
/// process (every program of a grid runs the op).
std::shared_ptr<const sim::AsmProgram> programOf(const std::string &body, const std::string &constraints) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::shared_ptr<const sim::AsmProgram>> parsed;
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = parsed[{body, constraints}];
  if (!slot)
    slot = sim::AsmProgram::parse(body, constraints); // throws for what the subset lacks (the slot stays empty)
  return slot;
}

} // namespace

std::vector<TileRef> evalInlineAsm(tile::ElementwiseInlineAsmOp op, llvm::ArrayRef<TileRef> args) {
  auto program = programOf(op.getAsmString().str(), op.getConstraints().str());
  if (!program->registersOnly())
    throw Error(fmt::format("tl::inline_asm_elementwise's PTX reads or writes memory or meets other threads, "
                            "which the interpreter does not model (it runs register arithmetic): run the kernel "
                            "with the simulator (Backend::Sim, TEGULA_BACKEND=sim) or on the GPU"));
  const size_t pack = size_t(op.getPack());
  std::vector<std::shared_ptr<Tile>> results;
  for (Value r : op.getResults()) {
    auto type = cast<RankedTensorType>(r.getType());
    results.push_back(makeTile(type.getElementType(), {type.getShape().begin(), type.getShape().end()}));
  }
  const size_t n = results[0]->size();
  std::vector<uint64_t> in(args.size()), out(results.size());
  for (size_t first = 0; first < n; first += pack) {
    for (size_t a = 0; a < args.size(); ++a) {
      const unsigned width = args[a]->elem.getIntOrFloatBitWidth();
      in[a] = 0;
      for (size_t j = 0; j < pack && first + j < n; ++j)
        in[a] |= elementBits(*args[a], first + j) << (width * j);
    }
    program->run(in.data(), out.data(), 0);
    for (size_t r = 0; r < results.size(); ++r) {
      const unsigned width = results[r]->elem.getIntOrFloatBitWidth();
      for (size_t j = 0; j < pack && first + j < n; ++j)
        setElement(*results[r], first + j, width >= 64 ? out[r] : (out[r] >> (width * j)) & ((1ull << width) - 1));
    }
  }
  return {results.begin(), results.end()};
}

} // namespace tegula::interp
