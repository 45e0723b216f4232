//! Evaluation: the mean loss over a dataset's full batches, and accuracy
//! when ckopt can tell which value holds the class scores.
//!
//! How ckopt tells (`eval_function`), in this order:
//! 1. the function returns a second result of shape `[B, K]` (logits) and
//!    has a non-parameter argument of the same shape (one-hot targets);
//! 2. the loss is `cross_entropy(LOGITS, LABELS)` (integer labels),
//!    optionally scaled (`scale(cross_entropy(..))`), where
//!    `LABELS` is a non-parameter integer argument or a reshape of one
//!    (`ckopt-gen gpt` flattens `[B, S]` labels to `[B·S]`): the scores are
//!    `LOGITS` `[N, K]`, one row per label; rows whose label is the op's
//!    `ignore_index` are not counted, as the loss does not count them;
//! 3. the loss is a softmax cross-entropy over classes written out,
//!    `loss = scale(reduce_sum(mul(T, LOGP)))` (either operand order) where
//!    `T` is a rank-2 `[B, K]` non-parameter argument (one-hot targets) and
//!    `LOGP` is `sub(S, broadcast(log(...)))` (log-softmax): what
//!    `ckopt-gen`'s classifiers (`resnet`) produce.
//!
//! Then accuracy = the fraction of counted rows whose highest score's class
//! is the target's (one-hot: the target's highest; argmax, first on ties).
//! `@NAME_eval` is `@NAME` returning (loss, scores).

use ckopt_interp::{StepExec, Tensor};
use ckopt_ir::{Func, OpKind, ValueId};

use crate::data::Dataset;

/// Where an evaluation finds the true class of each row of the scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A `[B, K]` one-hot argument (its highest entry is the class).
    OneHot(usize),
    /// An integer argument holding one class per row of the `[N, K]`
    /// scores (flattened in row-major order); rows labelled
    /// `ignore_index` are not counted.
    Labels { arg: usize, ignore_index: i64 },
}

impl Target {
    /// The data argument holding the classes.
    pub fn arg(self) -> usize {
        match self {
            Target::OneHot(a) | Target::Labels { arg: a, .. } => a,
        }
    }
}

/// `e` returning its loss and `scores` (the value holding the class scores).
fn returning_scores(f: &Func, mut e: Func, scores: ValueId) -> Func {
    let ty = f.ty(scores).clone();
    if let Some(r) = e.body.last_mut() {
        r.operands.truncate(1);
        r.operands.push(scores);
    }
    e.result_types.truncate(1);
    e.result_types.push(ty);
    e
}

/// `@NAME_eval` for `f` and where its classes are (`None`: no accuracy,
/// the function is `f` itself renamed).
pub fn eval_function(f: &Func, params: &[usize]) -> (Func, Option<Target>) {
    let mut e = f.clone();
    e.name = format!("{}_eval", f.name);
    e.attrs.clear();
    let def = f.def_table();
    let op_of = |v: ValueId| def[v.index()].map(|i| &f.body[i]);
    let arg_index = |v: ValueId| f.params.iter().position(|p| p.value == v).filter(|i| !params.contains(i));
    let rank2 = |v: ValueId| f.ty(v).rank() == 2;
    // 1. A second result of shape [B, K] beside [B, K] targets.
    if let Some(&scores) = f.returned().get(1)
        && rank2(scores)
        && let Some(t) = (0..f.params.len()).find(|i| !params.contains(i) && f.ty(f.params[*i].value) == f.ty(scores))
    {
        return (e, Some(Target::OneHot(t)));
    }
    // 2. cross_entropy with integer labels.
    let labels = (|| {
        let mut loss = op_of(*f.returned().first()?)?;
        if loss.kind == OpKind::Scale {
            loss = op_of(loss.operands[0])?;
        }
        if loss.kind != OpKind::CrossEntropy || loss.operands.len() != 2 || !rank2(loss.operands[0]) {
            return None;
        }
        let mut l = loss.operands[1];
        if let Some(r) = op_of(l).filter(|o| o.kind == OpKind::Reshape) {
            l = r.operands[0];
        }
        let arg = arg_index(l).filter(|&a| f.ty(f.params[a].value).dtype.is_integer())?;
        Some((loss.operands[0], Target::Labels { arg, ignore_index: ckopt_ir::mixed::ignore_index(&loss.attrs) }))
    })();
    if let Some((logits, t)) = labels {
        return (returning_scores(f, e, logits), Some(t));
    }
    // 3. The written-out softmax cross-entropy pattern.
    let found = (|| {
        let loss = *f.returned().first()?;
        let sc = op_of(loss).filter(|o| o.kind == OpKind::Scale)?;
        let rs = op_of(sc.operands[0]).filter(|o| o.kind == OpKind::ReduceSum)?;
        let mul = op_of(rs.operands[0]).filter(|o| o.kind == OpKind::Mul)?;
        let (a, b) = (mul.operands[0], mul.operands[1]);
        let (t, logp) = match (arg_index(a), arg_index(b)) {
            (Some(t), None) => (t, b),
            (None, Some(t)) => (t, a),
            _ => return None,
        };
        if !rank2(logp) || f.ty(logp) != f.ty(f.params[t].value) {
            return None;
        }
        let sub = op_of(logp).filter(|o| o.kind == OpKind::Sub)?;
        let bc = op_of(sub.operands[1]).filter(|o| o.kind == OpKind::Broadcast)?;
        op_of(bc.operands[0]).filter(|o| o.kind == OpKind::Log)?;
        Some((t, logp))
    })();
    match found {
        Some((t, logp)) => (returning_scores(f, e, logp), Some(Target::OneHot(t))),
        None => (e, None),
    }
}

