//! The decoder's forward on the device, as launches of the `kernels` ops: the prefill of
//! newly joined sequences (packed, variable-length, flash attention, the GGUF prefill GEMM)
//! and one decode step of a batch (paged attention, and the GGUF GEMVs: on the tensor cores
//! on sm_80 and newer, one RMSNorm shared by the projections it feeds, written by the
//! residual add before it; else, and for Q8_0 rows that are not whole units of 256, the
//! f32-route GEMV with RMSNorm fused in front). Activations are f32;
//! attention reads and writes bf16, as the KV cache holds it. Whichever GEMV a weight takes,
//! it takes at every batch size, so a sequence's tokens do not depend on the batch it is in.
//! A model loaded with `Fusion::Fused` launches its stacked q/k/v and gate/up once each (the
//! SwiGLU in the GEMV) and feeds attention's bf16 output to the o projection uncast.

use super::kv_cache::PagedKvCache;
use super::model::{Fusion, Layer, Projections, ServeModel};
use crate::model::ModelConfig;
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::attention::{
    decode_splits, flash_forward, paged_decode, paged_decode_workspace, Attention, Batch, Decode,
    Heads, Mask,
};
use kernels::cast::cast;
use kernels::elementwise::{add, swiglu};
use kernels::embedding::embedding;
use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
use kernels::layout::kv_cache_append;
use kernels::norm::{add_rms_norm, rms_norm};
use kernels::quant::gguf::{
    dequantize_rows, gemv, gemv_mma, gemv_mma_parts, gemv_mma_reads, gemv_mma_swiglu,
    gemv_rms_norm, GgufWeights,
};
use kernels::rope::{rope, rope_append, Rope, RopeLayout};
use kernels::Error;
use std::collections::HashMap;
use std::ops::Range;

/// ggml's RoPE for the `llama` architecture: adjacent pairs, which the converter's q/k row
/// permutation makes equal to Hugging Face's half-split pairs.
pub(crate) fn rope_spec(cfg: &ModelConfig) -> Rope {
    Rope {
        layout: RopeLayout::Interleaved,
        theta: cfg.rope_theta,
        rotary_dim: cfg.head_dim,
    }
}

fn heads(cfg: &ModelConfig) -> Heads {
    Heads {
        q: cfg.heads_q,
        kv: cfg.heads_kv,
        dim: cfg.head_dim,
    }
}

fn scale(cfg: &ModelConfig) -> f32 {
    1.0 / (cfg.head_dim as f32).sqrt()
}

/// One new token a sequence, attending up to `max_len` cached positions.
fn decode(cfg: &ModelConfig, max_len: usize, splits: usize) -> Decode {
    Decode {
        heads: heads(cfg),
        scale: scale(cfg),
        new: 1,
        max_len,
        splits,
    }
}

/// The sequences a prefill covers, packed one after another.
pub(crate) struct PrefillBatch {
    /// Every sequence's tokens, concatenated.
    pub tokens: Vec<u32>,
    /// `seqs + 1` offsets into `tokens`.
    pub cu_seqlens: Vec<u32>,
    /// Each sequence's pages, `blocks_per_seq` entries a sequence (unused ones past the cache).
    pub table: Vec<u32>,
    pub blocks_per_seq: usize,
}

impl PrefillBatch {
    fn seqs(&self) -> usize {
        self.cu_seqlens.len() - 1
    }
}

/// Dequantizes the rows `rows` of `w` (one projection of a stacked weight, or all of it)
/// into a workspace of their size and runs `y = x·Wᵀ (+ bias)` for `m` rows.
fn project(
    stream: &Stream,
    workspaces: &mut HashMap<usize, Buffer<f32>>,
    (w, rows): (&GgufWeights, Range<usize>),
    x: &Buffer<f32>,
    y: &mut Buffer<f32>,
    m: usize,
    bias: Option<&Buffer<f32>>,
) -> Result<(), Error> {
    let n = rows.len();
    let len = n * w.cols();
    let ws = match workspaces.entry(len) {
        std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
        std::collections::hash_map::Entry::Vacant(v) => v.insert(Buffer::zeros(stream, len)?),
    };
    dequantize_rows(stream, w, rows, ws)?;
    let shape = GemmShape::new(Layout::Nt, m, n, w.cols());
    let epilogue = Epilogue {
        bias,
        ..Epilogue::default()
    };
    gemm(stream, &shape, x, ws, y, &epilogue, Math::Fp32)
}

