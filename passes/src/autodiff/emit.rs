//! The machinery the rules emit with: [`Emitter`] (backward ops into `@NAME_grad`),
//! [`Contrib`] and [`Adj`] (partial and accumulated gradients, slice joining),
//! and [`Cx`], what one rule sees: the forward op, the adjoint `dy` of its
//! result, which operands want a gradient, and where contributions go.

use ckopt_ir::{Attr, Attrs, Diag, Func, Loc, Op, OpKind, TensorType, ValueId};

/// A partial gradient of one value that is not summed at once (dense partials
/// go straight into the value's [`Adj`]).
pub(super) enum Contrib {
    /// A gradient for the window at `offsets` of the value (shape of `dy`).
    Slice { dy: ValueId, offsets: Vec<u64> },
}

/// Accumulated gradient of one value: a running dense sum plus pending slice pieces.
#[derive(Default)]
pub(super) struct Adj {
    pub(super) dense: Option<ValueId>,
    pub(super) slices: Vec<(Vec<u64>, ValueId)>,
}

/// Emits backward ops into the gradient function.
pub(super) struct Emitter<'a> {
    pub(super) g: &'a mut Func,
    pub(super) loc: Loc,
    pub(super) count: usize,
}

impl Emitter<'_> {
    pub(super) fn op(&mut self, kind: OpKind, operands: &[ValueId], attrs: Attrs, declared: Option<TensorType>, name: &str) -> Result<ValueId, Diag> {
        self.count += 1;
        self.g.push(kind, operands, attrs, declared, name, self.loc.clone()).map_err(|d| {
            Diag::error(d.loc.clone(), format!("autodiff: internal error building a gradient: {}", d.message))
        })
    }
    pub(super) fn un(&mut self, kind: OpKind, x: ValueId, name: &str) -> Result<ValueId, Diag> {
        self.op(kind, &[x], Attrs::new(), None, name)
    }
    pub(super) fn bin(&mut self, kind: OpKind, a: ValueId, b: ValueId, name: &str) -> Result<ValueId, Diag> {
        self.op(kind, &[a, b], Attrs::new(), None, name)
    }
    pub(super) fn scale(&mut self, x: ValueId, v: f32, name: &str) -> Result<ValueId, Diag> {
        self.op(OpKind::Scale, &[x], one("value", Attr::F32(v)), None, name)
    }
    pub(super) fn fill(&mut self, ty: TensorType, v: f32, name: &str) -> Result<ValueId, Diag> {
        self.op(OpKind::Fill, &[], one("value", Attr::F32(v)), Some(ty), name)
    }
    pub(super) fn ty(&self, v: ValueId) -> TensorType {
        self.g.ty(v).clone()
    }
    /// `dy` zero-padded into `full` at `offsets`: one concat (with up to two fills) per differing dim.
    fn pad(&mut self, dy: ValueId, offsets: &[u64], full: &TensorType, name: &str) -> Result<ValueId, Diag> {
        let mut cur = dy;
        for d in 0..full.rank() {
            let ct = self.ty(cur);
            if ct.shape[d] == full.shape[d] {
                continue;
            }
            let before = offsets[d];
            let after = full.shape[d] - before - ct.shape[d];
            let mut parts = Vec::with_capacity(3);
            if before > 0 {
                let mut s = ct.shape.clone();
                s[d] = before;
                parts.push(self.fill(ct.with_shape(s), 0.0, name)?);
            }
            parts.push(cur);
            if after > 0 {
                let mut s = ct.shape.clone();
                s[d] = after;
                parts.push(self.fill(ct.with_shape(s), 0.0, name)?);
            }
            cur = self.op(OpKind::Concat, &parts, one("dim", Attr::Int(d as i64)), None, name)?;
        }
        Ok(cur)
    }
}

pub(super) fn one(k: &str, v: Attr) -> Attrs {
    let mut a = Attrs::new();
    a.insert(k.to_string(), v);
    a
}

