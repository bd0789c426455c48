//! The `images` content class (SPEC §1.4): screenshots, pasted pictures
//! and icons in generated histories — where ADR 0098's two budgets part
//! the most (a screenshot is ~1,600 tokens and ~1 MB of base64).
//!
//! Images are real as far as a compactor can see: a real PNG, JPEG, GIF or
//! WebP header with a realistic size (64 px icons to 4K screenshots, a
//! long page capture, a phone screen), then filler up to a payload drawn
//! from a few KB to `GenConfig::max_image_bytes` (Anthropic's 5 MB
//! per-image limit by default; 1% of the images sit at it), written as
//! base64 slices of a pool, so that a megabyte costs a copy. A share are
//! remote URLs.
//!
//! Where they go, one shape per image case:
//!
//! - **pasted**: one to three user messages get a screenshot beside their
//!   text;
//! - **tool screenshots**: a share of tool results (a browser's, Figma's,
//!   `Read` on a PNG) carry an image after their text;
//! - **computer use**: every tool iteration's first result is a screenshot
//!   of the same screen size, one per turn, as a computer-use loop sends.
//!
//! In the `openai` format a tool's image travels in a user message after
//! the results (`model::openai::carry_tool_images`); the generator applies
//! that move once the case's format is drawn, so an `openai` case holds
//! its images as that format carries them, and a `detail` now and then.
//!
//! Image decisions use a stream of their own, seeded from the case's seed:
//! a case without images is, draw for draw, the case the generator made
//! before images existed, so every suite keeps its non-image cases.

use std::sync::Arc;

use serde_json::Value;

use super::rng::SplitMix64;
use super::GenConfig;
use crate::model::parts::base64_encode;
use crate::model::{Content, Image, ImageData, ImageSource, Message, Part, Role, WireFormat};

/// The image stream's salt ("IMAGE").
pub(super) const IMAGE_STREAM: u64 = 0x0049_4d41_4745;

/// A screen or picture size, with the kind of image it is.
#[derive(Debug, Clone, Copy)]
struct Size {
    w: u32,
    h: u32,
    /// Bytes per pixel of a typical file of this kind (×1000).
    milli_bpp: u32,
}

/// Realistic sizes: icons, desktop and laptop screens, a 4K screen, a
/// phone, a long page capture, a camera photo, a computer-use display.
const SIZES: [Size; 14] = [
    Size {
        w: 64,
        h: 64,
        milli_bpp: 900,
    },
    Size {
        w: 128,
        h: 128,
        milli_bpp: 700,
    },
    Size {
        w: 1024,
        h: 768,
        milli_bpp: 350,
    },
    Size {
        w: 1280,
        h: 800,
        milli_bpp: 400,
    },
    Size {
        w: 1366,
        h: 768,
        milli_bpp: 400,
    },
    Size {
        w: 1440,
        h: 900,
        milli_bpp: 450,
    },
    Size {
        w: 1920,
        h: 1080,
        milli_bpp: 500,
    },
    Size {
        w: 2560,
        h: 1440,
        milli_bpp: 450,
    },
    Size {
        w: 2880,
        h: 1800,
        milli_bpp: 420,
    },
    Size {
        w: 3840,
        h: 2160,
        milli_bpp: 400,
    },
    Size {
        w: 1170,
        h: 2532,
        milli_bpp: 380,
    },
    Size {
        w: 1280,
        h: 7200,
        milli_bpp: 300,
    },
    Size {
        w: 4032,
        h: 3024,
        milli_bpp: 250,
    },
    Size {
        w: 1092,
        h: 1092,
        milli_bpp: 500,
    },
];

/// The realistic sizes as `(w, h, typical file bytes)`, in their order:
/// the `images` set of `calibrate` and `compare-estimators` shows one
/// image of each.
pub fn typical_sizes() -> Vec<(u32, u32, u64)> {
    SIZES
        .iter()
        .map(|s| {
            (
                s.w,
                s.h,
                s.w as u64 * s.h as u64 * s.milli_bpp as u64 / 1000,
            )
        })
        .collect()
}

