# ctest script: fails when the dynamic loader would map a CUDA library into BIN at start-up.
# Usage: cmake -DLDD=/usr/bin/ldd -DBIN=path/to/tune-trainer -P links_no_cuda.cmake
execute_process(COMMAND ${LDD} ${BIN} OUTPUT_VARIABLE libs RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ldd ${BIN} failed (${rc})")
endif()
string(REGEX MATCHALL "lib(cuda|cublas|nccl)[^ \t\n]*" cuda_libs "${libs}")
if(cuda_libs)
  message(FATAL_ERROR "${BIN} links ${cuda_libs}: CUDA belongs in the dlopen()ed plugin only")
endif()
message(STATUS "${BIN}: no CUDA library at start-up")
