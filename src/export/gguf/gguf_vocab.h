// tokenizer.ggml.* and the chat template of a GGUF file, from a folder's tokenizer files.
#pragma once
#include <string>

#include "export/gguf/gguf_file.h"
#include "hfx/models/model.h"

namespace hfx::gguf {

/// Adds the vocabulary (tokens, types, merges or scores), special ids, add_bos and the chat template of the
/// tokenizer in `dir` (tokenizer.json, tokenizer_config.json, chat_template.jinja). Throws hfx::Error("gguf",
/// ...) for a tokenizer llama.cpp would split differently (an unknown pre-tokenizer regex, not BPE).
void add_vocab(File& f, const std::string& dir, const ModelConfig& c);

}  // namespace hfx::gguf
