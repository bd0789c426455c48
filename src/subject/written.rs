//! What a protocol client wrote lately, kept to be copied rather than
//! written again (issue 13). A ToolLoop turn sends the subject's last
//! answer and the case's next messages: all of them were written before,
//! as part of the whole case or of an earlier turn. The batches of a case
//! also share one config.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use std::sync::Arc;

use crate::config::Config;
use crate::model::engine_de::reads_back;
use crate::model::engine_ser::{members_alike, write_message, written_alike};
use crate::model::Message;

/// The JSON last written for a config and for messages, by one writer
/// (a process subject, or one of its lanes).
#[derive(Default)]
pub(crate) struct Written {
    config: Option<(Config, Arc<Vec<u8>>)>,
    pub(crate) messages: MessageJson,
}

impl Written {
    /// The JSON of `config`, written once for the requests that share it
    /// (its envelope can be kilobytes).
    pub(crate) fn config(&mut self, config: &Config) -> Arc<Vec<u8>> {
        if self
            .config
            .as_ref()
            .is_none_or(|(c, _)| !config_written_alike(c, config))
        {
            let json = serde_json::to_vec(&config.to_value()).expect("a config serialises");
            self.config = Some((config.clone(), Arc::new(json)));
        }
        Arc::clone(&self.config.as_ref().expect("set above").1)
    }
}

/// Whether two configs are written as the same JSON: their envelopes'
/// members spelled alike and in the same order (`==` is equality of
/// values).
fn config_written_alike(a: &Config, b: &Config) -> bool {
    a.context_window == b.context_window
        && a.threshold.to_bits() == b.threshold.to_bits()
        && a.transport_max_body_bytes == b.transport_max_body_bytes
        && a.bytes_per_token == b.bytes_per_token
        && a.keep_recent == b.keep_recent
        && a.summary_max_bytes == b.summary_max_bytes
        && a.wire_format == b.wire_format
        && members_alike(&a.envelope, &b.envelope)
}

/// Engine JSON of the messages written lately: a message written alike
/// ([`written_alike`]) to one of them is copied from here, so the bytes
/// sent are always those writing it would give.
#[derive(Default)]
pub(crate) struct MessageJson {
    /// A copy of each message written (cheap: arguments are shared).
    messages: Vec<Message>,
    /// Where each one's JSON is in `json`.
    spans: Vec<Range<usize>>,
    json: Vec<u8>,
    /// The last message with a given [`key`], and before it the one with
    /// the same key before that (`usize::MAX`: none).
    last_with_key: HashMap<u64, usize, BuildHasherDefault<KeyHasher>>,
    before: Vec<usize>,
    /// The same by [`text_key`] of the JSON, for the messages that read
    /// back as themselves (`engine_de::reads_back`).
    last_with_text: HashMap<u64, usize, BuildHasherDefault<KeyHasher>>,
    before_text: Vec<usize>,
    /// The message after the last one copied: the next one asked for,
    /// most often (histories are runs of the case's messages, in order).
    next: usize,
    /// Buffers of histories' JSON handed out lately (`buffer`), reused
    /// once nobody else holds them: a history's JSON can be megabytes,
    /// and a buffer freed and allocated again is fresh pages to fault in.
    spare: Vec<Arc<Vec<u8>>>,
}

/// How many history buffers are kept for reuse, the largest kept, and
/// how many bytes they hold at most together.
const SPARE_BUFFERS: usize = 16;
const SPARE_MAX_BYTES: usize = 16 << 20;
const SPARE_TOTAL_BYTES: usize = 64 << 20;

/// How much is kept before starting again: several cases' worth.
const KEEP_BYTES: usize = 8 << 20;
const KEEP_MESSAGES: usize = 16_384;

impl MessageJson {
    /// Start again if what is kept grew past its bound (before a batch:
    /// the entries a batch's histories are made of stay valid through it).
    pub(crate) fn make_room(&mut self) {
        if self.json.len() > KEEP_BYTES || self.messages.len() >= KEEP_MESSAGES {
            // Emptied, the memory kept: grown again, it would be fresh
            // pages to fault in.
            self.messages.clear();
            self.spans.clear();
            self.json.clear();
            self.last_with_key.clear();
            self.before.clear();
            self.last_with_text.clear();
            self.before_text.clear();
            self.next = 0;
        }
    }

