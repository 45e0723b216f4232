//! The memory timeline as an SVG picture (`ckopt-opt --memory-timeline=FILE.svg`).
//!
//! What: for each function, live bytes over the schedule (x: op index, y:
//! MiB), the same numbers as `liveness::live_bytes_timeline` (buffers, with
//! in-place sharing). The filled area is the temporary memory (function
//! results excluded, what remat attacks), coloured by the phase of the op at
//! that point (forward, backward, recompute: `analysis::phase`); the y axis
//! fits it; a grey line adds the function results (clipped at the top of the
//! panel: parameter gradients can dwarf the activations); a dashed line marks
//! temp_peak_bytes. One panel
//! per function, stacked. Long schedules are binned into at most 1200
//! columns (each column shows the maximum of its ops and the phase of the
//! op reaching it), so the file stays small. Pure function of the IR; no I/O.
//! Complexity: O(ops + values).

use super::{MemoryReport, Phase, live_bytes_timeline, liveness, op_phases, report::memory_report};
use ckopt_ir::{Func, Module};
use std::fmt::Write;

const W: f64 = 1000.0;
const PANEL_H: f64 = 320.0;
const ML: f64 = 80.0;
const MR: f64 = 170.0;
const MT: f64 = 46.0;
const MB: f64 = 44.0;
const MAX_COLS: usize = 1200;

fn color(p: Phase) -> &'static str {
    match p {
        Phase::Forward => "#3b78c2",
        Phase::Backward => "#e08a2c",
        Phase::Recompute => "#2ca05a",
    }
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A "nice" tick step (1, 2, 5 × 10^k) giving about `n` ticks over `range`.
pub fn nice_step(range: f64, n: f64) -> f64 {
    if range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / n;
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let k = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    k * p
}

pub(crate) fn fmt_mib(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}").trim_end_matches(".0").to_string()
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Draws one function's panel at vertical offset `y0`: header, axes,
/// columns, the line with the results, the peak marker, the frame, the legend.
fn panel(out: &mut String, f: &Func, y0: f64) {
    let live = liveness(f);
    let temp = live_bytes_timeline(f, &live, false);
    let all = live_bytes_timeline(f, &live, true);
    let phases = op_phases(f);
    let rep = memory_report(f);
    let fr = Frame::new(y0, &temp);
    header(out, f, &rep, y0);
    y_axis(out, &fr);
    x_axis(out, &fr);
    let line_pts = columns(out, &fr, &temp, &all, &phases);
    results_line(out, &fr, &line_pts);
    peak_marker(out, &fr, rep.temp_peak_bytes);
    border(out, &fr);
    legend(out, &fr);
}

/// Bytes as MiB.
pub(crate) fn mib(b: u64) -> f64 {
    b as f64 / 1048576.0
}

/// The geometry of one panel: where op indices and MiB values land.
struct Frame {
    y0: f64,
    /// Ops on the x axis (at least 1).
    n: usize,
    /// Plot width and height.
    pw: f64,
    ph: f64,
    /// The y tick step and the top of the y axis (MiB).
    step: f64,
    ytop: f64,
}

impl Frame {
    /// The y axis fits the temporary memory (what remat changes) plus a
    /// tenth; the line that adds the function results is clipped to the panel.
    fn new(y0: f64, temp: &[u64]) -> Frame {
        let n = temp.len().max(1);
        let ymax_b = temp.iter().copied().max().unwrap_or(0).max(1) + temp.iter().copied().max().unwrap_or(0) / 10;
        let step = nice_step(mib(ymax_b), 5.0);
        let ytop = (mib(ymax_b) / step).ceil().max(1.0) * step;
        Frame { y0, n, pw: W - ML - MR, ph: PANEL_H - MT - MB, step, ytop }
    }
    fn yof(&self, v: f64) -> f64 {
        self.y0 + MT + self.ph - (v / self.ytop) * self.ph
    }
    fn xof(&self, i: f64) -> f64 {
        ML + i / self.n as f64 * self.pw
    }
}

