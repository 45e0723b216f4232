//! The `ck` op table: names, arities, attributes and type rules.
//!
//! One table drives the parser (names), the verifier (arity, attributes,
//! shapes), builders in passes (result type inference) and the docs.
//! `infer_type` is the single source of truth for shape rules: the verifier
//! calls it with the declared result type, builders call it without.

use crate::attr::{Attr, Attrs};
use crate::diag::Diag;
use crate::types::{DType, TensorType};

macro_rules! op_table {
    ($( $variant:ident => $name:literal, $arity:expr, $summary:literal; )*) => {
        /// Every op of the `ck` dialect.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum OpKind { $($variant),* }

        impl OpKind {
            /// All ops, in table order.
            pub const ALL: &'static [OpKind] = &[$(OpKind::$variant),*];
            /// Name without the dialect prefix (`matmul`).
            pub fn name(self) -> &'static str {
                match self { $(OpKind::$variant => $name),* }
            }
            /// Operand count rule.
            pub fn arity(self) -> Arity {
                match self { $(OpKind::$variant => $arity),* }
            }
            /// One-line meaning, for docs and `--help`.
            pub fn summary(self) -> &'static str {
                match self { $(OpKind::$variant => $summary),* }
            }
        }
    };
}

/// How many operands an op takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    Exactly(usize),
    /// Between the two counts, both included.
    Between(usize, usize),
    AtLeast(usize),
    Any,
}

impl Arity {
    pub fn accepts(self, n: usize) -> bool {
        match self {
            Arity::Exactly(k) => n == k,
            Arity::Between(lo, hi) => (lo..=hi).contains(&n),
            Arity::AtLeast(k) => n >= k,
            Arity::Any => true,
        }
    }
    pub fn describe(self) -> String {
        match self {
            Arity::Exactly(1) => "1 operand".into(),
            Arity::Exactly(k) => format!("{k} operands"),
            Arity::Between(lo, hi) => format!("{lo} to {hi} operands"),
            Arity::AtLeast(k) => format!("at least {k} operand{}", if k == 1 { "" } else { "s" }),
            Arity::Any => "any number of operands".into(),
        }
    }
}

use Arity::*;

op_table! {
    Neg => "neg", Exactly(1), "y = -x";
    Exp => "exp", Exactly(1), "y = e^x";
    Log => "log", Exactly(1), "y = ln x";
    Tanh => "tanh", Exactly(1), "y = tanh x";
    Sigmoid => "sigmoid", Exactly(1), "y = 1 / (1 + e^-x)";
    Relu => "relu", Exactly(1), "y = max(x, 0)";
    Sqrt => "sqrt", Exactly(1), "y = sqrt x";
    Rsqrt => "rsqrt", Exactly(1), "y = 1 / sqrt x";
    Erf => "erf", Exactly(1), "y = erf x = 2/sqrt(pi) * integral_0^x e^(-t^2) dt";
    Add => "add", Exactly(2), "y = a + b";
    Sub => "sub", Exactly(2), "y = a - b";
    Mul => "mul", Exactly(2), "y = a * b";
    Div => "div", Exactly(2), "y = a / b";
    Max => "max", Exactly(2), "y = max(a, b)";
    Scale => "scale", Exactly(1), "y = value * x";
    Fill => "fill", Exactly(0), "y = value everywhere";
    Constant => "constant", Exactly(0), "y = the dense elements of value (row-major f32; shape from its type)";
    ReluGrad => "relu_grad", Exactly(2), "dx = dy where x > 0, else 0 (operands x, dy)";
    Broadcast => "broadcast", Exactly(1), "input dim i becomes result dim dims[i]; other dims repeat";
    ReduceSum => "reduce_sum", Exactly(1), "sum over dims (removed from the shape)";
    ReduceMax => "reduce_max", Exactly(1), "max over dims (removed from the shape)";
    Transpose => "transpose", Exactly(1), "result dim i is input dim perm[i]";
    Reshape => "reshape", Exactly(1), "same elements, new shape, row-major";
    Slice => "slice", Exactly(1), "static window at offsets, sizes from the result type";
    Concat => "concat", AtLeast(1), "concatenation along dim";
    Matmul => "matmul", Exactly(2), "[..., M, K] x [..., K, N] (transpose_a/transpose_b swap the last two dims)";
    Conv2d => "conv2d", Exactly(2), "NCHW input, FCHW filter, cross-correlation with stride and symmetric zero padding";
    Conv2dGradInput => "conv2d_grad_input", Exactly(2), "gradient of conv2d w.r.t. its input (operands dy, w)";
    Conv2dGradFilter => "conv2d_grad_filter", Exactly(2), "gradient of conv2d w.r.t. its filter (operands x, dy)";
    MaxPool2d => "max_pool2d", Exactly(1), "NCHW max pooling over window with stride";
    AvgPool2d => "avg_pool2d", Exactly(1), "NCHW average pooling over window with stride";
    MaxPool2dGrad => "max_pool2d_grad", Exactly(2), "gradient of max_pool2d (operands x, dy; the first maximal element of a window takes its gradient)";
    AvgPool2dGrad => "avg_pool2d_grad", Exactly(1), "gradient of avg_pool2d (operand dy; input shape from the result type)";
    Dropout => "dropout", Between(1, 2), "y = x * mask / (1 - rate), mask a pure function of (seed, the optional rank-0 step key operand, flat index)";
    Gather => "gather", Exactly(2), "y = x indexed along axis by the integer idx (operands x, idx; embedding lookup with axis 0)";
    GatherGrad => "gather_grad", Exactly(2), "gradient of gather (operands idx, dy): zeros, then dy's slices added at idx in flat order of idx";
    TakeAlong => "take_along", Exactly(2), "y[i] = x[i with i[axis] replaced by idx[i]] (operands x, idx of x's rank)";
    TakeAlongGrad => "take_along_grad", Exactly(2), "gradient of take_along (operands idx, dy): zeros, then dy[i] added at idx in flat order";
    Eq => "eq", Exactly(2), "c = a == b (i1)";
    Ne => "ne", Exactly(2), "c = a != b (i1)";
    Lt => "lt", Exactly(2), "c = a < b (i1)";
    Le => "le", Exactly(2), "c = a <= b (i1)";
    Gt => "gt", Exactly(2), "c = a > b (i1)";
    Ge => "ge", Exactly(2), "c = a >= b (i1)";
    And => "and", Exactly(2), "c = a and b (i1)";
    Or => "or", Exactly(2), "c = a or b (i1)";
    Not => "not", Exactly(1), "c = not a (i1)";
    Select => "select", Exactly(3), "y = c ? a : b (operands c of i1, a, b)";
    Cast => "cast", Exactly(1), "y = x converted to the result's element type";
    Iota => "iota", Exactly(0), "y = the index along dim";
    CrossEntropy => "cross_entropy", Exactly(2), "mean over labels != ignore_index of -log_softmax(logits)[n, label] (operands logits [N, C], labels [N])";
    CrossEntropyGrad => "cross_entropy_grad", Exactly(3), "gradient of cross_entropy (operands logits, labels, dy): (softmax - onehot) * dy / count";
    Return => "return", Any, "ends a function, returning its operands";
}

