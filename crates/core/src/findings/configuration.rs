//! What changed before the breach: the timeline is built once here, and the
//! one hypothesis it decides on its own: someone changed the load balancer,
//! a target group behind the alarm, a security group on the path or a node
//! group shortly before the breach.

use chrono::{DateTime, Duration, Utc};

use super::{Decided, Investigation, Scope};
use crate::changes::{ChangeKind, ChangeOrigin, Sources, Timeline};
use crate::classify::human_duration;
use crate::diagnosis::finding::Evidence;
use crate::diagnosis::{Facts, Finding, FindingId, Verdict};
use crate::evidence::changes::RequestPath;

/// A change this long before the breach can still have set it off (the same
/// window as a deploy's).
pub const CHANGE_WINDOW: Duration = crate::changes::PLAUSIBLE_WINDOW;

/// Builds the timeline, and decides whether an AWS change set the breach off.
pub fn what_changed(scope: &Scope<'_>, decided: &mut Decided) {
    let investigation = scope.investigation;
    let evidence = &investigation.evidence;
    let path = request_path(investigation);
    let start = breach_start(scope);
    let timeline = Timeline::build(Sources {
        workload: evidence.workload.as_ref(),
        trail: evidence.trail.as_ref(),
        path: &path,
        breach_start: start,
        now: scope.now,
        fleet: evidence
            .pod_series
            .as_ref()
            .map_or(&[][..], |s| s.pod_count.as_slice()),
    });
    if timeline.trail_read || evidence.trail.is_some() {
        decided
            .findings
            .push(configuration_change(&timeline, decided, start));
    }
    decided.notes.extend(timeline.notes.iter().cloned());
    decided.changes = timeline;
}

/// The resources an audit record must name to matter.
pub fn request_path(investigation: &Investigation) -> RequestPath {
    let evidence = &investigation.evidence;
    let alb = evidence.alb.as_ref();
    let balancer = alb.and_then(|a| a.load_balancer.as_ref());
    RequestPath {
        load_balancer_arn: balancer
            .map(|b| b.arn.clone())
            .or_else(|| investigation.plan.load_balancer_arn.clone()),
        load_balancer_dimension: balancer
            .map(|b| b.dimension.clone())
            .or_else(|| investigation.plan.load_balancer_dimension.clone()),
        target_groups: alb
            .map(|a| {
                a.groups
                    .iter()
                    .map(|g| (g.group.arn.clone(), g.group.name.clone()))
                    .collect()
            })
            .unwrap_or_default(),
        security_groups: evidence
            .trail
            .as_ref()
            .map(|t| t.security_groups.clone())
            .unwrap_or_default(),
        cluster: evidence
            .workload
            .as_ref()
            .and_then(|w| w.cluster.clone())
            .or_else(|| {
                alb?.groups
                    .iter()
                    .find_map(|g| g.tags.as_ref()?.get("elbv2.k8s.aws/cluster").cloned())
            }),
    }
}

/// When the breach began: the first transition of the episode, or the start
/// of the run of breaching periods that led to it when that came earlier
/// (an alarm that waits for 25 periods fires 25 minutes into its breach).
fn breach_start(scope: &Scope<'_>) -> Option<DateTime<Utc>> {
    let period = Duration::seconds(i64::from(scope.investigation.alarm.period()));
    let breach = &scope.investigation.breach;
    let run_start = breach.last().map(|last| {
        let mut start = *last;
        for at in breach.iter().rev().skip(1) {
            if start - *at > period * 2 {
                break;
            }
            start = *at;
        }
        start
    });
    let transition = scope.classification.figures.episode_started_at;
    match (run_start, transition) {
        (Some(r), Some(t)) => Some(r.min(t)),
        (r, t) => r
            .or(t)
            .or(Some(scope.investigation.alarm.state_change_time)),
    }
}

/// Supported when a person or a pipeline changed the path through the AWS
/// API within `CHANGE_WINDOW` before the breach; a target group's change
/// counts only for a group behind the alarm when one is named.
fn configuration_change(
    timeline: &Timeline,
    decided: &Decided,
    start: Option<DateTime<Utc>>,
) -> Finding {
    let culprits: Vec<&str> = decided
        .target_groups
        .iter()
        .filter(|g| g.culprit)
        .map(|g| g.name.as_str())
        .collect();
    let on_the_path = |subject: &str, kind: ChangeKind| match kind {
        ChangeKind::TargetGroup | ChangeKind::Targets if !culprits.is_empty() => culprits
            .iter()
            .any(|name| subject == format!("target group {name}")),
        _ => true,
    };
    let aws: Vec<&crate::changes::Change> = timeline
        .changes
        .iter()
        .filter(|c| c.source == ChangeOrigin::CloudTrail && !c.automatic)
        .filter(|c| on_the_path(&c.subject, c.kind))
        .collect();
    let grace = Duration::minutes(1).num_seconds();
    let window = -CHANGE_WINDOW.num_seconds();
    let before = aws
        .iter()
        .filter(|c| c.offset_seconds.is_some_and(|s| s >= window && s <= grace))
        .max_by_key(|c| c.at);
    let after = aws
        .iter()
        .filter(|c| c.offset_seconds.is_some_and(|s| s > grace))
        .min_by_key(|c| c.at);
    let mut evidence: Vec<Evidence> = aws
        .iter()
        .take(5)
        .map(|c| Evidence::text(&c.when(), format!("{}: {}", c.subject, c.summary)))
        .collect();
    if let Some(s) = start {
        evidence.push(Evidence::text(
            "breach began",
            s.format("%Y-%m-%d %H:%M UTC").to_string(),
        ));
    }
    let (verdict, summary, cause, ruled_out_by) = match (before, after, timeline.trail_read) {
        (Some(c), _, _) => (
            Verdict::Supported,
            format!(
                "{}, {} was changed: {}{}.",
                capitalised(&c.when_against_the_breach()),
                c.subject,
                c.summary,
                c.by.as_ref()
                    .map(|b| format!(" (by {b})"))
                    .unwrap_or_default()
            ),
            Some(format!(
                "{} changed {}: {}",
                c.subject,
                c.when_against_the_breach(),
                c.summary
            )),
            None,
        ),
        (None, Some(c), true) => (
            Verdict::Refuted,
            format!(
                "The only AWS change to the path came {}: it cannot have set it off.",
                c.when_against_the_breach()
            ),
            None,
            Some("AWS changes: only after the breach began".to_owned()),
        ),
        (None, None, true) => (
            Verdict::Refuted,
            format!(
                "CloudTrail shows no change to the load balancer, the target groups behind the alarm, their security groups or the node groups in the {} before the breach.",
                human_duration(CHANGE_WINDOW)
            ),
            None,
            Some(format!(
                "AWS changes: none in the {} before",
                human_duration(CHANGE_WINDOW)
            )),
        ),
        (None, _, false) => (
            Verdict::Inconclusive,
            "CloudTrail could not be read: changes made through the AWS API are unknown."
                .to_owned(),
            None,
            None,
        ),
    };
    Finding {
        role: Default::default(),
        id: FindingId::ConfigurationChange,
        hypothesis: "A change to the load balancer, a target group or a security group set it off"
            .to_owned(),
        cause,
        ruled_out_by,
        verdict,
        summary,
        evidence,
        series: Vec::new(),
        facts: Facts::None,
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
