# The installable package: headers, libswiglu, the commands, a CMake config
# exporting swiglu::swiglu, and a pkg-config file.
include(CMakePackageConfigHelpers)

set(SWIGLU_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/swiglu)
install(EXPORT swigluTargets NAMESPACE swiglu:: DESTINATION ${SWIGLU_CMAKE_DIR})
if(SWIGLU_BUILD_MPI)
  install(EXPORT swigluMpiTargets NAMESPACE swiglu:: DESTINATION ${SWIGLU_CMAKE_DIR})
endif()
configure_package_config_file(cmake/swigluConfig.cmake.in
  ${PROJECT_BINARY_DIR}/swigluConfig.cmake INSTALL_DESTINATION ${SWIGLU_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/swigluConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)  # 0.x: a minor version may change the API
install(FILES ${PROJECT_BINARY_DIR}/swigluConfig.cmake ${PROJECT_BINARY_DIR}/swigluConfigVersion.cmake
  DESTINATION ${SWIGLU_CMAKE_DIR})

# pkg-config: the prefix is fixed at install time (cmake --install --prefix
# rewrites it through CMAKE_INSTALL_PREFIX). Outside /usr (/usr/local, whose
# lib/ the loader knows only after ldconfig; /opt/swiglu, which it never
# knows) Libs also puts libdir in the consumer's run path, so that a program
# built with `pkg-config --libs swiglu` runs without LD_LIBRARY_PATH.
install(CODE "
  set(SWIGLU_PC_RPATH \"-Wl,-rpath,\\\${libdir} \")
  if(\"\${CMAKE_INSTALL_PREFIX}\" STREQUAL \"/usr\" OR \"\${CMAKE_INSTALL_PREFIX}\" STREQUAL \"/usr/\")
    set(SWIGLU_PC_RPATH \"\")
  endif()
  set(CMAKE_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/swiglu.pc.in\"
                 \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/swiglu.pc\" @ONLY)
")
