//! An endpoint's URL under the loopback rule: ctxgate sends request bodies
//! to this machine only, unless the caller allows remote hosts.
//!
//! The rule, as enforced: the host must be
//! - an IP literal in 127.0.0.0/8 or `::1` (an IPv4-mapped loopback too), or
//! - the name `localhost`, in any case, with or without the trailing dot of
//!   a fully qualified name (`LocalHost.`), which is never looked up: it
//!   *is* 127.0.0.1 and ::1 (RFC 6761 §6.3, as browsers treat it).
//!
//! The addresses checked are the addresses connected to: a [`Target`]
//! carries them, and the HTTP client connects to exactly those, through a
//! resolver that answers nothing else ([`Target::pinned`]). No name is
//! resolved on the way — no DNS query leaves the machine — so no resolver,
//! hosts file or search domain can turn a name that passed the rule into
//! another machine's address. Any other name is refused before anything is
//! resolved or sent. With `--allow-remote` the rule is lifted and the
//! client resolves the host as usual.
//!
//! A URL is shown (in messages, reports, JSON) with its secrets masked:
//! the userinfo (`user:password@`, sent as Basic auth) and the values of
//! query parameters whose names say they are credentials ([`redact_url`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ureq::http::Uri;

/// What is wrong with a target URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetErrorKind {
    /// Not an `http://` or `https://` URL with a host.
    BadUrl,
    /// A port that is not a number from 1 to 65535.
    BadPort,
    /// A host other than loopback, and remote hosts were not allowed.
    NotLoopback,
    /// A `--header` ctxgate will not send (framing is ctxgate's), or one
    /// that is not a header.
    BadHeader,
}

/// A URL ctxgate will not send to, and why. `url` is the URL as shown:
/// its secrets masked.
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
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as given: it may hold a password. Never printed; see `shown`.
    url: String,
    /// The URL with its secrets masked: what every message shows.
    pub shown: String,
    pub(crate) uri: Uri,
    /// The addresses the rule checked, which are the only ones connected
    /// to; `None` for a remote host (resolved by the client).
    pinned: Option<Vec<SocketAddr>>,
    /// The host is not loopback (the caller allowed it).
    pub remote: bool,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.shown)
            .field("pinned", &self.pinned)
            .field("remote", &self.remote)
            .finish()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Target {
    /// The credentials in the URL as given (see [`Secrets`]).
    pub fn secrets(&self) -> Secrets {
        Secrets::of_url(&self.url)
    }

    /// Parse `url` and apply the loopback rule; `allow_remote` lifts it.
    /// Nothing is resolved and nothing is sent.
    pub fn parse(url: &str, allow_remote: bool) -> Result<Target, TargetError> {
        let shown = redact_url(url);
        let err = |kind, problem: String| TargetError {
            kind,
            url: shown.clone(),
            problem,
        };
        let uri: Uri = url.parse().map_err(|e| {
            err(
                TargetErrorKind::BadUrl,
                format!("not a URL ({e}); expected http://HOST:PORT/PATH"),
            )
        })?;
        let default_port = match uri.scheme_str() {
            Some("http") => 80,
            Some("https") => 443,
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
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
        let port = port_of(authority, default_port).map_err(|p| {
            err(
                TargetErrorKind::BadPort,
                format!("bad port {p:?}: a port is a number from 1 to 65535"),
            )
        })?;
        let pinned = loopback_addrs(&host, port);
        if pinned.is_none() && !allow_remote {
            return Err(err(
                TargetErrorKind::NotLoopback,
                format!(
                    "the host {host} is not loopback (127.0.0.0/8, ::1, localhost): nothing was sent to it or resolved; pass --allow-remote to send request bodies to another machine"
                ),
            ));
        }
        Ok(Target {
            url: url.to_owned(),
            shown,
            uri,
            remote: pinned.is_none(),
            pinned,
        })
    }

    /// The addresses connected to, when the host is loopback: the ones the
    /// rule checked, and no others.
    pub fn pinned(&self) -> Option<&[SocketAddr]> {
        self.pinned.as_deref()
    }

    /// The URL as given, secrets included.
    #[cfg(test)]
    fn raw(&self) -> &str {
        &self.url
    }
}

/// The port of an authority (`user@host:port`, `[::1]:port`): the
/// scheme's default when there is none or it is empty (RFC 3986), an error
/// with its text when it is not 1..=65535 — never a silent default.
fn port_of(authority: &str, default: u16) -> Result<u16, String> {
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let after_host = match host_port.rfind(']') {
        Some(i) => &host_port[i + 1..],
        None => host_port,
    };
    let Some((_, port)) = after_host.rsplit_once(':') else {
        return Ok(default);
    };
    if port.is_empty() {
        return Ok(default);
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
        _ => Err(port.to_owned()),
    }
}

/// The loopback addresses the host stands for, or `None` when it is not
/// loopback. Nothing is resolved: an IP literal is itself, `localhost` is
/// 127.0.0.1 and ::1.
fn loopback_addrs(host: &str, port: u16) -> Option<Vec<SocketAddr>> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return ip_is_loopback(ip).then(|| vec![SocketAddr::new(ip, port)]);
    }
    let name = bare.strip_suffix('.').unwrap_or(bare);
    name.eq_ignore_ascii_case("localhost").then(|| {
        vec![
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port),
        ]
    })
}

