# The document entry points' fuzz target (tests/fuzz/pdf_fuzz.cpp); included from
# tests/fuzz/CMakeLists.txt after parsers_fuzz.cmake (which defines qvl_fuzz_target).
# qvl_media is instrumented for coverage; poppler and libtiff are Debian's (uninstrumented).
if(QVL_DOCUMENTS)
  target_compile_options(qvl_media PRIVATE -fsanitize=fuzzer-no-link)
  qvl_fuzz_target(pdf pdf_fuzz.cpp qvl_media)
endif()
