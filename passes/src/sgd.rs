//! `sgd{lr momentum clip_norm func}` and `adamw{lr beta1 beta2 eps
//! weight_decay clip_norm func}`: the training step as IR (defaults in the
//! registry).
//!
//! What: for a loss function `@X` whose gradient `@X_grad` exists (from
//! `autodiff`: it returns the loss, then one gradient per trainable argument
//! of `@X`), adds `@X_step`, which returns the loss and the updated
//! parameters (then the updated optimizer state), each written into the
//! argument's own buffer:
//! ```text
//! sgd, momentum = 0 (at build):  p' = p - lr*g
//! sgd, momentum > 0:             v' = momentum*v + g;  p' = p - lr*v'   (PyTorch's SGD)
//! adamw (PyTorch's AdamW):       p1 = p*(1 - lr*wd)
//!                                m' = beta1*m + (1-beta1)*g
//!                                v' = beta2*v + (1-beta2)*g*g
//!                                p' = p1 - (lr/bc1) * m' / (sqrt(v')/sqrt(bc2) + eps)
//! clip_norm > 0 (at build):      g <- g * (C / max(||g||, C)), ||g|| over all gradients
//! ```
//! Hyperparameters are INPUTS: every figure of the rule (`lr`, `momentum`,
//! `beta1`, `beta2`, `eps`, `weight_decay`, `clip_norm`, and adamw's bias
//! corrections `bc1 = 1 - beta1^t`, `bc2 = 1 - beta2^t` of step `t`) is a
//! rank-0 f32 argument marked `{ck.hyper = "NAME", ck.hyper_default = V}`,
//! which the trainer sets before each step (`ckopt_passes::train::Hyper`);
//! the pass options only give the defaults. So a learning rate given at
//! run time, or a schedule, always applies. The structure is fixed at
//! build: momentum state exists when `momentum > 0`, clipping when
//! `clip_norm > 0`.
//!
//! Signature: `@X_step(args of @X..., [state {ck.opt_state, ck.donate}...],
//! [%step {ck.step}], hyper args...) -> (loss, p'_1.., state'..)`; sgd's
//! state is one velocity per parameter, adamw's the first moments of all
//! parameters then the second moments. Trainable arguments get
//! `{ck.donate}` (the caller hands their buffers over, as JAX's
//! `donate_argnums`): the update ops write in place (`ck.inplace = 0`) into
//! the parameter's (state's) buffer, so updated values need no arena bytes
//! and no copy. Without clipping each update is placed right after its
//! gradient is final and the parameter's last other read, so gradient
//! buffers die at once: the arena of a step holds no gradients at the end.
//! With clipping the updates wait for the global norm, so all gradients are
//! live together (what global-norm clipping costs anywhere). When the body
//! has dropout ops, `@X_step` takes a rank-0 step key `%step` `{ck.step}`
//! that every dropout hashes into its mask (`ckopt_ir::random`).
//!
//! Pipeline: after `autodiff` (and best after `inplace`), before `fuse`,
//! `remat` and `memplan`; remat treats the updates as backward ops.
//! Errors: `func=NAME` without `@NAME_grad`, a gradient function whose
//! results do not match `@X`'s trainable arguments, `@X_step` already there
//! with `func=NAME`, or a bad option value.
//! Invariants out: `@X_grad` untouched; `@X_step` verifies; on the
//! interpreter sgd gives the loss of `@X_grad` and `p - lr*g` bit for bit.
//! Complexity: O(ops + values) per function.

use crate::autodiff::{GRAD_SUFFIX, grad_name};
use crate::manager::{Pass, PassOptions, Statistics};
use ckopt_ir::ops::{ATTR_DONATE, ATTR_HYPER, ATTR_HYPER_DEFAULT, ATTR_INPLACE, ATTR_OPT_STATE, ATTR_PARAM, ATTR_STEP};
use ckopt_ir::{Attr, Attrs, Diag, Diags, Func, Loc, Module, OpKind, TensorType, ValueId, attrs};

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
    /// Global-norm clipping threshold; 0: no clipping.
    pub clip_norm: f32,
    /// Only this loss function (default: every `@X` with an `@X_grad`).
    pub func: Option<String>,
}

/// The registry's defaults.
impl Default for SgdOptions {
    fn default() -> Self {
        parse_options(&PassOptions::new("sgd")).expect("the registry's defaults of sgd parse")
    }
}

/// Options of the `adamw` pass.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamWOptions {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub weight_decay: f32,
    /// Global-norm clipping threshold; 0: no clipping.
    pub clip_norm: f32,
    pub func: Option<String>,
}

