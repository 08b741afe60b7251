//! The OperatorID that Flink derives from a user-specified uid: Guava's `murmur3_128` (seed 0)
//! of the uid's UTF-8 bytes, as `HashCode.asBytes()` (h1 then h2, each little-endian).

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

fn fmix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

fn mix_k1(k: u64) -> u64 {
    k.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

fn mix_k2(k: u64) -> u64 {
    k.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

pub fn murmur3_128(data: &[u8]) -> [u8; 16] {
    let (mut h1, mut h2) = (0u64, 0u64);
    let mut chunks = data.chunks_exact(16);
    for c in &mut chunks {
        let k1 = u64::from_le_bytes(c[0..8].try_into().unwrap_or_default());
        let k2 = u64::from_le_bytes(c[8..16].try_into().unwrap_or_default());
        h1 ^= mix_k1(k1);
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        h2 ^= mix_k2(k2);
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = chunks.remainder();
    let (mut k1, mut k2) = (0u64, 0u64);
    for (i, b) in tail.iter().enumerate() {
        if i < 8 {
            k1 ^= (*b as u64) << (8 * i);
        } else {
            k2 ^= (*b as u64) << (8 * (i - 8));
        }
    }
    if tail.len() > 8 {
        h2 ^= mix_k2(k2);
    }
    if !tail.is_empty() {
        h1 ^= mix_k1(k1);
    }
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&h1.to_le_bytes());
    out[8..].copy_from_slice(&h2.to_le_bytes());
    out
}

/// The OperatorID bytes Flink uses for an operator with this uid.
pub fn operator_id_for_uid(uid: &str) -> [u8; 16] {
    murmur3_128(uid.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: [u8; 16]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn matches_guava_murmur3_128() {
        // Guava: Hashing.murmur3_128().hashString("", UTF_8) and "hello" test vectors.
        assert_eq!(hex(murmur3_128(b"")), "00000000000000000000000000000000");
        assert_eq!(
            hex(murmur3_128(b"hello")),
            "029bbd41b3a7d8cb191dae486a901e5b"
        );
    }
}
