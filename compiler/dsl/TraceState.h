//===- TraceState.h - the builder state behind tl:: calls -------*- C++ -*-===//
//
// While a kernel is being traced, a thread-local TraceState holds the
// OpBuilder that every tl:: function appends to. Internal to the compiler.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialects/tile/TileDialect.h"
#include "tegula/tl.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <fmt/format.h>

#include <optional>

namespace tegula::dsl {

/// An open tl::range or tl::while_ loop (condition and body), innermost
/// last: the tensor objects made outside it that it read while they held a
/// value from outside it, before assigning them (with the first read's line
/// where known). Reassigning one of those in it, uncarried, is an error: every
/// iteration would read the value from before the loop.
struct TraceFrame {
  enum class Kind { Range, While } kind;
  uint32_t serial;    // tensors made in it have this scope (tl::tensor::scope)
  mlir::Operation *op; // the loop: values made in it are defined under it
  const std::vector<tl::tensor *> *carried;
  llvm::DenseMap<const tl::tensor *, std::source_location> reads;
  llvm::SmallPtrSet<const tl::tensor *, 8> assigned; // in this iteration, before any read
  std::source_location loc;
  /// The first read of an object the loop then destroyed uncarried (a
  /// std::vector<tl::tensor> move-assigned or cleared in it; not one whose
  /// value was moved on): said by throwIfStale, since a destructor cannot
  /// throw.
  std::optional<std::source_location> replacedRead;
  /// Objects read with their value from before the loop and then reassigned
  /// uncarried: the value they held then (opaque mlir::Value) and the error
  /// to give. Judged when the body ends (throwIfStale): an object holding an
  /// equal value again by then (`acc = tl::zeros(...)` at the end of an
  /// iteration whose inner loop carried acc) gives every iteration what it
  /// read.
  struct Reassigned {
    void *before;
    std::string error;
    unsigned order; // the first in program order is said
  };
  llvm::DenseMap<const tl::tensor *, Reassigned> reassigned;
  /// The error of a reassigned object destroyed before the body's end.
  std::optional<std::string> unjudged;
  /// tl::range's step as given, when a tile (opaque mlir::Value): a variable
  /// holding it that the body reassigns was meant to be carried.
  void *stepValue = nullptr;
};

/// A construct traced once whatever it does at run time - a loop body (its
/// frame's serial), a tl::if_ branch: the objects from outside it that it
/// assigns, with their values before (AssignScope.cpp).
struct AssignScope {
  uint32_t serial; // objects made before the construct have a lower scope
  llvm::DenseMap<const tl::tensor *, void *> entered;
  /// Objects this construct put in an enclosing loop frame's `assigned`
  /// (frame index, object): a branch takes them back when it closes.
  std::vector<std::pair<size_t, const tl::tensor *>> assignedInFrames;
};

struct TraceState {
  mlir::MLIRContext *ctx;
  mlir::OpBuilder builder;
  mlir::func::FuncOp func;
  std::string kernelName;
  /// Unique per trace, so a tl::tensor kept from another trace is caught.
  uint64_t id;
  std::vector<TraceFrame> frames;
  uint32_t nextFrameSerial = 1;
  std::vector<AssignScope> assignScopes; // innermost last
  bool rebinding = false;                // rebind(): not an assignment
  std::vector<mlir::Operation *> unusableMarkers;
  explicit TraceState(mlir::MLIRContext *c);
};

/// Opens a construct's scope (`serial`: its loop frame's; 0: a new one, for
/// a tl::if_ branch).
void openAssignScope(TraceState &ts, uint32_t serial = 0);
/// Closes the innermost: the objects from outside it it assigned, each with
/// its value before; `forgetAssigned` (a branch): its objects leave the
/// enclosing loops' `assigned` sets again.
llvm::DenseMap<const tl::tensor *, void *> closeAssignScope(TraceState &ts, bool forgetAssigned = false);
/// Gives `object` the value `impl` without its counting as an assignment.
void rebind(TraceState &ts, const tl::tensor &object, void *impl);
/// `object` was assigned `value` in a construct that may not run (a branch
/// not taken, a loop of no iterations) or runs again, traced once: after
/// it, the object holds a marker defined at the end of `block` (inside the
/// construct), so its next use is the scope error that says to return the
/// value from the branches or carry it through the loop.
void makeUnusableAfter(TraceState &ts, const tl::tensor &object, mlir::Value value, mlir::Block *block);
/// Erases the markers, which nothing uses (a use is an error), before the
/// traced function is verified.
void eraseUnusableMarkers(TraceState &ts);

/// Opens a frame for the loop `op` whose condition or body is being traced
/// (the innermost from now on); closeFrame closes the innermost.
void openFrame(TraceState &ts, TraceFrame::Kind kind, mlir::Operation *op, const std::vector<tl::tensor *> *carried,
               const std::source_location &loc);
void closeFrame(TraceState &ts);
/// "WHERE: error: this reads a variable from before the ... loop (line N)
/// that the loop then WHAT without carrying it, ...".
std::string staleReadMessage(const TraceFrame &f, const std::string &where, const std::string &what);
/// The innermost frame's stale reads, as an error (before its loop's
/// yield: not from a destructor): an uncarried whole-object replacement, or
/// an object read and reassigned uncarried that does not hold its value from
/// before the loop again.
void throwIfStale(TraceState &ts);
/// openFrame ... closeFrame around a scope.
struct FrameGuard {
  FrameGuard(TraceState &ts, TraceFrame::Kind kind, mlir::Operation *op, const std::vector<tl::tensor *> *carried,
             const std::source_location &loc);
  ~FrameGuard();
  FrameGuard(const FrameGuard &) = delete;
  FrameGuard &operator=(const FrameGuard &) = delete;
  TraceState &ts;
};

/// The active trace, or null.
TraceState *activeTraceState();
/// The active trace; throws a located error when no kernel is being traced.
TraceState &current(const std::source_location &loc);
/// Install `state` as this thread's trace for the lifetime of the guard.
struct TraceScope {
  explicit TraceScope(TraceState *state);
  ~TraceScope();
  TraceState *previous;
};

/// `file:line: error: message` — the format of every DSL error.
[[noreturn]] void fail(const std::source_location &loc, const std::string &message);
mlir::Location toLoc(mlir::MLIRContext *ctx, const std::source_location &loc);

mlir::Value unwrap(const tl::tensor &t, const std::source_location &loc);
/// unwrap for the value's type alone (dtype, shape): not a read of it.
mlir::Value unwrapForType(const tl::tensor &t, const std::source_location &loc);
tl::tensor wrap(mlir::Value v);

mlir::Type toMlirType(mlir::MLIRContext *ctx, DType t);
/// The DType of a scalar element type (pointer types give their pointee's).
DType toDType(mlir::Type elem);
std::string shapeString(llvm::ArrayRef<int64_t> shape);

/// "f32", "pointer to bf16": an element type as users know it.
std::string describeType(mlir::Type elem);
/// NumPy broadcast of two shapes; fails naming `what` when incompatible.
std::vector<int64_t> commonShape(llvm::ArrayRef<int64_t> x, llvm::ArrayRef<int64_t> y,
                                 const std::source_location &loc, llvm::StringRef what);
/// Tiles have positive power-of-two extents and at most kMaxTileElements.
void checkTileShape(llvm::ArrayRef<int64_t> shape, const std::source_location &loc,
                    llvm::StringRef what);
constexpr int64_t kMaxTileElements = int64_t(1) << 20;
/// fp8 (f8e4m3, f8e5m2): storage types, converted before any arithmetic.
bool isFp8(mlir::Type elem);
/// Fails at `loc` when `elem` is fp8, saying how to compute with it.
void rejectFp8(mlir::Type elem, const std::source_location &loc, llvm::StringRef what);
/// Fails unless `v` is a number (not a pointer); `what` names the argument.
void requireNumber(mlir::Value v, const std::source_location &loc, llvm::StringRef what);

/// Fails (at the literal's location) when an integer literal does not fit
/// the integer type `type`, or a finite literal would not be finite in the
/// floating-point type `type`.
void checkLiteralFits(const tl::operand &o, mlir::Type type);
/// Build `value` (an int/float/bool literal operand) as a scalar of `type`;
/// fails when the literal does not fit the type (checkLiteralFits).
mlir::Value materializeLiteral(TraceState &ts, const tl::operand &o, mlir::Type type,
                               mlir::Location loc);
/// Splat / expand / broadcast `v` to `shape` following NumPy rules; fails
/// with a located error naming `what` when the shapes are incompatible.
mlir::Value broadcastTo(TraceState &ts, mlir::Value v, llvm::ArrayRef<int64_t> shape,
                        const std::source_location &loc, llvm::StringRef what);
/// Convert a value to another element type, keeping its shape.
mlir::Value castTo(TraceState &ts, mlir::Value v, mlir::Type elem, mlir::Location loc);
/// A value's shape, empty for a scalar.
llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);
mlir::Type elementOf(mlir::Value v);
/// The type with `v`'s shape and the given element type.
mlir::Type withElement(mlir::Type like, mlir::Type elem);

/// One integer coordinate, extent or stride: an integer scalar (any width,
/// converted to `type`) or an integer literal; fails naming `what` otherwise.
mlir::Value integerScalar(TraceState &ts, const tl::operand &o, mlir::Type type, const std::string &what);
/// What a block store writes: `value` converted to `block`'s element type
/// and broadcast to its shape; `fn` names the store in errors.
mlir::Value valueToStore(TraceState &ts, const tl::operand &value, mlir::RankedTensorType block,
                         const std::source_location &loc, llvm::StringRef fn);

/// Check that every operand is visible at the insertion point: a value made
/// inside a tl::range body or tl::if_ branch cannot escape it.
void checkInScope(TraceState &ts, mlir::Value v, const std::source_location &loc);

} // namespace tegula::dsl