/// Runs the prefill of `batch` (at most the GEMV's 16 sequences): writes every token's keys
/// and values into the cache and returns the logits of each sequence's last token
/// (`seqs × vocab`).
pub(crate) fn prefill(
    stream: &Stream,
    model: &ServeModel,
    cache: &mut PagedKvCache,
    batch: &PrefillBatch,
) -> Result<Vec<f32>, Error> {
    let cfg = model.config();
    let (t, s) = (batch.tokens.len(), batch.seqs());
    let (hid, qw, kvw, ffn) = (cfg.hidden, cfg.hidden, cfg.kv_width(), cfg.ffn);
    let mut positions = Vec::with_capacity(t);
    let mut seq_ids = Vec::with_capacity(t);
    let mut last_rows = Vec::with_capacity(s);
    let mut max_len = 0;
    for (i, w) in batch.cu_seqlens.windows(2).enumerate() {
        positions.extend(0..w[1] - w[0]);
        seq_ids.extend(std::iter::repeat_n(i as u32, (w[1] - w[0]) as usize));
        last_rows.push(w[1] - 1);
        max_len = max_len.max((w[1] - w[0]) as usize);
    }
    let f32s = |n: usize| Buffer::<f32>::zeros(stream, n);
    let bf16s = |n: usize| Buffer::<Bf16>::zeros(stream, n);
    let ids = Buffer::from_host(stream, &batch.tokens)?;
    let positions = Buffer::from_host(stream, &positions)?;
    let seq_ids = Buffer::from_host(stream, &seq_ids)?;
    let table = Buffer::from_host(stream, &batch.table)?;
    let cu = Buffer::from_host(stream, &batch.cu_seqlens)?;
    let last_rows = Buffer::from_host(stream, &last_rows)?;
    let (mut x, mut h, mut n) = (f32s(t * hid)?, f32s(t * hid)?, f32s(t * hid)?);
    let (mut q, mut q_rot, mut k, mut k_rot, mut v) = (
        f32s(t * qw)?,
        f32s(t * qw)?,
        f32s(t * kvw)?,
        f32s(t * kvw)?,
        f32s(t * kvw)?,
    );
    let (mut qb, mut kb, mut vb, mut ob) = (
        bf16s(t * qw)?,
        bf16s(t * kvw)?,
        bf16s(t * kvw)?,
        bf16s(t * qw)?,
    );
    let (mut o, mut attn, mut mlp) = (f32s(t * qw)?, f32s(t * hid)?, f32s(t * hid)?);
    let (mut gate, mut up, mut act) = (f32s(t * ffn)?, f32s(t * ffn)?, f32s(t * ffn)?);
    let mut lse = f32s(cfg.heads_q * t)?;
    let mut ws = HashMap::new();
    let layout = cache.layout(s, batch.blocks_per_seq);
    let rope_spec = rope_spec(cfg);
    let attention = Attention {
        heads: heads(cfg),
        mask: Mask::Causal,
        scale: scale(cfg),
    };
    let packed = Batch {
        cu_seqlens: &cu,
        seqs: s,
        tokens: t,
        max_len,
    };
    embedding(stream, &model.embed, &ids, &mut x, t, cfg.vocab, hid)?;
    for (l, layer) in model.layers.iter().enumerate() {
        let bias = |i: usize| layer.bias.as_ref().map(|b| &b[i]);
        rms_norm(stream, &x, &layer.attn_norm, &mut n, t, hid, cfg.norm_eps)?;
        project(stream, &mut ws, layer.qkv.part(0), &n, &mut q, t, bias(0))?;
        project(stream, &mut ws, layer.qkv.part(1), &n, &mut k, t, bias(1))?;
        project(stream, &mut ws, layer.qkv.part(2), &n, &mut v, t, bias(2))?;
        rope(
            stream,
            &q,
            &positions,
            &mut q_rot,
            t,
            cfg.heads_q,
            cfg.head_dim,
            rope_spec,
        )?;
        rope(
            stream,
            &k,
            &positions,
            &mut k_rot,
            t,
            cfg.heads_kv,
            cfg.head_dim,
            rope_spec,
        )?;
        cast(stream, &q_rot, &mut qb)?;
        cast(stream, &k_rot, &mut kb)?;
        cast(stream, &v, &mut vb)?;
        kv_cache_append(
            stream,
            &kb,
            &seq_ids,
            &positions,
            &table,
            &mut cache.k[l],
            t,
            layout,
        )?;
        kv_cache_append(
            stream,
            &vb,
            &seq_ids,
            &positions,
            &table,
            &mut cache.v[l],
            t,
            layout,
        )?;
        flash_forward(stream, &qb, &kb, &vb, packed, attention, &mut ob, &mut lse)?;
        cast(stream, &ob, &mut o)?;
        let o_rows = 0..layer.o.rows();
        project(stream, &mut ws, (&layer.o, o_rows), &o, &mut attn, t, None)?;
        add(stream, &x, &attn, &mut h)?;
        rms_norm(stream, &h, &layer.ffn_norm, &mut n, t, hid, cfg.norm_eps)?;
        project(
            stream,
            &mut ws,
            layer.gate_up.part(0),
            &n,
            &mut gate,
            t,
            None,
        )?;
        project(stream, &mut ws, layer.gate_up.part(1), &n, &mut up, t, None)?;
        swiglu(stream, &gate, &up, &mut act)?;
        let down_rows = 0..layer.down.rows();
        project(
            stream,
            &mut ws,
            (&layer.down, down_rows),
            &act,
            &mut mlp,
            t,
            None,
        )?;
        add(stream, &h, &mlp, &mut x)?;
    }
    // The embedding gather picks each sequence's last row out of the `t × hidden` stream.
    let mut last = f32s(s * hid)?;
    embedding(stream, &x, &last_rows, &mut last, s, t, hid)?;
    let mut logits = f32s(s * cfg.vocab)?;
    let mut normed = f32s(s * hid)?;
    head(stream, model, &last, &mut normed, false, &mut logits, s)?;
    Ok(logits.to_host(stream)?)
}

