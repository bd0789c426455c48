//! The script a case plays (SPEC §9): a generated ToolLoop turned into the
//! model's side of a conversation. Each iteration of the generated history
//! that makes tool calls is one model turn; each call reads a file that
//! ctxgate writes into the workspace, holding that call's result from the
//! history — so ctxgate knows every result's content. The task is the
//! history's first user message, the final answer its last assistant
//! text.
//!
//! A script is a function of a [`Case`] and the case's summary sizes, so
//! shrinking the case (fewer iterations, fewer parallel calls, shorter
//! results) shrinks the script, and the summary sizes stay put.

use serde::{Deserialize, Serialize};

use super::image_file::ImageFile;
use crate::generate::{text, Case, ContentClass, SplitMix64};
use crate::model::{iterations, truncate_utf8, Content, ImageSource, Message, Part, Role};

/// The longest task ctxgate hands over, in bytes (it travels in argv and
/// the environment).
pub const MAX_TASK_BYTES: usize = 8 * 1024;

/// The model's side of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Script {
    /// The task the agent is started with.
    pub task: String,
    /// The model turns that call tools, in order.
    pub turns: Vec<ScriptTurn>,
    /// The final answer, after which the agent is done.
    #[serde(rename = "final")]
    pub final_answer: String,
    /// The size of each summary the model writes when asked, in order
    /// (then again from the start): a percent of what the summary request
    /// allows (`max_tokens`, or 4,096 tokens when it says nothing), over
    /// 100 now and then, as real models overshoot (never over a request's
    /// own `max_tokens`, which an API does not exceed: see `play`).
    pub summaries: Vec<u32>,
    /// The folders, one inside the next, under the workspace that holds
    /// every call's file (none: the files are in the workspace itself). A
    /// deep folder makes each call's path long, so the calls' arguments
    /// weigh in a request what ADR 0098's estimator, which counted
    /// `content` alone, never counted ([`deep_folders`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folders: Vec<String>,
}

/// One model turn that calls tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptTurn {
    /// What the model says before its calls (may be empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    pub calls: Vec<ScriptCall>,
}

/// One call: its id, the workspace file it reads, and that file's content
/// — text, or for an image result of the generated history, an image file
/// (`content` is then the result's text parts, which the file does not hold).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptCall {
    pub id: String,
    pub file: String,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageFile>,
}

impl ScriptCall {
    /// The file's bytes, as written into the workspace.
    pub fn file_bytes(&self) -> Vec<u8> {
        match &self.image {
            Some(img) => img.png(),
            None => self.content.as_bytes().to_vec(),
        }
    }

    /// How many bytes the file holds (an image's without making it).
    pub fn file_len(&self) -> usize {
        match &self.image {
            Some(img) => img.bytes as usize,
            None => self.content.len(),
        }
    }
}

