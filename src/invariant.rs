//! The invariant names of SPEC §5: the same names in code, reports,
//! fixtures and `--invariants`.

use std::fmt;

/// One invariant of SPEC §5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Invariant {
    ToolPairing,
    EstimateCoversToolCalls,
    EstimateMonotone,
    BodyUnderCeiling,
    NoPrematureCompaction,
    Progress,
    VerbatimSuffix,
    OrderPreserved,
    PinnedKept,
    SingleBoundedSummary,
    Deterministic,
    Idempotent,
    SessionNeverOverflows,
    EstimateCoversImages,
    /// Not in SPEC §5: an extension, checked only when asked for
    /// (`--invariants estimate-covers-real-tokens`) and when ctxgate is
    /// built with the `calibrate` feature. The estimate is never below the
    /// real token count under cl100k_base and o200k_base.
    EstimateCoversRealTokens,
    /// Not in SPEC §5: an extension judged by default on a subject timed by
    /// its own count (one that answers `estimate`, SPEC §6), with the
    /// `calibrate` feature. The estimate is at least half the least honest
    /// count of the text it counts (`oracle::real_tokens::TEXT_FLOOR_SHARE`).
    EstimateCoversText,
    /// Not in SPEC §5: an extension judged when a subject's hello names it
    /// (or `--claim` does), never by default: a trimmer's honest promise,
    /// weaker than `progress`. When the estimate is over the point the
    /// subject compacts at and the input holds more than its minimal output,
    /// the output leaves out or elides at least one input message
    /// (docs/contract-notes.md, note 41).
    TrimsWhenDue,
}

