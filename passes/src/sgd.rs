//! `sgd{lr=X momentum=M func=NAME}`: the training step as IR (defaults in the registry).
//!
//! What: for a loss function `@X` whose gradient `@X_grad` exists (from
//! `autodiff`: it returns the loss, then one gradient per trainable argument
//! of `@X`), adds `@X_step`, which returns the loss and the updated
//! parameters, each written into the parameter's own buffer:
//! ```text
//! momentum = 0:  p' = p - lr * g
//! momentum = m:  v' = m * v + g;  p' = p - lr * v'     (PyTorch's SGD momentum)
//! ```
//! Signature: `@X_step(args of @X..., [v_i {ck.opt_state, ck.donate}...],
//! [%step {ck.step}]) -> (loss, p'_1.., [v'_1..])`. Trainable arguments get
//! `{ck.donate}` (the caller hands their buffers over, as JAX's
//! `donate_argnums`): the update op writes in place (`ck.inplace = 0`) into
//! the parameter's buffer, so updated parameters need no arena bytes and no
//! copy. Each update is placed right after its gradient is final and the
//! parameter's last other read, so gradient buffers die at once: the arena
//! of a step holds no gradients at the end, unlike `@X_grad`'s. When the
//! body has dropout ops, `@X_step` takes a rank-0 step key `%step`
//! `{ck.step}` that every dropout hashes into its mask (`ckopt_ir::random`):
//! masks differ per step, recomputation inside a step repeats them.
//!
//! Pipeline: after `autodiff` (and best after `inplace`), before `fuse`,
//! `remat` and `memplan`; remat treats the updates as backward ops.
//! Errors: `func=NAME` without `@NAME_grad`, a gradient function whose
//! results do not match `@X`'s trainable arguments, `@X_step` already there
//! with `func=NAME`, or a bad `lr`/`momentum`.
//! Invariants out: `@X_grad` untouched; `@X_step` verifies; running it on
//! the interpreter gives the loss of `@X_grad` and `p - lr * g` for each
//! parameter (bit for bit: the same ops in the same order).
//! Complexity: O(ops + values) per function.

use crate::autodiff::{GRAD_SUFFIX, grad_name};
use crate::manager::{Pass, PassOptions, Statistics};
use ckopt_ir::ops::{ATTR_DONATE, ATTR_INPLACE, ATTR_OPT_STATE, ATTR_PARAM, ATTR_STEP};
use ckopt_ir::{Attr, Attrs, Diag, Diags, Func, Loc, Module, Op, OpKind, TensorType, ValueId, attrs};

/// Suffix of the step function.
pub const STEP_SUFFIX: &str = "_step";

/// `@X_step` for `@X`.
pub fn step_name(name: &str) -> String {
    format!("{name}{STEP_SUFFIX}")
}

/// Options of the `sgd` pass.
#[derive(Clone, Debug, PartialEq)]
pub struct SgdOptions {
    pub lr: f32,
    pub momentum: f32,
    /// Only this loss function (default: every `@X` with an `@X_grad`).
    pub func: Option<String>,
}

/// The registry's defaults.
impl Default for SgdOptions {
    fn default() -> Self {
        parse_options(&PassOptions::new("sgd")).expect("the registry's defaults of sgd parse")
    }
}

/// Checks that `g` returns (loss, one gradient per trainable argument of `f`)
/// and takes `f`'s arguments: the contract of `autodiff`'s output that
/// training relies on.
pub fn check_grad_signature(f: &Func, g: &Func) -> Result<(), Diag> {
    let trained = f.trainable_indices();
    let ok = g.result_types.len() == 1 + trained.len()
        && g.result_types[0].rank() == 0
        && trained.iter().enumerate().all(|(k, &i)| g.result_types[1 + k] == *f.ty(f.params[i].value))
        && g.params.len() == f.params.len()
        && g.params.iter().zip(&f.params).all(|(a, b)| g.ty(a.value) == f.ty(b.value));
    if ok {
        Ok(())
    } else {
        Err(Diag::error(
            g.loc.clone(),
            format!(
                "@{} does not return (loss, gradient of each {{ck.param}} argument of @{}) for @{}'s arguments: it returns {} values; remove it or regenerate it with autodiff",
                g.name,
                f.name,
                f.name,
                g.result_types.len()
            ),
        ))
    }
}

