// kernel.h - turning a DSL function into a kernel object and launching it.
//
//   auto k = tegula::kernel("vector_add", vector_add, {"x", "y", "out", "n", "BLOCK"});
//   k({.grid = {uint32_t(tegula::cdiv(n, 1024))}}, x, y, out, n, 1024);
//
// The kernel is traced once per specialisation (its tl::constant values) and
// the resulting module is cached in the kernel object.
#pragma once

#include "tegula/device.h"
#include "tegula/dtype.h"
#include "tegula/error.h"
#include "tegula/tl.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tegula {

constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Where a launch runs: the CPU interpreter over the `tile` IR; the GPU
/// (compiled to PTX/cubin, host buffers staged to the device and back,
/// DeviceBuffers passed as they are); or the CTA simulator, which runs the
/// lowered GPU code on the CPU, one fiber per thread, checking every access
/// and shared-memory races (docs/simulator.md).
enum class Backend { Interp, GPU, Sim };
/// Parses a TEGULA_BACKEND value; throws tegula::Error naming the choices.
Backend parse_backend(const std::string &name);

struct Grid {
  uint32_t x = 1, y = 1, z = 1;
};

struct LaunchOptions {
  Grid grid;
  int num_warps = 4;
  /// Shared-memory stages for the operands of dots in loops: the loads of
  /// the next num_stages - 1 iterations are in flight (cp.async) while one
  /// computes. 1 turns software pipelining off.
  int num_stages = 3;
  /// Unset: $TEGULA_BACKEND, else the interpreter.
  std::optional<Backend> backend;
  /// GPU: the CUstream (of the device's primary context, which torch and
  /// cupy share) to launch on, as an integer; 0 is the default stream.
  /// Launches with host buffers still wait for the kernel (to copy back).
  uint64_t stream = 0;
  /// sm_90a: a loop whose dot operands arrive by TMA gets a producer
  /// warpgroup of its own - 4 more warps that only issue the copies, while
  /// the num_warps warps only compute (docs/hopper.md). Kernels it does not
  /// apply to compile as without it. Also on with TEGULA_WARP_SPECIALIZE=1.
  bool warp_specialize = false;
  /// Implies warp_specialize; at num_warps 4, where warp specialisation
  /// applies: ping-pong - each CTA runs two programs (grid.x / 2 CTAs,
  /// rounded up), each on its own consumer warpgroup, one program's
  /// mainloop running while the other stores its result. Program ids and
  /// num_programs are those of the launch's grid, as without it; a
  /// persistent kernel should launch twice the programs (two per SM).
  /// Also on with TEGULA_PING_PONG=1.
  bool ping_pong = false;
  /// sm_90a, with warp specialisation: programs run in thread-block clusters
  /// of this many CTAs (1, 2 or 4; consecutive program ids along x, so
  /// grid.x must be a multiple of it), and a tensor-descriptor load marked
  /// tl::multicast that fills a TMA ring is fetched once per cluster, each
  /// CTA issuing a slice that lands in every CTA (docs/hopper.md). The
  /// kernel computes the same on every backend (tl::cluster_size() reads
  /// it). 0: TEGULA_CLUSTER_SIZE, else 1. Ignored by kernels with neither
  /// tl::multicast loads nor tl::cluster_size().
  int cluster_size = 0;
  /// The compile target. Empty: the device's (GPU); in the simulator
  /// $TEGULA_SIM_CHIP, else sm_80. "sm_90a" in the simulator runs the
  /// Hopper code (wgmma) on the CPU.
  std::string chip;
  /// GPU: at most this many registers a thread (the kernel's .maxnreg,
  /// 16-255: more CTAs an SM, at the risk of spills - Triton's maxnreg). 0:
  /// ptxas chooses. Not with a warp-specialised kernel that moves registers
  /// between its warpgroups (it sets its own). The CPU backends ignore it.
  int max_registers = 0;
};

/// One launch argument: a buffer (for tl::ptr), or a number (for tl::scalar
/// and tl::constant). Buffers carry their size so every access is checked.
/// A buffer is on the host (staged to the GPU and back per launch) or a
/// DeviceBuffer (passed to the GPU as is; the interpreter refuses it).
class Arg {
public:
  enum class Kind { Buffer, Int, Float };

