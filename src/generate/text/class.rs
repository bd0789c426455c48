//! The content classes: the one vocabulary of generate, calibrate and
//! benches, and [`classify`], which tells after the fact which classes a
//! text shows.

/// A content class: the one vocabulary of generate, calibrate and benches.
/// The order is calibrate's (its sample streams are seeded by it).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    arbitrary::Arbitrary,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ContentClass {
    /// English sentences from common words, with numbers and punctuation.
    Prose,
    /// Rust, Python, TypeScript, Elixir and SQL-like lines.
    Code,
    /// JSON documents: tool results, tool-call arguments.
    Json,
    /// Chinese, Japanese and Korean text; common characters and rare ones.
    Cjk,
    /// Other scripts: Latin with diacritics, Greek, Cyrillic, Arabic,
    /// Hebrew, Devanagari, Thai.
    Multilingual,
    /// Emoji: single code points, skin tones, ZWJ families, flags, keycaps.
    Emoji,
    /// Terminal output with ANSI codes, Windows paths, JSON in strings,
    /// control characters.
    Escapes,
    /// Images (SPEC §1.4): screenshots and pictures as content parts, in
    /// user messages and tool results (`generate::images`). Not a text
    /// class: it is not in [`ContentClass::ALL`], and a text asked of it
    /// is prose.
    Images,
}

impl ContentClass {
    pub const ALL: [ContentClass; 7] = [
        ContentClass::Prose,
        ContentClass::Code,
        ContentClass::Json,
        ContentClass::Cjk,
        ContentClass::Multilingual,
        ContentClass::Emoji,
        ContentClass::Escapes,
    ];

    /// Every class: the seven text classes, then `images`.
    pub const EVERY: [ContentClass; 8] = {
        let [prose, code, json, cjk, multilingual, emoji, escapes] = ContentClass::ALL;
        [
            prose,
            code,
            json,
            cjk,
            multilingual,
            emoji,
            escapes,
            ContentClass::Images,
        ]
    };

    /// A class of text (every class but `images`).
    pub fn is_text(self) -> bool {
        self != ContentClass::Images
    }

    /// The stable name, in reports, `gen --stats` and GenConfig's JSON.
    pub fn name(self) -> &'static str {
        match self {
            ContentClass::Prose => "prose",
            ContentClass::Code => "code",
            ContentClass::Json => "json",
            ContentClass::Cjk => "cjk",
            ContentClass::Multilingual => "multilingual",
            ContentClass::Emoji => "emoji",
            ContentClass::Escapes => "escapes",
            ContentClass::Images => "images",
        }
    }

    pub fn parse(name: &str) -> Option<ContentClass> {
        ContentClass::EVERY.into_iter().find(|c| c.name() == name)
    }
}

impl std::fmt::Display for ContentClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// CJK punctuation, kana, ideographs (BMP), Hangul, fullwidth forms.
fn is_cjk(c: u32) -> bool {
    matches!(c, 0x3000..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7A3 | 0xFF00..=0xFFEF)
}

/// Which classes a text shows, as a bit set indexed like [`ContentClass::ALL`].
pub fn classify(s: &str) -> u8 {
    if s.is_empty() {
        return 0;
    }
    let bit = |c: ContentClass| 1u8 << (c as u8);
    let mut out = 0u8;
    let (mut cjk, mut other, mut astral, mut control) = (false, false, false, false);
    for c in s.chars() {
        let c = c as u32;
        if c >= 0x1_0000 {
            astral = true;
        } else if is_cjk(c) {
            cjk = true;
        } else if c >= 0x80 {
            other = true;
        } else if c < 0x20 && c != b'\n' as u32 {
            control = true;
        }
    }
    if astral {
        out |= bit(ContentClass::Emoji);
    }
    if cjk {
        out |= bit(ContentClass::Cjk);
    }
    if other {
        out |= bit(ContentClass::Multilingual);
    }
    if control {
        out |= bit(ContentClass::Escapes);
    }
    let trimmed = s.trim_start();
    let json = (trimmed.starts_with('{') || trimmed.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok();
    if json {
        out |= bit(ContentClass::Json);
    } else if s.contains('\n')
        && (s.contains(";\n") || s.contains("{\n") || s.contains(" do\n") || s.contains("=>"))
    {
        out |= bit(ContentClass::Code);
    } else if !control && s.bytes().filter(|&b| b == b' ').count() >= 2 && s.contains(". ") {
        out |= bit(ContentClass::Prose);
    }
    out
}
