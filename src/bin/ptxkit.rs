fn main() {
    eprintln!("ptxkit: the CLI is not built yet");
    std::process::exit(2);
}
