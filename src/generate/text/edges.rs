//! The generator's own edge tokens, by class, and the writers that use
//! them: what the pieces alone rarely hold. A third of each class's corpus
//! is written here; JSON strings take their non-prose text from here too.

use super::{push_capitalised, ContentClass};
use crate::generate::rng::SplitMix64;

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

pub(super) const IDENTS: &[&str] = &[
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

pub(super) const CJK_WORDS: &[&str] = &[
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

pub(super) const OTHER_SCRIPTS: &[&str] = &[
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

pub(super) const CJK_PUNCT: &[&str] = &[
    " ", " ", "，", "。", "、", " ", "！", "？", "\u{3000}", "; ",
];

pub(super) const EMOJI: &[&str] = &[
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

pub(super) const ESCAPES: &[&str] = &[
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

pub(super) const CODE_LINES: &[&str] = &[
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

/// The generator's own edge tokens of `class`, written until `s` has `n`
/// bytes: what the pieces alone rarely hold (`PR 123`, Elixir and SQL
/// lines, U+3000, Cyrillic and Arabic words, astral letters, NUL, DEL,
/// U+2028, `</script>`).
pub(super) fn edges(class: ContentClass, rng: &mut SplitMix64, s: &mut String, n: usize) {
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

fn prose(rng: &mut SplitMix64, s: &mut String, n: usize) {
    while s.len() < n {
        let words = rng.range(4, 14);
        for k in 0..words {
            let w = *rng.pick(WORDS);
            if k == 0 {
                push_capitalised(s, w);
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

pub(super) fn pieces(rng: &mut SplitMix64, s: &mut String, n: usize, from: &[&str], seps: &[&str]) {
    while s.len() < n {
        if rng.chance(25) {
            s.push_str(rng.pick::<&str>(WORDS));
        } else {
            s.push_str(rng.pick::<&str>(from));
        }
        s.push_str(rng.pick::<&str>(seps));
    }
}
