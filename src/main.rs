#![forbid(unsafe_code)]
// The linter builds and drops millions of small tree nodes from several threads; mimalloc's
// per-thread heaps make that both cheaper and contention-free (see README, Benchmark).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(gitops_lint::cli::main());
}
