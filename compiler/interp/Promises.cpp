//===- Promises.cpp - checking tl::multiple_of / tl::max_contiguous -------===//
//
// Compiled code trusts these promises (a 16-byte vector access through an
// offset that is not a multiple of 4 reads the wrong elements or faults);
// the interpreter checks each one on every launch, so a false promise is
// an error at its line before it is garbage on the GPU.
//
//===----------------------------------------------------------------------===//
#include "compiler/interp/Promises.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tegula::interp {

std::optional<std::string> brokenPromise(tile::AssumeOp op, const Tile &value) {
  auto divisibility = op.getDivisibility();
  auto contiguity = op.getContiguity();
  if (value.shape.empty()) {
    if (value.i[0] % divisibility[0] != 0)
      return fmt::format("tl::multiple_of promised a multiple of {}, but the value is {}", divisibility[0],
                         value.i[0]);
    return std::nullopt;
  }
  const size_t rank = value.shape.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * value.shape[d];
  std::vector<int64_t> index(rank);
  for (size_t k = 0; k < value.size(); ++k) {
    for (size_t d = 0; d < rank; ++d)
      index[d] = (int64_t(k) / strides[d]) % value.shape[d];
    auto where = [&] { return fmt::format("element {} (index [{}])", k, fmt::join(index, ", ")); };
    for (size_t d = 0; d < rank; ++d) {
      const int64_t c = contiguity[d], div = divisibility[d], v = value.i[k];
      if (index[d] % c == 0) {
        if (v % div != 0)
          return fmt::format("tl::multiple_of promised multiples of {} along dimension {}{}, but {} is {}", div, d,
                             c > 1 ? fmt::format(" at the start of each run of {}", c) : "", where(), v);
      } else if (v != value.i[k - size_t(strides[d])] + 1) {
        return fmt::format("tl::max_contiguous promised runs of {} consecutive values along dimension {}, but {} is "
                           "{} after {}",
                           c, d, where(), v, value.i[k - size_t(strides[d])]);
      }
    }
  }
  return std::nullopt;
}

} // namespace tegula::interp
