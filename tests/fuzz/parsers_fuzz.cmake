# libFuzzer targets for the parsers of untrusted files and JSON (include from
# tests/fuzz/CMakeLists.txt after its checks, where QVL_FUZZ_FLAGS is set). They link the layer
# libraries, whose parsing layers are compiled with coverage instrumentation in this build (the
# kernels in qvl_ops are left alone: they parse nothing, and cmp tracing would slow their tests).
foreach(layer base tokenizer grammar model)
  target_compile_options(qvl_${layer} PRIVATE -fsanitize=fuzzer-no-link)
endforeach()

# qvl_fuzz_target(NAME SOURCE LIBS...): fuzz_NAME from SOURCE, linked with LIBS.
function(qvl_fuzz_target name source)
  add_executable(fuzz_${name} ${CMAKE_CURRENT_LIST_DIR}/${source})
  target_include_directories(fuzz_${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_compile_options(fuzz_${name} PRIVATE ${QVL_FUZZ_FLAGS})
  target_link_options(fuzz_${name} PRIVATE ${QVL_FUZZ_FLAGS})
  target_link_libraries(fuzz_${name} PRIVATE ${ARGN})
  qvl_strict_warnings(fuzz_${name})
endfunction()

qvl_fuzz_target(safetensors safetensors_fuzz.cpp qvl_model)
qvl_fuzz_target(packed_file packed_file_fuzz.cpp qvl_model)
qvl_fuzz_target(tokenizer tokenizer_fuzz.cpp qvl_tokenizer)
qvl_fuzz_target(chat_messages chat_messages_fuzz.cpp qvl_tokenizer)
qvl_fuzz_target(json_schema json_schema_fuzz.cpp qvl_grammar qvl_tokenizer)
qvl_fuzz_target(gguf gguf_fuzz.cpp qvl_model)

# Writes the seeds that are binary or depend on this build (tests/fuzz/run.sh runs it).
add_executable(fuzz_seeds ${CMAKE_CURRENT_LIST_DIR}/fuzz_seeds.cpp)
target_link_libraries(fuzz_seeds PRIVATE qvl_model qvl_tokenizer)
qvl_strict_warnings(fuzz_seeds)
