# The CUDA engine (gpu/) is built whenever the toolkit is found (DESIGN.md §7).
# Until gpu/ holds an engine this only records whether one could be built.
if(NOT NDGC_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(NDGC_HAVE_CUDA ON)
  elseif(NDGC_CUDA STREQUAL "ON")
    message(FATAL_ERROR "NDGC_CUDA=ON but no CUDA toolkit was found")
  endif()
endif()
if(NDGC_HAVE_CUDA AND EXISTS ${PROJECT_SOURCE_DIR}/gpu/CMakeLists.txt)
  add_subdirectory(gpu)
endif()
