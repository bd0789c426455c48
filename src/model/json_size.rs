//! The serialised size of JSON text — strings, values, objects from
//! their entries — exactly as `serde_json::to_vec` writes it, without
//! writing it. The wire formats size their own parts with these; `body`
//! sizes whole request bodies.

use serde_json::{Number, Value};

/// Extra bytes JSON escaping adds for each byte value (0 for most).
const ESCAPE_EXTRA: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = 5; // \u00XX
        b += 1;
    }
    t[b'\n' as usize] = 1;
    t[b'\r' as usize] = 1;
    t[b'\t' as usize] = 1;
    t[0x08] = 1;
    t[0x0c] = 1;
    t[b'"' as usize] = 1;
    t[b'\\' as usize] = 1;
    t
};

/// Serialised size of `s` as a JSON string, quotes included.
///
/// Branch-free: on a CPU with AVX-512BW and VBMI (detected at run time),
/// a table permute a 64-byte block (`weight_sum_avx512`); with AVX2, in
/// AVX2 intrinsics (`escape_extra_avx2`); elsewhere a loop written so that the
/// compiler vectorises it (SSE2 on baseline x86-64, NEON on aarch64):
/// each byte's extra (`byte_extra`) is added into 64 byte-wide lanes,
/// which are summed every 48 blocks of 64 bytes, before a lane (at most
/// 48 × 5 = 240) can overflow. Equal to [`string_size_scalar`] — and to
/// `serde_json::to_vec(s).len()` — on every input.
pub fn string_size(s: &str) -> u64 {
    s.len() as u64 + escape_extra_lanes(s.as_bytes()) + 2
}

/// The word-at-a-time (SWAR) version of [`string_size`], kept for the
/// benchmarks: eight bytes per step, a flag per byte for the bytes JSON
/// escapes (`< 0x20`, `"`, `\\`) and, among the control characters, for
/// those with a short escape (`\b \t \n \f \r`: one extra byte; the
/// others are `\u00XX`: five), each computed with additions that cannot
/// carry from one byte into the next, so every flag is exact.
pub fn string_size_swar(s: &str) -> u64 {
    s.len() as u64 + escape_extra(s.as_bytes()) + 2
}

/// Extra bytes escaping adds to byte `b`, without a branch, a table or a
/// multiplication (which SSE2 lacks for bytes): 1 for `"` and `\\`, 1 for
/// the control characters, 4 more for those without a short escape
/// (`\b \t \n \f \r` have one; the others are `\u00XX`). The values of
/// [`ESCAPE_EXTRA`].
#[inline(always)]
fn byte_extra(b: u8) -> u8 {
    let mask = |c: bool| 0u8.wrapping_sub(c as u8);
    let quote = mask(b == b'"') | mask(b == b'\\');
    let ctrl = mask(b < 0x20);
    let short = mask(b.wrapping_sub(0x08) < 6) & !mask(b == 0x0b);
    (quote & 1) + (ctrl & 1) + (ctrl & !short & 4)
}

/// How many `"` and `\\` bytes the escaped form of byte `b` holds: 2 for
/// `"` (`\\"`) and `\\` (`\\\\`), 1 for a control character (`\\n`,
/// `\\u001f`), 0 for the rest. What escaping the JSON text a second time
/// adds (the openai format's argument strings hold JSON text).
#[inline(always)]
pub(crate) fn byte_specials(b: u8) -> u8 {
    let mask = |c: bool| 0u8.wrapping_sub(c as u8);
    let quote = mask(b == b'"') | mask(b == b'\\');
    let ctrl = mask(b < 0x20);
    (quote & 2) + (ctrl & 1)
}

/// The per-byte weight summed in the lanes: [`byte_extra`], or
/// [`byte_specials`] when `SPECIALS`.
#[inline(always)]
fn byte_weight<const SPECIALS: bool>(b: u8) -> u8 {
    if SPECIALS {
        byte_specials(b)
    } else {
        byte_extra(b)
    }
}

const LANES: usize = 64;
/// Blocks of [`LANES`] bytes summed in `u8` lanes before they are widened
/// (a lane takes at most 5 per block, the padded tail included: 48 × 5 =
/// 240 < 256).
const BLOCKS: usize = 48;

