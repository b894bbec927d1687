# The programs scripts/gpu-check.sh carries to a lent GPU machine and runs
# there: test binaries with GPU cases and GPU benchmarks. Each is marked
# where it is defined (tegula_gtest(... GPU), tegula_benchmark(... GPU));
# the build lists them in gpu-programs.txt ("test|benchmark <path>" lines)
# and the `gpu-programs` target builds them all, so no list is kept by hand.
set_property(GLOBAL PROPERTY TEGULA_GPU_PROGRAMS "")
set_property(GLOBAL PROPERTY TEGULA_GPU_TARGETS "")

function(tegula_gpu_program target kind)
  set_property(GLOBAL APPEND PROPERTY TEGULA_GPU_PROGRAMS "${kind} $<TARGET_FILE:${target}>")
  set_property(GLOBAL APPEND PROPERTY TEGULA_GPU_TARGETS ${target})
endfunction()

function(tegula_write_gpu_programs)
  get_property(programs GLOBAL PROPERTY TEGULA_GPU_PROGRAMS)
  get_property(targets GLOBAL PROPERTY TEGULA_GPU_TARGETS)
  list(JOIN programs "\n" lines)
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/gpu-programs.txt CONTENT "${lines}\n")
  add_custom_target(gpu-programs)
  add_dependencies(gpu-programs ${targets})
endfunction()
