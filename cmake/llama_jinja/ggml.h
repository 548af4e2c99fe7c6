// cmake/llama_jinja/ggml.h — stands in for ggml.h when llama.cpp's common/json.cpp is built without ggml.
// json.cpp includes ggml.h only for GGML_ASSERT (its JSON_ASSERT); this gives it the same meaning as
// ggml's: report the failed condition and abort.
#pragma once
#include <cstdio>
#include <cstdlib>

#define GGML_ASSERT(x)                                                                 \
  do {                                                                                 \
    if (!(x)) {                                                                        \
      std::fprintf(stderr, "%s:%d: GGML_ASSERT(%s) failed\n", __FILE__, __LINE__, #x); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)
