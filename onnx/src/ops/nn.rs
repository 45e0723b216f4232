//! Network layers: Softmax/LogSoftmax, Gemm, MatMul, BatchNormalization
//! (inference: running statistics folded), LayerNormalization and
//! SoftmaxCrossEntropyLoss (integer labels).

use super::*;

/// The op types converted here.
pub(super) const OPS: &[&str] = &["Softmax", "LogSoftmax", "Gemm", "MatMul", "BatchNormalization", "LayerNormalization", "SoftmaxCrossEntropyLoss"];

pub(super) fn convert(imp: &mut Importer<'_>, op: &str, a: &NodeAttrs<'_>, ins: &[Option<Val>], n_out: usize) -> R<Vec<Val>> {
    let x = inp(imp, ins, 0);
    let one = |v: ValueId| Ok(vec![Val::Dyn(v)]);
    let unsupported_outputs = |imp: &Importer<'_>, max: usize| -> R<()> {
        // Extra outputs (Dropout's mask aside) are not produced.
        if n_out > max { Err(imp.err(format!("outputs beyond the first {max} are not supported"))) } else { Ok(()) }
    };
    match op {
        "SoftmaxCrossEntropyLoss" => {
            let scores = imp.dynv(&x?)?;
            let labels = imp.dynv_as(&inp(imp, ins, 1)?, DType::I64)?;
            let weights = ins.get(2).cloned().flatten();
            let reduction = a.string("reduction").unwrap_or_else(|| "mean".into());
            let ignore = a.get("ignore_index").and_then(|t| t.i);
            softmax_cross_entropy(imp, scores, labels, weights, &reduction, ignore, n_out)
        }
        "Softmax" | "LogSoftmax" => {
            let v = imp.dynv(&x?)?;
            let s = imp.ty(v);
            let r = s.len();
            let dims: Vec<usize> = if imp.opset < 13 {
                // Older opsets: coerce to 2-D at `axis` (default 1), i.e. normalize over dims axis.. together.
                let ax = axis(a.int("axis", 1), r).map_err(|m| imp.err(m))?;
                (ax..r).collect()
            } else {
                vec![axis(a.int("axis", -1), r).map_err(|m| imp.err(m))?]
            };
            if op == "Softmax" { one(softmax(imp, v, &dims)?) } else { one(log_softmax(imp, v, &dims)?) }
        }
        "Gemm" => {
            unsupported_outputs(imp, 1)?;
            let (av, bv) = (imp.dynv(&x?)?, imp.dynv(&inp(imp, ins, 1)?)?);
            let (ta, tb) = (a.int("transA", 0) != 0, a.int("transB", 0) != 0);
            let (alpha, beta) = (a.float("alpha", 1.0), a.float("beta", 1.0));
            if imp.ty(av).len() != 2 || imp.ty(bv).len() != 2 {
                return Err(imp.err("Gemm needs 2-D A and B"));
            }
            let mut at = Attrs::new();
            if ta {
                at.insert("transpose_a".into(), Attr::Bool(true));
            }
            if tb {
                at.insert("transpose_b".into(), Attr::Bool(true));
            }
            let mm = imp.push(OpKind::Matmul, &[av, bv], at, None)?;
            let y = imp.scale(mm, alpha)?;
            match ins.get(2).cloned().flatten() {
                Some(c) if beta != 0.0 => {
                    let out = imp.ty(y);
                    let cv = imp.operand(&c, &out)?;
                    let cv = imp.scale(cv, beta)?;
                    one(imp.bin(OpKind::Add, y, cv)?)
                }
                _ => one(y),
            }
        }
        "MatMul" => {
            let (p, q) = (imp.dynv(&x?)?, imp.dynv(&inp(imp, ins, 1)?)?);
            one(matmul(imp, p, q)?)
        }
        "BatchNormalization" => {
            if a.int("training_mode", 0) != 0 {
                return Err(imp.err("BatchNormalization with training_mode=1 is not supported (ckopt imports inference semantics: the file's running statistics)"));
            }
            unsupported_outputs(imp, 1)?;
            let xv = imp.dynv(&x?)?;
            let s = imp.ty(xv);
            if s.len() < 2 {
                return Err(imp.err("BatchNormalization needs an input of rank >= 2"));
            }
            let c = s[1];
            let eps = a.float("epsilon", 1e-5);
            let mean = imp.known(&inp(imp, ins, 3)?).ok_or_else(|| imp.err("BatchNormalization's mean must be an initializer or constant"))?;
            let var = imp.known(&inp(imp, ins, 4)?).ok_or_else(|| imp.err("BatchNormalization's var must be an initializer or constant"))?;
            if mean.shape != [c] || var.shape != [c] || imp.shape(&inp(imp, ins, 1)?) != [c] || imp.shape(&inp(imp, ins, 2)?) != [c] {
                return Err(imp.err(format!("BatchNormalization's scale, bias, mean and var must have shape [{c}]")));
            }
            // y = (x - mean) * (scale * 1/sqrt(var + eps)) + bias, mean and var folded.
            let inv: Vec<f32> = var.as_f32().iter().map(|&v| 1.0 / (v + eps).sqrt()).collect();
            let mv = imp.materialize(&CTensor::f32(vec![c], mean.as_f32()))?;
            let iv = imp.materialize(&CTensor::f32(vec![c], inv))?;
            let sv = imp.dynv(&inp(imp, ins, 1)?)?;
            let bv = imp.dynv(&inp(imp, ins, 2)?)?;
            let k = imp.bin(OpKind::Mul, sv, iv)?;
            let chan = |imp: &mut Importer<'_>, v: ValueId| imp.push(OpKind::Broadcast, &[v], attrs([("dims", Attr::IntArray(vec![1]))]), Some(TensorType::f32(s.clone())));
            let mb = chan(imp, mv)?;
            let xc = imp.bin(OpKind::Sub, xv, mb)?;
            let kb = chan(imp, k)?;
            let y = imp.bin(OpKind::Mul, xc, kb)?;
            let bb = chan(imp, bv)?;
            one(imp.bin(OpKind::Add, y, bb)?)
        }
        "LayerNormalization" => {
            let v = imp.dynv(&x?)?;
            let s = imp.ty(v);
            let ax = axis(a.int("axis", -1), s.len()).map_err(|m| imp.err(m))?;
            let dims: Vec<usize> = (ax..s.len()).collect();
            let n: u64 = s[ax..].iter().product();
            let eps = a.float("epsilon", 1e-5);
            let sum = imp.reduce(OpKind::ReduceSum, v, &dims)?;
            let mean = imp.scale(sum, 1.0 / n as f32)?;
            let mb = imp.unreduce(mean, &s, &dims)?;
            let xc = imp.bin(OpKind::Sub, v, mb)?;
            let sq = imp.bin(OpKind::Mul, xc, xc)?;
            let ss = imp.reduce(OpKind::ReduceSum, sq, &dims)?;
            let var = imp.scale(ss, 1.0 / n as f32)?;
            let vs = imp.ty(var);
            let e = imp.fill(&vs, eps)?;
            let ve = imp.bin(OpKind::Add, var, e)?;
            let inv = imp.un(OpKind::Rsqrt, ve)?;
            let ib = imp.unreduce(inv, &s, &dims)?;
            let y = imp.bin(OpKind::Mul, xc, ib)?;
            let scale = imp.operand(&inp(imp, ins, 1)?, &s)?;
            let y = imp.bin(OpKind::Mul, y, scale)?;
            let y = match ins.get(2).cloned().flatten() {
                Some(b) => {
                    let bv = imp.operand(&b, &s)?;
                    imp.bin(OpKind::Add, y, bv)?
                }
                None => y,
            };
            // Optional outputs Mean and InvStdDev, with the normalized dims kept as 1.
            let keep: Vec<u64> = s.iter().enumerate().map(|(i, &d)| if i >= ax { 1 } else { d }).collect();
            let mut out = vec![Val::Dyn(y)];
            if n_out > 1 {
                out.push(Val::Dyn(imp.reshape(mean, &keep)?));
            }
            if n_out > 2 {
                out.push(Val::Dyn(imp.reshape(inv, &keep)?));
            }
            Ok(out)
        }
        _ => Err(not_here(imp, op)),
    }
}