/// The kind of value an attribute must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    F32,
    I64,
    Bool,
    Ints,
    Unit,
    Dense,
}

impl AttrKind {
    pub fn name(self) -> &'static str {
        match self {
            AttrKind::F32 => "f32 float",
            AttrKind::I64 => "i64 integer",
            AttrKind::Bool => "bool",
            AttrKind::Ints => "array of integers",
            AttrKind::Unit => "unit",
            AttrKind::Dense => "dense f32 elements",
        }
    }
    pub fn matches(self, a: &Attr) -> bool {
        matches!(
            (self, a),
            (AttrKind::F32, Attr::F32(_))
                | (AttrKind::I64, Attr::Int(_))
                | (AttrKind::Bool, Attr::Bool(_))
                | (AttrKind::Ints, Attr::IntArray(_))
                | (AttrKind::Unit, Attr::Unit)
                | (AttrKind::Dense, Attr::Dense { .. })
        )
    }
}

/// One attribute an op understands.
#[derive(Clone, Copy, Debug)]
pub struct AttrSpec {
    pub name: &'static str,
    pub kind: AttrKind,
    pub required: bool,
}

const fn req(name: &'static str, kind: AttrKind) -> AttrSpec {
    AttrSpec { name, kind, required: true }
}
const fn opt(name: &'static str, kind: AttrKind) -> AttrSpec {
    AttrSpec { name, kind, required: false }
}

/// Attributes set by passes or users on any op, understood everywhere.
pub const DISCARDABLE_ATTRS: &[AttrSpec] = &[
    opt("ck.mirror", AttrKind::Unit),
    opt("ck.checkpoint", AttrKind::Unit),
    opt("ck.recompute", AttrKind::Unit),
    opt("ck.inplace", AttrKind::I64),
    opt("ck.offset", AttrKind::I64),
    opt("ck.fusion", AttrKind::I64),
    opt("ck.stop_gradient", AttrKind::Unit),
];

pub const ATTR_MIRROR: &str = "ck.mirror";
pub const ATTR_CHECKPOINT: &str = "ck.checkpoint";
pub const ATTR_RECOMPUTE: &str = "ck.recompute";
pub const ATTR_INPLACE: &str = "ck.inplace";
pub const ATTR_OFFSET: &str = "ck.offset";
pub const ATTR_ARENA_BYTES: &str = "ck.arena_bytes";
/// Op attribute (unit): `autodiff` treats the result as a constant (no
/// gradient flows through it), as JAX's `stop_gradient` / torch's `detach`.
pub const ATTR_STOP_GRADIENT: &str = "ck.stop_gradient";
pub const ATTR_PARAM: &str = "ck.param";
/// Op attribute set by the `fuse` pass: ops with equal values form one fusion
/// group (contiguous in the schedule, one kernel; see `fusion`).
pub const ATTR_FUSION: &str = "ck.fusion";
/// Argument attribute (unit): the function may overwrite this argument's
/// buffer (in-place ops may write into it), like JAX's donated buffers.
pub const ATTR_DONATE: &str = "ck.donate";
/// Argument attribute (unit): the rank-0 step key that dropout masks hash in
/// (a training step passes a new one each step).
pub const ATTR_STEP: &str = "ck.step";
/// Argument attribute (unit): optimizer state (SGD momentum) of a step function.
pub const ATTR_OPT_STATE: &str = "ck.opt_state";
/// Every argument attribute ckopt knows (all unit attributes).
pub const ARG_ATTRS: &[&str] = &[ATTR_PARAM, ATTR_DONATE, ATTR_STEP, ATTR_OPT_STATE];
/// Argument attribute (string): a hyperparameter input of a step function
/// (`"lr"`, `"momentum"`, `"beta1"`, ...): a rank-0 f32 argument that the
/// trainer sets before every step (`sgd`, `adamw`; `ckopt_passes::train::Hyper`).
pub const ATTR_HYPER: &str = "ck.hyper";
/// Argument attribute (f32): the value a trainer gives a `ck.hyper`
/// argument when its user sets none (the pass option it was built with).
pub const ATTR_HYPER_DEFAULT: &str = "ck.hyper_default";
/// Argument attribute: the argument's external name (a string), by which
/// weights files (safetensors) map to it; importers keep the source
/// framework's parameter names here.
pub const ATTR_NAME: &str = "ck.name";

