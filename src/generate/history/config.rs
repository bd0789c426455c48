//! The case's config, sized against the history it goes with, and its
//! envelope.

use serde_json::{json, Map, Value};

use super::tools::prune;
use super::Gen;
use crate::body::{string_size, value_size};
use crate::config::Config;
use crate::estimate::{Adr0098, Estimator};
use crate::generate::anthropic_ready;
use crate::generate::text;
use crate::model::{Message, WireFormat};

impl Gen<'_, '_, '_> {
    pub(super) fn config(&mut self, msgs: &[Message]) -> Config {
        let g = self.settings;
        let mut c = Config::default();
        let engine = 100u32.saturating_sub(g.openai_percent as u32 + g.anthropic_percent as u32);
        c.wire_format =
            match self
                .draw
                .weighted(&[engine, g.openai_percent as u32, g.anthropic_percent as u32])
            {
                1 => WireFormat::Openai,
                2 if anthropic_ready() => WireFormat::Anthropic,
                _ => WireFormat::Engine,
            };
        c.envelope = self.envelope();
        c.bytes_per_token = if self.draw.chance(40) {
            4
        } else {
            self.draw.range(1, 8)
        };
        c.keep_recent = self.draw.weighted(&[20, 40, 20, 10, 10]) + 1;
        let max_summary = g.max_summary_bytes as u64;
        c.summary_max_bytes = match self.draw.weighted(&[5, 15, 25, 40, 15]) {
            0 => 0,
            1 => self.draw.range(1, 255),
            2 => self.draw.range(256, 4_095),
            3 => 4_096,
            _ => self.draw.range(4_097, max_summary.max(4_097)),
        }
        .min(max_summary) as usize;
        c.threshold = match self.draw.weighted(&[40, 10, 50]) {
            0 => 0.7,
            1 => 1.0,
            _ => self.draw.range(1, 99) as f64 / 100.0,
        };
        let real = g.real_config_percent as u32;
        let tiny = (g.tiny_config_percent as u32).min(100 - real.min(100));
        match self
            .draw
            .weighted(&[real, tiny, 100u32.saturating_sub(real + tiny)])
        {
            0 => {
                c.context_window =
                    [128_000, 200_000, 32_000, 1_000_000][self.draw.weighted(&[70, 10, 10, 10])];
                c.transport_max_body_bytes = [
                    8 << 20,
                    crate::config::EXPRESS_DEFAULT_LIMIT,
                    10 << 20,
                    16 << 20,
                ][self.draw.weighted(&[40, 40, 10, 10])];
                if self.draw.chance(70) {
                    c.threshold = 0.7;
                }
                if self.draw.chance(70) {
                    c.bytes_per_token = 4;
                }
                if self.draw.chance(60) {
                    c.keep_recent = 2;
                }
                if self.draw.chance(60) {
                    c.summary_max_bytes = 4_096.min(g.max_summary_bytes);
                }
            }
            1 => {
                c.transport_max_body_bytes = self.draw.range(100, 1_023);
                c.context_window = self.draw.range(10, 99);
            }
            _ => {
                // Sizing is relative, so the engine form's size will do
                // (cheaper than writing openai or anthropic values).
                let body = (map_size(&c.envelope)
                    + msgs.iter().map(crate::body::message_size).sum::<u64>())
                    as f64;
                let tokens = Adr0098.tokens(&mut msgs.iter(), &c) as f64;
                let f = 2f64.powf((self.draw.range(0, 400) as f64 - 200.0) / 100.0);
                c.transport_max_body_bytes = ((body * f) as u64).max(1);
                if self.draw.chance(25) {
                    // The ceiling decides the effective window.
                    c.context_window =
                        (c.ceiling_window() + self.draw.range(0, 1_000)).max(128_000);
                } else {
                    let f = 2f64.powf((self.draw.range(0, 400) as f64 - 200.0) / 100.0);
                    c.context_window = ((tokens * f / c.threshold) as u64).max(1);
                }
            }
        }
        c
    }

    fn envelope(&mut self) -> Map<String, Value> {
        let max = self.settings.max_envelope_bytes as u64;
        let mut env = Map::new();
        let tier = self.draw.weighted(&[40, 36, 19, 5]);
        if tier == 0 {
            return env;
        }
        let t = &mut self.text;
        let small = [
            (
                "model",
                json!(*t.pick(&["gpt-4o", "claude-sonnet-4", "qwen2.5-coder-32b"])),
            ),
            (
                "sessionId",
                json!(format!("sess_{:012x}", t.next_u64() >> 16)),
            ),
            ("stream", json!(t.chance(50))),
            ("temperature", text::decimal(t.range(0, 10), 10)),
            ("maxTokens", json!(t.range(256, 8_192))),
            (
                "metadata",
                json!({"pr": t.range(1, 999), "agent": "qa_automacao_agent"}),
            ),
        ];
        for (k, v) in small {
            if self.draw.chance(50) {
                env.insert(k.to_owned(), v);
            }
        }
        if env.is_empty() {
            env.insert("model".into(), json!("gpt-4o"));
        }
        let target = match tier {
            1 => 0,
            2 => self.draw.log_range(1_024, 8_192),
            _ => self.draw.log_range(8_192, max.max(8_192)),
        }
        .min(max);
        let mut tools = Vec::new();
        let mut size = map_size(&env) + 10;
        while size < target {
            let tool = self.tool_schema();
            let s = value_size(&tool) + 1;
            if size + s > max {
                break;
            }
            size += s;
            tools.push(tool);
        }
        if !tools.is_empty() {
            env.insert("tools".into(), Value::Array(tools));
        }
        let mut v = Value::Object(env);
        prune(&mut v, self.settings.max_json_depth.max(1));
        let Value::Object(mut env) = v else {
            unreachable!("pruning keeps the top object")
        };
        // Drop fields until it fits the maximum (a tiny maximum allows only {}).
        while map_size(&env) > max && !env.is_empty() {
            let last = env.keys().next_back().cloned().unwrap_or_default();
            env.shift_remove(&last);
        }
        env
    }
}

/// Serialised size of a JSON object, without building a `Value` of it.
pub(crate) fn map_size(m: &Map<String, Value>) -> u64 {
    let members: u64 = m
        .iter()
        .map(|(k, v)| string_size(k) + 1 + value_size(v))
        .sum();
    2 + members + m.len().saturating_sub(1) as u64
}