/// The host (as a URL writes it: IPv6 in brackets) is this machine's
/// loopback by the rule above: a loopback literal, or `localhost`. Nothing
/// is resolved.
pub fn is_loopback(host: &str) -> bool {
    loopback_addrs(host, 1).is_some()
}

fn ip_is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Names of query parameters whose values are credentials: a value is
/// masked when the name, lowercased, contains one of these.
const SECRET_PARAMS: [&str; 9] = [
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "auth",
    "sig",
    "credential",
    "session",
];

fn secret_param(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|s| lower.contains(s))
}

/// What a run was given that must never be shown: every `--header` value
/// and each of its words (`Bearer sk-…`: the token alone too), and what
/// [`redact_url`] masks in the URL (its userinfo, credential-named query
/// values). An endpoint's answer is shown through [`Secrets::mask`]: one
/// that echoes the request's `Authorization` in its error body must not
/// put the token in a report or a CI log. Text under 4 bytes is no secret
/// (masking it would garble every answer).
#[derive(Debug, Clone, Default)]
pub struct Secrets(Vec<String>);

impl Secrets {
    const SHORTEST: usize = 4;

    /// The secrets of the URL `url`.
    pub fn of_url(url: &str) -> Secrets {
        let mut secrets = Secrets::default();
        let parts = UrlParts::of(url);
        if let Some((userinfo, _)) = parts.authority.rsplit_once('@') {
            secrets.add(userinfo);
            userinfo.split(':').for_each(|part| secrets.add(part));
            // As sent: `Authorization: Basic base64(user:password)`.
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            let mut basic = String::new();
            crate::model::parts::base64_encode(format!("{user}:{password}").as_bytes(), &mut basic);
            secrets.add(&basic);
        }
        let query = parts.query.unwrap_or_default().split('&');
        for (name, value) in query.filter_map(|p| p.split_once('=')) {
            if secret_param(name) {
                secrets.add(value);
            }
        }
        secrets
    }

    /// Add `value` (a header's), and each of its words.
    pub fn add(&mut self, value: &str) {
        for text in std::iter::once(value.trim()).chain(value.split_whitespace()) {
            if text.len() >= Self::SHORTEST && !self.0.iter().any(|s| s == text) {
                self.0.push(text.to_owned());
            }
        }
        // The longest first: a whole value before the words in it.
        self.0.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// `text` with every secret in it replaced by `***`.
    pub fn mask(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.0 {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "***");
            }
        }
        out
    }
}

/// `url` as it may be shown: a userinfo (`user:pw@`) becomes `***@`, and
/// the value of a query parameter named like a credential (`?api_key=…`,
/// `access_token=…`) becomes `***`. Works on any text (a URL that does not
/// parse is masked all the same), and never fails.
pub fn redact_url(url: &str) -> String {
    let parts = UrlParts::of(url);
    let mut out = String::with_capacity(url.len());
    out.push_str(parts.scheme);
    match parts.authority.rfind('@') {
        Some(at) => {
            out.push_str("***");
            out.push_str(&parts.authority[at..]);
        }
        None => out.push_str(parts.authority),
    }
    out.push_str(parts.path);
    if let Some(q) = parts.query {
        out.push('?');
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, value)) if !value.is_empty() && secret_param(name) => {
                    format!("{name}=***")
                }
                _ => pair.to_owned(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    out.push_str(parts.fragment);
    out
}

/// A URL in its pieces, as [`redact_url`] and [`Secrets::of_url`] read
/// it, on any text: the scheme (with `://`), the authority (after the
/// scheme, or from the start, to the next '/'; a userinfo is what precedes
/// its last '@'), the path, the query (after '?') and the fragment (from
/// '#').
struct UrlParts<'a> {
    scheme: &'a str,
    authority: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    fragment: &'a str,
}

impl UrlParts<'_> {
    fn of(url: &str) -> UrlParts<'_> {
        let (before_fragment, fragment) = url.split_at(url.find('#').unwrap_or(url.len()));
        let (head, query) = match before_fragment.split_once('?') {
            Some((head, query)) => (head, Some(query)),
            None => (before_fragment, None),
        };
        let start = head.find("://").map_or(0, |i| i + 3);
        let end = head[start..].find('/').map_or(head.len(), |i| start + i);
        UrlParts {
            scheme: &head[..start],
            authority: &head[start..end],
            path: &head[end..],
            query,
            fragment,
        }
    }
}

