//! Every change in the timeline goes through the suspect tests
//! (`crate::suspects`): the symptom's onset is read from the culprit's own
//! series of the alarm's metric, the limits the workload reached from the
//! findings. The deploy and AWS-change findings then follow the verdicts
//! (a change is a cause only when convicted), and the first screen's change
//! line names only a convicted change.

use super::{Decided, Scope};
use crate::classify::Behaviour;
use crate::diagnosis::finding::{Facts, Role};
use crate::diagnosis::suspect::{Suspect, SuspectVerdict};
use crate::diagnosis::{Finding, FindingId, Verdict};
use crate::evidence::model::MetricSeries;
use crate::suspects::{self, LimitsReached, Onset, Scene, SymptomSeries};

/// The symptom's series: the culprit group's own, else the alarm's metric;
/// with the group's baseline when the breakdown computed one.
fn symptom<'a>(
    scope: &Scope<'a>,
    decided: &Decided,
) -> Option<(&'a MetricSeries, Option<f64>, String)> {
    let investigation = scope.investigation;
    let culprit = decided.target_groups.iter().find(|g| g.culprit);
    if let (Some(culprit), Some(alb)) = (culprit, investigation.evidence.alb.as_ref())
        && let Some(index) = alb.groups.iter().position(|g| g.group.name == culprit.name)
    {
        let part = investigation
            .breakdown
            .as_ref()
            .and_then(|b| b.attribution.as_ref())
            .and_then(|a| a.groups.get(index));
        let baseline = part.and_then(|g| g.baseline);
        // A group that only began to serve has no level of its own before:
        // the load balancer's series shows when its traffic arrived.
        let appeared = part.is_some_and(|g| g.appeared);
        let series = &alb.groups[index].metric;
        if !series.points.is_empty() && !appeared {
            return Some((
                series,
                baseline,
                format!("{} of {}", metric_of(scope), culprit.name),
            ));
        }
    }
    let stats = investigation.evidence.statistics.as_ref()?;
    Some((
        &stats.alarm_stat,
        None,
        format!("{} of the alarm", metric_of(scope)),
    ))
}

fn metric_of(scope: &Scope<'_>) -> String {
    scope
        .investigation
        .alarm
        .metric_name()
        .unwrap_or("the metric")
        .to_owned()
}

fn supported(findings: &[Finding], id: FindingId) -> bool {
    findings
        .iter()
        .any(|f| f.id == id && f.verdict == Verdict::Supported)
}

/// The limits the findings show the workload ran into.
fn limits_reached(findings: &[Finding]) -> LimitsReached {
    let mut limits = LimitsReached::default();
    for f in findings {
        match &f.facts {
            Facts::Throttling(t) if !t.pods_at_limit.is_empty() => limits.cpu = true,
            Facts::Restarts(r) if r.pods.iter().any(|p| p.reason == "OOMKilled") => {
                limits.memory = true;
            }
            Facts::Hpa(h) if h.bounds.as_ref().is_some_and(|b| b.at_max()) => {
                limits.replicas = true;
            }
            _ => {}
        }
    }
    limits.cpu |= supported(findings, FindingId::CpuThrottling);
    // Without an HPA the Deployment's replica count is the ceiling: its
    // pods at their CPU limit have reached it.
    limits.replicas |= limits.cpu
        && findings
            .iter()
            .any(|f| matches!(&f.facts, Facts::Hpa(h) if h.bounds.is_none()));
    limits
}

