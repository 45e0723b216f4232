//! `dce`: dead code elimination.
//!
//! Removes every op whose result is not read, directly or transitively, by
//! `ck.return`. All ck ops are pure (dropout's mask is a pure function of its
//! seed and the element index), so this never changes what a function
//! returns. Function arguments are never removed (the signature is the
//! interface), and unused values are dropped from the value arena.
//!
//! Invariants. In: a verified module. Out: a verified module with the same
//! signatures and results, the surviving ops in their original schedule order
//! with their attributes untouched; every remaining op is used.
//! Complexity: O(ops + values) per function (one backward sweep).

use crate::manager::{Pass, PassOptions, Statistics};
use crate::rewrite::{compact_values, remove_dead_ops};
use ckopt_ir::{Diags, Func, Module};

/// Removes the dead ops of `f`; returns how many were removed.
pub fn dce(f: &mut Func) -> usize {
    let n = remove_dead_ops(f);
    if n > 0 {
        compact_values(f);
    }
    n
}

struct Dce;

impl Pass for Dce {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        let removed: usize = module.funcs.iter_mut().map(dce).sum();
        stats.add("num-dce'd", removed);
        Ok(())
    }
}

/// Registry constructor (the pass takes no options).
pub fn build(_: &PassOptions) -> Result<Box<dyn Pass>, crate::manager::OptionError> {
    Ok(Box::new(Dce))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::{Attrs, Loc, OpKind, TensorType};

    /// An unused op goes; an op feeding the return stays; the return stays.
    #[test]
    fn removes_only_unused_ops() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![2, 2]), false);
        let _dead = f.push(OpKind::Exp, &[x], Attrs::new(), None, "dead", Loc::unknown()).unwrap();
        let live = f.push(OpKind::Tanh, &[x], Attrs::new(), None, "live", Loc::unknown()).unwrap();
        f.push_return(&[live], Loc::unknown());
        assert_eq!(dce(&mut f), 1);
        let kinds: Vec<OpKind> = f.body.iter().map(|o| o.kind).collect();
        assert_eq!(kinds, vec![OpKind::Tanh, OpKind::Return]);
        assert_eq!(dce(&mut f), 0, "dce is idempotent");
    }
}
