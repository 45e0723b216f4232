//! Convolution and pooling: Conv, MaxPool, AveragePool and the global
//! poolings, with explicit padding (asymmetric pads become concats with fills).

use super::*;

/// The op types converted here.
pub(super) const OPS: &[&str] = &["Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"];

pub(super) fn convert(imp: &mut Importer<'_>, op: &str, a: &NodeAttrs<'_>, ins: &[Option<Val>], n_out: usize) -> R<Vec<Val>> {
    let x = inp(imp, ins, 0);
    let one = |v: ValueId| Ok(vec![Val::Dyn(v)]);
    match op {
        "Conv" => conv(imp, a, ins).map(|v| vec![Val::Dyn(v)]),
        "MaxPool" | "AveragePool" => {
            if n_out > 1 {
                return Err(imp.err("MaxPool's Indices output is not supported"));
            }
            pool(imp, op, a, x?).map(|v| vec![Val::Dyn(v)])
        }
        "GlobalAveragePool" | "GlobalMaxPool" => {
            let v = imp.dynv(&x?)?;
            let s = imp.ty(v);
            if s.len() < 3 {
                return Err(imp.err(format!("{op} needs an input of rank >= 3, got {s:?}")));
            }
            let dims: Vec<usize> = (2..s.len()).collect();
            let n: u64 = s[2..].iter().product();
            let r = if op == "GlobalAveragePool" {
                let t = imp.reduce(OpKind::ReduceSum, v, &dims)?;
                imp.scale(t, 1.0 / n as f32)?
            } else {
                imp.reduce(OpKind::ReduceMax, v, &dims)?
            };
            let mut keep = s[..2].to_vec();
            keep.extend(vec![1; s.len() - 2]);
            one(imp.reshape(r, &keep)?)
        }
        _ => Err(not_here(imp, op)),
    }
}

/// Explicit pads for a 2-D window op: `[top, left, bottom, right]` from
/// `pads` or `auto_pad`.
fn pads_2d(imp: &Importer<'_>, a: &NodeAttrs<'_>, hw: [u64; 2], k: [u64; 2], s: [u64; 2]) -> R<[u64; 4]> {
    let auto = a.string("auto_pad").unwrap_or_else(|| "NOTSET".into());
    match auto.as_str() {
        "NOTSET" => {
            let p = a.ints("pads").unwrap_or_else(|| vec![0; 4]);
            if p.len() != 4 || p.iter().any(|&v| v < 0) {
                return Err(imp.err(format!("pads {p:?} must be 4 non-negative numbers")));
            }
            Ok([p[0] as u64, p[1] as u64, p[2] as u64, p[3] as u64])
        }
        "VALID" => Ok([0; 4]),
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut out = [0u64; 4];
            for i in 0..2 {
                let o = hw[i].div_ceil(s[i]);
                let total = ((o - 1) * s[i] + k[i]).saturating_sub(hw[i]);
                let small = total / 2;
                let (b, e) = if auto == "SAME_UPPER" { (small, total - small) } else { (total - small, small) };
                out[i] = b;
                out[i + 2] = e;
            }
            Ok(out)
        }
        other => Err(imp.err(format!("auto_pad '{other}' is not supported"))),
    }
}

fn check_ones(imp: &Importer<'_>, a: &NodeAttrs<'_>, name: &str) -> R<()> {
    if let Some(d) = a.ints(name)
        && d.iter().any(|&v| v != 1)
    {
        return Err(imp.err(format!("{name} {d:?} are not supported (only 1)")));
    }
    Ok(())
}

fn conv(imp: &mut Importer<'_>, a: &NodeAttrs<'_>, ins: &[Option<Val>]) -> R<ValueId> {
    let xv = ins.first().cloned().flatten().ok_or_else(|| imp.err("Conv needs X"))?;
    let wv = ins.get(1).cloned().flatten().ok_or_else(|| imp.err("Conv needs W"))?;
    let x = imp.dynv(&xv)?;
    let w = imp.dynv(&wv)?;
    let (sx, sw) = (imp.ty(x), imp.ty(w));
    if sx.len() != 4 || sw.len() != 4 {
        return Err(imp.err(format!("only 2-D convolutions (NCHW input, 4-D filter) are supported, got {sx:?} and {sw:?}")));
    }
    // group G: X has C = G·(W's second dim) channels, W's M filters split in G groups.
    let g = a.int("group", 1);
    if g < 1 {
        return Err(imp.err(format!("group {g} must be >= 1")));
    }
    let g = g as u64;
    if sw[1].checked_mul(g) != Some(sx[1]) || sw[0] % g != 0 {
        return Err(imp.err(format!(
            "group {g} does not fit X {sx:?} and W {sw:?} (needs C = group · W[1] and W[0] divisible by group)"
        )));
    }
    check_ones(imp, a, "dilations")?;
    if let Some(k) = a.ints("kernel_shape")
        && k != [sw[2] as i64, sw[3] as i64]
    {
        return Err(imp.err(format!("kernel_shape {k:?} does not match the filter {sw:?}")));
    }
    let st = a.ints("strides").unwrap_or_else(|| vec![1, 1]);
    if st.len() != 2 || st.iter().any(|&v| v < 1) {
        return Err(imp.err(format!("strides {st:?} must be two positive numbers")));
    }
    let s = [st[0] as u64, st[1] as u64];
    let p = pads_2d(imp, a, [sx[2], sx[3]], [sw[2], sw[3]], s)?;
    let mut x = x;
    let mut pad = [p[0], p[1]];
    if p[0] != p[2] || p[1] != p[3] {
        // Asymmetric: zero-pad explicitly, then convolve without padding.
        x = pad_hw(imp, x, p, 0.0)?;
        pad = [0, 0];
    }
    let mut at = attrs([("stride", ints(&s)), ("padding", ints(&pad))]);
    if g > 1 {
        at.insert("groups".into(), Attr::Int(g as i64));
    }
    let y = imp.push(OpKind::Conv2d, &[x, w], at, None)?;
    match ins.get(2).cloned().flatten() {
        Some(b) => {
            let bv = imp.dynv(&b)?;
            if imp.ty(bv) != [sw[0]] {
                return Err(imp.err(format!("Conv bias must have shape [{}]", sw[0])));
            }
            let ys = imp.ty(y);
            let bb = imp.push(OpKind::Broadcast, &[bv], attrs([("dims", Attr::IntArray(vec![1]))]), Some(TensorType::f32(ys)))?;
            imp.bin(OpKind::Add, y, bb)
        }
        None => Ok(y),
    }
}

