# Temporal's API schema, fetched at configure time through cargo (crates.io crate
# `temporalio-protos`, pinned; without cargo, from PyPI's `temporalio` wheel via pip download)
# and compiled with Debian's protoc + grpc_cpp_plugin into the static library `codeact_temporal_protos`. Nothing of it is tracked in git.
#
# Cache: the .proto files are copied (and patched, see below) into
#   ${CODEACT_TEMPORAL_PROTO_CACHE}/temporalio-protos-<version>/
# and the generated C++ lives in the build tree; both are reused by later builds, so a rebuild
# neither refetches nor regenerates.
#
# Only the closure of imports of temporal/api/workflowservice/v1/service.proto is compiled;
# google/protobuf well-known types come from Debian's libprotobuf-dev.
#
# protoc 3.21 emits `namespace namespace` for the package `temporal.api.namespace.v1`, which is
# not valid C++: the build-tree copy renames that package to `temporal.api.namespace_.v1`
# (C++ namespace temporal::api::namespace_::v1). Binary protobuf carries no package names, so
# the wire format is unchanged.

set(CODEACT_TEMPORAL_PROTOS_VERSION "0.10.2" CACHE STRING "crates.io temporalio-protos version")
set(CODEACT_TEMPORAL_PY_VERSION "1.35.0" CACHE STRING "PyPI temporalio version (schema source without cargo)")
set(CODEACT_TEMPORAL_PROTO_CACHE "${CMAKE_BINARY_DIR}/_deps"
    CACHE PATH "where fetched Temporal .proto files are kept")

find_program(PROTOC_EXE protoc REQUIRED)
find_program(GRPC_CPP_PLUGIN_EXE grpc_cpp_plugin REQUIRED)
find_package(Protobuf REQUIRED)
pkg_check_modules(GRPCPP REQUIRED IMPORTED_TARGET grpc++)

find_program(CARGO_EXE cargo HINTS $ENV{HOME}/.cargo/bin)
if(CARGO_EXE)
  set(_tp_root "${CODEACT_TEMPORAL_PROTO_CACHE}/temporalio-protos-${CODEACT_TEMPORAL_PROTOS_VERSION}")
else()
  set(_tp_root "${CODEACT_TEMPORAL_PROTO_CACHE}/temporalio-py-${CODEACT_TEMPORAL_PY_VERSION}")
endif()
set(_tp_protos "${_tp_root}/protos")

if(NOT EXISTS "${_tp_root}/.complete")
  set(_upstream "")
  if(CARGO_EXE)
    set(_fetch "${_tp_root}/fetch")
    file(MAKE_DIRECTORY "${_fetch}")
    file(WRITE "${_fetch}/Cargo.toml"
         "[package]\nname = \"codeact-temporal-protos-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n"
         "[lib]\npath = \"lib.rs\"\n"
         "[dependencies]\ntemporalio-protos = \"=${CODEACT_TEMPORAL_PROTOS_VERSION}\"\n")
    file(WRITE "${_fetch}/lib.rs" "")
    message(STATUS "Fetching temporalio-protos ${CODEACT_TEMPORAL_PROTOS_VERSION} with cargo")
    # `cargo metadata` resolves, downloads and unpacks the crate, and tells where it is.
    execute_process(COMMAND "${CARGO_EXE}" metadata --format-version 1
                    WORKING_DIRECTORY "${_fetch}"
                    OUTPUT_VARIABLE _meta ERROR_VARIABLE _meta_err RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "cargo metadata failed for temporalio-protos: ${_meta_err}")
    endif()
    string(JSON _n LENGTH "${_meta}" packages)
    math(EXPR _last "${_n} - 1")
    foreach(_i RANGE ${_last})
      string(JSON _name GET "${_meta}" packages ${_i} name)
      if(_name STREQUAL "temporalio-protos")
        string(JSON _manifest GET "${_meta}" packages ${_i} manifest_path)
        get_filename_component(_crate_dir "${_manifest}" DIRECTORY)
        set(_upstream "${_crate_dir}/protos/api_upstream")
      endif()
    endforeach()
  else()
    # No cargo: the Python SDK's wheel carries the same schema (sdk-core's protos crate).
    # The repo's venv (scripts/setup.sh makes it before building) has pip; else python3.
    find_program(CODEACT_PIP_PYTHON NAMES python3 python HINTS "${PROJECT_SOURCE_DIR}/.venv/bin" NO_DEFAULT_PATH)
    if(NOT CODEACT_PIP_PYTHON)
      find_package(Python3 REQUIRED COMPONENTS Interpreter)
      set(CODEACT_PIP_PYTHON "${Python3_EXECUTABLE}")
    endif()
    set(_wheel_dir "${_tp_root}/wheel")
    message(STATUS "cargo not found; fetching temporalio==${CODEACT_TEMPORAL_PY_VERSION} with pip")
    execute_process(COMMAND "${CODEACT_PIP_PYTHON}" -m pip download --no-deps --only-binary=:all:
                            -d "${_wheel_dir}" "temporalio==${CODEACT_TEMPORAL_PY_VERSION}"
                    RESULT_VARIABLE _rc ERROR_VARIABLE _pip_err)
    file(GLOB _whl "${_wheel_dir}/temporalio-*.whl")
    if(NOT _rc EQUAL 0 OR NOT _whl)
      message(FATAL_ERROR "pip download temporalio failed: ${_pip_err}")
    endif()
    list(GET _whl 0 _whl)
    file(ARCHIVE_EXTRACT INPUT "${_whl}" DESTINATION "${_wheel_dir}/x"
         PATTERNS "temporalio/bridge/sdk-core/crates/protos/protos/api_upstream/*")
    set(_upstream "${_wheel_dir}/x/temporalio/bridge/sdk-core/crates/protos/protos/api_upstream")
  endif()
  if(NOT EXISTS "${_upstream}/temporal/api/workflowservice/v1/service.proto")
    message(FATAL_ERROR "Temporal schema: no workflow service under '${_upstream}'")
  endif()
  file(REMOVE_RECURSE "${_tp_protos}")
  file(COPY "${_upstream}/temporal" "${_upstream}/google" "${_upstream}/nexusannotations"
       DESTINATION "${_tp_protos}" FILES_MATCHING PATTERN "*.proto")
  # Well-known types come from Debian's protobuf.
  file(REMOVE_RECURSE "${_tp_protos}/google/protobuf")
  # Rename the package whose last C++ namespace would be the keyword `namespace`.
  file(GLOB_RECURSE _all_protos "${_tp_protos}/*.proto")
  foreach(_f ${_all_protos})
    file(READ "${_f}" _txt)
    string(REPLACE "temporal.api.namespace.v1" "temporal.api.namespace_.v1" _new "${_txt}")
    if(NOT _new STREQUAL _txt)
      file(WRITE "${_f}" "${_new}")
    endif()
  endforeach()
  file(REMOVE_RECURSE "${_tp_root}/fetch" "${_tp_root}/wheel")
  file(WRITE "${_tp_root}/.complete" "${CODEACT_TEMPORAL_PROTOS_VERSION}\n")