impl OpKind {
    /// Looks an op up by its name without the `ck.` prefix.
    pub fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.iter().copied().find(|k| k.name() == name)
    }
    /// `ck.NAME`.
    pub fn full_name(self) -> String {
        format!("ck.{}", self.name())
    }
    pub fn has_result(self) -> bool {
        self != OpKind::Return
    }
    pub fn is_unary_elementwise(self) -> bool {
        use OpKind::*;
        matches!(self, Neg | Exp | Log | Tanh | Sigmoid | Relu | Sqrt | Rsqrt | Erf | Scale | Dropout)
    }
    pub fn is_binary_elementwise(self) -> bool {
        use OpKind::*;
        matches!(self, Add | Sub | Mul | Div | Max | ReluGrad)
    }
    /// The elementwise ops of the mixed class: comparisons, logic, select
    /// and cast (their operands and results may differ in element type and
    /// size; each has its own type rule in `crate::mixed`).
    pub fn is_mixed_elementwise(self) -> bool {
        use OpKind::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | And | Or | Not | Select | Cast)
    }
    /// Elementwise ops: result element i depends only on operand element i.
    pub fn is_elementwise(self) -> bool {
        self.is_unary_elementwise() || self.is_binary_elementwise() || self.is_mixed_elementwise()
    }
    /// The expensive ops that remat keeps unless the budget forces otherwise.
    pub fn is_compute_heavy(self) -> bool {
        use OpKind::*;
        matches!(self, Matmul | Conv2d | Conv2dGradInput | Conv2dGradFilter)
    }
    /// Whether the result type must be written out (cannot be inferred from operands).
    pub fn needs_declared_type(self) -> bool {
        use OpKind::*;
        matches!(
            self,
            Fill | Broadcast | Reshape | Slice | Conv2dGradInput | Conv2dGradFilter | AvgPool2dGrad | GatherGrad | TakeAlongGrad | Cast | Iota
        )
    }
    /// The op's own attributes.
    pub fn attr_specs(self) -> &'static [AttrSpec] {
        use AttrKind::*;
        use OpKind::*;
        const VALUE: &[AttrSpec] = &[req("value", F32)];
        const DIMS: &[AttrSpec] = &[req("dims", Ints)];
        const PERM: &[AttrSpec] = &[req("perm", Ints)];
        const OFFSETS: &[AttrSpec] = &[req("offsets", Ints)];
        const DIM: &[AttrSpec] = &[req("dim", I64)];
        const MATMUL: &[AttrSpec] = &[opt("transpose_a", Bool), opt("transpose_b", Bool)];
        const CONV: &[AttrSpec] = &[opt("stride", Ints), opt("padding", Ints), opt("groups", I64)];
        const POOL: &[AttrSpec] = &[req("window", Ints), opt("stride", Ints)];
        const DROPOUT: &[AttrSpec] = &[req("rate", F32), req("seed", I64)];
        const DENSE: &[AttrSpec] = &[req("value", Dense)];
        const AXIS: &[AttrSpec] = &[req("axis", I64)];
        const IOTA: &[AttrSpec] = &[req("dim", I64)];
        const XENT: &[AttrSpec] = &[opt("ignore_index", I64)];
        match self {
            Scale | Fill => VALUE,
            Constant => DENSE,
            Broadcast | ReduceSum | ReduceMax => DIMS,
            Transpose => PERM,
            Slice => OFFSETS,
            Concat => DIM,
            Matmul => MATMUL,
            Conv2d | Conv2dGradInput | Conv2dGradFilter => CONV,
            MaxPool2d | AvgPool2d | MaxPool2dGrad | AvgPool2dGrad => POOL,
            Dropout => DROPOUT,
            Gather | GatherGrad | TakeAlong | TakeAlongGrad => AXIS,
            Iota => IOTA,
            CrossEntropy | CrossEntropyGrad => XENT,
            _ => &[],
        }
    }
}

/// Reads an optional bool attribute (default false).
pub fn attr_bool(attrs: &Attrs, name: &str) -> bool {
    attrs.get(name).and_then(Attr::as_bool).unwrap_or(false)
}

/// Reads an int-array attribute or a default.
pub fn attr_ints(attrs: &Attrs, name: &str, default: &[i64]) -> Vec<i64> {
    attrs.get(name).and_then(Attr::as_ints).map(|v| v.to_vec()).unwrap_or_else(|| default.to_vec())
}

/// Conv/pool geometry read from attributes, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window2d {
    pub kh: u64,
    pub kw: u64,
    pub sh: u64,
    pub sw: u64,
    pub ph: u64,
    pub pw: u64,
}

/// A bad window attribute of a conv or pool op (`stride`, `padding`, `window`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WindowAttrError {
    #[error("attribute '{name}' must have 2 elements, got {len}")]
    Length { name: String, len: usize },
    #[error("attribute '{name}' elements must be >= {min}, got {values:?}")]
    TooSmall { name: String, min: i64, values: Vec<i64> },
    #[error("attribute 'groups' must be >= 1, got {0}")]
    Groups(i64),
}

impl From<WindowAttrError> for Diag {
    fn from(e: WindowAttrError) -> Diag {
        Diag::unlocated(e.to_string())
    }
}

fn pair(attrs: &Attrs, name: &str, default: [i64; 2], min: i64) -> Result<[u64; 2], WindowAttrError> {
    let v = attr_ints(attrs, name, &default);
    if v.len() != 2 {
        return Err(WindowAttrError::Length { name: name.to_string(), len: v.len() });
    }
    if v.iter().any(|&x| x < min) {
        return Err(WindowAttrError::TooSmall { name: name.to_string(), min, values: v });
    }
    Ok([v[0] as u64, v[1] as u64])
}

/// Stride and padding of a conv op (defaults [1, 1] and [0, 0]).
pub fn conv_params(attrs: &Attrs) -> Result<([u64; 2], [u64; 2]), WindowAttrError> {
    Ok((pair(attrs, "stride", [1, 1], 1)?, pair(attrs, "padding", [0, 0], 0)?))
}

/// The `groups` of a conv op (default 1, must be >= 1): the input
/// channels C and the filters F split into `groups` equal groups, filter
/// group g reading only input channel group g (filter `[F, C/groups, KH, KW]`).
pub fn conv_groups(attrs: &Attrs) -> Result<u64, WindowAttrError> {
    match attrs.get("groups").and_then(Attr::as_int) {
        None => Ok(1),
        Some(g) if g >= 1 => Ok(g as u64),
        Some(g) => Err(WindowAttrError::Groups(g)),
    }
}

/// Window and stride of a pool op (stride defaults to the window).
pub fn pool_params(attrs: &Attrs) -> Result<([u64; 2], [u64; 2]), WindowAttrError> {
    let w = pair(attrs, "window", [1, 1], 1)?;
    let s = pair(attrs, "stride", [w[0] as i64, w[1] as i64], 1)?;
    Ok((w, s))
}