impl Default for AdamWOptions {
    fn default() -> Self {
        parse_adamw_options(&PassOptions::new("adamw")).expect("the registry's defaults of adamw parse")
    }
}

/// The update rule of a step function.
#[derive(Clone, Debug, PartialEq)]
pub enum StepRule {
    Sgd(SgdOptions),
    AdamW(AdamWOptions),
}

impl Default for StepRule {
    fn default() -> Self {
        StepRule::Sgd(SgdOptions::default())
    }
}

impl StepRule {
    pub fn func(&self) -> Option<&String> {
        match self {
            StepRule::Sgd(o) => o.func.as_ref(),
            StepRule::AdamW(o) => o.func.as_ref(),
        }
    }
    fn pass_name(&self) -> &'static str {
        match self {
            StepRule::Sgd(_) => "sgd",
            StepRule::AdamW(_) => "adamw",
        }
    }
    fn clip_norm(&self) -> f32 {
        match self {
            StepRule::Sgd(o) => o.clip_norm,
            StepRule::AdamW(o) => o.clip_norm,
        }
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

/// Emits ops into a step function's body.
struct Emit<'a> {
    s: &'a mut Func,
    loc: Loc,
}

impl Emit<'_> {
    fn op(&mut self, kind: OpKind, ops: &[ValueId], a: Attrs, ty: Option<TensorType>, name: &str) -> Result<ValueId, Diag> {
        let op = self.s.make_op(kind, ops, a, ty, name, self.loc.clone())?;
        let r = op.result.ok_or_else(|| Diag::error(self.loc.clone(), "update op has no result"))?;
        self.s.body.push(op);
        Ok(r)
    }
    fn bin(&mut self, kind: OpKind, a: ValueId, b: ValueId, inplace: bool, name: &str) -> Result<ValueId, Diag> {
        let at = if inplace { attrs([(ATTR_INPLACE, Attr::Int(0))]) } else { Attrs::new() };
        self.op(kind, &[a, b], at, None, name)
    }
    fn un(&mut self, kind: OpKind, a: ValueId, name: &str) -> Result<ValueId, Diag> {
        self.op(kind, &[a], Attrs::new(), None, name)
    }
    /// A rank-0 value broadcast to `like`'s shape (`like` itself when rank 0).
    fn splat(&mut self, x: ValueId, like: ValueId, name: &str) -> Result<ValueId, Diag> {
        let ty = self.s.ty(like).clone();
        if ty.rank() == 0 {
            return Ok(x);
        }
        self.op(OpKind::Broadcast, &[x], attrs([("dims", Attr::IntArray(Vec::new()))]), Some(ty), name)
    }
}

