//===- tegulac.cpp - compile lowered kernels to PTX and cubin ------------===//
//
//   tegulac kernels.mlir --chip=sm_90a -o kernels.ptx        # PTX
//   tegulac kernels.mlir --chip=sm_80 --cubin -o k.cubin      # + ptxas, report
//   tegulac kernels.mlir --chip=sm_90a --sass                 # + nvdisasm: SASS
//
// Input: a kernel library in the `tile` dialect (what `Kernel::ir()` prints;
// any number of kernels, compiled with --num-warps), or a module of
// per-thread code in the LLVM dialect with NVVM ops (what the lowering
// produces). Prints each kernel's registers, shared memory and spills when
// assembling (on stderr with --sass, whose machine code goes to -o), and the
// error report's sites (as PTX comments in PTX output).
//
//===----------------------------------------------------------------------===//
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "compiler/backend/PtxBackend.h"
#include "compiler/backend/Sass.h"
#include "tegula/error.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

namespace cl = llvm::cl;

static cl::OptionCategory tegulacOptions("tegulac options");
static cl::opt<std::string> inputFile(cl::Positional, cl::cat(tegulacOptions), cl::desc("<input .mlir>"), cl::Required);
static cl::opt<std::string> outputFile("o", cl::cat(tegulacOptions), cl::desc("output file (default: stdout for PTX)"),
                                       cl::init("-"));
static cl::opt<std::string> chip("chip", cl::cat(tegulacOptions),
                                 cl::desc("target GPU: sm_80 (also sm_86, sm_89, ...), sm_90a, or a "
                                          "Blackwell chip (sm_100, sm_120, ...: sm_80's code path)"),
                                 cl::init("sm_80"));
static cl::opt<std::string> features("features", cl::cat(tegulacOptions),
                                     cl::desc("PTX ISA feature, e.g. +ptx86 (default: the chip's)"),
                                     cl::init(""));
static cl::opt<int> optLevel("O", cl::cat(tegulacOptions), cl::desc("LLVM optimisation level"), cl::init(3));
static cl::opt<bool> cubin("cubin", cl::cat(tegulacOptions), cl::desc("assemble with ptxas and write a cubin"));
static cl::opt<bool> sass("sass", cl::cat(tegulacOptions), cl::desc("assemble with ptxas and write the machine code (SASS, by nvdisasm)"));
static cl::opt<int> numWarps("num-warps", cl::cat(tegulacOptions), cl::desc("warps per program (tile-dialect input)"),
                             cl::init(4));
static cl::opt<int> numStages("num-stages", cl::cat(tegulacOptions),
                              cl::desc("shared-memory stages for dot operands in loops (1: off)"),
                              cl::init(3));
static cl::opt<bool> warpSpecialize("warp-specialize", cl::cat(tegulacOptions),
                                    cl::desc("sm_90a: TMA-fed loops get a producer warpgroup"));
static cl::opt<bool> pingPong("ping-pong", cl::cat(tegulacOptions),
                              cl::desc("sm_90a, 4 warps: two programs per CTA on their own consumer warpgroups "
                                       "(implies --warp-specialize)"));
static cl::opt<int> clusterSize("cluster-size", cl::cat(tegulacOptions),
                                cl::desc("sm_90a, warp specialised: CTAs per thread-block cluster; tl::multicast "
                                         "loads of TMA rings are fetched once per cluster"),
                                cl::init(1));

/// The module's error sites (runtime/DeviceErrorReport.h) as PTX comments: a
/// kernel that stops writes 1 + its site's number into the record its
/// `tegula_error_report_<kernel>` points at; a loader other than Tegula's runtime
/// reads them here.
static std::string errorSiteComments(mlir::ModuleOp module) {
  auto sites = module->getAttrOfType<mlir::ArrayAttr>("tegula.error_sites");
  if (!sites || sites.empty())
    return {};
  std::string out = "// Error report sites (a kernel that stops writes 1 + the site into the record "
                    "tegula_error_report_<kernel> points at):\n";
  for (auto [i, site] : llvm::enumerate(sites)) {
    std::string text = mlir::cast<mlir::StringAttr>(site).str();
    std::replace(text.begin(), text.end(), '\n', ' ');
    out += fmt::format("//   site {}: {}\n", i, text);
  }
  return out;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --help lists tegulac's own options, not the hundreds LLVM's backends register.
  cl::HideUnrelatedOptions(tegulacOptions);
  cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) { os << "Tegula " TEGULA_VERSION "\n"; });
  cl::ParseCommandLineOptions(argc, argv, "Tegula kernel compiler\n");
  mlir::DialectRegistry registry;
  tegula::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  llvm::SourceMgr sources;
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(inputFile, sources, &ctx);
  if (!module)
    return 1; // the parser printed the error
  // A tile-dialect library goes through the whole GPU pipeline first.
  if (!module->getOps<mlir::func::FuncOp>().empty() &&
      (mlir::failed(tegula::runTilePipeline(*module)) ||
       mlir::failed(tegula::runGpuPipeline(*module, {.numWarps = numWarps,
                                                  .numStages = numStages,
                                                  .chip = chip,
                                                  .warpSpecialize = warpSpecialize || pingPong,
                                                  .pingPong = pingPong,
                                                  .clusterSize = clusterSize}))))
    return 1; // the failing pass reported the op and why
  try {
    tegula::backend::Target target{chip, features, optLevel};
    std::string ptx = tegula::backend::translateToPtx(*module, target);
    const std::string sites = errorSiteComments(*module);
    if (!cubin && !sass) {
      ptx = sites + ptx;
      if (outputFile == "-") {
        llvm::outs() << ptx;
      } else {
        std::ofstream(outputFile) << ptx;
      }
      return 0;
    }
    auto bin = tegula::backend::assemble(ptx, target);
    FILE *report = stdout;
    if (sass) {
      std::string code = tegula::backend::disassemble(bin.data);
      if (outputFile == "-")
        llvm::outs() << code;
      else
        std::ofstream(outputFile) << code;
      report = stderr;
    } else if (outputFile != "-") {
      std::ofstream(outputFile, std::ios::binary).write(bin.data.data(), std::streamsize(bin.data.size()));
    }
    fmt::print(report, "{:<24} {:>9} {:>10} {:>8} {:>12}\n", "kernel", "registers", "shared (B)", "barriers",
               "spills (B)");
    for (const auto &k : bin.kernels)
      fmt::print(report, "{:<24} {:>9} {:>10} {:>8} {:>12}\n", k.kernel, k.registers, k.sharedBytes, k.barriers,
                 k.spillStoreBytes + k.spillLoadBytes);
    fmt::print(report, "{}", sites);
    return 0;
  } catch (const tegula::Error &e) {
    llvm::errs() << "tegulac: error: " << e.what() << "\n";
    return 1;
  }
}
