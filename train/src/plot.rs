//! `--plot FILE.svg`: train loss (every step) and eval loss (each
//! evaluation) over steps, in the SVG frame of ckopt's other pictures
//! (`ckopt_passes::analysis::svg_document`, the memory timeline's and the
//! memory curve's): white page, axes with "nice" ticks, legend.

use ckopt_passes::analysis::{esc, nice_step, svg_document};
use std::fmt::Write;

const W: f64 = 1000.0;
const H: f64 = 420.0;
const ML: f64 = 80.0;
const MR: f64 = 170.0;
const MT: f64 = 46.0;
const MB: f64 = 50.0;

fn fmt(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" { "0".into() } else { s.to_string() }
}

/// The picture: `train` as (step, loss) pairs, `eval` likewise.
pub fn loss_svg(title: &str, train: &[(usize, f32)], eval: &[(usize, f64)]) -> String {
    let finite = |v: f64| v.is_finite();
    let ys: Vec<f64> = train.iter().map(|p| p.1 as f64).chain(eval.iter().map(|p| p.1)).filter(|v| finite(*v)).collect();
    let ymax = ys.iter().copied().fold(0.0f64, f64::max).max(1e-12);
    let ystep = nice_step(ymax * 1.05, 5.0);
    let ytop = ((ymax * 1.05) / ystep).ceil().max(1.0) * ystep;
    let x0 = train.first().map(|p| p.0).unwrap_or(0).min(eval.first().map(|p| p.0).unwrap_or(usize::MAX)).saturating_sub(1);
    let x1 = train.last().map(|p| p.0).unwrap_or(1).max(eval.last().map(|p| p.0).unwrap_or(0)).max(x0 + 1);
    let (pw, ph) = (W - ML - MR, H - MT - MB);
    let xof = |s: f64| ML + (s - x0 as f64) / (x1 - x0) as f64 * pw;
    let yof = |v: f64| MT + ph - (v.clamp(0.0, ytop) / ytop) * ph;
    svg_document(W, H, |out| {
        let _ = writeln!(out, r#"<text x="{ML}" y="24" font-size="16" font-weight="bold">{}</text>"#, esc(title));
        // y axis
        let mut v = 0.0;
        while v <= ytop + ystep * 1e-9 {
            let y = yof(v);
            let _ = writeln!(out, r##"<line x1="{ML}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/>"##, ML + pw);
            let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"#, ML - 6.0, y + 4.0, fmt(v));
            v += ystep;
        }
        let _ = writeln!(out, r#"<text x="18" y="{:.1}" font-size="12" transform="rotate(-90 18 {:.1})" text-anchor="middle">loss</text>"#, MT + ph / 2.0, MT + ph / 2.0);
        // x axis
        let xstep = nice_step((x1 - x0) as f64, 8.0).max(1.0);
        let mut s = (x0 as f64 / xstep).ceil() * xstep;
        while s <= x1 as f64 {
            let x = xof(s);
            let _ = writeln!(out, r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#999"/>"##, MT + ph, MT + ph + 5.0);
            let _ = writeln!(out, r#"<text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#, MT + ph + 18.0, s as u64);
            s += xstep;
        }
        let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">step</text>"#, ML + pw / 2.0, H - 8.0);
        // lines
        let pts: Vec<String> =
            train.iter().filter(|p| finite(p.1 as f64)).map(|p| format!("{:.1},{:.1}", xof(p.0 as f64), yof(p.1 as f64))).collect();
        let _ = writeln!(out, r##"<polyline fill="none" stroke="#3b78c2" stroke-width="1.5" points="{}"/>"##, pts.join(" "));
        let epts: Vec<String> = eval.iter().filter(|p| finite(p.1)).map(|p| format!("{:.1},{:.1}", xof(p.0 as f64), yof(p.1))).collect();
        if !epts.is_empty() {
            let _ = writeln!(out, r##"<polyline fill="none" stroke="#e08a2c" stroke-width="2" points="{}"/>"##, epts.join(" "));
            for p in &epts {
                let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                let _ = writeln!(out, r##"<circle cx="{x}" cy="{y}" r="3.5" fill="#e08a2c"/>"##);
            }
        }
        let _ = writeln!(out, r##"<rect x="{ML}" y="{MT}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#333"/>"##);
        // legend
        let lx = ML + pw + 16.0;
        let _ = writeln!(out, r##"<line x1="{lx}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#3b78c2" stroke-width="2"/>"##, MT + 10.0, lx + 22.0, MT + 10.0);
        let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}" font-size="12">train loss</text>"#, lx + 28.0, MT + 14.0);
        if !epts.is_empty() {
            let _ = writeln!(out, r##"<line x1="{lx}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#e08a2c" stroke-width="2"/>"##, MT + 30.0, lx + 22.0, MT + 30.0);
            let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}" font-size="12">eval loss</text>"#, lx + 28.0, MT + 34.0);
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn plot_has_both_lines_and_a_legend() {
        let train: Vec<(usize, f32)> = (1..=50).map(|s| (s, 2.0 / s as f32)).collect();
        let svg = super::loss_svg("t <1>", &train, &[(25, 0.2), (50, 0.1)]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("train loss") && svg.contains("eval loss") && svg.contains("t &lt;1&gt;"));
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}
