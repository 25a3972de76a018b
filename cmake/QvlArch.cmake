# The kernels of the target architecture: src/ops/x86 on x86-64, src/ops/arm on aarch64, and on
# every other CPU src/ops/generic (the scalar oracles only). QVL_ARCH names the folder.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(QVL_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(QVL_ARCH arm)
else()
  set(QVL_ARCH generic)
endif()
message(STATUS "qvl: ${CMAKE_SYSTEM_PROCESSOR} kernels from src/ops/${QVL_ARCH}")

# qvl_add_arch_sources(target dir): the .cpp files of dir/${QVL_ARCH}. On aarch64 a file's name
# says which extension it is compiled for (the others stay on the ARMv8.0 baseline, and the
# dispatch calls a file only on a CPU that has its extension).
function(qvl_add_arch_sources target dir)
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/${QVL_ARCH}/*.cpp)
  target_sources(${target} PRIVATE ${sources})
  if(QVL_ARCH STREQUAL "arm")
    foreach(source ${sources})
      if(source MATCHES "_i8mm\\.cpp$")
        set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod+i8mm")
      elseif(source MATCHES "_dotprod\\.cpp$")
        set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
      elseif(source MATCHES "_bf16\\.cpp$")
        set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+bf16")
      endif()
    endforeach()
  endif()
endfunction()