/// Extra bytes JSON escaping adds to `bytes`: the vectorisable loop, with
/// an AVX-512 or AVX2 build of it chosen at run time where the CPU has one.
fn escape_extra_lanes(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU supports AVX-512BW and VBMI, checked just above.
            return unsafe { weight_sum_avx512::<false>(bytes) };
        }
    }
    if bytes.len() < 16 {
        return escape_extra_scalar(bytes);
    }
    lanes_sum::<false>(bytes)
}

/// The sum of [`byte_weight`] over `bytes`, in AVX-512 or AVX2 intrinsics
/// where the CPU has them.
pub(crate) fn lanes_sum<const SPECIALS: bool>(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU supports AVX-512BW and VBMI, checked just above.
            return unsafe { weight_sum_avx512::<SPECIALS>(bytes) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { escape_extra_avx2::<SPECIALS>(bytes) };
        }
    }
    escape_extra_portable::<SPECIALS>(bytes)
}

/// The sum of [`byte_weight`] over `bytes`, 32 bytes an instruction, in
/// AVX2 intrinsics: each weight is built from byte masks (all ones where a
/// byte is `"` or `\\`, a control character, a short escape) and
/// subtracted (a mask is −1) into byte lanes, two blocks a step into two
/// sets of lanes, which `sad` widens every 51 steps, before a lane (at
/// most 5 a block) can overflow. Written out rather than left to the
/// vectoriser, which the test and dev builds (`opt-level = 1`) do not run:
/// there the portable loop sized bodies 50 times slower than in release,
/// and a test that sizes gigabytes (tests/shrink_config's session shrunk
/// at 1 MiB) took 99 s instead of 13.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn escape_extra_avx2<const SPECIALS: bool>(bytes: &[u8]) -> u64 {
    use std::arch::x86_64::*;
    const BLOCK: usize = 32;
    /// Pairs of blocks summed in byte lanes before they are widened
    /// (51 × 5 = 255).
    const RUN: usize = 51;
    let splat = |b: u8| _mm256_set1_epi8(b as i8);
    // The weight of each byte of `v`, negated: a mask is −1.
    let weight = |v: __m256i| {
        let quote = _mm256_or_si256(
            _mm256_cmpeq_epi8(v, splat(b'"')),
            _mm256_cmpeq_epi8(v, splat(b'\\')),
        );
        // b < 0x20 exactly when min(b, 0x1f) == b (unsigned).
        let ctrl = _mm256_cmpeq_epi8(_mm256_min_epu8(v, splat(0x1f)), v);
        if SPECIALS {
            // −(2 for `"` and `\\`, 1 for a control character).
            _mm256_add_epi8(_mm256_add_epi8(quote, quote), ctrl)
        } else {
            // A short escape: 0x08..=0x0d but 0x0b (b − 8 ≤ 5, unsigned).
            let d = _mm256_sub_epi8(v, splat(0x08));
            let short = _mm256_andnot_si256(
                _mm256_cmpeq_epi8(v, splat(0x0b)),
                _mm256_cmpeq_epi8(_mm256_min_epu8(d, splat(5)), d),
            );
            let long = _mm256_and_si256(_mm256_andnot_si256(short, ctrl), splat(4));
            // −(1 for `"` and `\\`, 1 for a control character, 4 more for `\u00XX`).
            _mm256_sub_epi8(_mm256_add_epi8(quote, ctrl), long)
        }
    };
    // SAFETY (each load below): the 32 bytes at `at` lie within the slice.
    let load = |rest: &[u8], at: usize| unsafe { _mm256_loadu_si256(rest.as_ptr().add(at).cast()) };
    let zero = _mm256_setzero_si256();
    let mut sums = zero;
    let mut rest = bytes;
    // Two blocks a step, into two sets of lanes: independent chains.
    while rest.len() >= 2 * BLOCK {
        let steps = (rest.len() / (2 * BLOCK)).min(RUN);
        let (mut a, mut b) = (zero, zero);
        for i in 0..steps {
            a = _mm256_sub_epi8(a, weight(load(rest, 2 * BLOCK * i)));
            b = _mm256_sub_epi8(b, weight(load(rest, 2 * BLOCK * i + BLOCK)));
        }
        sums = _mm256_add_epi64(sums, _mm256_sad_epu8(a, zero));
        sums = _mm256_add_epi64(sums, _mm256_sad_epu8(b, zero));
        rest = &rest[2 * BLOCK * steps..];
    }
    if rest.len() >= BLOCK {
        let lanes = _mm256_sub_epi8(zero, weight(load(rest, 0)));
        sums = _mm256_add_epi64(sums, _mm256_sad_epu8(lanes, zero));
        rest = &rest[BLOCK..];
    }
    if !rest.is_empty() && bytes.len() >= BLOCK {
        // The last 1–31 bytes as the last block of `bytes`, its first
        // bytes (counted above) masked off: a real history's strings are
        // mostly a few dozen bytes, and the byte-at-a-time tail was most of
        // their cost (issue 48).
        let counted = BLOCK - rest.len();
        let last = load(bytes, bytes.len() - BLOCK);
        let index = _mm256_setr_epi8(
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
            24, 25, 26, 27, 28, 29, 30, 31,
        );
        // Lanes at or past `counted` (indices and `counted` are below 32:
        // the signed compare is exact).
        let keep = _mm256_cmpgt_epi8(index, splat(counted as u8 - 1));
        let lanes = _mm256_sub_epi8(zero, _mm256_and_si256(weight(last), keep));
        sums = _mm256_add_epi64(sums, _mm256_sad_epu8(lanes, zero));
        rest = &[];
    }
    let mut four = [0u64; 4];
    // SAFETY: `four` is 32 bytes, written unaligned.
    unsafe { _mm256_storeu_si256(four.as_mut_ptr().cast(), sums) };
    four.iter().sum::<u64>()
        + rest
            .iter()
            .map(|&b| byte_weight::<SPECIALS>(b) as u64)
            .sum::<u64>()
}

