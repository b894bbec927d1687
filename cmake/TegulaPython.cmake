# Python bindings: pybind11 (installed by scripts/setup.sh from PyPI) and
# tegula_add_python_module(), the CMake side of tegula/python.h.
find_package(Python 3.9 COMPONENTS Interpreter Development.Module REQUIRED)
execute_process(COMMAND ${Python_EXECUTABLE} -m pybind11 --cmakedir
                OUTPUT_VARIABLE _tegula_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE _tegula_pybind11_found ERROR_QUIET)
if(NOT _tegula_pybind11_found EQUAL 0)
  message(FATAL_ERROR "pybind11 is not installed for ${Python_EXECUTABLE}: run scripts/setup.sh "
                      "(or configure with -DTEGULA_PYTHON=OFF)")
endif()
find_package(pybind11 CONFIG REQUIRED HINTS ${_tegula_pybind11_dir})
message(STATUS "Python ${Python_VERSION} (${Python_EXECUTABLE}), pybind11 ${pybind11_VERSION}")

# tegula_add_python_module(NAME source... [OUTPUT_DIRECTORY dir]): a Python
# extension module NAME from C++ sources that use TEGULA_PYTHON_MODULE(NAME,
# ...), linked to libtegula; importable once its directory is on sys.path
# (beside an importable tegula package).
function(tegula_add_python_module name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "" ${ARGN})
  pybind11_add_module(${name} MODULE ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${TEGULA_PUBLIC_LIB})
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
endfunction()