/// Output extent of a sliding window; `None` if the window does not fit.
pub fn window_out(input: u64, k: u64, stride: u64, pad: u64) -> Option<u64> {
    let padded = input.checked_add(pad.checked_mul(2)?)?;
    if padded < k || stride == 0 {
        return None;
    }
    Some((padded - k) / stride + 1)
}

fn shape_of_conv(x: &TensorType, w: &TensorType, attrs: &Attrs) -> Result<Vec<u64>, Diag> {
    if x.rank() != 4 || w.rank() != 4 {
        return Err(Diag::unlocated(format!("conv2d needs rank-4 input (NCHW) and filter (FCHW), got {x} and {w}")));
    }
    let g = conv_groups(attrs)?;
    if g == 1 && x.shape[1] != w.shape[1] {
        return Err(Diag::unlocated(format!(
            "conv2d input channels {} do not match filter channels {}",
            x.shape[1], w.shape[1]
        )));
    }
    if g > 1 {
        if x.shape[1] % g != 0 || w.shape[0] % g != 0 {
            return Err(Diag::unlocated(format!(
                "conv2d with groups = {g} needs input channels ({}) and filters ({}) divisible by {g}",
                x.shape[1], w.shape[0]
            )));
        }
        if x.shape[1] / g != w.shape[1] {
            return Err(Diag::unlocated(format!(
                "conv2d with groups = {g}: filter channels {} must be input channels / groups = {} / {g} = {}",
                w.shape[1],
                x.shape[1],
                x.shape[1] / g
            )));
        }
    }
    let (s, p) = conv_params(attrs)?;
    let oh = window_out(x.shape[2], w.shape[2], s[0], p[0]);
    let ow = window_out(x.shape[3], w.shape[3], s[1], p[1]);
    match (oh, ow) {
        (Some(oh), Some(ow)) => Ok(vec![x.shape[0], w.shape[0], oh, ow]),
        _ => Err(Diag::unlocated(format!("conv2d filter {w} does not fit input {x} with padding {p:?}"))),
    }
}

fn shape_of_pool(x: &TensorType, attrs: &Attrs) -> Result<Vec<u64>, Diag> {
    if x.rank() != 4 {
        return Err(Diag::unlocated(format!("pooling needs a rank-4 NCHW input, got {x}")));
    }
    let (w, s) = pool_params(attrs)?;
    match (window_out(x.shape[2], w[0], s[0], 0), window_out(x.shape[3], w[1], s[1], 0)) {
        (Some(oh), Some(ow)) => Ok(vec![x.shape[0], x.shape[1], oh, ow]),
        _ => Err(Diag::unlocated(format!("pool window {w:?} does not fit input {x}"))),
    }
}

/// Checks that `dims` are strictly increasing and below `rank`.
fn check_dims(name: &str, dims: &[i64], rank: usize) -> Result<Vec<usize>, Diag> {
    let mut out = Vec::with_capacity(dims.len());
    for (i, &d) in dims.iter().enumerate() {
        if d < 0 || d as u64 >= rank as u64 {
            return Err(Diag::unlocated(format!("'{name}' entry {d} is out of range for rank {rank}")));
        }
        if i > 0 && d <= dims[i - 1] {
            return Err(Diag::unlocated(format!("'{name}' must be strictly increasing, got {dims:?}")));
        }
        out.push(d as usize);
    }
    Ok(out)
}

fn required_ints<'a>(attrs: &'a Attrs, name: &str) -> Result<&'a [i64], Diag> {
    attrs
        .get(name)
        .and_then(Attr::as_ints)
        .ok_or_else(|| Diag::unlocated(format!("requires attribute '{name}' (array of integers)")))
}

/// Checks attribute presence and kinds against the op table. Unknown
/// attributes without a dialect prefix are errors; dotted names other than
/// the `ck.*` pass attributes are allowed, as MLIR's discardable attributes.
pub fn check_attrs(kind: OpKind, attrs: &Attrs, num_operands: usize) -> Result<(), Diag> {
    let specs = kind.attr_specs();
    for s in specs {
        match attrs.get(s.name) {
            None if s.required => {
                return Err(Diag::unlocated(format!("requires attribute '{}' ({})", s.name, s.kind.name())));
            }
            Some(a) if !s.kind.matches(a) => {
                return Err(Diag::unlocated(format!(
                    "attribute '{}' must be {}, got {}",
                    s.name,
                    s.kind.name(),
                    a.kind_name()
                )));
            }
            _ => {}
        }
    }
    for (k, a) in attrs {
        if specs.iter().any(|s| s.name == k) {
            continue;
        }
        if let Some(s) = DISCARDABLE_ATTRS.iter().find(|s| s.name == k) {
            if !s.kind.matches(a) {
                return Err(Diag::unlocated(format!("attribute '{k}' must be {}, got {}", s.kind.name(), a.kind_name())));
            }
            if k == ATTR_INPLACE {
                let n = a.as_int().unwrap_or(-1);
                if n < 0 || n as u64 >= num_operands as u64 {
                    return Err(Diag::unlocated(format!("'{k}' = {n} is not an operand index (op has {num_operands})")));
                }
            }
            if k == ATTR_OFFSET && a.as_int().unwrap_or(-1) < 0 {
                return Err(Diag::unlocated(format!("'{k}' must be a non-negative byte offset")));
            }
            continue;
        }
        if !k.contains('.') {
            let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
            return Err(if known.is_empty() {
                Diag::unlocated(format!("unknown attribute '{k}' (ck.{} takes none)", kind.name()))
            } else {
                Diag::unlocated(format!("unknown attribute '{k}' (ck.{} takes: {})", kind.name(), known.join(", ")))
            });
        }
    }
    if kind == OpKind::Dropout {
        let r = attrs.get("rate").and_then(Attr::as_f32).unwrap_or(0.0);
        if !(0.0..1.0).contains(&r) {
            return Err(Diag::unlocated(format!("dropout 'rate' must be in [0, 1), got {r}")));
        }
    }
    Ok(())
}

