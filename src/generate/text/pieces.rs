//! The pieces texts are made of, one writer per content class: English
//! paragraphs, code blocks in three languages, JSON objects of tool-call
//! arguments, CJK sentences (common, Japanese, Korean, rare ideographs),
//! sentences in a dozen scripts, emoji runs (skin tones, ZWJ families,
//! flags, keycaps) and escape-heavy terminal lines — driven by a seeded
//! [`Rng`], the same on every machine.
//!
//! [`piece`] writes one piece of a class and [`fill`] joins pieces up to a
//! length: `calibrate`'s samples are exactly that; the generator's corpora
//! (`text::text`) are pieces too, mixed with its own edge tokens.

use serde_json::{json, Map, Value};

use super::ContentClass;
use crate::generate::SplitMix64;
use crate::model::ToolCall;

/// One piece of `class`; `mode` picks the variant of the classes that have
/// several (CJK: common Chinese, Japanese, Korean, rare ideographs; emoji:
/// in phrases, runs, uniform code points).
pub fn piece(class: ContentClass, mode: usize, rng: &mut Rng) -> String {
    match class {
        ContentClass::Prose | ContentClass::Images => english_paragraph(rng),
        ContentClass::Code => code_block(rng),
        ContentClass::Json => serde_json::to_string(&json_object(rng, 0)).expect("serialises"),
        ContentClass::Cjk => cjk_sentence(mode % 4, rng),
        ContentClass::Multilingual => multilingual_sentence(rng),
        ContentClass::Emoji => emoji_run(mode % 3, rng),
        ContentClass::Escapes => escape_line(rng),
    }
}

/// What [`fill`] puts between two pieces of `class`.
pub fn separator(class: ContentClass) -> &'static str {
    match class {
        ContentClass::Prose | ContentClass::Code | ContentClass::Images => "\n\n",
        ContentClass::Cjk => "",
        ContentClass::Multilingual | ContentClass::Emoji => " ",
        ContentClass::Json | ContentClass::Escapes => "\n",
    }
}

/// The pieces' random source: [`SplitMix64`] with the helpers these
/// pieces were first drawn with (kept, so that calibrate's samples, and
/// the figures in docs/calibration.md, stay the same).
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 11) as u128 * n as u128) >> 53) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// The underlying generator, for writers that take one.
    pub fn inner(&mut self) -> &mut SplitMix64 {
        &mut self.0
    }

    /// A code point uniform in `lo..=hi` (ranges free of surrogates).
    fn char_in(&mut self, lo: u32, hi: u32) -> char {
        char::from_u32(lo + self.below((hi - lo + 1) as usize) as u32).unwrap_or('?')
    }
}

/// Pieces from `piece`, joined by `sep`, until `target` bytes are reached.
pub fn fill(
    target: usize,
    rng: &mut Rng,
    mut piece: impl FnMut(&mut Rng) -> String,
    sep: &str,
) -> String {
    let mut out = String::new();
    while out.len() < target {
        if !out.is_empty() {
            out.push_str(sep);
        }
        out.push_str(&piece(rng));
    }
    out
}

#[rustfmt::skip]
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on",
    "are", "with", "as", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by",
    "word", "but", "what", "some", "we", "can", "out", "other", "were", "all", "there", "when",
    "up", "use", "your", "how", "said", "an", "each", "which", "do", "their", "time", "if",
    "will", "way", "about", "many", "then", "them", "would", "write", "like", "so", "these",
    "her", "long", "make", "thing", "see", "him", "two", "has", "look", "more", "day", "could",
    "go", "come", "did", "number", "sound", "no", "most", "people", "my", "over", "know",
    "water", "than", "call", "first", "who", "may", "down", "side", "been", "now", "find",
    "request", "body", "limit", "history", "message", "token", "estimate", "window", "context",
    "compaction", "summary", "transport", "ceiling", "payload", "gateway", "review", "change",
    "failure", "server", "client", "agent", "model", "tool", "result", "argument", "config",
    "default", "parser", "express", "engine", "session", "iteration", "boundary", "deploy",
    "release", "customer", "booking", "flight", "reservation", "refund", "passenger", "ticket",
    "airport", "baggage", "cancel", "upgrade", "membership", "payment", "certificate", "card",
    "because", "although", "however", "therefore", "instead", "before", "after", "during",
    "important", "different", "following", "available", "possible", "necessary", "actually",
    "understand", "information", "development", "environment", "configuration", "performance",
    "security", "application", "question", "problem", "answer", "example", "system", "process",
];

