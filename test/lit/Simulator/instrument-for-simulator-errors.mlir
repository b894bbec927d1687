// RUN: tegula-opt %s --split-input-file --verify-diagnostics --instrument-for-simulator -o /dev/null

// Only what the simulator knows how to run is accepted, by name.
llvm.func @uses_texture(%p: !llvm.ptr<1>) -> i32 {
  // expected-error @+1 {{inline PTX not supported: instruction 'tex.1d.v4.s32.s32'}}
  %0 = llvm.inline_asm has_side_effects "tex.1d.v4.s32.s32 $0, [$1];", "=r,l" %p : (!llvm.ptr<1>) -> i32
  llvm.return %0 : i32
}

// -----

// expected-error @+1 {{the kernel calls '__nv_mystery', which the simulator does not provide}}
llvm.func @__nv_mystery(f32) -> f32
llvm.func @k(%x: f32) -> f32 {
  %0 = llvm.call @__nv_mystery(%x) : (f32) -> f32
  llvm.return %0 : f32
}