/// Grow a generated case so that its conversation reaches the agent's
/// trigger as often as agent mode needs: a generated history sits around
/// the trigger only in its boundary share, and an agent adds its own
/// system prompt and tool definitions besides. Each case draws how far
/// its results reach, as a multiple of the trigger's bytes (the trigger in
/// tokens × `bytesPerToken`, or the ceiling when that is lower): a fifth
/// under it (0.2–0.8×), three tenths around it (0.8–1.2×), half past it
/// (1.2–3×); results are grown by fresh text, round-robin, to that total.
/// A case whose results already reach it is left as generated.
///
/// The text is drawn from `classes` (the gen-config's `contentClasses`;
/// `images` is no text class, and none left means prose): each piece of a
/// class of them, or — one case in four — every piece of the case of one
/// class, so that some cases are all CJK, all emoji, all escapes. Only
/// such a case makes an agent that counts characters, not bytes, send a
/// body over the ceiling: in mixed text its count is a few tenths short,
/// which an agent's margin hides.
pub fn grow(case: &mut Case, classes: &[ContentClass], seed: u64) {
    let classes = grown_classes(classes, seed);
    let config = &case.config;
    let trigger_bytes = (config.trigger().saturating_mul(config.bytes_per_token))
        .min(config.transport_max_body_bytes)
        .max(1);
    let mut rng = SplitMix64::new(seed);
    let reach = match rng.below(10) {
        0 | 1 => rng.range(20, 80),
        2..=4 => rng.range(80, 120),
        _ => rng.range(120, 300),
    };
    let target = (trigger_bytes * reach / 100) as usize;
    // An image result becomes an image file: it weighs its bytes, and it
    // is not grown (text added to it would be in no file).
    let is_image = |m: &Message| image_of(m, 0).is_some();
    let results: Vec<usize> = (0..case.messages.len())
        .filter(|&i| case.messages[i].role == Role::Tool && !is_image(&case.messages[i]))
        .collect();
    let images: usize = case
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| image_of(m, 0))
        .map(|f| f.bytes as usize)
        .sum();
    if results.is_empty() {
        return;
    }
    let mut have = images
        + results
            .iter()
            .map(|&i| case.messages[i].content.text_len())
            .sum::<usize>();
    // Each result's text as grown, added to in place and set once at the
    // end (a copy of the text for each piece added was quadratic in the
    // target: minutes for a large window and ceiling).
    let mut grown: Vec<Option<String>> = vec![None; results.len()];
    let mut k = 0;
    while have < target {
        let j = k % results.len();
        let class = *rng.pick(&classes);
        let n = (target - have).min(8 * 1024);
        let more = text::text(&mut rng, class, n);
        let text =
            grown[j].get_or_insert_with(|| case.messages[results[j]].content.text().into_owned());
        text.push('\n');
        text.push_str(&more);
        have += more.len() + 1;
        k += 1;
    }
    for (&i, text) in results.iter().zip(grown) {
        if let Some(text) = text {
            case.messages[i].content = Content::Text(text);
        }
    }
}

/// Where each turn of a case's script comes from: the index of the
/// message that opens it and of each of its calls' results, in the order
/// of the calls. An iteration with no call answered by a result makes no
/// turn.
pub fn turn_messages(msgs: &[Message]) -> Vec<(usize, Vec<usize>)> {
    let mut turns = Vec::new();
    for range in iterations(msgs) {
        let opener = &msgs[range.start];
        if !opener.opens_iteration() {
            continue;
        }
        let results: Vec<usize> = (opener.calls().iter())
            .filter_map(|c| {
                (range.start + 1..range.end)
                    .find(|&r| msgs[r].tool_call_id.as_deref() == Some(c.id.as_str()))
            })
            .collect();
        if !results.is_empty() {
            turns.push((range.start, results));
        }
    }
    turns
}

/// The text classes `grow` draws a case's pieces from (see there).
fn grown_classes(classes: &[ContentClass], seed: u64) -> Vec<ContentClass> {
    let mut text: Vec<ContentClass> = ContentClass::ALL
        .into_iter()
        .filter(|c| classes.contains(c))
        .collect();
    if text.is_empty() {
        text.push(ContentClass::Prose);
    }
    // A draw of its own, so that a mixed case grows as it did before
    // there were one-class cases.
    let mut one = SplitMix64::new(seed ^ 0x0c1a_55e5);
    if one.chance(50) {
        text = vec![*one.pick(&text)];
    }
    text
}