/// Builds `@X_step` from `@X` and `@X_grad`.
pub fn build_step(f: &Func, g: &Func, opts: &SgdOptions) -> Result<Func, Diag> {
    check_grad_signature(f, g)?;
    let trained = f.trainable_indices();
    let mut s = g.clone();
    s.name = step_name(&f.name);
    let loc = g.loc.clone();
    let ret = s.body.pop().filter(|o| o.kind == OpKind::Return).ok_or_else(|| {
        Diag::error(loc.clone(), format!("@{} does not end with ck.return", g.name))
    })?;
    let loss = ret.operands[0];
    let grads: Vec<ValueId> = ret.operands[1..].to_vec();
    for &i in &trained {
        let p = &mut s.params[i].attrs;
        p.insert(ATTR_PARAM.into(), Attr::Unit);
        p.insert(ATTR_DONATE.into(), Attr::Unit);
    }
    let momentum = opts.momentum != 0.0;
    let moms: Vec<ValueId> = if momentum {
        trained
            .iter()
            .map(|&i| {
                let name = format!("{}_mom", s.name_of(s.params[i].value));
                let ty = s.ty(s.params[i].value).clone();
                let v = s.add_param(name, ty, false);
                let a = &mut s.params.last_mut().expect("just added").attrs;
                a.insert(ATTR_OPT_STATE.into(), Attr::Unit);
                a.insert(ATTR_DONATE.into(), Attr::Unit);
                v
            })
            .collect()
    } else {
        Vec::new()
    };
    // The step key for dropout masks.
    if s.body.iter().any(|o| o.kind == OpKind::Dropout && o.operands.len() == 1) {
        let key = s.add_param("step", TensorType::scalar(), false);
        s.params.last_mut().expect("just added").attrs.insert(ATTR_STEP.into(), Attr::Unit);
        for op in &mut s.body {
            if op.kind == OpKind::Dropout && op.operands.len() == 1 {
                op.operands.push(key);
            }
        }
    }
    // Where each update goes: after its gradient's definition and the last
    // read of the parameter (value-level, in the gradient body).
    let def = s.def_table();
    let mut last_read = vec![None::<usize>; s.values.len()];
    for (i, op) in s.body.iter().enumerate() {
        for &o in &op.operands {
            last_read[o.index()] = Some(i);
        }
    }
    let mut at: Vec<(usize, usize)> = Vec::with_capacity(trained.len()); // (insert after op index + 1, k)
    for (k, &i) in trained.iter().enumerate() {
        let p = s.params[i].value;
        let after = [def[grads[k].index()], last_read[p.index()], last_read[grads[k].index()]]
            .into_iter()
            .flatten()
            .max()
            .map_or(0, |x| x + 1);
        at.push((after, k));
    }
    at.sort();
    let old = std::mem::take(&mut s.body);
    let mut new_p = vec![ValueId(0); trained.len()];
    let mut new_m = vec![ValueId(0); moms.len()];
    let mut next = at.iter().peekable();
    for (pos, op) in old.into_iter().enumerate() {
        while let Some(&&(a, k)) = next.peek() {
            if a > pos {
                break;
            }
            next.next();
            update(&mut s, k, trained[k], grads[k], moms.get(k).copied(), opts, &ret.loc, &mut new_p, &mut new_m)?;
        }
        s.body.push(op);
    }
    for &(_, k) in next {
        update(&mut s, k, trained[k], grads[k], moms.get(k).copied(), opts, &ret.loc, &mut new_p, &mut new_m)?;
    }
    let mut outs = vec![loss];
    outs.extend(&new_p);
    outs.extend(&new_m);
    s.push_return(&outs, ret.loc.clone());
    s.attrs.clear();
    Ok(s)
}

