// PtxBackendTest.cpp - ptxas report parsing and failure reporting; the PTX
// version each chip gets.
#include "TestUtil.h"
#include "compiler/backend/PtxBackend.h"
#include "tegula/error.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

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

TEST(PtxBackend, PtxVersionFollowsTheChip) {
  EXPECT_EQ(ptxFeaturesFor("sm_80"), "+ptx80"); // ptxas 13's oldest
  EXPECT_EQ(ptxFeaturesFor("sm_89"), "+ptx80");
  EXPECT_EQ(ptxFeaturesFor("sm_90a"), "+ptx80");
  EXPECT_EQ(ptxFeaturesFor("sm_100a"), "+ptx86");
  EXPECT_EQ(ptxFeaturesFor("sm_120"), "+ptx87");
  EXPECT_EQ(ptxFeaturesFor("sm_103a"), "+ptx88");
  for (const char *chip : {"sm_75", "sm_90b", "gfx90a", ""})
    EXPECT_THAT(tegula::testing::error_of([&] { ptxFeaturesFor(chip); }),
                HasSubstr(std::string("chip '") + chip + "' is not one Tegula compiles for"));
}

/// A Blackwell chip gets the PTX version that introduced it (LLVM aborted
/// the process on +ptx80 before); an explicit older one is refused, named.
TEST(PtxBackend, BlackwellGetsItsPtxVersionAndAnOlderOneIsRefused) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(
      "llvm.func @k() attributes {nvvm.kernel} { llvm.return }", &ctx);
  ASSERT_TRUE(module);
  const std::string ptx = translateToPtx(*module, Target{"sm_100a", "", 3});
  EXPECT_THAT(ptx, HasSubstr(".version 8.6"));
  EXPECT_THAT(ptx, HasSubstr(".target sm_100a"));
  EXPECT_THAT(tegula::testing::error_of([&] { translateToPtx(*module, Target{"sm_100a", "+ptx80", 3}); }),
              HasSubstr("PTX ISA 8.0 is too old for sm_100a (it needs 8.6)"));
  if (findPtxas()) // CUDA 13's ptxas knows Blackwell
    EXPECT_FALSE(assemble(ptx, Target{"sm_100a", "", 3}).data.empty());
}

} // namespace
