# Generates build_info.cpp on every build (only rewritten when the commit or dirty state changes)
# so that benchmark JSON names the exact commit it measured.
set(SOAC_BUILD_INFO_CPP ${PROJECT_BINARY_DIR}/generated/build_info.cpp)
add_custom_target(soac_build_info_gen
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${SOAC_BUILD_INFO_CPP}
          -DBUILD_TYPE=${CMAKE_BUILD_TYPE} "-DCUDA_ARCHS=${CMAKE_CUDA_ARCHITECTURES}"
          -DVERSION=${PROJECT_VERSION}
          -P ${PROJECT_SOURCE_DIR}/cmake/WriteBuildInfo.cmake
  BYPRODUCTS ${SOAC_BUILD_INFO_CPP}
  COMMENT "Recording build commit")
add_library(soac_build_info STATIC ${SOAC_BUILD_INFO_CPP})
add_dependencies(soac_build_info soac_build_info_gen)
target_link_libraries(soac_build_info PRIVATE soac_options)
