//! Modules, functions, ops and values.
//!
//! A `Func` owns an arena of values (`ValueId` indexes `Func::values`) and a
//! body: ops in schedule order, the last one `ck.return`. Program order is
//! execution order. Each op defines at most one value; arguments are values
//! with no defining op. Passes usually build a new body and swap it in.

use crate::attr::{Attr, Attrs};
use crate::diag::{Diag, Loc};
use crate::ops::{ATTR_PARAM, OpKind, infer_type};
use crate::types::TensorType;
use std::collections::HashMap;

/// Index of a value in its function's value arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl ValueId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A value: its name (without `%`, used by the printer) and type.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    pub name: String,
    pub ty: TensorType,
}

/// A function argument: its value and MLIR argument attributes (`{ck.param}`).
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub value: ValueId,
    pub attrs: Attrs,
}

/// One operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    pub operands: Vec<ValueId>,
    /// The defined value; `None` only for `ck.return`.
    pub result: Option<ValueId>,
    pub attrs: Attrs,
    pub loc: Loc,
}

impl Op {
    pub fn has_attr(&self, name: &str) -> bool {
        self.attrs.contains_key(name)
    }
    pub fn int_attr(&self, name: &str) -> Option<i64> {
        self.attrs.get(name).and_then(Attr::as_int)
    }
    pub fn f32_attr(&self, name: &str) -> Option<f32> {
        self.attrs.get(name).and_then(Attr::as_f32)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub name: String,
    pub params: Vec<Param>,
    pub result_types: Vec<TensorType>,
    /// Ops in schedule order; the last is `ck.return`.
    pub body: Vec<Op>,
    /// Function attributes (`ck.arena_bytes`).
    pub attrs: Attrs,
    pub values: Vec<ValueData>,
    pub loc: Loc,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    pub funcs: Vec<Func>,
}

impl Module {
    pub fn func(&self, name: &str) -> Option<&Func> {
        self.funcs.iter().find(|f| f.name == name)
    }
    pub fn func_mut(&mut self, name: &str) -> Option<&mut Func> {
        self.funcs.iter_mut().find(|f| f.name == name)
    }
}

impl Func {
    /// An empty function with no ops (add a `ck.return` before use).
    pub fn new(name: impl Into<String>, loc: Loc) -> Func {
        Func {
            name: name.into(),
            params: Vec::new(),
            result_types: Vec::new(),
            body: Vec::new(),
            attrs: Attrs::new(),
            values: Vec::new(),
            loc,
        }
    }

    /// Creates a value in the arena (not defined by anything yet).
    pub fn new_value(&mut self, name: impl Into<String>, ty: TensorType) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        self.values.push(ValueData { name: name.into(), ty });
        id
    }

    /// Appends an argument.
    pub fn add_param(&mut self, name: impl Into<String>, ty: TensorType, is_param: bool) -> ValueId {
        let v = self.new_value(name, ty);
        let mut attrs = Attrs::new();
        if is_param {
            attrs.insert(ATTR_PARAM.into(), Attr::Unit);
        }
        self.params.push(Param { value: v, attrs });
        v
    }

    pub fn ty(&self, v: ValueId) -> &TensorType {
        &self.values[v.index()].ty
    }
    pub fn name_of(&self, v: ValueId) -> &str {
        &self.values[v.index()].name
    }
    pub fn arg_values(&self) -> Vec<ValueId> {
        self.params.iter().map(|p| p.value).collect()
    }
    /// Whether argument `i` carries `{ck.param}`.
    pub fn is_trainable(&self, i: usize) -> bool {
        self.params.get(i).is_some_and(|p| p.attrs.contains_key(ATTR_PARAM))
    }
    /// Indices of the `{ck.param}` arguments, or all arguments when none is marked.
    pub fn trainable_indices(&self) -> Vec<usize> {
        let marked: Vec<usize> = (0..self.params.len()).filter(|&i| self.is_trainable(i)).collect();
        if marked.is_empty() { (0..self.params.len()).collect() } else { marked }
    }
    /// The `ck.return` op, if the body ends with one.
    pub fn return_op(&self) -> Option<&Op> {
        self.body.last().filter(|o| o.kind == OpKind::Return)
    }
    /// Values returned by the function (empty if there is no return yet).
    pub fn returned(&self) -> &[ValueId] {
        self.return_op().map(|o| o.operands.as_slice()).unwrap_or(&[])
    }
    /// Map from value to the index in `body` of its defining op.
    pub fn def_index(&self) -> HashMap<ValueId, usize> {
        let mut m = HashMap::with_capacity(self.body.len());
        for (i, op) in self.body.iter().enumerate() {
            if let Some(r) = op.result {
                m.insert(r, i);
            }
        }
        m
    }
    /// Same as `def_index` but as a dense vector indexed by value (None for arguments / unused).
    pub fn def_table(&self) -> Vec<Option<usize>> {
        let mut t = vec![None; self.values.len()];
        for (i, op) in self.body.iter().enumerate() {
            if let Some(r) = op.result {
                t[r.index()] = Some(i);
            }
        }
        t
    }
    /// For each value, the indices of the ops that use it (in schedule order).
    pub fn uses(&self) -> Vec<Vec<usize>> {
        let mut u = vec![Vec::new(); self.values.len()];
        for (i, op) in self.body.iter().enumerate() {
            for &o in &op.operands {
                if u[o.index()].last() != Some(&i) {
                    u[o.index()].push(i);
                }
            }
        }
        u
    }