/// Whether the CPU has what [`weight_sum_avx512`] uses.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vbmi")
}

/// [`byte_weight`] of every byte below 0x80, as two 64-byte halves of
/// one 128-entry table (the bytes from 0x80 weigh nothing).
const fn weight_table<const SPECIALS: bool>() -> [[u8; 64]; 2] {
    let mut t = [[0u8; 64]; 2];
    let mut b = 0;
    while b < 128 {
        // `byte_specials`: 2 for `"` and `\\`, 1 for a control character.
        t[b / 64][b % 64] = if !SPECIALS {
            ESCAPE_EXTRA[b]
        } else if b == b'"' as usize || b == b'\\' as usize {
            2
        } else {
            (b < 0x20) as u8
        };
        b += 1;
    }
    t
}

/// The sum of [`byte_weight`] over `bytes`, 64 bytes a step, in AVX-512
/// intrinsics: each byte's weight is looked up in a 128-entry table by
/// one permute (`vpermt2b`, VBMI), zeroed for the bytes from 0x80 by
/// their sign bits, and added into byte lanes, which `sad` widens every
/// 51 blocks (51 × 5 = 255). One shuffle a block where the compares took
/// five. The last 0–63 bytes are one masked load (the bytes past the end
/// are not read; their lanes hold spaces, which weigh nothing), so a short
/// string — a real history's keys, ids and names — costs one block, not a
/// loop: issue 48 found the per-string cost, not the per-byte one, kept
/// the exact body size of real histories at a third of memcpy.
///
/// # Safety
/// The CPU must support AVX-512BW and AVX-512VBMI ([`has_avx512`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw,avx512vbmi")]
unsafe fn weight_sum_avx512<const SPECIALS: bool>(bytes: &[u8]) -> u64 {
    use std::arch::x86_64::*;
    const BLOCK: usize = 64;
    /// Blocks summed in byte lanes before they are widened (51 × 5 = 255).
    const RUN: usize = 51;
    let table = const { weight_table::<SPECIALS>() };
    // SAFETY: each half is 64 bytes, read unaligned.
    let (lo, hi) = unsafe {
        (
            _mm512_loadu_si512(table[0].as_ptr().cast()),
            _mm512_loadu_si512(table[1].as_ptr().cast()),
        )
    };
    // The weights of the bytes of `v`: the table's entry for each byte
    // (indexed by its low seven bits), zero where the high bit is set.
    let weight = |v: __m512i| _mm512_maskz_permutex2var_epi8(!_mm512_movepi8_mask(v), lo, v, hi);
    let zero = _mm512_setzero_si512();
    let mut sums = zero;
    let mut rest = bytes;
    while rest.len() >= BLOCK {
        let steps = (rest.len() / BLOCK).min(RUN);
        let mut lanes = zero;
        for i in 0..steps {
            // SAFETY: the 64 bytes at `BLOCK * i` lie within `rest`.
            let v = unsafe { _mm512_loadu_si512(rest.as_ptr().add(BLOCK * i).cast()) };
            lanes = _mm512_add_epi8(lanes, weight(v));
        }
        sums = _mm512_add_epi64(sums, _mm512_sad_epu8(lanes, zero));
        rest = &rest[BLOCK * steps..];
    }
    if !rest.is_empty() {
        let keep: __mmask64 = (1u64 << rest.len()) - 1;
        // SAFETY: only the `rest.len()` bytes the mask keeps are read (a
        // masked load does not touch, nor fault on, the others).
        let v = unsafe {
            _mm512_mask_loadu_epi8(_mm512_set1_epi8(b' ' as i8), keep, rest.as_ptr().cast())
        };
        sums = _mm512_add_epi64(sums, _mm512_sad_epu8(weight(v), zero));
    }
    _mm512_reduce_add_epi64(sums) as u64
}

