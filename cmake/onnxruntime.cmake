# ONNX Runtime 1.30 comes from npm (see deps/npm): the shared library from onnxruntime-node,
# the C/C++ headers from com.github.asus4.onnxruntime. Both are pinned in deps/npm/package-lock.json.
set(HFX_NPM_DIR ${CMAKE_CURRENT_SOURCE_DIR}/deps/npm/node_modules)
set(ORT_LIB_DIR ${HFX_NPM_DIR}/onnxruntime-node/bin/napi-v6/linux/x64)
set(ORT_INC_DIR "${HFX_NPM_DIR}/com.github.asus4.onnxruntime/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers")
if(EXISTS ${ORT_LIB_DIR}/libonnxruntime.so.1 AND EXISTS ${ORT_INC_DIR}/onnxruntime_cxx_api.h)
  set(ORT_SHIM ${CMAKE_CURRENT_BINARY_DIR}/ort)
  file(MAKE_DIRECTORY ${ORT_SHIM}/lib ${ORT_SHIM}/include)
  file(CREATE_LINK ${ORT_LIB_DIR}/libonnxruntime.so.1 ${ORT_SHIM}/lib/libonnxruntime.so SYMBOLIC)
  file(GLOB ORT_HEADERS "${ORT_INC_DIR}/*.h")
  file(COPY ${ORT_HEADERS} DESTINATION ${ORT_SHIM}/include/onnxruntime)
  add_library(hfx_onnxruntime SHARED IMPORTED GLOBAL)
  set_target_properties(hfx_onnxruntime PROPERTIES
    IMPORTED_LOCATION ${ORT_LIB_DIR}/libonnxruntime.so.1
    IMPORTED_SONAME libonnxruntime.so.1
    INTERFACE_INCLUDE_DIRECTORIES $<BUILD_INTERFACE:${ORT_SHIM}/include>)
  add_library(hfx::onnxruntime ALIAS hfx_onnxruntime)
  set(CMAKE_BUILD_RPATH ${ORT_LIB_DIR})
  message(STATUS "hfx: ONNX Runtime from ${ORT_LIB_DIR}")
else()
  message(WARNING "hfx: ONNX Runtime not found under deps/npm (run scripts/setup.sh); ORT parts are not built")
endif()
