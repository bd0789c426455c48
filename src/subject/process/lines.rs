//! A batch's lines: the request lines written before the subject is held
//! (histories shared between requests written once), the answer lines as
//! they come, and what was sent.

use std::sync::Arc;

use serde_json::Value;

use super::STDOUT_ONLY_PROTOCOL;
use crate::model::engine_ser::written_alike;
use crate::model::WireFormat;
use crate::subject::protocol::{
    parse_compact_line, parse_estimate_answer, push_line_safe, read_line_expecting,
    read_line_knowing, write_request_head, write_request_rest, ProtocolLine,
};
use crate::subject::written::{MessageJson, Written};
use crate::subject::{
    CompactAnswer, EstimateAnswer, EstimateReply, Fault, FaultKind, Reply, Request,
};

/// A batch's request lines, written before the subject is held (`Lane`):
/// each but its opening `{"op":…,"id":N`, which `submit` writes once the
/// id is known.
pub(crate) struct Prepared {
    pub(super) format: WireFormat,
    pub(super) lines: Vec<Rest>,
    pub(super) jsons: Vec<Option<Arc<Vec<u8>>>>,
}

/// A request line but its head (`{"op":…,"id":…`).
pub(super) enum Rest {
    /// `,"config":` config `,"messages":` messages `}` — written as these
    /// parts, not copied into one line first.
    Engine {
        config: Arc<Vec<u8>>,
        messages: Arc<Vec<u8>>,
    },
    /// The whole rest, in another format.
    Line(Vec<u8>),
}

impl Prepared {
    /// `written` keeps what was written lately: the batches of a case
    /// share a config and most of their messages.
    pub(crate) fn new(
        format: WireFormat,
        requests: &[Request<'_>],
        written: &mut Written,
    ) -> Prepared {
        if format == WireFormat::Engine {
            let jsons = shared_messages_json(requests, &mut written.messages);
            let lines = requests
                .iter()
                .zip(&jsons)
                .map(|(r, json)| Rest::Engine {
                    config: written.config(r.config()),
                    messages: Arc::clone(json.as_ref().expect("engine JSON is written")),
                })
                .collect();
            return Prepared {
                format,
                lines,
                jsons,
            };
        }
        let lines = requests
            .iter()
            .map(|r| {
                let (Request::Compact(config, msgs) | Request::Estimate(config, msgs)) = *r;
                let cfg = written.config(config);
                let mut rest = Vec::with_capacity(cfg.len() + 256);
                write_request_rest(&mut rest, &cfg, msgs, format, None);
                Rest::Line(rest)
            })
            .collect();
        Prepared {
            format,
            lines,
            jsons: vec![None; requests.len()],
        }
    }
}

/// An answer line as it came, not yet read.
pub(crate) struct Answer {
    pub(super) line: Vec<u8>,
    /// The first id the process that wrote it was sent.
    pub(super) first_id: u64,
}

impl Answer {
    /// Read it as the answer to request `id` (the hello has none); for a
    /// compact answer, `expected` is the history's JSON, which an answer
    /// that hands it back unchanged repeats (not parsed again).
    pub(super) fn read(
        self,
        format: WireFormat,
        id: Option<u64>,
        expected: Option<&[u8]>,
        known: Option<&MessageJson>,
    ) -> Result<ProtocolLine, Fault> {
        let answer = self.line;
        let line = match known {
            Some(k) => read_line_knowing(&answer, format, expected, &|json| k.read(json)),
            None => read_line_expecting(&answer, format, expected),
        };
        let line = line.map_err(|e| {
            let why = e.to_string();
            let (what, shown) = match std::str::from_utf8(&answer) {
                // Said as bytes: shown lossily, the line would read as one
                // that really holds U+FFFD.
                Err(bad) => {
                    let at = bad.valid_up_to();
                    let from = at.saturating_sub(40);
                    let near = &answer[from..answer.len().min(at + 8)];
                    (
                        format!("not valid UTF-8 at byte {at} (a line is UTF-8 JSON)"),
                        format!("…\"{}\"…", near.escape_ascii()),
                    )
                }
                Ok(text) => {
                    let cut = crate::model::truncate_utf8(text, 200);
                    let what = match why.starts_with("recursion limit exceeded") {
                        // Well-formed JSON, but deeper than any history is.
                        true => {
                            "a JSON line nested deeper than the 128 levels ctxgate reads".to_owned()
                        }
                        false => format!("not a JSON object line ({why})"),
                    };
                    (what, format!("{cut:?}"))
                }
            };
            Fault::new(
                FaultKind::MalformedLine,
                format!("{what}: {shown}; {STDOUT_ONLY_PROTOCOL}"),
            )
        })?;
        let Some(id) = id else { return Ok(line) };
        match line.fields.get("id").and_then(Value::as_u64) {
            Some(got) if got == id => Ok(line),
            // An answer to a request already answered: a line nobody asked
            // for, which arrived after the next request was sent.
            Some(got) if got < id && got >= self.first_id => Err(Fault::new(
                FaultKind::UnsolicitedLine,
                format!("answered request {got} a second time, when request {id} was asked"),
            )),
            _ => Err(Fault::new(
                FaultKind::WrongId,
                format!(
                    "answered id {} to request {id}",
                    crate::model::text::excerpt(line.fields.get("id").unwrap_or(&Value::Null))
                ),
            )),
        }
    }