impl Script {
    /// The script of `case`, with `summaries` as its summary sizes.
    pub fn from_case(case: &Case, summaries: Vec<u32>) -> Script {
        let msgs = &case.messages;
        let task = msgs
            .iter()
            .find(|m| m.role == Role::User && !m.content.text().trim().is_empty())
            .map(|m| clean(&m.content.text()))
            .unwrap_or_default();
        let task = format!(
            "Task: {}",
            truncate_utf8(task.trim(), MAX_TASK_BYTES - "Task: ".len())
        );
        let mut turns = Vec::new();
        for (opener, results) in turn_messages(msgs) {
            let t = turns.len();
            let calls: Vec<ScriptCall> = (results.iter().map(|&r| &msgs[r]))
                .enumerate()
                .map(|(i, result)| {
                    let image = image_of(result, (t as u64) << 16 | i as u64);
                    let ext = if image.is_some() { "png" } else { "txt" };
                    ScriptCall {
                        id: format!("call_{t}_{i}"),
                        file: format!("t{t:03}-{i}.{ext}"),
                        content: clean(&result.content.text()),
                        image,
                    }
                })
                .collect();
            turns.push(ScriptTurn {
                text: match &msgs[opener].content {
                    Content::Text(s) => clean(s),
                    _ => String::new(),
                },
                calls,
            });
        }
        let final_answer = msgs
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.calls().is_empty())
            .map(|m| clean(&m.content.text()))
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "Done: every file was read.".into());
        Script {
            task,
            turns,
            final_answer,
            summaries,
            folders: Vec::new(),
        }
    }

    /// Summary sizes for the case numbered by `seed`: a few, mostly under
    /// what a summary request allows, one in four over it.
    pub fn summary_sizes(seed: u64) -> Vec<u32> {
        let mut rng = SplitMix64::new(seed);
        (0..4)
            .map(|_| {
                if rng.chance(25) {
                    rng.range(101, 160) as u32
                } else {
                    rng.range(10, 90) as u32
                }
            })
            .collect()
    }

    /// Check that every call's `file` names a file in the case's workspace
    /// (a fixture is text from outside: its names are written into the
    /// workspace before the agent starts). A name is one plain file name:
    /// not empty, no `/` (so neither absolute nor in another folder), not
    /// `.` or `..`, no NUL, at most 255 bytes; two calls naming one file
    /// give it the same content. The error names the field
    /// (`script.turns[i].calls[j].file`) and the problem.
    pub fn check_files(&self) -> Result<(), String> {
        for (i, folder) in self.folders.iter().enumerate() {
            if let Some(problem) = file_name_problem(folder) {
                return Err(format!(
                    "`script.folders[{i}]`: {problem}; a folder is a plain name (not empty, no `/`, not `.` or `..`, no NUL, at most {MAX_FILE_NAME_BYTES} bytes)"
                ));
            }
        }
        let path: usize = self.folders.iter().map(|f| f.len() + 1).sum();
        if path > MAX_FOLDERS_BYTES {
            return Err(format!(
                "`script.folders`: {path} bytes of folders, over the {MAX_FOLDERS_BYTES} a path may spend on them"
            ));
        }
        let mut seen: std::collections::HashMap<&str, (usize, usize)> = Default::default();
        for (t, turn) in self.turns.iter().enumerate() {
            for (c, call) in turn.calls.iter().enumerate() {
                let field = format!("script.turns[{t}].calls[{c}].file");
                if let Some(problem) = file_name_problem(&call.file) {
                    return Err(format!(
                        "`{field}`: {problem}; a call's file must be a plain file name in the case's workspace (not empty, no `/`, not `.` or `..`, no NUL, at most {MAX_FILE_NAME_BYTES} bytes)"
                    ));
                }
                match seen.get(call.file.as_str()) {
                    Some(&(t0, c0)) => {
                        let first = &self.turns[t0].calls[c0];
                        if first.image != call.image
                            || (first.image.is_none() && first.content != call.content)
                        {
                            return Err(format!(
                                "`{field}`: {:?} is also `script.turns[{t0}].calls[{c0}].file`, with other content: one file cannot hold both",
                                truncate_utf8(&call.file, 80)
                            ));
                        }
                    }
                    None => {
                        seen.insert(&call.file, (t, c));
                    }
                }
            }
        }
        Ok(())
    }

    /// Where a call's `file` is, from the workspace: under the folders.
    pub fn relative(&self, file: &str) -> String {
        let mut out = String::new();
        for folder in &self.folders {
            out.push_str(folder);
            out.push('/');
        }
        out.push_str(file);
        out
    }

    /// The script with its files under `folders`.
    pub fn with_folders(mut self, folders: Vec<String>) -> Script {
        self.folders = folders;
        self
    }

    /// Every call of the script, with its turn.
    pub fn calls(&self) -> impl Iterator<Item = (usize, &ScriptCall)> {
        self.turns
            .iter()
            .enumerate()
            .flat_map(|(t, turn)| turn.calls.iter().map(move |c| (t, c)))
    }

    /// Requests a case may take: four a model turn, the final answer
    /// counted (SPEC §9, `finishes`).
    pub fn request_budget(&self) -> usize {
        4 * (self.turns.len() + 1)
    }

    /// The number of parallel calls of the widest turn.
    pub fn widest_turn(&self) -> usize {
        self.turns.iter().map(|t| t.calls.len()).max().unwrap_or(0)
    }
}

