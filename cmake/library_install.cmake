# SPDX-License-Identifier: MIT
# Installs libfloodgate in two components, as Debian splits a library:
#   runtime (the libfloodgate0 package): each component's shared library, libfloodgate_*.so.0
#     and the file it links to, which is all a service linked against it needs to run;
#   dev (libfloodgate-dev): the headers, the .so links a build finds, the static libraries,
#     the CMake package (find_package(floodgate CONFIG COMPONENTS ...)) and a pkg-config
#     file per component (floodgate-ratelimit, ...).
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/floodgate
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

set(FG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/floodgate)
# The .pc files find the prefix from where they are (pkg-config's ${pcfiledir}), so the
# tree holds wherever it is installed: --prefix, DESTDIR, the package's /usr.
file(RELATIVE_PATH FG_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
# name, what it is, pkg-config Requires, Requires.private
set(FG_COMPONENT_ratelimit "rate limits for HTTP services: algorithms, policies, the limiter and the memory store"
  "yaml-cpp" "")
set(FG_COMPONENT_redis "the Redis store, publishing and following policies, fleet reports"
  "floodgate-ratelimit" "hiredis libcrypto")
set(FG_COMPONENT_httplib "the cpp-httplib adapter" "floodgate-ratelimit cpp-httplib < 0.13" "")
foreach(component ratelimit redis httplib)
  install(TARGETS floodgate_${component} floodgate_${component}_shared
    EXPORT floodgate-${component}-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
      NAMELINK_COMPONENT dev)
  install(EXPORT floodgate-${component}-targets NAMESPACE floodgate::
    DESTINATION ${FG_CMAKE_DIR} COMPONENT dev)
  list(GET FG_COMPONENT_${component} 0 FG_PC_DESCRIPTION)
  list(GET FG_COMPONENT_${component} 1 FG_PC_REQUIRES)
  list(GET FG_COMPONENT_${component} 2 FG_PC_REQUIRES_PRIVATE)
  set(FG_PC_COMPONENT ${component})
  configure_file(${CMAKE_CURRENT_LIST_DIR}/floodgate-component.pc.in
    ${PROJECT_BINARY_DIR}/pkgconfig/floodgate-${component}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/floodgate-${component}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endforeach()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/floodgateConfig.cmake.in
  ${PROJECT_BINARY_DIR}/floodgateConfig.cmake INSTALL_DESTINATION ${FG_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/floodgateConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/floodgateConfig.cmake
  ${PROJECT_BINARY_DIR}/floodgateConfigVersion.cmake
  DESTINATION ${FG_CMAKE_DIR} COMPONENT dev)