/// The header formats, with their media types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageFormat {
    pub const ALL: [ImageFormat; 4] = [
        ImageFormat::Png,
        ImageFormat::Jpeg,
        ImageFormat::Gif,
        ImageFormat::Webp,
    ];

    pub fn media_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Gif => "image/gif",
            ImageFormat::Webp => "image/webp",
        }
    }
}

/// A real header of `format` for a `w` × `h` image, padded to a multiple
/// of three bytes (so that its base64 ends on a whole quad).
pub fn header(format: ImageFormat, w: u32, h: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(48);
    match format {
        ImageFormat::Png => {
            b.extend_from_slice(b"\x89PNG\r\n\x1a\n");
            let mut ihdr = b"IHDR".to_vec();
            ihdr.extend(w.to_be_bytes());
            ihdr.extend(h.to_be_bytes());
            ihdr.extend([8, 6, 0, 0, 0]);
            b.extend(13u32.to_be_bytes());
            b.extend_from_slice(&ihdr);
            b.extend(crc32(&ihdr).to_be_bytes());
        }
        ImageFormat::Jpeg => {
            b.extend_from_slice(&[0xff, 0xd8, 0xff, 0xe0, 0, 16]);
            b.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
            b.extend_from_slice(&[0xff, 0xc0, 0, 17, 8]);
            b.extend((h.min(65_535) as u16).to_be_bytes());
            b.extend((w.min(65_535) as u16).to_be_bytes());
            b.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
        }
        ImageFormat::Gif => {
            b.extend_from_slice(b"GIF89a");
            b.extend((w.min(65_535) as u16).to_le_bytes());
            b.extend((h.min(65_535) as u16).to_le_bytes());
            b.extend_from_slice(&[0xf7, 0, 0]);
        }
        ImageFormat::Webp => {
            b.extend_from_slice(b"RIFF\0\0\0\0WEBPVP8X");
            b.extend(10u32.to_le_bytes());
            b.extend_from_slice(&[0x10, 0, 0, 0]);
            b.extend_from_slice(&(w.clamp(1, 1 << 24) - 1).to_le_bytes()[..3]);
            b.extend_from_slice(&(h.clamp(1, 1 << 24) - 1).to_le_bytes()[..3]);
        }
    }
    while b.len() % 3 != 0 {
        b.push(0);
    }
    b
}

/// CRC-32 (PNG's), bit by bit: a header's worth of bytes.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in bytes {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Random base64 characters, written once: image payloads are slices of
/// it (at offsets the case's stream picks), so that a megabyte of image
/// costs a copy, not a megabyte of random draws.
fn filler_pool() -> &'static str {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static POOL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let mut r = SplitMix64::new(0x0026_1a6e);
        let mut buf = Vec::with_capacity(POOL_BYTES + 10);
        while buf.len() < POOL_BYTES {
            let mut x = r.next_u64();
            for _ in 0..10 {
                buf.push(A[(x & 63) as usize]);
                x >>= 6;
            }
        }
        buf.truncate(POOL_BYTES);
        String::from_utf8(buf).expect("base64 is ASCII")
    })
}

const POOL_BYTES: usize = 1 << 22;

/// Base64 of a `w` × `h` image of `format` whose file is `bytes` long
/// (at least its header): the header, then filler — base64 characters,
/// slices of a pool at offsets `rng` picks.
pub fn image_base64(
    rng: &mut SplitMix64,
    format: ImageFormat,
    w: u32,
    h: u32,
    bytes: usize,
) -> String {
    let head = header(format, w, h);
    let total = bytes.max(head.len()).div_ceil(3) * 4;
    let mut s = String::with_capacity(total);
    base64_encode(&head, &mut s);
    let pool = filler_pool();
    while s.len() < total {
        let at = rng.below(POOL_BYTES as u64) as usize;
        let n = (total - s.len()).min(POOL_BYTES - at);
        s.push_str(&pool[at..at + n]);
    }
    s
}

/// An inline image part of `format`, `w` × `h`, `bytes` long.
pub fn inline_image(
    rng: &mut SplitMix64,
    format: ImageFormat,
    w: u32,
    h: u32,
    bytes: usize,
) -> Image {
    Image {
        source: ImageSource::Inline(ImageData::new(
            format.media_type(),
            image_base64(rng, format, w, h, bytes),
        )),
        extra: serde_json::Map::new(),
        wire: None,
    }
}