    /// Builds an op with its result type inferred (or `declared` for ops that
    /// need one), appends it to the body and returns its result value.
    /// The name is a hint; the printer makes names unique.
    pub fn push(
        &mut self,
        kind: OpKind,
        operands: &[ValueId],
        attrs: Attrs,
        declared: Option<TensorType>,
        name: &str,
        loc: Loc,
    ) -> Result<ValueId, Diag> {
        let op = self.make_op(kind, operands, attrs, declared, name, loc)?;
        let r = op.result;
        self.body.push(op);
        r.ok_or_else(|| Diag::error(Loc::unknown(), "ck.return defines no value"))
    }

    /// Like `push` but returns the op without inserting it (its result value
    /// is created in the arena), for passes that assemble a new body.
    pub fn make_op(
        &mut self,
        kind: OpKind,
        operands: &[ValueId],
        attrs: Attrs,
        declared: Option<TensorType>,
        name: &str,
        loc: Loc,
    ) -> Result<Op, Diag> {
        let tys: Vec<&TensorType> = operands.iter().map(|&v| self.ty(v)).collect();
        let ty = infer_type(kind, &attrs, &tys, declared.as_ref())
            .map_err(|d| Diag::error(loc.clone(), format!("'ck.{}' op {}", kind.name(), d.message)))?;
        let result = ty.map(|t| self.new_value(name, t));
        Ok(Op { kind, operands: operands.to_vec(), result, attrs, loc })
    }

    /// Whether memplan planned the function: it has `ck.arena_bytes` and
    /// every stored op result a `ck.offset` (values internal to a fusion
    /// group and values written into a donated argument are not stored).
    pub fn is_planned(&self) -> bool {
        let fusion = crate::fusion::analyze(self);
        let roots = crate::fusion::buffer_roots(self);
        let is_arg = crate::fusion::arg_mask(self);
        self.attrs.get(crate::ops::ATTR_ARENA_BYTES).and_then(|a| a.as_int()).is_some()
            && self.body.iter().all(|op| match op.result {
                None => true,
                Some(r) => !fusion.materialized(r) || is_arg[roots[r.index()].index()] || op.int_attr(crate::ops::ATTR_OFFSET).is_some(),
            })
    }

    /// Appends `ck.return` and sets the result types from the operands.
    pub fn push_return(&mut self, values: &[ValueId], loc: Loc) {
        self.result_types = values.iter().map(|&v| self.ty(v).clone()).collect();
        self.body.push(Op { kind: OpKind::Return, operands: values.to_vec(), result: None, attrs: Attrs::new(), loc });
    }
}

/// Builds an `Attrs` from pairs: `attrs([("dims", Attr::IntArray(vec![0]))])`.
pub fn attrs<const N: usize>(pairs: [(&str, Attr); N]) -> Attrs {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn push_infers_types_and_rejects_mismatch() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![2, 3]), false);
        let w = f.add_param("w", TensorType::f32(vec![3, 4]), true);
        let y = f.push(OpKind::Matmul, &[x, w], Attrs::new(), None, "y", Loc::unknown()).unwrap();
        assert_eq!(f.ty(y), &TensorType::f32(vec![2, 4]));
        assert!(f.push(OpKind::Add, &[x, y], Attrs::new(), None, "z", Loc::unknown()).is_err());
        assert_eq!(f.trainable_indices(), vec![1]);
    }
}