/// The type rule of every op.
///
/// `declared` is the result type written in the IR (verifier) or `None`
/// (builders). For ops whose result cannot be inferred
/// (`needs_declared_type`), `declared` is required and checked for
/// consistency. Returns the result type (`None` for `return`).
/// Errors are unlocated diagnostics (`Diag::unlocated`); the caller reports
/// their message at the op's location.
///
/// The phases: arity, attributes, element types, the rule of the op's family
/// ([`infer_result`]), then the checks on the inferred type.
pub fn infer_type(
    kind: OpKind,
    attrs: &Attrs,
    operands: &[&TensorType],
    declared: Option<&TensorType>,
) -> Result<Option<TensorType>, Diag> {
    if !kind.arity().accepts(operands.len()) {
        return Err(Diag::unlocated(format!("expects {}, got {}", kind.arity().describe(), operands.len())));
    }
    check_attrs(kind, attrs, operands.len())?;
    if kind == OpKind::Return {
        return Ok(None);
    }
    if kind.elem_class() != ElemClass::Mixed {
        check_element_types(kind, operands, declared)?;
    }
    let inferred = infer_result(kind, attrs, operands, declared)?;
    check_inferred(inferred, declared).map(Some)
}

/// Which element types an op accepts (docs/ir.md, "Element types").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElemClass {
    /// f32, bf16, f16: math, contractions, reductions, pooling, dropout.
    Float,
    /// Floats and the integer types i64/i32 (not i1): neg, add, sub, mul, max.
    Numeric,
    /// Every element type: data movement and fill.
    Any,
    /// Each operand has its own rule (index operands i64/i32, masks i1, a
    /// result of another type than the operands): gather, take_along and
    /// their gradients, comparisons, logic, select, cast, iota,
    /// cross_entropy and its gradient (`crate::mixed`).
    Mixed,
}

impl ElemClass {
    pub fn accepts(self, d: DType) -> bool {
        match self {
            ElemClass::Float => d.is_float(),
            ElemClass::Numeric => d.is_float() || d.is_integer(),
            ElemClass::Any => true,
            // Not one type for the whole op: see `crate::mixed`.
            ElemClass::Mixed => false,
        }
    }
    pub fn describe(self) -> &'static str {
        match self {
            ElemClass::Float => "a float element type (f32, bf16, f16)",
            ElemClass::Numeric => "a float or integer element type (not i1)",
            ElemClass::Any => "any element type",
            ElemClass::Mixed => "the element types of its operand roles",
        }
    }
}

impl OpKind {
    /// The element types the op computes in. Every op computes in ONE element
    /// type: its operands and its result share it (`check_element_types`).
    pub fn elem_class(self) -> ElemClass {
        use OpKind::*;
        match self {
            Neg | Add | Sub | Mul | Max => ElemClass::Numeric,
            Broadcast | Transpose | Reshape | Slice | Concat | Fill | Return => ElemClass::Any,
            Exp | Log | Tanh | Sigmoid | Relu | Sqrt | Rsqrt | Erf | Div | Scale | Constant | ReluGrad | ReduceSum
            | ReduceMax | Matmul | Conv2d | Conv2dGradInput | Conv2dGradFilter | MaxPool2d | AvgPool2d
            | MaxPool2dGrad | AvgPool2dGrad | Dropout => ElemClass::Float,
            Gather | GatherGrad | TakeAlong | TakeAlongGrad | Eq | Ne | Lt | Le | Gt | Ge | And | Or | Not | Select
            | Cast | Iota | CrossEntropy | CrossEntropyGrad => ElemClass::Mixed,
        }
    }
}

/// The element-type rule: the operands and the declared result share one
/// element type, which the op's class accepts (`OpKind::elem_class`).
fn check_element_types(kind: OpKind, operands: &[&TensorType], declared: Option<&TensorType>) -> Result<(), Diag> {
    let Some(dt) = operands.first().map(|o| o.dtype).or(declared.map(|d| d.dtype)) else { return Ok(()) };
    if let Some(first) = operands.first() {
        for o in &operands[1..] {
            if o.dtype != first.dtype {
                return Err(Diag::unlocated(format!("operand element types differ: {} and {}", first, o)));
            }
        }
        if let Some(d) = declared
            && d.dtype != first.dtype
        {
            return Err(Diag::unlocated(format!("result element type {} differs from operand type {}", d.dtype.name(), first)));
        }
    }
    let class = kind.elem_class();
    if !class.accepts(dt) {
        return Err(Diag::unlocated(format!("computes in {}, got {}", class.describe(), dt.name())));
    }
    Ok(())
}

/// The inferred type must have a size that fits, and match the declared one.
fn check_inferred(inferred: TensorType, declared: Option<&TensorType>) -> Result<TensorType, Diag> {
    if inferred.byte_size().is_none() {
        return Err(Diag::unlocated(format!("result type {inferred} has a size that overflows")));
    }
    if let Some(d) = declared
        && *d != inferred
    {
        return Err(Diag::unlocated(format!("result type {d} does not match the inferred type {inferred}")));
    }
    Ok(inferred)
}

/// Dispatches to the type rule of the op's family.
fn infer_result(
    kind: OpKind,
    attrs: &Attrs,
    operands: &[&TensorType],
    declared: Option<&TensorType>,
) -> Result<TensorType, Diag> {
    use OpKind::*;
    match kind {
        Dropout if operands.len() == 2 => infer_keyed_dropout(operands),
        _ if kind.is_unary_elementwise() || kind.is_binary_elementwise() => infer_elementwise(kind, operands),
        ReduceSum | ReduceMax => infer_reduction(attrs, operands),
        Broadcast | Transpose | Reshape | Slice | Concat => infer_data_movement(kind, attrs, operands, declared),
        Matmul | Conv2d | Conv2dGradInput | Conv2dGradFilter => infer_contraction(kind, attrs, operands, declared),
        MaxPool2d | AvgPool2d | MaxPool2dGrad | AvgPool2dGrad => infer_pool(kind, attrs, operands, declared),
        Fill | Constant => infer_source(kind, attrs, declared),
        _ if kind.elem_class() == ElemClass::Mixed => crate::mixed::infer_mixed(kind, attrs, operands, declared),
        _ => Err(no_type_rule(kind)),
    }
}

