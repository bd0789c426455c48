//! The generation core, shared by the `Arbitrary` impls, the proptest
//! strategy and `case_from_seed`: [`gen_case`].
//!
//! Order of work: the case's own limits (swarm), the history, the config
//! (sized against the history it goes with), optional ill-formedness, then
//! boundary seeking (which needs the final history and config).
//!
//! Here: the case's [`Shape`] and the [`Gen`] that carries it. The work is
//! in the submodules, one step each: `messages` (the history), `tools`
//! (call arguments and tool schemas), `config` (the config and its
//! envelope), `ill_formed`, `exotic` (numbers) and `boundary`.

mod boundary;
mod config;
mod exotic;
mod ill_formed;
mod messages;
mod tools;

use arbitrary::{Arbitrary, Unstructured};

use super::rng::{mix, Draw, SplitMix64};
use super::text::ContentClass;
use super::{Case, GenConfig};
use crate::config::Config;

pub(crate) use boundary::set_trigger;
pub(crate) use config::map_size;

const SHAPE_STREAM: u64 = 0x0053_4841_5045; // "SHAPE"
const TEXT_STREAM: u64 = 0x5445_5854; // "TEXT"

/// RN-150's individual cap on one tool result, which a share of results hit.
pub const TOOL_RESULT_CAP: usize = 32 * 1024;

/// Generate one case under `g`. The first eight bytes of `u` seed the bulk
/// text; the rest of `u` steers the shape, and a PRNG takes over when it
/// runs out. Every config validates; every history is well formed unless
/// `g.allow_ill_formed` is set.
pub fn gen_case(u: &mut Unstructured, g: &GenConfig) -> arbitrary::Result<Case> {
    gen_case_in(u, g, None)
}

/// [`gen_case`] for one given config (`--config`: the user's production
/// values): every case has exactly `config`, and the boundary share of
/// cases is aimed at *its* trigger and ceiling by growing or trimming the
/// history (`generate::aim`) instead of by moving the config.
pub fn gen_case_for(
    u: &mut Unstructured,
    g: &GenConfig,
    config: &Config,
) -> arbitrary::Result<Case> {
    gen_case_in(u, g, Some(config))
}

