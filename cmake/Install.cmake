# What `cmake --install` puts where, in two components (cmake/Package.cmake makes a Debian
# package of each):
#   cli: the codeact CLI (src/cli), its man page, the sandbox image recipe for reading, the docs;
#   dev: the static libraries as namespaced targets of a CMake package other projects find with
#        find_package(codeact CONFIG REQUIRED) (codeact::core, codeact::agent, codeact::codeact,
#        codeact::durable, ...; the same names exist inside this build as aliases), the public
#        headers (include/codeact), codeactConfig.cmake, which finds the Debian packages the
#        libraries link against, and codeact.pc for pkg-config.
# Included by the top-level CMakeLists.txt after src/.
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

# pkg-config: the libraries in static link order (each before what it uses), and the Debian
# packages' own .pc names for what they link against.
set(CODEACT_PC_LINK_ORDER server durable codeact functions agent template llm mcp sandbox temporal
    temporal_protos core version)
list(TRANSFORM CODEACT_PC_LINK_ORDER PREPEND -lcodeact_ OUTPUT_VARIABLE CODEACT_PC_LIBS)
list(JOIN CODEACT_PC_LIBS " " CODEACT_PC_LIBS)
file(RELATIVE_PATH CODEACT_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" CODEACT_PC_TO_PREFIX "${CODEACT_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/codeact.pc.in ${PROJECT_BINARY_DIR}/codeact.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/codeact.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)

# The CLI's man page, compressed as Debian wants it; a test checks that it names every
# top-level subcommand of `codeact --help`.
set(CODEACT_MAN_PAGE ${PROJECT_SOURCE_DIR}/docs/man/codeact.1)
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/codeact.1.gz
                   COMMAND gzip -9 -n -c ${CODEACT_MAN_PAGE} > ${PROJECT_BINARY_DIR}/codeact.1.gz
                   DEPENDS ${CODEACT_MAN_PAGE} COMMENT "Compressing the man page" VERBATIM)
add_custom_target(codeact_man ALL DEPENDS ${PROJECT_BINARY_DIR}/codeact.1.gz)
install(FILES ${PROJECT_BINARY_DIR}/codeact.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT cli)
# `codeact image build` uses the recipe compiled into the binary; this copy is for reading it.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/sandbox/image/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/codeact/sandbox-image COMPONENT cli)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/sandbox/kernel/codeact_kernel
        DESTINATION ${CMAKE_INSTALL_DATADIR}/codeact/sandbox-image COMPONENT cli
        FILES_MATCHING PATTERN "*.py")
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT cli)
install(FILES ${PROJECT_SOURCE_DIR}/config/app_conf.yml ${PROJECT_SOURCE_DIR}/config/agent_prompts.yml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT cli)
