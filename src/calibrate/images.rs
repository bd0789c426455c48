//! The `images` set of `calibrate` and `compare-estimators` (issue 26):
//! what an estimator does with screenshots. One history per realistic
//! size (`generate::images::typical_sizes`: icons, laptop and 4K screens,
//! a phone, a long page capture, a photo), each one user message holding
//! one inline image and nothing else, so that an estimate of the history
//! is the estimator's tokens for that image.
//!
//! Each image has a real header (PNG, JPEG, GIF or WebP) and a payload of
//! a typical file's size for its pixels, from 5 KB to 4 MB of base64. Its
//! real tokens are SPEC §3's, by pixels: [`ImageFigures`] holds both
//! providers' figures and its bytes in the body, which an estimator that
//! reads the base64 as text gets wrong by orders of magnitude
//! (justrach/codegraff#259), and one that weighs images at nothing
//! (openai/codex#41338) misses entirely.

use crate::body;
use crate::config::Config;
use crate::estimate::images::image_tokens;
use crate::generate::images::{inline_image, typical_sizes, ImageFormat};
use crate::generate::SplitMix64;
use crate::model::{Content, Message, Part, WireFormat};

/// The set's name in reports.
pub const IMAGES: &str = "images";

/// The set: one image-only user message per typical size, at most `count`
/// (the smallest sizes first when fewer), the same on every run.
pub fn image_samples(count: usize) -> Vec<Message> {
    let mut rng = SplitMix64::new(0x0026_0098);
    typical_sizes()
        .into_iter()
        .take(count)
        .enumerate()
        .map(|(i, (w, h, bytes))| {
            let format = match (w, i % 3) {
                (64, _) => ImageFormat::Gif,
                (..=128, _) => ImageFormat::Png,
                (4032, _) => ImageFormat::Jpeg,
                (_, 0) => ImageFormat::Png,
                (_, 1) => ImageFormat::Jpeg,
                _ => ImageFormat::Webp,
            };
            let image = inline_image(&mut rng, format, w, h, bytes as usize);
            Message::user(Content::Parts(vec![Part::Image(image)]))
        })
        .collect()
}

/// What SPEC §3 and the body say of one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFigures {
    pub media_type: String,
    /// Width and height read from the header; `None` when unreadable.
    pub pixels: Option<(u32, u32)>,
    /// Its base64, in bytes: what it adds to a request body.
    pub payload_bytes: u64,
    /// The exact engine body of the one-message history holding it.
    pub body_bytes: u64,
    /// SPEC §3 tokens under the `anthropic` (and `engine`) rule.
    pub anthropic_tokens: u64,
    /// SPEC §3 tokens under the `openai` rule (`detail` not `low`).
    pub openai_tokens: u64,
}

/// The figures of every image in `history` (the set's histories hold one).
pub fn figures(history: &[Message]) -> Vec<ImageFigures> {
    let config = Config::default();
    let body_bytes = body::body_bytes(&config, history);
    history
        .iter()
        .flat_map(|m| m.content.images())
        .map(|img| ImageFigures {
            media_type: img.media_type().to_owned(),
            pixels: img.pixels(),
            payload_bytes: img.payload_bytes(),
            body_bytes,
            anthropic_tokens: image_tokens(img, WireFormat::Anthropic),
            openai_tokens: image_tokens(img, WireFormat::Openai),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{Adr0098, ContentOnly, Estimator};

    #[test]
    fn one_real_header_per_typical_size() {
        let samples = image_samples(usize::MAX);
        let sizes = typical_sizes();
        assert_eq!(samples.len(), sizes.len());
        assert_eq!(image_samples(3), samples[..3]);
        for (m, (w, h, bytes)) in samples.iter().zip(sizes) {
            let f = figures(std::slice::from_ref(m));
            assert_eq!(f.len(), 1);
            assert_eq!(f[0].pixels, Some((w, h)));
            assert_eq!(f[0].payload_bytes, bytes.div_ceil(3) * 4);
            assert!(f[0].body_bytes > f[0].payload_bytes);
            assert!(m.content.text().is_empty());
        }
        let media: Vec<String> = samples
            .iter()
            .flat_map(|m| figures(std::slice::from_ref(m)))
            .map(|f| f.media_type)
            .collect();
        for t in ["image/png", "image/jpeg", "image/gif", "image/webp"] {
            assert!(media.iter().any(|m| m == t), "{t} missing: {media:?}");
        }
    }

    #[test]
    fn the_estimators_count_each_image_by_its_pixels() {
        let config = Config::default();
        for m in image_samples(usize::MAX) {
            let history = [m];
            let f = &figures(&history)[0];
            for e in [&Adr0098 as &dyn Estimator, &ContentOnly] {
                assert_eq!(
                    e.tokens(&mut history.iter(), &config),
                    f.anthropic_tokens,
                    "{} on {:?}",
                    e.name(),
                    f.pixels
                );
            }
        }
    }
}