#[rustfmt::skip]
const NAMES: &[&str] = &[
    "Alice", "Bob", "Maria", "Chen", "Fatima", "Olivia", "Noah", "Sofia", "Liam", "Yuki",
    "Express", "Phoenix", "NestJS", "GitHub", "Postgres", "Kubernetes", "Docker",
];

fn english_sentence(rng: &mut Rng) -> String {
    let n = rng.range(5, 22);
    let mut s = String::new();
    for k in 0..n {
        if k > 0 {
            s.push(' ');
        }
        let word: String = match rng.below(20) {
            0 => rng.pick(NAMES).to_string(),
            1 => rng.range(2, 2048).to_string(),
            2 => format!("{}%", rng.range(1, 99)),
            _ => rng.pick(WORDS).to_string(),
        };
        if k == 0 {
            super::push_capitalised(&mut s, &word);
        } else {
            s.push_str(&word);
        }
        if k + 1 < n && rng.chance(0.08) {
            s.push(',');
        }
    }
    s.push(rng.pick(&['.', '.', '.', '.', '?', '!', ':']));
    s
}

fn english_paragraph(rng: &mut Rng) -> String {
    let n = rng.range(1, 6);
    (0..n)
        .map(|_| english_sentence(rng))
        .collect::<Vec<_>>()
        .join(" ")
}

#[rustfmt::skip]
const IDENT_PARTS: &[&str] = &[
    "body", "limit", "size", "max", "min", "bytes", "token", "count", "estimate", "window",
    "message", "msg", "history", "tool", "call", "result", "config", "cfg", "index", "idx", "len",
    "buf", "value", "key", "map", "list", "item", "node", "parse", "read", "write", "check",
    "iter", "next", "prev", "get", "set", "new", "from", "into", "to", "is", "has", "summary",
    "cut", "head", "tail", "recent", "keep", "drop", "push", "pop", "err", "ok", "request",
    "response", "handler", "client", "server", "session", "agent", "ctx", "x", "y",
];

fn identifier(rng: &mut Rng) -> String {
    let n = rng.range(1, 3);
    let parts: Vec<&str> = (0..n).map(|_| rng.pick(IDENT_PARTS)).collect();
    match rng.below(3) {
        0 => parts.join("_"),
        1 => {
            let mut s = parts[0].to_string();
            for p in &parts[1..] {
                let mut c = p.chars();
                if let Some(f) = c.next() {
                    s.extend(f.to_uppercase());
                    s.push_str(c.as_str());
                }
            }
            s
        }
        _ => parts
            .iter()
            .map(|p| {
                let mut c = p.chars();
                c.next()
                    .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                    .unwrap_or_default()
            })
            .collect(),
    }
}

fn code_expr(rng: &mut Rng) -> String {
    match rng.below(7) {
        0 => rng.range(0, 100_000).to_string(),
        1 => format!("\"{}\"", identifier(rng)),
        2 => format!("{}.{}()", identifier(rng), identifier(rng)),
        3 => format!(
            "{} {} {}",
            identifier(rng),
            rng.pick(&["+", "-", "*", "/", "%", "<<", "&&", "||", "==", "!=", ">=", "<"]),
            rng.range(0, 4096)
        ),
        4 => format!("{}[{}]", identifier(rng), identifier(rng)),
        5 => format!(
            "{}({}, {})",
            identifier(rng),
            identifier(rng),
            code_expr_leaf(rng)
        ),
        _ => identifier(rng),
    }
}

fn code_expr_leaf(rng: &mut Rng) -> String {
    if rng.chance(0.5) {
        rng.range(0, 1024).to_string()
    } else {
        identifier(rng)
    }
}

