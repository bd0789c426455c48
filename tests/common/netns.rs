//! A network namespace of a test's own: the test runs again inside one
//! (`unshare -n -m`), where the only interface is `lo` — with 127.0.0.1,
//! ::1 and 192.0.2.2 ([`ELSEWHERE`], a TEST-NET-1 address standing for
//! another machine) — and where /etc/resolv.conf points at 127.0.0.1 and
//! /etc/hosts maps only `localhost`. Whatever the code under test does,
//! nothing it sends can leave the machine.
//!
//! ```ignore
//! #[test]
//! fn sends_nothing_elsewhere() {
//!     if !common::netns::isolated("sends_nothing_elsewhere") { return; }
//!     // … here, inside the namespace …
//! }
//! ```
//!
//! Where no namespace can be made (no `unshare`, no privilege), the test is
//! skipped with a line that says so — never run outside one — unless
//! `CTXGATE_REQUIRE_NETNS=1` (as in `.ci/run`), where that is a failure.

use std::process::Command;

/// The "other machine" of the namespace: on its `lo`, so a connection to it
/// is seen by the test's own listener and goes nowhere else.
pub const ELSEWHERE: &str = "192.0.2.2";

const INSIDE: &str = "CTXGATE_TEST_NETNS";

/// `true` inside the namespace (run the test's body); `false` in the
/// parent, after the test ran inside one and passed (or was skipped). A
/// failure inside fails the parent, with the inside's output.
pub fn isolated(test: &str) -> bool {
    if std::env::var(INSIDE).as_deref() == Ok(test) {
        return true;
    }
    // Removed on the way out, once the namespace's run has exited.
    let dir = super::process::TestDir::new("netns", test);
    let resolv = dir.join("resolv.conf");
    let hosts = dir.join("hosts");
    std::fs::write(
        &resolv,
        "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
    )
    .unwrap();
    std::fs::write(&hosts, "127.0.0.1 localhost\n::1 localhost\n").unwrap();
    let setup = format!(
        "set -e; ip link set lo up; ip addr add {ELSEWHERE}/32 dev lo; \
         mount --bind \"$1\" /etc/resolv.conf; mount --bind \"$2\" /etc/hosts; shift 2; exec \"$@\""
    );
    let exe = std::env::current_exe().unwrap();
    let mut last_error = String::new();
    for unshare in [&["-n", "-m"][..], &["-r", "-n", "-m"][..]] {
        let out = Command::new("unshare")
            .args(unshare)
            .args(["--", "sh", "-c", &setup, "netns-setup"])
            .arg(&resolv)
            .arg(&hosts)
            .arg(&exe)
            .args(["--exact", test, "--nocapture", "--test-threads", "1"])
            .env(INSIDE, test)
            .output();
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                last_error = format!("unshare: {e}");
                continue;
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The setup failed (no privilege): try the next way, else skip.
        if !stdout.contains("running 1 test") {
            last_error = format!("{}{}", stdout.trim(), stderr.trim());
            continue;
        }
        assert!(
            out.status.success() && stdout.contains("test result: ok. 1 passed"),
            "{test}, inside its network namespace, failed:\n{stdout}\n{stderr}"
        );
        return false;
    }
    let why = format!(
        "SKIPPED {test}: it must run in a network namespace of its own (unshare -n), and none could be made here: {last_error}"
    );
    if std::env::var("CTXGATE_REQUIRE_NETNS").as_deref() == Ok("1") {
        panic!("{why} (CTXGATE_REQUIRE_NETNS=1)");
    }
    eprintln!("{why}");
    false
}

/// A DNS server on 127.0.0.1:53 (the namespace's resolver) that answers
/// every `A` query with `answer` and every other query with no address;
/// it counts the queries it got. Only inside [`isolated`].
pub fn fake_dns(answer: std::net::Ipv4Addr) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    assert_eq!(
        std::env::var(INSIDE).ok().as_deref().map(|_| ()),
        Some(()),
        "fake_dns outside a network namespace"
    );
    let socket = std::net::UdpSocket::bind("127.0.0.1:53").expect("bind 127.0.0.1:53");
    let queries = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = queries.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            counted.fetch_add(1, Ordering::SeqCst);
            let q = &buf[..n];
            // The question: a name (labels up to a zero byte), a type, a class.
            let mut end = 12;
            while end < q.len() && q[end] != 0 {
                end += 1 + q[end] as usize;
            }
            end += 5;
            if n < 12 || end > n {
                continue;
            }
            let qtype = u16::from_be_bytes([q[end - 4], q[end - 3]]);
            let a = qtype == 1;
            let mut r = Vec::with_capacity(end + 16);
            r.extend_from_slice(&q[..2]); // the id
            r.extend_from_slice(&[0x81, 0x80, 0, 1, 0, u8::from(a), 0, 0, 0, 0]);
            r.extend_from_slice(&q[12..end]);
            if a {
                r.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
                r.extend_from_slice(&answer.octets());
            }
            let _ = socket.send_to(&r, from);
        }
    });
    queries
}
