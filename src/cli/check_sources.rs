//! `check`'s case sources besides the generator's defaults: its settings
//! (`--gen-config`) and real histories as seeds (`--corpus`), each read
//! and checked before anything runs (a bad file is exit 2). The user's
//! config (`--config`, `common::ConfigArgs`) goes with both.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args as ClapArgs;

use super::common::{max_input_bytes, CliError};
use ctxgate::check::CaseSource;
use ctxgate::generate::GenConfig;
use ctxgate::Config;

#[derive(Debug, ClapArgs)]
pub struct SourceArgs {
    /// Generator settings: a GenConfig JSON object, every field optional,
    /// unknown fields an error (`ctxgate gen --print-gen-config` prints
    /// the defaults)
    #[arg(long, value_name = "FILE")]
    pub gen_config: Option<PathBuf>,

    /// Real histories as seeds instead of generated ones: every *.json
    /// history (any SPEC §8 shape and wire format) and *.jsonl file (one a
    /// line) under DIR, each sent as a ToolLoop under ceilings placed
    /// around its own sizes, then mutated (results grown to the 32 KiB cap
    /// and past it, content classes swapped, parallel calls added, ids
    /// reused); --cases counts the cases made from them
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
}

/// What the sources resolve to.
pub struct Sources {
    pub gen: GenConfig,
    pub source: Option<Arc<dyn CaseSource>>,
}

impl SourceArgs {
    /// `config` is the fixed config (`--config`), which corpus cases keep too.
    pub fn resolve(&self, config: Option<&Config>) -> Result<Sources, CliError> {
        let gen = match &self.gen_config {
            Some(path) => ctxgate::input::config::read_gen_config(path, max_input_bytes())?,
            None => GenConfig::default(),
        };
        let source = match &self.corpus {
            Some(dir) => {
                let corpus = ctxgate::corpus::load(dir, max_input_bytes())?;
                super::common::show_notes(&corpus.notes);
                let seeds = corpus.seeds;
                errln!(
                    "ctxgate check: {} real histories from {} as seeds",
                    seeds.len(),
                    dir.display()
                );
                let seeds =
                    ctxgate::corpus::Seeds::new(seeds, dir.display().to_string(), config.cloned());
                Some(Arc::new(seeds) as Arc<dyn CaseSource>)
            }
            None => None,
        };
        if let Some(c) = config
            .filter(|c| source.is_none() && c.transport_max_body_bytes > gen.max_aimed_body_bytes)
        {
            errln!(
                "ctxgate check: note: the config's ceiling ({} bytes) is above the largest body the generator grows a case to ({} bytes, `maxAimedBodyBytes` in --gen-config): no case is aimed at the ceiling itself; every case is checked against it",
                c.transport_max_body_bytes, gen.max_aimed_body_bytes
            );
        }
        Ok(Sources { gen, source })
    }
}
