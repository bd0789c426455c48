//! Where step 4's elision stops helping: the body of a candidate with
//! every image the contract lets it elide elided, and with the images it
//! protects elided too. Between the two lies the one band of ceilings in
//! which a compactor that elides the last iteration's (or a pinned
//! iteration's) screenshots keeps an iteration the contract must
//! summarise — the 413 recovery that evicts from the protected tail
//! (NousResearch/hermes-agent#47339). The generator aims ceilings into it
//! and the coverage counts the cases that land there.

use std::ops::Range;

use super::{elidable_at, split_replaced, Parts, Reference};
use crate::config::Config;
use crate::contract::Head;
use crate::model::{check_well_formed, iterations, Message};

/// The two floors of a candidate that keeps `k` recent iterations, in
/// bytes of body (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElisionFloors {
    /// Every image step 4 may elide elided: at this ceiling or above, the
    /// candidate fits by the contract's own elision.
    pub allowed: u64,
    /// The last iteration's and the recent pinned iterations' inline
    /// images elided too. A ceiling in `protected..allowed` fits the
    /// candidate only by an elision the contract forbids.
    pub protected: u64,
}

impl ElisionFloors {
    /// The ceilings at which only a forbidden elision keeps the candidate.
    pub fn band(self) -> Range<u64> {
        self.protected..self.allowed
    }
}

impl Reference<'_> {
    /// The [`ElisionFloors`] of the candidate that keeps the last `k`
    /// iterations of `h` (with its summary and pinned iterations, as step
    /// 3 assembles it), whatever the config's ceiling. None when `h` is not
    /// a well-formed history or has fewer than `k` iterations, or `k` is 0.
    pub fn elision_floors(
        &self,
        config: &Config,
        h: &[Message],
        k: usize,
    ) -> Option<ElisionFloors> {
        check_well_formed(h).ok()?;
        let head = Head::of(h).kept;
        let iters: Vec<Range<usize>> = iterations(&h[head..])
            .into_iter()
            .map(|r| r.start + head..r.end + head)
            .collect();
        if k == 0 || k > iters.len() {
            return None;
        }
        let (replaced, recent) = iters.split_at(iters.len() - k);
        let (kept_pinned, to_summarise) = split_replaced(h, replaced);
        let summary = self.summary(config, &to_summarise);
        let parts = Parts {
            head: &h[..head],
            pinned: &kept_pinned,
            recent: &h[recent[0].start..],
        };
        let candidate = parts.assemble(summary.as_ref());
        // A ceiling of 0: every image in the list is elided.
        let mut all = config.clone();
        all.transport_max_body_bytes = 0;
        let floor = |protected: bool| {
            let elidable = elidable_at(h, recent, candidate.len(), protected);
            let elided = self.elide(&all, &candidate, &elidable);
            let mut c = candidate.clone();
            for (at, m) in &elided {
                c[*at] = m;
            }
            (self.body)(config, &c)
        };
        Some(ElisionFloors {
            allowed: floor(false),
            protected: floor(true),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Content, Part, ToolCall, WireFormat};
    use crate::reference::Elision;

    fn screenshot(bytes: usize) -> Part {
        use crate::generate::images::{inline_image, ImageFormat};
        let mut rng = crate::generate::SplitMix64::new(bytes as u64);
        Part::Image(inline_image(&mut rng, ImageFormat::Png, 64, 64, bytes))
    }

    /// Three iterations, each a call and a result with a screenshot, the
    /// last one small.
    fn history() -> Vec<Message> {
        let mut h = vec![Message::system("You are a browser agent.")];
        for i in 0..3 {
            let id = format!("call_{i}");
            h.push(Message::assistant_calls(
                "",
                vec![ToolCall::new(&id, "screenshot", serde_json::json!({}))],
            ));
            let mut r = Message::tool(&id, "");
            r.content = Content::Parts(vec![
                Part::text("the page"),
                screenshot([20_000, 20_000, 2_000][i]),
            ]);
            h.push(r);
        }
        h
    }

    fn config(ceiling: u64) -> Config {
        let mut c = Config {
            keep_recent: 2,
            transport_max_body_bytes: ceiling,
            wire_format: WireFormat::Openai,
            ..Config::default()
        };
        c.context_window = c.context_window.max(100_000_000);
        c
    }

    #[test]
    fn in_the_band_the_reference_summarises_and_the_defect_keeps_the_iteration() {
        let h = history();
        let reference = Reference::default();
        let f = reference.elision_floors(&config(1_000_000), &h, 2).unwrap();
        assert!(f.protected < f.allowed, "{f:?}");
        // Below the smallest history the contract allows nothing fits.
        let minimal = crate::contract::minimal_body(&config(0), &h);
        assert!(
            f.protected < minimal && minimal < f.allowed,
            "{f:?} {minimal}"
        );
        let defect = Reference {
            elision: Elision::AlsoLastAndPinned,
            ..Reference::default()
        };
        for ceiling in [minimal, f.allowed - 1] {
            let c = config(ceiling);
            let ours = reference.compact(&c, &h).unwrap();
            let theirs = defect.compact(&c, &h).unwrap();
            // The reference kept one iteration, the defect two.
            assert_eq!(ours.last(), h.last(), "the last iteration stays verbatim");
            assert_ne!(theirs.last(), h.last(), "the defect elides it");
            assert!(crate::body::body_bytes(&c, &ours) <= ceiling);
        }
        // At `allowed` the contract's own elision fits two iterations.
        let c = config(f.allowed);
        let ours = reference.compact(&c, &h).unwrap();
        assert_eq!(crate::body::body_bytes(&c, &ours), f.allowed);
        assert_eq!(
            ours[ours.len() - 2..],
            h[h.len() - 2..],
            "two kept, last verbatim"
        );
        assert_eq!(defect.compact(&c, &h).unwrap(), ours);
    }

    #[test]
    fn no_floors_past_the_iterations_or_at_zero() {
        let h = history();
        let reference = Reference::default();
        assert_eq!(reference.elision_floors(&config(1_000), &h, 0), None);
        assert_eq!(reference.elision_floors(&config(1_000), &h, 4), None);
        assert!(reference.elision_floors(&config(1_000), &h, 3).is_some());
    }
}