    /// Read it as the reply to `req`, the `n`-th request of `sent`; the
    /// messages `written` wrote are not read again.
    pub(crate) fn reply(
        self,
        format: WireFormat,
        req: &Request<'_>,
        sent: &Sent,
        n: usize,
        written: &Written,
    ) -> Result<Reply, Fault> {
        let expected = match req {
            Request::Compact(..) => sent.jsons[n].as_deref().map(Vec::as_slice),
            Request::Estimate(..) => None,
        };
        let known = matches!(req, Request::Compact(..)).then_some(&written.messages);
        let line = self.read(format, Some(sent.ids[n]), expected, known)?;
        reply_of(line, format, req)
    }
}

/// An answer line read (and its id checked) as the reply to `req`.
fn reply_of(line: ProtocolLine, format: WireFormat, req: &Request<'_>) -> Result<Reply, Fault> {
    match req {
        // The history handed back, and nothing that contradicts it: an
        // `error` beside it is for `parse_compact_line` to refuse (`null`
        // is no error, docs/protocol.md: the history as it was sent).
        Request::Compact(_, msgs)
            if line.echoed && line.fields.get("error").is_none_or(Value::is_null) =>
        {
            Ok(Reply::Compact(CompactAnswer::Messages(msgs.to_vec())))
        }
        Request::Compact(..) => parse_compact_line(line, format).map(Reply::Compact),
        Request::Estimate(_, msgs) => {
            let reply = parse_estimate_answer(&line.fields)?;
            // One figure a message of the request (docs/protocol.md §4):
            // other figures are checked against no message, and the
            // per-message floors of every estimate invariant would pass
            // unseen (`budget::below_floors` reads only a list that fits).
            if let EstimateReply::Tokens(EstimateAnswer {
                per_message: Some(per),
                ..
            }) = &reply
            {
                if per.len() != msgs.len() {
                    return Err(Fault::new(
                        FaultKind::Protocol,
                        format!(
                            "estimate answer: `perMessage` has {} figures for {} messages (one per message of the request)",
                            per.len(),
                            msgs.len()
                        ),
                    ));
                }
            }
            Ok(Reply::Estimate(reply))
        }
    }
}

/// Which reader took an answer line: the echo of the history sent (its
/// `messages` not even scanned), the one-pass engine reader, or serde_json's
/// `Value` (any other line, and every line of the other formats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadBy {
    Echo,
    Fast,
    Value,
    /// Not a JSON object line: a `malformed-line` fault.
    Nothing,
}

/// One request as a process subject writes it, and an answer line read as
/// that subject's — what `ProcessSubject::pipelined` does around its pipes,
/// with no process: the seam of the `answer` fuzz target (src/fuzzing.rs),
/// which sends arbitrary bytes where the subject's answer line would be.
pub(crate) struct Exchange {
    format: WireFormat,
    written: Written,
    sent: Sent,
    first_id: u64,
    /// The request line as it goes down the pipe, without its `\n`.
    pub(crate) line: Vec<u8>,
}

