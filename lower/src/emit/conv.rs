//! Convolutions, pools and their gradients (NCHW): result element `idx`
//! accumulates from 0 (or -inf for max pooling) over the window in
//! row-major order. Gradients gather: each input position sums over the
//! output positions whose window holds it; max pooling's gradient goes to
//! the first maximal element of each window. Padding and window checks
//! guard every load. With `groups` G, filter f reads input channels
//! `(f / (F/G))·(C/G) ..` (the filter's second dim is C/G).

use super::{Ctx, Em};
use ckopt_ir::ops::{conv_groups, conv_params, pool_params};
use ckopt_ir::{Diag, OpKind};

/// Filters per group (F/G) of a conv op, checked against the shapes.
fn filters_per_group(c: &Ctx, f: u64, cg: u64, ch: u64) -> Result<u64, Diag> {
    let g = conv_groups(&c.op.attrs).map_err(|m| c.bad(m))?;
    if f % g != 0 || cg.checked_mul(g) != Some(ch) {
        return Err(c.bad(format!("groups {g} does not fit {ch} channels and {f} filters of {cg} channels")));
    }
    Ok(f / g)
}

/// The first input channel of filter `fi`'s group: `(fi / fg)·cg` (0 without groups).
fn group_base(em: &mut Em, fi: &str, fg: u64, f: u64, cg: u64) -> Option<String> {
    (fg != f).then(|| {
        let g = em.idiv_c(fi, fg);
        em.imul_c(&g, cg)
    })
}

/// `y[n,f,oh,ow] = sum_{c<C/G,i,j} x[n,base(f)+c,oh*sh+i-ph,ow*sw+j-pw] * w[f,c,i,j]`.
pub(super) fn conv2d(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let (x, w) = (c.xs(0), c.xs(1));
    let (s, p) = conv_params(&c.op.attrs).map_err(|m| c.bad(m))?;
    let fg = filters_per_group(c, w[0], w[1], x[1])?;
    let yi = em.delin(c.idx, &c.ys); // n f oh ow
    let base = group_base(em, &yi[1], fg, w[0], w[1]);
    let (mx, mw) = (c.ins[0].clone(), c.ins[1].clone());
    let zero = em.cf(0.0);
    Ok(em.loops_acc(&[w[1], w[2], w[3]], &zero, &mut |em, ivs, acc| {
        let (ci, i, j) = (&ivs[0], &ivs[1], &ivs[2]);
        let hh = window_input(em, &yi[2], i, s[0], p[0]);
        let ww = window_input(em, &yi[3], j, s[1], p[1]);
        let xc = match &base {
            Some(b) => em.iadd(b, ci),
            None => ci.clone(),
        };
        let xi = vec![yi[0].clone(), xc, hh.clone(), ww.clone()];
        let wi = vec![yi[1].clone(), ci.clone(), i.clone(), j.clone()];
        add_in_bounds(em, p, (&hh, &ww), (x[2], x[3]), acc, &mut |em| {
            let xv = em.load_at(&mx, &xi, &x);
            let wv = em.load_at(&mw, &wi, &w);
            em.fbin("mulf", &xv, &wv)
        })
    }))
}

/// `dx[n,c,h,w] = sum_{f of c's group,i,j} dy[n,f,oh,ow] * w[f,c mod (C/G),i,j]`, `oh*sh = h+ph-i`, `ow*sw = w+pw-j`.
pub(super) fn conv2d_grad_input(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let (dy, w) = (c.xs(0), c.xs(1));
    let (s, p) = conv_params(&c.op.attrs).map_err(|m| c.bad(m))?;
    let fg = filters_per_group(c, w[0], w[1], c.ys[1])?;
    let yi = em.delin(c.idx, &c.ys); // n c h w
    // Group g = c / cg: filters g·fg + m (m < fg), filter channel c mod cg.
    let grouped = (fg != w[0]).then(|| {
        let g = em.idiv_c(&yi[1], w[1]);
        let f0 = em.imul_c(&g, fg);
        let cl = em.irem_c(&yi[1], w[1]);
        (f0, cl)
    });
    let (mdy, mw) = (c.ins[0].clone(), c.ins[1].clone());
    let zero = em.cf(0.0);
    Ok(em.loops_acc(&[fg, w[2], w[3]], &zero, &mut |em, ivs, acc| {
        let (m, i, j) = (&ivs[0], &ivs[1], &ivs[2]);
        let (fi, cl) = match &grouped {
            Some((f0, cl)) => (em.iadd(f0, m), cl.clone()),
            None => (m.clone(), yi[1].clone()),
        };
        let (oh, ch) = strided_source(em, &yi[2], p[0], i, s[0], dy[2]);
        let (ow, cw) = strided_source(em, &yi[3], p[1], j, s[1], dy[3]);
        let cond = em.and(&ch, &cw);
        let dyi = vec![yi[0].clone(), fi.clone(), oh, ow];
        let wi = vec![fi, cl, i.clone(), j.clone()];
        em.add_if(&cond, acc, &mut |em| {
            let a = em.load_at(&mdy, &dyi, &dy);
            let b = em.load_at(&mw, &wi, &w);
            em.fbin("mulf", &a, &b)
        })
    }))
}