fn code_block(rng: &mut Rng) -> String {
    let lang = rng.below(3);
    let mut lines = Vec::new();
    let name = identifier(rng);
    let (open, close, indent) = match lang {
        0 => (
            format!(
                "fn {name}({}: &{}) -> Result<u64, Error> {{",
                identifier(rng),
                identifier(rng)
            ),
            "}".to_string(),
            "    ",
        ),
        1 => (
            format!(
                "def {name}(self, {}, {}=None):",
                identifier(rng),
                identifier(rng)
            ),
            String::new(),
            "    ",
        ),
        _ => (
            format!(
                "export function {name}({}: string, {}: number): boolean {{",
                identifier(rng),
                identifier(rng)
            ),
            "}".to_string(),
            "  ",
        ),
    };
    lines.push(open);
    let mut depth = 1;
    for _ in 0..rng.range(3, 12) {
        let pad = indent.repeat(depth);
        let line = match (lang, rng.below(6)) {
            (_, 0) => format!(
                "{pad}{} {}",
                if lang == 1 { "#" } else { "//" },
                english_sentence(rng)
            ),
            (0, 1) => format!("{pad}let {} = {};", identifier(rng), code_expr(rng)),
            (0, 2) => format!(
                "{pad}if {} > {} {{ return Err(Error::{}); }}",
                identifier(rng),
                code_expr(rng),
                identifier(rng)
            ),
            (1, 1) => format!("{pad}{} = {}", identifier(rng), code_expr(rng)),
            (1, 2) => format!(
                "{pad}if {} is not None and {}:",
                identifier(rng),
                code_expr(rng)
            ),
            (2, 1) => format!("{pad}const {} = {};", identifier(rng), code_expr(rng)),
            (2, 2) => format!(
                "{pad}if ({} === {}) {{ throw new Error(`{}: ${{{}}}`); }}",
                identifier(rng),
                code_expr(rng),
                identifier(rng),
                identifier(rng)
            ),
            (_, 3) => format!(
                "{pad}{}.{}({});",
                identifier(rng),
                identifier(rng),
                code_expr(rng)
            ),
            (_, 4) if depth < 4 => {
                depth += 1;
                match lang {
                    0 => format!(
                        "{pad}for {} in {}.iter() {{",
                        identifier(rng),
                        identifier(rng)
                    ),
                    1 => format!("{pad}for {} in {}:", identifier(rng), identifier(rng)),
                    _ => format!(
                        "{pad}for (const {} of {}) {{",
                        identifier(rng),
                        identifier(rng)
                    ),
                }
            }
            _ => format!("{pad}return {};", code_expr(rng)),
        };
        lines.push(line);
    }
    if !close.is_empty() {
        while depth > 0 {
            depth -= 1;
            lines.push(format!("{}{close}", indent.repeat(depth)));
        }
    }
    lines.join("\n")
}

#[rustfmt::skip]
const TOOL_NAMES: &[&str] = &[
    "read_file", "search_workspace", "run_command", "edit_file", "list_directory",
    "get_reservation_details", "update_reservation_flights", "search_direct_flight",
    "book_reservation", "send_certificate", "get_user_details", "str_replace_editor",
];

#[rustfmt::skip]
const PATH_PARTS: &[&str] = &[
    "apps", "api", "src", "main.ts", "engine", "lib", "harness", "context_manager.ex", "config",
    "runtime.exs", "docker", "docker-compose.yml", "tests", "fixtures", "agents",
    "qa_automacao_agent.ex", "node_modules", "index.js", "README.md", "Cargo.toml",
];

fn alnum(rng: &mut Rng, n: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..n).map(|_| rng.pick(CHARS) as char).collect()
}

fn hex(rng: &mut Rng, n: usize) -> String {
    const CHARS: &[u8] = b"0123456789abcdef";
    (0..n).map(|_| rng.pick(CHARS) as char).collect()
}

fn json_leaf(rng: &mut Rng) -> Value {
    match rng.below(12) {
        0 => json!(rng.range(0, 100_000)),
        1 => json!(rng.chance(0.5)),
        2 => json!(format!("{}-{}-{}", hex(rng, 8), hex(rng, 4), hex(rng, 12))),
        3 => json!(format!(
            "2024-{:02}-{:02}",
            rng.range(1, 12),
            rng.range(1, 28)
        )),
        4 => json!(alnum(rng, 6).to_uppercase()),
        5 => json!((0..rng.range(2, 5))
            .map(|_| rng.pick(PATH_PARTS))
            .collect::<Vec<_>>()
            .join("/")),
        6 => json!(format!("{} {}", rng.pick(NAMES), rng.pick(NAMES))),
        7 => json!(rng.range(1, 5000) as f64 / 100.0),
        8 => Value::Null,
        _ => json!(english_sentence(rng)),
    }
}

fn json_object(rng: &mut Rng, depth: usize) -> Value {
    let mut obj = Map::new();
    for _ in 0..rng.range(1, 5) {
        let key = identifier(rng);
        let value = match rng.below(8) {
            0 if depth < 2 => json_object(rng, depth + 1),
            1 if depth < 2 => Value::Array(
                (0..rng.range(1, 4))
                    .map(|_| json_object(rng, depth + 1))
                    .collect(),
            ),
            2 => Value::Array((0..rng.range(1, 5)).map(|_| json_leaf(rng)).collect()),
            _ => json_leaf(rng),
        };
        obj.insert(key, value);
    }
    Value::Object(obj)
}

