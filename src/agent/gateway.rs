//! What sits in front of the model and refuses a body over its limit
//! (SPEC §9, `--gateway`): the `413` each answers with — status line,
//! headers and body as the real one writes them — so that an agent's
//! recovery is tested against what it will meet.
//!
//! - `express`: body-parser's `PayloadTooLargeError`, rendered by
//!   Express's default error handler (ADR 0098's API).
//! - `nginx`: `client_max_body_size`'s HTML page.
//! - `openai`, `anthropic`: the providers' JSON errors.

use serde_json::json;

use super::dialect::Rendered;

/// A gateway that refuses bodies over the ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Gateway {
    #[default]
    Express,
    Nginx,
    Openai,
    Anthropic,
}

impl Gateway {
    pub const ALL: [Gateway; 4] = [
        Gateway::Express,
        Gateway::Nginx,
        Gateway::Openai,
        Gateway::Anthropic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Gateway::Express => "express",
            Gateway::Nginx => "nginx",
            Gateway::Openai => "openai",
            Gateway::Anthropic => "anthropic",
        }
    }

    pub fn parse(s: &str) -> Option<Gateway> {
        Gateway::ALL.into_iter().find(|g| g.name() == s)
    }

    /// The `413` for a body of `bytes` over a `limit`.
    pub fn too_large(self, bytes: u64, limit: u64) -> Rendered {
        let html = |body: &str, extra: &[(&str, &str)]| {
            let mut headers: Vec<(String, String)> = extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            headers.push(("content-type".into(), "text/html; charset=utf-8".into()));
            Rendered {
                status: 413,
                headers,
                body: body.as_bytes().to_vec(),
            }
        };
        match self {
            Gateway::Express => html(
                "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
                 <title>Error</title>\n</head>\n<body>\n\
                 <pre>PayloadTooLargeError: request entity too large</pre>\n</body>\n</html>\n",
                &[
                    ("x-powered-by", "Express"),
                    ("content-security-policy", "default-src 'none'"),
                    ("x-content-type-options", "nosniff"),
                ],
            ),
            Gateway::Nginx => html(
                "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n\
                 <center><h1>413 Request Entity Too Large</h1></center>\r\n\
                 <hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
                &[("server", "nginx"), ("connection", "close")],
            ),
            Gateway::Openai => Rendered::json(json!({"error": {
                "message": format!("Request too large: the body is {bytes} bytes, the limit is {limit} bytes."),
                "type": "invalid_request_error", "param": null, "code": "request_too_large"}}))
            .with_status(413),
            Gateway::Anthropic => Rendered::json(json!({"type": "error", "error": {
                "type": "request_too_large",
                "message": format!("Request exceeds the maximum allowed number of bytes ({limit}).")}}))
            .with_status(413),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gateway_answers_413_with_a_body() {
        for g in Gateway::ALL {
            let r = g.too_large(200, 100);
            assert_eq!(r.status, 413, "{}", g.name());
            assert!(!r.body.is_empty());
            assert_eq!(Gateway::parse(g.name()), Some(g));
        }
    }
}
