//! The forward/backward split of a planned gradient function: what a
//! frontend whose own autograd runs the step (ckopt.torch: one
//! `torch.autograd.Function` per call) needs from ckopt's plan.
//!
//! `@NAME_grad` after the passes is one schedule: the forward ops, the seed
//! `fill 1.0` of the backward, then the backward with the recompute clones
//! (`{ck.recompute}`) that remat inserted. `split_gradient` cuts it at the
//! seed:
//!
//! * forward = the ops the loss depends on (none of them a recompute
//!   clone), in schedule order, then the ops of `@NAME` that compute its
//!   other results (the model's other outputs, BatchNorm's new running
//!   statistics) from what the forward already has: an op of `@NAME` equal
//!   to a forward op (same kind, attributes other than `ck.*` annotations,
//!   and operands) is that op's value, the others are appended (without
//!   their `ck.inplace`, which was planned for `@NAME`'s schedule);
//! * kept = the forward values the backward reads, in order of first read:
//!   exactly what the plan keeps across the boundary (remat dropped the
//!   rest, and recomputes it);
//! * backward = every other op, in schedule order, with the seed replaced
//!   by an argument `dy` (the gradient of the loss; the backward is linear
//!   in it).
//!
//! Both halves are plain ck functions (argument attributes dropped,
//! `ck.offset`/`ck.fusion` dropped: a backend plans each anew), so they
//! run on any target and print as ck text.

use crate::{Error, ErrorKind, err, find};
use ckopt_ir::ops::{ATTR_FUSION, ATTR_INPLACE, ATTR_OFFSET, ATTR_RECOMPUTE};
use ckopt_ir::{Attrs, DType, Diag, Func, Module, Op, OpKind, Param, TensorType, ValueId};
use std::collections::HashMap;

/// The two halves of a gradient function (see the module docs).
#[derive(Clone, Debug)]
pub struct GradientSplit {
    /// `@GRAD_forward`: the gradient function's arguments; results: the
    /// loss, the `n_aux` other results of the loss function, then the kept
    /// values.
    pub forward: Func,
    /// `@GRAD_backward`: arguments: the gradient function's arguments it
    /// reads (`backward_args`, in argument order), the kept values (in the
    /// forward's result order), then `dy` (rank-0 f32); results: one
    /// gradient per `wrt` argument.
    pub backward: Func,
    /// How many results of the loss function follow the loss (they follow
    /// it among the forward's results too).
    pub n_aux: usize,
    /// How many values the forward hands to the backward.
    pub n_kept: usize,
    /// Indices of the gradient function's arguments the backward reads.
    pub backward_args: Vec<usize>,
    /// The arguments the gradients are for, in the backward's result order.
    pub wrt: Vec<usize>,
}

impl GradientSplit {
    /// Both halves in one module (forward first), e.g. to compile each.
    pub fn module(&self) -> Module {
        Module { funcs: vec![self.forward.clone(), self.backward.clone()] }
    }
}

fn compile_err(f: &Func, m: String) -> Error {
    Error::new(ErrorKind::Compile, Diag::error(f.loc.clone(), m), None)
}

/// Attributes that mean the same computation (not the `ck.*` planning
/// annotations: in-place, offsets, fusion groups, remat marks).
fn semantic(attrs: &Attrs) -> Vec<(&String, &ckopt_ir::Attr)> {
    attrs.iter().filter(|(k, _)| !k.starts_with("ck.")).collect()
}

fn planning_free(attrs: &Attrs, drop_inplace: bool) -> Attrs {
    attrs
        .iter()
        .filter(|(k, _)| *k != ATTR_OFFSET && *k != ATTR_FUSION && !(drop_inplace && *k == ATTR_INPLACE))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Copies values of `src` into a new function, each once.
struct Builder<'a> {
    src: &'a Func,
    out: Func,
    map: HashMap<ValueId, ValueId>,
}