  template <class T>
    requires(!std::is_same_v<T, bool>)
  Arg(std::vector<T> &v) : kind_(Kind::Buffer), data_(v.data()),
                           bytes_(v.size() * sizeof(T)), dtype_(dtype_of_v<T>) {}
  /// A const buffer is read-only: a kernel that writes to it is an error.
  template <class T>
    requires(!std::is_same_v<T, bool>)
  Arg(const std::vector<T> &v)
      : kind_(Kind::Buffer), data_(const_cast<T *>(v.data())), bytes_(v.size() * sizeof(T)),
        dtype_(dtype_of_v<T>), readonly_(true) {}
  /// std::vector<bool> packs its bits: there is no bool array to pass.
  template <class Alloc>
  Arg(const std::vector<bool, Alloc> &) {
    static_assert(sizeof(Alloc) == 0, "tegula: a std::vector<bool> holds no bool array (it packs bits); pass a "
                                      "std::span<bool> over a bool array (e.g. std::unique_ptr<bool[]>), or make "
                                      "the kernel take tl::ptr<uint8_t>");
  }
  template <class T>
  Arg(std::span<T> v)
      : kind_(Kind::Buffer), data_(const_cast<std::remove_const_t<T> *>(v.data())),
        bytes_(v.size_bytes()), dtype_(dtype_of_v<T>), readonly_(std::is_const_v<T>) {}
  /// A device-resident buffer: no staging. Through a const reference it is
  /// read-only, as host buffers are.
  Arg(DeviceBuffer &b)
      : kind_(Kind::Buffer), bytes_(b.bytes()), device_ptr_(b.device_ptr()), dtype_(b.dtype()),
        on_device_(true) {}
  Arg(const DeviceBuffer &b)
      : kind_(Kind::Buffer), bytes_(b.bytes()), device_ptr_(b.device_ptr()), dtype_(b.dtype()),
        readonly_(true), on_device_(true) {}
  Arg(int v) : kind_(Kind::Int), i_(v), dtype_(DType::i32) {}
  Arg(long v) : kind_(Kind::Int), i_(v), dtype_(DType::i64) {}
  Arg(long long v) : kind_(Kind::Int), i_(v), dtype_(DType::i64) {}
  Arg(unsigned v) : kind_(Kind::Int), i_(v), dtype_(DType::i32) {}
  Arg(unsigned long v)
      : kind_(Kind::Int), i_(int64_t(v)), dtype_(DType::i64), past_int64_(v > uint64_t(INT64_MAX)) {}
  Arg(bool v) : kind_(Kind::Int), i_(v), dtype_(DType::i1) {}
  Arg(float v) : kind_(Kind::Float), f_(v), dtype_(DType::f32) {}
  Arg(double v) : kind_(Kind::Float), f_(v), dtype_(DType::f64) {}

  /// A host buffer of `count` elements of `dtype` at `data`.
  static Arg buffer(void *data, size_t count, DType dtype, bool readonly = false) {
    Arg a(0);
    a.kind_ = Kind::Buffer;
    a.data_ = data;
    a.bytes_ = count * dtype_size(dtype);
    a.dtype_ = dtype;
    a.readonly_ = readonly;
    return a;
  }
  /// A buffer in device memory that something else owns (a torch or cupy
  /// array): passed to the GPU as is, like a DeviceBuffer.
  static Arg device(uint64_t ptr, size_t count, DType dtype, bool readonly = false) {
    Arg a(0);
    a.kind_ = Kind::Buffer;
    a.device_ptr_ = ptr;
    a.bytes_ = count * dtype_size(dtype);
    a.dtype_ = dtype;
    a.readonly_ = readonly;
    a.on_device_ = true;
    return a;
  }

  Kind kind() const { return kind_; }
  /// The host address of a host buffer; null for a device buffer.
  void *data() const { return data_; }
  /// Whether this is a DeviceBuffer, and its device address.
  bool on_device() const { return on_device_; }
  uint64_t device_ptr() const { return device_ptr_; }
  /// The address the kernel sees first (device or host): what alignment
  /// specialisation looks at.
  uint64_t address() const {
    return on_device_ ? device_ptr_ : reinterpret_cast<uintptr_t>(data_);
  }
  size_t bytes() const { return bytes_; }
  DType dtype() const { return dtype_; }
  bool readonly() const { return readonly_; }
  int64_t as_int() const { return kind_ == Kind::Float ? int64_t(f_) : i_; }
  double as_float() const { return kind_ == Kind::Float ? f_ : double(i_); }
  /// An unsigned number past INT64_MAX: as_int() has wrapped it, and no
  /// integer parameter holds it.
  bool past_int64() const { return past_int64_; }

private:
  Kind kind_;
  void *data_ = nullptr;
  size_t bytes_ = 0;
  uint64_t device_ptr_ = 0;
  int64_t i_ = 0;
  double f_ = 0;
  DType dtype_;
  bool readonly_ = false;
  bool on_device_ = false;
  bool past_int64_ = false;
};