impl Exchange {
    /// `req` sent alone as request `id` to a process first sent `first_id`
    /// (`first_id <= id`), in `format`.
    pub(crate) fn new(format: WireFormat, req: &Request<'_>, id: u64, first_id: u64) -> Exchange {
        let mut written = Written::default();
        let prepared = Prepared::new(format, std::slice::from_ref(req), &mut written);
        let mut whole = Vec::new();
        let op = match req {
            Request::Compact(..) => "compact",
            Request::Estimate(..) => "estimate",
        };
        write_request_head(&mut whole, op, id);
        match &prepared.lines[0] {
            Rest::Engine { config, messages } => {
                whole.extend_from_slice(b",\"config\":");
                whole.extend_from_slice(config);
                whole.extend_from_slice(b",\"messages\":");
                whole.extend_from_slice(messages);
                whole.extend_from_slice(b"}\n");
            }
            Rest::Line(rest) => whole.extend_from_slice(rest),
        }
        whole.pop();
        // As the pipe writes it (`pipes::Pipes::queue`).
        let mut line = Vec::with_capacity(whole.len());
        push_line_safe(&mut line, &whole);
        Exchange {
            format,
            written,
            sent: Sent {
                ids: vec![id],
                jsons: prepared.jsons,
                start: 0,
            },
            first_id,
            line,
        }
    }

    /// The history's JSON that an echoing answer repeats (engine only).
    pub(crate) fn expected(&self) -> Option<&[u8]> {
        self.sent.jsons[0].as_deref().map(Vec::as_slice)
    }

    /// `answer` read as the reply to `req` (the request this was made
    /// for), and which reader took it.
    pub(crate) fn reply(&self, req: &Request<'_>, answer: &[u8]) -> (Result<Reply, Fault>, ReadBy) {
        let expected = match req {
            Request::Compact(..) => self.expected(),
            Request::Estimate(..) => None,
        };
        let known = matches!(req, Request::Compact(..)).then_some(&self.written.messages);
        let answer = Answer {
            line: answer.to_vec(),
            first_id: self.first_id,
        };
        let line = match answer.read(self.format, Some(self.sent.ids[0]), expected, known) {
            Ok(line) => line,
            Err(f) if f.kind == FaultKind::MalformedLine => return (Err(f), ReadBy::Nothing),
            Err(f) => return (Err(f), ReadBy::Value),
        };
        let by = if line.echoed {
            ReadBy::Echo
        } else if line.messages.is_some() {
            ReadBy::Fast
        } else {
            ReadBy::Value
        };
        (reply_of(line, self.format, req), by)
    }
}

