# SPDX-License-Identifier: MIT
# One rule for every BPF object: floodgate_bpf_object(NAME SOURCE file [INCLUDES dir...]
# [DEPENDS file...]) builds SOURCE into NAME.bpf.o with clang and its libbpf skeleton
# NAME.skel.h (struct NAME_bpf) with bpftool, both in the current binary directory, behind
# the target NAME_bpf_skeleton (add_dependencies on it before including the skeleton).
find_program(CLANG clang REQUIRED)
find_program(BPFTOOL bpftool PATHS /usr/sbin /sbin REQUIRED)

function(floodgate_bpf_object name)
  cmake_parse_arguments(ARG "" "SOURCE" "INCLUDES;DEPENDS" ${ARGN})
  set(object ${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.o)
  set(skeleton ${CMAKE_CURRENT_BINARY_DIR}/${name}.skel.h)
  set(includes)
  foreach(dir ${ARG_INCLUDES})
    list(APPEND includes -I${dir})
  endforeach()
  add_custom_command(
    OUTPUT ${object}
    COMMAND ${CLANG} -target bpf -O2 -g -mcpu=v3 -Wall -Wextra -Werror
            -Wno-unused-parameter
            -idirafter /usr/include/x86_64-linux-gnu
            ${includes}
            -c ${ARG_SOURCE} -o ${object}
    DEPENDS ${ARG_SOURCE} ${ARG_DEPENDS}
    COMMENT "Building the ${name} BPF program"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skeleton}
    COMMAND ${BPFTOOL} gen skeleton ${object} name ${name}_bpf > ${skeleton}
    DEPENDS ${object}
    COMMENT "Generating the ${name} skeleton"
    VERBATIM)
  add_custom_target(${name}_bpf_skeleton DEPENDS ${skeleton} ${object})
endfunction()
