//! What an image costs in tokens (SPEC §3): the providers' published
//! rules, made exact. The estimators add it for every image part; the
//! `estimate-covers-images` floor is the sum of it.
//!
//! - `anthropic` and `engine`: s = min(1, 1568 / max(w, h),
//!   √(1,150,000 / (w·h))); tokens = ceil(⌊w·s⌋ · ⌊h·s⌋ / 750).
//! - `openai`: `detail: "low"` is 85. Otherwise s₁ = min(1, 2048 /
//!   max(w, h)), then s₂ = min(1, 768 / min(⌊w·s₁⌋, ⌊h·s₁⌋)); with w″, h″
//!   the sides after both, tokens = 85 + 170 · ceil(w″ / 512) · ceil(h″ / 512).
//! - An image whose size cannot be read (a remote URL, an unknown or broken
//!   header) costs the most its format allows: [`MAX_ANTHROPIC`] or
//!   [`MAX_OPENAI`].
//!
//! Scaled sides are rounded down to whole pixels. The square root is taken
//! in floating point, then corrected to the exact integer floor, so that
//! no rounding error of `f64` moves a side by a pixel.
//!
//! What it does not do: price the base64 (its bytes count in the body,
//! never in tokens: a screenshot is ~1,600 tokens and ~1 MB of body).

use crate::model::{Content, Image, WireFormat};

/// The most an image can cost under the `anthropic` (and `engine`) rule:
/// ~1.15 megapixels, ⌈1,150,000 / 750⌉.
pub const MAX_ANTHROPIC: u64 = 1_534;
/// The most an image can cost under the `openai` rule, `detail` not
/// `low`: 768 × 2048, eight tiles.
pub const MAX_OPENAI: u64 = 85 + 170 * 8;
/// An `openai` image with `detail: "low"`.
pub const OPENAI_LOW: u64 = 85;

/// Tokens of one image in `format` (SPEC §3).
pub fn image_tokens(image: &Image, format: WireFormat) -> u64 {
    match format {
        WireFormat::Openai if image.detail() == Some("low") => OPENAI_LOW,
        WireFormat::Openai => image.pixels().map_or(MAX_OPENAI, |(w, h)| openai(w, h)),
        WireFormat::Anthropic | WireFormat::Engine => image
            .pixels()
            .map_or(MAX_ANTHROPIC, |(w, h)| anthropic(w, h)),
    }
}

/// The most an image costs under either provider's rule: what
/// `safe-classwise` charges (an upper bound whatever the provider) and what
/// `calibrate` counts as an image's real tokens.
pub fn image_tokens_any_provider(image: &Image) -> u64 {
    image_tokens(image, WireFormat::Anthropic).max(image_tokens(image, WireFormat::Openai))
}

/// Σ [`image_tokens_any_provider`] over a content's images.
pub fn content_image_tokens_any_provider(content: &Content) -> u64 {
    content.images().map(image_tokens_any_provider).sum()
}

/// Σ [`image_tokens`] over a content's images.
pub fn content_image_tokens(content: &Content, format: WireFormat) -> u64 {
    content.images().map(|i| image_tokens(i, format)).sum()
}

/// The `anthropic` rule for a `w` × `h` image.
pub fn anthropic(w: u32, h: u32) -> u64 {
    let (w, h) = (w as u64, h as u64);
    if w == 0 || h == 0 {
        return 0;
    }
    // The three candidates for s: 1, 1568 / max side and
    // √(1,150,000 / (w·h)). The smallest is chosen by exact comparison
    // (of squares, in integers), then the sides are floored exactly.
    let long = w.max(h);
    let area = w * h;
    let by_long = long > 1568;
    let by_area = area > 1_150_000;
    // 1568 / long ≤ √(1,150,000 / area)  ⟺  1568² · area ≤ 1,150,000 · long².
    let long_smaller =
        (1568u128 * 1568 * area as u128) <= (1_150_000u128 * long as u128 * long as u128);
    let sides = match (by_long, by_area) {
        (true, false) => (w * 1568 / long, h * 1568 / long),
        (true, true) if long_smaller => (w * 1568 / long, h * 1568 / long),
        (_, true) => (
            floor_scaled_by_root(w, 1_150_000, area),
            floor_scaled_by_root(h, 1_150_000, area),
        ),
        (false, false) => (w, h),
    };
    (sides.0 * sides.1).div_ceil(750)
}

/// ⌊x · √(num / den)⌋ exactly: the largest n with n² · den ≤ x² · num.
fn floor_scaled_by_root(x: u64, num: u64, den: u64) -> u64 {
    let target = (x as u128) * (x as u128) * (num as u128);
    let guess = (x as f64 * (num as f64 / den as f64).sqrt()) as u64;
    let fits = |n: u64| (n as u128) * (n as u128) * (den as u128) <= target;
    let mut n = guess.saturating_sub(2);
    while fits(n + 1) {
        n += 1;
    }
    while n > 0 && !fits(n) {
        n -= 1;
    }
    n
}

/// The `openai` rule for a `w` × `h` image, `detail` not `low`.
pub fn openai(w: u32, h: u32) -> u64 {
    let (mut w, mut h) = (w as u64, h as u64);
    if w == 0 || h == 0 {
        return OPENAI_LOW;
    }
    let long = w.max(h);
    if long > 2048 {
        (w, h) = (w * 2048 / long, h * 2048 / long);
    }
    let short = w.min(h);
    if short > 768 {
        (w, h) = (w * 768 / short, h * 768 / short);
    }
    OPENAI_LOW + 170 * w.div_ceil(512) * h.div_ceil(512)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floors_are_exact_where_floating_point_is_not() {
        for (w, h) in [
            (1092, 1092),
            (1568, 784),
            (4000, 3000),
            (1, 1_150_001),
            (65535, 3),
        ] {
            let exact = floor_scaled_by_root(w, 1_150_000, w * h);
            let n = exact as u128;
            let t = (w as u128) * (w as u128) * 1_150_000;
            assert!(n * n * ((w * h) as u128) <= t);
            assert!((n + 1) * (n + 1) * ((w * h) as u128) > t);
        }
    }

    #[test]
    fn maxima_are_the_largest_costs() {
        let mut most = (0, 0);
        for w in (16..4000).step_by(37) {
            for h in (16..9000).step_by(53) {
                most.0 = most.0.max(anthropic(w, h));
                most.1 = most.1.max(openai(w, h));
            }
        }
        assert!(
            most.0 <= MAX_ANTHROPIC && most.0 >= MAX_ANTHROPIC - 2,
            "{most:?}"
        );
        assert_eq!(most.1, MAX_OPENAI);
    }
}