/// Tool calls with JSON arguments (ids, paths, queries, dates, nested
/// objects) of about `target` bytes in all.
pub fn tool_calls(target: usize, rng: &mut Rng) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    let mut size = 0;
    while size < target {
        let id = format!("call_{}", alnum(rng, 24));
        let args = json_object(rng, 0);
        size += serde_json::to_string(&args).map_or(0, |s| s.len()) + id.len() + 40;
        calls.push(ToolCall::new(id, rng.pick(TOOL_NAMES), args));
    }
    calls
}

/// Frequent hanzi, most common first.
const HANZI: &str = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会家可下而过天去能对小多然于心学么之都好看起发当没成只如事把还用第样道想作种开美总从无情己面最女但现前些所同日手又行意动方期它头经长儿回位分爱老因很给名法间斯知世什两次使身者被高已亲其进此话常与活正感文件错误请求体限制模型上下文窗口压缩摘要服务器客户端代理工具调用结果参数配置默认会话迭代边界部署发布用户预订航班退款乘客机票行李取消升级会员支付证书检查测试数据";
#[rustfmt::skip]
const JAPANESE: &[&str] = &[
    "これは", "テスト", "です", "ます", "ファイル", "エラー", "が", "を", "に", "は", "の", "確認", "します", "しました",
    "リクエスト", "本文", "上限", "超えて", "います", "ください", "コンテキスト", "ウィンドウ", "圧縮", "要約", "ツール", "呼び出し",
    "結果", "設定", "予約", "フライト", "変更", "キャンセル", "お客様", "ありがとうございます", "、", "。",
];
#[rustfmt::skip]
const KOREAN: &[&str] = &[
    "안녕하세요", "파일", "오류", "확인", "합니다", "했습니다", "요청", "본문", "제한", "을", "를", "이", "가", "은", "는",
    "에서", "초과", "컨텍스트", "창", "압축", "요약", "도구", "호출", "결과", "설정", "예약", "항공편", "변경", "취소", "고객님",
    "감사합니다", ".", ",",
];

/// One CJK sentence. Modes: 0 common Chinese, 1 Japanese, 2 Korean,
/// 3 ideographs uniform over the CJK Unified block (mostly rare: the worst case).
fn cjk_sentence(mode: usize, rng: &mut Rng) -> String {
    let hanzi: Vec<char> = HANZI.chars().collect();
    let mut s = String::new();
    match mode {
        0 => {
            for _ in 0..rng.range(6, 30) {
                s.push(rng.pick(&hanzi));
                if rng.chance(0.06) {
                    s.push('，');
                }
            }
            s.push(rng.pick(&['。', '。', '？', '！']));
        }
        1 => {
            for _ in 0..rng.range(4, 14) {
                if rng.chance(0.2) {
                    s.push(rng.pick(&hanzi));
                } else {
                    s.push_str(rng.pick(JAPANESE));
                }
            }
            s.push('。');
        }
        2 => {
            for k in 0..rng.range(3, 10) {
                if k > 0 {
                    s.push(' ');
                }
                if rng.chance(0.15) {
                    s.push(rng.char_in(0xAC00, 0xD7A3));
                    s.push(rng.char_in(0xAC00, 0xD7A3));
                } else {
                    s.push_str(rng.pick(KOREAN));
                }
            }
            s.push('.');
        }
        _ => {
            for _ in 0..rng.range(6, 30) {
                s.push(rng.char_in(0x4E00, 0x9FFF));
            }
            s.push('。');
        }
    }
    s
}

#[rustfmt::skip]
const SENTENCES: &[&str] = &[
    "The request body exceeded the limit.",
    "El cuerpo de la solicitud superó el límite de tamaño permitido.",
    "Le corps de la requête a dépassé la limite autorisée, réessayez plus tard.",
    "Der Anfragetext hat die zulässige Größe überschritten; bitte prüfen Sie die Konfiguration.",
    "O corpo da requisição excedeu o limite — a compactação não foi acionada a tempo.",
    "Тело запроса превысило допустимый размер, сжатие контекста не сработало.",
    "Το σώμα του αιτήματος ξεπέρασε το όριο μεγέθους.", "تجاوز نص الطلب الحد المسموح به للحجم.",
    "גוף הבקשה חרג מהמגבלה המותרת.", "अनुरोध का आकार अनुमत सीमा से अधिक हो गया है।",
    "ขนาดของคำขอเกินขีดจำกัดที่อนุญาต", "Kích thước yêu cầu đã vượt quá giới hạn cho phép.",
    "İstek gövdesi izin verilen boyut sınırını aştı.",
    "Treść żądania przekroczyła dozwolony limit rozmiaru.", "请求体超过了允许的大小限制。",
    "リクエスト本文がサイズ上限を超えました。", "요청 본문이 허용된 크기 제한을 초과했습니다.",
    "Zpráva překročila povolený limit velikosti.", "Pyynnön runko ylitti sallitun kokorajan.",
    "Ukubwa wa ombi umezidi kikomo kinachoruhusiwa.",
];