/// `y = x·Wᵀ` for `m` rows, by the GEMV [`gemv_mma_reads`] picks.
fn project_rows(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<f32>,
    y: &mut Buffer<f32>,
    m: usize,
) -> Result<(), Error> {
    if gemv_mma_reads(stream, w) {
        gemv_mma(stream, w, x, y, m)
    } else {
        gemv(stream, w, x, y, m)
    }
}

/// `y = rmsnorm(x)·Wᵀ` for `m` rows of `hidden`: the tensor-core GEMV reads `normed`, which
/// the caller has filled with `rmsnorm(x)` where [`gemv_mma_reads`] holds; the f32 route
/// fuses the norm itself.
#[allow(clippy::too_many_arguments)]
fn project_normed_rows(
    stream: &Stream,
    w: &GgufWeights,
    x: &Buffer<f32>,
    normed: &Buffer<f32>,
    gamma: &Buffer<f32>,
    eps: f32,
    y: &mut Buffer<f32>,
    m: usize,
) -> Result<(), Error> {
    if gemv_mma_reads(stream, w) {
        gemv_mma(stream, w, normed, y, m)
    } else {
        gemv_rms_norm(stream, w, x, gamma, eps, y, m)
    }
}

/// `normed = rmsnorm(x)` for `m` rows where one of `weights` takes the tensor-core GEMV,
/// which reads it.
fn norm_for(
    stream: &Stream,
    weights: &[&GgufWeights],
    x: &Buffer<f32>,
    gamma: &Buffer<f32>,
    eps: f32,
    normed: &mut Buffer<f32>,
    m: usize,
) -> Result<(), Error> {
    if weights.iter().any(|w| gemv_mma_reads(stream, w)) {
        let cols = gamma.len();
        rms_norm(stream, x, gamma, normed, m, cols, eps)?;
    }
    Ok(())
}