/// The longest file name most file systems take (`NAME_MAX`).
pub const MAX_FILE_NAME_BYTES: usize = 255;

/// The most bytes a script's folders may take in a path (`PATH_MAX` is
/// 4,096 with the workspace and the file name).
pub const MAX_FOLDERS_BYTES: usize = 3_600;

/// One case in this many puts its files in deep folders.
pub const DEEP_FOLDERS_EVERY: u64 = 3;

/// The folders case `seed` puts its files in: one case in
/// [`DEEP_FOLDERS_EVERY`] gets 1,000–3,400 bytes of folders (path
/// segments of 40–200 bytes, as a deep monorepo or a `node_modules` tree
/// has), the others none. Every call's path then carries them, so a
/// turn's calls weigh kilobytes in their arguments: an agent whose
/// estimate leaves the arguments out (ADR 0098's bug) undercounts by that
/// much a call, where the few bytes of a short path hid inside any margin.
pub fn deep_folders(seed: u64) -> Vec<String> {
    let mut rng = SplitMix64::new(seed);
    if rng.below(DEEP_FOLDERS_EVERY) != 0 {
        return Vec::new();
    }
    const WORDS: [&str; 12] = [
        "packages",
        "services",
        "internal",
        "components",
        "generated",
        "vendor",
        "node_modules",
        "src",
        "modules",
        "platform",
        "integration",
        "fixtures",
    ];
    let want = 1_000 + rng.below(2_401) as usize;
    let mut folders = Vec::new();
    let mut used = 0;
    while used < want {
        let len = (40 + rng.below(161) as usize).min(want - used).max(1);
        let mut name = String::new();
        while name.len() < len {
            if !name.is_empty() {
                name.push('-');
            }
            name.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        }
        let name = truncate_utf8(&name, len).trim_end_matches('-').to_owned();
        let name = if name.is_empty() {
            "d".to_owned()
        } else {
            name
        };
        used += name.len() + 1;
        folders.push(name);
    }
    folders
}

/// What is wrong with `name` as a call's file in the workspace, if anything.
pub fn file_name_problem(name: &str) -> Option<String> {
    let shown = || {
        let head = truncate_utf8(name, 80);
        let more = if head.len() < name.len() { "…" } else { "" };
        format!("{head:?}{more}")
    };
    if name.is_empty() {
        return Some("the name is empty".into());
    }
    if name.contains('\0') {
        return Some(format!("{} holds a NUL", shown()));
    }
    if name.starts_with('/') {
        return Some(format!("{} is an absolute path", shown()));
    }
    if name.split('/').any(|part| part == "..") {
        return Some(format!("{} climbs out of the workspace (`..`)", shown()));
    }
    if name == "." {
        return Some("\".\" is the workspace itself, not a file in it".into());
    }
    if name.contains('/') {
        return Some(format!("{} names a file in another folder (`/`)", shown()));
    }
    if name.len() > MAX_FILE_NAME_BYTES {
        return Some(format!("the name is {} bytes long", name.len()));
    }
    None
}

