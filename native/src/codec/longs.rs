//! Checks over Flink's `long[]` arrays as they lie in `_metadata` (big-endian, eight bytes
//! each): an operator-state handle's offsets, millions of them in a grown union state. Written as
//! pairwise folds without early exit so that they vectorize, and compiled a second time for AVX2
//! (byte swaps and 64-bit compares four at a time), chosen at run time: `inspect` of a grown
//! union state spends a quarter of its native time in these two loops.

/// Whether the words of `w` (its whole eight-byte words) ascend strictly and none exceeds `max`.
pub fn ascending_within(w: &[u8], max: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { ascending_within_avx2(w, max) };
    }
    ascending_within_portable(w, max)
}

/// Whether each word `m` places after another exceeds it by exactly `p` (wrapping):
/// `w[i + m] - w[i] == p` for every i. True when there are at most `m` words.
pub fn shifted_by(w: &[u8], m: usize, p: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { shifted_by_avx2(w, m, p) };
    }
    shifted_by_portable(w, m, p)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn ascending_within_avx2(w: &[u8], max: u64) -> bool {
    ascending_within_portable(w, max)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn shifted_by_avx2(w: &[u8], m: usize, p: u64) -> bool {
    shifted_by_portable(w, m, p)
}

/// Words per chunk: a chunk is folded without a branch, the chunks stop at the first bad one.
const CHUNK: usize = 1024;

#[inline(always)]
fn word(c: &[u8]) -> u64 {
    u64::from_be_bytes(c.try_into().expect("chunks of 8"))
}

#[inline(always)]
fn ascending_within_portable(w: &[u8], max: u64) -> bool {
    let n = w.len() / 8;
    if n == 0 {
        return true;
    }
    // strictly ascending, so all are within `max` when the last one is
    word(&w[(n - 1) * 8..n * 8]) <= max
        && w[..(n - 1) * 8]
            .chunks(8 * CHUNK)
            .zip(w[8..n * 8].chunks(8 * CHUNK))
            .all(|(a, b)| {
                a.chunks_exact(8)
                    .zip(b.chunks_exact(8))
                    .fold(true, |ok, (x, y)| ok & (word(x) < word(y)))
            })
}

#[inline(always)]
fn shifted_by_portable(w: &[u8], m: usize, p: u64) -> bool {
    let n = w.len() / 8;
    m >= n
        || w[..(n - m) * 8]
            .chunks(8 * CHUNK)
            .zip(w[m * 8..n * 8].chunks(8 * CHUNK))
            .all(|(a, b)| {
                a.chunks_exact(8)
                    .zip(b.chunks_exact(8))
                    .fold(true, |ok, (x, y)| ok & (word(y).wrapping_sub(word(x)) == p))
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn longs(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    #[test]
    fn ascending_within_matches_a_plain_loop() {
        let cases: Vec<(Vec<u64>, u64)> = vec![
            (vec![], 0),
            (vec![5], 5),
            (vec![6], 5),
            (vec![1, 2, 3], 3),
            (vec![1, 2, 3], 2),
            (vec![1, 1, 3], 9),
            (vec![3, 2], 9),
            (vec![0, u64::MAX], u64::MAX),
            ((0..5000).collect(), 4999),
            (
                (0..5000)
                    .map(|i| if i == 4321 { 0 } else { i * 3 })
                    .collect(),
                u64::MAX,
            ),
            (
                (0..2048)
                    .map(|i| if i == 1024 { 1023 } else { i })
                    .collect(),
                u64::MAX,
            ),
        ];
        for (v, max) in cases {
            let plain = v.iter().all(|&x| x <= max) && v.windows(2).all(|p| p[0] < p[1]);
            assert_eq!(ascending_within(&longs(&v), max), plain, "{v:?} max {max}");
            assert_eq!(ascending_within_portable(&longs(&v), max), plain);
        }
    }

    #[test]
    fn shifted_by_matches_a_plain_loop() {
        let base: Vec<u64> = (0..3000).map(|i| i * 7).collect();
        let mut twice = base.clone();
        twice.extend(base.iter().map(|x| x + 21000));
        let mut broken = twice.clone();
        broken[5999] += 1;
        for (v, m, p) in [
            (&twice, 3000, 21000),
            (&twice, 3000, 20999),
            (&broken, 3000, 21000),
            (&twice, 6000, 1),
        ] {
            let plain = (m..v.len()).all(|i| v[i].wrapping_sub(v[i - m]) == p);
            assert_eq!(shifted_by(&longs(v), m, p), plain, "m {m} p {p}");
            assert_eq!(shifted_by_portable(&longs(v), m, p), plain);
        }
    }
}
