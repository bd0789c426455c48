//! Randomness for the generators.
//!
//! Two sources, kept apart on purpose. [`Draw`] takes the *shape* of a case
//! (counts, classes, sizes, flags) from the fuzzer's bytes while they last,
//! so that a mutation of the input is a mutation of the shape, and from a
//! PRNG once they run out, so that a few hundred bytes still make a
//! realistic history. [`SplitMix64`] makes the *bulk* (words, code lines,
//! JSON values), which no fuzzer needs to steer byte by byte.

use arbitrary::Unstructured;

/// Sebastiano Vigna's splitmix64: tiny, fast, and the same on every
/// platform, so a seed names the same case everywhere.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as u64
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// Mix two words into one seed (used to derive streams and per-index seeds).
pub fn mix(a: u64, b: u64) -> u64 {
    SplitMix64::new(a ^ b.wrapping_mul(0xD605_BBB5_8C8A_BBFD).rotate_left(17)).next_u64()
}

/// Shape decisions: from the fuzzer's bytes first, from a PRNG after.
pub struct Draw<'u, 'a> {
    u: &'u mut Unstructured<'a>,
    rng: SplitMix64,
}

impl<'u, 'a> Draw<'u, 'a> {
    pub fn new(u: &'u mut Unstructured<'a>, seed: u64) -> Self {
        Draw {
            u,
            rng: SplitMix64::new(seed),
        }
    }

    /// Uniform in `0..n` (0 when `n` ≤ 1).
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        if self.u.is_empty() {
            self.rng.below(n)
        } else {
            self.u.int_in_range(0..=n - 1).unwrap_or(0)
        }
    }

    /// Uniform in `lo..=hi` (`lo` when `hi` < `lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// Log-uniform in `lo..=hi`: first a bit length, then a value of that
    /// length. Sizes drawn this way are mostly small, sometimes large.
    pub fn log_range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let bits_lo = 64 - lo.leading_zeros() as u64;
        let bits_hi = 64 - hi.leading_zeros() as u64;
        let bits = self.range(bits_lo, bits_hi);
        let (a, b) = if bits == 0 {
            (0, 0)
        } else {
            (
                1u64 << (bits - 1),
                (1u64 << (bits - 1)).saturating_mul(2) - 1,
            )
        };
        self.range(a.max(lo), b.min(hi))
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u32) -> bool {
        percent > 0 && (percent >= 100 || self.below(100) < percent as u64)
    }

    /// An index into `weights`, drawn in proportion to them.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| w as u64).sum();
        let mut x = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if x < w as u64 {
                return i;
            }
            x -= w as u64;
        }
        weights.len() - 1
    }

    pub fn pick<'x, T>(&mut self, xs: &'x [T]) -> &'x T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_range_with_and_without_bytes() {
        let bytes = [0xffu8; 64];
        for data in [&bytes[..], &[][..]] {
            let mut u = Unstructured::new(data);
            let mut d = Draw::new(&mut u, 7);
            for _ in 0..200 {
                assert!(d.range(3, 9) >= 3 && d.range(3, 9) <= 9);
                let x = d.log_range(10, 5000);
                assert!((10..=5000).contains(&x), "{x}");
                assert!(d.weighted(&[0, 5, 0]) == 1);
            }
        }
    }
}
