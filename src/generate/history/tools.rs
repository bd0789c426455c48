//! Tool calls' arguments, sized to a budget, and the tool schemas that
//! fill envelopes.

use serde_json::{json, Map, Value};

use super::Gen;
use crate::body::value_size;
use crate::generate::rng::SplitMix64;
use crate::generate::text::{self, ContentClass};

pub(super) const TOOLS: [&str; 10] = [
    "read_file",
    "search_workspace",
    "run_terminal",
    "list_dir",
    "get_pr_diff",
    "post_review_comment",
    "write_file",
    "edit_file",
    "http_request",
    "query_db",
];

const PATHS: [&str; 6] = [
    "apps/api/src/main.ts",
    "apps/engine/lib/engine/harness/context_manager/default.ex",
    "apps/engine/config/runtime.exs",
    "docker/docker-compose.yml",
    "apps/engine/lib/engine/actions/terminal_executor.ex",
    "apps/engine/lib/engine/agents/qa_automacao_agent.ex",
];

impl Gen<'_, '_, '_> {
    /// Bytes of JSON to aim at for one call's arguments; 0 means `{}`.
    pub(super) fn argument_budget(&mut self) -> u64 {
        let max = self.settings.max_argument_bytes as u64;
        if self.draw.chance(7) {
            return 0;
        }
        let tier = match self.shape.arg_tier {
            0 => 0,
            1 => self.draw.weighted(&[70, 30]),
            _ => self.draw.weighted(&[50, 25, 25]),
        };
        match tier {
            0 => self.draw.log_range(8, 200),
            1 => self.draw.log_range(256, 4_096),
            _ => self.draw.log_range(4_096, max.max(4_096)),
        }
        .min(max)
    }

    pub(super) fn arguments(&mut self, name: &str, budget: u64) -> Value {
        if budget < 8 {
            return json!({});
        }
        let depth = self.settings.max_json_depth;
        let t = &mut self.text;
        let path = |t: &mut SplitMix64| -> String {
            if t.chance(50) {
                (*t.pick(&PATHS)).to_owned()
            } else {
                format!(
                    "apps/{}/src/{}/{}.ts",
                    t.pick(text::WORDS),
                    t.pick(text::WORDS),
                    t.pick(text::WORDS)
                )
            }
        };
        let mut v = match name {
            "read_file" => {
                let mut o = json!({"path": path(t)});
                if t.chance(40) {
                    o["startLine"] = json!(t.range(1, 400));
                    o["endLine"] = json!(t.range(400, 2_000));
                }
                o
            }
            "search_workspace" => {
                let q = text::text(t, ContentClass::Prose, (budget / 3).clamp(3, 60) as usize);
                json!({"query": q.trim(), "maxResults": t.range(1, 50)})
            }
            "run_terminal" => json!({
                "command": format!("mix test test/engine/{}_test.exs --seed {}", t.pick(text::WORDS), t.range(0, 99_999)),
                "timeoutMs": 60_000,
                "cwd": "apps/engine",
            }),
            "list_dir" => json!({"path": "apps/", "depth": t.range(1, 4)}),
            "get_pr_diff" => json!({"pr": t.range(1, 999), "repo": "org/monorepo"}),
            "post_review_comment" => json!({
                "pr": t.range(1, 999),
                "body": text::text(t, ContentClass::Prose, (budget / 2) as usize).trim_end(),
            }),
            "write_file" => {
                let class = if t.chance(60) {
                    ContentClass::Code
                } else {
                    *t.pick(&ContentClass::ALL)
                };
                let content = text::text(t, class, budget.saturating_sub(40) as usize);
                json!({"path": path(t), "content": content})
            }
            "edit_file" => {
                let mut edits = Vec::new();
                let mut used = 40;
                while used < budget {
                    let n = (budget - used).min(600) as usize / 2;
                    let old = text::text(t, ContentClass::Code, n);
                    let class = *t.pick(&ContentClass::ALL);
                    let new = text::text(t, class, n);
                    let e = json!({"oldText": old, "newText": new});
                    used += value_size(&e) + 1;
                    edits.push(e);
                }
                json!({"path": path(t), "edits": edits})
            }
            "http_request" => {
                let body = text::bulk_value(t, depth.saturating_sub(1), budget.saturating_sub(120));
                json!({
                    "method": "POST",
                    "url": format!("http://api:3000/internal/sessions/{}/llm-turn", t.range(1, 9_999)),
                    "headers": {"content-type": "application/json", "x-request-id": t.range(1, 1 << 40)},
                    "body": body,
                })
            }
            _ => {
                // Deep nesting on purpose in a share of the large ones.
                if budget >= 1_024 && depth >= 10 && t.chance(35) {
                    let levels = t.range(8, depth as u64 - 2) as usize;
                    let inner = text::value(t, depth - levels - 1, budget / 2);
                    let mut v = inner;
                    for _ in 0..levels {
                        let mut o = Map::new();
                        o.insert(text::json_key(t), v);
                        v = Value::Object(o);
                    }
                    json!({"filter": v})
                } else {
                    match text::bulk_value(t, depth, budget) {
                        Value::Object(o) => Value::Object(o),
                        other => json!({"input": other}),
                    }
                }
            }
        };
        prune(&mut v, depth.max(1));
        v
    }

    /// A tool schema from a pool written once, under a name of its own.
    pub(super) fn tool_schema(&mut self) -> Value {
        let mut schema = self.text.pick(tool_schemas()).clone();
        let name = format!("{}_{}", self.text.pick(&TOOLS), self.text.range(0, 999));
        schema["function"]["name"] = Value::String(name);
        schema
    }
}

/// Tool schemas for envelopes (JSON-schema `parameters`, prose
/// descriptions), written once from a fixed seed.
fn tool_schemas() -> &'static [Value] {
    static POOL: std::sync::OnceLock<Vec<Value>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let t = &mut SplitMix64::new(0x0098_7001);
        (0..64)
            .map(|_| {
                let mut props = Map::new();
                let mut required = Vec::new();
                for _ in 0..t.range(1, 6) {
                    let k = text::json_key(t);
                    let ty = *t.pick(&["string", "integer", "boolean", "array", "object"]);
                    let n = t.range(10, 160) as usize;
                    let desc = text::text(t, ContentClass::Prose, n);
                    props.insert(k.clone(), json!({"type": ty, "description": desc.trim()}));
                    if t.chance(50) {
                        required.push(Value::String(k));
                    }
                }
                let n = t.range(40, 500) as usize;
                let description = text::text(t, ContentClass::Prose, n);
                json!({"type": "function", "function": {
                    "name": "",
                    "description": description.trim(),
                    "parameters": {"type": "object", "properties": props, "required": required},
                }})
            })
            .collect()
    })
}

/// Replace the containers nested deeper than `max` levels by `null`, so
/// that no generated JSON passes `GenConfig::max_json_depth`.
pub(super) fn prune(v: &mut Value, max: usize) {
    match v {
        Value::Array(_) | Value::Object(_) if max == 0 => *v = Value::Null,
        Value::Array(a) => a.iter_mut().for_each(|x| prune(x, max - 1)),
        Value::Object(o) => o.values_mut().for_each(|x| prune(x, max - 1)),
        _ => {}
    }
}