fn no_type_rule(kind: OpKind) -> Diag {
    Diag::unlocated(format!("no type rule for 'ck.{}'", kind.name()))
}

/// The declared result type, required by ops whose result cannot be inferred.
pub(crate) fn need_declared(declared: Option<&TensorType>) -> Result<TensorType, Diag> {
    declared.cloned().ok_or_else(|| Diag::unlocated("needs an explicit result type"))
}

/// Unary elementwise ops keep their operand's type; binary ones need equal
/// shapes (no implicit broadcasting).
fn infer_elementwise(kind: OpKind, operands: &[&TensorType]) -> Result<TensorType, Diag> {
    if !kind.is_unary_elementwise() && operands[0].shape != operands[1].shape {
        return Err(Diag::unlocated(format!(
            "operand shapes must be equal (no implicit broadcasting), got {} and {}",
            operands[0], operands[1]
        )));
    }
    Ok(operands[0].clone())
}

/// Dropout with a step key: the key is a scalar, the result the input's type.
fn infer_keyed_dropout(operands: &[&TensorType]) -> Result<TensorType, Diag> {
    if operands[1].rank() != 0 {
        return Err(Diag::unlocated(format!("dropout's step key operand must be rank 0, got {}", operands[1])));
    }
    Ok(operands[0].clone())
}

/// Fill (declared type) and constant (the type of its dense 'value').
fn infer_source(kind: OpKind, attrs: &Attrs, declared: Option<&TensorType>) -> Result<TensorType, Diag> {
    if kind == OpKind::Fill {
        let ty = need_declared(declared)?;
        check_fill_value(attrs.get("value").and_then(Attr::as_f32).unwrap_or(0.0), ty.dtype)?;
        return Ok(ty);
    }
    let (shape, data) =
        attrs.get("value").and_then(Attr::as_dense).ok_or_else(|| Diag::unlocated("requires attribute 'value' (dense f32 elements)"))?;
    let ty = TensorType::f32(shape.to_vec());
    if ty.num_elements() != Some(data.len() as u64) {
        return Err(Diag::unlocated(format!("'value' holds {} elements but its type {ty} needs {:?}", data.len(), ty.num_elements())));
    }
    if let Some(d) = declared
        && d.dtype != ty.dtype
    {
        return Err(Diag::unlocated(format!("result element type {} differs from the f32 elements of 'value'", d.dtype.name())));
    }
    Ok(ty)
}

/// A fill of an integer type takes an integral value in the type's range
/// (`i1`: 0 or 1); float types take any value (rounded to the type).
fn check_fill_value(v: f32, dt: DType) -> Result<(), Diag> {
    let (lo, hi) = match dt {
        DType::I1 => (0.0, 1.0),
        DType::I32 => (i32::MIN as f64, i32::MAX as f64),
        DType::I64 => (i64::MIN as f64, i64::MAX as f64),
        _ => return Ok(()),
    };
    let x = f64::from(v);
    if x.fract() != 0.0 || !(lo..=hi).contains(&x) {
        return Err(Diag::unlocated(format!("fill of {} needs an integral 'value' in [{lo}, {hi}], got {v}", dt.name())));
    }
    Ok(())
}

/// Reductions remove the (sorted, distinct) dims of 'dims'.
fn infer_reduction(attrs: &Attrs, operands: &[&TensorType]) -> Result<TensorType, Diag> {
    let x = operands[0];
    let dims = check_dims("dims", required_ints(attrs, "dims")?, x.rank())?;
    let shape = (0..x.rank()).filter(|i| !dims.contains(i)).map(|i| x.shape[i]).collect();
    Ok(x.with_shape(shape))
}

/// Data movement: broadcast, transpose, reshape, slice, concat.
fn infer_data_movement(
    kind: OpKind,
    attrs: &Attrs,
    operands: &[&TensorType],
    declared: Option<&TensorType>,
) -> Result<TensorType, Diag> {
    match kind {
        OpKind::Broadcast => infer_broadcast(attrs, operands[0], need_declared(declared)?),
        OpKind::Transpose => infer_transpose(attrs, operands[0]),
        OpKind::Reshape => {
            let y = need_declared(declared)?;
            if y.num_elements() != operands[0].num_elements() {
                return Err(Diag::unlocated(format!("reshape from {} to {} changes the element count", operands[0], y)));
            }
            Ok(y)
        }
        OpKind::Slice => infer_slice(attrs, operands[0], need_declared(declared)?),
        OpKind::Concat => infer_concat(attrs, operands),
        _ => Err(no_type_rule(kind)),
    }
}

/// Broadcast: operand dim i goes to result dim dims[i], of the same size.
fn infer_broadcast(attrs: &Attrs, x: &TensorType, y: TensorType) -> Result<TensorType, Diag> {
    let dims = required_ints(attrs, "dims")?;
    if dims.len() != x.rank() {
        return Err(Diag::unlocated(format!("'dims' has {} entries but the operand has rank {}", dims.len(), x.rank())));
    }
    let dims = check_dims("dims", dims, y.rank())?;
    for (i, &d) in dims.iter().enumerate() {
        if x.shape[i] != y.shape[d] {
            return Err(Diag::unlocated(format!("operand dim {i} ({}) does not match result dim {d} ({})", x.shape[i], y.shape[d])));
        }
    }
    Ok(y)
}

/// Transpose: 'perm' must be a permutation of the operand's dims.
fn infer_transpose(attrs: &Attrs, x: &TensorType) -> Result<TensorType, Diag> {
    let perm = required_ints(attrs, "perm")?;
    if perm.len() != x.rank() {
        return Err(Diag::unlocated(format!("'perm' has {} entries but the operand has rank {}", perm.len(), x.rank())));
    }
    let mut seen = vec![false; x.rank()];
    for &p in perm {
        if p < 0 || p as u64 >= x.rank() as u64 || seen[p as usize] {
            return Err(Diag::unlocated(format!("'perm' {perm:?} is not a permutation of 0..{}", x.rank())));
        }
        seen[p as usize] = true;
    }
    Ok(x.with_shape(perm.iter().map(|&p| x.shape[p as usize]).collect()))
}

