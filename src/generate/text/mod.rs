//! Content classes and the text of each (issue 3, item 2; issue 15): the
//! one vocabulary and the one text generator of the crate — the
//! generator's histories, `calibrate`'s samples and the benches' inputs
//! are all written here.
//!
//! Seven classes, each chosen because compactors or estimators get it
//! wrong in its own way: English prose (the easy case, where 4 bytes a
//! token was measured), code (quotes, braces, backslashes), JSON (tool
//! results and arguments are mostly JSON), CJK (three bytes a character,
//! dense in tokens), other scripts (Cyrillic, Arabic, Devanagari, Latin with
//! diacritics: bytes ≠ characters), emoji (astral plane: four bytes, two
//! UTF-16 units, ZWJ sequences) and escape-heavy text (quotes, backslashes,
//! newlines, control characters: each grows when the body is serialised).
//!
//! [`pieces`] writes the pieces of each class (calibrate's samples are
//! pieces joined to a length). [`text`] makes a text of one class of an
//! exact byte length: slices, at offsets a [`SplitMix64`] picks, of a
//! corpus per class written once from a fixed seed out of those pieces
//! mixed with edge tokens (NUL, DEL, U+2028, `</script>`, keycaps, …;
//! JSON texts are arrays of whole corpus records, so they stay valid).
//! [`classify`] tells, after the fact, which classes a text shows, so
//! coverage measures what the cases hold rather than what the generator
//! meant to put there.

pub mod pieces;

use serde_json::{Map, Number, Value};

use super::rng::SplitMix64;
use crate::model::truncate_utf8;

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
    pub const EVERY: [ContentClass; 8] = [
        ContentClass::Prose,
        ContentClass::Code,
        ContentClass::Json,
        ContentClass::Cjk,
        ContentClass::Multilingual,
        ContentClass::Emoji,
        ContentClass::Escapes,
        ContentClass::Images,
    ];

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

pub(crate) const WORDS: &[&str] = &[
    "the",
    "gate",
    "body",
    "limit",
    "request",
    "engine",
    "api",
    "history",
    "tool",
    "call",
    "result",
    "context",
    "window",
    "token",
    "estimate",
    "summary",
    "iteration",
    "transport",
    "ceiling",
    "compaction",
    "message",
    "review",
    "pull",
    "branch",
    "test",
    "failure",
    "build",
    "deploy",
    "config",
    "default",
    "express",
    "phoenix",
    "payload",
    "bytes",
    "search",
    "workspace",
    "file",
    "path",
    "agent",
    "session",
    "turn",
    "model",
    "provider",
    "error",
    "too",
    "large",
    "entity",
    "returned",
    "after",
    "before",
    "with",
    "without",
    "every",
    "each",
    "one",
    "two",
    "three",
    "and",
    "or",
    "not",
    "is",
    "was",
    "has",
    "had",
    "will",
    "should",
    "must",
    "can",
    "we",
    "it",
    "this",
    "that",
    "a",
    "an",
    "of",
    "in",
    "on",
    "for",
    "to",
    "from",
    "by",
    "as",
    "at",
    "be",
    "are",
    "run",
    "check",
    "found",
    "fixed",
    "read",
    "write",
    "line",
    "column",
    "value",
    "field",
    "schema",
    "version",
    "release",
    "security",
    "performance",
    "latency",
    "retry",
    "timeout",
    "queue",
    "worker",
    "cache",
    "database",
    "migration",
    "index",
    "table",
    "query",
    "response",
    "status",
    "header",
    "json",
    "parser",
    "module",
    "function",
    "return",
    "argument",
    "option",
    "flag",
    "report",
    "coverage",
    "regression",
    "approved",
    "pending",
];

const IDENTS: &[&str] = &[
    "body",
    "limit",
    "messages",
    "ctx",
    "config",
    "state",
    "acc",
    "result",
    "opts",
    "conn",
    "session",
    "history",
    "estimate",
    "window",
    "payload",
    "items",
    "tokens",
    "bytes",
    "req",
    "res",
    "app",
    "turn",
    "iteration",
    "summary",
    "tool_calls",
    "parser",
    "cursor",
    "buf",
];

