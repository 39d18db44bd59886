//! `docs/cli.md` and `svcnet <command> --help` list the same flags: for every subcommand the
//! binary has, the flags of its help equal the flags of the flag table in its section of the
//! reference (`## <command>`).

mod common;

use std::collections::BTreeSet;

/// The subcommands `svcnet --help` lists (without `help`).
fn subcommands() -> Vec<String> {
    let run = common::svcnet(&["--help"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The long flags of `svcnet <cmd> --help` (the option lines of its Options section), without
/// `--help` and `--version`.
fn help_flags(cmd: &str) -> BTreeSet<String> {
    let run = common::svcnet(&[cmd, "--help"]);
    assert_eq!(run.code, 0, "svcnet {cmd} --help: {}", run.stderr);
    run.stdout
        .lines()
        .filter_map(|l| {
            let t = l.trim_start();
            // "-o, --output <X>" or "--output <X>": an option line starts with a dash.
            let t = t.strip_prefix('-').filter(|_| l.starts_with("  "))?;
            let t = t.split_once(", ").map_or(t, |(_, long)| long);
            let name = t.trim_start_matches('-');
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            t.starts_with("-").then(|| format!("--{name}"))
        })
        .filter(|f| f != "--help" && f != "--version")
        .collect()
}

/// The flags of the table rows (`| \`--flag ...\` | ... |`) in section `## <cmd>` of the doc.
fn doc_flags(doc: &str, cmd: &str) -> Option<BTreeSet<String>> {
    let heading = format!("## {cmd}");
    let mut lines = doc.lines().skip_while(|l| l.trim_end() != heading);
    lines.next()?;
    Some(
        lines
            .take_while(|l| !l.starts_with("## "))
            .filter_map(|l| l.strip_prefix("| `--"))
            .map(|rest| {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                format!("--{name}")
            })
            .collect(),
    )
}

fn doc() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_subcommand_documents_exactly_its_flags() {
    let doc = doc();
    let commands = subcommands();
    assert!(commands.len() >= 8, "subcommands: {commands:?}");
    let mut problems = Vec::new();
    for cmd in &commands {
        let help = help_flags(cmd);
        let Some(documented) = doc_flags(&doc, cmd) else {
            problems.push(format!("`svcnet {cmd}` has no `## {cmd}` section in docs/cli.md"));
            continue;
        };
        let undocumented: Vec<_> = help.difference(&documented).collect();
        let not_in_help: Vec<_> = documented.difference(&help).collect();
        if !undocumented.is_empty() || !not_in_help.is_empty() {
            problems.push(format!(
                "svcnet {cmd}: in --help but not in docs/cli.md: {undocumented:?}; in docs/cli.md but not in --help: {not_in_help:?}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_flag_readers_see_flags() {
    // The comparison above is only as good as its readers: pin them on known flags.
    assert!(help_flags("dns").contains("--cluster-domain"));
    assert!(help_flags("alloc").contains("--seed"));
    let doc = doc();
    let dns = doc_flags(&doc, "dns").expect("dns section");
    assert!(
        dns.contains("--cluster-domain") && dns.contains("--output"),
        "{dns:?}"
    );
    assert!(doc_flags(&doc, "no-such-command").is_none());
    let sample =
        "## x\n| flag | meaning |\n|---|---|\n| `--a-b N` | one |\n| `--c` | two |\n## y\n| `--d` | |\n";
    assert_eq!(
        doc_flags(sample, "x"),
        Some(["--a-b", "--c"].iter().map(|s| s.to_string()).collect())
    );
}

#[test]
fn nothing_in_the_docs_points_outside_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for f in ["README.md", "docs/cli.md"] {
        let text = std::fs::read_to_string(root.join(f)).unwrap_or_default();
        assert!(!text.contains("../shared"), "{f} points at ../shared");
    }
}