/// What a kernel parameter is, as declared in the C++ signature.
struct ParamInfo {
  enum class Kind { Pointer, Scalar, Constant } kind;
  DType dtype;
  /// tl::any_ptr: the element type comes from the launch argument.
  bool any_dtype = false;
};

namespace runtime {
class LoadedKernel;
}
namespace detail {
struct KernelImpl;
struct CodePaths;
struct Specialization;
struct Switches;
template <class P> struct param_traits;
template <class T> struct param_traits<tl::ptr<T>> {
  static constexpr ParamInfo info{ParamInfo::Kind::Pointer, dtype_of_v<T>};
  static tl::ptr<T> make(const tl::tensor &t, const Arg &) { return tl::ptr<T>(t); }
};
template <> struct param_traits<tl::any_ptr> {
  static constexpr ParamInfo info{ParamInfo::Kind::Pointer, DType::f32, true};
  static tl::any_ptr make(const tl::tensor &t, const Arg &) { return tl::any_ptr(t); }
};
template <class T> struct param_traits<tl::scalar<T>> {
  static constexpr ParamInfo info{ParamInfo::Kind::Scalar, dtype_of_v<T>};
  static tl::scalar<T> make(const tl::tensor &t, const Arg &) { return tl::scalar<T>(t); }
};
template <class T> struct param_traits<tl::constant<T>> {
  static constexpr ParamInfo info{ParamInfo::Kind::Constant, dtype_of_v<T>};
  static tl::constant<T> make(const tl::tensor &, const Arg &a) {
    if constexpr (std::is_floating_point_v<T>)
      return tl::constant<T>{T(a.as_float())};
    else
      return tl::constant<T>{T(a.as_int())};
  }
};
template <class P> using param_t = param_traits<std::remove_cvref_t<P>>;

/// Calls the user's function with traced parameters: `values[i]` is the
/// block argument for runtime parameter i, `args[i]` the launch argument.
using Trampoline = std::function<void(const std::vector<tl::tensor> &values,
                                      const std::vector<Arg> &args)>;
} // namespace detail

/// How to compile a kernel for the GPU.
struct CompileOptions {
  std::string chip = "sm_80"; // or sm_90a
  int num_warps = 4;
  int num_stages = 3; // as LaunchOptions::num_stages
  bool warp_specialize = false; // as LaunchOptions::warp_specialize
  bool ping_pong = false;       // as LaunchOptions::ping_pong
  int cluster_size = 0;         // as LaunchOptions::cluster_size
  /// Also run ptxas (when the CUDA toolkit is present) for a cubin and a
  /// resource report.
  bool assemble = true;
  int max_registers = 0; // as LaunchOptions::max_registers
};

/// A kernel compiled for the GPU: PTX, and the cubin with ptxas's report.
struct CompiledKernel {
  std::string ptx;
  std::vector<char> cubin; // empty unless assembled
  int registers = 0, shared_bytes = 0, spill_bytes = 0;
  /// Shared memory the launch provides dynamically: the kernel's scratch
  /// when it exceeds the 48 KiB a kernel may declare statically (0 below).
  int dynamic_shared_bytes = 0;
  std::string ptxas_log;
  /// Internal: the TMA tensor maps each launch encodes and appends as
  /// hidden parameters (one line each; runtime/TensorMap.h). Empty: none.
  std::string tensor_maps;
  /// Warps the launch adds to num_warps: a warp-specialised kernel's
  /// producer warpgroup (4), else 0.
  int producer_warps = 0;
  /// Programs each CTA runs: 2 for a ping-pong kernel (each on its own
  /// num_warps warps; the launch passes the grid's program count as a
  /// hidden last parameter), else 1.
  int programs_per_cta = 1;
  /// CTAs per thread-block cluster along x (the PTX's .reqnctapercluster):
  /// the launch's cluster_size where a multicast TMA ring applied, else 1.
  int cluster_size = 1;
  /// What each place the kernel stops on purpose says (a failed
  /// tl::device_assert, a loop counter about to wrap), by site number: the
  /// runtime reads which one stopped a launch from the kernel's report
  /// (runtime/DeviceErrorReport.h) and says it in the error.
  std::vector<std::string> error_sites;

