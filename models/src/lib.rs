//! ckopt-models: the benchmark models of `ckopt-gen`, built with the IR builder API.
//!
//! `generate(kind, &opts)` returns a `Module` with one function `@MODEL`
//! whose arguments are `(%x, %target, params... {ck.param})` and whose single
//! result is the scalar (rank-0) training loss. Models are built only from
//! `ck` primitives, in schedule order, and are deterministic: the same
//! options always give the same module (and so the same printed text).
//!
//! The models (shapes and options are also in `ModelKind::describe`, which is
//! what `ckopt-gen --help` prints):
//! - `mlp`: `depth` blocks `h = relu(h·W + b)`, width→width, MSE loss.
//! - `resmlp`: `depth` pre-LayerNorm residual blocks
//!   `h = h + (relu(LN(h)·W1 + b1)·W2 + b2)`, MSE loss (the anchors' `res`).
//! - `lstm`: `depth` stacked LSTM layers unrolled over `seq` steps, MSE of the
//!   last hidden state.
//! - `resnet`: conv stem + max-pool, `depth` residual blocks of two 3x3
//!   convs, global average pool, linear head, softmax cross-entropy.
//! - `transformer`: `depth` pre-LN encoder layers (multi-head attention with
//!   batched matmul and softmax from primitives, then an MLP), MSE loss.
//! - `gpt`: a decoder-only language model: token and position embeddings
//!   (`gather`), `depth` pre-LN blocks with causal attention (mask from
//!   `iota`/`ge`/`select` with -inf) and a GELU MLP, tied output head,
//!   `cross_entropy` against integer next-token labels. Its arguments are
//!   `(%ids, %labels, params...)`, both i64 `[batch, seq]`.
//!
//! Invariants out: the module verifies (`ckopt_ir::verify_module`); every
//! trainable argument carries `{ck.param}`; `%x` and `%target` do not.
//! Errors (`GenError`, not panics; its `Display` is `ckopt-gen`'s message) for sizes that are zero, above the limits below,
//! overflow u64 bytes, or break a model rule (heads must divide width, ...).
//!
//! Complexity: O(ops) time and memory; ops grow linearly in `depth`
//! (times `seq` for lstm).

mod builder;
mod gpt;
mod lstm;
mod mlp;
mod resnet;
mod transformer;

use ckopt_ir::{Diag, Module, TensorType};
use std::fmt;
use std::str::FromStr;

/// Largest accepted value of any size option.
pub const MAX_DIM: u64 = 1 << 31;
/// Largest number of ops a generated function may have (estimated before building).
pub const MAX_OPS: u64 = 4_000_000;

/// Why `generate` (or `ModelKind::resolve` / `ModelKind::from_str`) refused:
/// the option checks, or a failure while building the model (`Build`). The
/// `Display` texts are the messages `ckopt-gen` prints after `error: `.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GenError {
    /// A model name that is not one of `ModelKind::ALL`.
    #[error("unknown model '{name}' (valid: {})", model_names())]
    UnknownModel { name: String },
    /// A size option that the model does not use.
    #[error("option --{} does not apply to model '{model}' (it takes {})", .option.name(), model_options(*.model))]
    NotApplicable { option: SizeOpt, model: ModelKind },
    /// A size option that is 0 or above `MAX_DIM`.
    #[error("--{} must be between 1 and {MAX_DIM}, got {value}", .option.name())]
    OutOfRange { option: SizeOpt, value: u64 },
    /// transformer: `--heads` does not divide `--width`.
    #[error("--heads {heads} must divide --width {width}")]
    HeadsNotDividingWidth { heads: u64, width: u64 },
    /// resnet: `--image` below 2 (the stem pools 2x2).
    #[error("--image must be at least 2 (the stem pools 2x2), got {image}")]
    ImageTooSmall { image: u64 },
    /// The op estimate exceeds `MAX_OPS` (or overflows u64).
    #[error(
        "model '{model}' with these sizes would have more than {MAX_OPS} ops; reduce --depth{}",
        if *.model == ModelKind::Lstm { " or --seq" } else { "" }
    )]
    TooManyOps { model: ModelKind },
    /// Building the model's function failed (sizes that overflow u64 bytes, ...).
    #[error("cannot build model '{model}': {source}")]
    Build { model: ModelKind, source: BuildError },
}

