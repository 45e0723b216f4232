//! The memory/recompute curve of a gradient function (`ckopt-opt
//! --memory-curve=FILE`): every plan remat can make, measured, and the
//! Pareto front of (temp peak bytes, recompute flops) over them.
//!
//! What: the plans are those of the modes, each written as the pass option
//! text that makes it — `remat{mode=none}`, `remat{mode=sqrt}`,
//! `remat{mode=log k=K}` (K = 1, 2, 4), `remat{mode=greedy}` (its budget
//! search) and greedy at each threshold of that search
//! (`remat{mode=greedy search=false threshold=B}`), and `optimal`'s DP swept
//! over budgets between the smallest peak found and no remat
//! (`remat{mode=optimal budget=B}`). Each text is run through `remat_func`
//! on a copy of the function and measured (temp_peak_bytes as in the memory
//! report, recompute flops of the `ck.recompute` ops), so a point's `plan`,
//! put in the pipeline in place of `--memory-curve`, reproduces its numbers
//! exactly (remat is deterministic). The front keeps a point when no other
//! has a peak as low and less recompute; points are sorted by peak (so
//! recompute strictly falls along it). `min_feasible_bytes` is the lowest
//! peak of any plan (the first point).
//!
//! `ck.mirror`/`ck.checkpoint` are honoured by every point: where the
//! backward reads a mirror value, "no remat" is the plan that recomputes
//! only the mirror regions (each once) and keeps everything else, written
//! `remat{mode=greedy budget=PEAK}` (the least recompute within its own
//! peak), since `remat{mode=none}` changes nothing and would keep them.
//!
//! Invariants: no point of `points` is dominated by a measured plan; peaks
//! strictly increase and recompute strictly decreases along `points`; the
//! last point is no remat (zero recompute, or only the mirror regions')
//! unless the function has no backward. Cost: about 30 remat runs (each one rewrite plus liveness per
//! plan it measures; `optimal` builds its DP table per budget).

use super::{RematOptions, remat_func};
use crate::analysis::timeline::{esc, fmt_mib, mib, nice_step, svg_document};
use crate::analysis::{memory_report, peak, liveness};
use crate::manager::parse_pipeline;
use ckopt_ir::Func;
use serde::Serialize;
use std::fmt::Write;

/// One measured plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CurvePoint {
    pub peak_bytes: u64,
    pub recompute_flops: u64,
    /// The pass option text that reproduces the point.
    pub plan: String,
}

/// The curve of one gradient function.
#[derive(Clone, Debug, Serialize)]
pub struct Curve {
    pub function: String,
    pub min_feasible_bytes: u64,
    /// The Pareto front, sorted by peak.
    pub points: Vec<CurvePoint>,
    /// Flops of one forward pass (the unit of the SVG's recompute axis).
    #[serde(skip)]
    pub forward_flops: u64,
    /// Every measured plan, dominated ones included (drawn faintly).
    #[serde(skip)]
    pub measured: Vec<CurvePoint>,
}

/// Parses `remat{...}` text into options (the registry's own parser).
fn options(text: &str) -> Option<RematOptions> {
    let entries = parse_pipeline(text).ok()?;
    let e = entries.first()?;
    super::parse_options(&e.options).ok()
}

/// Measures one plan text on a copy of `f`: (temp peak, recompute flops).
fn measure(f: &Func, text: &str) -> Option<CurvePoint> {
    let opts = options(text)?;
    let mut g = f.clone();
    let (peak_bytes, recompute_flops) = match remat_func(&mut g, &opts).ok()? {
        Some(o) => (o.temp_peak_after, o.recompute_flops),
        None => (peak(f, &liveness(f), false), 0),
    };
    Some(CurvePoint { peak_bytes, recompute_flops, plan: text.to_string() })
}

/// The Pareto front of `pts`: sorted by (peak, recompute, plan), keeps a
/// point only when its recompute is below every point with a lower peak.
pub fn pareto_front(pts: &[CurvePoint]) -> Vec<CurvePoint> {
    let mut sorted = pts.to_vec();
    sorted.sort_by_key(|p| (p.peak_bytes, p.recompute_flops));
    let mut out: Vec<CurvePoint> = Vec::new();
    for p in sorted {
        if out.last().is_none_or(|l| p.recompute_flops < l.recompute_flops) {
            out.push(p);
        }
    }
    out
}