/// The image file for a result whose content holds an inline image (its
/// first): of the image's width, height and size. A remote image (a URL)
/// has no bytes to write; its result stays text.
fn image_of(result: &Message, seed: u64) -> Option<ImageFile> {
    let Content::Parts(parts) = &result.content else {
        return None;
    };
    parts.iter().find_map(|p| match p {
        Part::Image(img) => match &img.source {
            ImageSource::Inline(data) => {
                let (w, h) = data.pixels().unwrap_or((64, 64));
                Some(ImageFile::new(w, h, img.payload_bytes() * 3 / 4, seed))
            }
            ImageSource::Url(_) => None,
        },
        _ => None,
    })
}

/// Text as a file or an argument carries it: no NUL (a file with one is
/// "binary" to many tools, and no environment variable can hold one).
fn clean(s: &str) -> String {
    if s.contains('\0') {
        s.replace('\0', "")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, ToolCall};
    use serde_json::json;

    fn case(messages: Vec<Message>) -> Case {
        Case {
            config: Default::default(),
            messages,
        }
    }

    #[test]
    fn each_calling_iteration_is_a_turn_and_each_answered_call_a_file() {
        let c = case(vec![
            Message::system("sys"),
            Message::user("fix \0the bug"),
            Message::assistant_calls(
                "looking",
                vec![
                    ToolCall::new("a", "read", json!({})),
                    ToolCall::new("b", "read", json!({})),
                ],
            ),
            Message::tool("a", "A-content"),
            Message::tool("b", "B-content"),
            Message::assistant("thinking"),
            Message::assistant_calls("", vec![ToolCall::new("a", "read", json!({}))]),
            Message::tool("a", "again"),
            Message::assistant_calls("", vec![ToolCall::new("p", "read", json!({}))]),
            Message::assistant("all done"),
        ]);
        let s = Script::from_case(&c, vec![50]);
        assert_eq!(s.task, "Task: fix the bug");
        assert_eq!(s.turns.len(), 2, "the pending call makes no turn");
        assert_eq!(s.turns[0].text, "looking");
        let files: Vec<_> = s.calls().map(|(t, c)| (t, c.file.as_str())).collect();
        assert_eq!(
            files,
            [(0, "t000-0.txt"), (0, "t000-1.txt"), (1, "t001-0.txt")]
        );
        assert_eq!(s.turns[1].calls[0].content, "again");
        assert_eq!(s.turns[1].calls[0].id, "call_1_0");
        assert_eq!(s.final_answer, "all done");
        assert_eq!(s.request_budget(), 12);
    }

    #[test]
    fn an_image_result_is_a_png_file_of_its_size_and_is_not_grown() {
        use crate::model::{Image, Part};
        let shot = Image::inline("image/png", {
            let mut rng = SplitMix64::new(3);
            crate::generate::images::image_base64(
                &mut rng,
                crate::generate::images::ImageFormat::Png,
                800,
                600,
                40_000,
            )
        });
        let mut c = case(vec![
            Message::user("look"),
            Message::assistant_calls("", vec![ToolCall::new("a", "read", json!({}))]),
            Message {
                content: Content::Parts(vec![Part::Image(shot)]),
                ..Message::tool("a", "")
            },
            Message::assistant_calls("", vec![ToolCall::new("b", "read", json!({}))]),
            Message::tool("b", "text"),
            Message::assistant("done"),
        ]);
        grow(&mut c, &ContentClass::ALL, 1);
        let s = Script::from_case(&c, vec![50]);
        let image = s.turns[0].calls[0].image.expect("an image file");
        assert_eq!(s.turns[0].calls[0].file, "t000-0.png");
        assert_eq!((image.width, image.height), (800, 600));
        let png = s.turns[0].calls[0].file_bytes();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() >= 30_000,
            "{}",
            png.len()
        );
        assert_eq!(s.turns[1].calls[0].image, None);
        assert!(s.turns[1].calls[0].content.starts_with("text"));
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(serde_json::from_value::<Script>(v).unwrap(), s);
    }

    /// A call's file is written into the case's workspace: a name that is
    /// absolute, climbs out, names another folder, is empty or holds a
    /// A third of the cases get deep folders, of 1,000–3,400 bytes, each
    /// a plain name; the others none.
    #[test]
    fn deep_folders_are_a_third_of_cases_and_plain_names() {
        let drawn: Vec<Vec<String>> = (0..3000).map(deep_folders).collect();
        let deep = drawn.iter().filter(|f| !f.is_empty()).count();
        assert!((850..1150).contains(&deep), "{deep} of 3000");
        for f in drawn.iter().filter(|f| !f.is_empty()) {
            let bytes: usize = f.iter().map(|n| n.len() + 1).sum();
            assert!((1_000..=3_402).contains(&bytes), "{bytes}: {f:?}");
            assert!(bytes <= MAX_FOLDERS_BYTES);
            assert!(f.iter().all(|n| file_name_problem(n).is_none()), "{f:?}");
        }
    }

    /// NUL is refused, and the error names the field and the problem.
    #[test]
    fn a_calls_file_must_be_a_plain_name_in_the_workspace() {
        let script = |files: &[&str]| Script {
            task: "Task: t".into(),
            turns: vec![ScriptTurn {
                text: String::new(),
                calls: files
                    .iter()
                    .enumerate()
                    .map(|(i, f)| ScriptCall {
                        id: format!("c{i}"),
                        file: f.to_string(),
                        content: format!("content {i}"),
                        image: None,
                    })
                    .collect(),
            }],
            final_answer: "done".into(),
            summaries: vec![50],
            folders: Vec::new(),
        };
        assert_eq!(
            script(&["t000-0.txt", "notes .md", "..x", "a..b"]).check_files(),
            Ok(())
        );
        for (bad, problem) in [
            ("/etc/passwd", "is an absolute path"),
            ("../../etc/passwd", "climbs out"),
            ("..", "climbs out"),
            ("a/../../b", "climbs out"),
            (".", "the workspace itself"),
            ("", "the name is empty"),
            ("a\0b.txt", "holds a NUL"),
            ("sub/x.txt", "another folder"),
            ("x/", "another folder"),
        ] {
            let e = script(&["ok.txt", bad]).check_files().unwrap_err();
            assert!(
                e.starts_with("`script.turns[0].calls[1].file`: ") && e.contains(problem),
                "{bad:?}: {e}"
            );
        }
        let long = "x".repeat(256);
        assert!(script(&[&long])
            .check_files()
            .unwrap_err()
            .contains("256 bytes"));
        // One file named twice: the same content is one file, other content
        // is refused.
        let mut s = script(&["a.txt", "a.txt"]);
        let e = s.check_files().unwrap_err();
        assert!(e.contains("script.turns[0].calls[0].file"), "{e}");
        s.turns[0].calls[1].content = s.turns[0].calls[0].content.clone();
        assert_eq!(s.check_files(), Ok(()));
    }

    /// `grow` as it was written first: a copy of a result's text for each
    /// piece added to it (quadratic in the target).
    fn grow_by_copying(case: &mut Case, seed: u64) {
        let classes = grown_classes(&ContentClass::ALL, seed);
        let config = &case.config;
        let trigger_bytes = (config.trigger().saturating_mul(config.bytes_per_token))
            .min(config.transport_max_body_bytes)
            .max(1);
        let mut rng = SplitMix64::new(seed);
        let reach = match rng.below(10) {
            0 | 1 => rng.range(20, 80),
            2..=4 => rng.range(80, 120),
            _ => rng.range(120, 300),
        };
        let target = (trigger_bytes * reach / 100) as usize;
        let is_image = |m: &Message| image_of(m, 0).is_some();
        let results: Vec<usize> = (0..case.messages.len())
            .filter(|&i| case.messages[i].role == Role::Tool && !is_image(&case.messages[i]))
            .collect();
        let images: usize = case
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .filter_map(|m| image_of(m, 0))
            .map(|f| f.bytes as usize)
            .sum();
        if results.is_empty() {
            return;
        }
        let mut have = images
            + results
                .iter()
                .map(|&i| case.messages[i].content.text_len())
                .sum::<usize>();
        let mut k = 0;
        while have < target {
            let i = results[k % results.len()];
            let class = *rng.pick(&classes);
            let n = (target - have).min(8 * 1024);
            let more = text::text(&mut rng, class, n);
            let m: &mut Message = &mut case.messages[i];
            let mut grown = m.content.text().into_owned();
            grown.push('\n');
            grown.push_str(&more);
            have += more.len() + 1;
            m.content = Content::Text(grown);
            k += 1;
        }
    }

    #[test]
    fn grow_makes_the_case_a_copy_for_each_piece_made() {
        use crate::config::Config;
        use crate::generate::{case_for_config, mix, GenConfig};
        // Windows and ceilings that set the trigger, small to a few
        // hundred kilobytes; the generator's default config has images.
        let configs = [
            (8_000, 8 << 20),
            (128_000, 8 << 20),
            (1_000_000, 1 << 20),
            (200_000, 256 << 10),
        ];
        let mut grown = 0;
        for (window, ceiling) in configs {
            let config = Config {
                context_window: window,
                transport_max_body_bytes: ceiling,
                ..Config::default()
            };
            for seed in 0..10 {
                let c = case_for_config(seed, seed % 3, &GenConfig::default(), &config);
                let (mut a, mut b) = (c.clone(), c.clone());
                grow(&mut a, &ContentClass::ALL, mix(seed, 11));
                grow_by_copying(&mut b, mix(seed, 11));
                assert!(a == b, "window {window}, ceiling {ceiling}, seed {seed}");
                grown += usize::from(a != c);
            }
        }
        assert!(grown >= 10, "{grown} of 40 cases grown");
    }

    #[test]
    fn a_script_reads_back_as_it_was_written() {
        let c = crate::generate::case_from_seed(7, 3, &Default::default());
        let s = Script::from_case(&c, Script::summary_sizes(9));
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(serde_json::from_value::<Script>(v).unwrap(), s);
    }
}