/// Finds when the symptom began, then asks of every alarm whether its
/// metric was always like this (the standing level).
pub fn standing_level(scope: &Scope<'_>, decided: &mut Decided) {
    let investigation = scope.investigation;
    let found = symptom(scope, decided);
    decided.onset = match &found {
        Some((series, baseline, _)) => suspects::onset::find(&SymptomSeries {
            series,
            baseline: *baseline,
            breach: &investigation.breach,
            episode_start: (scope.classification.behaviour == Behaviour::Flapping)
                .then_some(scope.classification.figures.episode_started_at)
                .flatten(),
            period_seconds: investigation.alarm.period(),
        }),
        None => Onset::Unknown,
    };
    decided.symptom = found
        .map(|(_, _, label)| label)
        .unwrap_or_else(|| "the alarm's metric".to_owned());
    let alarm = &investigation.alarm;
    let Some(threshold) = alarm.threshold else {
        return;
    };
    let evidence = &investigation.evidence;
    if evidence.statistics.is_none() && evidence.standing.is_none() {
        return;
    }
    decided.findings.push(super::alarm::standing_level(
        &super::alarm::StandingQuestion {
            onset: &decided.onset,
            outcome: investigation
                .breakdown
                .as_ref()
                .and_then(|b| b.attribution.as_ref())
                .map(|a| a.outcome),
            history: evidence.standing.as_ref(),
            window: evidence.statistics.as_ref().map(|s| &s.alarm_stat),
            threshold,
            comparison: alarm.comparison_or_default(),
            unit: crate::evidence::model::unit_of_metric(alarm.metric_name()),
        },
    ));
}

/// Judges the timeline's changes and lets the verdicts decide the change findings.
pub fn convict(scope: &Scope<'_>, decided: &mut Decided) {
    let onset = decided.onset;
    let label = decided.symptom.clone();
    let culprit_groups: Vec<String> = decided
        .target_groups
        .iter()
        .filter(|g| g.culprit)
        .map(|g| g.name.clone())
        .collect();
    let shared = decided
        .findings
        .iter()
        .any(|f| f.id == FindingId::SharedLoadBalancerProblem && f.role == Role::Cause);
    let workload = decided
        .workload
        .as_ref()
        .map(|w| format!("{}/{}", w.namespace, w.service));
    let scene = Scene {
        family: scope.investigation.alarm.family(),
        onset,
        symptom: label,
        culprit_groups: &culprit_groups,
        shared,
        workload: workload.as_deref(),
        limits: limits_reached(&decided.findings),
    };
    decided.changes.convict(&scene);
    follow_verdicts(&mut decided.findings, &decided.changes.suspects);
    super::registry::assign(&mut decided.findings);
    super::logs::abandoned_requests_are_context(&mut decided.findings);
    if standing_alone(&mut decided.findings, &decided.changes.suspects) {
        // A group at its usual level is a standing condition, not the
        // culprit of a breach, even the one group an alarm watches.
        for group in &mut decided.target_groups {
            group.culprit = false;
        }
    }
    if scope.investigation.alarm.family() == crate::alarm::facts::MetricFamily::ClientErrors {
        let unchanged = decided
            .target_groups
            .iter()
            .filter(|g| g.culprit)
            .all(|g| g.users.is_some_and(|u| u.unaffected()));
        callers_alone(&mut decided.findings, unchanged);
    }
    let others = [
        culprit_group_suspect(decided, &scene_onset_note(decided)),
        standing_suspect(&decided.findings),
    ];
    decided
        .changes
        .suspects
        .extend(others.into_iter().flatten());
}

/// When the symptom began, in a few words, for the non-change suspects.
fn scene_onset_note(decided: &Decided) -> String {
    match decided.onset {
        Onset::Moved {
            at,
            baseline,
            level,
            ..
        } => format!(
            "{} moved from {baseline:.3} to {level:.3} at {}",
            decided.symptom,
            at.format("%H:%M UTC")
        ),
        Onset::DidNotMove { level } => format!(
            "{} sat at {level:.3} before the breach too",
            decided.symptom
        ),
        Onset::Unknown => format!("when {} began to move is unknown", decided.symptom),
    }
}

