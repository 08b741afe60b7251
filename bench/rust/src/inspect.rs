//! Benchmark helper (bench/inspect.sh, issue 17): `checkpoint-surgeon inspect` without the JVM:
//! `Checkpoint::open`, `report::inspect`, the wire encoding, with the time of each phase. Also
//! the target for `perf record` when profiling inspect.
//!
//!     bench_inspect CHECKPOINT

use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::report::inspect;
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 1 {
        eprintln!("usage: bench_inspect CHECKPOINT");
        std::process::exit(1);
    }
    let t0 = Instant::now();
    let cp = Checkpoint::open(Path::new(&args[0])).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    let t1 = Instant::now();
    let report = inspect::inspect(&cp);
    let t2 = Instant::now();
    let wire = report.encode();
    let t3 = Instant::now();
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
    println!(
        "rust open_ms={:.1} inspect_ms={:.1} encode_ms={:.1} total_ms={:.1} wire_bytes={}",
        ms(t0, t1),
        ms(t1, t2),
        ms(t2, t3),
        ms(t0, t3),
        wire.len()
    );
}