/// `dw[f,c,i,j] = sum_{n,oh,ow} dy[n,f,oh,ow] * x[n,base(f)+c,oh*sh+i-ph,ow*sw+j-pw]`.
pub(super) fn conv2d_grad_filter(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let (x, dy) = (c.xs(0), c.xs(1));
    let (s, p) = conv_params(&c.op.attrs).map_err(|m| c.bad(m))?;
    let fg = filters_per_group(c, c.ys[0], c.ys[1], x[1])?;
    let yi = em.delin(c.idx, &c.ys); // f c i j
    let xc = match group_base(em, &yi[0], fg, c.ys[0], c.ys[1]) {
        Some(b) => em.iadd(&b, &yi[1]),
        None => yi[1].clone(),
    };
    let (mx, mdy) = (c.ins[0].clone(), c.ins[1].clone());
    let zero = em.cf(0.0);
    Ok(em.loops_acc(&[dy[0], dy[2], dy[3]], &zero, &mut |em, ivs, acc| {
        let (n, oh, ow) = (&ivs[0], &ivs[1], &ivs[2]);
        let hh = window_input(em, oh, &yi[2], s[0], p[0]);
        let ww = window_input(em, ow, &yi[3], s[1], p[1]);
        let xi = vec![n.clone(), xc.clone(), hh.clone(), ww.clone()];
        let dyi = vec![n.clone(), yi[0].clone(), oh.clone(), ow.clone()];
        add_in_bounds(em, p, (&hh, &ww), (x[2], x[3]), acc, &mut |em| {
            let a = em.load_at(&mdy, &dyi, &dy);
            let b = em.load_at(&mx, &xi, &x);
            em.fbin("mulf", &a, &b)
        })
    }))
}

/// `o*s + k - p`: the input row (or column) that output position `o` reads
/// at window offset `k` (stride `s`, padding `p`).
fn window_input(em: &mut Em, o: &str, k: &str, s: u64, p: u64) -> String {
    let os = em.imul_c(o, s);
    let at = em.iadd(&os, k);
    em.isub_c(&at, p)
}

/// `acc + term`; with padding, only where the input position `(hh, ww)` lies
/// inside the `h x w` image.
fn add_in_bounds(em: &mut Em, p: [u64; 2], (hh, ww): (&str, &str), (h, w): (u64, u64), acc: &str, term: &mut dyn FnMut(&mut Em) -> String) -> String {
    if p == [0, 0] {
        let t = term(em);
        em.fbin("addf", acc, &t)
    } else {
        let a = em.in_range(hh, h);
        let b = em.in_range(ww, w);
        let cond = em.and(&a, &b);
        em.add_if(&cond, acc, term)
    }
}

/// Max or average over the window `[oh*sh, oh*sh+KH) x [ow*sw, ow*sw+KW)`.
pub(super) fn pool(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let x = c.xs(0);
    let (win, s) = pool_params(&c.op.attrs).map_err(|m| c.bad(m))?;
    let yi = em.delin(c.idx, &c.ys); // n c oh ow
    let mx = c.ins[0].clone();
    let is_max = c.op.kind == OpKind::MaxPool2d;
    let init = if is_max { em.cf(f32::NEG_INFINITY) } else { em.cf(0.0) };
    let r = em.loops_acc(&[win[0], win[1]], &init, &mut |em, ivs, acc| {
        let hs = em.imul_c(&yi[2], s[0]);
        let hh = em.iadd(&hs, &ivs[0]);
        let ws = em.imul_c(&yi[3], s[1]);
        let ww = em.iadd(&ws, &ivs[1]);
        let xi = vec![yi[0].clone(), yi[1].clone(), hh, ww];
        let v = em.load_at(&mx, &xi, &x);
        em.fbin(if is_max { "maxnumf" } else { "addf" }, acc, &v)
    });
    Ok(if is_max {
        r
    } else {
        let cnt = em.cf((win[0] * win[1]) as f32);
        em.fbin("divf", &r, &cnt)
    })
}

