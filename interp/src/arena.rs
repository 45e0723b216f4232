//! The arena interpreter: runs a planned function with every op-defined
//! value stored at its `ck.offset` inside ONE buffer of `ck.arena_bytes`
//! (as the CPU and CUDA backends do), so an overlap or in-place bug in the
//! plan corrupts the results instead of going unnoticed.
//!
//! Entry: a module whose function carries `ck.arena_bytes` and a `ck.offset`
//! on every stored op result (the output of `memplan`); every element type,
//! each value stored as its bytes in memory (`Tensor::to_le_bytes`: real
//! element sizes, so a plan that overlaps two values corrupts them). Arguments
//! live outside the arena, as the caller's buffers (copies here); a value
//! written in place into a `{ck.donate}` argument is written into that
//! buffer. Values internal to a fusion group (`ck.fusion`) have no storage
//! and are kept aside, as a fused kernel keeps them in registers.
//! Semantics per op: read the operands out of the arena (or the arguments),
//! evaluate with the reference kernels (`eval_op`), write the result at its
//! offset. A sound plan therefore gives results bit-identical to `run_func`.
//! The arena starts filled with 0xFF bytes (NaN in every float type, -1 in
//! the integer types) so reading bytes no op wrote shows up.
//! Complexity: O(ops + kernel costs + bytes copied).

use crate::eval::eval_op;
use crate::run::prepare;
use crate::tensor::Tensor;
use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_OFFSET};
use ckopt_ir::{Diag, Func, Module, OpKind, ValueId};

/// Runs `module`'s function `func` in one arena; returns the returned values
/// and the arena size in bytes.
pub fn run_func_in_arena(module: &Module, func: &str, inputs: &[Tensor]) -> Result<(Vec<Tensor>, u64), Diag> {
    run_body(prepare(module, func, inputs)?, inputs)
}

/// Where a value lives: an argument buffer, (byte offset, byte count) in the
/// arena, or nowhere (internal to a fusion group: kept aside).
#[derive(Clone, Copy)]
enum Home {
    Arg(usize),
    Arena(usize, usize),
    Internal,
}

fn run_body(f: &Func, inputs: &[Tensor]) -> Result<(Vec<Tensor>, u64), Diag> {
    let arena_bytes = f
        .attrs
        .get(ATTR_ARENA_BYTES)
        .and_then(|a| a.as_int())
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| {
            Diag::error(
                f.loc.clone(),
                format!("@{} was not planned: it has no '{ATTR_ARENA_BYTES}' (run the memplan pass first)", f.name),
            )
        })?;
    if arena_bytes > crate::tensor::MAX_TENSOR_BYTES {
        return Err(Diag::error(f.loc.clone(), format!("arena of {arena_bytes} bytes is larger than the interpreter allows")));
    }
    let mut arena = vec![0xFFu8; arena_bytes as usize];
    // Argument buffers are the caller's; donated ones may be written in place.
    let mut bufs: Vec<Tensor> = inputs.to_vec();
    let mut home: Vec<Option<Home>> = vec![None; f.values.len()];
    let mut param_of = vec![None; f.values.len()];
    for (i, p) in f.params.iter().enumerate() {
        home[p.value.index()] = Some(Home::Arg(i));
        param_of[p.value.index()] = Some(i);
    }
    let fusion = ckopt_ir::fusion::analyze(f);
    let roots = ckopt_ir::fusion::buffer_roots(f);
    let mut internal: Vec<Option<Tensor>> = vec![None; f.values.len()];
    let read = |home: &[Option<Home>], arena: &[u8], bufs: &[Tensor], internal: &[Option<Tensor>], v: ValueId| -> Option<Tensor> {
        let shape: Vec<usize> = f.ty(v).shape.iter().map(|&d| d as usize).collect();
        match home[v.index()]? {
            Home::Arg(i) => bufs.get(i).map(|t| t.reshaped(shape)),
            Home::Arena(off, n) => Tensor::from_le_bytes(shape, f.ty(v).dtype, arena.get(off..off + n)?).ok(),
            Home::Internal => internal[v.index()].clone(),
        }
    };
    for op in &f.body {
        let mut args = Vec::with_capacity(op.operands.len());
        for &v in &op.operands {
            args.push(read(&home, &arena, &bufs, &internal, v).ok_or_else(|| {
                Diag::error(op.loc.clone(), format!("internal: value %{} is not available", f.name_of(v)))
            })?);
        }
        if op.kind == OpKind::Return {
            return Ok((args, arena_bytes));
        }
        let Some(r) = op.result else { continue };
        let ty = f.ty(r);
        if !fusion.materialized(r) {
            let refs: Vec<&Tensor> = args.iter().collect();
            internal[r.index()] = Some(eval_op(op, f, &refs)?);
            home[r.index()] = Some(Home::Internal);
            continue;
        }
        if let Some(i) = param_of[roots[r.index()].index()] {
            // Written in place into a donated argument's buffer.
            let refs: Vec<&Tensor> = args.iter().collect();
            let out = eval_op(op, f, &refs)?;
            if out.bytes() != bufs[i].bytes() || out.dtype != bufs[i].dtype {
                return Err(Diag::error(op.loc.clone(), "internal: in-place result has the wrong size"));
            }
            bufs[i] = out.reshaped(bufs[i].shape.clone());
            home[r.index()] = Some(Home::Arg(i));
            continue;
        }
        let off = op.int_attr(ATTR_OFFSET).and_then(|o| u64::try_from(o).ok()).ok_or_else(|| {
            Diag::error(op.loc.clone(), format!("%{} has no '{ATTR_OFFSET}': the function was not planned", f.name_of(r)))
        })?;
        let n = ty.bytes();
        let fits = off % ty.dtype.bytes() == 0 && off.checked_add(n).is_some_and(|e| e <= arena_bytes);
        if !fits {
            return Err(Diag::error(
                op.loc.clone(),
                format!("%{} at offset {off} ({} bytes) does not fit the {arena_bytes}-byte arena", f.name_of(r), ty.bytes()),
            ));
        }
        let refs: Vec<&Tensor> = args.iter().collect();
        let out = eval_op(op, f, &refs)?;
        let (off, n) = (off as usize, n as usize);
        let bytes = out.to_le_bytes();
        if bytes.len() != n {
            return Err(Diag::error(op.loc.clone(), "internal: kernel result has the wrong size"));
        }
        arena[off..off + n].copy_from_slice(&bytes);
        home[r.index()] = Some(Home::Arena(off, n));
    }
    Err(Diag::error(f.loc.clone(), format!("@{} has no 'ck.return'", f.name)))
}