#[inline(always)]
fn add_block<const SPECIALS: bool>(lanes: &mut [u8; LANES], block: &[u8]) {
    for (lane, &b) in lanes.iter_mut().zip(block) {
        *lane += byte_weight::<SPECIALS>(b);
    }
}

#[inline(always)]
fn escape_extra_portable<const SPECIALS: bool>(bytes: &[u8]) -> u64 {
    let mut total = 0u64;
    for run in bytes.chunks(LANES * BLOCKS) {
        let mut lanes = [0u8; LANES];
        let mut blocks = run.chunks_exact(LANES);
        for block in &mut blocks {
            add_block::<SPECIALS>(&mut lanes, block);
        }
        let rest = blocks.remainder();
        if !rest.is_empty() {
            // The tail, padded with spaces (no extra): one more block.
            let mut padded = [b' '; LANES];
            padded[..rest.len()].copy_from_slice(rest);
            add_block::<SPECIALS>(&mut lanes, &padded);
        }
        total += lanes.iter().map(|&l| l as u64).sum::<u64>();
    }
    total
}

/// The byte-at-a-time table version of [`string_size`]: the specification
/// the fast path is tested against, and a benchmark baseline.
pub fn string_size_scalar(s: &str) -> u64 {
    s.len() as u64 + escape_extra_scalar(s.as_bytes()) + 2
}

fn escape_extra_scalar(bytes: &[u8]) -> u64 {
    bytes.iter().map(|&b| ESCAPE_EXTRA[b as usize] as u64).sum()
}

const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HI: u64 = 0x8080_8080_8080_8080;
const fn splat(b: u8) -> u64 {
    (b as u64) * 0x0101_0101_0101_0101
}

/// High bit of each byte of the result set iff that byte of `w` is `< 0x20`.
/// `(w & 0x7f) + 0x60` cannot carry out of its byte (at most 0xdf), and has
/// its high bit set iff the low seven bits are `>= 0x20`.
#[inline(always)]
fn below_0x20(w: u64) -> u64 {
    !(((w & LO7) + splat(0x60)) | w) & HI
}

/// High bit of each byte set iff that byte of `w` equals `b` (exact: the
/// addition cannot carry between bytes).
#[inline(always)]
fn equal_to(w: u64, b: u8) -> u64 {
    let x = w ^ splat(b);
    !(((x & LO7) + LO7) | x) & HI
}

/// High bit of each byte set iff that byte of `w`, known to be `< 0x20`,
/// is one of the short escapes `\b \t \n \f \r` (0x08–0x0d but 0x0b).
#[inline(always)]
fn short_control(w: u64) -> u64 {
    let lo = w & LO7;
    let at_least_8 = lo + splat(0x80 - 0x08);
    let at_least_14 = lo + splat(0x80 - 0x0e);
    at_least_8 & !at_least_14 & !equal_to(w, 0x0b) & HI
}