/// `sum = x + residual` for `m` rows, and in the same launch `normed = rmsnorm(sum)` where
/// one of `weights` takes the tensor-core GEMV; whether it wrote `normed`.
#[allow(clippy::too_many_arguments)]
fn add_then_norm_for(
    stream: &Stream,
    weights: &[&GgufWeights],
    x: &Buffer<f32>,
    residual: &Buffer<f32>,
    gamma: &Buffer<f32>,
    eps: f32,
    sum: &mut Buffer<f32>,
    normed: &mut Buffer<f32>,
    m: usize,
) -> Result<bool, Error> {
    if weights.iter().any(|w| gemv_mma_reads(stream, w)) {
        let cols = gamma.len();
        add_rms_norm(stream, x, residual, gamma, sum, normed, m, cols, eps)?;
        return Ok(true);
    }
    add(stream, x, residual, sum)?;
    Ok(false)
}

/// `logits = rmsnorm(x)·Wᵀ` for `m` rows (at most the GEMV's 16); `normed` (`m × hidden`)
/// holds the norm where the tensor-core GEMV reads it, already written if `normed_ready`.
fn head(
    stream: &Stream,
    model: &ServeModel,
    x: &Buffer<f32>,
    normed: &mut Buffer<f32>,
    normed_ready: bool,
    logits: &mut Buffer<f32>,
    m: usize,
) -> Result<(), Error> {
    let cfg = model.config();
    let (w, gamma, eps) = (&model.output, &model.output_norm, cfg.norm_eps);
    if !normed_ready {
        norm_for(stream, &[w], x, gamma, eps, normed, m)?;
    }
    project_normed_rows(stream, w, x, normed, gamma, eps, logits, m)
}

/// Whether the decode step's o projection of `layer` reads attention's bf16 output as it is
/// (the tensor-core GEMV reads its input as bf16 whatever its type), rather than a cast of it.
fn reads_attention_directly(stream: &Stream, model: &ServeModel, layer: &Layer) -> bool {
    model.fusion() == Fusion::Fused && gemv_mma_reads(stream, &layer.o)
}

/// Everything one decode step of a batch of `b` rows reads and writes. The engine copies the
/// step's inputs into `tokens`, `positions`, `seq_lens` and `table`, then runs (or replays)
/// the step; rows past the live sequences are padding: length 0, table entries past the
/// cache, so they append nothing and attend nothing.
pub(crate) struct DecodeStep {
    pub b: usize,
    pub blocks_per_seq: usize,
    pub tokens: Buffer<u32>,
    pub positions: Buffer<u32>,
    seq_ids: Buffer<u32>,
    pub seq_lens: Buffer<u32>,
    pub table: Buffer<u32>,
    pub logits: Buffer<f32>,
    x: Buffer<f32>,
    /// `rmsnorm` of `x` or `h` where a tensor-core GEMV reads it.
    normed: Buffer<f32>,
    h: Buffer<f32>,
    q: Buffer<f32>,
    k: Buffer<f32>,
    v: Buffer<f32>,
    /// Projections before their bias is added (Qwen2-style models only).
    unbiased: Option<[Buffer<f32>; 3]>,
    /// Each layer's q, k and v biases repeated for the `b` rows.
    biases: Vec<[Buffer<f32>; 3]>,
    qb: Buffer<Bf16>,
    ob: Buffer<Bf16>,
    /// Attention's output cast to f32, for o projections that do not read `ob` (empty where
    /// none is).
    o: Buffer<f32>,
    attn: Buffer<f32>,
    /// The gate's and the up's products, where a layer's are not fused (empty where none is).
    gate: Buffer<f32>,
    up: Buffer<f32>,
    act: Buffer<f32>,
    mlp: Buffer<f32>,
    /// Ranges each sequence's cache is split into for paged attention.
    splits: usize,
    workspace: Buffer<f32>,
}

