# What `cmake --install` puts where, and the CMake package other projects find with
# find_package(codeact CONFIG REQUIRED): the CLI, the static libraries as namespaced targets
# (codeact::core, codeact::agent, codeact::codeact, codeact::durable, ...; the same names exist
# inside this build as aliases), the public headers (include/codeact) and codeactConfig.cmake,
# which finds the Debian packages the libraries link against. Included by the top-level
# CMakeLists.txt after src/.
include(CMakePackageConfigHelpers)

set(CODEACT_EXPORTED_LIBRARIES codeact_core codeact_template codeact_llm codeact_agent codeact_mcp
    codeact_sandbox codeact_functions codeact_codeact codeact_temporal_protos codeact_temporal
    codeact_durable codeact_server codeact_version)
foreach(lib IN LISTS CODEACT_EXPORTED_LIBRARIES)
  string(REGEX REPLACE "^codeact_" "" name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${name})
  add_library(codeact::${name} ALIAS ${lib})
endforeach()

set(CODEACT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/codeact)
install(TARGETS ${CODEACT_EXPORTED_LIBRARIES} EXPORT codeactTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/codeact DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT dev)
install(EXPORT codeactTargets NAMESPACE codeact:: DESTINATION ${CODEACT_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/codeactConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/codeactConfig.cmake
                              INSTALL_DESTINATION ${CODEACT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/codeactConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/codeactConfig.cmake ${PROJECT_BINARY_DIR}/codeactConfigVersion.cmake
        DESTINATION ${CODEACT_CMAKE_DIR} COMPONENT dev)
