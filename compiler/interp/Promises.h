//===- Promises.h - checking tl::multiple_of / tl::max_contiguous -*- C++ -*-===//
#pragma once

#include "compiler/interp/Tile.h"
#include "dialects/tile/TileDialect.h"

#include <optional>
#include <string>

namespace tegula::interp {

/// What is false about the promise `op` makes of `value` (its operand's
/// tile), or nothing when it holds: along each dimension, aligned groups of
/// contiguity[d] consecutive integers whose first is a multiple of
/// divisibility[d].
std::optional<std::string> brokenPromise(tile::AssumeOp op, const Tile &value);

} // namespace tegula::interp