/// What one evaluation measured.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalResult {
    pub step: usize,
    pub loss: f64,
    pub accuracy: Option<f64>,
    pub examples: usize,
}

/// An evaluation function on its own executor with its dataset.
pub struct Evaluator {
    pub exec: Box<dyn StepExec>,
    pub data: Dataset,
    /// Argument indices of the parameters (copied in from training).
    pub params: Vec<usize>,
    /// Where the classes are, when accuracy is measured.
    pub target: Option<Target>,
}

fn argmax(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in row.iter().enumerate() {
        if x > row[best] {
            best = i;
        }
    }
    best
}

/// (rows whose argmax is their class, rows counted) of one batch's scores.
fn hits(scores: &Tensor, target: &Tensor, how: Target) -> (usize, usize) {
    let k = scores.shape.get(1).copied().unwrap_or(1).max(1);
    let rows = scores.data.len() / k;
    let row = |r: usize| &scores.data[r * k..(r + 1) * k];
    match how {
        Target::OneHot(_) => {
            let n = rows.min(target.data.len() / k);
            ((0..n).filter(|&r| argmax(row(r)) == argmax(&target.data[r * k..(r + 1) * k])).count(), n)
        }
        Target::Labels { ignore_index, .. } => {
            let counted: Vec<(usize, i64)> =
                target.ints.iter().take(rows).copied().enumerate().filter(|&(_, l)| l != ignore_index).collect();
            (counted.iter().filter(|&&(r, l)| argmax(row(r)) as i64 == l).count(), counted.len())
        }
    }
}

impl Evaluator {
    /// Evaluates with the parameters of `train` (argument `i` of the
    /// training executor for each `i` in `params`). The parameters are
    /// lent, not copied, when both executors can (`StepExec::take_arg`: the
    /// interpreter and cpu), so evaluation holds no second copy of them;
    /// they are back in `train` when this returns, error or not.
    pub fn run(&mut self, train: &mut dyn StepExec, step: usize) -> Result<EvalResult, String> {
        let mut lent = Vec::new();
        let mut copied = Ok(());
        for i in self.params.clone() {
            match train.take_arg(i).map(|b| self.exec.put_arg(i, b)) {
                Some(Ok(())) => lent.push(i),
                Some(Err(b)) => {
                    if train.put_arg(i, b).is_err() {
                        copied = Err(format!("evaluation: parameter {i} could not be given back"));
                        break;
                    }
                    copied = self.copy_param(train, i);
                }
                None => copied = self.copy_param(train, i),
            }
            if copied.is_err() {
                break;
            }
        }
        let r = copied.and_then(|()| self.batches(step));
        for i in lent {
            let back = self.exec.take_arg(i).map(|b| train.put_arg(i, b));
            if !matches!(back, Some(Ok(()))) {
                return Err(format!("evaluation: parameter {i} could not be given back to the training step"));
            }
        }
        r
    }

    fn copy_param(&mut self, train: &dyn StepExec, i: usize) -> Result<(), String> {
        let t = train.arg(i).ok_or_else(|| format!("no parameter {i}"))?;
        self.exec.set_arg(i, &t).map_err(|d| d.message)
    }

    fn batches(&mut self, step: usize) -> Result<EvalResult, String> {
        let (mut sum, mut n, mut hit, mut counted, mut batches) = (0.0f64, 0usize, 0usize, 0usize, 0usize);
        for batch in self.data.eval_batches() {
            let mut target: Option<Tensor> = None;
            for (i, t) in &batch {
                self.exec.set_arg(*i, t).map_err(|d| d.message)?;
                if Some(*i) == self.target.map(Target::arg) {
                    target = Some(t.clone());
                }
            }
            self.exec.run().map_err(|d| d.message)?;
            let loss = self.exec.result(0).and_then(|t| t.item()).ok_or("no loss")?;
            sum += loss as f64;
            batches += 1;
            n += self.data.batch_size();
            if let (Some(how), Some(t), Some(scores)) = (self.target, target, self.exec.result(1)) {
                let (h, c) = hits(&scores, &t, how);
                hit += h;
                counted += c;
            }
        }
        let loss = if batches > 0 { sum / batches as f64 } else { f64::NAN };
        Ok(EvalResult { step, loss, accuracy: self.target.map(|_| hit as f64 / counted.max(1) as f64), examples: n })
    }
}
