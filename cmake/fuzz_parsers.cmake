# The sources the fuzz build compiles instrumented (tests/fuzz/CMakeLists.txt): the parsers of untrusted
# input. The rest of each fuzz target comes from the base build's libhfx.a, so in a unity build that is a
# fuzz base (HFX_UNITY_FUZZ_BASE) these files compile alone there (cmake/quick_build.cmake): an object that
# grouped one of them with other files would be pulled in for those and define its symbols a second time.
set(_hfx_src ${PROJECT_SOURCE_DIR}/src)
file(GLOB HFX_FUZZ_PARSERS CONFIGURE_DEPENDS ${_hfx_src}/core/*.cpp ${_hfx_src}/io/*.cpp ${_hfx_src}/tokenizers/*.cpp)
list(FILTER HFX_FUZZ_PARSERS EXCLUDE REGEX ".*/tokenizers/tiny.*")  # writers of tiny tokenizers, not parsers
# no fuzzed parser; needs the Jinja engine's headers
list(FILTER HFX_FUZZ_PARSERS EXCLUDE REGEX ".*/tokenizers/chat_template.cpp$")
list(APPEND HFX_FUZZ_PARSERS
  ${_hfx_src}/verify/artifact_checks.cpp ${_hfx_src}/artifact/manifest.cpp ${_hfx_src}/verify/pte_reader.cpp
  ${_hfx_src}/verify/pte_kernels.cpp
  ${_hfx_src}/verify/pte_xnnpack.cpp  # the XnnpackBackend payloads a .pte may carry (read when a method loads)
  ${_hfx_src}/runtime/generation_config.cpp
  # model.gguf read back by hfx verify: the reader and the block decoders
  ${_hfx_src}/export/gguf/gguf_read.cpp ${_hfx_src}/export/gguf/gguf_kquants.cpp
  # config.json: model_type dispatch, the shared decoder parser, llama's (the other architectures' parse
  # functions run uninstrumented from the release library)
  ${_hfx_src}/models/model.cpp ${_hfx_src}/models/blocks.cpp ${_hfx_src}/models/llama.cpp)
