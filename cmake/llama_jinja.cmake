# llama.cpp's Jinja engine (MIT), which llama.cpp uses to render the chat templates of real models; hfx
# renders chat templates with it (src/tokenizers/chat_template.cpp). scripts/setup.sh extracts its
# sources from the llama.cpp bundle node-llama-cpp ships (deps/npm) into deps/llama-jinja; nothing of it
# is committed here.
#
# Defines hfx_llama_jinja, an OBJECT library whose objects go into libhfx (so an installed static hfx
# needs no extra archive), and HFX_LLAMA_JINJA_INCLUDE, the include folders for hfx's own sources.
set(HFX_LLAMA_JINJA_DIR "${PROJECT_SOURCE_DIR}/deps/llama-jinja" CACHE PATH
    "llama.cpp's common/jinja, json and unicode sources as scripts/setup.sh extracts them")
set(_hfx_lj "${HFX_LLAMA_JINJA_DIR}/common")
if(NOT EXISTS "${_hfx_lj}/jinja/runtime.cpp" OR NOT EXISTS "${_hfx_lj}/json.cpp")
  message(FATAL_ERROR "hfx: expected llama.cpp's Jinja engine in ${HFX_LLAMA_JINJA_DIR}, got none "
                      "(run scripts/setup.sh, which extracts it from node-llama-cpp's llama.cpp bundle)")
endif()
file(GLOB _hfx_lj_sources "${_hfx_lj}/jinja/*.cpp")
add_library(hfx_llama_jinja OBJECT ${_hfx_lj_sources} "${_hfx_lj}/json.cpp" "${_hfx_lj}/unicode.cpp")
# cmake/llama_jinja holds ggml.h for json.cpp's GGML_ASSERT; nlohmann/json comes from Debian.
target_include_directories(hfx_llama_jinja PRIVATE "${_hfx_lj}" "${CMAKE_CURRENT_LIST_DIR}/llama_jinja")
target_link_libraries(hfx_llama_jinja PRIVATE nlohmann_json::nlohmann_json)
# Third-party code, built as upstream writes it: its warnings are not ours to fix.
target_compile_options(hfx_llama_jinja PRIVATE -w -O2)
set(HFX_LLAMA_JINJA_INCLUDE "${_hfx_lj}")
