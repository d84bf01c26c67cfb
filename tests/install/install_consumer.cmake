# Script behind the install_consumer test (see CMakeLists.txt here).
# Inputs: NDGC_BINARY_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, CXX, GENERATOR.
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

function(expect_ok what)
  if(NOT run_output MATCHES "ndgc consumer ok")
    message(FATAL_ERROR "${what}: the consumer printed '${run_output}', not 'ndgc consumer ok'")
  endif()
  message(STATUS "${what}: ${run_output}")
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${NDGC_BINARY_DIR} --prefix ${prefix})

# 1. CMake: find_package(ndgc) and ndgc::ndgc.
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/cmake-build -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-build)
run(${WORK_DIR}/cmake-build/consumer)
expect_ok("find_package(ndgc)")

# 2. pkg-config: ndgc.pc, wherever GNUInstallDirs put the library.
find_program(PKG_CONFIG pkg-config)
if(NOT PKG_CONFIG)
  message(STATUS "pkg-config not found: the ndgc.pc half is skipped")
  return()
endif()
file(GLOB_RECURSE pc_files ${prefix}/ndgc.pc)
list(LENGTH pc_files n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one installed ndgc.pc under ${prefix}, found: ${pc_files}")
endif()
get_filename_component(pc_dir ${pc_files} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
run(${PKG_CONFIG} --static --cflags --libs ndgc)
string(STRIP "${run_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(${CXX} -std=c++20 ${CONSUMER_SOURCE_DIR}/consumer.cpp ${flags} -o ${WORK_DIR}/consumer-pc)
run(${PKG_CONFIG} --variable=libdir ndgc)
string(STRIP "${run_output}" libdir)
set(ENV{LD_LIBRARY_PATH} ${libdir})  # a shared libndgc.so
run(${WORK_DIR}/consumer-pc)
expect_ok("pkg-config ndgc")
