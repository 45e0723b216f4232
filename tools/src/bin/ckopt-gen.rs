fn main() {
    eprintln!("ckopt-gen: not built yet");
    std::process::exit(1);
}
