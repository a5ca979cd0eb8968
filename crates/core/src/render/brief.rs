//! The first screen: what on call reads before acting. The verdict, the
//! causes with their numbers, what was ruled out and by which number, the top
//! next steps with a command to run, and what could not be checked. Every
//! rendering starts with it; the details follow.

use crate::diagnosis::finding::Role;
use crate::diagnosis::{Command, Diagnosis, FindingId, ReportKind};
use crate::findings::registry;

/// Next steps shown on the first screen.
pub const TOP_STEPS: usize = 3;

/// One next step as the first screen shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct BriefStep<'a> {
    pub proposal: &'a str,
    /// The step's commands, in order (renderings pick the first that fits).
    pub commands: &'a [Command],
}

/// The first screen of a report, before layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Brief<'a> {
    /// `Sustained: alarm (where)`.
    pub verdict: String,
    /// Cause clauses, in causal order.
    pub causes: Vec<&'a str>,
    /// Ruled-out clauses with their deciding numbers, most telling first.
    pub ruled_out: Vec<&'a str>,
    pub steps: Vec<BriefStep<'a>>,
    /// `source: reason` of each evidence gap.
    pub not_checked: Vec<String>,
    /// What the logs say, when they were read and no cause already quotes them.
    pub logs: Option<&'a str>,
}

/// The first screen of `d`.
pub fn brief(d: &Diagnosis) -> Brief<'_> {
    let shared = d
        .findings
        .iter()
        .any(|f| f.id == FindingId::SharedLoadBalancerProblem && f.role == Role::Cause);
    let culprits: Vec<String> = d
        .target_groups
        .iter()
        .filter(|g| g.culprit)
        .map(|g| g.label())
        .collect();
    let causes: Vec<&str> = registry::causes(&d.findings)
        .into_iter()
        .filter_map(|f| f.cause.as_deref())
        .collect();
    let behaviour = super::capitalise(d.classification.behaviour.as_str());
    let verdict = match d.kind {
        ReportKind::Resolution => super::capitalise(&d.headline),
        ReportKind::Diagnosis if !shared && !culprits.is_empty() => format!(
            "{behaviour}: {} - {} {} {}",
            d.alarm.name,
            culprits.join(", "),
            if culprits.len() == 1 { "is" } else { "are" },
            d.alarm.family().symptom()
        ),
        ReportKind::Diagnosis if causes.is_empty() => super::capitalise(&d.headline),
        ReportKind::Diagnosis => format!("{behaviour}: {}", d.alarm.name),
    };
    let mut refuted: Vec<_> = d
        .findings
        .iter()
        .filter(|f| f.role == Role::RuledOut)
        .filter_map(|f| Some((registry::causal_rank(&f.id), f.ruled_out_by.as_deref()?)))
        .collect();
    refuted.sort_by_key(|(rank, _)| *rank);
    let mut ruled_out: Vec<&str> = refuted.into_iter().map(|(_, clause)| clause).collect();
    // Changes the suspect tests acquitted, with their reason, after the
    // findings' (a finding may already carry the same clause).
    for reason in crate::suspects::acquitted_reasons(&d.suspects) {
        if !ruled_out.contains(&reason) {
            ruled_out.push(reason);
        }
    }
    let logs_are_a_cause = d
        .findings
        .iter()
        .any(|f| f.id == FindingId::NewLogErrors && f.role == Role::Cause);
    Brief {
        verdict,
        causes,
        ruled_out,
        logs: d
            .logs
            .as_ref()
            .filter(|_| !logs_are_a_cause)
            .map(|l| l.line.as_str()),
        steps: d
            .next_steps
            .iter()
            .take(TOP_STEPS)
            .map(|s| BriefStep {
                proposal: &s.proposal,
                commands: &s.commands,
            })
            .collect(),
        not_checked: d
            .evidence_gaps
            .iter()
            .map(|g| format!("{}: {}", g.source, g.reason))
            .collect(),
    }
}

/// Splits a shell command at spaces outside quotes, into lines of at most
/// `width` characters joined by ` \` continuations (each line after the first
/// indented by `indent` spaces), so it still pastes into a shell. `None` when
/// one word alone is too wide (an ARN) or the command is not shell (PromQL).
pub fn wrap_command(
    text: &str,
    first_width: usize,
    width: usize,
    indent: usize,
) -> Option<Vec<String>> {
    if text.chars().count() <= first_width {
        return Some(vec![text.to_owned()]);
    }
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (c, quote) {
            (' ', None) => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            ('\'' | '"', None) => {
                quote = Some(c);
                word.push(c);
            }
            (c, Some(q)) if c == q => {
                quote = None;
                word.push(c);
            }
            (c, _) => word.push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for w in words {
        let room = if lines.is_empty() {
            first_width
        } else {
            width - indent
        };
        // Two columns stay free for the ` \` continuation.
        if !line.is_empty() && line.chars().count() + 1 + w.chars().count() + 2 > room {
            lines.push(line);
            line = String::new();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&w);
    }
    lines.push(line);
    let last = lines.len() - 1;
    let mut out = Vec::with_capacity(lines.len());
    for (i, l) in lines.into_iter().enumerate() {
        let text = if i == last { l } else { format!("{l} \\") };
        let room = if i == 0 { first_width } else { width - indent };
        if text.chars().count() > room {
            return None;
        }
        out.push(if i == 0 {
            text
        } else {
            format!("{}{text}", " ".repeat(indent))
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_command_stays_on_one_line() {
        assert_eq!(
            wrap_command("kubectl -n shop get pods", 70, 80, 4),
            Some(vec!["kubectl -n shop get pods".to_owned()])
        );
    }

    #[test]
    fn a_long_command_is_continued_with_backslashes_outside_quotes() {
        let cmd = "kubectl -n shop get deployment web -o jsonpath='{.spec.template.spec.containers[*].args}' --context prod-cluster-eu";
        let lines = wrap_command(cmd, 70, 80, 4).unwrap();
        assert!(lines.len() >= 2, "{lines:?}");
        assert!(lines[..lines.len() - 1].iter().all(|l| l.ends_with(" \\")));
        assert!(lines.iter().all(|l| l.chars().count() <= 80));
        let joined = lines.join("\n").replace(" \\\n    ", " ");
        assert_eq!(joined, cmd, "the shell reads the same command back");
    }

    #[test]
    fn a_word_wider_than_a_line_is_not_wrapped() {
        let arn = format!(
            "aws elbv2 describe-target-health --target-group-arn {}",
            "a".repeat(90)
        );
        assert_eq!(wrap_command(&arn, 70, 80, 4), None);
    }
}