/// softmax over `dims`: exp(x - max) / sum(exp(x - max)).
pub fn softmax(imp: &mut Importer<'_>, x: ValueId, dims: &[usize]) -> R<ValueId> {
    let s = imp.ty(x);
    let m = imp.reduce(OpKind::ReduceMax, x, dims)?;
    let mb = imp.unreduce(m, &s, dims)?;
    let z = imp.bin(OpKind::Sub, x, mb)?;
    let e = imp.un(OpKind::Exp, z)?;
    let sum = imp.reduce(OpKind::ReduceSum, e, dims)?;
    let sb = imp.unreduce(sum, &s, dims)?;
    imp.bin(OpKind::Div, e, sb)
}

/// log softmax over `dims`: (x - max) - log(sum(exp(x - max))).
pub fn log_softmax(imp: &mut Importer<'_>, x: ValueId, dims: &[usize]) -> R<ValueId> {
    let s = imp.ty(x);
    let m = imp.reduce(OpKind::ReduceMax, x, dims)?;
    let mb = imp.unreduce(m, &s, dims)?;
    let z = imp.bin(OpKind::Sub, x, mb)?;
    let e = imp.un(OpKind::Exp, z)?;
    let sum = imp.reduce(OpKind::ReduceSum, e, dims)?;
    let l = imp.un(OpKind::Log, sum)?;
    let lb = imp.unreduce(l, &s, dims)?;
    imp.bin(OpKind::Sub, z, lb)
}

