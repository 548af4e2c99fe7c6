# ONNX Runtime 1.30 comes from npm (see deps/npm): the shared library from onnxruntime-node,
# the C/C++ headers from com.github.asus4.onnxruntime. Both are pinned in deps/npm/package-lock.json
# and installed by scripts/setup.sh (`npm ci`).
#
# Defines, when found and HFX_WITH_ORT is ON:
#   hfx::onnxruntime   IMPORTED SHARED target; include with <onnxruntime/onnxruntime_cxx_api.h>
#                      (or <onnxruntime_cxx_api.h>)
#   HFX_ORT_FOUND      TRUE/FALSE
#   HFX_ORT_LIB_DIR    folder of libonnxruntime.so.1 in node_modules
# and installs the library and headers next to hfx, so that an install prefix is self-contained and
# hfxConfig.cmake can recreate hfx::onnxruntime there.
#
# HFX_ORT_ROOT (cache) may point at another node_modules folder holding the same two packages.
include(GNUInstallDirs)

set(HFX_ORT_ROOT "${PROJECT_SOURCE_DIR}/deps/npm/node_modules" CACHE PATH
    "node_modules folder holding onnxruntime-node and com.github.asus4.onnxruntime")
set(HFX_ORT_LIB_DIR "${HFX_ORT_ROOT}/onnxruntime-node/bin/napi-v6/linux/x64")
set(_hfx_ort_inc "${HFX_ORT_ROOT}/com.github.asus4.onnxruntime/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers")
set(HFX_ORT_FOUND FALSE)

if(NOT HFX_WITH_ORT)
  message(STATUS "hfx: HFX_WITH_ORT=OFF, ONNX Runtime parts are not built")
elseif(EXISTS "${HFX_ORT_LIB_DIR}/libonnxruntime.so.1" AND EXISTS "${_hfx_ort_inc}/onnxruntime_cxx_api.h")
  set(HFX_ORT_FOUND TRUE)
  # A shim folder: headers under include/onnxruntime/ and an unversioned .so symlink for -lonnxruntime users.
  set(_hfx_ort_shim "${CMAKE_CURRENT_BINARY_DIR}/ort")
  file(MAKE_DIRECTORY "${_hfx_ort_shim}/lib" "${_hfx_ort_shim}/include/onnxruntime")
  file(CREATE_LINK "${HFX_ORT_LIB_DIR}/libonnxruntime.so.1" "${_hfx_ort_shim}/lib/libonnxruntime.so" SYMBOLIC)
  file(GLOB _hfx_ort_headers "${_hfx_ort_inc}/*.h")
  file(COPY ${_hfx_ort_headers} DESTINATION "${_hfx_ort_shim}/include/onnxruntime")

  if(NOT TARGET hfx::onnxruntime)
    add_library(hfx::onnxruntime SHARED IMPORTED GLOBAL)
  endif()
  set_target_properties(hfx::onnxruntime PROPERTIES
    IMPORTED_LOCATION "${HFX_ORT_LIB_DIR}/libonnxruntime.so.1"
    IMPORTED_SONAME "libonnxruntime.so.1"
    INTERFACE_INCLUDE_DIRECTORIES "${_hfx_ort_shim}/include;${_hfx_ort_shim}/include/onnxruntime")
  # Binaries in the build tree find the library in node_modules; installed ones next to themselves.
  list(APPEND CMAKE_BUILD_RPATH "${HFX_ORT_LIB_DIR}")
  list(APPEND CMAKE_INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

  install(FILES "${HFX_ORT_LIB_DIR}/libonnxruntime.so.1" DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${_hfx_ort_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/onnxruntime)
  message(STATUS "hfx: ONNX Runtime from ${HFX_ORT_LIB_DIR}")
elseif("$ENV{HFX_REQUIRE_ORACLES}" STREQUAL "1")
  # CI (.ci/run) requires every oracle: without ONNX Runtime the ORT tests would silently not be built.
  message(FATAL_ERROR "[oracle] expected ONNX Runtime (libonnxruntime.so.1 from onnxruntime-node and the "
                      "C++ headers from com.github.asus4.onnxruntime) under ${HFX_ORT_ROOT}, got none: run "
                      "scripts/setup.sh (npm ci in deps/npm). HFX_REQUIRE_ORACLES=1 makes this an error.")
else()
  message(WARNING "hfx: ONNX Runtime not found under ${HFX_ORT_ROOT} (run scripts/setup.sh); "
                  "ORT parts are not built")
endif()
