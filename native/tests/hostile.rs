//! Inputs no Flink wrote, generated here: each must give a clear format error with its offset,
//! quickly and without building a model much larger than the input.

use bytes::Bytes;
use checkpoint_surgeon::codec::metadata;
use std::path::Path;
use std::time::{Duration, Instant};

fn header(version: i32, operators: i32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0x4960_672Du32.to_be_bytes());
    v.extend_from_slice(&version.to_be_bytes());
    v.extend_from_slice(&1i64.to_be_bytes()); // checkpoint id
    v.extend_from_slice(&0i32.to_be_bytes()); // master states
    v.extend_from_slice(&operators.to_be_bytes());
    v
}

fn fixture_model(name: &str) -> metadata::CheckpointMetadata {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/1.15.4")
        .join(name)
        .join("_metadata");
    metadata::parse(Bytes::from(std::fs::read(p).unwrap())).unwrap()
}

#[test]
fn an_all_zero_body_is_refused_quickly_with_its_offset() {
    // 100 MiB of zeros claiming as many operators as fit: the model would need far more memory.
    let mut v = header(3, (100 << 20) / 29);
    v.resize(v.len() + (100 << 20), 0);
    let start = Instant::now();
    let e = metadata::parse(Bytes::from(v)).unwrap_err().to_string();
    // a guard against a hang, not a speed figure (qemu-aarch64 on a loaded machine is ~20x slower)
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
    assert!(
        e.contains("at byte 24") && e.contains("plus 64 MiB of memory"),
        "{e}"
    );
    // A count the memory allows: the first all-zero operator has parallelism 0 (after its id).
    let mut v = header(3, 1000);
    v.resize(v.len() + 1000 * 29, 0);
    let e = metadata::parse(Bytes::from(v)).unwrap_err().to_string();
    assert!(
        e.contains("at byte 40") && e.contains("parallelism of at least 1"),
        "{e}"
    );
}

#[test]
fn duplicate_operator_ids_are_refused_with_their_offset() {
    let mut md = fixture_model("operator-state-inline");
    let first = md.operators[0].clone();
    md.operators.push(first);
    let e = metadata::parse(Bytes::from(md.to_vec()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("a distinct operator id"), "{e}");
    assert!(e.contains("at byte "), "{e}");
}

#[test]
fn parallelism_below_one_or_above_max_parallelism_is_refused() {
    for (p, maxp) in [(0, 128), (-3, 128), (200, 128)] {
        let mut md = fixture_model("operator-state-inline");
        md.operators[1].parallelism = p;
        md.operators[1].max_parallelism = maxp;
        let e = metadata::parse(Bytes::from(md.to_vec()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("parallelism {p}, max parallelism {maxp}")),
            "{e}"
        );
        assert!(e.contains("at byte "), "{e}");
    }
}

#[test]
fn a_model_far_larger_than_the_input_is_refused() {
    // One valid operator followed by 100 MiB of zeros read as 4.7 M subtask states with nothing in
    // them (22 bytes each): the model would need about 45 times the input.
    let n = (100 << 20) / 22;
    let mut v = header(3, 1);
    v.extend_from_slice(&[7u8; 16]); // operator id
    v.extend_from_slice(&1i32.to_be_bytes());
    v.extend_from_slice(&128i32.to_be_bytes());
    v.push(0); // no coordinator state
    v.extend_from_slice(&(n as i32).to_be_bytes());
    v.resize(v.len() + n * 22, 0);
    let start = Instant::now();
    let e = metadata::parse(Bytes::from(v)).unwrap_err().to_string();
    // a guard against a hang or a quadratic walk, not a speed figure: ~0.3 s natively, 5.5 s seen
    // under qemu-aarch64 on a loaded machine
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
    assert!(
        e.contains("4 times the input's size plus 64 MiB of memory"),
        "{e}"
    );
}

/// A file of 1 MiB of sevens, mapped, then cut to 4 KiB by "another process" (here: this one):
/// its directory and the mapping, whose pages past the new end fault when read.
fn mapped_then_cut(name: &str) -> (std::path::PathBuf, bytes::Bytes) {
    let dir = std::env::temp_dir().join(format!(
        "{name}-{}",
        checkpoint_surgeon::commit::random_file_name()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state");
    std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    checkpoint_surgeon::commit::mapguard::reset();
    let bytes = checkpoint_surgeon::commit::read::map_file(&path).unwrap();
    assert_eq!(bytes[0], 7);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(4096)
        .unwrap();
    (dir, bytes)
}

/// Reads every byte of a mapping cut by [`mapped_then_cut`]: the pages past the new end read as
/// zeros (the guard maps them), so the sum falls short.
fn read_all_of_cut(bytes: &[u8]) {
    let sum: u64 = bytes.iter().map(|b| *b as u64).sum();
    assert!(
        sum < 7 * (1 << 20),
        "the pages past the new end read as zeros"
    );
}

/// A helper thread that reads a mapping of a file cut meanwhile (inspect reads streams on up to
/// four threads) records the fault on itself; handed over, it fails the calling thread's check.
#[test]
fn a_fault_on_a_helper_thread_is_reported_by_the_caller() {
    use checkpoint_surgeon::commit::mapguard;
    let (dir, bytes) = mapped_then_cut("cs-sigbus-helper");
    let fault = std::thread::scope(|s| {
        s.spawn(|| {
            read_all_of_cut(&bytes);
            mapguard::take()
        })
        .join()
        .unwrap()
    });
    assert!(mapguard::check().is_ok(), "nothing faulted on this thread");
    mapguard::adopt(fault);
    let e = mapguard::check().unwrap_err().to_string();
    assert!(
        e.contains("shrank while it was read") && e.contains("state"),
        "{e}"
    );
    drop(bytes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_mapped_file_truncated_while_read_gives_an_error_not_sigbus() {
    let (dir, bytes) = mapped_then_cut("cs-sigbus");
    read_all_of_cut(&bytes);
    let e = checkpoint_surgeon::commit::mapguard::check()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("shrank while it was read") && e.contains("state"),
        "{e}"
    );
    assert!(
        checkpoint_surgeon::commit::mapguard::check().is_ok(),
        "reported once"
    );
    drop(bytes);
    let _ = std::fs::remove_dir_all(&dir);
}
