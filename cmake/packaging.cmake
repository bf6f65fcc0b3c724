# SPDX-License-Identifier: MIT
# The Debian packages, made by CPack's DEB generator from the install components:
#   floodgate         component `floodgate`: the binary, its man page, the systemd unit
#                     (installed, not enabled), configs, docs; /etc/floodgate/floodgate.yaml
#                     is a conffile
#   libfloodgate0     component `runtime`: the library's shared objects (.so.0), what a
#                     service built against libfloodgate needs to run
#   libfloodgate-dev  component `dev`: the library's headers, .so links, static
#                     libraries, CMake and pkg-config files; depends on libfloodgate0
# `cpack` in the build directory writes one .deb per component that has files.

# Every install rule belongs to one of the packages: a rule without COMPONENT (CMake calls
# it "Unspecified") or with another name would silently miss both.
set(FLOODGATE_PACKAGED_COMPONENTS floodgate runtime dev)
get_cmake_property(fg_components COMPONENTS)
foreach(component IN LISTS fg_components)
  if(NOT component IN_LIST FLOODGATE_PACKAGED_COMPONENTS)
    message(FATAL_ERROR "install component '${component}' is in no package: give its "
      "install() rules COMPONENT floodgate (the floodgate package) or COMPONENT dev "
      "(libfloodgate-dev) or COMPONENT runtime (libfloodgate0), see cmake/packaging.cmake")
  endif()
endforeach()
# Only components with install rules: a package with no files is not written.
set(CPACK_COMPONENTS_ALL ${fg_components})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME floodgate)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "floodgate maintainers <maintainers@users.noreply.a-seed-1447c913.example>")
# Staged under DESTDIR with the final prefix: the install step writes the unit's paths from
# CMAKE_INSTALL_PREFIX (cmake/install_config.cmake), and /etc must land in the package.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

# cpack packages what is built, as `cmake --install` installs it: it does not first build
# every target, tests included, as it would through the install target's dependency on all.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The binary without its debug info (RelWithDebInfo builds carry 50 MB of it)
set(CPACK_STRIP_FILES ON)
# Depends: from the ELF files' libraries, as debhelper's ${shlibs:Depends} does.
find_program(DPKG_SHLIBDEPS dpkg-shlibdeps)
if(DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  # What dpkg-shlibdeps finds on Debian 12 (install dpkg-dev to have it computed).
  set(CPACK_DEBIAN_FLOODGATE_PACKAGE_DEPENDS
    "libbpf1, libelf1, zlib1g, libyaml-cpp0.7, libhiredis0.14, libssl3, libcpp-httplib0.11, libstdc++6, libgcc-s1, libc6")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS
    "libyaml-cpp0.7, libhiredis0.14, libssl3, libcpp-httplib0.11, libstdc++6, libgcc-s1, libc6")
endif()

set(CPACK_DEBIAN_FLOODGATE_PACKAGE_NAME floodgate)
set(CPACK_DEBIAN_FLOODGATE_PACKAGE_SECTION net)
set(CPACK_DEBIAN_FLOODGATE_DESCRIPTION "XDP edge rate limiter and its controller
An XDP program drops flood traffic at the NIC, with a token bucket per source
address kept exact across CPUs. The floodgate command attaches it, loads rules
from one YAML file, changes them live, bans addresses and exports Prometheus
metrics; `floodgate run` does so as a systemd service (installed, not enabled).")
configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/conffiles.in
  ${PROJECT_BINARY_DIR}/debian/floodgate/conffiles @ONLY)
foreach(script postinst prerm postrm)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/${script}
    ${PROJECT_BINARY_DIR}/debian/floodgate/${script} COPYONLY)
  list(APPEND fg_control_extra ${PROJECT_BINARY_DIR}/debian/floodgate/${script})
endforeach()
set(CPACK_DEBIAN_FLOODGATE_PACKAGE_CONTROL_EXTRA
  ${PROJECT_BINARY_DIR}/debian/floodgate/conffiles ${fg_control_extra})

# The runtime component is the shared objects alone. Its shlibs file tells dpkg-shlibdeps
# of a service linked against them which package to depend on, and its ldconfig trigger
# updates the linker cache on install and removal.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libfloodgate0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "libfloodgate: per-key rate limits for HTTP services (shared libraries)
The shared libraries of libfloodgate: policies by route, client IP, API key or
user; six algorithms; memory or Redis stores; the 429 and RateLimit header
contract. A service built against libfloodgate-dev needs this package to run.")

# The dev component installs under include/, the library dir (lib/<multiarch>/: the
# libraries, cmake/floodgate/, pkgconfig/) and never a path the floodgate package has
# (share/doc/floodgate is floodgate's). The -dev packages that its headers and CMake
# config need (yaml-cpp's, hiredis', ...) go into CPACK_DEBIAN_DEV_PACKAGE_DEPENDS;
# shlibdeps adds what libfloodgate0's shared objects link to that package.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libfloodgate-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# Its .so links point into libfloodgate0 of exactly this version.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "libfloodgate0 (= ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}), libyaml-cpp-dev, libhiredis-dev, libssl-dev, libcpp-httplib-dev (<< 0.13), pkgconf | pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION "libfloodgate: per-key rate limits for HTTP services (development files)
Headers, .so links, static libraries, CMake package and pkg-config files of
libfloodgate: policies by route, client IP, API key or user; six algorithms;
memory or Redis stores; the 429 and RateLimit header contract.")

include(CPack)