/// The title and the line of statistics.
fn header(out: &mut String, f: &Func, rep: &MemoryReport, y0: f64) {
    let fl = rep.forward_flops.saturating_add(rep.backward_flops).max(1) as f64;
    let _ = writeln!(
        out,
        r#"<text x="{ML}" y="{:.1}" font-size="14" font-weight="bold">@{} — live memory over the schedule</text>"#,
        y0 + 18.0,
        esc(&f.name)
    );
    let _ = writeln!(
        out,
        r#"<text x="{ML}" y="{:.1}" font-size="11" fill="\#444">temp peak {} MiB, peak incl. results {} MiB, {} ops, {} recomputed (recompute = {:.1}% of forward+backward flops)</text>"#,
        y0 + 34.0,
        fmt_mib(mib(rep.temp_peak_bytes)),
        fmt_mib(mib(rep.peak_bytes)),
        rep.ops,
        rep.recomputed_ops,
        100.0 * rep.recompute_flops as f64 / fl
    );
}

/// The y axis: grid lines with MiB labels, and its title.
fn y_axis(out: &mut String, fr: &Frame) {
    let (y0, pw, ph) = (fr.y0, fr.pw, fr.ph);
    let mut v = 0.0;
    while v <= fr.ytop + fr.step * 0.01 {
        let y = fr.yof(v);
        let _ = writeln!(
            out,
            r##"<line x1="{ML}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd" stroke-width="1"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
            ML + pw,
            ML - 6.0,
            y + 3.5,
            fmt_mib(v)
        );
        v += fr.step;
    }
    let _ = writeln!(
        out,
        r#"<text transform="translate({:.1},{:.1}) rotate(-90)" font-size="11" text-anchor="middle">live MiB</text>"#,
        ML - 52.0,
        y0 + MT + ph / 2.0
    );
}

/// The x axis: ticks at op indices, and its title.
fn x_axis(out: &mut String, fr: &Frame) {
    let (y0, n, pw, ph) = (fr.y0, fr.n, fr.pw, fr.ph);
    let xstep = nice_step(n as f64, 8.0).max(1.0);
    let mut x = 0.0;
    while x <= n as f64 {
        let px = fr.xof(x);
        let _ = writeln!(
            out,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#888"/><text x="{px:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"##,
            y0 + MT + ph,
            y0 + MT + ph + 4.0,
            y0 + MT + ph + 15.0,
            x as u64
        );
        x += xstep;
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">schedule (op index)</text>"#,
        ML + pw / 2.0,
        y0 + MT + ph + 32.0
    );
}

/// The columns of temporary memory, one per bin of at most `MAX_COLS`,
/// coloured by the phase of the op reaching the bin's maximum. Returns the
/// points of the line that adds the function results.
fn columns(out: &mut String, fr: &Frame, temp: &[u64], all: &[u64], phases: &[Phase]) -> String {
    let (y0, n, ph) = (fr.y0, fr.n, fr.ph);
    let cols = n.min(MAX_COLS);
    let per = n.div_ceil(cols);
    let mut line_pts = String::new();
    let mut c = 0;
    while c * per < temp.len() {
        let a = c * per;
        let b = ((c + 1) * per).min(temp.len());
        let (mut best, mut at) = (0u64, a);
        let mut tot = 0u64;
        for i in a..b {
            if temp[i] >= best {
                best = temp[i];
                at = i;
            }
            tot = tot.max(all[i]);
        }
        let x0 = fr.xof(a as f64);
        let x1 = fr.xof(b as f64);
        let yt = fr.yof(mib(best));
        let _ = writeln!(
            out,
            r#"<rect x="{x0:.2}" y="{yt:.2}" width="{:.2}" height="{:.2}" fill="{}"/>"#,
            (x1 - x0).max(0.3),
            (y0 + MT + ph - yt).max(0.0),
            color(phases[at])
        );
        let _ = write!(line_pts, "{x0:.2},{:.2} {x1:.2},{:.2} ", fr.yof(mib(tot)), fr.yof(mib(tot)));
        c += 1;
    }
    line_pts
}

/// The grey line with the function results, clipped to the plot.
fn results_line(out: &mut String, fr: &Frame, line_pts: &str) {
    let (y0, pw, ph) = (fr.y0, fr.pw, fr.ph);
    let clip = format!("clip{}", (y0 / PANEL_H) as u64);
    let _ = writeln!(
        out,
        r#"<clipPath id="{clip}"><rect x="{ML}" y="{:.1}" width="{pw:.1}" height="{ph:.1}"/></clipPath>"#,
        y0 + MT
    );
    let _ = writeln!(
        out,
        r##"<polyline points="{line_pts}" fill="none" stroke="#666" stroke-width="1" clip-path="url(#{clip})"/>"##
    );
}