/// Appends the update of trainable argument `i` (k-th) to `s.body`.
#[allow(clippy::too_many_arguments)]
fn update(
    s: &mut Func,
    k: usize,
    i: usize,
    g: ValueId,
    mom: Option<ValueId>,
    opts: &SgdOptions,
    loc: &Loc,
    new_p: &mut [ValueId],
    new_m: &mut [ValueId],
) -> Result<(), Diag> {
    let p = s.params[i].value;
    let pname = s.name_of(p).to_string();
    let inplace0 = || attrs([(ATTR_INPLACE, Attr::Int(0))]);
    let push = |s: &mut Func, kind: OpKind, ops: &[ValueId], a: Attrs, name: &str| -> Result<ValueId, Diag> {
        let op: Op = s.make_op(kind, ops, a, None, name, loc.clone())?;
        let r = op.result.ok_or_else(|| Diag::error(loc.clone(), "update op has no result"))?;
        s.body.push(op);
        Ok(r)
    };
    let dir = match mom {
        Some(v) => {
            let mut a = inplace0();
            a.insert("value".into(), Attr::F32(opts.momentum));
            let decayed = push(s, OpKind::Scale, &[v], a, &format!("{pname}_mom_decay"))?;
            let v2 = push(s, OpKind::Add, &[decayed, g], inplace0(), &format!("{pname}_mom_new"))?;
            new_m[k] = v2;
            v2
        }
        None => g,
    };
    let step = push(s, OpKind::Scale, &[dir], attrs([("value", Attr::F32(opts.lr))]), &format!("{pname}_lr_step"))?;
    new_p[k] = push(s, OpKind::Sub, &[p, step], inplace0(), &format!("{pname}_new"))?;
    Ok(())
}

/// Adds `@X_step` for every `@X` with an `@X_grad` (or only `opts.func`).
pub fn sgd(module: &mut Module, opts: &SgdOptions) -> Result<usize, Diags> {
    let targets: Vec<String> = match &opts.func {
        Some(name) => {
            let loc = module.funcs.first().map(|f| f.loc.clone()).unwrap_or_default();
            if module.func(name).is_none() || module.func(&grad_name(name)).is_none() {
                return Err(Diags::from(Diag::error(
                    loc,
                    format!("sgd: needs @{name} and its gradient @{} (run autodiff first)", grad_name(name)),
                )));
            }
            if module.func(&step_name(name)).is_some() {
                return Err(Diags::from(Diag::error(loc, format!("sgd: function @{} already exists", step_name(name)))));
            }
            vec![name.clone()]
        }
        None => module
            .funcs
            .iter()
            .filter(|f| !f.name.ends_with(GRAD_SUFFIX) && !f.name.ends_with(STEP_SUFFIX))
            .filter(|f| module.func(&grad_name(&f.name)).is_some() && module.func(&step_name(&f.name)).is_none())
            .map(|f| f.name.clone())
            .collect(),
    };
    let mut made = 0;
    for name in targets {
        let (Some(f), Some(g)) = (module.func(&name), module.func(&grad_name(&name))) else { continue };
        let step = build_step(f, g, opts).map_err(Diags::from)?;
        module.funcs.push(step);
        made += 1;
    }
    Ok(made)
}

struct SgdPass {
    opts: SgdOptions,
}

impl Pass for SgdPass {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        let n = sgd(module, &self.opts)?;
        stats.add("step-functions-added", n);
        Ok(())
    }
}

/// Reads the options; defaults and value checks (`lr` > 0, `momentum` in
/// [0, 1)) come from sgd's record in the registry.
pub fn parse_options(o: &PassOptions) -> Result<SgdOptions, crate::manager::OptionError> {
    Ok(SgdOptions { lr: o.number_f32("lr")?, momentum: o.number_f32("momentum")?, func: o.func_name("func")? })
}

pub fn build(o: &PassOptions) -> Result<Box<dyn Pass>, crate::manager::OptionError> {
    Ok(Box::new(SgdPass { opts: parse_options(o)? }))
}
