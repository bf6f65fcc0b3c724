# SPDX-License-Identifier: MIT
# The target_layers test (label unit): no cycle in the target graph, and no target using one
# from a layer above its own (the layers are declared in cmake/target_layers.py). Included
# last by the top CMakeLists.txt, so that every target is defined: it lists them, with the
# folder each is defined in, in floodgate_targets.txt, which tells the check which nodes of
# `cmake --graphviz` are the project's own.

# floodgate_collect_targets(DIR OUT): OUT gets "name<TAB>folder" for every target defined in
# DIR and its subdirectories (custom targets aside: nothing links them).
function(floodgate_collect_targets dir out)
  set(lines)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${dir})
  if(folder STREQUAL "")
    set(folder .)
  endif()
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "UTILITY")
      string(APPEND lines "${target}\t${folder}\n")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    floodgate_collect_targets(${subdir} sublines)
    string(APPEND lines "${sublines}")
  endforeach()
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

floodgate_collect_targets(${PROJECT_SOURCE_DIR} FG_TARGET_LINES)
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/floodgate_targets.txt CONTENT "${FG_TARGET_LINES}")

find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME target_layers
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/cmake/target_layers.py
    --cmake ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR})
# RUN_SERIAL: the check re-runs this tree's configure step, which no other test should race.
set_tests_properties(target_layers PROPERTIES LABELS unit TIMEOUT 120 RUN_SERIAL ON)