fn multilingual_sentence(rng: &mut Rng) -> String {
    rng.pick(SENTENCES).to_string()
}

#[rustfmt::skip]
const EMOJI: &[&str] = &[
    "😀", "😂", "🥲", "😍", "🤔", "😅", "🙏", "👍", "👎", "🎉", "🚀", "🔥", "✅", "❌", "⚠️", "💡", "📦", "🐛",
    "🧪", "🔒", "📝", "💥", "🦀", "🐍", "❤️", "✨", "👀", "🤖", "⏳", "📈", "👍🏽", "👋🏿", "🧑🏻‍💻", "👩‍👩‍👧‍👦",
    "👨‍👩‍👧", "🏳️‍🌈", "🇧🇷", "🇯🇵", "🇺🇸", "🇵🇹", "1️⃣", "#️⃣", "🫠", "🪿", "🫶🏼", "🧌",
];

/// Emoji runs. Modes: 0 emoji in short English phrases, 1 runs from the
/// list, 2 code points uniform over the main emoji blocks.
fn emoji_run(mode: usize, rng: &mut Rng) -> String {
    let mut s = String::new();
    match mode {
        0 => {
            s.push_str(rng.pick(WORDS));
            s.push(' ');
            s.push_str(rng.pick(EMOJI));
            if rng.chance(0.5) {
                s.push_str(rng.pick(EMOJI));
            }
        }
        1 => {
            for _ in 0..rng.range(1, 6) {
                s.push_str(rng.pick(EMOJI));
            }
        }
        _ => {
            for _ in 0..rng.range(1, 6) {
                let (lo, hi) = rng.pick(&[
                    (0x1F300, 0x1F5FF),
                    (0x1F600, 0x1F64F),
                    (0x1F680, 0x1F6FF),
                    (0x1F900, 0x1F9FF),
                ]);
                s.push(rng.char_in(lo, hi));
            }
        }
    }
    s
}

/// A line of text that JSON escapes heavily, as terminal tools return it.
fn escape_line(rng: &mut Rng) -> String {
    match rng.below(7) {
        0 => format!(
            "\u{1b}[{}m{}\u{1b}[0m {}:{}:{} {}",
            rng.pick(&["31", "32", "33", "1;31", "2"]),
            rng.pick(&["error", "warning", "PASS", "FAIL", "note"]),
            (0..rng.range(2, 4))
                .map(|_| rng.pick(PATH_PARTS))
                .collect::<Vec<_>>()
                .join("/"),
            rng.range(1, 900),
            rng.range(1, 80),
            english_sentence(rng)
        ),
        1 => format!(
            "C:\\Users\\{}\\AppData\\Local\\{}\\{}\\{}.log",
            rng.pick(NAMES),
            identifier(rng),
            identifier(rng),
            identifier(rng)
        ),
        2 => {
            let inner = serde_json::to_string(&json_object(rng, 1)).unwrap_or_default();
            serde_json::to_string(&inner).unwrap_or_default()
        }
        3 => format!(
            "{}\t{}\t{}\t\"{}\"\r",
            identifier(rng),
            rng.range(0, 99_999),
            hex(rng, 7),
            english_sentence(rng).replace('"', "\\\"")
        ),
        4 => format!(
            "re: ^(?P<{}>\\d{{{}}})[-_\\s]+\\\\{}\\.(?:json|ya?ml)$",
            identifier(rng),
            rng.range(1, 4),
            identifier(rng)
        ),
        5 => format!(
            "{}\u{8}\u{8}\u{0}{} \\u00{:02x}\\n\\t\\\"{}\\\"",
            hex(rng, 4),
            identifier(rng),
            rng.range(0, 31),
            identifier(rng)
        ),
        _ => format!(
            "echo \"{}\" | sed -e 's/\\\\/\\//g' -e \"s/'/\\\\'/g\" > '{}'",
            english_sentence(rng),
            (0..rng.range(2, 4))
                .map(|_| rng.pick(PATH_PARTS))
                .collect::<Vec<_>>()
                .join("/")
        ),
    }
}
