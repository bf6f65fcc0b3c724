# SPDX-License-Identifier: MIT
# Run by `cmake --install` (and by cpack) for the floodgate component, once the install
# prefix is final (`--prefix` may change it after configuring): writes the systemd unit with
# the installed paths, and copies the default config to the daemon's config file unless a
# file is already there. Both honour DESTDIR.
#
# The install(CODE) that includes this sets: FG_UNIT_TEMPLATE, FG_UNIT_DIR, FG_BIN_DIR,
# FG_DOC_DIR (each relative to the prefix, as GNUInstallDirs gives them, or absolute),
# FG_DEFAULT_CONFIG and FG_CONFIG_FILE (absolute).

# A GNUInstallDirs directory as an absolute path under the prefix being installed to.
macro(fg_full_path out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}")
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}")
  endif()
endmacro()

fg_full_path(FLOODGATE_INSTALL_BINDIR "${FG_BIN_DIR}")
fg_full_path(FLOODGATE_INSTALL_DOCDIR "${FG_DOC_DIR}")
fg_full_path(fg_unit_dir "${FG_UNIT_DIR}")
set(FLOODGATE_CONFIG_FILE "${FG_CONFIG_FILE}")

set(fg_unit "$ENV{DESTDIR}${fg_unit_dir}/floodgate.service")
message(STATUS "Installing: ${fg_unit}")
configure_file("${FG_UNIT_TEMPLATE}" "${fg_unit}" @ONLY)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${fg_unit}")

# The operator's config is theirs: never overwritten. Where the installing user may not
# write it (a --prefix of their own, not root), say so and go on: the default is under share.
set(fg_config "$ENV{DESTDIR}${FG_CONFIG_FILE}")
if(EXISTS "${fg_config}")
  message(STATUS "Keeping: ${fg_config} (already there)")
else()
  message(STATUS "Installing: ${fg_config}")
  get_filename_component(fg_config_dir "${fg_config}" DIRECTORY)
  execute_process(COMMAND ${CMAKE_COMMAND} -E make_directory "${fg_config_dir}"
    RESULT_VARIABLE fg_copy_result ERROR_VARIABLE fg_copy_error)
  if(fg_copy_result EQUAL 0)
    execute_process(COMMAND ${CMAKE_COMMAND} -E copy "${FG_DEFAULT_CONFIG}" "${fg_config}"
      RESULT_VARIABLE fg_copy_result ERROR_VARIABLE fg_copy_error)
  endif()
  if(fg_copy_result EQUAL 0)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${fg_config}")
  else()
    message(WARNING "could not write ${fg_config}: ${fg_copy_error}"
      "copy share/floodgate/floodgate.yaml of the install prefix there as root before "
      "`systemctl start floodgate`")
  endif()
endif()
