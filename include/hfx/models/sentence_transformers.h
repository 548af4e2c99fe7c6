// hfx/models/sentence_transformers.h — a sentence-transformers model folder's settings: modules.json and
// its Pooling module's config.json (`1_Pooling/config.json`), the pooling mode and whether a Normalize
// module follows. Read by `hfx embed` (hfx/runtime/embed.h) and by the GGUF backend (llama.cpp's
// `<arch>.pooling_type`). Every error is hfx::Error("embed", "expected ..., got ...").
#pragma once
#include <string>

namespace hfx::models {

enum class Pooling { Mean, Cls, Max };
/// "mean", "cls", "max".
const char* pooling_name(Pooling p);
/// The mode by name; throws hfx::Error("embed", "expected one of mean, cls, max, got 'X'").
Pooling pooling_from_name(const std::string& name);

struct EmbedSettings {
  Pooling pooling = Pooling::Mean;
  bool normalize = true;
  /// Where the settings came from: "modules.json" or "default".
  std::string source = "default";
};
/// Reads modules.json and the Pooling module's config.json of `dir`. Exactly one of
/// pooling_mode_{mean_tokens, cls_token, max_tokens} may be set; other modes (mean_sqrt_len,
/// weightedmean, lasttoken) and combinations are refused with the mode's name.
EmbedSettings read_embed_settings(const std::string& dir);

}  // namespace hfx::models