/// Slice: the declared window at 'offsets' must lie inside the operand.
fn infer_slice(attrs: &Attrs, x: &TensorType, y: TensorType) -> Result<TensorType, Diag> {
    let offs = required_ints(attrs, "offsets")?;
    if offs.len() != x.rank() || y.rank() != x.rank() {
        return Err(Diag::unlocated(format!(
            "slice of {x} needs {} offsets and a result of the same rank, got {} offsets and {y}",
            x.rank(),
            offs.len()
        )));
    }
    for (i, &o) in offs.iter().enumerate() {
        if o < 0 || (o as u64).checked_add(y.shape[i]).is_none_or(|end| end > x.shape[i]) {
            return Err(Diag::unlocated(format!("slice window [{o}, {o}+{}) is outside dim {i} of size {}", y.shape[i], x.shape[i])));
        }
    }
    Ok(y)
}

/// Concat: operands agree outside 'dim'; the result's 'dim' is their sum.
fn infer_concat(attrs: &Attrs, operands: &[&TensorType]) -> Result<TensorType, Diag> {
    let first = operands[0];
    let dim = attrs.get("dim").and_then(Attr::as_int).unwrap_or(-1);
    if dim < 0 || dim as u64 >= first.rank() as u64 {
        return Err(Diag::unlocated(format!("'dim' = {dim} is out of range for rank {}", first.rank())));
    }
    let dim = dim as usize;
    let mut total: u64 = 0;
    for o in operands {
        if o.rank() != first.rank() || (0..first.rank()).any(|i| i != dim && o.shape[i] != first.shape[i]) {
            return Err(Diag::unlocated(format!("concat operands {first} and {o} differ outside dim {dim}")));
        }
        total = total.checked_add(o.shape[dim]).ok_or_else(|| Diag::unlocated("concat size overflows"))?;
    }
    let mut shape = first.shape.clone();
    shape[dim] = total;
    Ok(first.with_shape(shape))
}

/// Contractions: matmul, conv2d and the conv2d gradients.
fn infer_contraction(
    kind: OpKind,
    attrs: &Attrs,
    operands: &[&TensorType],
    declared: Option<&TensorType>,
) -> Result<TensorType, Diag> {
    match kind {
        OpKind::Matmul => infer_matmul(attrs, operands[0], operands[1]),
        OpKind::Conv2d => Ok(operands[0].with_shape(shape_of_conv(operands[0], operands[1], attrs)?)),
        OpKind::Conv2dGradInput => {
            let (dy, w) = (operands[0], operands[1]);
            let dx = need_declared(declared)?;
            let y = shape_of_conv(&dx, w, attrs)?;
            if y != dy.shape {
                return Err(Diag::unlocated(format!("conv2d of {dx} with {w} gives {:?}, not the shape of dy {dy}", y)));
            }
            Ok(dx)
        }
        OpKind::Conv2dGradFilter => {
            let (x, dy) = (operands[0], operands[1]);
            let dw = need_declared(declared)?;
            let y = shape_of_conv(x, &dw, attrs)?;
            if y != dy.shape {
                return Err(Diag::unlocated(format!("conv2d of {x} with {dw} gives {:?}, not the shape of dy {dy}", y)));
            }
            Ok(dw)
        }
        _ => Err(no_type_rule(kind)),
    }
}

/// Matmul: equal batch dims, contraction dims agree after the transposes.
fn infer_matmul(attrs: &Attrs, a: &TensorType, b: &TensorType) -> Result<TensorType, Diag> {
    if a.rank() < 2 || a.rank() != b.rank() {
        return Err(Diag::unlocated(format!("matmul needs operands of equal rank >= 2, got {a} and {b}")));
    }
    let r = a.rank();
    if a.shape[..r - 2] != b.shape[..r - 2] {
        return Err(Diag::unlocated(format!("matmul batch dims differ: {a} and {b}")));
    }
    let (m, ka) =
        if attr_bool(attrs, "transpose_a") { (a.shape[r - 1], a.shape[r - 2]) } else { (a.shape[r - 2], a.shape[r - 1]) };
    let (kb, n) =
        if attr_bool(attrs, "transpose_b") { (b.shape[r - 1], b.shape[r - 2]) } else { (b.shape[r - 2], b.shape[r - 1]) };
    if ka != kb {
        return Err(Diag::unlocated(format!("matmul contraction dims differ: {ka} vs {kb} ({a} x {b})")));
    }
    let mut shape = a.shape[..r - 2].to_vec();
    shape.extend([m, n]);
    Ok(a.with_shape(shape))
}

