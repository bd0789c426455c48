//! An endpoint's URL under the loopback rule: ctxgate sends request bodies
//! to this machine only, unless the caller allows remote hosts. The rule is
//! decided from the URL alone — an IP literal in 127.0.0.0/8 or `::1` (an
//! IPv4-mapped loopback too), or the name `localhost` when every address
//! it resolves to (from the hosts file, no query leaves the machine) is one
//! of those. Any other name is refused without being looked up: nothing
//! is resolved, no connection is made.

use std::fmt;
use std::net::{IpAddr, ToSocketAddrs};

use ureq::http::Uri;

/// What is wrong with a target URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetErrorKind {
    /// Not an `http://` or `https://` URL with a host.
    BadUrl,
    /// A host other than loopback, and remote hosts were not allowed.
    NotLoopback,
}

/// A URL ctxgate will not send to, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetError {
    pub kind: TargetErrorKind,
    pub url: String,
    pub problem: String,
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.url, self.problem)
    }
}

impl std::error::Error for TargetError {}

/// A URL that passed the loopback rule (or was allowed to be remote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    pub(crate) uri: Uri,
    /// The host is not loopback (the caller allowed it).
    pub remote: bool,
}

impl Target {
    /// Parse `url` and apply the loopback rule; `allow_remote` lifts it.
    pub fn parse(url: &str, allow_remote: bool) -> Result<Target, TargetError> {
        let err = |kind, problem: String| TargetError {
            kind,
            url: url.to_owned(),
            problem,
        };
        let uri: Uri = url.parse().map_err(|e| {
            err(
                TargetErrorKind::BadUrl,
                format!("not a URL ({e}); expected http://HOST:PORT/PATH"),
            )
        })?;
        let port = match uri.scheme_str() {
            Some("http") => uri.port_u16().unwrap_or(80),
            Some("https") => uri.port_u16().unwrap_or(443),
            Some(other) => {
                return Err(err(
                    TargetErrorKind::BadUrl,
                    format!("the scheme {other:?} is not http or https"),
                ))
            }
            None => {
                return Err(err(
                    TargetErrorKind::BadUrl,
                    "no scheme: expected http://HOST:PORT/PATH".to_owned(),
                ))
            }
        };
        let host = match uri.host() {
            Some(h) if !h.is_empty() => h.to_owned(),
            _ => return Err(err(TargetErrorKind::BadUrl, "no host".to_owned())),
        };
        let loopback = is_loopback(&host, port);
        if !loopback && !allow_remote {
            return Err(err(
                TargetErrorKind::NotLoopback,
                format!(
                    "the host {host} is not loopback (127.0.0.0/8, ::1, localhost): nothing was sent to it; pass --allow-remote to send request bodies to another machine"
                ),
            ));
        }
        Ok(Target {
            url: url.to_owned(),
            uri,
            remote: !loopback,
        })
    }
}

/// The host (as a URL writes it: IPv6 in brackets) is this machine's
/// loopback. Only `localhost` is resolved, and only to check that each of
/// its addresses is loopback; every other name is not loopback.
pub fn is_loopback(host: &str, port: u16) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return ip_is_loopback(ip);
    }
    let name = bare.strip_suffix('.').unwrap_or(bare);
    if !name.eq_ignore_ascii_case("localhost") {
        return false;
    }
    match ("localhost", port).to_socket_addrs() {
        Ok(addrs) => {
            let addrs: Vec<_> = addrs.collect();
            !addrs.is_empty() && addrs.iter().all(|a| ip_is_loopback(a.ip()))
        }
        Err(_) => false,
    }
}

fn ip_is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_pass() {
        for url in [
            "http://127.0.0.1:8080/x",
            "http://127.1.2.3/",
            "http://127.255.255.254:1/a?b=c",
            "http://[::1]:3000/internal/sessions/s/llm-turn",
            "http://[::ffff:127.0.0.1]:80/",
            "https://127.0.0.1/",
            "http://localhost:9/",
            "http://LocalHost./",
        ] {
            let t = Target::parse(url, false).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert!(!t.remote, "{url}");
        }
    }

    #[test]
    fn other_hosts_are_refused_without_a_lookup() {
        for url in [
            "http://0.0.0.0:8080/",
            "http://10.0.0.1/",
            "http://192.168.1.1/",
            "http://128.0.0.1/",
            "http://[::]/",
            "http://[::2]/",
            "http://[::ffff:10.0.0.1]/",
            "http://example.com/",
            "http://localhost.example.com/",
            "http://mylocalhost/",
            "http://127.0.0.1.nip.io/",
        ] {
            let e = Target::parse(url, false).unwrap_err();
            assert_eq!(e.kind, TargetErrorKind::NotLoopback, "{url}");
            assert!(e.to_string().contains("--allow-remote"), "{e}");
            let t = Target::parse(url, true).unwrap();
            assert!(t.remote, "{url}");
        }
    }

    #[test]
    fn urls_that_are_not_http_are_bad() {
        for url in [
            "",
            "127.0.0.1:8080",
            "ftp://127.0.0.1/",
            "http://",
            "not a url",
            "/path",
        ] {
            let e = Target::parse(url, true).unwrap_err();
            assert_eq!(e.kind, TargetErrorKind::BadUrl, "{url:?}: {e}");
        }
    }
}
