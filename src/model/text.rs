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

/// `s` whole when it is at most `max` bytes; else its first three
/// quarters of `max` and its last quarter, on char boundaries, with the
/// bytes between counted: `head [… N bytes left out …] tail`. For text a
/// subject sends that ctxgate shows or keeps (a protocol line traced, a
/// hello's name, an error answer's message), which is bounded in what
/// ctxgate writes, however long it was sent.
pub fn cut_middle(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return std::borrow::Cow::Borrowed(s);
    }
    let head = truncate_utf8(s, max * 3 / 4);
    let mut tail_at = s.len() - max / 4;
    while !s.is_char_boundary(tail_at) {
        tail_at += 1;
    }
    let left_out = tail_at - head.len();
    std::borrow::Cow::Owned(format!(
        "{head} [… {left_out} bytes left out …] {}",
        &s[tail_at..]
    ))
}

/// `12345678` → `12,345,678`, for the human-readable output.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
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

/// Whitespace runs collapsed to one space, every other control character
/// shown as a visible `\u{…}` escape (as [`one_line`] does: a control
/// that differs between what was expected and what was received is seen,
/// not dropped from both), cut to `max` characters with an ellipsis: a
/// preview on one line. The cut is never inside an escape.
pub fn collapse(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    let mut units = shown_units(text).peekable();
    while let Some(unit) = units.next() {
        let len = unit.chars().count();
        // The last unit may take the last place; another leaves it to `…`.
        let room = match units.peek() {
            None => max,
            Some(_) => max.saturating_sub(1),
        };
        if n + len > room {
            out.push('…');
            return out;
        }
        out.push_str(&unit);
        n += len;
    }
    out
}

/// What [`collapse`] shows of `text`, a character (or its escape, or the
/// space for a run of whitespace) at a time.
fn shown_units(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_whitespace().enumerate().flat_map(|(i, word)| {
        (i > 0)
            .then(|| " ".to_owned())
            .into_iter()
            .chain(word.chars().map(|c| match is_control(c) {
                true => format!("\\u{{{:x}}}", c as u32),
                false => String::from(c),
            }))
    })
}

/// `text` as [`collapse`] makes it, but its last `max` characters kept
/// (the first one then a `…`): where what matters is at the end, as the
/// exception a traceback ends with.
pub fn collapse_tail(text: &str, max: usize) -> String {
    let units: Vec<String> = shown_units(text).collect();
    let total: usize = units.iter().map(|u| u.chars().count()).sum();
    if total <= max {
        return units.concat();
    }
    // Whole units from the end, in `max - 1` places: never half an escape.
    let (mut n, mut from) = (0, units.len());
    while from > 0 && n + units[from - 1].chars().count() < max {
        from -= 1;
        n += units[from].chars().count();
    }
    format!("…{}", units[from..].concat())
}

/// A character a terminal or a CI log must not receive raw: the C0
/// controls (`\n` and `\t` among them: callers that keep lines let
/// those two through), DEL, the C1 controls, the bidirectional controls
/// (embeddings, overrides, isolates, marks) and the Unicode line and
/// paragraph separators. The terminal sink shows each as a visible
/// `\u{…}` escape; the JSON and XML writers as their own escapes, which
/// read back as the same character.
pub fn is_control(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || (0x7f..=0x9f).contains(&u)
        || matches!(u, 0x061c | 0x200e | 0x200f | 0x2028 | 0x2029)
        || (0x202a..=0x202e).contains(&u)
        || (0x2066..=0x2069).contains(&u)
}

/// The terminal and CI-log sink, for a value inside one line of text (a
/// subject's name, a fixture's file name, a fault's detail): every
/// [`is_control`] character, newlines included, becomes a visible
/// `\u{…}` escape, so that the value can neither drive the terminal nor
/// forge a line of its own. [`for_log`] guards the whole text after.
pub fn one_line(s: &str) -> String {
    escape_controls(s, false)
}

/// [`one_line`] for multi-line text (a subject's stderr): newlines and
/// tabs are kept.
pub fn lines(s: &str) -> String {
    escape_controls(s, true)
}

fn escape_controls(s: &str, keep_lines: bool) -> String {
    let unsafe_char = |c: char| is_control(c) && !(keep_lines && (c == '\n' || c == '\t'));
    if !s.chars().any(unsafe_char) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match unsafe_char(c) {
            true => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            false => out.push(c),
        }
    }
    out
}