/// A failure while building a model's function op by op (the `source` of
/// `GenError::Build`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// A product of sizes (`what`) overflows u64.
    #[error("{what} overflows u64 ({a} x {b})")]
    Overflow { what: &'static str, a: u64, b: u64 },
    /// An argument whose byte size overflows u64.
    #[error("argument %{name} of type {ty} has a byte size that overflows u64")]
    ArgTooLarge { name: String, ty: TensorType },
    /// An index attribute value above `i64::MAX`.
    #[error("index {0} does not fit in i64")]
    IndexTooLarge(u64),
    /// `Func::push` refused an op (its diagnostic; the text is its message).
    #[error("{}", .0.message)]
    Ir(Diag),
    /// transformer: `heads` is 0 or does not divide `width`.
    #[error("heads {heads} must divide width {width}")]
    HeadsNotDividingWidth { heads: u64, width: u64 },
    /// lstm with no time steps.
    #[error("lstm needs seq >= 1")]
    EmptySequence,
    /// A builder helper given a value of the wrong rank (`what` says which and
    /// what it expects).
    #[error("{what}, got {ty}")]
    BadRank { what: &'static str, ty: TensorType },
    /// softmax of a rank-0 value.
    #[error("softmax needs rank >= 1")]
    SoftmaxOfScalar,
    /// internal (resnet): the feature map before global pooling is not rank 4.
    #[error("internal: pooled map is not rank 4")]
    PooledMapNotRank4,
    /// internal: the loss is not rank 0.
    #[error("internal: loss has type {0}, not rank 0")]
    LossNotScalar(TensorType),
}

/// The message, for callers that carry errors as strings.
impl From<GenError> for String {
    fn from(e: GenError) -> String {
        e.to_string()
    }
}

fn model_names() -> String {
    let names: Vec<&str> = ModelKind::ALL.iter().map(|k| k.name()).collect();
    names.join(", ")
}

fn model_options(model: ModelKind) -> String {
    let valid: Vec<String> = model.options().iter().map(|(u, _)| format!("--{}", u.name())).collect();
    valid.join(", ")
}

/// The benchmark models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ModelKind {
    Mlp,
    Resmlp,
    Lstm,
    Resnet,
    Transformer,
    Gpt,
}

/// A size option of `ckopt-gen` (`--depth`, `--width`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SizeOpt {
    Depth,
    Width,
    Batch,
    Seq,
    Heads,
    Channels,
    Image,
    Classes,
    Vocab,
}

impl SizeOpt {
    pub const ALL: [SizeOpt; 9] = [
        SizeOpt::Depth,
        SizeOpt::Width,
        SizeOpt::Batch,
        SizeOpt::Seq,
        SizeOpt::Heads,
        SizeOpt::Channels,
        SizeOpt::Image,
        SizeOpt::Classes,
        SizeOpt::Vocab,
    ];
    /// Option name without dashes (`depth`).
    pub fn name(self) -> &'static str {
        match self {
            SizeOpt::Depth => "depth",
            SizeOpt::Width => "width",
            SizeOpt::Batch => "batch",
            SizeOpt::Seq => "seq",
            SizeOpt::Heads => "heads",
            SizeOpt::Channels => "channels",
            SizeOpt::Image => "image",
            SizeOpt::Classes => "classes",
            SizeOpt::Vocab => "vocab",
        }
    }
}

/// Requested sizes; `None` means "the model's default". Setting an option
/// that the model does not use is an error (so typos in scripts show up).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GenOptions {
    pub depth: Option<u64>,
    pub width: Option<u64>,
    pub batch: Option<u64>,
    pub seq: Option<u64>,
    pub heads: Option<u64>,
    pub channels: Option<u64>,
    pub image: Option<u64>,
    pub classes: Option<u64>,
    pub vocab: Option<u64>,
}