/// The culprit group as a suspect: its own series moved at the onset
/// (onset), its return to its level brings the metric back (mechanism), and
/// it moved without the others (locality).
fn culprit_group_suspect(decided: &Decided, onset_note: &str) -> Option<Suspect> {
    use crate::diagnosis::suspect::Test;
    let group = decided.target_groups.iter().find(|g| g.culprit)?;
    let onset = match decided.onset {
        Onset::Moved { .. } => Test::pass(onset_note),
        Onset::DidNotMove { .. } => Test::fail(onset_note),
        Onset::Unknown => Test::unknown(onset_note),
    };
    let mechanism = match (group.without_its_change, group.baseline) {
        (Some(without), Some(baseline)) => Test::pass(format!(
            "back at its usual {baseline:.3}, the alarm's metric would have been {without:.3}"
        )),
        _ => Test::pass("the alarm watches this group's own metric"),
    };
    let others_moved = decided
        .target_groups
        .iter()
        .filter(|g| !g.culprit)
        .any(|g| g.share_of_breach.is_some_and(|s| s > 0.2));
    let locality = if others_moved {
        Test::fail("other groups moved with it")
    } else {
        Test::pass("the other groups stayed at their usual level")
    };
    let verdict = Suspect::verdict_of(&onset, &mechanism, &locality);
    Some(Suspect {
        kind: "culprit_group".to_owned(),
        subject: format!("target group {}", group.label()),
        summary: match (group.statistic_while_breaching, group.baseline) {
            (Some(now), Some(usual)) => format!("{now:.3} while breaching, usually {usual:.3}"),
            (Some(now), None) => format!("{now:.3} while breaching"),
            _ => "the group named as behind the alarm".to_owned(),
        },
        at: decided.onset.at(),
        offset_seconds: None,
        reason: format!("target group {}: {}", group.name, onset.note),
        onset,
        mechanism,
        locality,
        verdict,
        reaction: false,
    })
}

/// The standing level as a suspect, from its finding.
fn standing_suspect(findings: &[Finding]) -> Option<Suspect> {
    use crate::diagnosis::suspect::Test;
    let f = findings
        .iter()
        .find(|f| f.id == FindingId::ThresholdInsideNormalRange)?;
    let (onset, mechanism) = match f.verdict {
        Verdict::Supported => (
            Test::pass("the metric has no onset: it sat at this level before the breach"),
            Test::pass("the threshold sits inside the metric's usual range"),
        ),
        Verdict::Refuted => (
            Test::fail(f.ruled_out_by.clone().unwrap_or_else(|| f.summary.clone())),
            Test::pass("a threshold inside the usual range would fire on it"),
        ),
        Verdict::Inconclusive => (Test::unknown(f.summary.clone()), Test::unknown("")),
    };
    let locality = Test::pass("the alarm's own metric");
    let verdict = Suspect::verdict_of(&onset, &mechanism, &locality);
    Some(Suspect {
        kind: "standing_level".to_owned(),
        subject: "the alarm's threshold".to_owned(),
        summary: f.summary.clone(),
        at: None,
        offset_seconds: None,
        reason: match verdict {
            crate::diagnosis::suspect::SuspectVerdict::Acquitted => onset.note.clone(),
            _ => f.cause.clone().unwrap_or_else(|| f.summary.clone()),
        },
        onset,
        mechanism,
        locality,
        verdict,
        reaction: false,
    })
}

/// 4xx are callers' errors until shown otherwise: what the pods, the HPA or
/// the nodes do cannot make a service refuse a request, so none of it is a
/// cause of a client-error alarm (it stays as context).
/// 5xx that did not rise (`failures_unchanged`) are not why callers get 4xx either.
fn callers_alone(findings: &mut [Finding], failures_unchanged: bool) {
    for f in findings.iter_mut() {
        let errors = matches!(
            f.id,
            FindingId::TargetErrors | FindingId::LoadBalancerErrors
        );
        if errors && failures_unchanged && f.role == Role::Cause {
            f.role = Role::Context;
        }
        let about_capacity = matches!(
            f.id,
            FindingId::WorkerCeiling
                | FindingId::CpuThrottling
                | FindingId::HpaCannotReact
                | FindingId::HpaScalesInTooEagerly
                | FindingId::PodImbalance
                | FindingId::PendingPods
                | FindingId::NodesBlocked
                | FindingId::DownstreamWait
                | FindingId::ReadinessProbeMissing
                | FindingId::LatencyOutliers
        );
        if about_capacity && f.role == Role::Cause {
            f.role = Role::Context;
        }
    }
}

