//! One kernel: a fusion group (or a single op) cut out of its function as a
//! small ck function of its own, plus how it iterates.
//!
//! A `Kernel`'s signature is everything that decides its code: the op kinds,
//! their semantic attributes, the operand and result types, which outputs
//! overwrite which inputs (in-place aliasing), and the iteration kind. It is
//! represented as a standalone ck `Func` (`@kernel(%in0, ...) -> outputs`,
//! canonical value names, no locations, no pass attributes) and keyed by its
//! printed text: two groups anywhere in a module with the same key share one
//! compiled kernel (`KernelCache`). Where a kernel's operands live (offsets)
//! is not part of the signature; the step program passes the pointers.
//!
//! Iteration kinds (`KernelKind`):
//! - `Loop { shape, flat }`: elemental ops evaluated at every element of
//!   `shape`; `flat` when every value is read at the same flat index (only
//!   elementwise ops, reshapes, fills and broadcasts of rank-0 values), so
//!   the kernel is one loop over the elements.
//! - `Reduce { reduce }`: one reduction (body index `reduce`) with its
//!   prologue and epilogue (`ckopt_ir::fusion`). `rows` when the reduced dims
//!   are the innermost ones (each result element accumulates one contiguous
//!   run: registers); otherwise results accumulate in memory.
//! - `Single`: any other op, element by element (pools, concat, gather,
//!   ...); `cross_entropy_grad`, and `gather_grad`/`take_along_grad` with
//!   f32 results, a row at a time (`row_extent`).
//!
//! Parallel split: `split` is the extent of the outermost loop the runtime
//! may cut into ranges for several threads (0: never split). Every element
//! is computed the same way whatever the cut, so results do not depend on
//! the thread count.

use ckopt_ir::fusion::{GroupShape, check_group, is_elemental};
use ckopt_ir::{Attrs, Diag, Func, Loc, Module, Op, OpKind, TensorType, ValueId, print_module};
use std::collections::HashMap;

/// How a kernel iterates (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelKind {
    Loop { shape: Vec<u64>, flat: bool },
    Reduce { reduce: usize, rows: bool },
    Single,
}

/// A kernel signature and what its code generators need.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// `@kernel(inputs...) -> (outputs...)`: the group's ops, verified.
    pub func: Func,
    pub kind: KernelKind,
    /// Per output: the input whose bytes it overwrites in place, if any.
    pub alias: Vec<Option<usize>>,
    /// Scratch bytes the kernel needs (accumulators of a column reduction
    /// whose result is not itself stored).
    pub workspace: u64,
    /// Extent of the splittable outermost loop (0: not splittable).
    pub split: u64,
    /// Elements the kernel visits (for the runtime's split decision).
    pub work: u64,
    /// The signature as text: the cache key.
    pub key: String,
}

impl Kernel {
    /// Number of pointer arguments: inputs, outputs, and the workspace if any.
    pub fn num_ptrs(&self) -> usize {
        self.func.params.len() + self.func.result_types.len() + usize::from(self.workspace > 0)
    }
}

/// Distinct kernels of a module, compiled once each.
#[derive(Clone, Debug, Default)]
pub struct KernelCache {
    pub kernels: Vec<Kernel>,
    index: HashMap<String, usize>,
}

impl KernelCache {
    pub fn new() -> KernelCache {
        KernelCache::default()
    }
    /// Index of `k`'s signature in the cache, adding it if new.
    pub fn intern(&mut self, k: Kernel) -> usize {
        if let Some(&i) = self.index.get(&k.key) {
            return i;
        }
        let i = self.kernels.len();
        self.index.insert(k.key.clone(), i);
        self.kernels.push(k);
        i
    }
    pub fn len(&self) -> usize {
        self.kernels.len()
    }
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }
}

