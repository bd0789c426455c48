//! Simpler configs for a failing case.

use crate::generate::history::set_trigger;
use crate::generate::Case;
use crate::model::WireFormat;

/// Simpler configs: defaults where they keep the case's trigger, smaller
/// and rounder numbers, with the ratios between ceiling and window kept
/// in one of the candidates.
pub(super) fn config_candidates(case: &Case) -> Vec<crate::Config> {
    let c = &case.config;
    let mut out = Vec::new();
    let mut with = |f: &dyn Fn(&mut crate::Config)| {
        let mut d = c.clone();
        f(&mut d);
        if d != *c && d.validate().is_ok() {
            out.push(d);
        }
    };
    if c.wire_format != WireFormat::Engine {
        with(&|d| d.wire_format = WireFormat::Engine);
    }
    if c.keep_recent > 1 {
        with(&|d| d.keep_recent = 1);
        with(&|d| d.keep_recent -= 1);
    }
    if c.bytes_per_token != 4 {
        // Keep the trigger's size in bytes: window × bytesPerToken.
        with(&|d| {
            d.context_window = (d.context_window * d.bytes_per_token / 4).max(1);
            d.bytes_per_token = 4;
        });
    }
    if c.threshold != 0.7 && c.threshold != 1.0 {
        for t in [
            0.7,
            1.0,
            (c.threshold * 10.0).round().clamp(1.0, 10.0) / 10.0,
        ] {
            with(&|d| {
                let trigger = d.trigger();
                d.threshold = t;
                set_trigger(d, trigger, false, true, 0);
            });
        }
    }
    let halve_both = |d: &mut crate::Config| {
        d.transport_max_body_bytes = (d.transport_max_body_bytes / 2).max(1);
        d.context_window = (d.context_window / 2).max(1);
    };
    with(&halve_both);
    with(&|d| d.transport_max_body_bytes = (d.transport_max_body_bytes / 2).max(1));
    with(&|d| d.context_window = (d.context_window / 2).max(1));
    with(&|d| d.transport_max_body_bytes = round_down(d.transport_max_body_bytes));
    with(&|d| d.context_window = round_down(d.context_window));
    if c.summary_max_bytes > 0 {
        with(&|d| d.summary_max_bytes = 0);
        with(&|d| d.summary_max_bytes /= 2);
        with(&|d| d.summary_max_bytes = round_down(d.summary_max_bytes as u64) as usize);
    }
    out
}

/// `x` rounded down to two significant digits (at least 1).
fn round_down(x: u64) -> u64 {
    let mut p = 1;
    while x / p >= 100 {
        p *= 10;
    }
    (x / p * p).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_down_keeps_two_digits() {
        assert_eq!(round_down(102_400), 100_000);
        assert_eq!(round_down(8_388_608), 8_300_000);
        assert_eq!(round_down(99), 99);
        assert_eq!(round_down(0), 1);
    }
}
