# The unity build of the quick preset (HFX_QUICK_BUILD, the demo's build) and of the release preset
# (HFX_UNITY_BUILD: libhfx, the CLI and the test suite, which the CI builds from scratch on 2 cores): the
# sources of one folder compile as one translation unit, so the code they share — nlohmann::json, fmt and
# the standard library, the IR and builder headers — is parsed, instantiated and compiled once per folder
# instead of once per file. At -O0 that is most of the compile time.
#
# Files are grouped with CMake's UNITY_BUILD_MODE GROUP: a source without a group compiles alone, so a
# new file is always safe. Files that define the same file-local names as another file of their folder
# stay alone: every architecture file of src/models defines its own parse/options/tiny, every file of
# tools/sweep its kComp, the ONNX Runtime files (ort_*.cpp) their kComp; the others are listed below. A
# quick build that fails with "redefinition of '...{anonymous}...'", or warns with -Wsubobject-linkage,
# needs the file it names added to HFX_UNITY_ALONE (HFX_UNITY_TESTS_ALONE for a test). Debug and sanitizer
# builds compile every file alone. Measured from scratch (CPU-s of the compile steps, CCACHE_DISABLE=1, -j2):
# libhfx 872 → 598 at -O2, hfx_tests 729 → 523 at -O1.
set(HFX_UNITY_ALONE
  src/runtime/generator.cpp       # kComp, read_json_if_exists (also in text2text.cpp, generation_config.cpp)
  src/runtime/text2text.cpp
  src/runtime/transcribe.cpp      # kComp (also in generator.cpp, text2text.cpp)
  src/tokenizers/processors.cpp   # SequenceP (also in pre_tokenizers.cpp)
  src/artifact/release.cpp        # kComp, utc_now (also in verify.cpp, manifest.cpp)
  src/verify/verify.cpp
  src/export/onnx/translations.cpp  # last(Cx&) (also in gqa_fusion.cpp)
  tools/cmd_inspect.cpp           # human_bytes (also in cmd_export.cpp)
  src/processors/qwen2_vl_processor.cpp  # kC (also in idefics3_processor.cpp)
  src/export/executorch/xnnpack_delegate.cpp  # is_constant (also in registrations.cpp)
  src/verify/pte_xnnpack.cpp      # run_op (also in pte_kernels.cpp)
  # A class member of a file-local type: -Wsubobject-linkage once the file is #included into another.
  src/io/zip_reader.cpp
  src/tokenizers/tokenizer.cpp
)
# Test files whose file-local helpers (Dir, tiny, slurp, program, Case ...) share a name with another test of
# their folder; tests/integration (CLI-driven, each file its own fixtures) compiles file by file.
set(HFX_UNITY_TESTS_ALONE
  tests/capture/record_test.cpp
  tests/export/dynamo/interpreter_test.cpp
  tests/models/encoder_goldens_test.cpp
  tests/models/lfm2_test.cpp
  tests/models/mamba2_test.cpp
  tests/models/mamba_test.cpp
  tests/models/moe_test.cpp
  tests/models/seq2seq_goldens_test.cpp
  tests/models/whisper_test.cpp
  tests/tokenizers/tiny_kinds_test.cpp
  tests/tokenizers/tokenizer_test.cpp
  tests/verify/pt2_crafted_test.cpp
  tests/verify/pte_verify_test.cpp
  # A fixture in an anonymous namespace: -Wsubobject-linkage once the file is #included into another.
  tests/io/safetensors_test.cpp
  tests/runtime/chat_test.cpp
)
# src/models: the shared parts (blocks, caches, rope, the registry) group; the architectures do not.
set(HFX_UNITY_MODELS_SHARED blocks cache encoder_blocks model registry rope ssd tiny tiny_writer)

include(${CMAKE_CURRENT_LIST_DIR}/fuzz_parsers.cmake)  # HFX_FUZZ_PARSERS: alone, see there

function(hfx_unity_groups target)
  get_target_property(sources ${target} SOURCES)
  foreach(src ${sources})
    if(NOT src MATCHES "\\.cpp$")
      continue()
    endif()
    file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${src}")
    get_filename_component(dir "${rel}" DIRECTORY)
    get_filename_component(stem "${rel}" NAME_WE)
    if(rel IN_LIST HFX_UNITY_ALONE OR rel IN_LIST HFX_UNITY_TESTS_ALONE OR (HFX_UNITY_FUZZ_BASE AND src IN_LIST HFX_FUZZ_PARSERS)
       OR stem MATCHES "^ort_"
       OR dir STREQUAL "tools/sweep" OR dir STREQUAL "tests/integration")
      continue()
    endif()
    if(dir STREQUAL "src/models" AND NOT stem IN_LIST HFX_UNITY_MODELS_SHARED)
      continue()
    endif()
    string(REPLACE "/" "_" group "${dir}")
    set_source_files_properties("${src}" PROPERTIES UNITY_GROUP "${group}")
  endforeach()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
endfunction()

# The fuzz build (tests/fuzz) includes this file for the function only: it has neither target.
if(TARGET hfx)
  hfx_unity_groups(hfx)
endif()
if(TARGET hfx_cli)
  hfx_unity_groups(hfx_cli)
endif()
