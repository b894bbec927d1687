# TEGULA_STATIC_LLVM: libtegula.so with LLVM and MLIR linked in from Debian's
# static archives (llvm-22-dev, libmlir-22-dev). The result needs no LLVM on
# the machine that loads it (the GPU machine has none): its only dependencies
# are libc, libm, libstdc++, libgcc_s, libz, libzstd and libfmt. LLVM's and
# MLIR's symbols are local to it (a linker version script exports the tegula
# namespace alone), so it can share a process with another LLVM (torch's,
# Triton's) without either seeing the other's.

# What Tegula calls in MLIR: the dialects it builds and lowers through, the
# conversions, LLVM IR translation and the optimiser the simulator runs.
set(TEGULA_MLIR_STATIC_COMPONENTS
  MLIRIR MLIRParser MLIRPass MLIRTransforms MLIRTransformUtils MLIRRewrite
  MLIRArithDialect MLIRMathDialect MLIRSCFDialect MLIRFuncDialect
  MLIRControlFlowDialect MLIRLLVMDialect MLIRNVVMDialect MLIRSCFTransforms
  MLIRArithToLLVM MLIRMathToLLVM MLIRFuncToLLVM MLIRControlFlowToLLVM
  MLIRSCFToControlFlow MLIRGPUToNVVMTransforms MLIRLLVMCommonConversion
  MLIRTargetLLVMIRExport MLIRBuiltinToLLVMIRTranslation
  MLIRLLVMToLLVMIRTranslation MLIRNVVMToLLVMIRTranslation
  MLIRExecutionEngineUtils)
# LLVM: the NVPTX back end (PTX), the host's (the simulator's JIT), ORC.
set(TEGULA_LLVM_STATIC_COMPONENTS
  Core Support TargetParser IRReader Linker Passes BitReader BitWriter
  NVPTXCodeGen NVPTXDesc NVPTXInfo X86CodeGen X86AsmParser X86Desc X86Info
  OrcJIT JITLink FrontendOpenMP FrontendOffloading)

llvm_map_components_to_libnames(_tegula_llvm_static ${TEGULA_LLVM_STATIC_COMPONENTS})
add_library(TegulaLLVMStatic INTERFACE)
target_link_libraries(TegulaLLVMStatic INTERFACE ${_tegula_llvm_static})

# Debian's static MLIR targets name the LLVM *dylib* in their link
# interface; point the whole closure at the static components instead.
function(_tegula_use_static_llvm target)
  get_property(seen GLOBAL PROPERTY TEGULA_STATIC_LLVM_SEEN)
  if(NOT TARGET ${target} OR target IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY TEGULA_STATIC_LLVM_SEEN ${target})
  get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
  if(NOT deps)
    return()
  endif()
  list(TRANSFORM deps REPLACE "^LLVM$" "TegulaLLVMStatic")
  set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${deps}")
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^MLIR")
      _tegula_use_static_llvm(${dep})
    endif()
  endforeach()
endfunction()
foreach(component IN LISTS TEGULA_MLIR_STATIC_COMPONENTS)
  _tegula_use_static_llvm(${component})
endforeach()

# libtegula.so: every object of Tegula's own libraries, then whatever they
# need from the static archives; unused sections dropped.
function(tegula_add_shared_library)
  set(parts tegula TegulaRuntime TegulaSimulator TegulaTileDialect TegulaTileGPUDialect TegulaLayout)
  set(objects)
  foreach(part IN LISTS parts)
    list(APPEND objects $<TARGET_OBJECTS:${part}>)
  endforeach()
  add_library(tegula_shared SHARED ${objects})
  set_target_properties(tegula_shared PROPERTIES
    OUTPUT_NAME tegula
    LINKER_LANGUAGE CXX
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
    LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/libtegula.map)
  target_link_libraries(tegula_shared PRIVATE ${TEGULA_MLIR_STATIC_COMPONENTS} fmt::fmt ${CMAKE_DL_LIBS})
  target_link_options(tegula_shared PRIVATE
    -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/libtegula.map
    -Wl,--gc-sections -Wl,--exclude-libs,ALL -Wl,--as-needed -Wl,-z,defs)
  # What users of the library need: Tegula's headers (standard C++ alone)
  # and C++20 (std::source_location gives DSL errors the user's line). In
  # this tree, also fmt and the CUDA headers (runtime internals some tests
  # use); an installed Tegula (cmake/TegulaInstall.cmake) asks for neither.
  target_compile_features(tegula_shared INTERFACE cxx_std_20)
  target_include_directories(tegula_shared INTERFACE $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                             $<INSTALL_INTERFACE:include>)
  target_link_libraries(tegula_shared INTERFACE $<BUILD_INTERFACE:fmt::fmt>)
  target_include_directories(tegula_shared INTERFACE $<BUILD_INTERFACE:${CUDAToolkit_INCLUDE_DIRS}>)
endfunction()
