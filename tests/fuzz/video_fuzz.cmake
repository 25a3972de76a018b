# The video decoder's fuzz target (tests/fuzz/video_fuzz.cpp); included from
# tests/fuzz/CMakeLists.txt after parsers_fuzz.cmake (which defines qvl_fuzz_target).
# qvl_media is instrumented for coverage; FFmpeg and libwebp are Debian's (uninstrumented).
# tests/fuzz/run.sh makes its seed clips with the ffmpeg program.
if(QVL_VIDEO)
  target_compile_options(qvl_media PRIVATE -fsanitize=fuzzer-no-link)
  qvl_fuzz_target(video video_fuzz.cpp qvl_media)
endif()