impl Invariant {
    pub const ALL: [Invariant; 14] = [
        Invariant::ToolPairing,
        Invariant::EstimateCoversToolCalls,
        Invariant::EstimateMonotone,
        Invariant::BodyUnderCeiling,
        Invariant::NoPrematureCompaction,
        Invariant::Progress,
        Invariant::VerbatimSuffix,
        Invariant::OrderPreserved,
        Invariant::PinnedKept,
        Invariant::SingleBoundedSummary,
        Invariant::Deterministic,
        Invariant::Idempotent,
        Invariant::SessionNeverOverflows,
        Invariant::EstimateCoversImages,
    ];

    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::ToolPairing => "tool-pairing",
            Invariant::EstimateCoversToolCalls => "estimate-covers-tool-calls",
            Invariant::EstimateMonotone => "estimate-monotone",
            Invariant::BodyUnderCeiling => "body-under-ceiling",
            Invariant::NoPrematureCompaction => "no-premature-compaction",
            Invariant::Progress => "progress",
            Invariant::VerbatimSuffix => "verbatim-suffix",
            Invariant::OrderPreserved => "order-preserved",
            Invariant::PinnedKept => "pinned-kept",
            Invariant::SingleBoundedSummary => "single-bounded-summary",
            Invariant::Deterministic => "deterministic",
            Invariant::Idempotent => "idempotent",
            Invariant::SessionNeverOverflows => "session-never-overflows",
            Invariant::EstimateCoversImages => "estimate-covers-images",
            Invariant::EstimateCoversRealTokens => "estimate-covers-real-tokens",
            Invariant::EstimateCoversText => "estimate-covers-text",
            Invariant::TrimsWhenDue => "trims-when-due",
        }
    }

    /// Invariants beyond SPEC §5: checked when named, and
    /// [`Invariant::DEFAULT_EXTENSIONS`] by default too.
    pub const EXTENSIONS: [Invariant; 3] = [
        Invariant::EstimateCoversRealTokens,
        Invariant::EstimateCoversText,
        Invariant::TrimsWhenDue,
    ];

    /// The extensions a subject claims only by naming them in its hello's
    /// `invariants` (a hello without that list does not claim them), and
    /// that a default run then judges: promises some compactors make and
    /// SPEC §5 does not ask of all.
    pub const CLAIMED_BY_NAME: [Invariant; 1] = [Invariant::TrimsWhenDue];

    /// The extensions a default run judges beside SPEC §5's fourteen: the
    /// check of the yardstick a subject that estimates is timed by. It
    /// needs the real tokenizers: none without the `calibrate` feature (a
    /// run would call it never exercised).
    #[cfg(feature = "calibrate")]
    pub const DEFAULT_EXTENSIONS: [Invariant; 1] = [Invariant::EstimateCoversText];
    /// Without the `calibrate` feature: none.
    #[cfg(not(feature = "calibrate"))]
    pub const DEFAULT_EXTENSIONS: [Invariant; 0] = [];

    /// The invariants that decide whether compaction was due, by the
    /// subject's own estimate when it answers `estimate` (SPEC §6).
    pub const TIMED: [Invariant; 3] = [
        Invariant::NoPrematureCompaction,
        Invariant::Progress,
        Invariant::TrimsWhenDue,
    ];

    pub fn parse(name: &str) -> Option<Invariant> {
        Invariant::ALL
            .into_iter()
            .chain(Invariant::EXTENSIONS)
            .find(|i| i.name() == name)
    }

    /// True for the invariants judged on the `estimate` op; the others
    /// need `compact`.
    pub fn needs_estimate(self) -> bool {
        matches!(
            self,
            Invariant::EstimateCoversToolCalls
                | Invariant::EstimateMonotone
                | Invariant::EstimateCoversImages
                | Invariant::EstimateCoversRealTokens
                | Invariant::EstimateCoversText
        )
    }

    /// What the invariant says, in one line (SPEC §5).
    pub fn summary(self) -> &'static str {
        match self {
            Invariant::ToolPairing => "every tool result answers a call of its own iteration; no call answered twice or left unanswered (but a pending last one)",
            Invariant::EstimateCoversToolCalls => "the estimate is never below the serialised toolCalls, in total and per message",
            Invariant::EstimateMonotone => "appending a message never lowers the estimate",
            Invariant::BodyUnderCeiling => "the compacted body is never over transportMaxBodyBytes; cannot_fit only when the minimal output is over",
            Invariant::NoPrematureCompaction => "under the trigger and under the ceiling, the history comes back unchanged",
            Invariant::Progress => "after a compaction the estimate is under the trigger, unless only the minimal output is left",
            Invariant::VerbatimSuffix => "the output ends with a verbatim suffix of the input, from an iteration boundary, holding its last iteration",
            Invariant::OrderPreserved => "the output without its summary is a subsequence of the input",
            Invariant::PinnedKept => "the head and every pinned message are kept verbatim",
            Invariant::SingleBoundedSummary => "at most one new message, with content at most summaryMaxBytes",
            Invariant::Deterministic => "the same input twice gives the same output",
            Invariant::Idempotent => "compacting the output again returns it unchanged",
            Invariant::SessionNeverOverflows => "in a simulated ToolLoop of up to 60 iterations no request body exceeds the ceiling",
            Invariant::EstimateCoversImages => "the estimate is never below the images' tokens (SPEC §3, by their pixels), in total and per message",
            Invariant::EstimateCoversRealTokens => "(extension) the estimate is never below the real BPE token count (cl100k_base, o200k_base)",
            Invariant::EstimateCoversText => "(extension, judged by default) an own estimate is at least half the least count of the text it counts (bytes/bytesPerToken, cl100k_base, o200k_base), in total and per message",
            Invariant::TrimsWhenDue => "(extension, judged when the hello names it) over the trigger, with more in the input than head + pinned + last iteration, the output leaves out or elides at least one input message",
        }
    }
}

/// The invariants, one a line: name, the op judging it, what it checks
/// (`ctxgate check --list-invariants`).
pub fn invariant_list() -> String {
    (Invariant::ALL.iter().chain(&Invariant::EXTENSIONS))
        .map(|i| {
            let op = if i.needs_estimate() {
                "estimate"
            } else {
                "compact"
            };
            format!("{:<28} {:<9} {}\n", i.name(), op, i.summary())
        })
        .collect()
}