/// What a CI runner skips before it looks for a workflow command at the
/// start of a line: whitespace (GitHub's runner trims it, as .NET's
/// `TrimStart` does), and — to be safe — the invisible characters a
/// viewer or another runner might skip too.
fn skipped_before_a_command(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\u{180e}' | '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}'
        )
}

/// Where in `line` a workflow command would begin: after what a runner
/// skips, `::` (GitHub Actions' `::error::…`, `::add-mask::…`); `None`
/// when the line cannot begin one. The legacy `##[…]` and Azure's
/// `##vso[…]` are found anywhere in a line ([`command_mark_at`]).
pub fn command_at_start(line: &str) -> Option<usize> {
    let at = line.len() - line.trim_start_matches(skipped_before_a_command).len();
    line[at..].starts_with("::").then_some(at)
}

/// Whether `s[i..]` opens a legacy workflow command, `##[` or `##vso[`
/// (any case): runners look for these anywhere in a line.
pub fn command_mark_at(s: &str, i: usize) -> bool {
    let rest = &s.as_bytes()[i..];
    rest.starts_with(b"##")
        && (rest[2..].starts_with(b"[")
            || rest
                .get(2..6)
                .is_some_and(|v| v.eq_ignore_ascii_case(b"vso[")))
}

/// The guard on everything ctxgate writes to a terminal or a CI log
/// (stdout, stderr, a human report's file): whatever a writer forgot to
/// escape, the text that leaves holds no [`is_control`] character but
/// `\n` and `\t` (the others shown as `\u{…}` escapes), and no line of it
/// can begin a workflow command — a line that would begin with `::` after
/// whitespace has its first colon shown as `\u{3a}`, and each `##[` or
/// `##vso[` its second `#` as `\u{23}`. Text with none of these is
/// returned as it is; guarding twice changes nothing more.
pub fn for_log(text: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let mut text = Cow::Borrowed(text);
    if text
        .chars()
        .any(|c| is_control(c) && c != '\n' && c != '\t')
    {
        text = Cow::Owned(lines(&text));
    }
    let forges = |line: &str| {
        command_at_start(line).is_some() || (0..line.len()).any(|i| command_mark_at(line, i))
    };
    if !text.split('\n').any(forges) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let mut from = 0;
        if let Some(at) = command_at_start(line) {
            out.push_str(&line[..at]);
            out.push_str("\\u{3a}");
            from = at + 1;
        }
        let mut chars = line[from..].char_indices().map(|(i, c)| (from + i, c));
        while let Some((i, c)) = chars.next() {
            out.push(c);
            if command_mark_at(line, i) {
                chars.next();
                out.push_str("\\u{23}");
            }
        }
    }
    Cow::Owned(out)
}