impl DecodeStep {
    /// Buffers for a batch of `b` rows (1 to 16) over a cache of pages of `block_size`.
    pub fn new(
        stream: &Stream,
        model: &ServeModel,
        b: usize,
        blocks_per_seq: usize,
        block_size: usize,
        splits: Option<usize>,
    ) -> Result<DecodeStep, Error> {
        let cfg = model.config();
        let (hid, kvw, ffn) = (cfg.hidden, cfg.kv_width(), cfg.ffn);
        let f32s = |n: usize| Buffer::<f32>::zeros(stream, n);
        let bf16s = |n: usize| Buffer::<Bf16>::zeros(stream, n);
        let mut biases = Vec::new();
        for layer in &model.layers {
            if let Some(bias) = &layer.bias {
                let rep = |v: &Buffer<f32>| -> Result<Buffer<f32>, Error> {
                    let host = v.to_host(stream)?;
                    let rows: Vec<f32> = (0..b).flat_map(|_| host.iter().copied()).collect();
                    Ok(Buffer::from_host(stream, &rows)?)
                };
                biases.push([rep(&bias[0])?, rep(&bias[1])?, rep(&bias[2])?]);
            }
        }
        let unbiased = if cfg.qkv_bias {
            Some([f32s(b * hid)?, f32s(b * kvw)?, f32s(b * kvw)?])
        } else {
            None
        };
        let layers = &model.layers;
        let casts_o = layers
            .iter()
            .any(|l| !reads_attention_directly(stream, model, l));
        let apart_gate_up = layers
            .iter()
            .any(|l| matches!(l.gate_up, Projections::Apart(_)));
        let (o_len, gate_up_len) = (
            if casts_o { b * hid } else { 0 },
            if apart_gate_up { b * ffn } else { 0 },
        );
        let seq_ids: Vec<u32> = (0..b as u32).collect();
        // Split the cache so that the step's blocks fill the device at the longest context
        // (the launch is fixed once captured).
        let max_len = blocks_per_seq * block_size;
        let sms = stream.device().props().sm_count as usize;
        let splits = splits.unwrap_or_else(|| decode_splits(b, heads(cfg), max_len, sms));
        let workspace_len = paged_decode_workspace(b, decode(cfg, max_len, splits))?;
        Ok(DecodeStep {
            b,
            blocks_per_seq,
            tokens: Buffer::zeros(stream, b)?,
            positions: Buffer::zeros(stream, b)?,
            seq_ids: Buffer::from_host(stream, &seq_ids)?,
            seq_lens: Buffer::zeros(stream, b)?,
            table: Buffer::zeros(stream, b * blocks_per_seq)?,
            logits: f32s(b * cfg.vocab)?,
            x: f32s(b * hid)?,
            normed: f32s(b * hid)?,
            h: f32s(b * hid)?,
            q: f32s(b * hid)?,
            k: f32s(b * kvw)?,
            v: f32s(b * kvw)?,
            unbiased,
            biases,
            qb: bf16s(b * hid)?,
            ob: bf16s(b * hid)?,
            o: f32s(o_len)?,
            attn: f32s(b * hid)?,
            gate: f32s(gate_up_len)?,
            up: f32s(gate_up_len)?,
            act: f32s(b * ffn)?,
            mlp: f32s(b * hid)?,
            splits,
            workspace: f32s(workspace_len)?,
        })
    }