/// A pool's gradient: gathers over the windows that contain (h, w), in
/// row-major window order. Max pooling: operands (x, dy), the gradient of
/// a window goes to its first maximal element; average: operand dy.
pub(super) fn pool_grad(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let is_max = c.op.kind == OpKind::MaxPool2dGrad;
    let dyv = if is_max { 1 } else { 0 };
    let dy = c.xs(dyv);
    let x = c.ys.clone();
    let (win, s) = pool_params(&c.op.attrs).map_err(|m| c.bad(m))?;
    let yi = em.delin(c.idx, &c.ys); // n c h w
    let mdy = c.ins[dyv].clone();
    let mx = c.ins[0].clone();
    let zero = em.cf(0.0);
    Ok(em.loops_acc(&[win[0], win[1]], &zero, &mut |em, ivs, acc| {
        // i = KH-1-r and j = KW-1-t so that windows come in increasing (oh, ow).
        let kh1 = em.ci(win[0] - 1);
        let i = em.op(&format!("arith.subi {kh1}, {} : index", ivs[0]));
        let kw1 = em.ci(win[1] - 1);
        let j = em.op(&format!("arith.subi {kw1}, {} : index", ivs[1]));
        let (oh, ch) = strided_source(em, &yi[2], 0, &i, s[0], dy[2]);
        let (ow, cw) = strided_source(em, &yi[3], 0, &j, s[1], dy[3]);
        let cond = em.and(&ch, &cw);
        let dyi = vec![yi[0].clone(), yi[1].clone(), oh.clone(), ow.clone()];
        let acc_s = acc.to_string();
        em.if_vals(
            &cond,
            &["f32"],
            &mut |em| {
                let g = em.load_at(&mdy, &dyi, &dy);
                if is_max {
                    // First maximal element of window (oh, ow), as a position p*KW+q.
                    let ninf = em.cf(f32::NEG_INFINITY);
                    let pos0 = em.ci(0);
                    let (oh, ow) = (oh.clone(), ow.clone());
                    let (y0, y1) = (yi[0].clone(), yi[1].clone());
                    let best = em.for_iter(win[0], &[(ninf, "f32"), (pos0, "index")], &mut |em, pi, a| {
                        em.for_iter(win[1], &[(a[0].clone(), "f32"), (a[1].clone(), "index")], &mut |em, qi, b| {
                            let hs = em.imul_c(&oh, s[0]);
                            let hh = em.iadd(&hs, pi);
                            let ws = em.imul_c(&ow, s[1]);
                            let ww = em.iadd(&ws, qi);
                            let v = em.load_at(&mx, &[y0.clone(), y1.clone(), hh, ww], &x);
                            let gt = em.op(&format!("arith.cmpf ogt, {v}, {} : f32", b[0]));
                            let pk = em.imul_c(pi, win[1]);
                            let pos = em.iadd(&pk, qi);
                            let nb = em.op(&format!("arith.select {gt}, {v}, {} : f32", b[0]));
                            let np = em.op(&format!("arith.select {gt}, {pos}, {} : index", b[1]));
                            vec![nb, np]
                        })
                    });
                    let ik = em.imul_c(&i, win[1]);
                    let me = em.iadd(&ik, &j);
                    let hit = em.op(&format!("arith.cmpi eq, {}, {me} : index", best[1]));
                    let z = em.cf(0.0);
                    let gg = em.op(&format!("arith.select {hit}, {g}, {z} : f32"));
                    vec![em.fbin("addf", &acc_s, &gg)]
                } else {
                    let cnt = em.cf((win[0] * win[1]) as f32);
                    let q = em.fbin("divf", &g, &cnt);
                    vec![em.fbin("addf", &acc_s, &q)]
                }
            },
            &mut |_| vec![acc_s.clone()],
        )[0]
            .clone()
    }))
}

/// For a result coordinate `h` reached from source coordinate `o` as
/// `o*stride + k - pad = h`: returns (`o`, in-bounds condition `o` integral and
/// `0 <= o < out`).
fn strided_source(em: &mut Em, h: &str, pad: u64, k: &str, stride: u64, out: u64) -> (String, String) {
    let hp = em.iadd_c(h, pad);
    let t = em.op(&format!("arith.subi {hp}, {k} : index"));
    let nonneg = em.icmp_c("sge", &t, 0);
    let o = em.idiv_c(&t, stride);
    let lt = em.icmp_c("slt", &o, out);
    let mut cond = em.and(&nonneg, &lt);
    if stride != 1 {
        let r = em.irem_c(&t, stride);
        let ex = em.icmp_c("eq", &r, 0);
        cond = em.and(&cond, &ex);
    }
    (o, cond)
}