endif()

# Import closure of the workflow service.
set(_todo "temporal/api/workflowservice/v1/service.proto")
set(_closure "")
while(_todo)
  list(POP_FRONT _todo _p)
  if(_p IN_LIST _closure OR _p MATCHES "^google/protobuf/")
    continue()
  endif()
  list(APPEND _closure "${_p}")
  file(STRINGS "${_tp_protos}/${_p}" _imports REGEX "^import ")
  foreach(_line ${_imports})
    string(REGEX REPLACE "^import +(public +)?\"([^\"]+)\".*" "\\2" _imp "${_line}")
    list(APPEND _todo "${_imp}")
  endforeach()
endwhile()
list(SORT _closure)

set(_gen "${CMAKE_BINARY_DIR}/temporal_protos_gen")
file(MAKE_DIRECTORY "${_gen}")
set(_srcs "")
set(_grpc_protos "temporal/api/workflowservice/v1/service.proto")
foreach(_p ${_closure})
  string(REGEX REPLACE "\\.proto$" "" _base "${_p}")
  set(_outs "${_gen}/${_base}.pb.cc" "${_gen}/${_base}.pb.h")
  set(_args --cpp_out=${_gen})
  if(_p IN_LIST _grpc_protos)
    list(APPEND _outs "${_gen}/${_base}.grpc.pb.cc" "${_gen}/${_base}.grpc.pb.h")
    list(APPEND _args --grpc_out=${_gen} --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN_EXE})
  endif()
  add_custom_command(
    OUTPUT ${_outs}
    COMMAND ${PROTOC_EXE} -I${_tp_protos} -I${Protobuf_INCLUDE_DIRS} ${_args} ${_p}
    DEPENDS "${_tp_protos}/${_p}"
    COMMENT "protoc ${_p}"
    VERBATIM)
  foreach(_o ${_outs})
    if(_o MATCHES "\\.cc$")
      list(APPEND _srcs "${_o}")
    endif()
  endforeach()
endforeach()

add_library(codeact_temporal_protos STATIC ${_srcs})
# Generated code is not ours to warn about.
target_compile_options(codeact_temporal_protos PRIVATE -w -Wno-error)
target_include_directories(codeact_temporal_protos SYSTEM PUBLIC "$<BUILD_INTERFACE:${_gen}>")
target_link_libraries(codeact_temporal_protos PUBLIC protobuf::libprotobuf PkgConfig::GRPCPP)
set_target_properties(codeact_temporal_protos PROPERTIES POSITION_INDEPENDENT_CODE ON)