const CJK_WORDS: &[&str] = &[
    "上下文",
    "压缩",
    "请求",
    "实体",
    "过大",
    "工具调用",
    "结果",
    "窗口",
    "令牌",
    "估计",
    "测试",
    "コンテキスト",
    "圧縮",
    "リクエスト",
    "ツール",
    "結果",
    "日本語",
    "한국어",
    "요청",
    "본문",
];

const OTHER_SCRIPTS: &[&str] = &[
    "Привет",
    "мир",
    "запрос",
    "слишком",
    "большой",
    "Ελληνικά",
    "λέξη",
    "café",
    "naïve",
    "São Paulo",
    "Zürich",
    "façade",
    "Ærø",
    "مرحبا",
    "العالم",
    "नमस्ते",
    "दुनिया",
    "עברית",
    "ไทย",
    "Tiếng Việt",
    "½ × ¾ ≠ ∞",
    "€100",
    "“quoted”",
    "—",
    "…",
];

const CJK_PUNCT: &[&str] = &[
    " ", " ", "，", "。", "、", " ", "！", "？", "\u{3000}", "; ",
];

const EMOJI: &[&str] = &[
    "😀",
    "😅",
    "🤖",
    "🦀",
    "🚀",
    "🔥",
    "✅",
    "❌",
    "⚠️",
    "🎉",
    "👍🏽",
    "👩\u{200d}💻",
    "👨\u{200d}👩\u{200d}👧\u{200d}👦",
    "🏳️\u{200d}🌈",
    "🇧🇷",
    "🇯🇵",
    "🇺🇦",
    "1\u{fe0f}\u{20e3}",
    "🧪",
    "📦",
    "🐛",
    "💥",
    "🫠",
    "🪲",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "𝐛𝐨𝐥𝐝",
    "𐍈",
    "𓀀",
    "🀄",
    "🂡",
];

const ESCAPES: &[&str] = &[
    "\"quoted\"",
    "\\",
    "C:\\Users\\dev\\app",
    "\\n",
    "\n",
    "\r\n",
    "\t",
    "\u{0}",
    "\u{1}",
    "\u{1b}[31mFAIL\u{1b}[0m",
    "\u{1b}[2K\r",
    "\u{8}",
    "\u{c}",
    "\u{7f}",
    "\\\"",
    "</script>",
    "\u{2028}",
    "\u{1f}",
    "'single'",
    "`tick`",
    "{\"k\": \"v\\\"\"}",
    "%s %d",
    "\\u0000",
    "a\tb\tc",
    "line1\nline2",
    "\u{b}",
    "\u{e}",
];

const CODE_LINES: &[&str] = &[
    "const {i} = await {i}.{i}({i}, {n});",
    "  def {i}({i}, opts \\\\ []) do",
    "    {i} = Enum.reduce({i}, 0, fn {i}, acc -> acc + byte_size({i}) end)",
    "  end",
    "fn {i}(&self, {i}: u64) -> Result<(), Error> {",
    "    let {i} = {i}.iter().map(|x| x.len()).sum::<usize>();",
    "}",
    "import { {I} } from \"./{i}\";",
    "// {w} {w} {w}",
    "# {w} {w}",
    "if ({i} > {n}) { return {i}; }",
    "    {i}: {n},",
    "  println!(\"{} bytes\", {i});",
    "    raise \"{w} {w}: #{inspect({i})}\"",
    "app.useBodyParser('json', { limit: '{n}kb' });",
    "SELECT {i}, {i} FROM {i} WHERE {i} = {n};",
    "  return JSON.stringify({ {i}, {i}: \"{w}\\n\" });",
    "    @spec {i}(map()) :: {:ok, term()} | {:error, term()}",
    "assert_eq!({i}, {n}, \"{w}\");",
    "export default function {I}({ {i} }) {",
];

