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
/// Branch-free and written so that the compiler vectorises it (SSE2 on
/// baseline x86-64, NEON on aarch64; the same loop built for AVX2 where the
/// CPU has it, detected at run time):
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
/// an AVX2 build of it chosen at run time where the CPU has AVX2.
fn escape_extra_lanes(bytes: &[u8]) -> u64 {
    if bytes.len() < 16 {
        return escape_extra_scalar(bytes);
    }
    lanes_sum::<false>(bytes)
}

/// The sum of [`byte_weight`] over `bytes`, with the AVX2 build where the
/// CPU has it.
pub(crate) fn lanes_sum<const SPECIALS: bool>(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { escape_extra_avx2::<SPECIALS>(bytes) };
        }
    }
    escape_extra_portable::<SPECIALS>(bytes)
}

/// [`escape_extra_portable`] compiled for AVX2 (32 bytes per instruction).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn escape_extra_avx2<const SPECIALS: bool>(bytes: &[u8]) -> u64 {
    escape_extra_portable::<SPECIALS>(bytes)
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
    let mut n = 0usize;
    let mut total = 2;
    for (k, size) in entries {
        total += string_size(k) + 1 + size;
        n += 1;
    }
    total + commas(n)
}
