fn main() {
    std::process::exit(gitops_lint::cli::main());
}