impl<'a> Builder<'a> {
    fn new(src: &'a Func, name: String) -> Self {
        Builder { src, out: Func::new(name, src.loc.clone()), map: HashMap::new() }
    }
    fn arg(&mut self, v: ValueId) {
        let d = &self.src.values[v.index()];
        let nv = self.out.new_value(d.name.clone(), d.ty.clone());
        self.out.params.push(Param { value: nv, attrs: Attrs::new() });
        self.map.insert(v, nv);
    }
    fn value(&mut self, v: ValueId) -> Result<ValueId, Error> {
        self.map.get(&v).copied().ok_or_else(|| {
            compile_err(self.src, format!("split of @{}: %{} is read before it is defined", self.src.name, self.src.name_of(v)))
        })
    }
    fn op(&mut self, op: &Op, drop_inplace: bool) -> Result<(), Error> {
        let operands = op.operands.iter().map(|&o| self.value(o)).collect::<Result<Vec<_>, _>>()?;
        let result = op.result.map(|r| {
            let d = &self.src.values[r.index()];
            let nv = self.out.new_value(d.name.clone(), d.ty.clone());
            self.map.insert(r, nv);
            nv
        });
        self.out.body.push(Op { kind: op.kind, operands, result, attrs: planning_free(&op.attrs, drop_inplace), loc: op.loc.clone() });
        Ok(())
    }
    fn finish(mut self, results: &[ValueId]) -> Result<Func, Error> {
        let rs = results.iter().map(|&r| self.value(r)).collect::<Result<Vec<_>, _>>()?;
        self.out.push_return(&rs, self.src.loc.clone());
        Ok(self.out)
    }
}

/// Splits the planned gradient function `grad` of the loss function `func`
/// (both in `module`; `grad` as autodiff built it and later passes planned
/// it) into its forward and backward halves (see the module docs).
/// Errors: `Compile` (no such function, `grad` has no seed `fill 1.0`, or
/// its arguments are not `func`'s).
pub fn split_gradient(module: &Module, func: &str, grad: &str) -> Result<GradientSplit, Error> {
    let f = find(module, func)?;
    let g = find(module, grad)?;
    let loss = *g.returned().first().ok_or_else(|| compile_err(g, format!("@{grad} returns nothing")))?;
    let scalar = TensorType::new(Vec::<u64>::new(), DType::F32);
    if *g.ty(loss) != scalar {
        return Err(compile_err(g, format!("@{grad}'s first result is {}, not the rank-0 f32 loss", g.ty(loss))));
    }
    if f.params.len() != g.params.len() || f.params.iter().zip(&g.params).any(|(a, b)| f.ty(a.value) != g.ty(b.value)) {
        return Err(compile_err(g, format!("@{grad}'s arguments are not those of @{func} (is it its gradient function?)")));
    }
    let body = &g.body[..g.body.len() - usize::from(g.return_op().is_some())];
    let defs = g.def_index();

    // The loss's cone, without recompute clones.
    let mut need = vec![false; g.values.len()];
    need[loss.index()] = true;
    let mut in_fwd = vec![false; body.len()];
    for (i, op) in body.iter().enumerate().rev() {
        if op.result.is_some_and(|r| need[r.index()]) && !op.has_attr(ATTR_RECOMPUTE) {
            in_fwd[i] = true;
            for &o in &op.operands {
                need[o.index()] = true;
            }
        }
    }
    let seed_ix = body
        .iter()
        .enumerate()
        .find(|(i, op)| {
            !in_fwd[*i] && op.kind == OpKind::Fill && op.f32_attr("value") == Some(1.0) && op.result.is_some_and(|r| *g.ty(r) == scalar)
        })
        .map(|(i, _)| i)
        .ok_or_else(|| compile_err(g, format!("@{grad} has no seed `fill 1.0` (was it built by autodiff?)")))?;
    let seed = body[seed_ix].result.ok_or_else(|| compile_err(g, "the seed defines no value".into()))?;

    // Forward: the cone, then the other results of @func.
    let mut fwd = Builder::new(g, format!("{grad}_forward"));
    for p in &g.params {
        fwd.arg(p.value);
    }
    for (i, op) in body.iter().enumerate() {
        if in_fwd[i] {
            fwd.op(op, false)?;
        }
    }
    // @func's values in the forward: arguments by position, ops that equal
    // a forward op, the rest appended as needed.
    let mut fmap: HashMap<ValueId, ValueId> = HashMap::new();
    for (a, b) in f.params.iter().zip(&g.params) {
        fmap.insert(a.value, fwd.map[&b.value]);
    }
    let mut known: HashMap<(OpKind, Vec<ValueId>, String), ValueId> = HashMap::new();
    for op in fwd.out.body.iter() {
        if let Some(r) = op.result {
            known.entry((op.kind, op.operands.clone(), format!("{:?}", semantic(&op.attrs)))).or_insert(r);
        }
    }
    let f_defs = f.def_index();
    let aux: Vec<ValueId> = f.returned().get(1..).unwrap_or(&[]).to_vec();
    let mut aux_out = Vec::with_capacity(aux.len());
    for &r in &aux {
        aux_out.push(f_value(f, &f_defs, r, &mut fmap, &mut known, &mut fwd.out)?);
    }

    // Backward: every other op.
    let bwd_ops: Vec<&Op> = body.iter().enumerate().filter(|(i, _)| !in_fwd[*i] && *i != seed_ix).map(|(_, op)| op).collect();
    let grads: Vec<ValueId> = g.returned().get(1..).unwrap_or(&[]).to_vec();
    let mut seen = vec![false; g.values.len()];
    let mut reads = Vec::new();
    for &o in bwd_ops.iter().flat_map(|op| op.operands.iter()).chain(grads.iter()) {
        if !std::mem::replace(&mut seen[o.index()], true) {
            reads.push(o);
        }
    }
    let is_fwd_value = |v: ValueId| defs.get(&v).is_some_and(|&i| i < body.len() && in_fwd[i]);
    let kept: Vec<ValueId> = reads.iter().copied().filter(|&v| is_fwd_value(v)).collect();
    let backward_args: Vec<usize> = (0..g.params.len()).filter(|&i| seen[g.params[i].value.index()]).collect();

    let mut fwd_results = vec![fwd.value(loss)?];
    fwd_results.extend(aux_out);
    for &k in &kept {
        fwd_results.push(fwd.value(k)?);
    }
    fwd.out.push_return(&fwd_results, g.loc.clone());
    let forward = fwd.out;

    let mut bwd = Builder::new(g, format!("{grad}_backward"));
    for &i in &backward_args {
        bwd.arg(g.params[i].value);
    }
    for &k in &kept {
        bwd.arg(k);
    }
    let dy = bwd.out.new_value("dy", scalar);
    bwd.out.params.push(Param { value: dy, attrs: Attrs::new() });
    bwd.map.insert(seed, dy);
    for op in bwd_ops {
        bwd.op(op, false)?;
    }
    let backward = bwd.finish(&grads)?;
    // autodiff's default wrt: the {ck.param} (else every) float arguments.
    let wrt: Vec<usize> = f.trainable_indices().into_iter().filter(|&i| f.ty(f.params[i].value).dtype.is_float()).collect();
    if wrt.len() != grads.len() {
        return Err(err(ErrorKind::Compile, format!("@{grad} returns {} gradients for {} differentiated arguments of @{func}", grads.len(), wrt.len())));
    }
    Ok(GradientSplit { forward, backward, n_aux: aux.len(), n_kept: kept.len(), backward_args, wrt })
}