/// A text of `class` of exactly `n` bytes (a JSON text is a valid JSON
/// document padded with spaces, when `n` allows one).
///
/// The bytes are slices, at offsets the PRNG picks, of a corpus per class
/// written once from a fixed seed (the same on every platform): copying
/// is ten times faster than writing word by word, and the mean case holds
/// tens of KB of text.
pub fn text(rng: &mut SplitMix64, class: ContentClass, n: usize) -> String {
    // Images carry no text of their own: a text asked of them is prose.
    let class = if class.is_text() {
        class
    } else {
        ContentClass::Prose
    };
    let corpus = corpus();
    if class == ContentClass::Json {
        return json_text(rng, corpus, n);
    }
    let src = corpus.text[class as usize].as_str();
    let mut s = String::with_capacity(n);
    while s.len() < n {
        let start = floor_char(src, rng.below(src.len() as u64) as usize);
        let end = floor_char(src, (start + n - s.len()).min(src.len()));
        if end == start {
            break; // the rest is shorter than the next char: `fit` pads
        }
        s.push_str(&src[start..end]);
    }
    fit(s, n)
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Per-class text to slice from, and JSON records to fill arrays with.
struct Corpus {
    /// Indexed like [`ContentClass::ALL`]; the `Json` entry is unused.
    text: [String; 7],
    /// Compact and pretty (indented for an array member) JSON records.
    records: [Vec<String>; 2],
    /// The compact records as values, with their sizes, for arguments.
    values: Vec<(Value, u64)>,
}

/// Bytes of corpus per class: larger than most texts, so that slices of
/// one text rarely repeat each other.
const CORPUS_BYTES: usize = 96 * 1024;
const RECORDS: usize = 768;

fn corpus() -> &'static Corpus {
    static CORPUS: std::sync::OnceLock<Corpus> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut pr = pieces::Rng::new(0x0098_C0DE);
        let text = ContentClass::ALL.map(|class| {
            let mut s = String::with_capacity(CORPUS_BYTES + 4_096);
            if class == ContentClass::Json {
                return s;
            }
            let mut mode = 0;
            while s.len() < CORPUS_BYTES {
                if !s.is_empty() {
                    s.push_str(pieces::separator(class));
                }
                // A third of the corpus is edge tokens; the rest pieces.
                if pr.chance(0.33) {
                    let end = s.len() + 256;
                    edges(class, pr.inner(), &mut s, end);
                } else {
                    s.push_str(&pieces::piece(class, mode, &mut pr));
                    mode += 1;
                }
            }
            s
        });
        let mut rng = SplitMix64::new(0x0098_C0DF);
        let records: [Vec<String>; 2] = [None, Some(2)].map(|indent| {
            (0..RECORDS)
                .map(|_| {
                    let budget = {
                        let bits = rng.range(3, 11);
                        rng.range(1 << (bits - 1), (1 << bits) - 1) as usize
                    };
                    let mut r = String::new();
                    write_json(&mut rng, &mut r, 4, budget, indent);
                    r
                })
                .collect()
        });
        let values = records[0]
            .iter()
            .map(|r| {
                let v: Value = serde_json::from_str(r).expect("the corpus writes valid JSON");
                (v, r.len() as u64)
            })
            .collect();
        Corpus {
            text,
            records,
            values,
        }
    })
}

/// Nested JSON values deep at most this; [`bulk_value`] wraps them once.
const RECORD_DEPTH: usize = 4;

/// An object of roughly `budget` bytes, at most `depth` deep, for large
/// arguments: corpus records under fresh keys (built from scratch when
/// `depth` is too small for the records).
pub fn bulk_value(rng: &mut SplitMix64, depth: usize, budget: u64) -> Value {
    if depth <= RECORD_DEPTH {
        return value(rng, depth, budget);
    }
    let pool = &corpus().values;
    let mut obj = Map::new();
    let mut used = 2;
    while used < budget {
        let (v, size) = rng.pick(pool);
        let key = json_key(rng);
        used += key.len() as u64 + 4 + size;
        obj.insert(key, v.clone());
    }
    Value::Object(obj)
}

