//! Image files a case's tools read (SPEC §9: "images where the tool returns
//! them"). A generated history's image results carry a real header and
//! filler after it — right for sizing a body, but no file an agent's image
//! pipeline could decode (a tool that resizes or re-encodes would fail on
//! it, and that would be ctxgate's fault). So an image result becomes a
//! *real* PNG of the generated width and height: 1-bit greyscale noise
//! (incompressible, as a screenshot's bytes are to a transport), in
//! uncompressed deflate blocks, padded to the generated size with a private
//! ancillary chunk every decoder skips. A file is a function of its
//! [`ImageFile`], so a fixture keeps four numbers, not megabytes.

use serde::{Deserialize, Serialize};

use crate::generate::SplitMix64;
use crate::model::parts::base64_encode;

/// The largest side written, in pixels: a bigger generated image keeps its
/// aspect ratio at this size (a 1-bit 8,192² PNG is 8 MB already).
const MAX_SIDE: u32 = 8192;

/// An image a call reads: a PNG of `width` × `height`, at least `bytes`
/// long, its noise drawn from `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageFile {
    pub width: u32,
    pub height: u32,
    pub bytes: u64,
    pub seed: u64,
}

impl ImageFile {
    /// The media type every image file is written as.
    pub const MEDIA_TYPE: &'static str = "image/png";

    /// A file for a generated image of `width` × `height` and `bytes`
    /// bytes (its base64 is 4/3 of that).
    pub fn new(width: u32, height: u32, bytes: u64, seed: u64) -> ImageFile {
        let (mut w, mut h) = (width.max(1), height.max(1));
        let longest = w.max(h);
        if longest > MAX_SIDE {
            w = ((w as u64 * MAX_SIDE as u64) / longest as u64).max(1) as u32;
            h = ((h as u64 * MAX_SIDE as u64) / longest as u64).max(1) as u32;
        }
        ImageFile {
            width: w,
            height: h,
            bytes,
            seed,
        }
    }

    /// The file's bytes: a valid PNG.
    pub fn png(&self) -> Vec<u8> {
        let row = 1 + self.width.div_ceil(8) as usize;
        let mut raw = Vec::with_capacity(row * self.height as usize);
        let mut rng = SplitMix64::new(self.seed);
        for _ in 0..self.height {
            raw.push(0); // filter: none
            let start = raw.len();
            raw.resize(start + row - 1, 0);
            for chunk in raw[start..].chunks_mut(8) {
                let x = rng.next_u64().to_le_bytes();
                chunk.copy_from_slice(&x[..chunk.len()]);
            }
        }
        let mut out = Vec::with_capacity(raw.len() + raw.len() / 65535 * 5 + 64);
        out.extend_from_slice(b"\x89PNG\r\n\x1a\n");
        let mut ihdr = Vec::with_capacity(13);
        ihdr.extend_from_slice(&self.width.to_be_bytes());
        ihdr.extend_from_slice(&self.height.to_be_bytes());
        ihdr.extend_from_slice(&[1, 0, 0, 0, 0]); // 1 bit, grey, deflate, adaptive, none
        chunk(&mut out, b"IHDR", &ihdr);
        chunk(&mut out, b"IDAT", &zlib_stored(&raw));
        // Padding, before IEND: a private ancillary chunk (12 bytes of
        // frame), so the file is at least the generated size.
        let end = out.len() + 12;
        if (self.bytes as usize) > end + 12 {
            let pad = self.bytes as usize - end - 12;
            let mut filler = vec![0u8; pad];
            for chunk in filler.chunks_mut(8) {
                let x = rng.next_u64().to_le_bytes();
                chunk.copy_from_slice(&x[..chunk.len()]);
            }
            chunk(&mut out, b"ctXg", &filler);
        }
        chunk(&mut out, b"IEND", &[]);
        out
    }

    /// The file as base64, as a tool that returns it as an image sends it.
    pub fn base64(&self) -> String {
        let png = self.png();
        let mut s = String::with_capacity(png.len().div_ceil(3) * 4);
        base64_encode(&png, &mut s);
        s
    }
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let at = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[at..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream of uncompressed deflate blocks.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65535 * 5 + 11);
    out.extend_from_slice(&[0x78, 0x01]);
    let mut blocks = data.chunks(65535).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(b) = blocks.next() {
        out.push(u8::from(blocks.peek().is_none()));
        let n = b.len() as u16;
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(!n).to_le_bytes());
        out.extend_from_slice(b);
    }
    let (mut a, mut s) = (1u32, 0u32);
    for block in data.chunks(5552) {
        for &x in block {
            a += x as u32;
            s += a;
        }
        a %= 65521;
        s %= 65521;
    }
    out.extend_from_slice(&((s << 16) | a).to_be_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (n, e) in t.iter_mut().enumerate() {
            let mut c = n as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    let mut c = !0u32;
    for &b in data {
        c = table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crc_and_adler_are_the_standard_ones() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b"IEND"), 0xae42_6082);
        let z = zlib_stored(b"Wikipedia");
        assert_eq!(&z[z.len() - 4..], &0x11e6_0398u32.to_be_bytes());
    }

    #[test]
    fn a_file_has_its_size_and_its_pixels_and_reads_back_as_a_png() {
        for (w, h, bytes) in [
            (1, 1, 10),
            (640, 480, 200_000),
            (3000, 20, 500),
            (9000, 100, 0),
        ] {
            let f = ImageFile::new(w, h, bytes, 7);
            let png = f.png();
            assert!(
                png.len() as u64 >= bytes,
                "{w}x{h}: {} < {bytes}",
                png.len()
            );
            let size = imagesize::blob_size(&png).expect("a PNG header");
            assert_eq!((size.width as u32, size.height as u32), (f.width, f.height));
            assert!(f.width <= MAX_SIDE && f.height <= MAX_SIDE);
            // The stream decodes: inflate the stored blocks back.
            let idat = find_chunk(&png, b"IDAT");
            let raw = inflate_stored(idat);
            assert_eq!(
                raw.len(),
                f.height as usize * (1 + f.width.div_ceil(8) as usize)
            );
            assert!(find_chunk(&png, b"IEND").is_empty());
            assert_eq!(f.png(), png, "a file is a function of its numbers");
        }
        let wide = ImageFile::new(16_384, 100, 0, 1);
        assert_eq!(
            (wide.width, wide.height),
            (8192, 50),
            "the aspect ratio is kept"
        );
    }

    /// Walk the chunks, checking each CRC, and return one's data.
    fn find_chunk<'a>(png: &'a [u8], kind: &[u8; 4]) -> &'a [u8] {
        let mut at = 8;
        while at < png.len() {
            let n = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
            let body = &png[at + 4..at + 8 + n];
            let crc = u32::from_be_bytes(png[at + 8 + n..at + 12 + n].try_into().unwrap());
            assert_eq!(crc32(body), crc, "chunk {:?}", &body[..4]);
            if &body[..4] == kind {
                return &body[4..];
            }
            at += 12 + n;
        }
        panic!("no {kind:?} chunk");
    }

    fn inflate_stored(z: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut at = 2;
        loop {
            let last = z[at] & 1;
            assert_eq!(z[at] >> 1, 0, "stored blocks only");
            let n = u16::from_le_bytes([z[at + 1], z[at + 2]]) as usize;
            let not_n = u16::from_le_bytes([z[at + 3], z[at + 4]]);
            assert_eq!(!(n as u16), not_n);
            out.extend_from_slice(&z[at + 5..at + 5 + n]);
            at += 5 + n;
            if last == 1 {
                break;
            }
        }
        assert_eq!(at + 4, z.len());
        out
    }
}