/// The hyperparameter arguments of a step (argument values, by name).
struct Hypers(Vec<(&'static str, ValueId)>);

impl Hypers {
    fn get(&self, name: &str) -> ValueId {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).unwrap_or(ValueId(0))
    }
}

fn add_hyper(s: &mut Func, name: &'static str, default: f32) -> ValueId {
    let v = s.add_param(format!("hyper_{name}"), TensorType::scalar(), false);
    let a = &mut s.params.last_mut().expect("just added").attrs;
    a.insert(ATTR_HYPER.into(), Attr::Str(name.into()));
    a.insert(ATTR_HYPER_DEFAULT.into(), Attr::F32(default));
    v
}

/// Builds `@X_step` from `@X` and `@X_grad` with SGD.
pub fn build_step(f: &Func, g: &Func, opts: &SgdOptions) -> Result<Func, Diag> {
    build_step_rule(f, g, &StepRule::Sgd(opts.clone()))
}

/// Builds `@X_step` from `@X` and `@X_grad` with `rule`.
pub fn build_step_rule(f: &Func, g: &Func, rule: &StepRule) -> Result<Func, Diag> {
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
    let add_state = |s: &mut Func, suffix: &str| -> Vec<ValueId> {
        trained
            .iter()
            .map(|&i| {
                let name = format!("{}_{suffix}", s.name_of(s.params[i].value));
                let ty = s.ty(s.params[i].value).clone();
                let v = s.add_param(name, ty, false);
                let a = &mut s.params.last_mut().expect("just added").attrs;
                a.insert(ATTR_OPT_STATE.into(), Attr::Unit);
                a.insert(ATTR_DONATE.into(), Attr::Unit);
                v
            })
            .collect()
    };
    // Optimizer state: sgd's velocities; adamw's first then second moments.
    let state: Vec<Vec<ValueId>> = match rule {
        StepRule::Sgd(o) if o.momentum != 0.0 => vec![add_state(&mut s, "mom")],
        StepRule::Sgd(_) => Vec::new(),
        StepRule::AdamW(_) => vec![add_state(&mut s, "m"), add_state(&mut s, "v")],
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
    // The hyperparameter inputs.
    let mut hy: Vec<(&'static str, ValueId)> = Vec::new();
    match rule {
        StepRule::Sgd(o) => {
            hy.push(("lr", add_hyper(&mut s, "lr", o.lr)));
            if o.momentum != 0.0 {
                hy.push(("momentum", add_hyper(&mut s, "momentum", o.momentum)));
            }
        }
        StepRule::AdamW(o) => {
            for (n, d) in [
                ("lr", o.lr),
                ("beta1", o.beta1),
                ("beta2", o.beta2),
                ("eps", o.eps),
                ("weight_decay", o.weight_decay),
                ("bias_correction1", 1.0 - o.beta1),
                ("bias_correction2", 1.0 - o.beta2),
            ] {
                hy.push((n, add_hyper(&mut s, n, d)));
            }
        }
    }
    let clip = rule.clip_norm() > 0.0;
    if clip {
        hy.push(("clip_norm", add_hyper(&mut s, "clip_norm", rule.clip_norm())));
    }
    let hypers = Hypers(hy);
    // Where each update goes: after its gradient's definition and the last
    // read of the parameter (value-level, in the gradient body); with
    // clipping, all after the last gradient.
    let def = s.def_table();
    let mut last_read = vec![None::<usize>; s.values.len()];
    for (i, op) in s.body.iter().enumerate() {
        for &o in &op.operands {
            last_read[o.index()] = Some(i);
        }
    }
    let mut at: Vec<(usize, usize)> = Vec::with_capacity(trained.len()); // (insert before op index, k)
    for (k, &i) in trained.iter().enumerate() {
        let p = s.params[i].value;
        let after = [def[grads[k].index()], last_read[p.index()], last_read[grads[k].index()]]
            .into_iter()
            .flatten()
            .max()
            .map_or(0, |x| x + 1);
        at.push((after, k));
    }
    if clip {
        let last = at.iter().map(|a| a.0).max().unwrap_or(0);
        for a in &mut at {
            a.0 = last;
        }
    }
    at.sort();
    let old = std::mem::take(&mut s.body);
    let n_old = old.len();
    let mut u = Updater { trained: &trained, grads: grads.clone(), state: &state, rule, hypers: &hypers, scalars: None, new: Vec::new() };
    u.new = vec![vec![ValueId(0); trained.len()]; 1 + state.len()];
    let mut e = Emit { s: &mut s, loc: ret.loc.clone() };
    let mut next = at.iter().peekable();
    for (pos, op) in old.into_iter().enumerate() {
        while let Some(&&(a, k)) = next.peek() {
            if a > pos {
                break;
            }
            next.next();
            u.update(&mut e, k, clip)?;
        }
        e.s.body.push(op);
    }
    let _ = n_old;
    for &(_, k) in next {
        u.update(&mut e, k, clip)?;
    }
    let mut outs = vec![loss];
    for row in &u.new {
        outs.extend(row);
    }
    s.push_return(&outs, ret.loc.clone());
    s.attrs.clear();
    Ok(s)
}

/// Emits the updates, one parameter at a time.
struct Updater<'a> {
    trained: &'a [usize],
    grads: Vec<ValueId>,
    state: &'a [Vec<ValueId>],
    rule: &'a StepRule,
    hypers: &'a Hypers,
    /// Rank-0 values computed once, at the first update (adamw: 1-beta1,
    /// 1-beta2, 1-lr*wd, lr/bc1, sqrt(bc2); clipping: the factor).
    scalars: Option<Vec<ValueId>>,
    /// New parameters, then each state row.
    new: Vec<Vec<ValueId>>,
}

impl Updater<'_> {
    fn first(&mut self, e: &mut Emit, clip: bool) -> Result<Vec<ValueId>, Diag> {
        if let Some(v) = &self.scalars {
            return Ok(v.clone());
        }
        let mut out = Vec::new();
        if clip {
            // ||g|| over all gradients; factor = C / max(||g||, C) (1 when within).
            let mut total = None;
            for (k, &g) in self.grads.clone().iter().enumerate() {
                let sq = e.bin(OpKind::Mul, g, g, false, &format!("clip_sq{k}"))?;
                let rank = e.s.ty(g).rank() as i64;
                let ss = e.op(OpKind::ReduceSum, &[sq], attrs([("dims", Attr::IntArray((0..rank).collect()))]), None, &format!("clip_ss{k}"))?;
                total = Some(match total {
                    None => ss,
                    Some(t) => e.bin(OpKind::Add, t, ss, false, "clip_total")?,
                });
            }
            let c = self.hypers.get("clip_norm");
            let total = total.unwrap_or(c);
            let norm = e.un(OpKind::Sqrt, total, "clip_global_norm")?;
            let m = e.bin(OpKind::Max, norm, c, false, "clip_max")?;
            let factor = e.bin(OpKind::Div, c, m, false, "clip_factor")?;
            for k in 0..self.grads.len() {
                let g = self.grads[k];
                let fb = e.splat(factor, g, &format!("clip_factor_b{k}"))?;
                self.grads[k] = e.bin(OpKind::Mul, g, fb, false, &format!("clip_g{k}"))?;
            }
        }
        if let StepRule::AdamW(_) = self.rule {
            let h = |n: &str| self.hypers.get(n);
            let one = e.op(OpKind::Fill, &[], attrs([("value", Attr::F32(1.0))]), Some(TensorType::scalar()), "adam_one")?;
            let a1 = e.bin(OpKind::Sub, one, h("beta1"), false, "adam_1mb1")?;
            let a2 = e.bin(OpKind::Sub, one, h("beta2"), false, "adam_1mb2")?;
            let lrwd = e.bin(OpKind::Mul, h("lr"), h("weight_decay"), false, "adam_lrwd")?;
            let decay = e.bin(OpKind::Sub, one, lrwd, false, "adam_decay")?;
            let step_size = e.bin(OpKind::Div, h("lr"), h("bias_correction1"), false, "adam_step_size")?;
            let sbc2 = e.un(OpKind::Sqrt, h("bias_correction2"), "adam_sqrt_bc2")?;
            out = vec![a1, a2, decay, step_size, sbc2];
        }
        self.scalars = Some(out.clone());
        Ok(out)
    }

    /// Appends the update of the k-th trained argument.
    fn update(&mut self, e: &mut Emit, k: usize, clip: bool) -> Result<(), Diag> {
        let sc = self.first(e, clip)?;
        let g = self.grads[k];
        let p = e.s.params[self.trained[k]].value;
        let pn = e.s.name_of(p).to_string();
        let h = |n: &str| self.hypers.get(n);
        match self.rule {
            StepRule::Sgd(_) => {
                let dir = match self.state.first() {
                    Some(row) => {
                        let v = row[k];
                        let mb = e.splat(h("momentum"), v, &format!("{pn}_momentum"))?;
                        let decayed = e.bin(OpKind::Mul, v, mb, true, &format!("{pn}_mom_decay"))?;
                        let v2 = e.bin(OpKind::Add, decayed, g, true, &format!("{pn}_mom_new"))?;
                        self.new[1][k] = v2;
                        v2
                    }
                    None => g,
                };
                let lrb = e.splat(h("lr"), p, &format!("{pn}_lr"))?;
                let step = e.bin(OpKind::Mul, dir, lrb, false, &format!("{pn}_lr_step"))?;
                self.new[0][k] = e.bin(OpKind::Sub, p, step, true, &format!("{pn}_new"))?;
            }
            StepRule::AdamW(_) => {
                let (a1, a2, decay, step_size, sbc2) = (sc[0], sc[1], sc[2], sc[3], sc[4]);
                let (m, v) = (self.state[0][k], self.state[1][k]);
                let b = |e: &mut Emit, x: ValueId, n: &str| e.splat(x, p, &format!("{pn}_{n}"));
                let decay_b = b(e, decay, "decay")?;
                let p1 = e.bin(OpKind::Mul, p, decay_b, true, &format!("{pn}_decayed"))?;
                let b1 = b(e, h("beta1"), "beta1")?;
                let m1 = e.bin(OpKind::Mul, m, b1, true, &format!("{pn}_m_decay"))?;
                let a1b = b(e, a1, "1mb1")?;
                let ga = e.bin(OpKind::Mul, g, a1b, false, &format!("{pn}_m_g"))?;
                let m2 = e.bin(OpKind::Add, m1, ga, true, &format!("{pn}_m_new"))?;
                let b2 = b(e, h("beta2"), "beta2")?;
                let v1 = e.bin(OpKind::Mul, v, b2, true, &format!("{pn}_v_decay"))?;
                let gg = e.bin(OpKind::Mul, g, g, false, &format!("{pn}_g2"))?;
                let a2b = b(e, a2, "1mb2")?;
                let gga = e.bin(OpKind::Mul, gg, a2b, false, &format!("{pn}_v_g"))?;
                let v2 = e.bin(OpKind::Add, v1, gga, true, &format!("{pn}_v_new"))?;
                let sq = e.un(OpKind::Sqrt, v2, &format!("{pn}_v_sqrt"))?;
                let sb = b(e, sbc2, "sqrt_bc2")?;
                let den0 = e.bin(OpKind::Div, sq, sb, false, &format!("{pn}_v_hat"))?;
                let epsb = b(e, h("eps"), "eps")?;
                let den = e.bin(OpKind::Add, den0, epsb, false, &format!("{pn}_denom"))?;
                let ratio = e.bin(OpKind::Div, m2, den, false, &format!("{pn}_ratio"))?;
                let ssb = b(e, step_size, "step_size")?;
                let upd = e.bin(OpKind::Mul, ratio, ssb, false, &format!("{pn}_update"))?;
                self.new[0][k] = e.bin(OpKind::Sub, p1, upd, true, &format!("{pn}_new"))?;
                self.new[1][k] = m2;
                self.new[2][k] = v2;
            }
        }
        Ok(())
    }
}

/// Adds `@X_step` for every `@X` with an `@X_grad` (or only `rule.func()`).
pub fn add_steps(module: &mut Module, rule: &StepRule) -> Result<usize, Diags> {
    let pass = rule.pass_name();
    let targets: Vec<String> = match rule.func() {
        Some(name) => {
            let loc = module.funcs.first().map(|f| f.loc.clone()).unwrap_or_default();
            if module.func(name).is_none() || module.func(&grad_name(name)).is_none() {
                return Err(Diags::from(Diag::error(
                    loc,
                    format!("{pass}: needs @{name} and its gradient @{} (run autodiff first)", grad_name(name)),
                )));
            }
            if module.func(&step_name(name)).is_some() {
                return Err(Diags::from(Diag::error(loc, format!("{pass}: function @{} already exists", step_name(name)))));
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
        let step = build_step_rule(f, g, rule).map_err(Diags::from)?;
        module.funcs.push(step);
        made += 1;
    }
    Ok(made)
}

/// `sgd`: adds `@X_step` for every `@X` with an `@X_grad` (or only `opts.func`).
pub fn sgd(module: &mut Module, opts: &SgdOptions) -> Result<usize, Diags> {
    add_steps(module, &StepRule::Sgd(opts.clone()))
}

/// `adamw`: as `sgd`, with the AdamW rule.
pub fn adamw(module: &mut Module, opts: &AdamWOptions) -> Result<usize, Diags> {
    add_steps(module, &StepRule::AdamW(opts.clone()))
}

struct StepPass {
    rule: StepRule,
}

impl Pass for StepPass {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        let n = add_steps(module, &self.rule)?;
        stats.add("step-functions-added", n);
        Ok(())
    }
}

/// Reads the options; defaults and value checks (`lr` > 0, `momentum` in
/// [0, 1)) come from sgd's record in the registry.
pub fn parse_options(o: &PassOptions) -> Result<SgdOptions, crate::manager::OptionError> {
    Ok(SgdOptions {
        lr: o.number_f32("lr")?,
        momentum: o.number_f32("momentum")?,
        clip_norm: o.number_f32("clip_norm")?,
        func: o.func_name("func")?,
    })
}

/// adamw's options (defaults and checks from its record in the registry).
pub fn parse_adamw_options(o: &PassOptions) -> Result<AdamWOptions, crate::manager::OptionError> {
    Ok(AdamWOptions {
        lr: o.number_f32("lr")?,
        beta1: o.number_f32("beta1")?,
        beta2: o.number_f32("beta2")?,
        eps: o.number_f32("eps")?,
        weight_decay: o.number_f32("weight_decay")?,
        clip_norm: o.number_f32("clip_norm")?,
        func: o.func_name("func")?,
    })
}

pub fn build(o: &PassOptions) -> Result<Box<dyn Pass>, crate::manager::OptionError> {
    Ok(Box::new(StepPass { rule: StepRule::Sgd(parse_options(o)?) }))
}

pub fn build_adamw(o: &PassOptions) -> Result<Box<dyn Pass>, crate::manager::OptionError> {
    Ok(Box::new(StepPass { rule: StepRule::AdamW(parse_adamw_options(o)?) }))
}
