// error.h - the one exception type Tegula throws.
#pragma once

#include <stdexcept>
#include <string>

namespace tegula {

/// Every error Tegula reports: DSL mistakes (`file:line: error: ...`), IR
/// verification failures, interpreter faults and bad launch arguments.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &what) : std::runtime_error(what) {}
};

} // namespace tegula
