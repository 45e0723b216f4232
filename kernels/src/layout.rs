//! Where every value of a planned function lives: the arena layout that the
//! step program, the lowered kernels and the runtimes share.
//!
//! Input: a verified `Func` that memplan has planned, i.e. the function has
//! `ck.arena_bytes` and every stored op result has `ck.offset` (in-place
//! results share their operand's offset). Output: a `Layout` giving, for
//! every value, a `Place` (the arena at a byte offset, or one of the
//! argument buffers), the argument types, and where each result must be
//! read after the step. Values internal to a fusion group have no place
//! (they live in registers of their kernel); a value written in place into a
//! `{ck.donate}` argument lives in that argument's buffer.
//!
//! Checks (each a located error that names the function or the op): the
//! function is planned; every op result fits inside the arena and is aligned
//! to its element size (8 bytes for i64, 4 for f32/i32, 2 for bf16/f16; an
//! i1 element is stored as one byte). Every element type is laid out; a
//! backend that computes f32 only (cuda) checks that itself (`check_f32_only`).
//! Complexity: O(ops + values).

use ckopt_ir::fusion::{analyze, buffer_roots};
use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_OFFSET};
use ckopt_ir::{DType, Diag, Func, Loc, OpKind, TensorType, ValueId};

/// The buffer a value lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Buf {
    /// The one arena of `ck.arena_bytes`.
    Arena,
    /// The buffer of function argument `i` (allocated by the caller; written
    /// only when the argument is `{ck.donate}`).
    Input(usize),
}

/// A value's storage: a buffer and a byte offset in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    pub buf: Buf,
    pub offset: u64,
}

/// The memory layout of one planned function.
#[derive(Clone, Debug)]
pub struct Layout {
    pub func: String,
    pub arena_bytes: u64,
    /// Argument types, in order.
    pub inputs: Vec<TensorType>,
    /// Result types and where to read them after the step, in order.
    pub outputs: Vec<(TensorType, Place)>,
    /// Storage of each value (indexed by `ValueId`); `None` for unused ids.
    pub place: Vec<Option<Place>>,
}

impl Layout {
    pub fn place_of(&self, v: ValueId) -> Option<Place> {
        self.place.get(v.index()).copied().flatten()
    }
}

/// Whether the function carries memplan's attributes (`Func::is_planned`).
pub fn is_planned(f: &Func) -> bool {
    f.is_planned()
}

fn unplanned(f: &Func, what: &str) -> String {
    format!(
        "function @{} is not planned by memplan ({what}); run the memplan pass first, e.g. \
         `ckopt-opt --pass-pipeline='memplan'`",
        f.name
    )
}

/// Errors at `loc` unless `ty` is f32 (`what` names the value).
pub fn check_f32(ty: &TensorType, loc: &Loc, what: impl FnOnce() -> String) -> Result<(), Diag> {
    if ty.dtype == DType::F32 {
        Ok(())
    } else {
        Err(Diag::error(loc.clone(), format!("{}: element type {} is not supported by the lowering (f32 only)", what(), ty.dtype.name())))
    }
}

/// Errors at the first op (or the function, for an argument) of `f` that
/// reads or produces a value whose element type is not f32: the check of a
/// backend whose kernels compute f32 only (cuda).
pub fn check_f32_only(f: &Func) -> Result<(), Diag> {
    for op in &f.body {
        let opname = op.kind.full_name();
        for &o in &op.operands {
            check_f32(f.ty(o), &op.loc, || format!("'{opname}' op operand %{}", f.name_of(o)))?;
        }
        if let Some(r) = op.result {
            check_f32(f.ty(r), &op.loc, || format!("'{opname}' op result"))?;
        }
    }
    for (i, p) in f.params.iter().enumerate() {
        check_f32(f.ty(p.value), &f.loc, || format!("argument {i} (%{}) of @{}", f.name_of(p.value), f.name))?;
    }
    Ok(())
}

