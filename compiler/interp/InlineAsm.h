//===- InlineAsm.h - tl::inline_asm_elementwise in the interpreter -*- C++ -*-===//
#pragma once

#include "compiler/interp/Tile.h"
#include "dialects/tile/TileDialect.h"

#include <vector>

namespace tegula::interp {

/// The results of a tl::inline_asm_elementwise: its PTX run, element by
/// element (`pack` at a time), by the simulator's PTX interpreter - the same
/// code the simulator runs for the GPU's instructions. Throws tegula::Error
/// (without a location) for PTX that reads memory, meets other threads, or
/// falls outside the simulator's subset.
std::vector<TileRef> evalInlineAsm(tile::ElementwiseInlineAsmOp op, llvm::ArrayRef<TileRef> args);

} // namespace tegula::interp
