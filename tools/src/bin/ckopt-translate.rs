fn main() {
    eprintln!("ckopt-translate: not built yet");
    std::process::exit(1);
}
