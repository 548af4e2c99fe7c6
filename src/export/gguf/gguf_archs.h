// llama.cpp's architectures as hfx writes them: for each model_type, the llama.cpp arch, its metadata keys
// and its tensors (names, layouts, transforms), as convert_hf_to_gguf.py writes them.
#pragma once
#include <string>

#include "export/gguf/gguf_file.h"
#include "hfx/models/model.h"

namespace hfx::gguf {

/// Adds general.architecture, the `<arch>.*` keys and every tensor of `m` (matrices in `matrix`, see
/// type_for) to `f`. Throws hfx::Error("gguf", ...) for a config llama.cpp's arch cannot express (a sliding
/// window on the llama arch, a rope scaling other than llama3 / linear).
void add_model(File& f, const Model& m, GgmlType matrix);

/// The type a tensor is stored in: f32 for 1-D tensors, norms and the state-space parameters llama.cpp reads
/// as f32; `matrix` for the rest, f16 where a row is not whole blocks of a quantized `matrix`.
GgmlType type_for(const std::string& name, const Shape& shape, GgmlType matrix);

}  // namespace hfx::gguf
