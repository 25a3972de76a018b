# libFuzzer target for the server's request parsing and validation (include from
# tests/fuzz/CMakeLists.txt after its QVL_BUILD_FUZZ / clang checks, where QVL_FUZZ_FLAGS is set).
# The parsing sources are compiled into the target so they carry the fuzzer's instrumentation.
find_package(OpenSSL REQUIRED)
add_executable(fuzz_request ${CMAKE_CURRENT_LIST_DIR}/request_fuzz.cpp
               ${PROJECT_SOURCE_DIR}/src/server/chat_request.cpp
               ${PROJECT_SOURCE_DIR}/src/server/data_uri.cpp
               ${PROJECT_SOURCE_DIR}/src/server/api_error.cpp
               ${PROJECT_SOURCE_DIR}/src/server/access.cpp
               ${PROJECT_SOURCE_DIR}/src/server/openai_format.cpp
               ${PROJECT_SOURCE_DIR}/src/base/base64.cpp
               ${PROJECT_SOURCE_DIR}/src/base/error.cpp)
target_include_directories(fuzz_request PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_options(fuzz_request PRIVATE ${QVL_FUZZ_FLAGS})
target_link_options(fuzz_request PRIVATE ${QVL_FUZZ_FLAGS})
target_link_libraries(fuzz_request PRIVATE OpenSSL::Crypto nlohmann_json::nlohmann_json)
qvl_strict_warnings(fuzz_request)
