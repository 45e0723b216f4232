//! Which part of a training step each op belongs to.
//!
//! `Recompute`: ops marked `ck.recompute` (inserted by remat).
//! `Forward`: the other ops the first result (the loss) depends on.
//! `Backward`: everything else (gradient ops). A function that returns only
//! its loss is all forward. O(ops).

use ckopt_ir::{Func, ops::ATTR_RECOMPUTE};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Forward,
    Backward,
    Recompute,
}

pub fn op_phases(f: &Func) -> Vec<Phase> {
    let def = f.def_table();
    let mut needed = vec![false; f.body.len()];
    let mut stack: Vec<usize> = f.returned().first().and_then(|v| def[v.index()]).into_iter().collect();
    while let Some(i) = stack.pop() {
        if needed[i] {
            continue;
        }
        needed[i] = true;
        for o in &f.body[i].operands {
            if let Some(d) = def[o.index()]
                && !needed[d]
            {
                stack.push(d);
            }
        }
    }
    f.body
        .iter()
        .enumerate()
        .map(|(i, op)| {
            if op.has_attr(ATTR_RECOMPUTE) {
                Phase::Recompute
            } else if needed[i] {
                Phase::Forward
            } else {
                Phase::Backward
            }
        })
        .collect()
}