#[cfg(test)]
mod one_class_tests {
    use super::*;
    use crate::config::Config;
    use crate::generate::{case_for_config, mix};

    /// Bytes per character of a case's tool results.
    fn results_ratio(c: &Case) -> f64 {
        let (bytes, chars) = (c.messages.iter())
            .filter(|m| m.role == Role::Tool)
            .map(|m| m.content.text())
            .fold((0, 0), |(b, n), t| (b + t.len(), n + t.chars().count()));
        bytes as f64 / chars.max(1) as f64
    }

    /// A 32k window behind Express's 100 KB: the agent tests' settings.
    fn small() -> Config {
        Config {
            context_window: 32_000,
            transport_max_body_bytes: 102_400,
            ..Config::default()
        }
    }

    #[test]
    fn some_cases_grow_in_one_multibyte_class() {
        let (config, gen) = (small(), crate::agent::run::default_gen());
        let mut heavy = 0;
        for index in 0..60 {
            let mut c = case_for_config(11, index, &gen, &config);
            grow(&mut c, &gen.content_classes, mix(11 ^ 0xa6e7, index));
            heavy += usize::from(results_ratio(&c) >= 1.8);
        }
        // Mixed text alone is at most 1.64 bytes a character on these
        // cases: none would count.
        assert!(
            heavy >= 4,
            "{heavy} of 60 cases at 1.8 bytes a character or more"
        );
    }
}