    /// Queues the step's launches on `stream`: no host copies, so it can be captured.
    pub fn record(
        &mut self,
        stream: &Stream,
        model: &ServeModel,
        cache: &mut PagedKvCache,
    ) -> Result<(), Error> {
        let cfg = *model.config();
        let b = self.b;
        let layout = cache.layout(b, self.blocks_per_seq);
        let decode = decode(&cfg, self.blocks_per_seq * cache.block_size, self.splits);
        let spec = rope_spec(&cfg);
        embedding(
            stream,
            &model.embed,
            &self.tokens,
            &mut self.x,
            b,
            cfg.vocab,
            cfg.hidden,
        )?;
        // Whether `normed` holds this layer's attention norm of `x` (the previous layer's last
        // residual add wrote it).
        let mut normed_ready = false;
        let eps = cfg.norm_eps;
        for (l, layer) in model.layers.iter().enumerate() {
            self.qkv(stream, &cfg, l, layer, normed_ready)?;
            let (k_cache, v_cache) = (&mut cache.k[l], &mut cache.v[l]);
            rope_append(
                stream,
                [&self.q, &self.k, &self.v],
                &self.positions,
                &self.seq_ids,
                &self.table,
                &mut self.qb,
                [k_cache, v_cache],
                b,
                heads(&cfg),
                spec,
                layout,
            )?;
            paged_decode(
                stream,
                &self.qb,
                &cache.k[l],
                &cache.v[l],
                &self.table,
                &self.seq_lens,
                layout,
                decode,
                &mut self.workspace,
                &mut self.ob,
            )?;
            if reads_attention_directly(stream, model, layer) {
                gemv_mma(stream, &layer.o, &self.ob, &mut self.attn, b)?;
            } else {
                cast(stream, &self.ob, &mut self.o)?;
                project_rows(stream, &layer.o, &self.o, &mut self.attn, b)?;
            }
            let gamma = &layer.ffn_norm;
            add_then_norm_for(
                stream,
                &layer.gate_up.weights(),
                &self.x,
                &self.attn,
                gamma,
                eps,
                &mut self.h,
                &mut self.normed,
                b,
            )?;
            let (h, normed) = (&self.h, &self.normed);
            match &layer.gate_up {
                Projections::Stacked { w, .. } => {
                    gemv_mma_swiglu(stream, w, normed, &mut self.act, b)?;
                }
                Projections::Apart(ws) => {
                    let (gate, up) = (&mut self.gate, &mut self.up);
                    project_normed_rows(stream, &ws[0], h, normed, gamma, eps, gate, b)?;
                    project_normed_rows(stream, &ws[1], h, normed, gamma, eps, up, b)?;
                    swiglu(stream, &self.gate, &self.up, &mut self.act)?;
                }
            }
            project_rows(stream, &layer.down, &self.act, &mut self.mlp, b)?;
            // The residual add, with the norm the next products read: the next layer's
            // attention norm, or after the last layer the output norm.
            let (next, gamma) = match model.layers.get(l + 1) {
                Some(n) => (n.qkv.weights(), &n.attn_norm),
                None => (vec![&model.output], &model.output_norm),
            };
            normed_ready = add_then_norm_for(
                stream,
                &next,
                &self.h,
                &self.mlp,
                gamma,
                eps,
                &mut self.x,
                &mut self.normed,
                b,
            )?;
        }
        head(
            stream,
            model,
            &self.x,
            &mut self.normed,
            normed_ready,
            &mut self.logits,
            b,
        )
    }

    /// The q, k and v projections of layer `l`, RMSNorm in front (already in `normed` if
    /// `normed_ready`), biases added.
    fn qkv(
        &mut self,
        stream: &Stream,
        cfg: &ModelConfig,
        l: usize,
        layer: &Layer,
        normed_ready: bool,
    ) -> Result<(), Error> {
        let (b, eps) = (self.b, cfg.norm_eps);
        let (x, gamma) = (&self.x, &layer.attn_norm);
        if !normed_ready {
            norm_for(
                stream,
                &layer.qkv.weights(),
                x,
                gamma,
                eps,
                &mut self.normed,
                b,
            )?;
        }
        let normed = &self.normed;
        // With biases the products go to `unbiased` and the sums to q, k and v.
        let [q, k, v] = match &mut self.unbiased {
            None => [&mut self.q, &mut self.k, &mut self.v],
            Some([q, k, v]) => [q, k, v],
        };
        match &layer.qkv {
            Projections::Stacked { w, parts } => {
                gemv_mma_parts(stream, w, parts, normed, &mut [q, k, v], b)?;
            }
            Projections::Apart(ws) => {
                for (w, y) in ws.iter().zip([q, k, v]) {
                    project_normed_rows(stream, w, x, normed, gamma, eps, y, b)?;
                }
            }
        }
        if let Some([q, k, v]) = &self.unbiased {
            let bias = &self.biases[l];
            add(stream, q, &bias[0], &mut self.q)?;
            add(stream, k, &bias[1], &mut self.k)?;
            add(stream, v, &bias[2], &mut self.v)?;
        }
        Ok(())
    }
}