    /// An empty buffer to write a history's JSON in, of at least `want`
    /// bytes' capacity: one handed out before when it is free again.
    pub(crate) fn buffer(&mut self, want: usize) -> Vec<u8> {
        let free = |a: &Arc<Vec<u8>>| Arc::strong_count(a) == 1 && Arc::weak_count(a) == 0;
        // The largest free one: a history written from scratch does not
        // know its size before it is written.
        let found = (self.spare.iter().enumerate())
            .filter(|(_, a)| free(a))
            .max_by_key(|(_, a)| a.capacity())
            .map(|(k, _)| k);
        let mut buf = match found.map(|k| Arc::try_unwrap(self.spare.swap_remove(k))) {
            Some(Ok(buf)) => buf,
            _ => Vec::new(),
        };
        buf.clear();
        buf.reserve(want);
        buf
    }

    /// `json`, a buffer from [`buffer`](Self::buffer) made shared, kept
    /// to be reused when it is free again.
    pub(crate) fn share(&mut self, json: Vec<u8>) -> Arc<Vec<u8>> {
        let json = Arc::new(json);
        if json.capacity() <= SPARE_MAX_BYTES {
            self.spare.push(Arc::clone(&json));
            while self.spare.len() > SPARE_BUFFERS
                || self.spare.iter().map(|a| a.capacity()).sum::<usize>() > SPARE_TOTAL_BYTES
            {
                self.spare.remove(0);
            }
        }
        json
    }

    /// The entry of `m`, written now if it is new.
    pub(crate) fn entry(&mut self, m: &Message) -> usize {
        let k = match self.find(m) {
            Some(k) => k,
            None => self.add(m),
        };
        self.next = k + 1;
        k
    }

    /// The engine JSON of entry `k`.
    pub(crate) fn json(&self, k: usize) -> &[u8] {
        &self.json[self.spans[k].clone()]
    }

    /// Append `msgs`' engine JSON to `out`, each message after a `,` but
    /// the first when `first`; where each one ends is pushed on `ends`.
    pub(crate) fn write_all(
        &mut self,
        out: &mut Vec<u8>,
        msgs: &[Message],
        mut first: bool,
        ends: &mut Vec<usize>,
    ) {
        let entries: Vec<usize> = msgs.iter().map(|m| self.entry(m)).collect();
        out.reserve(
            entries
                .iter()
                .map(|&k| self.spans[k].len() + 1)
                .sum::<usize>()
                + 1,
        );
        for k in entries {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(self.json(k));
            ends.push(out.len());
        }
    }

    fn find(&self, m: &Message) -> Option<usize> {
        if let Some(c) = self.messages.get(self.next) {
            if written_alike(c, m) {
                return Some(self.next);
            }
        }
        let mut at = *self.last_with_key.get(&key(m))?;
        loop {
            if written_alike(&self.messages[at], m) {
                return Some(at);
            }
            at = self.before[at];
            if at == usize::MAX {
                return None;
            }
        }
    }

    fn add(&mut self, m: &Message) -> usize {
        let start = self.json.len();
        write_message(&mut self.json, m);
        let k = self.messages.len();
        self.messages.push(m.clone());
        self.spans.push(start..self.json.len());
        let before = self.last_with_key.insert(key(m), k);
        self.before.push(before.unwrap_or(usize::MAX));
        let before_text = match reads_back(m) {
            true => self.last_with_text.insert(text_key(&self.json[start..]), k),
            false => None,
        };
        self.before_text.push(before_text.unwrap_or(usize::MAX));
        k
    }

    /// The message written as `json`, if it was written here and reads
    /// back as itself: what reading `json` gives.
    pub(crate) fn read(&self, json: &str) -> Option<Message> {
        let json = json.as_bytes();
        let mut at = *self.last_with_text.get(&text_key(json))?;
        loop {
            if &self.json[self.spans[at].clone()] == json {
                return Some(self.messages[at].clone());
            }
            at = self.before_text[at];
            if at == usize::MAX {
                return None;
            }
        }
    }
}

/// A message's JSON text's key: its length and its first and last bytes
/// (a tool message's id is at its end).
fn text_key(json: &[u8]) -> u64 {
    let mut h = KeyHasher::default();
    h.write_u64(json.len() as u64);
    h.write(&json[..json.len().min(32)]);
    h.write(&json[json.len().saturating_sub(32)..]);
    h.finish()
}

/// A message's key in the cache: its role, its content's length and first
/// and last bytes, its calls' ids — cheap to take, and different for nearly
/// any two messages of a case (a match is confirmed by [`written_alike`]).
fn key(m: &Message) -> u64 {
    let mut h = KeyHasher::default();
    h.write_u64(m.role as u64);
    let text = m.content.text();
    let text = text.as_bytes();
    h.write_u64(text.len() as u64);
    h.write_u64(m.content.parts().len() as u64);
    h.write(&text[..text.len().min(16)]);
    h.write(&text[text.len().saturating_sub(16)..]);
    if let Some(id) = &m.tool_call_id {
        h.write(id.as_bytes());
    }
    for c in m.calls() {
        h.write(c.id.as_bytes());
    }
    h.finish()
}