/// The semantic attributes of an op (its own, no pass attributes).
fn semantic_attrs(op: &Op) -> Attrs {
    let specs = op.kind.attr_specs();
    op.attrs.iter().filter(|(k, _)| specs.iter().any(|s| s.name == k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Whether every value of a loop kernel is read at the output's flat index.
fn flat_access(func: &Func) -> bool {
    func.body.iter().all(|op| match op.kind {
        OpKind::Broadcast => op.operands.first().is_some_and(|&x| func.ty(x).rank() == 0),
        OpKind::Transpose | OpKind::Slice => false,
        OpKind::Dropout => true,
        k => k.is_elementwise() || k == OpKind::Reshape || k == OpKind::Fill || k == OpKind::Return,
    })
}

/// Cuts ops `ops` (a fusion group or one op) of `f` out as a kernel.
/// `aliases[j]` = the input (by value) output j overwrites, as decided by
/// the caller from the layout.
pub fn extract(f: &Func, ops: std::ops::RangeInclusive<usize>, internal: &[bool]) -> Result<(Kernel, Vec<ValueId>, Vec<ValueId>), Diag> {
    let (start, end) = (*ops.start(), *ops.end());
    let group = &f.body[start..=end];
    let defined: Vec<ValueId> = group.iter().filter_map(|o| o.result).collect();
    let mut inputs: Vec<ValueId> = Vec::new();
    for op in group {
        for &o in &op.operands {
            if !defined.contains(&o) && !inputs.contains(&o) {
                inputs.push(o);
            }
        }
    }
    let outputs: Vec<ValueId> = defined.iter().copied().filter(|v| !internal.get(v.index()).copied().unwrap_or(false)).collect();
    let mut k = Func::new("kernel", Loc::unknown());
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    for (i, &v) in inputs.iter().enumerate() {
        map.insert(v, k.add_param(format!("in{i}"), f.ty(v).clone(), false));
    }
    for (j, op) in group.iter().enumerate() {
        let operands: Vec<ValueId> = op.operands.iter().map(|o| map[o]).collect();
        let declared = op.result.filter(|_| op.kind.needs_declared_type()).map(|r| f.ty(r).clone());
        let r = k
            .push(op.kind, &operands, semantic_attrs(op), declared, &format!("v{j}"), Loc::unknown())
            .map_err(|d| Diag::error(op.loc.clone(), format!("'{}' op cannot form a kernel: {}", op.kind.full_name(), d.message)))?;
        if let Some(orig) = op.result {
            map.insert(orig, r);
        }
    }
    let rets: Vec<ValueId> = outputs.iter().map(|o| map[o]).collect();
    k.push_return(&rets, Loc::unknown());
    let first = &group[0];
    let kind = if group.len() == 1 && !is_elemental(first.kind) && !matches!(first.kind, OpKind::ReduceSum | OpKind::ReduceMax) {
        KernelKind::Single
    } else {
        // The group's own shape rule (the same the verifier applies): in the
        // kernel function, every value its return does not list is internal.
        let all = ckopt_ir::fusion::Group { id: 0, start: 0, end: k.body.len() - 2 };
        let mut internal = vec![false; k.values.len()];
        for op in &k.body {
            if let Some(r) = op.result {
                internal[r.index()] = !rets.contains(&r);
            }
        }
        let fusion = ckopt_ir::fusion::Fusion { groups: vec![all], group_of: vec![Some(0); k.body.len()], internal };
        match check_group(&k, &all, &fusion) {
            Ok(GroupShape::Loop { shape }) => KernelKind::Loop { flat: flat_access(&k), shape },
            Ok(GroupShape::Reduce { reduce }) => {
                let x = k.ty(k.body[reduce].operands[0]);
                let dims = ckopt_ir::ops::attr_ints(&k.body[reduce].attrs, "dims", &[]);
                let r = x.rank() as i64;
                let rows = !dims.is_empty() && dims.iter().enumerate().all(|(i, &d)| d == r - dims.len() as i64 + i as i64);
                KernelKind::Reduce { reduce, rows }
            }
            Err((i, m)) => {
                let op = &group[i.min(group.len() - 1)];
                return Err(Diag::error(op.loc.clone(), format!("'{}' op: fusion group cannot be one kernel: {m}", op.kind.full_name())));
            }
        }
    };
    let key_func = k.clone();
    let text = print_module(&Module { funcs: vec![key_func] });
    let (split, work) = iteration(&k, &kind);
    let workspace = match &kind {
        KernelKind::Reduce { reduce, rows: false } => {
            let r = k.body[*reduce].result.unwrap_or(ValueId(0));
            // f32 accumulators: the result's own buffer when it is a stored f32.
            let t = k.ty(r);
            if rets.contains(&r) && t.dtype == ckopt_ir::DType::F32 { 0 } else { t.elems().saturating_mul(4) }
        }
        _ => 0,
    };
    let kernel = Kernel { func: k, kind, alias: Vec::new(), workspace, split, work, key: text };
    Ok((kernel, inputs, outputs))
}

/// (splittable extent, elements visited) of a kernel.
fn iteration(k: &Func, kind: &KernelKind) -> (u64, u64) {
    match kind {
        KernelKind::Loop { shape, flat } => {
            let n: u64 = shape.iter().product();
            let split = if *flat { n } else { shape.first().copied().unwrap_or(1) };
            (if shape.is_empty() { 0 } else { split }, n)
        }
        KernelKind::Reduce { reduce, rows } => {
            let x: &TensorType = k.ty(k.body[*reduce].operands[0]);
            let n = x.elems();
            let dims = ckopt_ir::ops::attr_ints(&k.body[*reduce].attrs, "dims", &[]);
            let split = if *rows && !dims.contains(&0) { x.shape.first().copied().unwrap_or(0) } else { 0 };
            (split, n)
        }
        KernelKind::Single => {
            let n = k.result_types.first().map(|t| t.elems()).unwrap_or(0);
            match k.body.first().and_then(|op| row_extent(k, op)) {
                Some(rows) => (rows, n),
                None => (n, n),
            }
        }
    }
}

/// The single ops the cpu backend computes a row at a time rather than per
/// result element, with the extent of their split loop:
/// - `cross_entropy_grad`: the rows of the logits;
/// - `gather_grad` with an f32 result: its rows up to the axis (`[P·N]` of a
///   result `[P, N, Q]`), each zeroed and then added to by the matching
///   `dy` rows in increasing index position;
/// - `take_along_grad` with an f32 result: its fibres along the axis (`P·Q`
///   of `[P, N, Q]`), the same way.
///
/// Either way each result element sums its matches in increasing index
/// position from +0.0 (the interpreter's order), whatever the split.
pub fn row_extent(f: &Func, op: &Op) -> Option<u64> {
    let r = f.ty(op.result?);
    let a = op.int_attr("axis").unwrap_or(0).max(0) as usize;
    let f32_out = r.dtype == ckopt_ir::DType::F32 && a < r.shape.len();
    match op.kind {
        OpKind::CrossEntropyGrad => Some(r.shape.first().copied().unwrap_or(0)),
        OpKind::GatherGrad if f32_out => Some(r.shape[..=a].iter().product()),
        OpKind::TakeAlongGrad if f32_out => Some(r.shape[..a].iter().product::<u64>() * r.shape[a + 1..].iter().product::<u64>()),
        _ => None,
    }
}

/// Appends the aliasing to a kernel's key (it changes what code is valid).
pub fn with_alias(mut k: Kernel, alias: Vec<Option<usize>>) -> Kernel {
    use std::fmt::Write;
    let _ = write!(k.key, "// kind {:?} alias {:?}", k.kind, alias);
    k.alias = alias;
    k
}
