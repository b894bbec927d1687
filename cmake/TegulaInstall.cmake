# Tegula for C++ projects: `cmake --install build --prefix P` puts
# libtegula.so (LLVM and MLIR inside it), Tegula's headers, tegulac and
# tegula-opt, and a CMake package under P; a project then writes
#   find_package(Tegula 0.1 REQUIRED)            # -DTegula_DIR=P/lib/cmake/Tegula
#   target_link_libraries(app PRIVATE Tegula::tegula)
# and P/lib/pkgconfig/tegula.pc serves builds without CMake.
# The build tree is a package too (-DTegula_DIR=<build>), without installing.
# Needs TEGULA_STATIC_LLVM (the one library a program links).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TEGULA_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tegula)

function(tegula_install_sdk)
  if(NOT TARGET tegula_shared)
    message(STATUS "Tegula SDK install: off (TEGULA_STATIC_LLVM=OFF builds no libtegula.so)")
    return()
  endif()
  set_target_properties(tegula_shared PROPERTIES EXPORT_NAME tegula INSTALL_RPATH "")
  install(TARGETS tegula_shared EXPORT TegulaTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT sdk)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/tegula DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT sdk)
  # The tools link Debian's LLVM and MLIR libraries, found where they were
  # at build time.
  set_target_properties(tegulac tegula-opt PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS tegulac tegula-opt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT sdk)

  install(EXPORT TegulaTargets NAMESPACE Tegula:: DESTINATION ${TEGULA_CMAKE_PACKAGE_DIR} COMPONENT sdk)
  export(EXPORT TegulaTargets NAMESPACE Tegula:: FILE ${CMAKE_BINARY_DIR}/TegulaTargets.cmake)
  set(config_in ${CMAKE_SOURCE_DIR}/cmake/TegulaConfig.cmake.in)
  configure_package_config_file(${config_in} ${CMAKE_BINARY_DIR}/cmake/TegulaConfig.cmake
                                INSTALL_DESTINATION ${TEGULA_CMAKE_PACKAGE_DIR})
  # The build tree's own config: its targets file sits beside it.
  configure_package_config_file(${config_in} ${CMAKE_BINARY_DIR}/TegulaConfig.cmake
                                INSTALL_DESTINATION ${CMAKE_BINARY_DIR} INSTALL_PREFIX ${CMAKE_BINARY_DIR})
  write_basic_package_version_file(${CMAKE_BINARY_DIR}/TegulaConfigVersion.cmake
                                   VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_BINARY_DIR}/cmake/TegulaConfig.cmake ${CMAKE_BINARY_DIR}/TegulaConfigVersion.cmake
          DESTINATION ${TEGULA_CMAKE_PACKAGE_DIR} COMPONENT sdk)

  # pkg-config, for builds without CMake; its paths are relative to the .pc
  # file, so an installed prefix may be moved.
  set(TEGULA_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  file(RELATIVE_PATH TEGULA_PC_PREFIX_FROM_PCDIR /prefix/${TEGULA_PKGCONFIG_DIR} /prefix)
  string(REGEX REPLACE "/$" "" TEGULA_PC_PREFIX_FROM_PCDIR "${TEGULA_PC_PREFIX_FROM_PCDIR}")
  configure_file(${CMAKE_SOURCE_DIR}/cmake/tegula.pc.in ${CMAKE_BINARY_DIR}/cmake/tegula.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/cmake/tegula.pc DESTINATION ${TEGULA_PKGCONFIG_DIR} COMPONENT sdk)
endfunction()
