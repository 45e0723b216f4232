//! Parses a file and prints it (debug helper for the printer/parser round trip).
//! Usage: `cargo run -p ckopt-ir --example ckprint FILE`. Exit 1 on errors.
fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "/dev/stdin".into());
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    match ckopt_ir::parser::parse_module_bytes(&bytes, &path) {
        Ok(m) => print!("{}", ckopt_ir::print_module(&m)),
        Err(d) => {
            eprint!("{}", d.render(std::str::from_utf8(&bytes).ok()));
            std::process::exit(1);
        }
    }
}
