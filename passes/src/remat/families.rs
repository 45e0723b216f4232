//! Test families for remat on general graphs (issue 21), as ck IR text:
//! chains of matmuls each followed by an op whose backward reads its input
//! (`log`), independent branches off one input with their losses summed as
//! they go or at the end, and mirror-annotated regions. Sizes are given in
//! `n`x`n` f32 tiles (512 gives 1 MiB per tile).

use crate::manager::PassManager;
use ckopt_ir::{Func, Module};

fn ty(r: u64, c: u64) -> String {
    format!("tensor<{r}x{c}xf32>")
}

/// `x_{i+1} = log(x_i · w_i)` for `depth` layers (tiles of `n`x`n`), loss = sum(x_depth).
/// `mirror`: the matmul and log of every layer marked `ck.mirror` (the whole
/// chain one region, as torch.utils.checkpoint would mark it).
pub fn log_chain(depth: usize, n: u64, mirror: bool) -> String {
    let t = ty(n, n);
    let m = if mirror { " {ck.mirror}" } else { "" };
    let mut args = vec![format!("%x: {t}")];
    for i in 0..depth {
        args.push(format!("%w{i}: {t} {{ck.param}}"));
    }
    let mut s = format!("module {{\n  func.func @chain({}) -> tensor<f32> {{\n", args.join(", "));
    let mut cur = "%x".to_string();
    for i in 0..depth {
        s += &format!("    %m{i} = \"ck.matmul\"({cur}, %w{i}){m} : ({t}, {t}) -> {t}\n");
        s += &format!("    %l{i} = \"ck.log\"(%m{i}){m} : ({t}) -> {t}\n");
        cur = format!("%l{i}");
    }
    s += &format!("    %loss = \"ck.reduce_sum\"({cur}) {{dims = [0, 1]}} : ({t}) -> tensor<f32>\n");
    s += "    \"ck.return\"(%loss) : (tensor<f32>) -> ()\n  }\n}\n";
    s
}

/// Mirror regions marked on a log chain: `regions` lists, per region, the
/// layers (0-based) whose matmul and log are marked `ck.mirror`.
pub fn log_chain_regions(depth: usize, n: u64, regions: &[std::ops::Range<usize>]) -> String {
    let plain = log_chain(depth, n, false);
    let t = ty(n, n);
    let mut out = String::new();
    for line in plain.lines() {
        let mut l = line.to_string();
        for r in regions {
            for i in r.clone() {
                for pre in [format!("%m{i} = \"ck.matmul\""), format!("%l{i} = \"ck.log\"")] {
                    if l.trim_start().starts_with(&pre) {
                        let at = l.find(&format!(" : (")).unwrap_or(l.len());
                        l.insert_str(at, " {ck.mirror}");
                    }
                }
            }
        }
        let _ = &t;
        out += &l;
        out.push('\n');
    }
    out
}

/// `branches` independent branches off one input `%x` (`rows`x`n`): branch b
/// is a chain of `len` layers `tanh(h · w)` of width `n·(b+1)/branches`
/// rounded to 8 (different widths), its loss `sum(h)`. `summed_at_end`:
/// the branch losses are added after the last branch; else each is added
/// into the running total as soon as it exists.
pub fn wide_branches(branches: usize, len: usize, rows: u64, n: u64, summed_at_end: bool) -> String {
    let mut args = vec![format!("%x: {}", ty(rows, n))];
    let mut body = String::new();
    let mut losses = Vec::new();
    let mut total: Option<String> = None;
    let st = "tensor<f32>";
    for b in 0..branches {
        let wdt = ((n * (b as u64 + 1) / branches as u64).div_ceil(8) * 8).max(8);
        let mut cur = ("%x".to_string(), n);
        for i in 0..len {
            args.push(format!("%w{b}_{i}: {} {{ck.param}}", ty(cur.1, wdt)));
            body += &format!("    %p{b}_{i} = \"ck.matmul\"({}, %w{b}_{i}) : ({}, {}) -> {}\n", cur.0, ty(rows, cur.1), ty(cur.1, wdt), ty(rows, wdt));
            body += &format!("    %h{b}_{i} = \"ck.tanh\"(%p{b}_{i}) : ({}) -> {}\n", ty(rows, wdt), ty(rows, wdt));
            cur = (format!("%h{b}_{i}"), wdt);
        }
        body += &format!("    %s{b} = \"ck.reduce_sum\"({}) {{dims = [0, 1]}} : ({}) -> {st}\n", cur.0, ty(rows, cur.1));
        let sb = format!("%s{b}");
        if summed_at_end {
            losses.push(sb);
        } else {
            total = Some(match total {
                None => sb,
                Some(t) => {
                    body += &format!("    %t{b} = \"ck.add\"({t}, {sb}) : ({st}, {st}) -> {st}\n");
                    format!("%t{b}")
                }
            });
        }
    }
    if summed_at_end {
        let mut t = losses[0].clone();
        for (b, l) in losses.iter().enumerate().skip(1) {
            body += &format!("    %t{b} = \"ck.add\"({t}, {l}) : ({st}, {st}) -> {st}\n");
            t = format!("%t{b}");
        }
        total = Some(t);
    }
    let total = total.unwrap_or_else(|| "%s0".into());
    format!(
        "module {{\n  func.func @wide({}) -> {st} {{\n{body}    \"ck.return\"({total}) : ({st}) -> ()\n  }}\n}}\n",
        args.join(", ")
    )
}

/// Parses `text`, runs `autodiff,inplace` and returns the gradient function.
pub fn grad_of(text: &str) -> Func {
    let mut m: Module = ckopt_ir::parse_and_verify(text, "family.ck").unwrap_or_else(|e| panic!("family IR: {e}\n{text}"));
    let mut pm = PassManager::parse("autodiff,inplace").unwrap_or_else(|e| panic!("{e}"));
    pm.run(&mut m).unwrap_or_else(|e| panic!("{e}"));
    m.funcs.into_iter().find(|f| f.name.ends_with("_grad")).unwrap_or_else(|| panic!("no gradient function"))
}