/// The curve of `f`, or None when remat has nothing to do there (no
/// backward reads of forward values, or already rematerialized).
pub fn memory_curve(f: &Func) -> Option<Curve> {
    if f.body.iter().any(|o| o.has_attr(ckopt_ir::ops::ATTR_RECOMPUTE)) {
        return None;
    }
    // A fused function: its chain and "no remat" as remat plans them
    // (unfused, measured fused); the plan texts run on `f` itself.
    let mut plain = f.clone();
    let fused = ckopt_ir::fusion::strip_fusion(&mut plain);
    let mut ch = super::chain::build_chain(&plain);
    ch.fused = fused;
    if !ch.has_backward || ch.is_empty() {
        return None;
    }
    let mut texts: Vec<String> = ["sqrt", "log k=1", "log k=2", "log k=4", "greedy"]
        .iter()
        .map(|m| format!("remat{{mode={m}}}"))
        .collect();
    // No remat. With `ck.mirror` values the backward reads, `remat{mode=none}`
    // would keep them (it changes nothing), which no other run does: the
    // point is then the plan that keeps everything else, reproduced by a
    // budgeted run at its peak (the least recompute within that budget).
    let none_cand = super::no_remat(&plain, &ch, peak(f, &liveness(f), false));
    let none_text = if none_cand.rewrites() {
        format!("remat{{mode=greedy budget={}}}", super::round_size(none_cand.peak).0)
    } else {
        "remat{mode=none}".to_string()
    };
    texts.insert(0, none_text.clone());
    for b in super::greedy_thresholds(&ch) {
        texts.push(format!("remat{{mode=greedy search=false threshold={}}}", super::round_size(b).0));
    }
    let mut measured: Vec<CurvePoint> = texts.iter().filter_map(|t| measure(f, t)).collect();
    let none_peak = measured.iter().find(|p| p.plan == none_text).map_or(none_cand.peak, |p| p.peak_bytes);
    let lo = measured.iter().map(|p| p.peak_bytes).min().unwrap_or(none_peak);
    // optimal swept over budgets from the smallest peak found up to no remat
    const STEPS: u64 = 16;
    let mut last = None;
    for i in 0..STEPS {
        let (text, b) = super::round_size(lo + (none_peak.saturating_sub(lo)) * i / STEPS);
        if b == 0 || last == Some(b) {
            continue;
        }
        last = Some(b);
        if let Some(p) = measure(f, &format!("remat{{mode=optimal budget={text}}}")) {
            measured.push(p);
        }
    }
    let points = pareto_front(&measured);
    let min_feasible_bytes = points.first().map_or(none_peak, |p| p.peak_bytes);
    Some(Curve { function: f.name.clone(), min_feasible_bytes, points, forward_flops: memory_report(f).forward_flops, measured })
}

/// The curves of every function of `m` that remat can rewrite, in order.
pub fn module_curves(m: &ckopt_ir::Module) -> Vec<Curve> {
    m.funcs.iter().filter_map(memory_curve).collect()
}

/// The curves as JSON (an array, one object per function), pretty-printed.
pub fn curves_json(curves: &[Curve]) -> String {
    let mut s = serde_json::to_string_pretty(curves).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// The mode a plan text names (`remat{mode=X ...}` -> X).
fn mode_of(plan: &str) -> &str {
    plan.split("mode=").nth(1).and_then(|r| r.split([' ', '}']).next()).unwrap_or("?")
}

fn mode_color(mode: &str) -> &'static str {
    match mode {
        "none" => "#555555",
        "sqrt" => "#3b78c2",
        "log" => "#9b59b6",
        "greedy" => "#e08a2c",
        "optimal" => "#2ca05a",
        _ => "#999999",
    }
}

/// Tick positions 0, step, 2·step, ... up to `max` (`nice_step` for about `n` ticks).
fn ticks(max: f64, n: f64) -> impl Iterator<Item = f64> {
    let step = nice_step(max, n);
    (0..).map(move |i| i as f64 * step).take_while(move |&t| t <= max + 1e-9)
}

const W: f64 = 900.0;
const PANEL_H: f64 = 420.0;
const ML: f64 = 80.0;
const MR: f64 = 190.0;
const MT: f64 = 50.0;
const MB: f64 = 50.0;

/// One panel's scales: MiB across, forward passes up, the panel at `y0`.
struct Frame {
    y0: f64,
    xmax: f64,
    ymax: f64,
    fwd: f64,
    pw: f64,
    ph: f64,
}

impl Frame {
    fn new(c: &Curve, y0: f64) -> Frame {
        let fwd = c.forward_flops.max(1) as f64;
        let xmax = c.measured.iter().map(|p| mib(p.peak_bytes)).fold(0.0, f64::max).max(1e-6) * 1.05;
        let ymax = c.measured.iter().map(|p| p.recompute_flops as f64 / fwd).fold(0.0, f64::max).max(0.1) * 1.1;
        Frame { y0, xmax, ymax, fwd, pw: W - ML - MR, ph: PANEL_H - MT - MB }
    }
    fn passes(&self, f: u64) -> f64 {
        f as f64 / self.fwd
    }
    fn px(&self, x: f64) -> f64 {
        ML + x / self.xmax * self.pw
    }
    fn py(&self, y: f64) -> f64 {
        self.y0 + MT + self.ph - y / self.ymax * self.ph
    }
}

