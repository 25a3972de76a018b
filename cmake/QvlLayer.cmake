# Our own code is built with strict warnings; third-party headers come in as SYSTEM includes.
# The sanitizer build only adds runtime checks: GCC's flow warnings give false positives with
# instrumentation (e.g. -Wstringop-overflow at -O1), so -Werror is left to the normal build.
function(qvl_strict_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  # Our sources silence GCC-only warnings by name (-Wmaybe-uninitialized); clang knows no such
  # group, which is no fault of the code.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wno-unknown-warning-option)
  endif()
  if(NOT QVL_SANITIZE)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# qvl_add_layer(NAME deps...): a static library from every .cpp in src/NAME/.
function(qvl_add_layer name)
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(NOT sources)  # a layer that is still header-only
    add_library(qvl_${name} INTERFACE)
    target_include_directories(qvl_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(qvl_${name} INTERFACE ${ARGN})
    return()
  endif()
  add_library(qvl_${name} STATIC ${sources})
  target_include_directories(qvl_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(qvl_${name} PUBLIC ${ARGN})
  qvl_strict_warnings(qvl_${name})
endfunction()
