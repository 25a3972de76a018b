# libFuzzer target for the server's request parsing and validation (include from
# tests/fuzz/CMakeLists.txt after its QVL_BUILD_FUZZ / clang checks, where QVL_FUZZ_FLAGS is set).
# It links qvl_server, which this build compiles with coverage instrumentation (the list of
# sources the parser needs grows with the API: compiling them in here went stale).
target_compile_options(qvl_server PRIVATE -fsanitize=fuzzer-no-link)
add_executable(fuzz_request ${CMAKE_CURRENT_LIST_DIR}/request_fuzz.cpp)
target_compile_options(fuzz_request PRIVATE ${QVL_FUZZ_FLAGS})
target_link_options(fuzz_request PRIVATE ${QVL_FUZZ_FLAGS})
target_link_libraries(fuzz_request PRIVATE qvl_server)
qvl_strict_warnings(fuzz_request)