/// Computes the layout of a planned function, or a located error.
pub fn layout(f: &Func) -> Result<Layout, Diag> {
    let arena = f
        .attrs
        .get(ATTR_ARENA_BYTES)
        .and_then(|a| a.as_int())
        .ok_or_else(|| Diag::error(f.loc.clone(), unplanned(f, "it has no ck.arena_bytes")))?;
    let arena_bytes =
        u64::try_from(arena).map_err(|_| Diag::error(f.loc.clone(), format!("function @{}: negative ck.arena_bytes {arena}", f.name)))?;
    let mut place: Vec<Option<Place>> = vec![None; f.values.len()];
    let fusion = analyze(f);
    let roots = buffer_roots(f);
    let arg_index: Vec<Option<usize>> = {
        let mut a = vec![None; f.values.len()];
        for (i, p) in f.params.iter().enumerate() {
            a[p.value.index()] = Some(i);
        }
        a
    };
    for op in &f.body {
        let opname = op.kind.full_name();
        let Some(r) = op.result else { continue };
        let ty = f.ty(r);
        if !fusion.materialized(r) {
            continue;
        }
        if let Some(i) = arg_index[roots[r.index()].index()] {
            place[r.index()] = Some(Place { buf: Buf::Input(i), offset: 0 });
            continue;
        }
        let off = op.int_attr(ATTR_OFFSET).ok_or_else(|| {
            Diag::error(op.loc.clone(), format!("'{opname}' op has no ck.offset: {}", unplanned(f, "a result without ck.offset")))
        })?;
        let off = u64::try_from(off).map_err(|_| Diag::error(op.loc.clone(), format!("'{opname}' op has a negative ck.offset {off}")))?;
        let end = off.checked_add(ty.bytes());
        if end.is_none_or(|e| e > arena_bytes) {
            return Err(Diag::error(
                op.loc.clone(),
                format!(
                    "'{opname}' op result ({} bytes at ck.offset {off}) does not fit in the arena of @{} ({arena_bytes} bytes)",
                    ty.bytes(),
                    f.name
                ),
            ));
        }
        let align = ty.dtype.bytes();
        if off % align != 0 {
            return Err(Diag::error(op.loc.clone(), format!("'{opname}' op: ck.offset {off} is not {align}-byte aligned")));
        }
        place[r.index()] = Some(Place { buf: Buf::Arena, offset: off });
    }
    let mut inputs = Vec::with_capacity(f.params.len());
    for (i, p) in f.params.iter().enumerate() {
        let ty = f.ty(p.value);
        inputs.push(ty.clone());
        place[p.value.index()] = Some(Place { buf: Buf::Input(i), offset: 0 });
    }
    let ret = f.return_op().ok_or_else(|| Diag::error(f.loc.clone(), format!("function @{} does not end with ck.return", f.name)))?;
    let mut outputs = Vec::with_capacity(ret.operands.len());
    for &v in &ret.operands {
        let p = place[v.index()]
            .ok_or_else(|| Diag::error(ret.loc.clone(), format!("'ck.return' returns %{} which is never defined", f.name_of(v))))?;
        outputs.push((f.ty(v).clone(), p));
    }
    debug_assert!(f.body.iter().all(|o| o.kind != OpKind::Return || o.result.is_none()));
    Ok(Layout { func: f.name.clone(), arena_bytes, inputs, outputs, place })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::{Attr, Attrs, Loc};

    fn planned_add() -> Func {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![4]), false);
        let y = f.push(OpKind::Add, &[x, x], Attrs::new(), None, "y", Loc::unknown()).unwrap();
        f.push_return(&[y, x], Loc::unknown());
        f.body[0].attrs.insert(ATTR_OFFSET.into(), Attr::Int(16));
        f.attrs.insert(ATTR_ARENA_BYTES.into(), Attr::Int(32));
        f
    }

    #[test]
    fn layout_places_results_in_arena_and_arguments_in_inputs() {
        let f = planned_add();
        let l = layout(&f).unwrap();
        assert_eq!(l.arena_bytes, 32);
        assert_eq!(l.outputs[0].1, Place { buf: Buf::Arena, offset: 16 });
        assert_eq!(l.outputs[1].1, Place { buf: Buf::Input(0), offset: 0 });
    }

    #[test]
    fn unplanned_function_and_overflowing_offset_are_errors_naming_them() {
        let mut f = planned_add();
        f.attrs.clear();
        let e = layout(&f).unwrap_err();
        assert!(e.message.contains("@f is not planned by memplan"), "{}", e.message);
        let mut f = planned_add();
        f.body[0].attrs.insert(ATTR_OFFSET.into(), Attr::Int(24));
        let e = layout(&f).unwrap_err();
        assert!(e.message.contains("'ck.add' op result") && e.message.contains("does not fit"), "{}", e.message);
        let mut f = planned_add();
        f.body[0].attrs.remove(ATTR_OFFSET);
        assert!(layout(&f).unwrap_err().message.contains("'ck.add' op has no ck.offset"));
    }

    #[test]
    fn f16_is_laid_out_and_rejected_by_the_f32_only_check_naming_the_op() {
        let mut f = Func::new("h", Loc::unknown());
        let x = f.add_param("x", TensorType::new(vec![2], DType::F16), false);
        let y = f.push(OpKind::Neg, &[x], Attrs::new(), None, "y", Loc::unknown()).unwrap();
        f.push_return(&[y], Loc::unknown());
        f.attrs.insert(ATTR_ARENA_BYTES.into(), Attr::Int(8));
        f.body[0].attrs.insert(ATTR_OFFSET.into(), Attr::Int(0));
        assert!(layout(&f).is_ok());
        let e = check_f32_only(&f).unwrap_err();
        assert!(e.message.contains("f16 is not supported"), "{}", e.message);
        f.body[0].attrs.insert(ATTR_OFFSET.into(), Attr::Int(1));
        let e = layout(&f).unwrap_err();
        assert!(e.message.contains("not 2-byte aligned"), "{}", e.message);
    }
}
