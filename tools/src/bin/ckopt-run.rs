fn main() {
    eprintln!("ckopt-run: not built yet");
    std::process::exit(1);
}