/// The dashed line at temp_peak_bytes.
fn peak_marker(out: &mut String, fr: &Frame, temp_peak_bytes: u64) {
    let yp = fr.yof(mib(temp_peak_bytes));
    let _ = writeln!(
        out,
        r##"<line x1="{ML}" y1="{yp:.1}" x2="{:.1}" y2="{yp:.1}" stroke="#c0392b" stroke-dasharray="5,4"/>"##,
        ML + fr.pw
    );
}

/// The frame around the plot.
fn border(out: &mut String, fr: &Frame) {
    let (y0, pw, ph) = (fr.y0, fr.pw, fr.ph);
    let _ = writeln!(
        out,
        r##"<rect x="{ML}" y="{:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#333"/>"##,
        y0 + MT
    );
}

/// The legend right of the plot: the three phases and the two lines.
fn legend(out: &mut String, fr: &Frame) {
    let y0 = fr.y0;
    let lx = ML + fr.pw + 16.0;
    let items: [(&str, &str, bool); 5] = [
        ("forward", color(Phase::Forward), false),
        ("backward", color(Phase::Backward), false),
        ("recompute", color(Phase::Recompute), false),
        ("incl. results (clipped)", "#666", true),
        ("temp peak", "#c0392b", true),
    ];
    for (k, (label, col, is_line)) in items.iter().enumerate() {
        let ly = y0 + MT + 10.0 + k as f64 * 20.0;
        if *is_line {
            let dash = if *label == "temp peak" { r#" stroke-dasharray="5,4""# } else { "" };
            let _ = writeln!(
                out,
                r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{col}" stroke-width="2"{dash}/>"#,
                lx + 14.0
            );
        } else {
            let _ = writeln!(out, r#"<rect x="{lx:.1}" y="{:.1}" width="14" height="10" fill="{col}"/>"#, ly - 5.0);
        }
        let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}" font-size="11">{label}</text>"#, lx + 20.0, ly + 4.0);
    }
}

/// The SVG for one function.
pub fn func_timeline_svg(f: &Func) -> String {
    svg_of(std::slice::from_ref(f))
}

/// The SVG for a module: one panel per function, in module order.
pub fn memory_timeline_svg(m: &Module) -> String {
    svg_of(&m.funcs)
}

fn svg_of(funcs: &[Func]) -> String {
    svg_document(W, PANEL_H * funcs.len().max(1) as f64, |out| {
        for (k, f) in funcs.iter().enumerate() {
            panel(out, f, k as f64 * PANEL_H);
        }
    })
}

/// An SVG document of `w` x `h` pixels on a white background, its body
/// drawn by `body` (also used by the memory curve's picture).
pub fn svg_document(w: f64, h: f64, body: impl FnOnce(&mut String)) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    body(&mut out);
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::{Attr, Attrs, Loc, OpKind, TensorType, attrs, ops::ATTR_RECOMPUTE};

    #[test]
    fn svg_has_axes_legend_and_all_three_phases() {
        let l = Loc::unknown();
        let mut f = Func::new("g", l.clone());
        let x = f.add_param("x", TensorType::f32(vec![256, 1024]), false);
        let a = f.push(OpKind::Relu, &[x], Attrs::new(), None, "a", l.clone()).unwrap();
        let s = f.push(OpKind::ReduceSum, &[a], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "s", l.clone()).unwrap();
        let mut rc = f.make_op(OpKind::Relu, &[x], Attrs::new(), None, "a2", l.clone()).unwrap();
        rc.attrs.insert(ATTR_RECOMPUTE.into(), Attr::Unit);
        let a2 = rc.result.unwrap();
        f.body.push(rc);
        let d = f.push(OpKind::ReluGrad, &[a2, x], Attrs::new(), None, "d", l.clone()).unwrap();
        f.push_return(&[s, d], l);
        let svg = func_timeline_svg(&f);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        for needle in ["forward", "backward", "recompute", "live MiB", "schedule (op index)", "@g"] {
            assert!(svg.contains(needle), "missing {needle}");
        }
        for c in [color(Phase::Forward), color(Phase::Backward), color(Phase::Recompute)] {
            assert!(svg.contains(&format!(r#"fill="{c}"/>"#)), "no column of colour {c}");
        }
        // the y axis reaches at least the 2 MiB peak (relu result + recompute)
        assert!(svg.contains(">2</text>") || svg.contains(">2.5</text>") || svg.contains(">3</text>"), "{svg}");
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(100.0, 5.0), 20.0);
        assert_eq!(nice_step(7.0, 5.0), 2.0);
        assert_eq!(fmt_mib(0.25), "0.25");
        assert_eq!(fmt_mib(64.0), "64");
    }
}
