//! Benchmark helper (bench/run.sh, issue 7): the path route of `checkpoint-surgeon remove-state
//! --apply --output`, without the JVM: `Checkpoint::open`, `surgery::plan`, `commit::stage`, with
//! the time of each phase. Also the target for `perf record` when profiling the native side.
//!
//!     bench_apply CHECKPOINT OUT_DIR STATE [purge|metadata-only]

use checkpoint_surgeon::commit;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::surgery::{self, Depth, Request, Selector};
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 || args.len() > 4 {
        eprintln!("usage: bench_apply CHECKPOINT OUT_DIR STATE [purge|metadata-only]");
        std::process::exit(1);
    }
    let depth = args.get(3).map(String::as_str).unwrap_or("purge");
    let req = Request::remove_state(Selector::All, &args[2]).with_depth(match depth {
        "metadata-only" => Depth::MetadataOnly,
        _ => Depth::Purge,
    });
    let t0 = Instant::now();
    let cp = Checkpoint::open(Path::new(&args[0])).unwrap_or_else(|e| fail(e));
    let t1 = Instant::now();
    let plan = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap_or_else(|e| fail(e));
    let t2 = Instant::now();
    let out = Path::new(&args[1]);
    std::fs::create_dir_all(out)
        .unwrap_or_else(|e| fail(checkpoint_surgeon::Error::io(out.display(), e)));
    let applied = commit::stage(&cp, &plan, out, None).unwrap_or_else(|e| fail(e));
    let t3 = Instant::now();
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
    println!(
        "rust open_ms={:.1} plan_ms={:.1} apply_ms={:.1} total_ms={:.1} changes={} out_bytes={}",
        ms(t0, t1),
        ms(t1, t2),
        ms(t2, t3),
        ms(t0, t3),
        plan.changes.len(),
        applied.metadata_bytes
    );
}

fn fail(e: checkpoint_surgeon::Error) -> ! {
    eprintln!("error: {e}");
    std::process::exit(2);
}
