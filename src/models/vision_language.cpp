// What the vision-language models (llava, gemma3, idefics3 / smolvlm, qwen2_vl) share: their text model
// built from its architecture over the checkpoint's weights, the decoder component on inputs_embeds, and
// the check that a component got the inputs it needs.
#include "blocks.h"

namespace hfx::models {

std::unique_ptr<DecoderLM> make_text_decoder(const Architecture& ta, const json& text_config,
                                             std::shared_ptr<io::WeightStore> w, const std::string& owner) {
  std::unique_ptr<Model> m = ta.create(ta.parse_config(text_config), std::move(w));
  std::unique_ptr<DecoderLM> lm(dynamic_cast<DecoderLM*>(m.get()));
  HFX_CHECK(lm, "model", "expected {}'s text model to be a decoder of the shared blocks, got {}", owner,
            ta.model_type);
  m.release();  // owned by lm now
  return lm;
}

Var need_input(const NamedVars& in, const char* name, const std::string& component,
               const std::string& owner) {
  Var v = get(in, name);
  if (!v)
    HFX_THROW("model", "expected input '{}' for component '{}' of {}, got none", name, component, owner);
  return v;
}

ComponentDecl decoder_on_embeddings(const CausalLM& lm, int64_t hidden) {
  ComponentDecl decoder = lm.components().front();
  decoder.name = "decoder";
  for (InputDecl& d : decoder.inputs)
    if (d.name == "input_ids")
      d = {"inputs_embeds", DType::F32, {"batch_size", "sequence_length", std::to_string(hidden)}};
  return decoder;
}

}  // namespace hfx::models
