//! Measures parse + verify + print of a generated N-op file (default 100,000).
//!
//! Usage: `cargo run --release -p ckopt-ir --example bigparse [N]`.
//! The file is a chain cycling through matmul/add/relu/scale/transpose ops on
//! 64x64 tensors (attributes included), ending in a reduce_sum and a return.
//! Prints the size and the time of each phase for 3 runs and the best total
//! (the machine may be shared), checks that the printed text re-parses to
//! identical text, and exits 1 on any error.
use std::fmt::Write;
use std::time::Instant;

fn generate(n: usize) -> String {
    let t = "tensor<64x64xf32>";
    let mut s = String::with_capacity(n * 100);
    let _ = writeln!(s, "module {{\n  func.func @big(%x: {t}, %w: {t} {{ck.param}}) -> tensor<f32> {{");
    let mut prev = "x".to_string();
    for i in 0..n.saturating_sub(2) {
        let name = format!("v{i}");
        let _ = match i % 5 {
            0 => writeln!(s, "    %{name} = \"ck.matmul\"(%{prev}, %w) : ({t}, {t}) -> {t}"),
            1 => writeln!(s, "    %{name} = \"ck.add\"(%{prev}, %x) : ({t}, {t}) -> {t}"),
            2 => writeln!(s, "    %{name} = \"ck.relu\"(%{prev}) {{ck.mirror}} : ({t}) -> {t}"),
            3 => writeln!(s, "    %{name} = \"ck.scale\"(%{prev}) {{value = 0.5 : f32}} : ({t}) -> {t}"),
            _ => writeln!(s, "    %{name} = \"ck.transpose\"(%{prev}) {{perm = [1, 0]}} : ({t}) -> {t}"),
        };
        prev = name;
    }
    let _ = writeln!(s, "    %loss = \"ck.reduce_sum\"(%{prev}) {{dims = [0, 1]}} : ({t}) -> tensor<f32>");
    let _ = writeln!(s, "    \"ck.return\"(%loss) : (tensor<f32>) -> ()\n  }}\n}}");
    s
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let text = generate(n);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        best = best.min(run_once(&text));
    }
    println!("best total: {best:.1} ms");
}

/// One parse + verify + print; returns the total in milliseconds.
fn run_once(text: &str) -> f64 {
    let t0 = Instant::now();
    let m = match ckopt_ir::parse_module(text, "big.ck") {
        Ok(m) => m,
        Err(d) => {
            eprint!("{}", d.render(Some(text)));
            std::process::exit(1);
        }
    };
    let t1 = Instant::now();
    if let Err(d) = ckopt_ir::verify_module(&m) {
        eprint!("{}", d.render(Some(&text)));
        std::process::exit(1);
    }
    let t2 = Instant::now();
    let printed = ckopt_ir::print_module(&m);
    let t3 = Instant::now();
    let ops: usize = m.funcs.iter().map(|f| f.body.len()).sum();
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
    println!(
        "{ops} ops, {} bytes: parse {:.1} ms, verify {:.1} ms, print {:.1} ms, total {:.1} ms",
        text.len(),
        ms(t0, t1),
        ms(t1, t2),
        ms(t2, t3),
        ms(t0, t3)
    );
    match ckopt_ir::parse_module(&printed, "printed.ck") {
        Ok(m2) if ckopt_ir::print_module(&m2) == printed => {}
        _ => {
            eprintln!("round trip failed");
            std::process::exit(1);
        }
    }
    if printed != text {
        eprintln!("printed text differs from the generated input");
        std::process::exit(1);
    }
    ms(t0, t3)
}