/// ONNX MatMul (numpy matmul): 1-D operands are promoted and the added dim
/// removed; batch dims broadcast. A batched left operand times a 2-D right
/// operand is one 2-D matmul on the flattened rows.
fn matmul(imp: &mut Importer<'_>, a: ValueId, b: ValueId) -> R<ValueId> {
    let (sa, sb) = (imp.ty(a), imp.ty(b));
    if sa.is_empty() || sb.is_empty() {
        return Err(imp.err("MatMul of a scalar"));
    }
    let a2 = if sa.len() == 1 { imp.reshape(a, &[1, sa[0]])? } else { a };
    let b2 = if sb.len() == 1 { imp.reshape(b, &[sb[0], 1])? } else { b };
    let (sa2, sb2) = (imp.ty(a2), imp.ty(b2));
    let (ra, rb) = (sa2.len(), sb2.len());
    let (m, k, k2, n) = (sa2[ra - 2], sa2[ra - 1], sb2[rb - 2], sb2[rb - 1]);
    if k != k2 {
        return Err(imp.err(format!("MatMul contraction dims differ: {sa:?} x {sb:?}")));
    }
    let batch = broadcast_shapes(&sa2[..ra - 2], &sb2[..rb - 2]).map_err(|e| imp.err(e))?;
    let mut out = batch.clone();
    out.extend([m, n]);
    let y = if rb == 2 && ra > 2 {
        let rows: u64 = sa2[..ra - 1].iter().product();
        let flat = imp.reshape(a2, &[rows, k])?;
        let mm = imp.push(OpKind::Matmul, &[flat, b2], Attrs::new(), None)?;
        let mut s = sa2[..ra - 1].to_vec();
        s.push(n);
        imp.reshape(mm, &s)?
    } else {
        let mut ta = batch.clone();
        ta.extend([m, k]);
        let mut tb = batch.clone();
        tb.extend([k, n]);
        let ab = imp.bcast(a2, &ta)?;
        let bb = imp.bcast(b2, &tb)?;
        imp.push(OpKind::Matmul, &[ab, bb], Attrs::new(), None)?
    };
    let mut fin = batch;
    if sa.len() > 1 {
        fin.push(m);
    }
    if sb.len() > 1 {
        fin.push(n);
    }
    imp.reshape(y, &fin)
}

