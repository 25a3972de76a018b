# libFuzzer target for the server's HTTP layer (include from tests/fuzz/CMakeLists.txt after its
# QVL_BUILD_FUZZ / clang checks, where QVL_FUZZ_FLAGS is set). Our HTTP sources are compiled in
# so they carry the fuzzer's instrumentation; libmicrohttpd is the system library.
pkg_check_modules(FUZZ_MICROHTTPD REQUIRED IMPORTED_TARGET libmicrohttpd)
add_executable(fuzz_http ${CMAKE_CURRENT_LIST_DIR}/http_fuzz.cpp
               ${PROJECT_SOURCE_DIR}/src/server/http_server.cpp
               ${PROJECT_SOURCE_DIR}/src/server/http_connections.cpp
               ${PROJECT_SOURCE_DIR}/src/server/http_gate.cpp
               ${PROJECT_SOURCE_DIR}/src/server/http_stream.cpp
               ${PROJECT_SOURCE_DIR}/src/server/http_types.cpp
               ${PROJECT_SOURCE_DIR}/src/server/http_listener.cpp
               ${PROJECT_SOURCE_DIR}/src/base/error.cpp
               ${PROJECT_SOURCE_DIR}/src/base/log.cpp)
target_include_directories(fuzz_http PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_options(fuzz_http PRIVATE ${QVL_FUZZ_FLAGS})
target_link_options(fuzz_http PRIVATE ${QVL_FUZZ_FLAGS})
target_link_libraries(fuzz_http PRIVATE PkgConfig::FUZZ_MICROHTTPD Threads::Threads)
qvl_strict_warnings(fuzz_http)