/// A small multiply-and-rotate hash: the key's few bytes are not chosen by
/// anyone hostile, and a collision costs one comparison.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word) ^ chunk.len() as u64);
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0 ^ x)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(26);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::engine_ser::write_messages;

    fn written(cache: &mut MessageJson, msgs: &[Message]) -> Vec<u8> {
        cache.make_room();
        let mut out = Vec::new();
        cache.write_all(&mut out, msgs, true, &mut Vec::new());
        out
    }

    /// The histories of generated cases, whole, in pieces, reordered and
    /// again: each message's bytes are those writing it gives.
    #[test]
    fn copied_messages_are_the_bytes_writing_them_gives() {
        let mut cache = MessageJson::default();
        for (index, case) in crate::generate::seeded(11, 200) {
            let msgs = &case.messages;
            let mut shuffled: Vec<Message> = msgs.iter().rev().cloned().collect();
            shuffled.extend(msgs.iter().step_by(2).cloned());
            for h in [&msgs[..], &msgs[..msgs.len() / 2], &shuffled[..], &msgs[..]] {
                let mut theirs = Vec::new();
                for (n, m) in h.iter().enumerate() {
                    if n > 0 {
                        theirs.push(b',');
                    }
                    write_message(&mut theirs, m);
                }
                assert!(written(&mut cache, h) == theirs, "case {index} differs");
            }
        }
        assert!(cache.messages.len() < 20_000);
    }

    /// A message read from its text as written is the one that was
    /// written, and exactly what reading the text gives; one that would not
    /// read back as itself is never taken from its text.
    #[test]
    fn messages_read_from_their_text_are_what_reading_it_gives() {
        let mut cache = MessageJson::default();
        let mut read = 0;
        for (index, case) in crate::generate::seeded(5, 200) {
            for m in &case.messages {
                let k = cache.entry(m);
                let json = cache.json(k).to_vec();
                let text = std::str::from_utf8(&json).unwrap();
                let parsed: Vec<Message> = messages(&format!("[{text}]"));
                match cache.read(text) {
                    Some(got) => {
                        read += 1;
                        assert!(written_alike(&got, &parsed[0]), "case {index}: {text}");
                        assert_eq!(got, parsed[0]);
                    }
                    None => assert!(!reads_back(m), "case {index}: {text} not found"),
                }
            }
        }
        assert!(read > 1000, "only {read} messages read from their text");
        // A field on a role that cannot carry it reads as an error: never
        // from the cache.
        let mut odd = Message::user("x");
        odd.tool_call_id = Some("t".into());
        let k = cache.entry(&odd);
        let json = cache.json(k).to_vec();
        assert!(cache.read(std::str::from_utf8(&json).unwrap()).is_none());
        assert!(cache
            .read("{\"role\":\"user\",\"content\":\"never written\"}")
            .is_none());
    }

    fn messages(json: &str) -> Vec<Message> {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        crate::model::engine::read_messages(v.as_array().unwrap()).unwrap()
    }

    /// Messages equal as JSON values but spelled otherwise are written as
    /// they are spelled, not as the one written first.
    /// A history's buffer is handed out again only once nobody else
    /// holds it, emptied, its memory kept.
    #[test]
    fn a_buffer_is_reused_once_nobody_holds_it() {
        let mut cache = MessageJson::default();
        let mut json = cache.buffer(1000);
        json.extend_from_slice(b"[{\"role\":\"user\"}]");
        let shared = cache.share(json);
        let at = shared.as_ptr();
        let meanwhile = cache.buffer(10);
        assert_ne!(meanwhile.as_ptr(), at, "still held: not handed out");
        drop(shared);
        let again = cache.buffer(10);
        assert_eq!(again.as_ptr(), at);
        assert!(again.is_empty() && again.capacity() >= 1000);
    }

    #[test]
    fn equal_messages_spelled_otherwise_are_written_apart() {
        let a: Vec<Message> =
            messages(r#"[{"role":"user","content":"x","n":1.0,"o":{"a":1,"b":2}}]"#);
        let b: Vec<Message> =
            messages(r#"[{"role":"user","content":"x","n":1,"o":{"b":2,"a":1}}]"#);
        assert_eq!(a, b, "equal as JSON values");
        let mut cache = MessageJson::default();
        for msgs in [&a, &b, &a, &b] {
            let mut theirs = Vec::new();
            write_messages(&mut theirs, msgs);
            let mut ours = vec![b'['];
            ours.extend(written(&mut cache, msgs));
            ours.push(b']');
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(theirs).unwrap()
            );
        }
    }
}
