//===- AssignScope.cpp - variables assigned in a construct traced once -----===//
//
// A loop body or a tl::if_ branch is traced once, whatever it does at run
// time. An object from outside it that it assigns a value made inside is
// caught by the scope check when used after; one it assigns a value from
// outside (`v = zero;`, zero made before) would carry that value on
// unconditionally - as if the branch were always taken, the loop never
// empty. So after the construct such an object holds a marker made inside
// it, and its next use is the scope error that says what to do (return it
// from both branches; carry it). A branch's assignments are also undone for
// the other branch, which in C++ never sees them.
//
//===----------------------------------------------------------------------===//
#include "compiler/dsl/TraceState.h"

#include "mlir/IR/BuiltinOps.h"

namespace tegula::dsl {

void openAssignScope(TraceState &ts, uint32_t serial) {
  AssignScope scope;
  scope.serial = serial ? serial : ts.nextFrameSerial++;
  ts.assignScopes.push_back(std::move(scope));
}

llvm::DenseMap<const tl::tensor *, void *> closeAssignScope(TraceState &ts, bool forgetAssigned) {
  if (ts.assignScopes.empty())
    return llvm::DenseMap<const tl::tensor *, void *>();
  AssignScope &scope = ts.assignScopes.back();
  llvm::DenseMap<const tl::tensor *, void *> entered = std::move(scope.entered);
  // A branch may not run: what it assigned is no reason to stop counting a
  // later read (in the other branch) as a read of the loop's old value.
  if (forgetAssigned)
    for (auto [frame, object] : scope.assignedInFrames)
      if (frame < ts.frames.size())
        ts.frames[frame].assigned.erase(object);
  else if (ts.assignScopes.size() >= 2) // a loop's (its frame the last): an enclosing branch takes them back
    for (auto entry : scope.assignedInFrames)
      if (entry.first + 1 < ts.frames.size())
        ts.assignScopes[ts.assignScopes.size() - 2].assignedInFrames.push_back(entry);
  ts.assignScopes.pop_back();
  return entered;
}

void rebind(TraceState &ts, const tl::tensor &object, void *impl) {
  ts.rebinding = true;
  const_cast<tl::tensor &>(object) = tl::tensor::from_impl(impl, ts.id); // an object of the user's: not const
  ts.rebinding = false;
}

void makeUnusableAfter(TraceState &ts, const tl::tensor &object, mlir::Value value, mlir::Block *block) {
  mlir::OpBuilder b(ts.ctx);
  if (block->mightHaveTerminator())
    b.setInsertionPoint(block->getTerminator());
  else
    b.setInsertionPointToEnd(block);
  auto marker = mlir::UnrealizedConversionCastOp::create(b, value.getLoc(), mlir::TypeRange{value.getType()},
                                                         mlir::ValueRange{value});
  ts.unusableMarkers.push_back(marker);
  rebind(ts, object, marker.getResult(0).getAsOpaquePointer());
}

void eraseUnusableMarkers(TraceState &ts) {
  for (mlir::Operation *marker : ts.unusableMarkers)
    if (marker->use_empty())
      marker->erase();
  ts.unusableMarkers.clear();
}

} // namespace tegula::dsl