impl GenOptions {
    pub fn get(&self, o: SizeOpt) -> Option<u64> {
        match o {
            SizeOpt::Depth => self.depth,
            SizeOpt::Width => self.width,
            SizeOpt::Batch => self.batch,
            SizeOpt::Seq => self.seq,
            SizeOpt::Heads => self.heads,
            SizeOpt::Channels => self.channels,
            SizeOpt::Image => self.image,
            SizeOpt::Classes => self.classes,
            SizeOpt::Vocab => self.vocab,
        }
    }
    pub fn set(&mut self, o: SizeOpt, v: Option<u64>) {
        let slot = match o {
            SizeOpt::Depth => &mut self.depth,
            SizeOpt::Width => &mut self.width,
            SizeOpt::Batch => &mut self.batch,
            SizeOpt::Seq => &mut self.seq,
            SizeOpt::Heads => &mut self.heads,
            SizeOpt::Channels => &mut self.channels,
            SizeOpt::Image => &mut self.image,
            SizeOpt::Classes => &mut self.classes,
            SizeOpt::Vocab => &mut self.vocab,
        };
        *slot = v;
    }
}

/// Resolved sizes: every option the model uses is set (>= 1); the ones it
/// does not use are 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    pub depth: u64,
    pub width: u64,
    pub batch: u64,
    pub seq: u64,
    pub heads: u64,
    pub channels: u64,
    pub image: u64,
    pub classes: u64,
    pub vocab: u64,
}

impl Sizes {
    pub fn get(&self, o: SizeOpt) -> u64 {
        match o {
            SizeOpt::Depth => self.depth,
            SizeOpt::Width => self.width,
            SizeOpt::Batch => self.batch,
            SizeOpt::Seq => self.seq,
            SizeOpt::Heads => self.heads,
            SizeOpt::Channels => self.channels,
            SizeOpt::Image => self.image,
            SizeOpt::Classes => self.classes,
            SizeOpt::Vocab => self.vocab,
        }
    }
}

impl ModelKind {
    pub const ALL: [ModelKind; 6] =
        [ModelKind::Mlp, ModelKind::Resmlp, ModelKind::Lstm, ModelKind::Resnet, ModelKind::Transformer, ModelKind::Gpt];
    /// The models whose every value is f32 (gpt has integer token ids,
    /// labels and masks; every backend takes every kind).
    pub const F32_ONLY: [ModelKind; 5] =
        [ModelKind::Mlp, ModelKind::Resmlp, ModelKind::Lstm, ModelKind::Resnet, ModelKind::Transformer];