/// One function's panel: title and axes, the plans and the front, legend.
fn panel(out: &mut String, c: &Curve, y0: f64) {
    let fr = Frame::new(c, y0);
    title_and_axes(out, c, &fr);
    plans_and_front(out, c, &fr);
    legend(out, &fr);
}

fn title_and_axes(out: &mut String, c: &Curve, fr: &Frame) {
    let (y0, pw, ph) = (fr.y0, fr.pw, fr.ph);
    let _ = writeln!(
        out,
        r#"<text x="{ML}" y="{}" font-size="15" font-weight="bold">@{} — memory vs recompute (min feasible {} MiB)</text>"#,
        y0 + 28.0,
        esc(&c.function),
        fmt_mib(mib(c.min_feasible_bytes))
    );
    let _ = writeln!(out, r##"<rect x="{ML}" y="{}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##, y0 + MT);
    // grid lines and labels at "nice" steps
    for t in ticks(fr.xmax, 8.0) {
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{a}" x2="{x}" y2="{b}" stroke="#eee"/><text x="{x}" y="{ty}" font-size="11" text-anchor="middle">{l}</text>"##,
            x = fr.px(t),
            a = y0 + MT,
            b = y0 + MT + ph,
            ty = y0 + MT + ph + 16.0,
            l = fmt_mib(t)
        );
    }
    for t in ticks(fr.ymax, 6.0) {
        let _ = writeln!(
            out,
            r##"<line x1="{ML}" y1="{y}" x2="{r}" y2="{y}" stroke="#eee"/><text x="{tx}" y="{ty}" font-size="11" text-anchor="end">{l}</text>"##,
            y = fr.py(t),
            r = ML + pw,
            tx = ML - 6.0,
            ty = fr.py(t) + 4.0,
            l = fmt_mib(t)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">temp peak (MiB)</text>"#,
        ML + pw / 2.0,
        y0 + PANEL_H - 12.0
    );
    let _ = writeln!(
        out,
        r#"<text x="18" y="{y}" font-size="12" text-anchor="middle" transform="rotate(-90 18 {y})">recompute (forward passes)</text>"#,
        y = y0 + MT + ph / 2.0
    );
}

/// Every measured plan as a faint dot, the front as a staircase of strong
/// dots; each dot's tooltip is its plan text.
fn plans_and_front(out: &mut String, c: &Curve, fr: &Frame) {
    let dot = |out: &mut String, p: &CurvePoint, style: &str| {
        let _ = writeln!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" fill="{}" {style}><title>{} — {} MiB, {:.3} fwd</title></circle>"#,
            fr.px(mib(p.peak_bytes)),
            fr.py(fr.passes(p.recompute_flops)),
            mode_color(mode_of(&p.plan)),
            esc(&p.plan),
            fmt_mib(mib(p.peak_bytes)),
            fr.passes(p.recompute_flops)
        );
    };
    for p in &c.measured {
        dot(out, p, r#"r="3" fill-opacity="0.25""#);
    }
    let mut d = String::new();
    for (i, p) in c.points.iter().enumerate() {
        let (x, y) = (fr.px(mib(p.peak_bytes)), fr.py(fr.passes(p.recompute_flops)));
        if i == 0 {
            let _ = write!(d, "M{x:.1},{y:.1}");
        } else {
            let _ = write!(d, " H{x:.1} V{y:.1}");
        }
    }
    let _ = writeln!(out, r##"<path d="{d}" fill="none" stroke="#222" stroke-width="1.5"/>"##);
    for p in &c.points {
        dot(out, p, r##"r="5" stroke="#222""##);
    }
}

fn legend(out: &mut String, fr: &Frame) {
    let (y0, lx) = (fr.y0, ML + fr.pw + 16.0);
    for (i, m) in ["none", "sqrt", "log", "greedy", "optimal"].iter().enumerate() {
        let y = y0 + MT + 10.0 + 20.0 * i as f64;
        let _ = writeln!(
            out,
            r##"<circle cx="{lx}" cy="{y}" r="5" fill="{}" stroke="#222"/><text x="{}" y="{}" font-size="12">{m}</text>"##,
            mode_color(m),
            lx + 10.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{lx}" y="{}" font-size="11">line: Pareto front</text><text x="{lx}" y="{}" font-size="11">faint: dominated plans</text>"#,
        y0 + MT + 118.0,
        y0 + MT + 134.0
    );
}

/// The curves as an SVG picture: one panel per function, x = temp peak in
/// MiB, y = recompute in forward passes, points coloured by mode, the front
/// drawn as a staircase.
pub fn curves_svg(curves: &[Curve]) -> String {
    svg_document(W, PANEL_H * curves.len().max(1) as f64, |out| {
        if curves.is_empty() {
            let _ = writeln!(out, r#"<text x="20" y="40" font-size="14">no gradient function: nothing for remat to trade</text>"#);
        }
        for (k, c) in curves.iter().enumerate() {
            panel(out, c, k as f64 * PANEL_H);
        }
    })
}
