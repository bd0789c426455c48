//! The nine agent invariants of SPEC §9, by their stable names — the names
//! in reports, fixtures and `--invariants`. Four share a name with an
//! invariant of SPEC §5 and mean the same thing, judged on what an agent
//! sends instead of what a compactor answers.

use std::fmt;

/// One agent invariant (SPEC §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AgentInvariant {
    RequestUnderCeiling,
    RequestWithinWindow,
    RecoversAfterRefusal,
    ToolPairing,
    ResultsDelivered,
    PinnedKept,
    OrderPreserved,
    NoPrematureCompaction,
    Finishes,
}

impl AgentInvariant {
    pub const ALL: [AgentInvariant; 9] = [
        AgentInvariant::RequestUnderCeiling,
        AgentInvariant::RequestWithinWindow,
        AgentInvariant::RecoversAfterRefusal,
        AgentInvariant::ToolPairing,
        AgentInvariant::ResultsDelivered,
        AgentInvariant::PinnedKept,
        AgentInvariant::OrderPreserved,
        AgentInvariant::NoPrematureCompaction,
        AgentInvariant::Finishes,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AgentInvariant::RequestUnderCeiling => "request-under-ceiling",
            AgentInvariant::RequestWithinWindow => "request-within-window",
            AgentInvariant::RecoversAfterRefusal => "recovers-after-refusal",
            AgentInvariant::ToolPairing => "tool-pairing",
            AgentInvariant::ResultsDelivered => "results-delivered",
            AgentInvariant::PinnedKept => "pinned-kept",
            AgentInvariant::OrderPreserved => "order-preserved",
            AgentInvariant::NoPrematureCompaction => "no-premature-compaction",
            AgentInvariant::Finishes => "finishes",
        }
    }

    pub fn parse(name: &str) -> Option<AgentInvariant> {
        AgentInvariant::ALL.into_iter().find(|i| i.name() == name)
    }

    /// What must hold, in one line (reports, `--help`).
    pub fn description(self) -> &'static str {
        match self {
            AgentInvariant::RequestUnderCeiling => {
                "every request body is at most transportMaxBodyBytes"
            }
            AgentInvariant::RequestWithinWindow => {
                "every request's estimate is at most contextWindow"
            }
            AgentInvariant::RecoversAfterRefusal => {
                "after a 413 or a context-length error: a fitting request within 3, no refused body resent, no giving up while a smaller request would fit"
            }
            AgentInvariant::ToolPairing => {
                "in every request each result answers a call of it and each call is answered (a pending last call excepted)"
            }
            AgentInvariant::ResultsDelivered => {
                "the request after a model turn holds what each of its calls read (whole, or toolOutputMaxBytes of it as one piece)"
            }
            AgentInvariant::PinnedKept => "the system prompt is in every request, verbatim",
            AgentInvariant::OrderPreserved => {
                "every request without its summaries is a subsequence of the conversation so far"
            }
            AgentInvariant::NoPrematureCompaction => {
                "nothing is left out while the whole conversation fits (1 - earlyTolerance) of the ceiling and of the trigger"
            }
            AgentInvariant::Finishes => {
                "the agent reaches the final answer and exits 0, within the deadline and 4 requests a turn"
            }
        }
    }

    /// Judged on summary and side requests too (SPEC §9: "a summary
    /// request is judged by the first three only").
    pub fn judges_every_request(self) -> bool {
        matches!(
            self,
            AgentInvariant::RequestUnderCeiling
                | AgentInvariant::RequestWithinWindow
                | AgentInvariant::RecoversAfterRefusal
        )
    }
}

impl fmt::Display for AgentInvariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for AgentInvariant {
    type Err = String;

    fn from_str(s: &str) -> Result<AgentInvariant, String> {
        AgentInvariant::parse(s).ok_or_else(|| {
            format!(
                "unknown agent invariant {:?}; the nine are: {}",
                crate::model::one_line(s),
                AgentInvariant::ALL.map(AgentInvariant::name).join(", ")
            )
        })
    }
}