/// `x` (NCHW) padded with `value`: `[top, left, bottom, right]`, by concats with fills.
fn pad_hw(imp: &mut Importer<'_>, x: ValueId, p: [u64; 4], value: f32) -> R<ValueId> {
    let mut cur = x;
    for (dim, before, after) in [(2usize, p[0], p[2]), (3, p[1], p[3])] {
        if before == 0 && after == 0 {
            continue;
        }
        let s = imp.ty(cur);
        let mut parts = Vec::new();
        for (n, is_x) in [(before, false), (0, true), (after, false)] {
            if is_x {
                parts.push(cur);
            } else if n > 0 {
                let mut fs = s.clone();
                fs[dim] = n;
                parts.push(imp.fill(&fs, value)?);
            }
        }
        cur = imp.push(OpKind::Concat, &parts, attrs([("dim", Attr::Int(dim as i64))]), None)?;
    }
    Ok(cur)
}

fn pool(imp: &mut Importer<'_>, op: &str, a: &NodeAttrs<'_>, xv: Val) -> R<ValueId> {
    let x = imp.dynv(&xv)?;
    let sx = imp.ty(x);
    if sx.len() != 4 {
        return Err(imp.err(format!("only 2-D pooling (NCHW input) is supported, got {sx:?}")));
    }
    let k = a.ints("kernel_shape").ok_or_else(|| imp.err("pooling needs kernel_shape"))?;
    if k.len() != 2 || k.iter().any(|&v| v < 1) {
        return Err(imp.err(format!("kernel_shape {k:?} must be two positive numbers")));
    }
    let k = [k[0] as u64, k[1] as u64];
    let st = a.ints("strides").unwrap_or_else(|| vec![1, 1]);
    if st.len() != 2 || st.iter().any(|&v| v < 1) {
        return Err(imp.err(format!("strides {st:?} must be two positive numbers")));
    }
    let s = [st[0] as u64, st[1] as u64];
    check_ones(imp, a, "dilations")?;
    if a.int("ceil_mode", 0) != 0 {
        return Err(imp.err("ceil_mode=1 is not supported"));
    }
    if op == "MaxPool" && a.int("storage_order", 0) != 0 {
        return Err(imp.err("storage_order=1 is not supported"));
    }
    let p = pads_2d(imp, a, [sx[2], sx[3]], k, s)?;
    let padded = p.iter().any(|&v| v > 0);
    let pa = attrs([("window", ints(&k)), ("stride", ints(&s))]);
    if op == "MaxPool" {
        let xp = if padded { pad_hw(imp, x, p, f32::NEG_INFINITY)? } else { x };
        return imp.push(OpKind::MaxPool2d, &[xp], pa, None);
    }
    let xp = if padded { pad_hw(imp, x, p, 0.0)? } else { x };
    let y = imp.push(OpKind::AvgPool2d, &[xp], pa, None)?;
    if !padded || a.int("count_include_pad", 0) != 0 {
        return Ok(y);
    }
    // Exclude the padding from each window's count: y * (kh*kw / count), count folded.
    let ys = imp.ty(y);
    let (oh, ow) = (ys[2], ys[3]);
    let mut ratio = Vec::with_capacity((oh * ow) as usize);
    for i in 0..oh {
        for j in 0..ow {
            let rows = (0..k[0]).filter(|&r| (i * s[0] + r).checked_sub(p[0]).is_some_and(|h| h < sx[2])).count() as u64;
            let cols = (0..k[1]).filter(|&c| (j * s[1] + c).checked_sub(p[1]).is_some_and(|w| w < sx[3])).count() as u64;
            ratio.push((k[0] * k[1]) as f32 / (rows * cols).max(1) as f32);
        }
    }
    let r = imp.materialize(&CTensor::f32(vec![oh, ow], ratio))?;
    let rb = imp.push(OpKind::Broadcast, &[r], attrs([("dims", Attr::IntArray(vec![2, 3]))]), Some(TensorType::f32(ys)))?;
    imp.bin(OpKind::Mul, y, rb)
}