/// The forward's value of `@func`'s value `v` (see `split_gradient`).
fn f_value(
    f: &Func,
    f_defs: &HashMap<ValueId, usize>,
    v: ValueId,
    fmap: &mut HashMap<ValueId, ValueId>,
    known: &mut HashMap<(OpKind, Vec<ValueId>, String), ValueId>,
    out: &mut Func,
) -> Result<ValueId, Error> {
    if let Some(&m) = fmap.get(&v) {
        return Ok(m);
    }
    let op = &f.body[*f_defs.get(&v).ok_or_else(|| compile_err(f, format!("@{}: %{} has no definition", f.name, f.name_of(v))))?];
    let mut operands = Vec::with_capacity(op.operands.len());
    for &o in &op.operands {
        operands.push(f_value(f, f_defs, o, fmap, known, out)?);
    }
    let key = (op.kind, operands.clone(), format!("{:?}", semantic(&op.attrs)));
    let r = match known.get(&key) {
        Some(&r) if *out.ty(r) == *f.ty(v) => r,
        _ => {
            let r = out.new_value(format!("aux_{}", f.name_of(v)), f.ty(v).clone());
            out.body.push(Op { kind: op.kind, operands, result: Some(r), attrs: planning_free(&op.attrs, true), loc: op.loc.clone() });
            known.insert(key, r);
            r
        }
    };
    fmap.insert(v, r);
    Ok(r)
}