/// How many bytes of a flag word (high bits only) are flagged: without
/// relying on a `popcnt` instruction, which baseline x86-64 lacks.
#[inline(always)]
fn flagged_bytes(m: u64) -> u64 {
    (m >> 7).wrapping_mul(splat(1)) >> 56
}

/// Extra bytes JSON escaping adds to `bytes`.
fn escape_extra(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut flagged = 0u64; // bytes escaped, each counted once (+1)
    let mut long = 0u64; // of those, control characters written `\u00XX` (+4 more)
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("chunks of 8"));
        let ctrl = below_0x20(w);
        let m = ctrl | equal_to(w, b'"') | equal_to(w, b'\\');
        if m == 0 {
            continue;
        }
        flagged += flagged_bytes(m);
        if ctrl != 0 {
            long += flagged_bytes(ctrl & !short_control(w));
        }
    }
    flagged + 4 * long + escape_extra_scalar(chunks.remainder())
}

/// Serialised size of any JSON value.
pub fn value_size(v: &Value) -> u64 {
    value_size_by(v, &|n| n.as_str().len() as u64)
}

/// Serialised size of `v` with each number counted as `number` says.
pub(crate) fn value_size_by<F: Fn(&Number) -> u64>(v: &Value, number: &F) -> u64 {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number(n),
        Value::String(s) => string_size(s),
        Value::Array(a) => {
            2 + a.iter().map(|x| value_size_by(x, number)).sum::<u64>() + commas(a.len())
        }
        Value::Object(o) => object_size(
            o.iter()
                .map(|(k, v)| (k.as_str(), value_size_by(v, number))),
        ),
    }
}

pub(crate) fn commas(n: usize) -> u64 {
    n.saturating_sub(1) as u64
}

/// Size of an object from its entries' keys and value sizes (for the
/// wire formats' own size functions).
pub(crate) fn object_size_of<'a>(entries: impl Iterator<Item = (&'a str, u64)>) -> u64 {
    object_size(entries)
}

/// Add to an object's entries the sizes of `fields` whose keys it does
/// not hold yet (the entries already there win, as the writers'
/// `add_fields` do).
pub(crate) fn add_sizes<'a>(
    entries: &mut Vec<(&'a str, u64)>,
    fields: impl IntoIterator<Item = (&'a String, &'a Value)>,
) {
    for (k, v) in fields {
        if !entries.iter().any(|(n, _)| *n == k) {
            entries.push((k.as_str(), value_size(v)));
        }
    }
}

/// Size of an object from its entries' keys and value sizes.
pub(crate) fn object_size<'a>(entries: impl Iterator<Item = (&'a str, u64)>) -> u64 {
    let mut object = ObjectSize::default();
    for (k, size) in entries {
        object.named(k, size);
    }
    object.size()
}

/// [`string_size`] at compile time: the size of a key or fixed string a
/// format writes, so that sizing a message does not measure `"role"`
/// again for every message.
pub(crate) const fn const_string_size(s: &str) -> u64 {
    let bytes = s.as_bytes();
    let mut size = bytes.len() as u64 + 2;
    let mut i = 0;
    while i < bytes.len() {
        size += ESCAPE_EXTRA[bytes[i] as usize] as u64;
        i += 1;
    }
    size
}

/// An object's size, summed entry by entry: `{`, each `key:value`, the
/// commas between them, `}`.
#[derive(Default)]
pub(crate) struct ObjectSize {
    entries: u64,
    count: usize,
}

impl ObjectSize {
    /// An entry whose key is `key_size` bytes serialised (a
    /// [`const_string_size`]).
    #[inline(always)]
    pub(crate) fn entry(&mut self, key_size: u64, value_size: u64) {
        self.entries += key_size + 1 + value_size;
        self.count += 1;
    }

    /// An entry that is written only when it has a value.
    #[inline(always)]
    pub(crate) fn optional(&mut self, key_size: u64, value_size: Option<u64>) {
        if let Some(v) = value_size {
            self.entry(key_size, v);
        }
    }

    /// An entry whose key is measured here.
    #[inline(always)]
    pub(crate) fn named(&mut self, key: &str, value_size: u64) {
        self.entry(string_size(key), value_size);
    }

