// The one list of architectures. Each lives in its own file (src/models/<model_type>.cpp) and exposes
// one function returning its Architecture (xlm-roberta is a variant row in roberta.cpp); adding an
// architecture is a file plus one line here; create-tiny's extra steps for an architecture (llava's processor
// files) are one line of tiny_hooks().
#include "hfx/models/model.h"
#include "tiny_hooks.h"

namespace hfx::models {
const Architecture& llama_architecture();
const Architecture& mistral_architecture();
const Architecture& qwen2_architecture();
const Architecture& qwen3_architecture();
const Architecture& gemma_architecture();
const Architecture& gemma2_architecture();
const Architecture& gemma3_text_architecture();
const Architecture& granite_architecture();
const Architecture& helium_architecture();
const Architecture& smollm3_architecture();
const Architecture& olmo_architecture();
const Architecture& olmo2_architecture();
const Architecture& stablelm_architecture();
const Architecture& starcoder2_architecture();
const Architecture& phi_architecture();
const Architecture& cohere_architecture();
const Architecture& cohere2_architecture();
const Architecture& nemotron_architecture();
const Architecture& glm_architecture();
const Architecture& glm4_architecture();
const Architecture& ernie4_5_architecture();
const Architecture& exaone4_architecture();
const Architecture& hunyuan_v1_dense_architecture();
const Architecture& gpt_neox_architecture();
const Architecture& gptj_architecture();
const Architecture& olmo3_architecture();
const Architecture& arcee_architecture();
const Architecture& ministral_architecture();
const Architecture& seed_oss_architecture();
const Architecture& vaultgemma_architecture();
const Architecture& cwm_architecture();
const Architecture& opt_architecture();
const Architecture& gpt_bigcode_architecture();
const Architecture& falcon_architecture();
const Architecture& codegen_architecture();
const Architecture& bloom_architecture();
const Architecture& mpt_architecture();
const Architecture& persimmon_architecture();
const Architecture& gpt_neo_architecture();
const Architecture& biogpt_architecture();
const Architecture& xglm_architecture();
const Architecture& granitemoeshared_architecture();
const Architecture& hunyuan_v1_moe_architecture();
const Architecture& flex_olmo_architecture();
const Architecture& phi3_architecture();
const Architecture& gpt2_architecture();
const Architecture& mixtral_architecture();
const Architecture& phimoe_architecture();
const Architecture& qwen2_moe_architecture();
const Architecture& qwen3_moe_architecture();
const Architecture& olmoe_architecture();
const Architecture& granitemoe_architecture();
const Architecture& mamba_architecture();
const Architecture& falcon_mamba_architecture();
const Architecture& mamba2_architecture();
const Architecture& granitemoehybrid_architecture();
const Architecture& bamba_architecture();
const Architecture& jamba_architecture();
const Architecture& lfm2_architecture();
const Architecture& bert_architecture();
const Architecture& roberta_architecture();
const Architecture& xlm_roberta_architecture();
const Architecture& camembert_architecture();
const Architecture& data2vec_text_architecture();
const Architecture& roberta_prelayernorm_architecture();
const Architecture& ernie_architecture();
const Architecture& electra_architecture();
const Architecture& distilbert_architecture();
const Architecture& albert_architecture();
const Architecture& mpnet_architecture();
const Architecture& deberta_v2_architecture();
const Architecture& modernbert_architecture();
const Architecture& t5_architecture();
const Architecture& mt5_architecture();
const Architecture& bart_architecture();
const Architecture& marian_architecture();
const Architecture& mbart_architecture();
const Architecture& plbart_architecture();
const Architecture& pegasus_architecture();
const Architecture& m2m_100_architecture();
const Architecture& blenderbot_architecture();
const Architecture& blenderbot_small_architecture();
const Architecture& llava_architecture();
const TinyHooks& llava_tiny_hooks();
const Architecture& gemma3_architecture();
const TinyHooks& gemma3_tiny_hooks();
const Architecture& idefics3_architecture();
const Architecture& smolvlm_architecture();
const TinyHooks& idefics3_tiny_hooks();
const Architecture& qwen2_vl_architecture();
const TinyHooks& qwen2_vl_tiny_hooks();
const Architecture& whisper_architecture();
}  // namespace hfx::models