/// The generator's own edge tokens of `class`, written until `s` has `n`
/// bytes: what the pieces alone rarely hold (`PR 123`, Elixir and SQL
/// lines, U+3000, Cyrillic and Arabic words, astral letters, NUL, DEL,
/// U+2028, `</script>`).
fn edges(class: ContentClass, rng: &mut SplitMix64, s: &mut String, n: usize) {
    match class {
        ContentClass::Prose => prose(rng, s, n),
        ContentClass::Code => code(rng, s, n),
        ContentClass::Json => {}
        ContentClass::Cjk => pieces(rng, s, n, CJK_WORDS, CJK_PUNCT),
        ContentClass::Multilingual => pieces(rng, s, n, OTHER_SCRIPTS, &[" ", " ", ", ", ". "]),
        ContentClass::Emoji => pieces(rng, s, n, EMOJI, &[" ", "", " ", "  "]),
        ContentClass::Escapes => pieces(rng, s, n, ESCAPES, &[" ", "", "\n"]),
        ContentClass::Images => prose(rng, s, n),
    }
}

/// Cut on a char boundary and pad with spaces to exactly `n` bytes.
fn fit(mut s: String, n: usize) -> String {
    let cut = truncate_utf8(&s, n).len();
    s.truncate(cut);
    while s.len() < n {
        s.push(' ');
    }
    s
}

fn prose(rng: &mut SplitMix64, s: &mut String, n: usize) {
    while s.len() < n {
        let words = rng.range(4, 14);
        for k in 0..words {
            let w = *rng.pick(WORDS);
            if k == 0 {
                let mut cs = w.chars();
                if let Some(c) = cs.next() {
                    s.push(c.to_ascii_uppercase());
                    s.push_str(cs.as_str());
                }
            } else {
                s.push(' ');
                match rng.below(24) {
                    0 => s.push_str(&format!("PR {}", rng.range(1, 999))),
                    1 => s.push_str(&format!("{}%", rng.range(0, 100))),
                    _ => s.push_str(w),
                }
            }
        }
        s.push_str(if rng.chance(20) { ", " } else { ". " });
        if rng.chance(8) {
            s.push('\n');
        }
    }
}

fn code(rng: &mut SplitMix64, s: &mut String, n: usize) {
    while s.len() < n {
        let line = *rng.pick(CODE_LINES);
        let mut rest = line;
        while let Some(p) = rest.find('{') {
            s.push_str(&rest[..p]);
            let tail = &rest[p..];
            if let Some(t) = tail.strip_prefix("{i}") {
                s.push_str(rng.pick::<&str>(IDENTS));
                rest = t;
            } else if let Some(t) = tail.strip_prefix("{I}") {
                let id = *rng.pick(IDENTS);
                s.push_str(&id[..1].to_ascii_uppercase());
                s.push_str(&id[1..]);
                rest = t;
            } else if let Some(t) = tail.strip_prefix("{n}") {
                s.push_str(&rng.range(0, 102_400).to_string());
                rest = t;
            } else if let Some(t) = tail.strip_prefix("{w}") {
                s.push_str(rng.pick::<&str>(WORDS));
                rest = t;
            } else {
                s.push('{');
                rest = &tail[1..];
            }
        }
        s.push_str(rest);
        s.push('\n');
    }
}

fn pieces(rng: &mut SplitMix64, s: &mut String, n: usize, from: &[&str], seps: &[&str]) {
    while s.len() < n {
        if rng.chance(25) {
            s.push_str(rng.pick::<&str>(WORDS));
        } else {
            s.push_str(rng.pick::<&str>(from));
        }
        s.push_str(rng.pick::<&str>(seps));
    }
}

