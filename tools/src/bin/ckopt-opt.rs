fn main() {
    eprintln!("ckopt-opt: not built yet");
    std::process::exit(1);
}
