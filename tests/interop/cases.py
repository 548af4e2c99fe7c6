"""Tiny checkpoints made by transformers' own config and model classes (never by `hfx create-tiny`).

Each case is a model_type, the transformers config knobs it sets, and the family that decides how the
judges drive it. The knobs vary what hfx must read from a real config.json: GQA ratios (4:2, 4:1 MQA, 4:4),
tied and untied heads, sliding windows shorter than the test's sequences, rope scalings, biases, head dims
that are not hidden/heads, soft-capping, shared experts.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

# Shared by every decoder: small enough that one export + judge takes seconds.
_DEC = dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256)


@dataclasses.dataclass(frozen=True)
class Case:
    name: str            # test id and folder name
    model_type: str      # transformers' model_type
    family: str          # "decoder" (KV cache), "state" (SSM / hybrid caches), "encoder"
    config: dict         # keyword arguments of AutoConfig.for_model
    auto: str = "AutoModelForCausalLM"
    why: str = ""        # what this case's knobs exercise

    @property
    def model_id(self) -> str:
        return self.name


DECODERS = [
    Case("llama", "llama", "decoder", dict(_DEC, head_dim=16, tie_word_embeddings=False,
                                          rope_parameters=dict(rope_type="llama3", rope_theta=10000.0, factor=8.0,
                                                               low_freq_factor=1.0, high_freq_factor=4.0,
                                                               original_max_position_embeddings=64)),
         why="GQA 4:2, untied head, llama3 rope scaling"),
    Case("llama_mqa_tied", "llama", "decoder", dict(_DEC, num_key_value_heads=1, head_dim=32, tie_word_embeddings=True,
                                                   attention_bias=True, mlp_bias=True),
         why="MQA 4:1, head_dim 32 != hidden/heads, tied head, attention and MLP biases"),
    Case("mistral", "mistral", "decoder", dict(_DEC, head_dim=16, sliding_window=8),
         why="sliding window 8, shorter than prompt + decode"),
    Case("qwen2", "qwen2", "decoder", dict(_DEC, tie_word_embeddings=True),
         why="q/k/v biases, tied head"),
    Case("qwen3", "qwen3", "decoder", dict(_DEC, head_dim=32, num_key_value_heads=4),
         why="q/k norms, head_dim 32, no GQA"),
    Case("gemma", "gemma", "decoder", dict(_DEC, head_dim=32, num_key_value_heads=1),
         why="MQA, embedding scale, (1 + w) RMSNorm"),
    Case("gemma2", "gemma2", "decoder", dict(_DEC, head_dim=16, sliding_window=8, final_logit_softcapping=30.0,
                                            attn_logit_softcapping=50.0, query_pre_attn_scalar=16),
         why="soft-capping, alternating sliding window 8"),
    Case("gemma3_text", "gemma3_text", "decoder", dict(_DEC, head_dim=16, sliding_window=8, num_hidden_layers=3,
                                                      layer_types=["sliding_attention", "sliding_attention",
                                                                   "full_attention"]),
         why="per-layer-type rope bases, sliding pattern, q/k norms"),
    Case("phi3", "phi3", "decoder", dict(_DEC, pad_token_id=0),
         why="fused qkv and gate_up projections"),
    Case("gpt2", "gpt2", "decoder", dict(vocab_size=320, n_embd=64, n_layer=2, n_head=4, n_positions=128),
         why="learned positions, Conv1D weights, LayerNorm"),
    Case("mixtral", "mixtral", "decoder", dict(_DEC, head_dim=16, num_local_experts=4, num_experts_per_tok=2),
         why="4 experts, top-2"),
    Case("phimoe", "phimoe", "decoder", dict(_DEC, num_local_experts=4, num_experts_per_tok=2, router_jitter_noise=0.3,
                                             attention_bias=True, lm_head_bias=True, initializer_range=0.2),
         why="sparsemixer top-2 routing (jitter 0.3: the second softmax spans several experts), LayerNorms with "
             "biases, attention and lm_head biases"),
    Case("qwen2_moe", "qwen2_moe", "decoder", dict(_DEC, moe_intermediate_size=32, shared_expert_intermediate_size=64,
                                                  num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1),
         why="shared expert with sigmoid gate"),
    Case("qwen3_moe", "qwen3_moe", "decoder", dict(_DEC, head_dim=16, moe_intermediate_size=32, num_experts=4,
                                                  num_experts_per_tok=2, norm_topk_prob=True),
         why="normalized top-k, q/k norms"),
    Case("olmoe", "olmoe", "decoder", dict(_DEC, num_experts=4, num_experts_per_tok=2),
         why="q/k norms over all heads, experts"),
    Case("granitemoe", "granitemoe", "decoder", dict(_DEC, num_local_experts=4, num_experts_per_tok=2,
                                                    embedding_multiplier=2.0, logits_scaling=4.0,
                                                    residual_multiplier=0.5, attention_multiplier=0.25),
         why="embedding / residual / attention / logit multipliers"),
    # Llama-family decoders declared as DecoderOptions (issue 40): each with the knobs its family varies.
    Case("granite", "granite", "decoder", dict(_DEC, embedding_multiplier=2.0, logits_scaling=4.0,
                                              residual_multiplier=0.5, attention_multiplier=0.25, attention_bias=True),
         why="multipliers without experts, q/k/v/o biases"),
    Case("helium", "helium", "decoder", dict(_DEC, head_dim=16, attention_bias=True, mlp_bias=True, pad_token_id=3),
         why="interleaved rotary pairs, q/k/v (not o) biases, MLP biases"),
    Case("smollm3", "smollm3", "decoder", dict(_DEC, num_hidden_layers=4, no_rope_layer_interval=2,
                                              use_sliding_window=True, sliding_window=8, pad_token_id=0),
         why="NoPE layers 1 and 3, which also slide (window 8)"),
    Case("olmo", "olmo", "decoder", dict(_DEC, clip_qkv=0.05, attention_bias=True, pad_token_id=1),
         why="parameterless LayerNorms, clip_qkv that clips, q/k/v/o biases"),
    Case("olmo2", "olmo2", "decoder", dict(_DEC, attention_bias=True, pad_token_id=1),
         why="post-norm layers, q/k norms over all heads"),
    Case("stablelm", "stablelm", "decoder", dict(_DEC, use_qkv_bias=True),
         why="LayerNorm with bias, rotary on a quarter of each head, q/k/v biases"),
    Case("stablelm_parallel", "stablelm", "decoder", dict(_DEC, use_parallel_residual=True, partial_rotary_factor=0.5),
         why="parallel residual on one shared norm, half rotary"),
    Case("starcoder2", "starcoder2", "decoder", dict(_DEC, sliding_window=8, use_bias=True),
         why="LayerNorm, plain gelu MLP, biases everywhere, sliding window 8, tied head"),
    Case("phi", "phi", "decoder", dict(_DEC, qk_layernorm=True, partial_rotary_factor=0.5),
         why="parallel residual, per-head q/k LayerNorms, lm_head bias, half rotary"),
    Case("cohere", "cohere", "decoder", dict(_DEC, logit_scale=0.5, attention_bias=True, pad_token_id=0),
         why="parallel residual, bias-free LayerNorm, interleaved rotary, logit scale"),
    Case("cohere2", "cohere2", "decoder", dict(_DEC, num_hidden_layers=3, sliding_window=8, pad_token_id=0,
                                              layer_types=["sliding_attention", "sliding_attention", "full_attention"]),
         why="sliding layers with interleaved rotary, a full NoPE layer"),
    Case("nemotron", "nemotron", "decoder", dict(_DEC, head_dim=16, attention_bias=True, mlp_bias=True,
                                                partial_rotary_factor=0.5),
         why="LayerNorm1P (weight + 1, bias), relu² MLP, half rotary, biases"),
    Case("glm", "glm", "decoder", dict(_DEC, head_dim=16, pad_token_id=0),
         why="fused gate_up, interleaved half rotary, q/k/v biases"),
    Case("glm4", "glm4", "decoder", dict(_DEC, head_dim=16, pad_token_id=0),
         why="glm + post-attention and post-MLP norms"),
    Case("ernie4_5", "ernie4_5", "decoder", dict(_DEC, head_dim=16, use_bias=True, pad_token_id=0),
         why="interleaved rotary over the whole head, biases on all projections, tied head"),
    Case("exaone4", "exaone4", "decoder", dict(_DEC, num_hidden_layers=3, head_dim=16, sliding_window=8,
                                              layer_types=["sliding_attention", "sliding_attention", "full_attention"]),
         why="post-norm, per-head q/k norms, a full NoPE layer between sliding ones"),
    Case("hunyuan_v1_dense", "hunyuan_v1_dense", "decoder", dict(_DEC, head_dim=16, attention_bias=True, pad_token_id=0),
         why="q/k norms after rotary, q/k/v/o biases"),
    # Decoders of the shared blocks under their own module names (DecoderNames).
    Case("gpt_neox", "gpt_neox", "decoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                                num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=256,
                                                rotary_pct=0.5, rotary_emb_base=5000),
         why="per-head fused q/k/v, parallel residual with two LayerNorms, half rotary at base 5000"),
    Case("gpt_neox_sequential", "gpt_neox", "decoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                                           num_hidden_layers=2, num_attention_heads=4,
                                                           max_position_embeddings=256, use_parallel_residual=False,
                                                           attention_bias=False),
         why="sequential residual, no attention biases, quarter rotary"),
    Case("gptj", "gptj", "decoder", dict(vocab_size=320, n_embd=64, n_layer=2, n_head=4, n_inner=128, n_positions=256,
                                        rotary_dim=8),
         why="GPT-J names, interleaved rotary on 8 of 16 dims, parallel residual, lm_head bias"),
    Case("olmo3", "olmo3", "decoder", dict(_DEC, sliding_window=8, attention_bias=True, pad_token_id=1,
                                          layer_types=["sliding_attention", "full_attention"],
                                          rope_parameters=dict(full_attention=dict(rope_type="linear", factor=2.0,
                                                                                   rope_theta=10000.0),
                                                               sliding_attention=dict(rope_type="default",
                                                                                      rope_theta=5000.0))),
         why="post-norm, a rope per layer type (linear-scaled full, base 5000 sliding), window 8"),
    Case("arcee", "arcee", "decoder", dict(_DEC, head_dim=32, attention_bias=True, mlp_bias=True,
                                          rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0,
                                                               original_max_position_embeddings=16)),
         why="relu² plain MLP, yarn rope, biases"),
    Case("ministral", "ministral", "decoder", dict(_DEC, head_dim=32, sliding_window=8,
                                                  layer_types=["sliding_attention", "full_attention"]),
         why="a sliding and a full layer, window 8"),
    Case("seed_oss", "seed_oss", "decoder", dict(_DEC, head_dim=32, attention_bias=True, attention_out_bias=True,
                                                mlp_bias=True, pad_token_id=1),
         why="q/k/v and o biases set apart, MLP biases"),
    Case("vaultgemma", "vaultgemma", "decoder", dict(_DEC, head_dim=16, sliding_window=8, query_pre_attn_scalar=16,
                                                    attention_bias=True, pad_token_id=0),
         why="Gemma 2 without post norms, soft-capping, alternating window 8"),
    Case("cwm", "cwm", "decoder", dict(_DEC, head_dim=16, sliding_window=8, mlp_bias=True,
                                      layer_types=["full_attention", "sliding_attention"]),
         why="llama3 rope by default, a full then a sliding layer, MLP biases"),
    Case("flex_olmo", "flex_olmo", "decoder", dict(_DEC, intermediate_size=32, pad_token_id=1, num_experts=4,
                                                  num_experts_per_tok=2, norm_topk_prob=True, attention_bias=True),
         why="post-norm layers with 4 experts, top-2 renormalized"),
    Case("granitemoeshared", "granitemoeshared", "decoder", dict(_DEC, intermediate_size=32, num_local_experts=4,
                                                                num_experts_per_tok=2, shared_intermediate_size=48,
                                                                embedding_multiplier=2.0, residual_multiplier=0.5,
                                                                logits_scaling=4.0, attention_multiplier=0.2),
         why="the layer's stacked shared MLP beside the experts, multipliers"),
    Case("hunyuan_v1_moe", "hunyuan_v1_moe", "decoder", dict(_DEC, head_dim=16, intermediate_size=32, num_experts=4,
                                                            moe_topk=2, attention_bias=True, pad_token_id=0),
         why="experts routed by gate.wg with an ungated shared MLP, q/k norms after rotary"),
    Case("opt", "opt", "decoder", dict(vocab_size=320, hidden_size=64, ffn_dim=128, num_hidden_layers=2,
                                      num_attention_heads=4, max_position_embeddings=256, word_embed_proj_dim=64),
         why="learned positions at offset 2, no rotary, relu MLP, tied head"),
    Case("gpt_bigcode", "gpt_bigcode", "decoder", dict(vocab_size=320, n_embd=64, n_layer=2, n_head=4, n_inner=128,
                                                      n_positions=256, multi_query=True),
         why="multi-query fused c_attn, learned positions, GPT-2 names on nn.Linear"),
    Case("gpt_bigcode_mha", "gpt_bigcode", "decoder", dict(vocab_size=320, n_embd=64, n_layer=2, n_head=4,
                                                          n_inner=128, n_positions=256, multi_query=False,
                                                          scale_attn_weights=False),
         why="per-head fused c_attn (no MQA), unscaled attention"),
    Case("falcon", "falcon", "decoder", dict(vocab_size=320, hidden_size=64, ffn_hidden_size=128, num_hidden_layers=2,
                                            num_attention_heads=4, max_position_embeddings=256, multi_query=True,
                                            parallel_attn=True, bias=True),
         why="multi-query fused q/k/v, parallel attention and MLP on one LayerNorm, biases"),
    Case("falcon_sequential", "falcon", "decoder", dict(vocab_size=320, hidden_size=64, num_hidden_layers=2,
                                                       num_attention_heads=4, max_position_embeddings=256,
                                                       multi_query=False, parallel_attn=False),
         why="per-head fused q/k/v, sequential residual with post_attention_layernorm, 4x MLP"),
    Case("codegen", "codegen", "decoder", dict(vocab_size=320, n_embd=64, n_layer=2, n_head=8, n_inner=128,
                                              n_positions=256, rotary_dim=4),
         why="q/v/k in 4 model-parallel groups of one qkv_proj, interleaved rotary on 4 of 8 dims"),
    Case("bloom", "bloom", "decoder", dict(vocab_size=320, hidden_size=96, n_layer=2, n_head=6),
         why="ALiBi with 6 heads (4 power-of-two slopes + 2 odd extras), embedding LayerNorm, per-head fused qkv"),
    Case("mpt", "mpt", "decoder", dict(vocab_size=320, d_model=96, n_heads=6, n_layers=2, max_seq_len=256,
                                       attn_config=dict(clip_qkv=0.6, softmax_scale=0.3)),
         why="MPT ALiBi (6 heads: the odd slopes of 8 first), clip_qkv 0.6, softmax_scale 0.3, bias-free "
             "LayerNorms"),
    Case("persimmon", "persimmon", "decoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                                   num_hidden_layers=2, num_attention_heads=4,
                                                   max_position_embeddings=256, qk_layernorm=True),
         why="per-head fused qkv, per-head q/k LayerNorms, rotary on half of each head, relu2, untied head"),
    Case("gpt_neo", "gpt_neo", "decoder", dict(vocab_size=320, hidden_size=64, num_layers=2, num_heads=4,
                                               intermediate_size=128, max_position_embeddings=256, window_size=8,
                                               attention_types=[[["global", "local"], 1]]),
         why="unscaled attention, local layer with window 8 (shorter than prompt + decode), learned positions"),
    Case("biogpt", "biogpt", "decoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                             num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=256,
                                             layer_norm_eps=1e-3),
         why="positions + 2, sqrt(hidden) embedding scale, output_projection head, LayerNorm eps 1e-5 whatever "
             "layer_norm_eps says"),
    Case("xglm", "xglm", "decoder", dict(vocab_size=320, d_model=64, ffn_dim=128, num_layers=2, attention_heads=4,
                                         max_position_embeddings=256),
         why="fairseq sinusoidal positions + 2 (computed), sqrt(d_model) embedding scale, fc1/fc2 gelu"),
]

STATE = [
    Case("mamba", "mamba", "state", dict(vocab_size=320, hidden_size=64, state_size=8, num_hidden_layers=2,
                                         conv_kernel=4, expand=2)),
    Case("falcon_mamba", "falcon_mamba", "state", dict(vocab_size=320, hidden_size=64, state_size=8,
                                                       num_hidden_layers=2, conv_kernel=4, expand=2, time_step_rank=8,
                                                       mixer_rms_eps=1e-3),
         why="mamba's mixer + weightless RMS norms on dt, B and C (mixer_rms_eps 1e-3)"),
    Case("mamba2", "mamba2", "state", dict(vocab_size=320, hidden_size=64, state_size=16, num_hidden_layers=2,
                                           conv_kernel=4, expand=2, head_dim=16, num_heads=8, n_groups=2,
                                           chunk_size=16),
         why="2 groups: B/C shared per group, the gated RMSNorm per group"),
    Case("granitemoehybrid", "granitemoehybrid", "state",
         dict(_DEC, num_hidden_layers=2, layer_types=["mamba", "attention"], mamba_n_heads=8, mamba_d_head=16,
              mamba_d_state=16, mamba_n_groups=2, mamba_d_conv=4, mamba_expand=2, num_local_experts=4,
              num_experts_per_tok=2, shared_intermediate_size=64)),
    Case("bamba", "bamba", "state", dict(_DEC, num_hidden_layers=3, attn_layer_indices=[1], mamba_n_heads=8,
                                         mamba_d_head=16, mamba_d_state=16, mamba_n_groups=2, mamba_d_conv=4,
                                         mamba_expand=2, mamba_chunk_size=4, attention_bias=True, mlp_bias=True,
                                         time_step_limit=[0.01, 2.0], initializer_range=0.2),
         why="Mamba-2 layers around one attention layer (partial rotary 0.5), a dense MLP, biases, a bounded "
             "time_step_limit, 2 groups; weights at 0.2 so the rotary fraction shows"),
    Case("jamba", "jamba", "state", dict(_DEC, num_hidden_layers=4, attn_layer_period=4, attn_layer_offset=2,
                                         expert_layer_period=2, expert_layer_offset=1, num_experts=4,
                                         num_experts_per_tok=2, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2,
                                         mamba_dt_rank=6, mamba_proj_bias=True, initializer_range=0.1),
         why="Mamba-1 layers with weighted dt/B/C RMS norms and an in_proj bias (masked before it), one "
             "position-free attention layer, MoE on odd layers (softmax top-2, not renormalized); weights at 0.1: "
             "at 0.2 transformers' own f32 forward is 1.4e-4 from its f64 one (hfx's 5e-5), past any f32 bound"),
    Case("lfm2", "lfm2", "state", dict(_DEC, num_hidden_layers=3, layer_types=["conv", "full_attention", "conv"],
                                       conv_L_cache=3, block_ff_dim=128, block_auto_adjust_ff_dim=False)),
]

ENCODERS = [
    Case("bert", "bert", "encoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, max_position_embeddings=128), auto="AutoModelForMaskedLM"),
    Case("roberta", "roberta", "encoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                               num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=130,
                                               pad_token_id=1), auto="AutoModelForSequenceClassification"),
    Case("xlm-roberta", "xlm-roberta", "encoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                                       num_hidden_layers=2, num_attention_heads=4,
                                                       max_position_embeddings=130, pad_token_id=1),
         auto="AutoModel"),
    Case("camembert", "camembert", "encoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                                   num_hidden_layers=2, num_attention_heads=4,
                                                   max_position_embeddings=130, pad_token_id=1),
         auto="AutoModelForMaskedLM", why="RoBERTa's modules under CamembertForMaskedLM, tied lm_head"),
    Case("data2vec-text", "data2vec-text", "encoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                                           num_hidden_layers=2, num_attention_heads=4,
                                                           max_position_embeddings=130, pad_token_id=1,
                                                           hidden_act="gelu_new"),
         auto="AutoModelForSequenceClassification", why="data2vec_text prefix, classification head, gelu_new"),
    Case("roberta-prelayernorm", "roberta-prelayernorm", "encoder",
         dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=130, pad_token_id=1), auto="AutoModelForMaskedLM",
         why="pre-LN layers, LayerNorm after the encoder"),
    Case("ernie", "ernie", "encoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                           num_attention_heads=4, max_position_embeddings=128, use_task_id=True,
                                           task_type_vocab_size=3), auto="AutoModelForTokenClassification",
         why="use_task_id: task_type_embeddings row 0 added, ernie prefix"),
    Case("electra", "electra", "encoder", dict(vocab_size=320, embedding_size=32, hidden_size=64,
                                               intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                               max_position_embeddings=128), auto="AutoModelForMaskedLM",
         why="embeddings of 32 projected to 64 (embeddings_project), generator_predictions + tied lm head"),
    Case("electra_cls", "electra", "encoder", dict(vocab_size=320, embedding_size=64, hidden_size=64,
                                                   intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                   max_position_embeddings=128, hidden_act="gelu_new"),
         auto="AutoModelForSequenceClassification", why="no projection, gelu ElectraClassificationHead"),
    Case("distilbert", "distilbert", "encoder", dict(vocab_size=320, dim=64, hidden_dim=128, n_layers=2, n_heads=4,
                                                     max_position_embeddings=128), auto="AutoModelForTokenClassification"),
    Case("albert", "albert", "encoder", dict(vocab_size=320, embedding_size=32, hidden_size=64, intermediate_size=128,
                                             num_hidden_layers=3, num_hidden_groups=2, inner_group_num=2,
                                             num_attention_heads=4, max_position_embeddings=128),
         auto="AutoModelForMaskedLM",
         why="embeddings of 32 mapped to 64; 3 steps over 2 shared groups of 2 layers; MLM head at 32"),
    Case("albert_cls", "albert", "encoder", dict(vocab_size=320, embedding_size=48, hidden_size=64,
                                                 intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                 max_position_embeddings=128, hidden_act="gelu"),
         auto="AutoModelForSequenceClassification", why="one group, the bare-Linear pooler + classifier"),
    Case("mpnet", "mpnet", "encoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                           num_attention_heads=4, max_position_embeddings=130,
                                           relative_attention_num_buckets=48, initializer_range=0.2),
         auto="AutoModelForSequenceClassification",
         why="relative position bias bucketed by 32 from a 48-row table (weights at 0.2 so the bias shows), "
             "positions from ids != 1"),
    Case("mpnet_mlm", "mpnet", "encoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                               num_hidden_layers=2, num_attention_heads=4,
                                               max_position_embeddings=130, hidden_act="gelu_new"),
         auto="AutoModelForMaskedLM", why="MPNetLMHead tied to the word embeddings"),
    Case("deberta-v2", "deberta-v2", "encoder",
         dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=128, relative_attention=True, position_buckets=6, max_relative_positions=16,
              pos_att_type="p2c|c2p", share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False,
              type_vocab_size=0, initializer_range=0.2),
         auto="AutoModelForMaskedLM",
         why="DeBERTa-v3's shape: log buckets (6 of 16 positions, so 8-token rows reach the log part), shared "
             "keys, LayerNorm'd rel_embeddings, legacy MLM head"),
    Case("deberta-v2_conv", "deberta-v2", "encoder",
         dict(vocab_size=320, embedding_size=32, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, max_position_embeddings=128, relative_attention=True, max_relative_positions=4,
              pos_att_type=["c2p", "p2c"], share_att_key=False, position_biased_input=True, type_vocab_size=2,
              conv_kernel_size=3, hidden_act="gelu_new", pooler_hidden_act="tanh", initializer_range=0.2),
         auto="AutoModelForSequenceClassification",
         why="DeBERTa-v2-xlarge's knobs: pos_key/pos_query_proj, unbucketed positions clamped to 2×4, ConvLayer "
             "after layer 0, embed_proj from 32, token types, ContextPooler"),
    Case("deberta-v2_c2p", "deberta-v2", "encoder",
         dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=128, relative_attention=True, position_buckets=8, pos_att_type="c2p",
              legacy=False, type_vocab_size=0, initializer_range=0.2),
         auto="AutoModelForMaskedLM", why="c2p only (scale sqrt(2·D)), the non-legacy lm_predictions head"),
    Case("modernbert", "modernbert", "encoder", dict(vocab_size=320, hidden_size=64, intermediate_size=128,
                                                     num_hidden_layers=3, num_attention_heads=4,
                                                     global_attn_every_n_layers=2, local_attention=8,
                                                     max_position_embeddings=128, pad_token_id=0, bos_token_id=1,
                                                     eos_token_id=2, cls_token_id=1, sep_token_id=2),
         auto="AutoModelForMaskedLM"),
]

ALL = DECODERS + STATE + ENCODERS

# The contract probes (test_conformance.py) exercise hfx's contract machinery, which does not depend on the
# numerics knobs: CI probes one case per contract shape and leaves out these repeats (each is still judged
# for numerics on every format in CI); HFX_INTEROP_FULL=1 probes every case (sessions run it before they
# stop). Measured (pytest --durations, an ASan suite beside it): the left-out probes cost about 3 of the
# tier's 26 CPU-minutes.
PROBE_REPEATS = {
    "bloom": "ALiBi as mpt; its unbounded positions give a 2048-key contract (about 55 s of probes)",
    "persimmon": "fused per-head qkv + rotary as gpt_neox",
    "biogpt": "learned positions + 2 as opt",
    "camembert": "roberta's contract",
    "data2vec-text": "roberta's contract",
    "electra_cls": "electra's contract",
    "albert_cls": "albert's contract",
    "mpnet_mlm": "mpnet's contract",
    "deberta-v2_c2p": "deberta-v2's contract",
    "plbart": "bart's contract",
    "pegasus": "marian's contract (sinusoidal table)",
    "blenderbot": "mbart's contract (pre-LN, learned positions)",
    "blenderbot_small": "bart's contract",
    "mt5_tied": "mt5's contract",
}


def probed(cases: list) -> list:
    """The cases the contract probes run on: all with HFX_INTEROP_FULL=1, else all but PROBE_REPEATS."""
    import os

    if os.environ.get("HFX_INTEROP_FULL") == "1":
        return list(cases)
    return [c for c in cases if c.name not in PROBE_REPEATS]
BY_NAME = {c.name: c for c in ALL}


def make_checkpoint(case: Case, folder: Path, seed: int = 0, make=None) -> Path:
    """Writes the case's checkpoint with transformers' own classes: config.json + model.safetensors (the model of
    `make`, default make_model)."""
    if (folder / "model.safetensors").exists():
        return folder
    model = (make or make_model)(case, seed)
    tmp = folder.with_name(folder.name + ".tmp")
    model.save_pretrained(tmp)
    tmp.rename(folder)
    return folder


def make_model(case: Case, seed: int = 0):
    """The case's model object (transformers' own classes, every parameter perturbed): what make_checkpoint
    saves, and what tests/python exports live."""
    import torch
    import transformers

    cfg = transformers.AutoConfig.for_model(case.model_type, **case.config)
    torch.manual_seed(seed)
    model = getattr(transformers, case.auto).from_config(cfg, dtype=torch.float32)
    # Random init draws LayerNorm/RMSNorm weights at 1 and biases at 0; perturb every parameter a little so a
    # wrong norm offset or a dropped bias shows in the numbers.
    with torch.no_grad():
        g = torch.Generator().manual_seed(seed + 1)
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)
    return model
