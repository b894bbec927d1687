// ErrorTestUtil.h - checking that mistakes are reported at the user's line.
#pragma once

#include "tegula/tegula.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tegula::testing {

/// The line a kernel under test is expected to fail on; set it with
/// FAILS_ON_NEXT_LINE() right above the offending statement.
inline int g_line = 0;
#define FAILS_ON_NEXT_LINE() (::tegula::testing::g_line = __LINE__ + 1)

/// Launches `k` in the interpreter and returns the tegula::Error text
/// (failing the test when there is none, or another exception type).
inline std::string errorOf(const Kernel &k, const std::vector<Arg> &args, Grid grid = {1}) {
  try {
    k.launch({.grid = grid, .backend = Backend::Interp}, args);
  } catch (const Error &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a tegula::Error";
  return "";
}

/// The error names `file` (a basename) at the marked line, and says `what`.
inline void expectAtMarkedLine(const std::string &err, const std::string &file,
                               const std::string &what) {
  EXPECT_THAT(err, ::testing::HasSubstr(fmt::format("{}:{}: error: ", file, g_line))) << err;
  EXPECT_THAT(err, ::testing::HasSubstr(what)) << err;
}

} // namespace tegula::testing