/// A `--header NAME: VALUE` as it may be shown: `NAME: ***`. Every
/// `--header` value is masked, not only `Authorization` and `Cookie`: a
/// header passed on the command line is as likely to be a secret as not,
/// and a message needs only its name.
pub fn redact_header(name: &str) -> String {
    format!("{}: ***", name.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_in_what_an_endpoint_answers() {
        let mut secrets =
            Secrets::of_url("http://martin:secret-pw@127.0.0.1:9/x?api_key=KEY-123&page=12345");
        secrets.add(" Bearer sk-abc123 ");
        secrets.add("on");
        let echoed =
            "bad auth 'Bearer sk-abc123' (token sk-abc123; Basic bWFydGluOnNlY3JldC1wdw==) \
                      for martin:secret-pw, key KEY-123, page 12345, region on";
        assert_eq!(
            secrets.mask(echoed),
            "bad auth '***' (token ***; Basic ***) for ***, key ***, page 12345, region on"
        );
        assert_eq!(
            Secrets::of_url("http://127.0.0.1:9/").mask("as is"),
            "as is"
        );
    }

    #[test]
    fn loopback_hosts_pass_and_are_pinned_to_loopback_addresses() {
        for url in [
            "http://127.0.0.1:8080/x",
            "http://127.1.2.3/",
            "http://127.255.255.254:1/a?b=c",
            "http://[::1]:3000/internal/sessions/s/llm-turn",
            "http://[::ffff:127.0.0.1]:80/",
            "https://127.0.0.1/",
            "http://localhost:9/",
            "http://LocalHost./",
            "http://localhost.:9/",
            "http://LOCALHOST:9/",
            "http://u:p@127.0.0.1:9/",
        ] {
            let t = Target::parse(url, false).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert!(!t.remote, "{url}");
            let pinned = t.pinned().expect("pinned");
            assert!(!pinned.is_empty(), "{url}");
            assert!(pinned.iter().all(|a| ip_is_loopback(a.ip())), "{url}");
        }
        let t = Target::parse("http://localhost.:9/", false).unwrap();
        assert_eq!(
            t.pinned().unwrap(),
            &[
                "127.0.0.1:9".parse::<SocketAddr>().unwrap(),
                "[::1]:9".parse().unwrap()
            ]
        );
        let t = Target::parse("http://127.0.0.2:7/", false).unwrap();
        assert_eq!(
            t.pinned().unwrap(),
            &["127.0.0.2:7".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(
            Target::parse("https://[::1]/", false).unwrap().pinned(),
            Some(&["[::1]:443".parse::<SocketAddr>().unwrap()][..])
        );
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
            "http://localhost.localdomain/",
            "http://foo.localhost/",
            "http://localhost../",
            "http://mylocalhost/",
            "http://127.0.0.1.nip.io/",
        ] {
            let e = Target::parse(url, false).unwrap_err();
            assert_eq!(e.kind, TargetErrorKind::NotLoopback, "{url}");
            assert!(e.to_string().contains("--allow-remote"), "{e}");
            let t = Target::parse(url, true).unwrap();
            assert!(t.remote, "{url}");
            assert!(t.pinned().is_none(), "{url}");
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

    #[test]
    fn a_port_is_1_to_65535_or_the_schemes_default() {
        for (url, port) in [
            ("http://127.0.0.1/", 80),
            ("http://127.0.0.1:/", 80),
            ("https://127.0.0.1/", 443),
            ("http://127.0.0.1:65535/", 65535),
            ("http://[::1]:8/", 8),
            ("http://a:b@localhost:3000/", 3000),
        ] {
            let t = Target::parse(url, false).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(t.pinned().unwrap()[0].port(), port, "{url}");
        }
        for url in [
            "http://127.0.0.1:65536/",
            "http://127.0.0.1:99999/",
            "http://127.0.0.1:4294967377/",
            "http://127.0.0.1:0/",
            "http://localhost:-1/",
            "http://[::1]:70000/",
        ] {
            match Target::parse(url, true) {
                Err(e) => assert!(
                    matches!(e.kind, TargetErrorKind::BadPort | TargetErrorKind::BadUrl)
                        && e.problem.contains("port"),
                    "{url}: {e}"
                ),
                Ok(t) => panic!("{url}: accepted as {:?}", t.pinned()),
            }
        }
    }

    #[test]
    fn secrets_are_masked_wherever_a_url_is_shown() {
        for (url, shown) in [
            ("http://ci:PW@127.0.0.1:9/x", "http://***@127.0.0.1:9/x"),
            ("http://tok@localhost/", "http://***@localhost/"),
            ("http://a:b@c@127.0.0.1/p@q", "http://***@127.0.0.1/p@q"),
            (
                "http://127.0.0.1/x?api_key=S3CRET&page=2&access_token=T#frag",
                "http://127.0.0.1/x?api_key=***&page=2&access_token=***#frag",
            ),
            ("http://127.0.0.1:9/", "http://127.0.0.1:9/"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        let t = Target::parse("http://ci:PW@127.0.0.1:9/", false).unwrap();
        assert!(!format!("{t} {t:?} {}", t.shown).contains("PW"));
        assert_eq!(t.raw(), "http://ci:PW@127.0.0.1:9/");
        let e = Target::parse("http://ci:PW@10.0.0.1:9/", false).unwrap_err();
        assert!(!e.to_string().contains("PW"), "{e}");
        let e = Target::parse("http://ci:PW@127.0.0.1:99999/", false).unwrap_err();
        assert!(!e.to_string().contains("PW"), "{e}");
        assert_eq!(redact_header(" X-Thing "), "X-Thing: ***");
    }
}
