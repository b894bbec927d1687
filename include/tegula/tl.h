// tl.h - Tegula's tile language: write a GPU kernel as a single-threaded
// program over tiles. Calling the kernel function traces it into the `tile`
// MLIR dialect; nothing here computes values itself.
//
//   void add(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int> n,
//            tl::constant<int> BLOCK) {
//     auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
//     auto mask = offs < n;
//     tl::store(out + offs, tl::load(x + offs, mask, 0.0f) * 2.0f, mask);
//   }
//
// Every function takes the caller's std::source_location (defaulted), so an
// error in the kernel is reported as `your_file.cpp:LINE: error: ...`.
//
// This header does not include MLIR.
#pragma once

#include "tegula/dtype.h"
#include "tegula/error.h"

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tegula::tl {

using Loc = std::source_location;
using Shape = std::vector<int64_t>;

// Element type names for use in kernels: tl::f32, tl::bf16, ...
inline constexpr DType i1 = DType::i1, i8 = DType::i8, i16 = DType::i16,
                       i32 = DType::i32, i64 = DType::i64, f16 = DType::f16,
                       bf16 = DType::bf16, f32 = DType::f32, f64 = DType::f64,
                       f8e4m3 = DType::f8e4m3, f8e5m2 = DType::f8e5m2;

/// fp32 dot precision; never chosen silently.
enum class precision { ieee, tf32, tf32x3 };
enum class atomic_op { add, max, min, xchg, and_, or_, xor_ };

class tensor;
namespace detail {
/// Which open tl::range / tl::while_ loop of this thread's trace a
/// tl::tensor object is made in (0: none), and the hooks by which a loop
/// that reads a variable from outside it and then reassigns it without
/// carrying it - `acc = acc + x` with acc not carried, which would read the
/// value from before the loop in every iteration - is an error at the line.
uint32_t trace_scope();
void note_read(const tensor &t);
void note_read(const tensor &t, const std::source_location &loc);
void note_assign(const tensor &to, const tensor &from);
/// An object destroyed (a std::vector<tl::tensor> move-assigned or
/// cleared): one a loop read from outside it is replaced, not carried -
/// unless its value was moved on (`moved_from`: a vector that grew moved its
/// elements), when the loop only forgets it.
void note_destroyed(const tensor &t, bool moved_from) noexcept;
} // namespace detail

/// A traced tile (or scalar, when rank 0) of values or of pointers.
class tensor {
public:
  tensor() = default;
  /// A copy is a new object, made where it is made: it has the value, not
  /// the scope, of `other` (and reads it); an assignment keeps the object's
  /// scope.
  tensor(const tensor &other) : impl_(other.impl_), trace_(other.trace_) { detail::note_read(other); }
  tensor(tensor &&other) noexcept : impl_(other.impl_), trace_(other.trace_) {
    detail::note_read(other);
    other.moved_from_ = true; // its value lives on here: its end replaces nothing
  }
  tensor &operator=(const tensor &other) {
    detail::note_assign(*this, other);
    impl_ = other.impl_;
    trace_ = other.trace_;
    moved_from_ = false;
    return *this;
  }
  tensor &operator=(tensor &&other) { return *this = static_cast<const tensor &>(other); }
  ~tensor() {
    if (impl_)
      detail::note_destroyed(*this, moved_from_);
  }

  /// Element type (for a pointer tile: the pointee's type).
  DType dtype(Loc loc = Loc::current()) const;
  /// True for tiles of pointers (and pointer scalars).
  bool is_pointer(Loc loc = Loc::current()) const;
  /// Tile extents; empty for a scalar.
  Shape shape(Loc loc = Loc::current()) const;
  int rank(Loc loc = Loc::current()) const { return int(shape(loc).size()); }
  bool is_scalar(Loc loc = Loc::current()) const { return shape(loc).empty(); }
  /// Text of the type, e.g. "tensor<128xf32>" (for messages and tests).
  std::string type_str(Loc loc = Loc::current()) const;

  /// Convert the element type, from any DType to any other (f64, f32, f16,
  /// bf16, the fp8s, i64, i32, i16, i8, i1; docs/dsl.md says how each rounds).
  tensor to(DType t, Loc loc = Loc::current()) const;
  /// The same bits read as another element type of the same width (f32 <->
  /// i32, bf16/f16 <-> i16, f64 <-> i64, fp8 <-> i8): Triton's
  /// `to(..., bitcast=True)`.
  tensor bitcast(DType t, Loc loc = Loc::current()) const;
  /// Insert a size-1 dimension at `axis` (Triton's x[:, None] is axis 1).
  tensor expand_dims(int axis, Loc loc = Loc::current()) const;
  tensor broadcast_to(const Shape &shape, Loc loc = Loc::current()) const;
  tensor reshape(const Shape &shape, Loc loc = Loc::current()) const;
  /// Transpose a 2-D tile, or permute dimensions with `order`.
  tensor trans(Loc loc = Loc::current()) const;
  tensor permute(const std::vector<int> &order, Loc loc = Loc::current()) const;

  /// Opaque handle to the traced value (an mlir::Value) and the id of the
  /// trace that made it; a handle is only valid inside that trace.
  void *impl() const { return impl_; }
  uint64_t trace_id() const { return trace_; }
  static tensor from_impl(void *impl, uint64_t trace) {
    tensor t;
    t.impl_ = impl;
    t.trace_ = trace;
    return t;
  }

  uint32_t scope() const { return scope_; }

private:
  void *impl_ = nullptr;
  uint64_t trace_ = 0;
  uint32_t scope_ = detail::trace_scope();
  bool moved_from_ = false;
};

template <class T> struct constant;

/// An operand of an arithmetic operator or function: a tile, or a C++
/// literal that takes the other operand's element type (like Triton's
/// "weak" Python scalars). It carries the caller's source location.
struct operand {
  enum class Kind { Tensor, Int, Float, Bool } kind;
  tensor t;
  int64_t i = 0;
  double f = 0;
  Loc loc;

  operand(const tensor &v, Loc l = Loc::current()) : kind(Kind::Tensor), t(v), loc(l) { detail::note_read(v, l); }
  operand(int v, Loc l = Loc::current()) : kind(Kind::Int), i(v), loc(l) {}
  operand(long v, Loc l = Loc::current()) : kind(Kind::Int), i(v), loc(l) {}
  operand(long long v, Loc l = Loc::current()) : kind(Kind::Int), i(v), loc(l) {}
  operand(unsigned v, Loc l = Loc::current()) : kind(Kind::Int), i(v), loc(l) {}
  operand(unsigned long v, Loc l = Loc::current()) : kind(Kind::Int), i(int64_t(v)), loc(l) {}
  operand(unsigned long long v, Loc l = Loc::current())
      : kind(Kind::Int), i(int64_t(v)), loc(l) {}
  operand(float v, Loc l = Loc::current()) : kind(Kind::Float), f(v), loc(l) {}
  operand(double v, Loc l = Loc::current()) : kind(Kind::Float), f(v), loc(l) {}
  operand(bool v, Loc l = Loc::current()) : kind(Kind::Bool), i(v), loc(l) {}
  template <class T>
  operand(const constant<T> &c, Loc l = Loc::current()) : operand(c.value, l) {}
};

//===----------------------------------------------------------------------===//
// Kernel parameters
//===----------------------------------------------------------------------===//

/// Kernel parameter: a pointer to global memory holding `T` elements
/// (bool, int8_t, int16_t, int32_t, int64_t, tegula::float16, tegula::bfloat16,
/// float, double, and the fp8 storage types: dtype.h's dtype_of).
template <class T> struct ptr : tensor {
  static constexpr DType element = dtype_of_v<T>;
  ptr() = default;
  explicit ptr(const tensor &t) : tensor(t) {}
};

/// Kernel parameter: a pointer whose element type is that of the buffer
/// passed at launch; the kernel is traced once per element type, like a
/// Triton kernel. Query it with `p.dtype()`.
struct any_ptr : tensor {
  any_ptr() = default;
  explicit any_ptr(const tensor &t) : tensor(t) {}
};

/// Kernel parameter: a runtime scalar (int32_t, int64_t, float, ...), passed
/// by value at launch; one compiled kernel serves every value.
template <class T> struct scalar : tensor {
  static constexpr DType element = dtype_of_v<T>;
  scalar() = default;
  explicit scalar(const tensor &t) : tensor(t) {}
};

/// Kernel parameter: a compile-time constant (int, bool, float). Its value
/// is given at launch and specialises the kernel: each distinct value is
/// traced and compiled once. Tile extents must be constants.
template <class T> struct constant {
  static_assert(std::is_arithmetic_v<T>, "tl::constant<T> needs an arithmetic T");
  T value{};
  constexpr operator T() const { return value; }
};

//===----------------------------------------------------------------------===//
// Creating tiles
//===----------------------------------------------------------------------===//

tensor program_id(int axis, Loc loc = Loc::current());
tensor num_programs(int axis, Loc loc = Loc::current());
/// Programs per thread-block cluster (LaunchOptions::cluster_size; 1
/// without clusters): programs C*c .. C*c + C-1 along x form cluster c.
tensor cluster_size(Loc loc = Loc::current());
/// [start, end) as i32; end - start must be a power of two.
tensor arange(int start, int end, Loc loc = Loc::current());
tensor full(const Shape &shape, operand value, DType dtype, Loc loc = Loc::current());
tensor zeros(const Shape &shape, DType dtype, Loc loc = Loc::current());
/// A scalar constant of the given type.
tensor scalar_const(operand value, DType dtype, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Arithmetic (C++ semantics: int / int truncates, % is the C++ remainder).
// Operands broadcast like NumPy/Triton; pointer + int advances by elements.
//===----------------------------------------------------------------------===//

tensor operator+(operand a, operand b);
tensor operator-(operand a, operand b);
tensor operator*(operand a, operand b);
tensor operator/(operand a, operand b);
tensor operator%(operand a, operand b);
tensor operator&(operand a, operand b);
tensor operator|(operand a, operand b);
tensor operator^(operand a, operand b);
tensor operator<<(operand a, operand b);
tensor operator>>(operand a, operand b);
tensor operator<(operand a, operand b);
tensor operator<=(operand a, operand b);
tensor operator>(operand a, operand b);
tensor operator>=(operand a, operand b);
tensor operator==(operand a, operand b);
tensor operator!=(operand a, operand b);
/// The operand of a unary operator: a tile only (so `!flag` on a
/// tl::constant<bool> stays a C++ expression), with the caller's location.
struct tile_operand {
  tensor t;
  Loc loc;
  tile_operand(const tensor &v, Loc l = Loc::current()) : t(v), loc(l) { detail::note_read(v, l); }
};
tensor operator-(tile_operand a);
tensor operator!(tile_operand a);
tensor operator~(tile_operand a);
inline tensor &operator+=(tensor &a, operand b) { return a = operand(a, b.loc) + b; }
inline tensor &operator-=(tensor &a, operand b) { return a = operand(a, b.loc) - b; }
inline tensor &operator*=(tensor &a, operand b) { return a = operand(a, b.loc) * b; }
inline tensor &operator/=(tensor &a, operand b) { return a = operand(a, b.loc) / b; }

tensor exp(const tensor &x, Loc loc = Loc::current());
tensor exp2(const tensor &x, Loc loc = Loc::current());
tensor log(const tensor &x, Loc loc = Loc::current());
tensor log2(const tensor &x, Loc loc = Loc::current());
tensor sqrt(const tensor &x, Loc loc = Loc::current());
tensor rsqrt(const tensor &x, Loc loc = Loc::current());
tensor tanh(const tensor &x, Loc loc = Loc::current());
tensor erf(const tensor &x, Loc loc = Loc::current());
tensor sin(const tensor &x, Loc loc = Loc::current());
tensor cos(const tensor &x, Loc loc = Loc::current());
tensor abs(const tensor &x, Loc loc = Loc::current());
tensor floor(const tensor &x, Loc loc = Loc::current());
tensor ceil(const tensor &x, Loc loc = Loc::current());
/// libdevice's other functions (Triton's triton.language.extra.libdevice):
/// on f32/f64, and f16/bf16 computed in f32 and rounded once. The GPU's are
/// within libdevice's documented ulp bounds; the interpreter's and the
/// simulator's are the host's libm.
tensor tan(const tensor &x, Loc loc = Loc::current());
tensor asin(const tensor &x, Loc loc = Loc::current());
tensor acos(const tensor &x, Loc loc = Loc::current());
tensor atan(const tensor &x, Loc loc = Loc::current());
tensor sinh(const tensor &x, Loc loc = Loc::current());
tensor cosh(const tensor &x, Loc loc = Loc::current());
tensor asinh(const tensor &x, Loc loc = Loc::current());
tensor acosh(const tensor &x, Loc loc = Loc::current());
tensor atanh(const tensor &x, Loc loc = Loc::current());
/// exp(x) - 1 and log(1 + x), exact near 0.
tensor expm1(const tensor &x, Loc loc = Loc::current());
tensor log1p(const tensor &x, Loc loc = Loc::current());
tensor log10(const tensor &x, Loc loc = Loc::current());
/// 1 - erf(x), exact where erf is near 1.
tensor erfc(const tensor &x, Loc loc = Loc::current());
tensor cbrt(const tensor &x, Loc loc = Loc::current());
/// Roundings to an integer value (a float): toward zero; to nearest with
/// halves away from zero (C's round); to nearest with halves to even.
tensor trunc(const tensor &x, Loc loc = Loc::current());
tensor round(const tensor &x, Loc loc = Loc::current());
tensor rint(const tensor &x, Loc loc = Loc::current());
/// x^y, atan(y / x) in the right quadrant, |x| with the sign of y:
/// floating-point operands, broadcast like the arithmetic operators.
tensor pow(operand x, operand y);
tensor atan2(operand y, operand x);
tensor copysign(operand x, operand y);
/// Elementwise max/min; NaN in either operand gives NaN.
tensor maximum(operand a, operand b);
tensor minimum(operand a, operand b);
/// log2(e) and ln(2) in f32: softmaxes in base 2 (scores times log2e, then
/// exp2: one ex2.approx an element on a GPU, where exp is libdevice's nine
/// instructions), as FlashAttention and Triton's tutorial keep them.
inline constexpr float log2e = 1.44269504088896340736f, ln2 = 0.69314718055994530942f;

/// a * b + c rounded once (fma.rn): floating-point operands, broadcast like
/// the arithmetic operators, at least one a tile. The compiler never fuses
/// a * b + c by itself (the interpreter and the GPU give the same bits), so
/// a kernel asks for it where it wants one instruction instead of two.
tensor fma(operand a, operand b, operand c);
/// a / b, fast: on the GPU an f32 quotient is div.full.f32 (within 2 ulp,
/// the full range: a reciprocal and a multiply, where `a / b` rounds
/// exactly at about twice the instructions and a slow-path call); other
/// types divide exactly. The interpreter and the simulator divide exactly.
/// Floating-point operands, broadcast like `/`, at least one a tile.
tensor fdiv(operand a, operand b);
/// 1 / x, approximate: on the GPU an f32 reciprocal is one rcp.approx.ftz.f32
/// (within 1 ulp; subnormal inputs and results flush to zero, as exp2's),
/// where tl::fdiv(1, x) checks the divisor's range around it - nine
/// instructions. The interpreter and the simulator compute 1 / x exactly
/// and flush alike (an rcp of a constant is folded while compiling, exactly,
/// on every backend); other float types divide exactly. a * rcp(b) is the
/// fast quotient where b is known to be neither huge nor tiny.
tensor rcp(const tensor &x, Loc loc = Loc::current());
/// tanh, approximate: on the GPU an f32 tanh is one tanh.approx.f32 (a
/// single MUFU.TANH, sm_75 on; relative error about 2^-11 - below a bf16
/// result's rounding, where tl::tanh is libdevice's ~20 instructions). The
/// interpreter and the simulator compute tanh exactly (rounded to f32);
/// other float types take tl::tanh.
tensor tanh_approx(const tensor &x, Loc loc = Loc::current());
/// cond ? a : b elementwise, broadcasting all three.
tensor where(const tensor &cond, operand a, operand b);
/// Convert the element type (same as x.to(t)).
tensor cast(const tensor &x, DType t, Loc loc = Loc::current());
/// Convert to the element type of a C++ type: tl::cast<bfloat16>(x).
template <class T> tensor cast(const tensor &x, Loc loc = Loc::current()) {
  return cast(x, dtype_of_v<T>, loc);
}

//===----------------------------------------------------------------------===//
// Reductions along `axis` (counted from the end when negative); a 1-D tile
// reduces to a scalar. `keep_dims` keeps `axis` as a dimension of 1 (Triton's
// keep_dims: x - tl::max(x, 1, true) broadcasts as it is). Without an axis,
// over every element (Triton's axis=None): a scalar.
//===----------------------------------------------------------------------===//

/// Sums of i1/i8/i16 accumulate and return i32; of f16/bf16, f32.
tensor sum(const tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());
tensor max(const tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());
tensor min(const tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());
/// Index (i32) of the maximum; ties take the smallest index.
tensor argmax(const tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());
tensor argmin(const tensor &x, int axis, bool keep_dims = false, Loc loc = Loc::current());
/// Over every element of x: a scalar (argmax/argmin: the flat, row-major index).
tensor sum(const tensor &x, Loc loc = Loc::current());
tensor max(const tensor &x, Loc loc = Loc::current());
tensor min(const tensor &x, Loc loc = Loc::current());
tensor argmax(const tensor &x, Loc loc = Loc::current());
tensor argmin(const tensor &x, Loc loc = Loc::current());
/// A reduction with a combine function of your own (Triton's tl.reduce):
/// `combine(a, b)` gets two scalars of x's element type and returns their
/// combination, of that type. It must be associative and commutative - the
/// GPU combines in its own order (within a thread, then across lanes and
/// warps), the interpreter in index order - and may use only elementwise
/// operations on its arguments and literals (no loads, no values from outside).
///   tl::tensor product = tl::reduce(x, 1, [](tl::tensor a, tl::tensor b) { return a * b; });
tensor reduce(const tensor &x, int axis, const std::function<tensor(tensor, tensor)> &combine,
              bool keep_dims = false, Loc loc = Loc::current());
/// Tiles of one shape reduced together (a value and its index, say):
/// combine(acc, next) gets one scalar of each tile twice and returns one of each.
std::vector<tensor> reduce(const std::vector<tensor> &xs, int axis,
                           const std::function<std::vector<tensor>(const std::vector<tensor> &,
                                                                   const std::vector<tensor> &)> &combine,
                           bool keep_dims = false, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Scans along `axis`: element i of the result combines elements 0..i (with
// `reverse`, i..n-1), in order. The result has x's shape.
//===----------------------------------------------------------------------===//

/// Running sums (Triton's tl.cumsum). i1/i8/i16 scan in i32 and f16/bf16 in
/// f32, as tl::sum accumulates: tl::cumsum(flags) - 1 numbers the true flags.
tensor cumsum(const tensor &x, int axis = 0, bool reverse = false, Loc loc = Loc::current());
/// Running products (tl.cumprod), with cumsum's types.
tensor cumprod(const tensor &x, int axis = 0, bool reverse = false, Loc loc = Loc::current());
/// Elements of `src` picked along `axis` by `index` (Triton's tl.gather):
/// out[i, j] = src[index[i, j], j] for axis 0. `index` is an integer tile of
/// src's rank that matches src in every other dimension; the result has its
/// shape. Indices outside [0, src.shape[axis]) are an error in the
/// interpreter; compiled code clamps them. On the GPU src passes through
/// shared memory once.
///   tl::tensor permuted_rows = tl::gather(x, perm.expand_dims(1).broadcast_to({N, D}), 0);
tensor gather(const tensor &src, const tensor &index, int axis, Loc loc = Loc::current());
/// How often each of 0 .. bins-1 occurs in the 1-D integer tile `x` (Triton's
/// tl.histogram: bins of width 1 from 0), as an i32 tile of `bins` (a power
/// of two); values outside [0, bins) are not counted. On the GPU: atomic
/// adds into shared memory.
tensor histogram(const tensor &x, int bins, Loc loc = Loc::current());
/// A scan with a combine function of your own (tl.associative_scan):
/// `combine(a, b)` gets the combination of the earlier elements `a` and the
/// next element `b` (scalars of x's type) and returns theirs. It must be
/// associative - the GPU combines in its own grouping, within a thread, then
/// across lanes and warps, keeping the order - and need not be commutative;
/// it may use only elementwise operations on its arguments and literals.
///   tl::tensor running_max = tl::associative_scan(x, 0, [](tl::tensor a, tl::tensor b) {
///     return tl::maximum(a, b);
///   });
tensor associative_scan(const tensor &x, int axis, const std::function<tensor(tensor, tensor)> &combine,
                        bool reverse = false, Loc loc = Loc::current());
/// Tiles of one shape scanned together (a linear recurrence's (a, b) pairs:
/// combine(acc, next) = (acc.a * next.a, acc.b * next.a + next.b)).
std::vector<tensor> associative_scan(const std::vector<tensor> &xs, int axis,
                                     const std::function<std::vector<tensor>(const std::vector<tensor> &,
                                                                             const std::vector<tensor> &)> &combine,
                                     bool reverse = false, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Matrix product: [M,K] x [K,N] (+ acc [M,N]). bf16/f16 accumulate in f32.
//===----------------------------------------------------------------------===//

tensor dot(const tensor &a, const tensor &b, Loc loc = Loc::current());
tensor dot(const tensor &a, const tensor &b, const tensor &acc,
           precision p = precision::ieee, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Memory. Masked-off elements are not accessed; a masked load yields
// `other` there.
//===----------------------------------------------------------------------===//

tensor load(const tensor &ptrs, Loc loc = Loc::current());
tensor load(const tensor &ptrs, const tensor &mask, Loc loc = Loc::current());
tensor load(const tensor &ptrs, const tensor &mask, operand other);
void store(const tensor &ptrs, operand value);
void store(const tensor &ptrs, operand value, const tensor &mask);

/// PTX's cache operators (Triton's cache_modifier). Loads: ca (cache in L1
/// and L2, the default), cg (L2 only), cs (streaming: likely read once), cv
/// (cached nowhere: read afresh). Stores: wb (write back, the default), cg
/// (L2 only), cs (streaming), wt (write through).
enum class cache_modifier { none, ca, cg, cs, cv, wb, wt };
/// Triton's eviction_policy: lines read again soon are kept (evict_last),
/// lines streamed once go first (evict_first), in L1 and L2.
enum class eviction_policy { normal, evict_first, evict_last };
/// Hints for one load or store: a cache operator or an eviction policy (PTX
/// takes one or the other), or `is_volatile` (made where it stands, every
/// time: never merged, hoisted, dropped or prefetched). Hints for the
/// GPU's caches only - every backend computes the same values; a load the
/// software pipeliner turns into cp.async copies keeps none of them.
///
///   tl::tensor w = tl::load(w_ptr + offs, mask, 0.0f, {.eviction = tl::eviction_policy::evict_last});
///   tl::store(out + offs, y, mask, {.cache = tl::cache_modifier::cs});
struct access_hints {
  cache_modifier cache = cache_modifier::none;
  eviction_policy eviction = eviction_policy::normal;
  bool is_volatile = false;
};
tensor load(const tensor &ptrs, const access_hints &hints, Loc loc = Loc::current());
tensor load(const tensor &ptrs, const tensor &mask, operand other, const access_hints &hints);
void store(const tensor &ptrs, operand value, const access_hints &hints);
void store(const tensor &ptrs, operand value, const tensor &mask, const access_hints &hints);

/// How an atomic orders the memory accesses around it, at GPU scope (PTX's
/// `.sem`, Triton's `sem`): acq_rel by default - locks and flags built from
/// atomics need it; relaxed where only the update matters (accumulating
/// gradients: no fence around each atomic, and an unused result lets ptxas
/// issue a reduction, RED, instead of a round trip). On a scalar pointer the
/// order is the whole program's: a release follows every store the program
/// made before it, an acquire precedes every load it makes after (publish a
/// block, then a flag); on a tile of pointers it is each element's own.
enum class memory_order { relaxed, acquire, release, acq_rel };

/// Atomic read-modify-write per element; returns the old values. Integer
/// atomics need i32 or i64 memory; on floats: add on f16, bf16 (sm_90 on),
/// f32 and f64, max/min on f32 (NaN propagates), xchg on 32- or 64-bit
/// elements - what the GPU has.
tensor atomic_rmw(atomic_op op, const tensor &ptrs, operand value, memory_order sem = memory_order::acq_rel);
tensor atomic_rmw(atomic_op op, const tensor &ptrs, operand value, const tensor &mask,
                  memory_order sem = memory_order::acq_rel);
#define TEGULA_TL_ATOMIC(name, op)                                                                 \
  inline tensor name(const tensor &p, operand v, memory_order sem = memory_order::acq_rel) {       \
    return atomic_rmw(op, p, v, sem);                                                              \
  }                                                                                                \
  inline tensor name(const tensor &p, operand v, const tensor &mask,                               \
                     memory_order sem = memory_order::acq_rel) {                                   \
    return atomic_rmw(op, p, v, mask, sem);                                                        \
  }
TEGULA_TL_ATOMIC(atomic_add, atomic_op::add)
TEGULA_TL_ATOMIC(atomic_max, atomic_op::max)
TEGULA_TL_ATOMIC(atomic_min, atomic_op::min)
TEGULA_TL_ATOMIC(atomic_xchg, atomic_op::xchg)
TEGULA_TL_ATOMIC(atomic_and, atomic_op::and_)
TEGULA_TL_ATOMIC(atomic_or, atomic_op::or_)
TEGULA_TL_ATOMIC(atomic_xor, atomic_op::xor_)
#undef TEGULA_TL_ATOMIC
tensor atomic_cas(const tensor &ptrs, operand cmp, operand value, memory_order sem = memory_order::acq_rel);

//===----------------------------------------------------------------------===//
// Tensor descriptors: a strided global tensor read and written one block at a
// time. On sm_90a each becomes a TMA tensor map encoded on the host at launch
// (docs/hopper.md); elsewhere, masked loads and stores. Every backend applies
// TMA's rules, so a kernel behaves the same on all of them.
//
//   auto a = tl::make_tensor_descriptor(a_ptr, {M, K}, {K, 1}, {BM, BK});
//   tl::tensor tile = a.load({pid_m * BM, k});   // zeros outside [0, M) x [0, K)
//===----------------------------------------------------------------------===//

/// Marks a tensor-descriptor load that every program of a thread-block
/// cluster makes alike: `desc.load({k, n}, tl::multicast)`. With
/// LaunchOptions::cluster_size C, programs C*c .. C*c + C-1 (along x) form
/// cluster c and must load the same blocks through it, in the same order
/// (the interpreter checks this). Where the load fills a warp-specialised
/// TMA ring on sm_90a, each block is then fetched once for the cluster: each
/// CTA copies 1/C of its rows into all of them. The block is the same
/// either way.
struct multicast_t {
  explicit constexpr multicast_t() = default;
};
inline constexpr multicast_t multicast{};

class tensor_descriptor {
public:
  tensor_descriptor() = default;
  explicit tensor_descriptor(const tensor &handle) : handle_(handle) {}

  /// The block whose first element is at `offsets` (one element coordinate
  /// per dimension, i32, may be negative); elements outside the tensor read
  /// as zero.
  tensor load(const std::vector<operand> &offsets, Loc loc = Loc::current()) const;
  /// The same block, loaded alike by every program of the cluster (see
  /// tl::multicast).
  tensor load(const std::vector<operand> &offsets, multicast_t, Loc loc = Loc::current()) const;
  /// Write `value` (converted to the element type, broadcast to the block)
  /// at `offsets`; elements outside the tensor are not written.
  void store(const std::vector<operand> &offsets, operand value,
             Loc loc = Loc::current()) const;
  Shape block_shape(Loc loc = Loc::current()) const;
  DType dtype(Loc loc = Loc::current()) const;
  /// The traced descriptor value.
  const tensor &handle() const { return handle_; }

private:
  tensor handle_;
};

/// Describe the tensor at `base` with extents `shape` and `strides` (in
/// elements, outermost first; the innermost stride is 1), accessed in blocks
/// of `block_shape` (power-of-two extents <= 256, the innermost spanning a
/// multiple of 16 bytes). At run time `base` must be 16-byte aligned and the
/// other strides multiples of 16 bytes.
tensor_descriptor make_tensor_descriptor(const tensor &base, const std::vector<operand> &shape,
                                         const std::vector<operand> &strides,
                                         const Shape &block_shape, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Block pointers (Triton's tl.make_block_ptr / tl.advance): a block of a
// strided tensor at element offsets, loaded and stored with its bounds
// checked along the dimensions asked for. They are pointer arithmetic and
// masks (what Triton rewrites them into), so every backend runs them alike,
// and tl::range carries them like tiles:
//
//   auto a = tl::make_block_ptr(a_ptr, {M, K}, {K, 1}, {pid_m * BM, 0}, {BM, BK});
//   for (auto k : tl::range(0, K, BK, acc, a)) {
//     acc = tl::dot(tl::load(a, {0, 1}), ..., acc);   // zeros past M and K
//     a = tl::advance(a, {0, BK});
//   }
//===----------------------------------------------------------------------===//

/// What a block-pointer load reads where it checks bounds and finds none.
enum class padding { zero, nan };

namespace detail {
struct CarriedList;
struct Yielded;
} // namespace detail

class block_ptr {
public:
  block_ptr() = default;
  block_ptr(const block_ptr &) = default;
  block_ptr(block_ptr &&) = default;
  /// Part by part when the ranks agree: each part is a tensor assignment (a
  /// loop body's uncarried `p = tl::advance(p, ...)` is caught as a tile's).
  block_ptr &operator=(const block_ptr &other) {
    if (values_.size() == other.values_.size())
      for (size_t i = 0; i < values_.size(); ++i)
        values_[i] = other.values_[i];
    else
      values_ = other.values_;
    block_ = other.block_;
    order_ = other.order_;
    return *this;
  }
  block_ptr &operator=(block_ptr &&other) { return *this = static_cast<const block_ptr &>(other); }
  /// The block's extents (a load's shape).
  const Shape &block_shape() const { return block_; }
  /// Dimensions from the fastest-varying in memory to the slowest (Triton's
  /// `order`; checked to be a permutation, otherwise descriptive).
  const std::vector<int> &order() const { return order_; }
  int rank() const { return int(block_.size()); }
  /// The traced base pointer (a scalar), and per dimension the tensor's
  /// extent and stride (i64 scalars, elements) and the block's offset (i32).
  const tensor &base(Loc loc = Loc::current()) const;
  const tensor &extent(int dim, Loc loc = Loc::current()) const;
  const tensor &stride(int dim, Loc loc = Loc::current()) const;
  const tensor &offset(int dim, Loc loc = Loc::current()) const;

private:
  friend block_ptr make_block_ptr(const tensor &, const std::vector<operand> &, const std::vector<operand> &,
                                  const std::vector<operand> &, const Shape &, const std::vector<int> &, Loc);
  friend block_ptr advance(const block_ptr &, const std::vector<operand> &, Loc);
  friend struct detail::CarriedList;
  friend struct detail::Yielded;
  const tensor &part(size_t i, const char *what, int dim, const Loc &loc) const;
  // The base, then the extents, the strides and the offsets, one per
  // dimension each: what a loop carries.
  std::vector<tensor> values_;
  Shape block_;
  std::vector<int> order_;
};

/// A pointer to the `block_shape` block at `offsets` (i32, may be negative)
/// of the tensor at `base` with extents `shape` and `strides` (elements,
/// outermost first). `order` lists the dimensions fastest-varying first; by
/// default the last is the fastest (row-major).
block_ptr make_block_ptr(const tensor &base, const std::vector<operand> &shape, const std::vector<operand> &strides,
                         const std::vector<operand> &offsets, const Shape &block_shape,
                         const std::vector<int> &order = {}, Loc loc = Loc::current());
/// The same block pointer moved by `offsets` elements along each dimension.
block_ptr advance(const block_ptr &p, const std::vector<operand> &offsets, Loc loc = Loc::current());
/// The block. Elements outside [0, extent) along a dimension in
/// `boundary_check` read as `pad` (zero, or NaN for floating-point blocks)
/// and are not accessed; along the other dimensions they must be inside the
/// tensor.
tensor load(const block_ptr &p, const std::vector<int> &boundary_check = {}, padding pad = padding::zero,
            const access_hints &hints = {}, Loc loc = Loc::current());
/// Writes `value` (converted to the element type, broadcast to the block);
/// elements outside [0, extent) along a dimension in `boundary_check` are
/// not written.
void store(const block_ptr &p, operand value, const std::vector<int> &boundary_check = {},
           const access_hints &hints = {}, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Composites (Triton's standard library beside its primitives), made of the
// ops above.
//===----------------------------------------------------------------------===//

/// minimum(maximum(x, lo), hi): NaN in x stays NaN.
tensor clamp(operand x, operand lo, operand hi);
/// 1 / (1 + exp(-x)).
tensor sigmoid(const tensor &x, Loc loc = Loc::current());
/// exp(x - max) / sum(exp(x - max)) along `axis` (the shape of x).
tensor softmax(const tensor &x, int axis, Loc loc = Loc::current());
/// The high 32 bits of the unsigned product of two i32 tiles (unsigned
/// words' bits), as CUDA's __umulhi.
tensor umulhi(const tensor &a, const tensor &b, Loc loc = Loc::current());
/// Integer division rounding up, (a + b - 1) / b, for positive a and b.
tensor cdiv(operand a, operand b);
/// A new last dimension of two: join(a, b)[..., 0] is a, [..., 1] is b (two
/// tiles of one shape and type; scalars give a [2] tile).
tensor join(const tensor &a, const tensor &b, Loc loc = Loc::current());
/// join's inverse: the halves [..., 0] and [..., 1] of a tile whose last
/// dimension is 2 (a [2] tile gives two scalars).
std::pair<tensor, tensor> split(const tensor &x, Loc loc = Loc::current());
/// a and b's elements alternating along the last dimension (twice as long):
/// join(a, b) reshaped, as Triton's tl.interleave.
tensor interleave(const tensor &a, const tensor &b, Loc loc = Loc::current());
/// a's rows, then b's: concatenated along the first dimension (twice as
/// long), in order.
tensor cat(const tensor &a, const tensor &b, Loc loc = Loc::current());
/// x with the order of `dim` reversed (Triton's tl.flip): a gather along it
/// (on the GPU the tile passes through shared memory once).
tensor flip(const tensor &x, int dim, Loc loc = Loc::current());
/// Triton's swizzle2d: (i, j) of a size_i x size_j grid renumbered so that
/// the grid is walked in groups of size_g rows, column by column within a
/// group (the last group may be shorter) - a GEMM's tile order for L2 reuse.
/// Integer scalars or tiles (broadcast), all non-negative, size_g positive;
/// returns the new (i, j).
std::pair<tensor, tensor> swizzle2d(operand i, operand j, operand size_i, operand size_j, operand size_g,
                                    Loc loc = Loc::current());
/// A tile of x's shape and element type: zeros, or `value` everywhere.
tensor zeros_like(const tensor &x, Loc loc = Loc::current());
tensor full_like(const tensor &x, operand value, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Promises about integer offsets the compiler cannot see (Triton's
// tl.multiple_of / tl.max_contiguous), so that accesses through them may be
// 16-byte vectors: an offset loaded from memory, a modulo. The interpreter
// checks every promise at every launch (a false one is an error at its
// line); compiled code relies on it. docs/dsl.md.
//===----------------------------------------------------------------------===//

/// x, promised to be a multiple of `value` (a power of two) - for a tile,
/// the first element of each run of consecutive values (max_contiguous's,
/// or each element without one): `tl::multiple_of(tl::load(starts + pid), 16)`.
/// One value for every dimension, or one per dimension.
tensor multiple_of(const tensor &x, int value, Loc loc = Loc::current());
tensor multiple_of(const tensor &x, const std::vector<int> &values, Loc loc = Loc::current());
/// x, promised to hold runs of `value` consecutive integers (+1 each) in
/// aligned groups along each dimension (one per dimension, or one for all):
///   offs = tl::max_contiguous(tl::multiple_of(offs % n, BLOCK), BLOCK);
tensor max_contiguous(const tensor &x, int value, Loc loc = Loc::current());
tensor max_contiguous(const tensor &x, const std::vector<int> &values, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// PTX of your own (Triton's tl.inline_asm_elementwise). docs/dsl.md.
//===----------------------------------------------------------------------===//

/// Run `asm_string` (PTX; $0.. name the outputs, then the inputs) on every
/// element of `args` (tiles and scalars, broadcast together) and return a
/// tile of `dtype` of their shape. `constraints` are LLVM's: "=r,r,r" for
/// one 32-bit output and two 32-bit inputs ("h" 16 bits, "l" 64, "f" f32,
/// "d" f64). With `pack` > 1 the asm sees `pack` elements at a time packed in
/// one register, the first lowest (four i8 in an "r"). `is_pure`: no side
/// effects, so the compiler may move or drop it. The simulator and the
/// interpreter run it with the simulator's PTX subset (arithmetic, bit
/// operations, cvt, selp, ...; docs/simulator.md), the GPU as it is.
///   tl::tensor swapped = tl::inline_asm_elementwise("prmt.b32 $0, $1, 0, 0x0123;", "=r,r", {x}, tl::i32, true, 1);
tensor inline_asm_elementwise(const std::string &asm_string, const std::string &constraints,
                              const std::vector<tensor> &args, DType dtype, bool is_pure, int pack,
                              Loc loc = Loc::current());
/// Several outputs: one tile per type in `dtypes`, in the order of the
/// "=" constraints.
std::vector<tensor> inline_asm_elementwise(const std::string &asm_string, const std::string &constraints,
                                           const std::vector<tensor> &args, const std::vector<DType> &dtypes,
                                           bool is_pure, int pack, Loc loc = Loc::current());
/// x sorted along its last dimension (Triton's tl.sort; `dim` -1 or the last),
/// ascending or `descending`: a bitonic network of log2(n) (log2(n) + 1) / 2
/// compare-and-swap steps, each moving the tile through layout conversions -
/// for small tiles (a top-k's candidates, a row of scores). NaNs compare
/// false and stay where the network leaves them; values move bit for bit.
tensor sort(const tensor &x, int dim = -1, bool descending = false, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Random numbers: Philox4x32 (Random123's counter-based generator, the one
// Triton's tl.rand uses). Stateless: an element's numbers depend only on
// (seed, offset), the same on every backend, grid and layout. 32-bit words
// are i32 tiles holding unsigned values' bits. docs/dsl.md.
//===----------------------------------------------------------------------===//

/// The `rounds`-round Philox4x32 block (10: Philox4x32-10) of the counter
/// (c0, c1, c2, c3) under the key (seed_lo, seed_hi): four i32 tiles. Each
/// operand is a number or an integer tile/scalar (wider ones: the low word);
/// tiles broadcast together.
std::array<tensor, 4> philox(operand seed_lo, operand seed_hi, operand c0, operand c1, operand c2, operand c3,
                             int rounds = 10, Loc loc = Loc::current());
/// Four random words (i32) per element of `offset` (an integer tile or
/// scalar: each element's counter; i64 offsets use both words) under `seed`
/// (an integer number, scalar or tile; taken as 64 bits, an i32 sign
/// extended).
std::array<tensor, 4> randint4x(operand seed, const tensor &offset, int rounds = 10, Loc loc = Loc::current());
/// The first of randint4x's words.
tensor randint(operand seed, const tensor &offset, int rounds = 10, Loc loc = Loc::current());
/// Uniform f32 in [0, 1) per element of `offset`: 24 random bits, exact
/// multiples of 2^-24 (never 1).
tensor rand(operand seed, const tensor &offset, int rounds = 10, Loc loc = Loc::current());
/// Standard normal f32 per element of `offset` (Box-Muller on two words).
tensor randn(operand seed, const tensor &offset, int rounds = 10, Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Debugging: printed once per program by every backend.
//===----------------------------------------------------------------------===//

void print(const std::string &prefix, std::initializer_list<tensor> values = {},
           Loc loc = Loc::current());
/// Report `message` with the failing program and element where cond is false.
void device_assert(const tensor &cond, const std::string &message,
                   Loc loc = Loc::current());
/// Every thread of the program meets here, and their memory accesses before
/// it are visible to each other after it (Triton's tl.debug_barrier;
/// bar.sync on the GPU). The compiler already orders a load after a store
/// of the same buffer (order-global-accesses): this is for what it takes to
/// be apart - two arguments that alias, say.
void debug_barrier(Loc loc = Loc::current());

//===----------------------------------------------------------------------===//
// Control flow on runtime values. (Plain C++ `for`/`if` on constants unroll
// or specialise at trace time.)
//===----------------------------------------------------------------------===//

namespace detail {
struct LoopState;

/// tl::range's carried variables in order, vectors flattened element by
/// element. A vector's elements are looked up afresh each time
/// the loop rebinds them - a body may swap or move-assign the vector - and
/// its size is checked: it must not change.
struct CarriedList {
  struct Vector {
    std::vector<tensor> *vec;
    size_t size, first; // its elements are tensors[first, first + size)
  };
  std::vector<tensor *> tensors;
  std::vector<Vector> vectors;
  void add(tensor &t) { tensors.push_back(&t); }
  void add(std::vector<tensor> &ts) {
    vectors.push_back({&ts, ts.size(), tensors.size()});
    for (tensor &t : ts)
      tensors.push_back(&t);
  }
  /// A block pointer's traced parts; its block shape must stay as it was.
  struct BlockPtr {
    block_ptr *p;
    Shape block;
  };
  std::vector<BlockPtr> blockPtrs;
  void add(block_ptr &p) {
    blockPtrs.push_back({&p, p.block_});
    add(p.values_);
  }
};

/// What tl::range and tl::while_ carry.
template <class T>
inline constexpr bool is_carriable_v =
    !std::is_const_v<T> && (std::is_base_of_v<tensor, T> || std::is_same_v<T, std::vector<tensor>> ||
                            std::is_same_v<T, block_ptr>);
/// The carried variables of a loop, in order.
template <class... Carried> CarriedList carry(Carried &...carried) {
  static_assert((is_carriable_v<Carried> && ...),
                "tl::range and tl::while_ carry tl::tensor variables (tl::ptr, tl::scalar too), "
                "std::vector<tl::tensor>s and tl::block_ptrs, not const");
  CarriedList list;
  (list.add(carried), ...);
  return list;
}
} // namespace detail

/// Settings of one tl::range loop (Triton's tl.range keywords):
/// `num_stages` is this loop's software-pipeline depth in place of the
/// launch's num_stages (1: its loads stay where they are; 0: the launch's).
/// `warp_specialize` (sm_90a) gives the TMA-fed dots of this loop - or of a
/// loop inside it, a persistent kernel's tile loop - the kernel's producer
/// warpgroup, whatever the launch's warp_specialize; false keeps them from
/// it; unset, the launch decides. A kernel has one producer: the first loop
/// asking for it (in program order) that can have it gets it.
///
///   for (auto k : tl::range(0, K, BK, tl::loop_options{.num_stages = 4}, acc)) ...
///   for (auto t : tl::range(pid, tiles, programs, tl::loop_options{.warp_specialize = true})) ...
struct loop_options {
  int num_stages = 0;
  std::optional<bool> warp_specialize;
};

/// A dynamic loop `for (i = lo; i < hi; i += step)`, traced once into
/// scf.for; a literal negative step counts down, `for (i = lo; i > hi;
/// i += step)` (a step known only at launch must be positive). Tiles the
/// body reassigns must be listed as carried variables:
///
///   tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
///   for (auto k : tl::range(0, K, BK, acc)) { acc = acc + ...; }
///   // acc now holds the value after the last iteration
///
/// A std::vector<tl::tensor> carries each of its elements (a row kept in
/// several column chunks, one accumulator a chunk); the body assigns its
/// elements (or swaps or assigns whole vectors of the same size) but must
/// not resize it. A tl::block_ptr carries its offsets (and base, extents
/// and strides); the body may advance it but not change its block shape.
/// `break`, `continue` and `return` inside the body are not supported.
class range {
public:
  template <class... Carried>
  range(operand lo, operand hi, operand step, Carried &...carried)
      : range(lo, hi, step, detail::carry(carried...)) {}
  template <class... Carried>
  range(operand lo, operand hi, operand step, const loop_options &options, Carried &...carried)
      : range(lo, hi, step, detail::carry(carried...), options) {}
  range(operand lo, operand hi, operand step, std::vector<tensor *> carried);
  range(operand lo, operand hi, operand step, detail::CarriedList carried, const loop_options &options = {});
  ~range() noexcept(false);
  range(const range &) = delete;
  range &operator=(const range &) = delete;

  struct iterator {
    range *r;
    tensor operator*() const;
    iterator &operator++();
    bool operator!=(const iterator &other) const;
  };
  iterator begin();
  iterator end() { return iterator{nullptr}; }

private:
  detail::LoopState *state_;
};

namespace detail {
/// tl::while_'s condition, and where the loop is (the caller's line).
struct WhileCondition {
  std::function<tensor()> fn;
  Loc loc;
  template <class F, std::enable_if_t<std::is_convertible_v<std::invoke_result_t<F &>, tensor>, int> = 0>
  WhileCondition(F f, Loc l = Loc::current()) : fn(std::move(f)), loc(l) {}
};
void trace_while(const WhileCondition &cond, const std::function<void()> &body, CarriedList carried);
} // namespace detail

/// A dynamic `while (cond()) body();`, traced once into scf.while. `cond`
/// returns a scalar boolean tensor; as with tl::range, the tiles the body
/// (or the condition) reassigns are listed as carried variables:
///
///   tl::tensor lo = tl::full({}, 0, tl::i32), hi = n;   // binary search
///   tl::while_([&] { return lo < hi; }, [&] {
///     tl::tensor mid = (lo + hi) / 2;
///     tl::tensor below = tl::load(sorted + mid) < key;
///     lo = tl::where(below, mid + 1, lo);
///     hi = tl::where(below, hi, mid);
///   }, lo, hi);
///
/// The condition runs before every iteration and once more at the end; what
/// it computes is seen by neither the body nor the code after the loop
/// (carry it). `break`, `continue` and `return` in the body are not supported.
template <class Body, class... Carried>
void while_(detail::WhileCondition cond, Body &&body, Carried &...carried) {
  static_assert(std::is_void_v<std::invoke_result_t<Body &>>,
                "tl::while_: the body returns nothing; its results are the carried variables");
  detail::trace_while(cond, std::function<void()>(std::ref(body)), detail::carry(carried...));
}

namespace detail {
/// What a tl::if_ branch returns, flattened: its tiles, and each block
/// pointer's traced parts; the block pointers themselves keep their static
/// block shape and order (the then branch's rebuild them after the if).
struct Yielded {
  std::vector<tensor> values;
  std::vector<block_ptr> blockPtrs;
  size_t nextValue = 0, nextBlockPtr = 0; // rebuilding: what is taken next

  void add(const tensor &t) { values.push_back(t); }
  void add(const block_ptr &p) {
    blockPtrs.push_back(p);
    values.insert(values.end(), p.values_.begin(), p.values_.end());
  }
  tensor takeTensor() { return values.at(nextValue++); }
  block_ptr takeBlockPtr() {
    block_ptr p = blockPtrs.at(nextBlockPtr++);
    for (tensor &t : p.values_)
      t = values.at(nextValue++);
    return p;
  }
};
/// Trace a tl::if_; returns the results, as the then branch's Yielded.
using BranchFn = void (*)(void *closure, Yielded &yielded);
Yielded trace_if(const tensor &cond, BranchFn thenFn, void *thenClosure, BranchFn elseFn, void *elseClosure, Loc loc);
template <class R> void collect(R &&r, Yielded &out) {
  using D = std::decay_t<R>;
  if constexpr (std::is_same_v<D, block_ptr>) {
    out.add(r);
  } else if constexpr (std::is_convertible_v<R, tensor>) {
    out.add(tensor(r));
  } else {
    std::apply([&](auto &&...parts) { (collect(parts, out), ...); }, r);
  }
}
template <class T> T take(Yielded &y) {
  if constexpr (std::is_same_v<std::decay_t<T>, block_ptr>)
    return y.takeBlockPtr();
  else
    return y.takeTensor();
}
template <class R> R uncollect(Yielded &y) {
  if constexpr (std::is_void_v<R>) {
    return;
  } else if constexpr (std::is_same_v<R, block_ptr> || std::is_convertible_v<R, tensor>) {
    return take<R>(y);
  } else {
    // Braced initialisation takes them in order.
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return R{take<std::tuple_element_t<I, R>>(y)...};
    }(std::make_index_sequence<std::tuple_size_v<R>>{});
  }
}
template <class F> void call_branch(void *closure, Yielded &out) {
  F &f = *static_cast<F *>(closure);
  using R = std::invoke_result_t<F &>;
  if constexpr (std::is_void_v<R>)
    f();
  else
    collect(f(), out);
}
} // namespace detail

/// Runtime `if` on a scalar i1, traced into scf.if. Branches are lambdas; a
/// value (or tuple of values; tiles and tl::block_ptrs of the same block
/// shape) both return becomes the result:
///
///   x = tl::if_(n > 0, [&] { return x * 2.0f; }, [&] { return x; });
///   bp = tl::if_(last, [&] { return tl::advance(bp, {0, BK}); }, [&] { return bp; });
///   tl::if_(pid == 0, [&] { tl::store(out, total); });
template <class Then, class Else>
auto if_(const tensor &cond, Then &&thenFn, Else &&elseFn, Loc loc = Loc::current()) {
  using T = std::decay_t<Then>;
  using E = std::decay_t<Else>;
  using R = std::invoke_result_t<T &>;
  static_assert(std::is_same_v<R, std::invoke_result_t<E &>>,
                "tl::if_: both branches must return the same type");
  detail::Yielded results = detail::trace_if(cond, &detail::call_branch<T>, &thenFn, &detail::call_branch<E>, &elseFn, loc);
  return detail::uncollect<R>(results);
}
template <class Then>
void if_(const tensor &cond, Then &&thenFn, Loc loc = Loc::current()) {
  using T = std::decay_t<Then>;
  static_assert(std::is_void_v<std::invoke_result_t<T &>>,
                "tl::if_ without an else branch cannot return values");
  detail::trace_if(cond, &detail::call_branch<T>, &thenFn, nullptr, nullptr, loc);
}


} // namespace tegula::tl