/// Requests sent, awaiting their answers: their ids, the history JSON each
/// was written with, and which start of the process they went to.
pub(crate) struct Sent {
    pub(super) ids: Vec<u64>,
    pub(super) jsons: Vec<Option<Arc<Vec<u8>>>>,
    pub(super) start: u32,
}
/// The engine JSON of each request's history, written once for requests
/// that share a history, and extended (not rewritten) for one that is an
/// earlier one's plus a few messages (the longer history of
/// `estimate-monotone`). A message written in an earlier batch is copied
/// from `cache`.
fn shared_messages_json<'a>(
    requests: &[Request<'a>],
    cache: &mut MessageJson,
) -> Vec<Option<Arc<Vec<u8>>>> {
    cache.make_room();
    // Each history's JSON, and where each of its messages ends in it.
    let mut out: Vec<(Arc<Vec<u8>>, Vec<usize>)> = Vec::with_capacity(requests.len());
    for (k, r) in requests.iter().enumerate() {
        let msgs = r.messages();
        let mut found = None;
        for (j, earlier) in requests[..k].iter().enumerate() {
            let e = earlier.messages();
            let (json, ends) = &out[j];
            if std::ptr::eq(e, msgs) {
                found = Some((Arc::clone(json), ends.clone()));
                break;
            }
            if !msgs.is_empty() && msgs.len() < e.len() && std::ptr::eq(msgs.as_ptr(), e.as_ptr()) {
                // The first messages of the same history (a ToolLoop's
                // first turn): a slice of its JSON.
                let end = ends[msgs.len() - 1];
                let mut shorter = cache.buffer(end + 1);
                shorter.extend_from_slice(&json[..end]);
                shorter.push(b']');
                found = Some((cache.share(shorter), ends[..msgs.len()].to_vec()));
                break;
            }
            if !e.is_empty()
                && e.len() < msgs.len()
                && msgs.iter().zip(e).all(|(a, b)| written_alike(a, b))
            {
                let mut longer = cache.buffer(json.len());
                longer.extend_from_slice(&json[..json.len() - 1]);
                let mut ends = ends.clone();
                cache.write_all(&mut longer, &msgs[e.len()..], false, &mut ends);
                longer.push(b']');
                found = Some((cache.share(longer), ends));
                break;
            }
        }
        let found = found.unwrap_or_else(|| {
            let mut json = cache.buffer(0);
            json.push(b'[');
            let mut ends = Vec::with_capacity(msgs.len());
            cache.write_all(&mut json, msgs, true, &mut ends);
            json.push(b']');
            (cache.share(json), ends)
        });
        out.push(found);
    }
    out.into_iter().map(|(json, _)| Some(json)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;
    use crate::subject::protocol::write_messages_json;

    /// A history handed back unchanged beside a field the protocol reads
    /// as no value (`"error": null`, which Go, TypeScript classes and
    /// Python dataclasses write) is the answer, read by the echo path as
    /// by the whole line (found by the `answer` fuzz target: it was a
    /// `protocol` fault, "no `messages`", the echo having taken them out);
    /// a non-null `error` beside it is still refused.
    #[test]
    fn a_history_handed_back_beside_a_null_error_is_the_answer() {
        for (index, case) in crate::generate::seeded(5, 40) {
            let req = Request::Compact(&case.config, &case.messages);
            let exchange = Exchange::new(WireFormat::Engine, &req, 3, 1);
            let expected = String::from_utf8(exchange.expected().unwrap().to_vec()).unwrap();
            for line in [
                format!(r#"{{"id":3,"error":null,"messages":{expected}}}"#),
                format!(r#"{{"error":null,"id":3,"messages":{expected}}}"#),
                format!(r#"{{"id":3,"messages":{expected},"error":null}}"#),
            ] {
                let (reply, _) = exchange.reply(&req, line.as_bytes());
                let Ok(Reply::Compact(CompactAnswer::Messages(got))) = reply else {
                    panic!("case {index}: {reply:?}");
                };
                assert_eq!(got, case.messages, "case {index}");
            }
            let both = format!(
                r#"{{"id":3,"error":{{"kind":"cannot_fit","message":"m"}},"messages":{expected}}}"#
            );
            let (reply, by) = exchange.reply(&req, both.as_bytes());
            assert_eq!(by, ReadBy::Echo);
            assert_eq!(reply.unwrap_err().kind, FaultKind::Protocol, "case {index}");
        }
    }

    /// A batch's histories that share messages (the same, one message
    /// more, the first messages of the same history) are written from one
    /// another, byte for byte as each written alone.
    #[test]
    fn shared_histories_are_written_as_each_alone() {
        // One cache for all: each case's histories are written in buffers
        // the cases before left, longer or shorter than they need.
        let mut cache = MessageJson::default();
        for (index, case) in crate::generate::seeded(3, 200) {
            let input = &case.messages;
            let mut longer = input.clone();
            longer.push(Message::tool("x", "approved"));
            let cut = input.len() / 2;
            let prefix = &input[..cut];
            let requests = [
                Request::Compact(&case.config, input),
                Request::Estimate(&case.config, input),
                Request::Estimate(&case.config, &longer),
                Request::Compact(&case.config, prefix),
            ];
            let jsons = shared_messages_json(&requests, &mut cache);
            for (r, json) in requests.iter().zip(&jsons) {
                let mut alone = Vec::new();
                write_messages_json(&mut alone, r.messages());
                assert!(**json.as_ref().unwrap() == alone, "case {index}");
            }
        }
    }

    /// Batch after batch through one cache, as a lane sends a run's
    /// ToolLoops (each turn a copy of an earlier history, messages dropped,
    /// one rewritten, the case's next ones appended; many cases, past the
    /// cache's bound): every history byte for byte as written alone.
    #[test]
    fn histories_written_from_earlier_batches_are_written_as_alone() {
        let mut cache = MessageJson::default();
        for (index, case) in crate::generate::seeded(9, 600) {
            let input = &case.messages;
            let mut history: Vec<Message> = input[..input.len().min(3)].to_vec();
            for (turn, m) in input.iter().enumerate().skip(3) {
                history.push(m.clone());
                if turn % 4 == 0 && history.len() > 4 {
                    history.remove(1);
                    history[1] = Message::assistant(format!("summary of turn {turn}"));
                }
                let sent = history.clone();
                let requests = [Request::Compact(&case.config, &sent)];
                let jsons = shared_messages_json(&requests, &mut cache);
                let mut alone = Vec::new();
                write_messages_json(&mut alone, &sent);
                assert!(
                    **jsons[0].as_ref().unwrap() == alone,
                    "case {index}, turn {turn}"
                );
            }
        }
    }
}