    /// The model's name, which is also the generated function's name.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Mlp => "mlp",
            ModelKind::Resmlp => "resmlp",
            ModelKind::Lstm => "lstm",
            ModelKind::Resnet => "resnet",
            ModelKind::Transformer => "transformer",
            ModelKind::Gpt => "gpt",
        }
    }

    pub fn from_name(s: &str) -> Option<ModelKind> {
        ModelKind::ALL.iter().copied().find(|k| k.name() == s)
    }

    /// The size options this model uses with their defaults, in help order.
    pub fn options(self) -> &'static [(SizeOpt, u64)] {
        use SizeOpt::*;
        match self {
            ModelKind::Mlp | ModelKind::Resmlp => &[(Depth, 4), (Width, 64), (Batch, 32)],
            ModelKind::Lstm => &[(Depth, 2), (Seq, 8), (Width, 32), (Batch, 8)],
            ModelKind::Resnet => &[(Depth, 2), (Channels, 8), (Image, 16), (Batch, 4), (Classes, 10)],
            ModelKind::Transformer => &[(Depth, 2), (Seq, 16), (Width, 32), (Heads, 4), (Batch, 2)],
            ModelKind::Gpt => &[(Depth, 2), (Seq, 16), (Width, 32), (Heads, 4), (Vocab, 64), (Batch, 2)],
        }
    }

    /// What the model computes, its argument shapes and options: the text of
    /// `ckopt-gen --help` for this model.
    pub fn describe(self) -> &'static str {
        match self {
            ModelKind::Mlp => {
                "depth blocks h = relu(h·W_i + b_i) (width -> width; b_i broadcast over the batch), \
                 loss = mean((h - target)^2).\n\
                 args: %x [batch, width], %target [batch, width], then per block \
                 %w{i} [width, width], %b{i} [width] {ck.param}.\n\
                 Per block: matmul, broadcast, add, relu (4 values of batch·width·4 bytes)."
            }
            ModelKind::Resmlp => {
                "depth pre-LayerNorm residual blocks h = h + (relu(LN(h)·W1_i + b1_i)·W2_i + b2_i), \
                 LN without affine parameters (eps 1e-5, biased variance), \
                 loss = mean((h - target)^2).\n\
                 args: %x [batch, width], %target [batch, width], then per block \
                 %w{i}a [width, width], %b{i}a [width], %w{i}b [width, width], %b{i}b [width] {ck.param}."
            }
            ModelKind::Lstm => {
                "depth stacked LSTM layers unrolled over seq time steps (gates i, f, g, o from \
                 x_t·Wx + h·Wh + b sliced in that order; sigmoid/tanh), h and c start at zero; \
                 layer l > 0 reads the hidden states of layer l-1; loss = mean((h_last - target)^2) \
                 on the top layer's last hidden state.\n\
                 args: %x [seq, batch, width], %target [batch, width], then per layer \
                 %wx{l} [width, 4·width], %wh{l} [width, 4·width], %b{l} [4·width] {ck.param}."
            }
            ModelKind::Resnet => {
                "stem: relu(conv3x3(x)) 3 -> channels, then max_pool 2x2 stride 2; depth residual \
                 blocks h = relu(h + conv3x3(relu(conv3x3(h)))) (padding 1, no bias, no batch norm); \
                 global avg_pool, reshape, linear head to classes logits; loss = softmax \
                 cross-entropy against %target (one-hot), averaged over the batch.\n\
                 args: %x [batch, 3, image, image] (NCHW), %target [batch, classes], then \
                 %w_stem [channels, 3, 3, 3], per block %w{i}a, %w{i}b [channels, channels, 3, 3], \
                 then %w_fc [channels, classes], %b_fc [classes] {ck.param}. image >= 2."
            }
            ModelKind::Transformer => {
                "depth pre-LN encoder layers (no mask, no dropout): h = h + Attn(LN(h))·Wo, \
                 h = h + relu(LN(h)·W1 + b1)·W2 + b2 with an MLP of 4·width; attention per \
                 head d = width/heads: softmax(Q·K^T / sqrt(d))·V with batched matmul on \
                 [batch·heads, seq, d] and softmax from primitives; loss = mean((h - target)^2).\n\
                 args: %x [batch, seq, width], %target [batch, seq, width], then per layer \
                 %wq{l}, %wk{l}, %wv{l}, %wo{l} [width, width], %w1_{l} [width, 4·width], \
                 %b1_{l} [4·width], %w2_{l} [4·width, width], %b2_{l} [width] {ck.param}. heads must divide width."
            }
            ModelKind::Gpt => {
                "decoder-only language model (GPT-2 layout, no dropout): h = gather(wte, ids) + \
                 gather(wpe, positions); depth pre-LN blocks with causal self-attention (mask \
                 select(ge(iota row, iota col), scores, -inf), softmax from primitives) and a GELU \
                 MLP (erf form, 4·width); logits = LN(h)·wte^T (tied head); loss = cross_entropy \
                 of the logits against the integer next-token labels (mean over batch·seq).\n\
                 args: %ids [batch, seq] i64 (token ids in [0, vocab)), %labels [batch, seq] i64 \
                 (next tokens; -100 is ignored), %wte [vocab, width], %wpe [seq, width], then per \
                 layer %wq{l}, %wk{l}, %wv{l}, %wo{l} [width, width], %w1_{l} [width, 4·width], \
                 %b1_{l} [4·width], %w2_{l} [4·width, width], %b2_{l} [width] {ck.param}. heads must divide width."
            }
        }
    }

    /// Upper bound on the ops of the generated function (to refuse absurd sizes early).
    fn op_estimate(self, s: &Sizes) -> Option<u64> {
        let per_block: u64 = match self {
            ModelKind::Mlp => 4,
            ModelKind::Resmlp => 24,
            ModelKind::Lstm => s.seq.checked_mul(24)?.checked_add(4)?,
            ModelKind::Resnet => 6,
            ModelKind::Transformer => 72,
            ModelKind::Gpt => 80,
        };
        s.depth.checked_mul(per_block)?.checked_add(32)
    }

    /// Fills in defaults and checks the options (range, applicability).
    pub fn resolve(self, opts: &GenOptions) -> Result<Sizes, GenError> {
        let mut s = Sizes::default();
        let used = self.options();
        for o in SizeOpt::ALL {
            let default = used.iter().find(|(u, _)| *u == o).map(|(_, d)| *d);
            let v = match (opts.get(o), default) {
                (Some(_), None) => return Err(GenError::NotApplicable { option: o, model: self }),
                (None, None) => continue,
                (Some(v), Some(_)) | (None, Some(v)) => v,
            };
            if v == 0 || v > MAX_DIM {
                return Err(GenError::OutOfRange { option: o, value: v });
            }
            match o {
                SizeOpt::Depth => s.depth = v,
                SizeOpt::Width => s.width = v,
                SizeOpt::Batch => s.batch = v,
                SizeOpt::Seq => s.seq = v,
                SizeOpt::Heads => s.heads = v,
                SizeOpt::Channels => s.channels = v,
                SizeOpt::Image => s.image = v,
                SizeOpt::Classes => s.classes = v,
                SizeOpt::Vocab => s.vocab = v,
            }
        }
        match self.op_estimate(&s) {
            Some(n) if n <= MAX_OPS => {}
            _ => return Err(GenError::TooManyOps { model: self }),
        }
        if matches!(self, ModelKind::Transformer | ModelKind::Gpt) && s.width % s.heads != 0 {
            return Err(GenError::HeadsNotDividingWidth { heads: s.heads, width: s.width });
        }
        if self == ModelKind::Resnet && s.image < 2 {
            return Err(GenError::ImageTooSmall { image: s.image });
        }
        Ok(s)
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ModelKind {
    type Err = GenError;
    fn from_str(s: &str) -> Result<Self, GenError> {
        ModelKind::from_name(s).ok_or_else(|| GenError::UnknownModel { name: s.to_string() })
    }
}

/// Builds the model: a module with one function `@MODEL(%x, %target, params...)`
/// (gpt: `@gpt(%ids, %labels, params...)`)
/// returning the scalar loss. Errors are for the user (their `Display` is the message).
pub fn generate(kind: ModelKind, opts: &GenOptions) -> Result<Module, GenError> {
    let s = kind.resolve(opts)?;
    let func = match kind {
        ModelKind::Mlp => mlp::mlp(&s),
        ModelKind::Resmlp => mlp::resmlp(&s),
        ModelKind::Lstm => lstm::lstm(&s),
        ModelKind::Resnet => resnet::resnet(&s),
        ModelKind::Transformer => transformer::transformer(&s),
        ModelKind::Gpt => gpt::gpt(&s),
    }
    .map_err(|source| GenError::Build { model: kind, source })?;
    Ok(Module { funcs: vec![func] })
}

/// `--help` text for all models: description, options and defaults.
pub fn help_text() -> String {
    let mut out = String::from("MODELS (the function is @MODEL, returning the scalar loss):\n");
    for k in ModelKind::ALL {
        let opts: Vec<String> = k.options().iter().map(|(o, d)| format!("--{} (default {d})", o.name())).collect();
        out.push_str(&format!("\n  {}\n", k.name()));
        for line in k.describe().lines() {
            out.push_str(&format!("    {}\n", line.trim()));
        }
        out.push_str(&format!("    options: {}\n", opts.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests;
