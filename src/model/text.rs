//! Text helpers every room uses: cutting at a byte budget on a char
//! boundary, and making foreign text safe for one line of a terminal or
//! report.

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `12345678` → `12,345,678`, for the human-readable output.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The longest excerpt of a value an error shows, in characters.
pub const EXCERPT_CHARS: usize = 240;

/// A JSON value as it was written, on one line and cut to
/// [`EXCERPT_CHARS`]: what a history or a subject sent, shown beside what
/// is wrong with it.
pub fn excerpt(v: &serde_json::Value) -> String {
    collapse(&v.to_string(), EXCERPT_CHARS)
}

/// Whitespace runs collapsed to one space, control characters dropped,
/// cut to `max` characters with an ellipsis: a preview on one line.
pub fn collapse(text: &str, max: usize) -> String {
    let mut chars = text.split_whitespace().enumerate().flat_map(|(i, word)| {
        (i > 0)
            .then_some(' ')
            .into_iter()
            .chain(word.chars().filter(|c| !c.is_control()))
    });
    let mut out: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        out.pop();
        out.push('…');
    }
    out
}

/// Subject-provided text made safe for a terminal and for one line of a
/// report: control characters (newlines included), DEL, C1 controls and
/// bidirectional overrides become `\u{…}` escapes, so that a subject can
/// neither drive the terminal nor forge report lines.
pub fn one_line(s: &str) -> String {
    escape_controls(s, false)
}

/// [`one_line`] for multi-line text (stderr): newlines and tabs are kept.
pub fn lines(s: &str) -> String {
    escape_controls(s, true)
}

fn escape_controls(s: &str, keep_lines: bool) -> String {
    let unsafe_char = |c: char| {
        let u = c as u32;
        (u < 0x20 && !(keep_lines && (c == '\n' || c == '\t')))
            || (0x7f..=0x9f).contains(&u)
            || (0x202a..=0x202e).contains(&u)
            || (0x2066..=0x2069).contains(&u)
    };
    if !s.chars().any(unsafe_char) {
        return s.to_owned();
    }
    s.chars()
        .map(|c| {
            if unsafe_char(c) {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_utf8("a世b", 2), "a");
        assert_eq!(truncate_utf8("a世b", 4), "a世");
        assert_eq!(truncate_utf8("🦀", 3), "");
        assert_eq!(truncate_utf8("abc", 10), "abc");
    }

    #[test]
    fn grouping() {
        for (n, shown) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (12_345_678, "12,345,678"),
        ] {
            assert_eq!(group(n), shown);
        }
    }

    #[test]
    fn previews_are_one_bounded_line() {
        assert_eq!(collapse("  a\n\n b\tc ", 10), "a b c");
        assert_eq!(collapse("abcdef", 4), "abc…");
        assert_eq!(collapse("abcd", 4), "abcd");
        assert_eq!(collapse("", 4), "");
        assert_eq!(collapse("日本語テキスト", 3), "日本…");
    }
}