/// A JSON document of exactly `n` bytes: records picked at random are
/// added to an array while they fit, then spaces pad it (JSON allows
/// trailing whitespace).
fn json_text(rng: &mut SplitMix64, corpus: &Corpus, n: usize) -> String {
    if n < 2 {
        return fit(String::from("0"), n);
    }
    let pretty = rng.chance(30);
    let records = &corpus.records[pretty as usize];
    let (sep, close) = if pretty { (",\n  ", "\n]") } else { (",", "]") };
    let mut doc = String::with_capacity(n);
    doc.push('[');
    let mut misses = 0;
    while misses < 6 {
        let r = rng.pick(records);
        let first = doc.len() == 1;
        let lead = if first && pretty {
            "\n  "
        } else if first {
            ""
        } else {
            sep
        };
        if doc.len() + lead.len() + r.len() + close.len() <= n {
            doc.push_str(lead);
            doc.push_str(r);
            misses = 0;
        } else {
            misses += 1;
        }
    }
    doc.push_str(if doc.len() > 1 { close } else { "]" });
    fit(doc, n)
}

/// Write a JSON value of roughly `budget` bytes, at most `depth` levels
/// deep, indented by `indent` spaces when pretty.
fn write_json(
    rng: &mut SplitMix64,
    out: &mut String,
    depth: usize,
    budget: usize,
    indent: Option<usize>,
) {
    if depth == 0 || budget < 24 {
        return write_scalar(rng, out, budget);
    }
    let start = out.len();
    let object = rng.chance(65);
    out.push(if object { '{' } else { '[' });
    let mut first = true;
    while out.len() - start < budget {
        if !first {
            out.push(',');
        }
        first = false;
        if let Some(i) = indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', i + 2));
        }
        if object {
            out.push('"');
            out.push_str(&json_key(rng));
            out.push_str(if indent.is_some() { "\": " } else { "\":" });
        }
        let used = out.len() - start;
        let child = (budget - used.min(budget)).min(budget / 2 + 8);
        write_json(rng, out, depth - 1, child, indent.map(|i| i + 2));
    }
    if let Some(i) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', i));
    }
    out.push(if object { '}' } else { ']' });
}

fn write_scalar(rng: &mut SplitMix64, out: &mut String, budget: usize) {
    use std::fmt::Write;
    match rng.below(8) {
        0 => out.push_str("null"),
        1 => out.push_str(if rng.chance(50) { "true" } else { "false" }),
        2 => {
            let _ = write!(out, "{}", rng.range(0, 100_000) as i64 - 1_000);
        }
        3 => {
            let _ = write!(out, "{}", decimal(rng.range(1, 99_999), 100));
        }
        _ => {
            let n = rng.range(0, budget.clamp(1, 80) as u64) as usize;
            if rng.chance(85) {
                out.push('"');
                let end = out.len() + n;
                while out.len() < end {
                    out.push_str(rng.pick::<&str>(WORDS));
                    out.push(' ');
                }
                out.truncate(out.trim_end().len());
                out.push('"');
            } else {
                // Written directly, not sliced from the corpus: this also
                // writes the corpus's JSON records.
                let mut s = String::new();
                match rng.below(4) {
                    0 => pieces(rng, &mut s, n, CJK_WORDS, CJK_PUNCT),
                    1 => pieces(rng, &mut s, n, OTHER_SCRIPTS, &[" "]),
                    2 => pieces(rng, &mut s, n, EMOJI, &[" "]),
                    _ => pieces(rng, &mut s, n, ESCAPES, &[" "]),
                }
                let s = truncate_utf8(s.trim_end(), n);
                out.push_str(&serde_json::to_string(s).expect("strings serialise"));
            }
        }
    }
}

/// A JSON value of roughly `budget` bytes, nested at most `depth` levels.
/// Numbers are integers or short decimals, which print the same in every
/// language's JSON library.
pub fn value(rng: &mut SplitMix64, depth: usize, budget: u64) -> Value {
    sized_value(rng, depth, budget).0
}

