# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS, cmake/Package.cmake): drops the debug
# information from the static libraries in the staging tree. CPACK_STRIP_FILES strips only
# executables and shared libraries; RelWithDebInfo archives are ~10x larger than stripped ones.
file(GLOB_RECURSE archives "${CPACK_TEMPORARY_DIRECTORY}/*.a")
foreach(archive IN LISTS archives)
  execute_process(COMMAND strip --strip-debug "${archive}" RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "strip --strip-debug ${archive} failed")
  endif()
endforeach()