fn log_range(r: &mut SplitMix64, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    let (a, b) = ((lo.max(1) as f64).ln(), (hi as f64).ln());
    let x = a + (b - a) * (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (x.exp() as u64).clamp(lo, hi)
}

/// One case's image maker.
pub(super) struct ImageGen<'g> {
    r: SplitMix64,
    g: &'g GenConfig,
    /// Images made so far (at most `g.max_images`).
    made: usize,
    /// Payloads are shared within a case now and then (the same
    /// screenshot read twice), so that a compactor's identity checks are
    /// exercised too.
    last: Option<Arc<ImageData>>,
}

impl<'g> ImageGen<'g> {
    /// The image maker of a case seeded `seed`, when the case has images.
    pub(super) fn for_case(seed: u64, g: &'g GenConfig) -> Option<ImageGen<'g>> {
        if !g.images_on() {
            return None;
        }
        let mut r = SplitMix64::new(super::rng::mix(seed, IMAGE_STREAM));
        r.chance(g.images_percent as u32).then_some(ImageGen {
            r,
            g,
            made: 0,
            last: None,
        })
    }

    fn full(&self) -> bool {
        self.made >= self.g.max_images.max(1)
    }

    /// A screen size and header format.
    fn size(&mut self) -> (Size, ImageFormat) {
        let size = *self.r.pick(&SIZES);
        let format = if size.w <= 128 {
            *self
                .r
                .pick(&[ImageFormat::Png, ImageFormat::Png, ImageFormat::Gif])
        } else if size.w == 4032 {
            ImageFormat::Jpeg
        } else {
            [
                ImageFormat::Png,
                ImageFormat::Jpeg,
                ImageFormat::Webp,
                ImageFormat::Png,
            ][self.r.below(4) as usize]
        };
        (size, format)
    }

    /// One image of `size`: inline mostly, remote now and then.
    fn image(&mut self, size: Size, format: ImageFormat) -> Image {
        self.made += 1;
        if self.r.chance(self.g.remote_image_percent as u32) {
            let ext = match format {
                ImageFormat::Jpeg => "jpg",
                ImageFormat::Png => "png",
                ImageFormat::Gif => "gif",
                ImageFormat::Webp => "webp",
            };
            return Image::url(format!(
                "https://assets.example.com/screens/{:012x}.{ext}",
                self.r.next_u64() >> 16
            ));
        }
        if let Some(d) = self.last.clone().filter(|_| self.r.chance(5)) {
            return Image {
                source: ImageSource::Inline(d),
                extra: serde_json::Map::new(),
                wire: None,
            };
        }
        let max = self.g.max_image_bytes.max(64) as u64;
        let bytes = if self.r.chance(1) {
            max
        } else {
            // From a well-compressed file (a sixteenth of the typical
            // size) to a typical PNG of that screen.
            let typical = size.w as u64 * size.h as u64 * size.milli_bpp as u64 / 1000;
            let lo = (typical / 16).max(2_048).min(max);
            let hi = typical.max(lo).min(max);
            log_range(&mut self.r, lo, hi)
        };
        let img = inline_image(&mut self.r, format, size.w, size.h, bytes as usize);
        if let ImageSource::Inline(d) = &img.source {
            self.last = Some(d.clone());
        }
        img
    }

    /// Add images to a generated history (see the module docs for the
    /// three shapes).
    pub(super) fn add(&mut self, msgs: &mut [Message]) {
        let users: Vec<usize> = (0..msgs.len())
            .filter(|&i| msgs[i].role == Role::User)
            .collect();
        let firsts: Vec<usize> = (1..msgs.len())
            .filter(|&i| msgs[i].role == Role::Tool && msgs[i - 1].role != Role::Tool)
            .collect();
        let tools: Vec<usize> = (0..msgs.len())
            .filter(|&i| msgs[i].role == Role::Tool)
            .collect();
        let run = !firsts.is_empty() && self.r.chance(self.g.screenshot_run_percent as u32);
        if run {
            // Computer use: one screenshot per turn, the same screen.
            let (size, format) = self.size();
            let size = if size.w <= 128 { SIZES[3] } else { size };
            for &i in &firsts {
                if self.full() {
                    break;
                }
                let img = self.image(size, format);
                attach(&mut msgs[i], img, false);
            }
            return;
        }
        let pasted = tools.is_empty() || (!users.is_empty() && self.r.chance(40));
        if pasted && !users.is_empty() {
            let n = self.r.range(1, 3) as usize;
            for _ in 0..n {
                if self.full() {
                    break;
                }
                let i = *self.r.pick(&users);
                let (size, format) = self.size();
                let img = self.image(size, format);
                let before = self.r.chance(30);
                attach(&mut msgs[i], img, before);
            }
        }
        if !tools.is_empty() {
            let share = self.r.range(20, 70) as u32;
            for &i in &tools {
                if self.full() {
                    break;
                }
                if self.r.chance(share) {
                    let (size, format) = self.size();
                    let img = self.image(size, format);
                    attach(&mut msgs[i], img, false);
                }
            }
            // Half the time the last result is a screenshot too: the one
            // the agent just took, which SPEC §4 step 4 never elides.
            let last = tools[tools.len() - 1];
            if !msgs[last].has_images() && !self.full() && self.r.chance(50) {
                let (size, format) = self.size();
                let img = self.image(size, format);
                attach(&mut msgs[last], img, false);
            }
        }
    }

    /// Once the case's wire format is known: in `openai`, tool images move
    /// to a user message after the results, and some images get a
    /// `detail`.
    pub(super) fn for_format(&mut self, msgs: &mut Vec<Message>, format: WireFormat) {
        if format != WireFormat::Openai {
            return;
        }
        // A pending last iteration's results keep no images: a user
        // message after them would leave its calls unanswered mid-history.
        if let Some(last) = crate::model::iterations(msgs).last().cloned() {
            if !crate::model::unanswered_calls(msgs, last.clone()).is_empty() {
                for m in &mut msgs[last] {
                    if let Content::Parts(parts) = &mut m.content {
                        parts.retain(|p| p.as_image().is_none());
                    }
                }
            }
        }
        // Half the cases hold the images as agents send them, in user
        // messages after the results; the other half as the engine holds
        // them, in the tool messages, which the subject (or the body) must
        // carry itself: one user message a tool message, each one's
        // overhead in the body (docs/protocol.md).
        if self.r.chance(50) {
            *msgs = crate::model::openai::carry_tool_images(msgs);
        }
        for m in msgs.iter_mut() {
            if let Content::Parts(parts) = &mut m.content {
                for p in parts {
                    if let Part::Image(i) = p {
                        match self.r.below(6) {
                            0 => i.extra.insert("detail".into(), Value::from("low")),
                            1 => i.extra.insert("detail".into(), Value::from("high")),
                            2 => i.extra.insert("detail".into(), Value::from("auto")),
                            _ => None,
                        };
                    }
                }
            }
        }
    }
}

impl ImageGen<'_> {
    /// Half the image cases with a generated config get a ceiling between
    /// the minimal output (head, pinned iterations, the last one) and the
    /// head with the last `keepRecent` iterations: where recent screenshots
    /// overflow the body and SPEC §4 step 4 elides them (a ToolLoop's
    /// everyday shape once screenshots pile up). Half of those, where the
    /// case has one, get a ceiling in `reference::ElisionFloors::band`;
    /// a third of the cases with a run of image results, a body on the
    /// ceiling ±1.
    pub(super) fn aim_at_elision(&mut self, case: &mut super::Case) {
        // A third of those with a run of two or more image results get a
        // body on the ceiling ±1, where one user message a tool message
        // (openai) or a block each (anthropic) decides it; three in four
        // where the subject is to carry a tool's images itself (openai,
        // left in the tool messages), the shape a per-message slip needs.
        let to_carry = case.config.wire_format == WireFormat::Openai
            && crate::model::openai::has_tool_images(&case.messages);
        let share = if to_carry { 75 } else { 33 };
        if image_results_in_a_run(&case.messages) >= 2 && self.r.chance(share) {
            let off = [1i64, 0, -1][self.r.below(4).saturating_sub(1) as usize];
            let body = crate::body::body_bytes(&case.config, &case.messages) as i64;
            let c = &mut case.config;
            c.transport_max_body_bytes = (body - off).max(1) as u64;
            c.context_window = c.context_window.max(c.transport_max_body_bytes);
            return;
        }
        // Of the others, a quarter keep the ceiling drawn, a quarter get
        // one between the two bounds, half one in the band where there is
        // one.
        let roll = self.r.below(4);
        if roll == 3 {
            return;
        }
        let msgs = &case.messages;
        let c = &mut case.config;
        let head = crate::contract::Head::of(msgs).kept;
        let iters = crate::model::iterations(&msgs[head..]);
        let k = c.keep_recent.min(iters.len());
        if k == 0 {
            return;
        }
        let lo = crate::contract::minimal_body(c, msgs);
        // The band where only eliding a protected image (the last
        // iteration's, a pinned one's) would keep `k` iterations: its
        // edges, or inside it. Elsewhere a compactor that elides the last
        // screenshot passes (a blind audit's one was found at case 1,198).
        let band = match roll < 2 {
            true => crate::reference::Reference::default()
                .elision_floors(c, msgs, k)
                .map(|f| f.protected.max(lo)..f.allowed)
                .filter(|b| !b.is_empty()),
            false => None,
        };
        let ceiling = match band {
            Some(b) => match self.r.below(3) {
                0 => b.end - 1,
                1 => b.start,
                _ => self.r.range(b.start, b.end - 1),
            },
            None => {
                // Between the bounds, where recent screenshots but the
                // last are there to elide.
                let start = iters[iters.len() - k].start + head;
                let recent: Vec<&Message> = msgs[..head].iter().chain(&msgs[start..]).collect();
                let last = iters[iters.len() - 1].len();
                if k < 2 || !recent[..recent.len() - last].iter().any(|m| m.has_images()) {
                    return;
                }
                let hi = crate::body::body_bytes(c, recent.iter().copied());
                if hi <= lo + 1 {
                    return;
                }
                lo + self.r.range(1, hi - lo - 1)
            }
        };
        c.transport_max_body_bytes = ceiling;
        // The window large enough that the ceiling decides.
        c.context_window = c.context_window.max(ceiling);
    }
}