/// [`value`] and its serialised size.
fn sized_value(rng: &mut SplitMix64, depth: usize, budget: u64) -> (Value, u64) {
    if depth == 0 || budget < 24 {
        let v = scalar(rng, budget);
        let size = crate::body::value_size(&v);
        return (v, size);
    }
    let mut used = 2u64;
    let mut n = 0u64;
    let v = if rng.chance(65) {
        let mut obj = Map::new();
        while used < budget {
            let key = json_key(rng);
            let (v, size) = sized_value(rng, depth - 1, (budget - used).min(budget / 2 + 8));
            used += key.len() as u64 + 3 + size;
            n += 1;
            obj.insert(key, v);
        }
        Value::Object(obj)
    } else {
        let mut arr = Vec::new();
        while used < budget {
            let (v, size) = sized_value(rng, depth - 1, (budget - used).min(budget / 2 + 8));
            used += size;
            n += 1;
            arr.push(v);
        }
        Value::Array(arr)
    };
    (v, used + n.saturating_sub(1))
}

pub fn json_key(rng: &mut SplitMix64) -> String {
    match rng.below(4) {
        0 => format!("{}_{}", rng.pick(IDENTS), rng.pick(WORDS)),
        1 => {
            let w = *rng.pick(WORDS);
            format!(
                "{}{}{}",
                rng.pick(IDENTS),
                w[..1].to_ascii_uppercase(),
                &w[1..]
            )
        }
        _ => (*rng.pick(IDENTS)).to_owned(),
    }
}

/// A short decimal such as 0.7 or 12.25: portable (`model::value`), so
/// written back byte for byte by every mainstream JSON library.
pub fn short_decimal(rng: &mut SplitMix64) -> Value {
    decimal(rng.range(1, 99_999), 100)
}

/// `units / scale` as a portable JSON number: an integer when it is one
/// (`5`, never `5.0`), else the shortest round-trip decimal (`653.5`, never
/// `653.50`). `scale` is at most 100, so a fraction is at least 0.01.
pub fn decimal(units: u64, scale: u64) -> Value {
    if units % scale == 0 {
        return Value::from(units / scale);
    }
    let n = Number::from_f64(units as f64 / scale as f64).expect("finite");
    debug_assert!(crate::model::value::is_portable(&n), "{n}");
    Value::Number(n)
}

pub fn scalar(rng: &mut SplitMix64, budget: u64) -> Value {
    match rng.below(8) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => Value::from(rng.range(0, 100_000) as i64 - 1_000),
        3 => short_decimal(rng),
        _ => {
            let n = rng.range(0, budget.clamp(1, 80)) as usize;
            let class = if rng.chance(85) {
                ContentClass::Prose
            } else {
                *rng.pick(&ContentClass::ALL[3..])
            };
            Value::String(text(rng, class, n).trim_end().to_owned())
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_have_exact_sizes_and_their_class() {
        let mut rng = SplitMix64::new(1);
        for class in ContentClass::ALL {
            for n in [0, 1, 2, 7, 100, 1_000, 5_000] {
                let t = text(&mut rng, class, n);
                assert_eq!(t.len(), n, "{class:?} {n}");
                if n >= 1_000 {
                    let bits = classify(&t);
                    assert!(bits & (1 << class as u8) != 0, "{class:?}: {bits:b} {t:?}");
                }
            }
        }
    }

    #[test]
    fn json_texts_parse_and_numbers_are_short() {
        fn numbers(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Number(n) => out.push(n.to_string()),
                Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
                Value::Object(o) => o.values().for_each(|x| numbers(x, out)),
                _ => {}
            }
        }
        let mut rng = SplitMix64::new(9);
        let mut all = Vec::new();
        for n in [2usize, 30, 500, 3_000, 20_000] {
            let t = text(&mut rng, ContentClass::Json, n);
            let v: Value = serde_json::from_str(&t).unwrap_or_else(|e| panic!("{e}: {t}"));
            numbers(&v, &mut all);
            numbers(&value(&mut rng, 6, n as u64), &mut all);
        }
        assert!(all.len() > 100);
        for n in all {
            assert!(!n.contains(['e', 'E']), "{n}");
            assert!(n.split_once('.').is_none_or(|(_, f)| f.len() <= 2), "{n}");
        }
    }
}
