// PtxBackendTest.cpp - ptxas report parsing and failure reporting.
#include "compiler/backend/PtxBackend.h"
#include "tegula/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

using namespace tegula;
using namespace tegula::backend;
using ::testing::HasSubstr;

namespace {

TEST(PtxBackend, ParsesPtxasVerboseOutput) {
  const char *log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'softmax' for 'sm_80'\n"
      "ptxas info    : Function properties for softmax\n"
      "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'add' for 'sm_80'\n"
      "ptxas info    : Function properties for add\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 12 registers, used 0 barriers, 376 bytes cmem[0]\n";
  auto reports = parsePtxasLog(log);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].kernel, "softmax");
  EXPECT_EQ(reports[0].registers, 40);
  EXPECT_EQ(reports[0].barriers, 1);
  EXPECT_EQ(reports[0].sharedBytes, 2048);
  EXPECT_EQ(reports[0].stackBytes, 16);
  EXPECT_EQ(reports[0].spillStoreBytes, 8);
  EXPECT_EQ(reports[0].spillLoadBytes, 12);
  EXPECT_TRUE(reports[0].spills());
  EXPECT_EQ(reports[1].kernel, "add");
  EXPECT_EQ(reports[1].registers, 12);
  EXPECT_FALSE(reports[1].spills());
}

TEST(PtxBackend, PtxasFailureShowsTheCommandAndKeepsThePtx) {
  if (!findPtxas())
    GTEST_SKIP() << "ptxas not found (no CUDA toolkit): cannot test ptxas failures";
  const std::string bad = ".version 8.0\n.target sm_80\n.address_size 64\n"
                          ".visible .entry broken() { this is not ptx; }\n";
  try {
    assemble(bad, Target{"sm_80", "+ptx80", 3});
    FAIL() << "expected ptxas to fail";
  } catch (const Error &e) {
    std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("ptxas failed"));
    EXPECT_THAT(msg, HasSubstr("reproduce: "));
    EXPECT_THAT(msg, HasSubstr("-arch sm_80"));
    auto pos = msg.find("PTX kept at: ");
    ASSERT_NE(pos, std::string::npos);
    std::string path = msg.substr(pos + 13, msg.find('\n', pos) - pos - 13);
    EXPECT_TRUE(std::filesystem::exists(path)) << path;
  }
}

TEST(PtxBackend, PtxasVersionIsKnownWhenPresent) {
  if (!findPtxas())
    GTEST_SKIP() << "ptxas not found (no CUDA toolkit)";
  EXPECT_THAT(ptxasVersion(), HasSubstr("Build cuda_"));
}

} // namespace