/// The most messages with images in one run of tool results (with, in
/// the openai format, the user messages that carry their images after
/// the run: one a tool message).
pub fn image_results_in_a_run(msgs: &[Message]) -> usize {
    let (mut most, mut now, mut in_run) = (0, 0, false);
    for m in msgs {
        in_run = match m.role {
            Role::Tool => true,
            Role::User => in_run,
            _ => false,
        };
        now = if in_run {
            now + m.has_images() as usize
        } else {
            0
        };
        most = most.max(now);
    }
    most
}

/// Put `img` into `m`'s content: as a part after (or before) its text.
fn attach(m: &mut Message, img: Image, before: bool) {
    let mut parts = match std::mem::take(&mut m.content) {
        Content::Parts(p) => p,
        Content::Text(t) if !t.is_empty() => vec![Part::text(t)],
        _ => Vec::new(),
    };
    if before {
        parts.insert(0, Part::Image(img));
    } else {
        parts.push(Part::Image(img));
    }
    m.content = Content::Parts(parts);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parts::read_pixels;

    #[test]
    fn every_header_reads_back_its_size() {
        let mut r = SplitMix64::new(5);
        for format in ImageFormat::ALL {
            for s in SIZES {
                let data = image_base64(&mut r, format, s.w, s.h, 4_000);
                assert_eq!(data.len() % 4, 0);
                let want = match format {
                    ImageFormat::Jpeg | ImageFormat::Gif => (s.w.min(65_535), s.h.min(65_535)),
                    _ => (s.w, s.h),
                };
                assert_eq!(read_pixels(&data), Some(want), "{format:?} {}×{}", s.w, s.h);
                assert_eq!(crate::body::string_size(&data), data.len() as u64 + 2);
            }
        }
    }

    #[test]
    fn payloads_have_the_size_asked() {
        let mut r = SplitMix64::new(9);
        let data = image_base64(&mut r, ImageFormat::Png, 1920, 1080, 1_000_000);
        assert_eq!(data.len(), 1_000_000usize.div_ceil(3) * 4);
    }
}