    pub(crate) fn size(&self) -> u64 {
        2 + self.entries + commas(self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights<const SPECIALS: bool>(bytes: &[u8]) -> u64 {
        bytes
            .iter()
            .map(|&b| byte_weight::<SPECIALS>(b) as u64)
            .sum()
    }

    /// Every string under 64 bytes (the byte loop below 16 bytes, the
    /// lanes and their masked tail from 16, and the boundaries between)
    /// against the byte table: every byte value at every position, alone
    /// and with a second one in the last position, among letters.
    #[test]
    fn short_strings_equal_the_byte_weights() {
        for len in 0..64 {
            for b in 0..=255u8 {
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let want = escape_extra_scalar(&bytes);
                    assert_eq!(escape_extra_lanes(&bytes), want, "{b:#x} at {at} of {len}");
                    bytes[len - 1] = b;
                    let want = escape_extra_scalar(&bytes);
                    assert_eq!(
                        escape_extra_lanes(&bytes),
                        want,
                        "{b:#x} at {at} and last of {len}"
                    );
                }
                let all = vec![b; len];
                assert_eq!(
                    escape_extra_lanes(&all),
                    escape_extra_scalar(&all),
                    "{b:#x} × {len}"
                );
            }
        }
    }

    /// Both builds of the lane sum (the AVX2 intrinsics where the CPU has
    /// them, and the portable loop every other CPU runs) against the
    /// byte-at-a-time weights, for every byte value as the worst case of a
    /// whole run, at lengths around the blocks (32, 64 bytes) and the runs
    /// the lanes are widened after (51 steps of 64 bytes; 48 blocks of 64
    /// in the portable loop), and with the byte at every offset of a block.
    #[test]
    fn the_lane_sums_equal_the_byte_weights() {
        fn check<const SPECIALS: bool>(bytes: &[u8], what: &str) {
            let want = weights::<SPECIALS>(bytes);
            assert_eq!(
                escape_extra_portable::<SPECIALS>(bytes),
                want,
                "portable, {what}"
            );
            assert_eq!(lanes_sum::<SPECIALS>(bytes), want, "lanes_sum, {what}");
            // Each build the CPU can run, not only the one chosen.
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2.
                    let got = unsafe { escape_extra_avx2::<SPECIALS>(bytes) };
                    assert_eq!(got, want, "avx2, {what}");
                }
                if has_avx512() {
                    // SAFETY: the CPU supports AVX-512BW and VBMI.
                    let got = unsafe { weight_sum_avx512::<SPECIALS>(bytes) };
                    assert_eq!(got, want, "avx512, {what}");
                }
            }
        }
        // Every start within a cache line, among neighbours that weigh
        // the most (a control character: `\u00XX`), which no build may
        // count (the AVX-512 build's last block is a masked load).
        let mut heavy = vec![0u8; 4 * 3264 + 256];
        let base = heavy.as_ptr() as usize % 64;
        for off in 0..64 {
            let start = 64 - base + off;
            for len in (0..200).chain([3263, 3264, 3265, 3 * 3264 + 97]) {
                let text: Vec<u8> = (0..len).map(|k| (k * 7 % 256) as u8).collect();
                heavy[start..start + len].copy_from_slice(&text);
                let bytes = &heavy[start..start + len];
                check::<false>(bytes, &format!("{len} bytes from {off} in a line"));
                check::<true>(bytes, &format!("{len} bytes from {off} in a line"));
                heavy[start..start + len].fill(0);
            }
        }
        let lens = (0..130).chain([
            3263,
            3264,
            3265,
            3264 + 32,
            3072,
            3073,
            2 * 3264 + 31,
            3 * 3264 + 97,
        ]);
        let lens: Vec<usize> = lens.collect();
        for b in 0..=255u8 {
            for &len in &lens {
                let bytes = vec![b; len];
                check::<false>(&bytes, &format!("{b:#x} × {len}"));
                check::<true>(&bytes, &format!("{b:#x} × {len}"));
            }
            for at in 0..64 {
                let mut bytes = vec![b'a'; 97];
                bytes[at] = b;
                bytes[at + 32] = b;
                check::<false>(&bytes, &format!("{b:#x} at {at}"));
                check::<true>(&bytes, &format!("{b:#x} at {at}"));
            }
        }
    }
}