/// An invariant is its name in JSON (a report's `invariants` keys).
impl serde::Serialize for Invariant {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Invariant {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Invariant, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(d)?;
        Invariant::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown invariant {name:?}")))
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of invariants (what a subject claims, what `--invariants` asks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InvariantSet(u32);

impl InvariantSet {
    /// The fourteen invariants of SPEC §5.
    pub fn all() -> Self {
        InvariantSet::from_iter(Invariant::ALL)
    }

    /// What a run judges unless told otherwise: SPEC §5's fourteen,
    /// [`Invariant::DEFAULT_EXTENSIONS`], and
    /// [`Invariant::CLAIMED_BY_NAME`] (of a subject that names them).
    pub fn default_run() -> Self {
        InvariantSet::from_iter(
            Invariant::ALL
                .into_iter()
                .chain(Invariant::DEFAULT_EXTENSIONS)
                .chain(Invariant::CLAIMED_BY_NAME),
        )
    }

    /// What a subject whose hello lists no `invariants` claims: SPEC §5 and
    /// the extensions, but those claimed only by name.
    pub fn unnamed_claims() -> Self {
        InvariantSet::everything().minus(InvariantSet::from_iter(Invariant::CLAIMED_BY_NAME))
    }

    /// SPEC §5 and the extensions.
    pub fn everything() -> Self {
        InvariantSet::from_iter(Invariant::ALL.into_iter().chain(Invariant::EXTENSIONS))
    }

    pub fn empty() -> Self {
        InvariantSet(0)
    }

    pub fn contains(self, inv: Invariant) -> bool {
        self.0 & (1 << inv as u32) != 0
    }

    pub fn insert(&mut self, inv: Invariant) {
        self.0 |= 1 << inv as u32;
    }

    pub fn remove(&mut self, inv: Invariant) {
        self.0 &= !(1 << inv as u32);
    }

    pub fn intersect(self, other: InvariantSet) -> InvariantSet {
        InvariantSet(self.0 & other.0)
    }

    pub fn union(self, other: InvariantSet) -> InvariantSet {
        InvariantSet(self.0 | other.0)
    }

    /// Those of `self` not in `other`.
    pub fn minus(self, other: InvariantSet) -> InvariantSet {
        InvariantSet(self.0 & !other.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    pub fn iter(self) -> impl Iterator<Item = Invariant> {
        Invariant::ALL
            .into_iter()
            .chain(Invariant::EXTENSIONS)
            .filter(move |i| self.contains(*i))
    }

    /// Parse a comma-separated list of names; `all` means every invariant
    /// a run judges by default ([`InvariantSet::default_run`]), and the
    /// names beside it are added to those.
    pub fn parse_list(list: &str) -> Result<InvariantSet, String> {
        let mut set = InvariantSet::empty();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if name == "all" {
                set = set.union(InvariantSet::default_run());
                continue;
            }
            let inv = Invariant::parse(name).ok_or_else(|| {
                let names: Vec<&str> = Invariant::ALL
                    .iter()
                    .chain(&Invariant::EXTENSIONS)
                    .map(|i| i.name())
                    .collect();
                format!(
                    "unknown invariant {name:?}; the invariants are: {}",
                    names.join(", ")
                )
            })?;
            set.insert(inv);
        }
        Ok(set)
    }

    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Invariant::name).collect()
    }
}

impl FromIterator<Invariant> for InvariantSet {
    fn from_iter<T: IntoIterator<Item = Invariant>>(iter: T) -> Self {
        let mut set = InvariantSet::empty();
        for i in iter {
            set.insert(i);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for inv in Invariant::ALL {
            assert_eq!(Invariant::parse(inv.name()), Some(inv));
        }
        assert_eq!(InvariantSet::all().len(), 14);
        let s = InvariantSet::parse_list("tool-pairing, progress").unwrap();
        assert_eq!(s.names(), ["tool-pairing", "progress"]);
        assert!(InvariantSet::parse_list("tool-paring")
            .unwrap_err()
            .contains("tool-pairing"));
        // `all` is the default run, with the names beside it added, in
        // either order.
        for list in [
            "all,estimate-covers-real-tokens",
            "estimate-covers-real-tokens, all",
        ] {
            let s = InvariantSet::parse_list(list).unwrap();
            let mut want = InvariantSet::default_run();
            want.insert(Invariant::EstimateCoversRealTokens);
            assert_eq!(s, want, "{list}");
        }
    }
}