namespace hfx {

std::vector<const Architecture*> all_architectures() {
  using namespace models;
  static const std::vector<const Architecture*> all = {
      &llama_architecture(),
      &mistral_architecture(),
      &qwen2_architecture(),
      &qwen3_architecture(),
      &gemma_architecture(),
      &gemma2_architecture(),
      &phi3_architecture(),
      &gpt2_architecture(),
      &gemma3_text_architecture(),
      // Llama-family decoders declared as options of the shared decoder (docs/adding-an-architecture.md)
      &granite_architecture(),
      &helium_architecture(),
      &smollm3_architecture(),
      &olmo_architecture(),
      &olmo2_architecture(),
      &stablelm_architecture(),
      &starcoder2_architecture(),
      &phi_architecture(),
      &cohere_architecture(),
      &cohere2_architecture(),
      &nemotron_architecture(),
      &glm_architecture(),
      &glm4_architecture(),
      &ernie4_5_architecture(),
      &exaone4_architecture(),
      &hunyuan_v1_dense_architecture(),
      &gpt_neox_architecture(),
      &gptj_architecture(),
      &olmo3_architecture(),
      &arcee_architecture(),
      &ministral_architecture(),
      &seed_oss_architecture(),
      &vaultgemma_architecture(),
      &cwm_architecture(),
      &opt_architecture(),
      &gpt_bigcode_architecture(),
      &falcon_architecture(),
      &codegen_architecture(),
      &bloom_architecture(),
      &mpt_architecture(),
      &persimmon_architecture(),
      &gpt_neo_architecture(),
      &biogpt_architecture(),
      &xglm_architecture(),
      // mixture-of-experts decoders
      &mixtral_architecture(),
      &phimoe_architecture(),
      &qwen2_moe_architecture(),
      &qwen3_moe_architecture(),
      &olmoe_architecture(),
      &granitemoe_architecture(),
      &flex_olmo_architecture(),
      &granitemoeshared_architecture(),
      &hunyuan_v1_moe_architecture(),
      // state-space decoders
      &mamba_architecture(),
      &falcon_mamba_architecture(),
      &mamba2_architecture(),
      // hybrids (per-layer-type caches: mamba or short-conv layers beside attention)
      &granitemoehybrid_architecture(),
      &bamba_architecture(),
      &jamba_architecture(),
      &lfm2_architecture(),
      // encoder-only
      &bert_architecture(),
      &roberta_architecture(),
      &xlm_roberta_architecture(),
      &camembert_architecture(),
      &data2vec_text_architecture(),
      &roberta_prelayernorm_architecture(),
      &ernie_architecture(),
      &electra_architecture(),
      &distilbert_architecture(),
      &albert_architecture(),
      &mpnet_architecture(),
      &deberta_v2_architecture(),
      &modernbert_architecture(),
      // encoder-decoder
      &t5_architecture(),
      &mt5_architecture(),
      &bart_architecture(),
      &marian_architecture(),
      &mbart_architecture(),
      &plbart_architecture(),
      &pegasus_architecture(),
      &m2m_100_architecture(),
      &blenderbot_architecture(),
      &blenderbot_small_architecture(),
      // speech encoder-decoder (log-mel features in)
      &whisper_architecture(),
      // vision-language (vision encoder, token embeddings, decoder on embeddings)
      &llava_architecture(),
      &gemma3_architecture(),
      &idefics3_architecture(),
      &smolvlm_architecture(),
      &qwen2_vl_architecture(),
  };
  return all;
}

const Architecture* find_architecture(const std::string& model_type) {
  for (const Architecture* a : all_architectures())
    if (a->model_type == model_type) return a;
  return nullptr;
}

}  // namespace hfx

namespace hfx::models {

void add_special_tokens(nlohmann::json& tj, nlohmann::json& tc,
                        const std::vector<std::pair<int64_t, std::string>>& tokens) {
  for (const auto& [id, content] : tokens)
    tj["added_tokens"].push_back(nlohmann::json{{"id", id},
                                                {"content", content},
                                                {"single_word", false},
                                                {"lstrip", false},
                                                {"rstrip", false},
                                                {"normalized", false},
                                                {"special", true}});
  nlohmann::json decoder = tc.value("added_tokens_decoder", nlohmann::json::object());
  for (const nlohmann::json& t : tj["added_tokens"]) {
    nlohmann::json d = t;
    d.erase("id");
    decoder[std::to_string(t["id"].get<int64_t>())] = d;
  }
  tc["added_tokens_decoder"] = decoder;
}

const TinyHooks* tiny_hooks(const std::string& model_type) {
  static const std::vector<std::pair<std::string, const TinyHooks*>> hooks = {
      {"llava", &llava_tiny_hooks()},
      {"gemma3", &gemma3_tiny_hooks()},
      {"idefics3", &idefics3_tiny_hooks()},
      {"smolvlm", &idefics3_tiny_hooks()},
      {"qwen2_vl", &qwen2_vl_tiny_hooks()}};
  for (const auto& [type, h] : hooks)
    if (type == model_type) return h;
  return nullptr;
}

}  // namespace hfx::models