/// The JSON sink: `v` as pretty JSON that is safe in a terminal and a CI
/// log when printed, and reads back as the same value. serde_json escapes
/// the C0 controls; this writes every other [`is_control`] character
/// (DEL, C1, bidirectional controls, line separators) as a `\u` escape too,
/// and the second `#` of a legacy workflow command mark (`##[`, `##vso[`)
/// as `\u0023`. A JSON line cannot begin with `::` (its strings are
/// quoted), so [`for_log`] leaves the text as it is.
///
pub fn pretty(v: &serde_json::Value) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        LogSafe(serde_json::ser::PrettyFormatter::new()),
    );
    serde::Serialize::serialize(v, &mut ser).expect("a Value serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// A formatter that writes strings as [`pretty`] says, the rest as `F`.
struct LogSafe<F>(F);

macro_rules! delegate {
    ($($name:ident($($arg:ident: $t:ty),*)),*) => {$(
        fn $name<W: ?Sized + std::io::Write>(&mut self, w: &mut W $(, $arg: $t)*) -> std::io::Result<()> {
            self.0.$name(w $(, $arg)*)
        }
    )*};
}

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for LogSafe<F> {
    delegate!(
        begin_array(),
        end_array(),
        begin_array_value(first: bool),
        end_array_value(),
        begin_object(),
        end_object(),
        begin_object_key(first: bool),
        end_object_key(),
        begin_object_value(),
        end_object_value()
    );

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut from = 0;
        for (i, c) in fragment.char_indices() {
            let mark = i > 0 && command_mark_at(fragment, i - 1);
            if is_control(c) || mark {
                w.write_all(&fragment.as_bytes()[from..i])?;
                write!(w, "\\u{:04x}", c as u32)?;
                from = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[from..])
    }
}

/// The one of `known` that `word` is most likely a misspelling of: the
/// same letters in another case, or at most two edits away (and fewer
/// than half its letters).
pub fn closest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    let lower = word.to_lowercase();
    let limit = 2.min(lower.chars().count().saturating_sub(1) / 2).max(1);
    known
        .iter()
        .map(|k| (edit_distance(&lower, &k.to_lowercase()), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + (ca != *cb) as usize)
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cut, at the start or the end, falls between escapes, never inside
    /// one: a tail never begins with `02e}`.
    #[test]
    fn a_cut_never_splits_an_escape() {
        let text = "a\u{202e}b\u{1b}c".repeat(20);
        for max in 3..60 {
            for shown in [collapse(&text, max), collapse_tail(&text, max)] {
                assert!(shown.chars().count() <= max, "{max}: {shown}");
                let inner = shown.trim_matches('…');
                let whole = inner.replace("\\u{202e}", "").replace("\\u{1b}", "");
                assert!(whole.chars().all(|c| "abc".contains(c)), "{max}: {shown}");
            }
        }
        assert_eq!(collapse("a\u{1b}", 10), "a\\u{1b}");
        assert_eq!(collapse_tail("x\u{1b}", 10), "x\\u{1b}");
    }

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
        // Controls are shown, not dropped: two texts that differ only by
        // one still read differently, and neither drives a terminal.
        assert_eq!(
            collapse("a\u{1b}[31mb\u{202e}c\u{7}", 40),
            "a\\u{1b}[31mb\\u{202e}c\\u{7}"
        );
        assert_ne!(collapse("bell\u{7}", 40), collapse("bell", 40));
        assert!(!collapse("\u{9b}x\u{2066}", 40).chars().any(is_control));
    }

    #[test]
    fn a_tail_preview_keeps_the_end() {
        assert_eq!(collapse_tail("  a\n\n b\tc ", 10), "a b c");
        assert_eq!(collapse_tail("abcdef", 4), "…def");
        assert_eq!(collapse_tail("abcd", 4), "abcd");
        assert_eq!(collapse_tail("日本語テキスト", 3), "…スト");
    }

    #[test]
    fn controls_are_shown_as_escapes() {
        assert_eq!(one_line("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\\u{a}c");
        assert_eq!(
            one_line("\u{202e}gnp.exe \u{9b}\u{2028}"),
            "\\u{202e}gnp.exe \\u{9b}\\u{2028}"
        );
        assert_eq!(lines("a\n\tb\rc\u{7}"), "a\n\tb\\u{d}c\\u{7}");
        assert_eq!(one_line("plain é 🦀"), "plain é 🦀");
    }

    /// No line the guard lets through begins a workflow command, whatever
    /// whitespace comes first; the legacy marks are broken wherever they are.
    #[test]
    fn the_log_guard_leaves_no_workflow_command() {
        let hostile = [
            "::error title=x::forged",
            "ok\n  ::notice::forged\nok",
            "\t\u{a0}\u{3000}::set-output name=a::b",
            "\u{feff}::add-mask::x",
            "\u{85}::error::nel is a C1 control",
            "text ##[error]legacy ###[x] ##VSO[task.setvariable]",
            "\r::error::after a carriage return",
        ];
        for text in hostile {
            let guarded = for_log(text);
            for line in guarded.split('\n') {
                assert!(command_at_start(line).is_none(), "{line:?}");
                assert!(
                    (0..line.len()).all(|i| !command_mark_at(line, i)),
                    "{line:?}"
                );
                assert!(
                    !line.chars().any(|c| is_control(c) && c != '\t'),
                    "{line:?}"
                );
            }
            assert_eq!(for_log(&guarded), guarded, "guarding twice changes nothing");
        }
        assert_eq!(for_log("::error::x"), "\\u{3a}:error::x");
        assert_eq!(for_log("a ##[b"), "a #\\u{23}[b");
        let plain = "ctxgate check — subject a::b 1.0\n  | x | ### heading\n";
        assert!(matches!(for_log(plain), std::borrow::Cow::Borrowed(_)));
    }
}
