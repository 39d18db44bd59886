//! `svcnet rules --backend ipvs`: the IPVS proxier's rule set after the last state of the
//! history. Every IPVS sync is a full sync, and without live connections (which only a kernel
//! knows) a removed real server goes at once, so the result depends on the last state alone;
//! the earlier states are read and checked all the same.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the rules follow
//! `pkg/proxy/ipvs/proxier.go`.

use std::process::ExitCode;

use svcnet_rules::ipvs::{self, IptablesView, IpvsOptions};
use svcnet_rules::{ProxyConfig, ProxyModel};

use super::{Args, History, Print, RulesFormat};
use crate::error::CliError;
use crate::output::{print_json, print_text};

/// The IPVS rule set of the last state of `history`.
pub fn rule_set(
    config: &ProxyConfig,
    history: &History,
    options: &IpvsOptions,
) -> Result<ipvs::IpvsRuleSet, CliError> {
    let step = history
        .steps
        .last()
        .ok_or_else(|| CliError::Usage("no input to sync".to_owned()))?;
    let node = step
        .objects
        .nodes
        .iter()
        .rev()
        .find(|n| n.metadata.name() == config.node_name);
    // IPVS syncs in full every time: the slices' digests (for partial iptables syncs) are
    // never read.
    let model = ProxyModel::build_without_slice_digests(
        &step.objects.services,
        &step.objects.endpoint_slices,
        node,
        config,
    );
    ipvs::build(&model, config, options).map_err(|e| CliError::Usage(e.to_string()))
}

/// Runs the IPVS backend.
pub fn run(args: &Args, config: &ProxyConfig, history: &History) -> Result<ExitCode, CliError> {
    let options = IpvsOptions {
        unprefixed_ipv6_sets: args.ipvs_unprefixed_ipv6_sets,
    };
    let rules = rule_set(config, history, &options)?;
    match args.output {
        RulesFormat::Json => print_json(&rules.to_json())?,
        RulesFormat::Text | RulesFormat::NftJson => {
            let view = match args.print {
                Print::Transaction => IptablesView::Transaction,
                Print::State => IptablesView::State,
            };
            print_text(rules.text(view).trim_end_matches('\n'))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