fn gen_case_in(
    u: &mut Unstructured,
    g: &GenConfig,
    fixed: Option<&Config>,
) -> arbitrary::Result<Case> {
    let seed = u64::arbitrary(u)?;
    let mut draw = Draw::new(u, mix(seed, SHAPE_STREAM));
    let shape = Shape::draw(&mut draw, g);
    let mut gen = Gen {
        draw,
        text: SplitMix64::new(mix(seed, TEXT_STREAM)),
        settings: g,
        counter: 0,
        shape,
    };
    let mut messages = gen.history();
    let mut images = super::images::ImageGen::for_case(seed, g);
    if let Some(images) = &mut images {
        images.add(&mut messages);
    }
    let config = match fixed {
        Some(c) => c.clone(),
        None => gen.config(&messages),
    };
    if let Some(images) = &mut images {
        images.for_format(&mut messages, config.wire_format);
    }
    let mut case = Case { config, messages };
    if let (Some(images), None) = (&mut images, fixed) {
        images.aim_at_elision(&mut case);
    }
    if gen.shape.ill_formed {
        gen.corrupt(&mut case.messages);
    }
    if gen.shape.exotic_numbers {
        gen.exotic_numbers(&mut case);
        if let Some(c) = fixed {
            case.config = c.clone(); // the user's envelope stays as written
        }
    }
    if gen.shape.boundary {
        match fixed {
            Some(_) => gen.aim(&mut case),
            None => gen.seek_boundary(&mut case),
        }
    }
    debug_assert!(case.config.validate().is_ok(), "{:?}", case.config);
    Ok(case)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdStyle {
    /// `call_1`, `call_2`, … unique over the history.
    Sequential,
    /// `call_0`, `call_1`, … restarting every iteration: ids reused.
    Reused,
    /// `call_` + 24 random characters, as OpenAI models make them.
    OpenAi,
    /// `toolu_01` + 22 random characters, as Anthropic models make them.
    Anthropic,
}

/// One case's own limits and flags (swarm testing).
pub(super) struct Shape {
    iterations: usize,
    head: usize,
    max_parallel: usize,
    pub(super) result_tier: usize,
    arg_tier: usize,
    text_max: usize,
    pub(super) classes: Vec<ContentClass>,
    ids: IdStyle,
    pinned: bool,
    pending: bool,
    extras: bool,
    out_of_order: bool,
    empty_calls: bool,
    ill_formed: bool,
    boundary: bool,
    /// Numbers that stock JSON libraries re-spell or round (see
    /// [`GenConfig::exotic_numbers_percent`]).
    exotic_numbers: bool,
}

/// Iteration-count tiers: (lowest, highest, weight). Mostly 2–30; 61 and
/// up (past ADR 0098's 60-iteration gate) in 3% of cases.
const ITERATION_TIERS: [(usize, usize, u32); 7] = [
    (0, 0, 3),
    (1, 1, 4),
    (2, 5, 27),
    (6, 15, 36),
    (16, 30, 21),
    (31, 60, 7),
    (61, usize::MAX, 3),
];

impl Shape {
    fn draw(d: &mut Draw, g: &GenConfig) -> Shape {
        let weights: Vec<u32> = ITERATION_TIERS.iter().map(|t| t.2).collect();
        let (lo, hi, _) = ITERATION_TIERS[d.weighted(&weights)];
        let hi = hi.min(g.max_iterations);
        let iterations = d.range(lo.min(hi) as u64, hi as u64) as usize;
        // An empty history (no head, no iterations) is an edge of its own.
        let head = if iterations == 0 {
            d.weighted(&[50, 30, 10, 10])
        } else {
            d.weighted(&[20, 55, 15, 10])
        }
        .min(g.max_head);
        let max_parallel = match g.max_parallel_calls {
            0 => 0,
            m => match d.weighted(&[30, 40, 30]) {
                0 => 1,
                1 => d.range(2, 3) as usize,
                _ => d.range(4, m.max(4) as u64) as usize,
            }
            .min(m),
        };
        // Results: tiny, small, medium, at the cap, past it. Long
        // histories lean to big results: ADR 0098's gate had 60 iterations
        // with 32 KiB results.
        let result_tier = if iterations > 60 {
            d.weighted(&[20, 25, 20, 20, 15])
        } else if iterations >= 40 {
            d.weighted(&[32, 38, 18, 8, 4])
        } else {
            d.weighted(&[40, 45, 12, 2, 1])
        };
        let arg_tier = d.weighted(&[76, 19, 5]);
        let text_max = match d.weighted(&[65, 28, 7]) {
            0 => 300,
            1 => 2_048,
            _ => g.max_text_bytes,
        }
        .min(g.max_text_bytes);
        // Text classes only: `images` is drawn on a stream of its own
        // (`generate::images`), so the draws here are what they were.
        let text_classes: Vec<ContentClass> = g
            .content_classes
            .iter()
            .copied()
            .filter(|c| c.is_text())
            .collect();
        let mut classes: Vec<ContentClass> = text_classes
            .iter()
            .copied()
            .filter(|_| d.chance(60))
            .collect();
        if classes.is_empty() && !text_classes.is_empty() {
            classes.push(*d.pick(&text_classes));
        }
        if classes.is_empty() {
            classes.push(ContentClass::Prose);
        }
        let ids = if d.chance(g.reused_ids_percent as u32) {
            IdStyle::Reused
        } else {
            *d.pick(&[IdStyle::Sequential, IdStyle::OpenAi, IdStyle::Anthropic])
        };
        Shape {
            iterations,
            head,
            max_parallel,
            result_tier,
            arg_tier,
            text_max,
            classes,
            ids,
            pinned: d.chance(g.pinned_percent as u32),
            pending: d.chance(g.pending_percent as u32),
            extras: d.chance(g.extra_fields_percent as u32),
            out_of_order: d.chance(15),
            empty_calls: d.chance(10),
            ill_formed: g.allow_ill_formed && d.chance(g.ill_formed_percent as u32),
            boundary: d.chance(g.boundary_percent as u32),
            exotic_numbers: g.exotic_numbers_percent > 0
                && d.chance(g.exotic_numbers_percent as u32),
        }
    }
}

pub(super) struct Gen<'u, 'a, 'g> {
    pub(super) draw: Draw<'u, 'a>,
    pub(super) text: SplitMix64,
    pub(super) settings: &'g GenConfig,
    counter: u64,
    pub(super) shape: Shape,
}