/// Pooling and the pooling gradients.
fn infer_pool(
    kind: OpKind,
    attrs: &Attrs,
    operands: &[&TensorType],
    declared: Option<&TensorType>,
) -> Result<TensorType, Diag> {
    match kind {
        OpKind::MaxPool2d | OpKind::AvgPool2d => Ok(operands[0].with_shape(shape_of_pool(operands[0], attrs)?)),
        OpKind::MaxPool2dGrad => {
            let (x, dy) = (operands[0], operands[1]);
            let y = shape_of_pool(x, attrs)?;
            if y != dy.shape {
                return Err(Diag::unlocated(format!("pooling {x} gives {y:?}, not the shape of dy {dy}")));
            }
            Ok(x.clone())
        }
        OpKind::AvgPool2dGrad => {
            let dx = need_declared(declared)?;
            let y = shape_of_pool(&dx, attrs)?;
            if y != operands[0].shape {
                return Err(Diag::unlocated(format!("pooling {dx} gives {y:?}, not the shape of dy {}", operands[0])));
            }
            Ok(dx)
        }
        _ => Err(no_type_rule(kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &[u64]) -> TensorType {
        TensorType::f32(s.to_vec())
    }

    #[test]
    fn every_op_name_round_trips() {
        for &k in OpKind::ALL {
            assert_eq!(OpKind::from_name(k.name()), Some(k));
        }
        assert_eq!(OpKind::from_name("nope"), None);
    }

    #[test]
    fn matmul_with_transposes_infers_m_by_n() {
        let mut a = Attrs::new();
        a.insert("transpose_b".into(), Attr::Bool(true));
        let r = infer_type(OpKind::Matmul, &a, &[&t(&[4, 3]), &t(&[5, 3])], None);
        assert_eq!(r, Ok(Some(t(&[4, 5]))));
        let bad = infer_type(OpKind::Matmul, &Attrs::new(), &[&t(&[4, 3]), &t(&[5, 3])], None);
        assert!(bad.is_err());
    }

    #[test]
    fn reduce_removes_dims_and_rejects_unsorted() {
        let mut a = Attrs::new();
        a.insert("dims".into(), Attr::IntArray(vec![0, 2]));
        assert_eq!(infer_type(OpKind::ReduceSum, &a, &[&t(&[2, 3, 4])], None), Ok(Some(t(&[3]))));
        a.insert("dims".into(), Attr::IntArray(vec![2, 0]));
        assert!(infer_type(OpKind::ReduceSum, &a, &[&t(&[2, 3, 4])], None).is_err());
    }

    #[test]
    fn conv_shape_with_stride_and_padding() {
        let mut a = Attrs::new();
        a.insert("stride".into(), Attr::IntArray(vec![2, 2]));
        a.insert("padding".into(), Attr::IntArray(vec![1, 1]));
        let r = infer_type(OpKind::Conv2d, &a, &[&t(&[1, 3, 8, 8]), &t(&[4, 3, 3, 3])], None);
        assert_eq!(r, Ok(Some(t(&[1, 4, 4, 4]))));
    }

    #[test]
    fn grouped_conv_shapes_and_errors() {
        let with = |g: i64| {
            let mut a = Attrs::new();
            a.insert("groups".into(), Attr::Int(g));
            a.insert("padding".into(), Attr::IntArray(vec![1, 1]));
            a
        };
        // groups = 2: C = 4, filter [6, 2, 3, 3]
        assert_eq!(infer_type(OpKind::Conv2d, &with(2), &[&t(&[1, 4, 5, 5]), &t(&[6, 2, 3, 3])], None), Ok(Some(t(&[1, 6, 5, 5]))));
        // depthwise: C = F = groups = 4, filter [4, 1, 3, 3]
        assert_eq!(infer_type(OpKind::Conv2d, &with(4), &[&t(&[2, 4, 5, 5]), &t(&[4, 1, 3, 3])], None), Ok(Some(t(&[2, 4, 5, 5]))));
        // groups = 1 explicitly is the default
        assert_eq!(infer_type(OpKind::Conv2d, &with(1), &[&t(&[1, 4, 5, 5]), &t(&[6, 4, 3, 3])], None), Ok(Some(t(&[1, 6, 5, 5]))));
        let err = |g: i64, x: &[u64], w: &[u64]| infer_type(OpKind::Conv2d, &with(g), &[&t(x), &t(w)], None).unwrap_err().message;
        assert!(err(2, &[1, 4, 5, 5], &[6, 4, 3, 3]).contains("filter channels 4 must be input channels / groups"));
        assert!(err(3, &[1, 4, 5, 5], &[6, 1, 3, 3]).contains("divisible by 3"));
        assert!(err(2, &[1, 4, 5, 5], &[5, 2, 3, 3]).contains("filters (5) divisible by 2"));
        assert!(err(0, &[1, 4, 5, 5], &[6, 4, 3, 3]).contains("'groups' must be >= 1, got 0"));
        assert!(err(-2, &[1, 4, 5, 5], &[6, 4, 3, 3]).contains("got -2"));
        // the gradients check their declared result the same way
        let dy = t(&[1, 6, 5, 5]);
        assert_eq!(
            infer_type(OpKind::Conv2dGradInput, &with(2), &[&dy, &t(&[6, 2, 3, 3])], Some(&t(&[1, 4, 5, 5]))),
            Ok(Some(t(&[1, 4, 5, 5])))
        );
        assert_eq!(
            infer_type(OpKind::Conv2dGradFilter, &with(2), &[&t(&[1, 4, 5, 5]), &dy], Some(&t(&[6, 2, 3, 3]))),
            Ok(Some(t(&[6, 2, 3, 3])))
        );
        assert!(infer_type(OpKind::Conv2dGradFilter, &with(2), &[&t(&[1, 4, 5, 5]), &dy], Some(&t(&[6, 4, 3, 3]))).is_err());
        let mut bad = with(2);
        bad.insert("groups".into(), Attr::IntArray(vec![2]));
        assert!(infer_type(OpKind::Conv2d, &bad, &[&t(&[1, 4, 5, 5]), &t(&[6, 2, 3, 3])], None).is_err(), "groups is an i64");
    }

    #[test]
    fn constant_type_comes_from_its_value() {
        let mut a = Attrs::new();
        a.insert("value".into(), Attr::Dense { shape: vec![2, 3], data: vec![0.5; 6] });
        assert_eq!(infer_type(OpKind::Constant, &a, &[], None), Ok(Some(t(&[2, 3]))));
        assert!(infer_type(OpKind::Constant, &a, &[], Some(&t(&[3, 2]))).is_err());
        a.insert("value".into(), Attr::Dense { shape: vec![2, 3], data: vec![0.5; 5] });
        assert!(infer_type(OpKind::Constant, &a, &[], None).is_err(), "element count must match the shape");
        a.insert("value".into(), Attr::F32(1.0));
        assert!(infer_type(OpKind::Constant, &a, &[], None).is_err());
    }

    #[test]
    fn unknown_attribute_is_rejected_but_dotted_is_allowed() {
        let mut a = Attrs::new();
        a.insert("bogus".into(), Attr::Unit);
        assert!(infer_type(OpKind::Relu, &a, &[&t(&[2])], None).is_err());
        let mut b = Attrs::new();
        b.insert("user.tag".into(), Attr::Unit);
        assert!(infer_type(OpKind::Relu, &b, &[&t(&[2])], None).is_ok());
    }
}
