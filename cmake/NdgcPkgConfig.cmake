# ndgc.pc: pkg-config metadata for builds without CMake.
#
#   PKG_CONFIG_PATH=<prefix>/lib/pkgconfig c++ -std=c++20 app.cpp $(pkg-config --cflags --libs ndgc)
#
# The prefix is found relative to the .pc file (${pcfiledir}), so the file
# stays right when the tree is installed with `cmake --install --prefix`
# elsewhere than configured, or moved. A static libndgc.a needs zlib, fmt and
# threads at link time, and oneDNN with its OpenMP runtime where the build
# uses it: `pkg-config --static` adds them (Requires.private, Libs.private).
set(_ndgc_pcdir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${_ndgc_pcdir}")
  set(NDGC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  # One "/.." per component of the pkgconfig folder under the prefix.
  string(REGEX REPLACE "[^/]+" ".." _ndgc_up "${_ndgc_pcdir}")
  set(NDGC_PC_PREFIX "\${pcfiledir}/${_ndgc_up}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(NDGC_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(NDGC_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
set(NDGC_PC_LIBS_PRIVATE "")
if(NDGC_HAVE_ONEDNN)
  set(NDGC_PC_LIBS_PRIVATE "-ldnnl -lgomp")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/ndgc.pc.in ${PROJECT_BINARY_DIR}/ndgc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ndgc.pc DESTINATION ${_ndgc_pcdir})
