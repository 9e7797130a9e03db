# Install rules: the runtime library, the public headers, a CMake package
# (find_package(inprof) -> inprof::inprof, also called inprof::sdk) and a pkg-config file (pkg-config --libs inprof).
include(CMakePackageConfigHelpers)

install(TARGETS inprof EXPORT inprofTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES sdk/include/inprof/inprof.h sdk/include/inprof/inprof.hpp sdk/include/inprof/luajit.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/inprof)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(INPROF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/inprof)
install(EXPORT inprofTargets NAMESPACE inprof:: DESTINATION ${INPROF_CMAKE_DIR})
configure_package_config_file(cmake/inprofConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/inprofConfig.cmake INSTALL_DESTINATION ${INPROF_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/inprofConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/inprofConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/inprofConfigVersion.cmake
  DESTINATION ${INPROF_CMAKE_DIR})

# The .pc file locates the prefix relative to itself, so an install moved or made with
# `cmake --install --prefix` elsewhere still works.
file(RELATIVE_PATH INPROF_PC_TO_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
configure_file(cmake/inprof.pc.in ${CMAKE_CURRENT_BINARY_DIR}/inprof.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/inprof.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