/// A metric that sat at its level all along, with no change convicted, has
/// one cause: where the threshold was put. What the pods or the HPA show is
/// how the service always runs, context for the threshold's owners.
fn standing_alone(findings: &mut [Finding], suspects: &[Suspect]) -> bool {
    let standing = findings
        .iter()
        .any(|f| f.id == FindingId::ThresholdInsideNormalRange && f.role == Role::Cause);
    let convicted = suspects
        .iter()
        .any(|s| s.verdict == SuspectVerdict::Convicted);
    if !standing || convicted {
        return false;
    }
    for f in findings.iter_mut() {
        if f.role == Role::Cause
            && !matches!(
                f.id,
                FindingId::ThresholdInsideNormalRange | FindingId::LowTrafficArtifact
            )
        {
            f.role = Role::Context;
        }
    }
    true
}

/// The deploy finding follows the rollouts' and ConfigMap edits' verdicts,
/// the AWS-change finding the CloudTrail changes': a change is a cause only
/// when convicted, and one the tests cleared is ruled out with their reason.
fn follow_verdicts(findings: &mut [Finding], suspects: &[Suspect]) {
    let in_cluster = |s: &&Suspect| matches!(s.kind.as_str(), "rollout" | "config_map");
    let in_aws = |s: &&Suspect| {
        matches!(
            s.kind.as_str(),
            "load_balancer"
                | "listener"
                | "target_group"
                | "targets"
                | "security_group"
                | "node_group"
        )
    };
    for finding in findings.iter_mut() {
        let relevant: Vec<&Suspect> = match finding.id {
            FindingId::RecentDeploy => suspects.iter().filter(in_cluster).collect(),
            FindingId::ConfigurationChange => suspects.iter().filter(in_aws).collect(),
            _ => continue,
        };
        follow(finding, &relevant);
    }
}

fn follow(finding: &mut Finding, suspects: &[&Suspect]) {
    let convicted = suspects
        .iter()
        .filter(|s| s.verdict == SuspectVerdict::Convicted)
        .max_by_key(|s| s.at);
    let acquitted: Vec<&&Suspect> = suspects
        .iter()
        .filter(|s| s.verdict == SuspectVerdict::Acquitted)
        .collect();
    match (convicted, finding.verdict) {
        (Some(_), Verdict::Supported) => {}
        (Some(s), _) => {
            finding.verdict = Verdict::Supported;
            finding.summary = format!(
                "{} {}: {}; {}.",
                s.subject, s.summary, s.onset.note, s.mechanism.note
            );
            finding.cause = Some(format!("{}: {}", s.subject, s.summary));
            finding.ruled_out_by = None;
        }
        (None, Verdict::Supported) if !acquitted.is_empty() => {
            let reasons: Vec<&str> = acquitted.iter().map(|s| s.reason.as_str()).collect();
            finding.verdict = Verdict::Refuted;
            finding.summary = format!("Acquitted on the evidence: {}.", reasons.join("; "));
            finding.ruled_out_by = reasons.last().map(|r| (*r).to_owned());
            finding.cause = None;
            finding.facts = Facts::None;
        }
        (None, Verdict::Supported) => {
            finding.verdict = Verdict::Inconclusive;
            let why = if suspects.is_empty() {
                "the change is not in the timeline read before the breach".to_owned()
            } else {
                suspects
                    .iter()
                    .map(|s| s.reason.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            finding.summary = format!(
                "{} The suspect tests could not convict it: {why}.",
                finding.summary
            );
            finding.cause = None;
        }
        _ => {}
    }
    for s in suspects {
        finding.evidence.push(crate::diagnosis::Evidence::text(
            &format!("{} ({})", s.subject, s.verdict.as_str()),
            format!(
                "onset: {}; mechanism: {}; locality: {}",
                s.onset.note, s.mechanism.note, s.locality.note
            ),
        ));
    }
}
