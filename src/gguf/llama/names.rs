//! The tensor names of a Hugging Face Llama checkpoint and of llama.cpp's GGUF files, side by
//! side.

/// A weight of the decoder, by role; `layer` for the per-block weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Weight {
    TokenEmbd,
    AttnNorm(usize),
    AttnQ(usize),
    AttnK(usize),
    AttnV(usize),
    AttnOutput(usize),
    AttnQBias(usize),
    AttnKBias(usize),
    AttnVBias(usize),
    FfnNorm(usize),
    FfnGate(usize),
    FfnUp(usize),
    FfnDown(usize),
    OutputNorm,
    Output,
}

impl Weight {
    /// The Hugging Face name.
    ///
    /// ```
    /// use ptxkit::gguf::llama::Weight;
    /// assert_eq!(Weight::AttnQ(3).hf_name(), "model.layers.3.self_attn.q_proj.weight");
    /// ```
    pub fn hf_name(self) -> String {
        let l = |i: usize, rest: &str| format!("model.layers.{i}.{rest}");
        match self {
            Weight::TokenEmbd => "model.embed_tokens.weight".into(),
            Weight::AttnNorm(i) => l(i, "input_layernorm.weight"),
            Weight::AttnQ(i) => l(i, "self_attn.q_proj.weight"),
            Weight::AttnK(i) => l(i, "self_attn.k_proj.weight"),
            Weight::AttnV(i) => l(i, "self_attn.v_proj.weight"),
            Weight::AttnOutput(i) => l(i, "self_attn.o_proj.weight"),
            Weight::AttnQBias(i) => l(i, "self_attn.q_proj.bias"),
            Weight::AttnKBias(i) => l(i, "self_attn.k_proj.bias"),
            Weight::AttnVBias(i) => l(i, "self_attn.v_proj.bias"),
            Weight::FfnNorm(i) => l(i, "post_attention_layernorm.weight"),
            Weight::FfnGate(i) => l(i, "mlp.gate_proj.weight"),
            Weight::FfnUp(i) => l(i, "mlp.up_proj.weight"),
            Weight::FfnDown(i) => l(i, "mlp.down_proj.weight"),
            Weight::OutputNorm => "model.norm.weight".into(),
            Weight::Output => "lm_head.weight".into(),
        }
    }

    /// llama.cpp's GGUF name.
    ///
    /// ```
    /// use ptxkit::gguf::llama::Weight;
    /// assert_eq!(Weight::AttnOutput(0).gguf_name(), "blk.0.attn_output.weight");
    /// ```
    pub fn gguf_name(self) -> String {
        let b = |i: usize, rest: &str| format!("blk.{i}.{rest}");
        match self {
            Weight::TokenEmbd => "token_embd.weight".into(),
            Weight::AttnNorm(i) => b(i, "attn_norm.weight"),
            Weight::AttnQ(i) => b(i, "attn_q.weight"),
            Weight::AttnK(i) => b(i, "attn_k.weight"),
            Weight::AttnV(i) => b(i, "attn_v.weight"),
            Weight::AttnOutput(i) => b(i, "attn_output.weight"),
            Weight::AttnQBias(i) => b(i, "attn_q.bias"),
            Weight::AttnKBias(i) => b(i, "attn_k.bias"),
            Weight::AttnVBias(i) => b(i, "attn_v.bias"),
            Weight::FfnNorm(i) => b(i, "ffn_norm.weight"),
            Weight::FfnGate(i) => b(i, "ffn_gate.weight"),
            Weight::FfnUp(i) => b(i, "ffn_up.weight"),
            Weight::FfnDown(i) => b(i, "ffn_down.weight"),
            Weight::OutputNorm => "output_norm.weight".into(),
            Weight::Output => "output.weight".into(),
        }
    }

    /// Norm weights and biases: vectors, stored as F32.
    pub fn is_vector(self) -> bool {
        matches!(
            self,
            Weight::AttnNorm(_)
                | Weight::FfnNorm(_)
                | Weight::OutputNorm
                | Weight::AttnQBias(_)
                | Weight::AttnKBias(_)
                | Weight::AttnVBias(_)
        )
    }

    /// The shape (`[out_features, in_features]` for a matrix, `[len]` for a vector) a model
    /// of `cfg` gives this weight.
    pub fn shape(self, cfg: &crate::model::ModelConfig) -> Vec<usize> {
        let (h, kv, f, v) = (cfg.hidden, cfg.kv_width(), cfg.ffn, cfg.vocab);
        match self {
            Weight::TokenEmbd | Weight::Output => vec![v, h],
            Weight::AttnNorm(_) | Weight::FfnNorm(_) | Weight::OutputNorm => vec![h],
            Weight::AttnQ(_) | Weight::AttnOutput(_) => vec![h, h],
            Weight::AttnK(_) | Weight::AttnV(_) => vec![kv, h],
            Weight::AttnQBias(_) => vec![h],
            Weight::AttnKBias(_) | Weight::AttnVBias(_) => vec![kv],
            Weight::FfnGate(_) | Weight::FfnUp(_) => vec![f, h],
            Weight::FfnDown(_) => vec![h, f],
        }
    }

    /// Every weight of a model of `cfg`, in the order llama.cpp writes them.
    pub fn all(cfg: &crate::model::ModelConfig) -> Vec<Weight> {
        let mut all = vec![Weight::TokenEmbd];
        for i in 0..cfg.layers {
            all.push(Weight::AttnNorm(i));
            all.push(Weight::AttnQ(i));
            all.push(Weight::AttnK(i));
            all.push(Weight::AttnV(i));
            if cfg.qkv_bias {
                all.extend([
                    Weight::AttnQBias(i),
                    Weight::AttnKBias(i),
                    Weight::AttnVBias(i),
                ]);
            }
            all.push(Weight::AttnOutput(i));
            all.extend([
                Weight::FfnNorm(i),
                Weight::FfnGate(i),
                Weight::FfnUp(i),
                Weight::FfnDown(i),
            ]);
        }
        all.push(Weight::OutputNorm);
        if !cfg.tied_embeddings {
            all.push(Weight::Output);
        }
        all
    }
}
