//! Evaluation: the mean loss over a dataset's full batches, and accuracy
//! when ckopt can tell which value holds the class scores.
//!
//! How ckopt tells (`eval_function`): either
//! 1. the loss is a softmax cross-entropy over classes, written as
//!    `loss = scale(reduce_sum(mul(T, LOGP)))` (either operand order) where
//!    `T` is a rank-2 `[B, K]` non-parameter argument (one-hot targets) and
//!    `LOGP` is `sub(S, broadcast(log(...)))` (log-softmax): what
//!    `ckopt-gen`'s classifiers produce; or
//! 2. the function returns a second result of shape `[B, K]` (logits) and
//!    has a non-parameter argument of the same shape (one-hot targets).
//! Then accuracy = the fraction of examples whose highest score's class is
//! the target's highest (argmax, first on ties). `@NAME_eval` is `@NAME`
//! returning (loss, scores).

use ckopt_interp::{StepExec, Tensor};
use ckopt_ir::{Func, OpKind, ValueId};

use crate::data::Dataset;

/// `@NAME_eval` for `f` and the argument holding the one-hot targets
/// (`None`: no accuracy, the function is `f` itself renamed).
pub fn eval_function(f: &Func, params: &[usize]) -> (Func, Option<usize>) {
    let mut e = f.clone();
    e.name = format!("{}_eval", f.name);
    e.attrs.clear();
    let def = f.def_table();
    let op_of = |v: ValueId| def[v.index()].map(|i| &f.body[i]);
    let arg_index = |v: ValueId| f.params.iter().position(|p| p.value == v).filter(|i| !params.contains(i));
    let rank2 = |v: ValueId| f.ty(v).rank() == 2;
    // 2. A second result of shape [B, K] beside [B, K] targets.
    if let Some(&scores) = f.returned().get(1)
        && rank2(scores)
        && let Some(t) = (0..f.params.len()).find(|i| !params.contains(i) && f.ty(f.params[*i].value) == f.ty(scores))
    {
        return (e, Some(t));
    }
    // 1. The cross-entropy pattern.
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
        Some((t, logp)) => {
            let ty = f.ty(logp).clone();
            if let Some(r) = e.body.last_mut() {
                r.operands.truncate(1);
                r.operands.push(logp);
            }
            e.result_types.truncate(1);
            e.result_types.push(ty);
            (e, Some(t))
        }
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
    /// The one-hot target argument, when accuracy is measured.
    pub target: Option<usize>,
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

impl Evaluator {
    /// Evaluates with the parameters of `train` (argument `i` of the
    /// training executor for each `i` in `params`).
    pub fn run(&mut self, train: &dyn StepExec, step: usize) -> Result<EvalResult, String> {
        for &i in &self.params {
            let t = train.arg(i).ok_or_else(|| format!("no parameter {i}"))?;
            self.exec.set_arg(i, &t).map_err(|d| d.message)?;
        }
        let (mut sum, mut n, mut hits, mut batches) = (0.0f64, 0usize, 0usize, 0usize);
        for batch in self.data.eval_batches() {
            let mut target: Option<Tensor> = None;
            for (i, t) in &batch {
                self.exec.set_arg(*i, t).map_err(|d| d.message)?;
                if Some(*i) == self.target {
                    target = Some(t.clone());
                }
            }
            self.exec.run().map_err(|d| d.message)?;
            let loss = self.exec.result(0).and_then(|t| t.item()).ok_or("no loss")?;
            sum += loss as f64;
            batches += 1;
            let b = self.data.batch_size();
            n += b;
            if let (Some(t), Some(scores)) = (target, self.exec.result(1).filter(|_| self.target.is_some())) {
                let k = scores.shape.get(1).copied().unwrap_or(1).max(1);
                for r in 0..b {
                    if argmax(&scores.data[r * k..(r + 1) * k]) == argmax(&t.data[r * k..(r + 1) * k]) {
                        hits += 1;
                    }
                }
            }
        }
        let loss = if batches > 0 { sum / batches as f64 } else { f64::NAN };
        Ok(EvalResult { step, loss, accuracy: self.target.map(|_| hits as f64 / n.max(1) as f64), examples: n })
    }
}