  /// The cubin's machine code (SASS) as nvdisasm prints it: what ptxas made
  /// of the PTX, for reading hot loops. Disassembled on each call. Throws
  /// tegula::Error when there is no cubin (compiled without ptxas) or no
  /// nvdisasm (scripts/setup.sh installs one; TEGULA_NVDISASM names another).
  std::string sass() const;
};

/// A traced, specialisable, launchable kernel. Cheap to copy (shared state).
class Kernel {
public:
  Kernel(std::string name, std::vector<ParamInfo> params,
         std::vector<std::string> paramNames, detail::Trampoline fn);

  const std::string &name() const;
  const std::vector<ParamInfo> &params() const;
  /// The parameters' names (arg0, arg1, ... where none were given).
  const std::vector<std::string> &param_names() const;
  /// Where a launch with `opts` runs and which code it gets, as text: the
  /// backend, and for the GPU and simulator the device, chip and the
  /// TEGULA_* code switches - what a kernel's speed depends on besides its
  /// arguments (the autotuner keys its choices by it).
  std::string launch_target(const LaunchOptions &opts) const;

  /// Run the kernel over `opts.grid` with these arguments.
  void launch(const LaunchOptions &opts, const std::vector<Arg> &args) const;
  template <class... A> void operator()(const LaunchOptions &opts, A &&...args) const {
    launch(opts, std::vector<Arg>{Arg(args)...});
  }

  /// How many programs of this kernel run on the GPU at once when launched
  /// with `opts` and these arguments (compiled and loaded as that launch
  /// would be): the grid of a persistent kernel that walks its tiles over
  /// tl::num_programs. Counts what the driver says fits - registers, shared
  /// memory, warps - and, for a kernel in thread-block clusters, only whole
  /// clusters that fit together (cuOccupancyMaxActiveClusters: an H100's
  /// GPCs can leave SMs no cluster can use, so this may be fewer than the
  /// SMs); two programs a CTA with ping-pong. GPU backend only (an error
  /// elsewhere).
  int max_resident_programs(const LaunchOptions &opts, const std::vector<Arg> &args) const;
  template <class... A>
    requires(!(sizeof...(A) == 1 && (std::is_same_v<std::remove_cvref_t<A>, std::vector<Arg>> && ...)))
  int max_resident_programs(const LaunchOptions &opts, A &&...args) const {
    const std::vector<Arg> all{Arg(args)...};
    return max_resident_programs(opts, all);
  }

  /// The `tile` IR of the specialisation these arguments select, as text.
  /// `stage` is "traced" (as built) or "tile" (after canonicalisation);
  /// `debug_info` prints each op's source location.
  std::string ir(const std::vector<Arg> &args, const std::string &stage = "tile",
                 bool debug_info = false) const;
  /// Compile the specialisation these arguments select to PTX (and a cubin).
  /// Throws tegula::Error naming the op and source line when part of the
  /// kernel cannot be lowered yet.
  CompiledKernel compile(const std::vector<Arg> &args, const CompileOptions &opts = {}) const;
  /// Number of distinct specialisations traced so far.
  size_t num_specializations() const;

private:
  /// compile() with the TEGULA_WGMMA / TEGULA_TMA / TEGULA_OVERLAP_DOTS
  /// switches as a launch read them (once, for its cache key and its
  /// compile alike).
  CompiledKernel compile(const std::vector<Arg> &args, const CompileOptions &opts,
                         const detail::CodePaths &paths) const;
  /// The launch's loaded GPU kernel (compiled and loaded on first use).
  std::shared_ptr<runtime::LoadedKernel> loadOnGpu(detail::Specialization &spec, const LaunchOptions &opts,
                                                   const std::vector<Arg> &args, const detail::Switches &env,
                                                   int clusterSize) const;

  std::shared_ptr<detail::KernelImpl> impl_;
};

/// Make a kernel from a DSL function. `param_names` (optional) name the
/// parameters in error messages; by default they are `arg0`, `arg1`, ...
template <class... P>
Kernel kernel(std::string name, void (*fn)(P...),
              std::vector<std::string> param_names = {}) {
  std::vector<ParamInfo> params{detail::param_t<P>::info...};
  detail::Trampoline tramp = [fn](const std::vector<tl::tensor> &values,
                                  const std::vector<Arg> &args) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      fn(detail::param_t<P>::make(values[I], args[I])...);
    }(std::index_sequence_for<P...>{});
  };
  return Kernel(std::move(name), std::move(params), std::move(param_names),
                std::move(tramp));
}

} // namespace tegula