/// The op's own attributes (stride, padding, window, dims...), without pass or user attributes.
pub(super) fn own_attrs(op: &Op) -> Attrs {
    let specs = op.kind.attr_specs();
    op.attrs.iter().filter(|(k, _)| specs.iter().any(|s| s.name == k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

pub(super) fn with_bools(ta: bool, tb: bool) -> Attrs {
    let mut a = Attrs::new();
    if ta {
        a.insert("transpose_a".into(), Attr::Bool(true));
    }
    if tb {
        a.insert("transpose_b".into(), Attr::Bool(true));
    }
    a
}

pub(super) fn ints(v: impl IntoIterator<Item = usize>) -> Attr {
    Attr::IntArray(v.into_iter().map(|d| d as i64).collect())
}

/// What one rule sees and produces: the forward `op`, the adjoint `dy` of its
/// result, `want[i]` (operand i needs a gradient) and the contributions so far.
pub(super) struct Cx<'e, 'g, 'f> {
    pub(super) e: &'e mut Emitter<'g>,
    pub(super) f: &'f Func,
    pub(super) op: &'f Op,
    pub(super) dy: ValueId,
    want: &'f [bool],
    /// The accumulators of every forward value: dense contributions are summed
    /// into them as soon as they are emitted (eager fan-out accumulation).
    adj: &'e mut [Adj],
    out: Vec<(usize, Contrib)>,
    /// The first error of an eager `add` (reported by [`Cx::finish`]).
    err: Option<Diag>,
}

impl<'e, 'g, 'f> Cx<'e, 'g, 'f> {
    pub(super) fn new(e: &'e mut Emitter<'g>, f: &'f Func, op: &'f Op, dy: ValueId, want: &'f [bool], adj: &'e mut [Adj]) -> Self {
        Cx { e, f, op, dy, want, adj, out: Vec::new(), err: None }
    }
    /// Operand `i` of the forward op.
    pub(super) fn x(&self, i: usize) -> ValueId {
        self.op.operands[i]
    }
    /// The forward op's result.
    pub(super) fn y(&self) -> ValueId {
        self.op.result.unwrap_or(self.dy)
    }
    /// The name of operand `i`'s gradient (`d` + its name).
    pub(super) fn nm(&self, i: usize) -> String {
        format!("d{}", self.f.name_of(self.op.operands[i]))
    }
    /// Whether operand `i` needs a gradient.
    pub(super) fn w(&self, i: usize) -> bool {
        self.want.get(i).copied().unwrap_or(false)
    }
    /// The type of a value of the forward function.
    pub(super) fn ty(&self, v: ValueId) -> TensorType {
        self.f.ty(v).clone()
    }
    /// The op's integer-array attribute `name` as dims (empty if absent).
    pub(super) fn dims_attr(&self, name: &str) -> Vec<usize> {
        self.op.attrs.get(name).and_then(Attr::as_ints).unwrap_or(&[]).iter().map(|&d| d as usize).collect()
    }
    /// A dense contribution `v` to operand `i`'s gradient, summed into its
    /// accumulator right away (one `add` when a partial sum already exists),
    /// so a value used twice by one op (`matmul(x, x)`) never holds three
    /// partial gradients at once.
    pub(super) fn dense(&mut self, i: usize, v: ValueId) {
        if !self.w(i) || self.err.is_some() {
            return;
        }
        let x = self.op.operands[i];
        let name = format!("d{}", self.f.name_of(x));
        if let Err(d) = add_dense(self.e, &mut self.adj[x.index()], v, &name) {
            self.err = Some(d);
        }
    }
    /// A contribution for the window at `offsets` of operand `i`.
    pub(super) fn slice(&mut self, i: usize, dy: ValueId, offsets: Vec<u64>) {
        self.out.push((i, Contrib::Slice { dy, offsets }));
    }
    /// The slice contributions to the operands that want a gradient (dense
    /// ones are already summed), or the first error of an eager `add`.
    pub(super) fn finish(self) -> Result<Vec<(usize, Contrib)>, Diag> {
        if let Some(d) = self.err {
            return Err(d);
        }
        let want = self.want;
        Ok(self.out.into_iter().filter(|(i, _)| want.get(*i).copied().unwrap_or(false)).collect())
    }
}

/// Adds a dense contribution to an accumulator (an `add` only for a second one).
pub(super) fn add_dense(e: &mut Emitter, acc: &mut Adj, c: ValueId, name: &str) -> Result<(), Diag> {
    acc.dense = Some(match acc.dense {
        None => c,
        Some(prev) => e.bin(OpKind::Add, prev, c, name)?,
    });
    Ok(())
}

/// The total gradient of a value of type `ty` (None = zero): joins pending slices.
pub(super) fn finalize(e: &mut Emitter, acc: &mut Adj, ty: &TensorType, name: &str) -> Result<Option<ValueId>, Diag> {
    let slices = std::mem::take(&mut acc.slices);
    if slices.is_empty() {
        return Ok(acc.dense);
    }
    // One dim along which every slice differs from the full value, the others full-size?
    let differing = |v: ValueId, e: &Emitter| -> Vec<usize> {
        let st = e.g.ty(v);
        (0..ty.rank()).filter(|&d| st.shape[d] != ty.shape[d]).collect()
    };
    let mut split_dim: Option<usize> = None;
    let mut tiled = true;
    for (offs, v) in &slices {
        let dd = differing(*v, e);
        if dd.len() != 1 || (0..ty.rank()).any(|d| d != dd[0] && offs[d] != 0) || split_dim.is_some_and(|s| s != dd[0]) {
            tiled = false;
            break;
        }
        split_dim = Some(dd[0]);
    }
    let mut sorted = slices.clone();
    if let (true, Some(d)) = (tiled, split_dim) {
        sorted.sort_by_key(|(o, _)| o[d]);
        let mut end = 0u64;
        for (o, v) in &sorted {
            if o[d] < end {
                tiled = false; // overlapping windows: sum instead
                break;
            }
            end = o[d] + e.g.ty(*v).shape[d];
        }
    }
    match (tiled, split_dim) {
        (true, Some(d)) => {
            let mut parts = Vec::with_capacity(2 * sorted.len() + 1);
            let mut at = 0u64;
            for (o, v) in &sorted {
                if o[d] > at {
                    let mut s = ty.shape.clone();
                    s[d] = o[d] - at;
                    parts.push(e.fill(ty.with_shape(s), 0.0, name)?);
                }
                parts.push(*v);
                at = o[d] + e.g.ty(*v).shape[d];
            }
            if at < ty.shape[d] {
                let mut s = ty.shape.clone();
                s[d] = ty.shape[d] - at;
                parts.push(e.fill(ty.with_shape(s), 0.0, name)?);
            }
            let joined = e.op(OpKind::Concat, &parts, one("dim", Attr::Int(d as i64)), None, name)?;
            add_dense(e, acc, joined, name)?;
        }
        _ => {
            for (o, v) in &slices {
                let p = e.pad(*v, o, ty, name)?;
                add_dense(e, acc, p, name)?;
            }
        }
    }
    Ok(acc.dense)
}

