//! `svcnet rules --backend iptables`: replays the history through the iptables proxier's
//! syncs and prints the last transaction or the tables after it.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the rules follow
//! `pkg/proxy/iptables/proxier.go`.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;
use svcnet_rules::iptables::{IptablesSettings, IptablesState, Transaction, sync};
use svcnet_rules::{ProxyConfig, ProxyModel};

use super::{Args, History, Print, RulesFormat};
use crate::error::CliError;
use crate::output::print_json;

/// Syncs every state of `history` in turn; returns the last transaction and the tables after it.
pub fn replay(config: &ProxyConfig, history: &History) -> Result<(Transaction, IptablesState), CliError> {
    let settings = IptablesSettings::new(config).map_err(|e| CliError::Usage(e.to_string()))?;
    let mut state: Option<IptablesState> = None;
    let mut last = None;
    for step in &history.steps {
        // iptables deletes stale chains at once: an aged prior syncs like any other.
        let _aged = step.aged;
        let node = step
            .objects
            .nodes
            .iter()
            .rev()
            .find(|n| n.metadata.name() == config.node_name);
        let model = ProxyModel::build(
            &step.objects.services,
            &step.objects.endpoint_slices,
            node,
            config,
        );
        let (tx, next) = sync(state.as_ref(), &model, &settings);
        state = Some(next);
        last = Some(tx);
    }
    match (last, state) {
        (Some(tx), Some(state)) => Ok((tx, state)),
        _ => Err(CliError::Usage("no input to sync".to_owned())),
    }
}

/// Runs the iptables backend.
pub fn run(args: &Args, config: &ProxyConfig, history: &History) -> Result<ExitCode, CliError> {
    let (tx, state) = replay(config, history)?;
    match args.output {
        RulesFormat::Json => {
            print_json(&json!({
                "backend": "iptables",
                "family": config.family(),
                "full_sync": tx.full,
                "transaction": tx,
                "state": state,
                "iptables_restore": tx.to_restore_text(),
                "iptables_state": state.to_save_text(),
                "syncs": history.steps.len(),
            }))?;
        }
        RulesFormat::Text | RulesFormat::NftJson => {
            let mut out = std::io::stdout().lock();
            let written = match args.print {
                // The payload's segments straight to stdout (no copy into one string).
                Print::Transaction => tx.write_io(&mut out),
                Print::State => out.write_all(state.to_save_text().as_bytes()),
            };
            match written.and_then(|_| out.flush()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => return Err(CliError::Output(e.to_string())),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