/// ONNX SoftmaxCrossEntropyLoss: scores `[N, C, d...]`, integer labels
/// `[N, d...]`, optional class weights `[C]`, `ignore_index` (absent: no
/// label is ignored), reduction `mean` (over the weights of the labels not
/// ignored), `sum` or `none`; the optional second output is the log-softmax.
///
/// Mean without weights and without the log-prob output is one
/// `cross_entropy` (classes moved last, rows flattened). Otherwise it is
/// spelled out: `log_softmax` over dim 1, `take_along` at the labels (ignored
/// ones read class 0, then are masked by `select`), `gather` of the weights.
fn softmax_cross_entropy(
    imp: &mut Importer<'_>,
    scores: ValueId,
    labels: ValueId,
    weights: Option<Val>,
    reduction: &str,
    ignore: Option<i64>,
    n_out: usize,
) -> R<Vec<Val>> {
    let s = imp.ty(scores);
    let ls = imp.ty(labels);
    let r = s.len();
    let mut want = vec![s.first().copied().unwrap_or(0)];
    want.extend(s.iter().skip(2));
    if r < 2 || ls != want {
        return Err(imp.err(format!("SoftmaxCrossEntropyLoss needs scores [N, C, d...] and labels [N, d...], got {s:?} and {ls:?}")));
    }
    if !imp.dt(labels).is_integer() {
        return Err(imp.err(format!("SoftmaxCrossEntropyLoss's labels must be int64 or int32, got {}", imp.f.ty(labels))));
    }
    if !matches!(reduction, "mean" | "sum" | "none") {
        return Err(imp.err(format!("reduction '{reduction}' is not supported (mean, sum, none)")));
    }
    if n_out > 2 {
        return Err(imp.err("SoftmaxCrossEntropyLoss has at most 2 outputs"));
    }
    let c = s[1];
    if reduction == "mean" && weights.is_none() && n_out == 1 {
        let classes_last = if r > 2 {
            let mut perm = vec![0i64];
            perm.extend(2..r as i64);
            perm.push(1);
            imp.push(OpKind::Transpose, &[scores], attrs([("perm", Attr::IntArray(perm))]), None)?
        } else {
            scores
        };
        let m: u64 = ls.iter().product();
        let logits = imp.reshape(classes_last, &[m, c])?;
        let lab = imp.reshape(labels, &[m])?;
        let ii = ignore.unwrap_or(i64::MIN);
        return Ok(vec![Val::Dyn(imp.push(OpKind::CrossEntropy, &[logits, lab], attrs([("ignore_index", Attr::Int(ii))]), None)?)]);
    }
    let lsm = log_softmax(imp, scores, &[1])?;
    let ldt = imp.dt(labels);
    let mask = match ignore {
        Some(i) => {
            let iv = imp.fill_of(&ls, i as f32, ldt)?;
            Some(imp.bin(OpKind::Ne, labels, iv)?)
        }
        None => None,
    };
    let safe = match mask {
        Some(mk) => {
            let z = imp.fill_of(&ls, 0.0, ldt)?;
            imp.push(OpKind::Select, &[mk, labels, z], Attrs::new(), None)?
        }
        None => labels,
    };
    let mut col = ls.clone();
    col.insert(1, 1);
    let idx = imp.reshape(safe, &col)?;
    let picked = imp.push(OpKind::TakeAlong, &[lsm, idx], attrs([("axis", Attr::Int(1))]), None)?;
    let picked = imp.reshape(picked, &ls)?;
    let nll = imp.un(OpKind::Neg, picked)?;
    let zeros = |imp: &mut Importer<'_>| imp.fill(&ls, 0.0);
    let (loss, denom) = match weights {
        Some(w) => {
            let wv = imp.dynv(&w)?;
            if imp.ty(wv) != [c] {
                return Err(imp.err(format!("SoftmaxCrossEntropyLoss's weights must have shape [{c}]")));
            }
            let mut wl = imp.push(OpKind::Gather, &[wv, safe], attrs([("axis", Attr::Int(0))]), None)?;
            if let Some(mk) = mask {
                let z = zeros(imp)?;
                wl = imp.push(OpKind::Select, &[mk, wl, z], Attrs::new(), None)?;
            }
            (imp.bin(OpKind::Mul, nll, wl)?, Some(wl))
        }
        None => match mask {
            Some(mk) => {
                let z = zeros(imp)?;
                let l = imp.push(OpKind::Select, &[mk, nll, z], Attrs::new(), None)?;
                (l, Some(imp.cast(mk, DType::F32)?))
            }
            None => (nll, None),
        },
    };
    let all: Vec<usize> = (0..ls.len()).collect();
    let out = match reduction {
        "none" => loss,
        "sum" => imp.reduce(OpKind::ReduceSum, loss, &all)?,
        _ => {
            let total = imp.reduce(OpKind::ReduceSum, loss, &all)?;
            match denom {
                Some(d) => {
                    let dn = imp.reduce(OpKind::ReduceSum, d, &all)?;
                    imp.bin(OpKind::Div, total, dn)?
                }
                None => imp.scale(total, 1.0 / ls.iter().product::<u64>().max(1) as f32)?,
            }
        }
    };
    let mut outs = vec![Val::Dyn(out)];
    if n_out > 1 {
        outs.push(Val::Dyn(lsm));
    }
    Ok(outs)
}
