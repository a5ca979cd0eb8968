//! Assembles a diagnosis from a notification and the evidence gathered for it.
//! Pure: no I/O, no clock (`now` comes in), no environment.

use chrono::{DateTime, Utc};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::alarm::AlarmNotification;
use crate::classify::{
    AlarmTiming, Behaviour, Classification, ClassifierConfig, classify, human_duration,
};
use crate::diagnosis::finding::Role;
use crate::diagnosis::{
    AlarmFacts, Diagnosis, DiagnosisId, Finding, FindingId, Link, MAX_LINK_URL_CHARS, ReportKind,
    SCHEMA,
};
use crate::evidence::model::load_balancer_name;
use crate::findings::{self, Investigation, registry};
use crate::history::AlarmHistory;
use crate::next_steps::propose;

/// Builds the diagnosis (for an ALARM transition) or resolution report (for leaving ALARM).
pub fn assemble(
    notification: &AlarmNotification,
    kind: ReportKind,
    investigation: &Investigation,
    config: &ClassifierConfig,
    now: DateTime<Utc>,
) -> Diagnosis {
    let alarm = investigation.alarm.clone();
    let evidence = &investigation.evidence;
    let history = evidence
        .history
        .clone()
        .unwrap_or_default()
        .including(notification);
    let timing = timing_of(&alarm);
    let classification = classify(&history, alarm.new_state, timing, config, now);
    let decided = findings::decide(&classification, investigation, now);
    let classification = standing_breach(classification, investigation, &decided.findings);

    let alarm_lasted = (kind == ReportKind::Resolution)
        .then(|| {
            classification
                .figures
                .current_state_since
                .zip(previous_alarm_start(&history, alarm.state_change_time))
                .map(|(end, start)| end - start)
        })
        .flatten();
    let headline = match kind {
        ReportKind::Diagnosis => diagnosis_headline(
            &alarm,
            &classification.behaviour,
            &classification.explanation,
            &decided.findings,
            evidence.history.is_some(),
        ),
        ReportKind::Resolution if evidence.history.is_none() => format!(
            "resolved: {} is back to {} (alarm history not collected, so the episode's length is unknown)",
            alarm.name, alarm.new_state
        ),
        ReportKind::Resolution => {
            let lasted = alarm_lasted
                .map(|lasted| format!(" after {} in ALARM", human_duration(lasted)))
                .unwrap_or_default();
            // What the episode was: where, and its causes, as for a diagnosis.
            let what = what_happened(&decided.findings);
            format!(
                "resolved: {} is back to {}{} ({}{}{})",
                alarm.name,
                alarm.new_state,
                lasted,
                classification.behaviour.as_str(),
                if what.is_empty() {
                    ""
                } else {
                    "; the episode: "
                },
                what.join("; ")
            )
        }
    };
    let breaching_minutes =
        u32::try_from(investigation.breach.len() as u64 * u64::from(alarm.period()) / 60)
            .unwrap_or(u32::MAX);
    let (severity, severity_reason) = crate::severity::assess(&crate::severity::Impact {
        kind,
        behaviour: classification.behaviour,
        alarm: &alarm,
        findings: &decided.findings,
        target_groups: &decided.target_groups,
        breaching_minutes,
    });
    let next_steps = propose(&alarm, &classification, &decided, kind, now);
    let mut links = console_links(&alarm);
    links.extend(investigation_links(
        &alarm,
        &notification.alarm_tags,
        &decided,
    ));
    let mut notes = investigation.plan.notes.clone();
    notes.extend(decided.notes);

    Diagnosis {
        schema: SCHEMA.to_owned(),
        id: DiagnosisId::for_transition(notification),
        kind,
        generated_at: now,
        headline,
        severity,
        severity_reason: Some(severity_reason),
        alarm_metric: evidence
            .statistics
            .as_ref()
            .map(|stats| crate::series::Series {
                label: format!(
                    "{} {}",
                    alarm.metric_name().unwrap_or("metric"),
                    stats.alarm_statistic
                ),
                unit: crate::evidence::model::unit_of_metric(alarm.metric_name()).to_owned(),
                ..findings::traffic::to_series(&stats.alarm_stat, stats.period_seconds)
            }),
        alarm,
        classification,
        findings: decided.findings,
        evidence_gaps: evidence.gaps.clone(),
        next_steps,
        links,
        timings: evidence.timings.clone(),
        target_groups: decided.target_groups,
        workload: decided.workload,
        what_changed: decided.changes.headline(),
        suspects: decided.changes.suspects,
        changes: decided.changes.changes,
        logs: decided.logs,
        notes,
        alarm_lasted_seconds: alarm_lasted.and_then(|d| u64::try_from(d.num_seconds()).ok()),
        hold: None,
    }
}

/// A metric beyond its threshold in every period read, at its usual level,
/// is not a short excursion however young the alarm's own history is (a new
/// alarm, a threshold just moved): the breach is as old as the data.
fn standing_breach(
    mut classification: Classification,
    investigation: &Investigation,
    findings: &[Finding],
) -> Classification {
    let standing = findings.iter().any(|f| {
        f.id == FindingId::ThresholdInsideNormalRange
            && f.verdict == crate::diagnosis::Verdict::Supported
    });
    let points = investigation
        .evidence
        .statistics
        .as_ref()
        .map_or(0, |s| s.alarm_stat.points.len());
    let throughout = points > 0 && investigation.breach.len() * 10 >= points * 9;
    if standing && throughout && classification.behaviour == Behaviour::Transient {
        classification.behaviour = Behaviour::Sustained;
        classification.explanation = format!(
            "the metric breached in {} of the {points} periods read, at its usual level: the breach is as old as the data, whatever the alarm's own history says ({})",
            investigation.breach.len(),
            classification.explanation
        );
    }
    classification
}

/// Behaviour first, then the causes the supported (or clearing) findings name.
fn diagnosis_headline(
    alarm: &AlarmFacts,
    behaviour: &Behaviour,
    explanation: &str,
    findings: &[Finding],
    history_known: bool,
) -> String {
    let causes = what_happened(findings);
    let because = if causes.is_empty() {
        explanation.to_owned()
    } else {
        causes.join("; ")
    };
    if history_known {
        format!("{}: {} ({because})", behaviour.as_str(), alarm.name)
    } else if causes.is_empty() {
        format!(
            "{} on this transition alone: {} (alarm history not collected, so flapping cannot be ruled out)",
            behaviour.as_str(),
            alarm.name
        )
    } else {
        format!(
            "{} on this transition alone: {} ({because}; alarm history not collected)",
            behaviour.as_str(),
            alarm.name
        )
    }
}

/// Where first (the culprit target group, whatever the shared-ALB verdict),
/// then the causes in causal order; context stays out.
fn what_happened(findings: &[Finding]) -> Vec<&str> {
    let location = findings
        .iter()
        .find(|f| f.id == FindingId::SharedLoadBalancerProblem && f.role != Role::Cause)
        .and_then(|f| f.cause.as_deref());
    location
        .into_iter()
        .chain(
            registry::causes(findings)
                .iter()
                .filter_map(|f| f.cause.as_deref()),
        )
        .collect()
}

/// The alarm's evaluation settings, with CloudWatch's defaults where the notification is silent.
fn timing_of(alarm: &AlarmFacts) -> AlarmTiming {
    let evaluation_periods = alarm.evaluation_periods.unwrap_or(1).max(1);
    AlarmTiming {
        period_seconds: alarm
            .period_seconds
            .unwrap_or(AlarmTiming::UNKNOWN.period_seconds),
        evaluation_periods,
        // A composite alarm has no datapoints of its own: nothing breached before its transition.
        datapoints_to_alarm: match alarm.period_seconds {
            Some(_) => alarm.datapoints_to_alarm.unwrap_or(evaluation_periods),
            None => 0,
        },
    }
}

/// When the ALARM episode that ended at `end` began.
fn previous_alarm_start(history: &AlarmHistory, end: DateTime<Utc>) -> Option<DateTime<Utc>> {
    history
        .changes()
        .iter()
        .rev()
        .filter(|c| c.at < end)
        .find(|c| c.to == crate::alarm::AlarmState::Alarm)
        .map(|c| c.at)
}

/// Characters escaped in a console URL fragment.
const FRAGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.');

fn console_links(alarm: &AlarmFacts) -> Vec<Link> {
    let Some(region) = alarm.region() else {
        return Vec::new();
    };
    let region: String = utf8_percent_encode(region, FRAGMENT).to_string();
    let alarm_url = format!(
        "https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#alarmsV2:alarm/{}",
        utf8_percent_encode(&alarm.name, FRAGMENT)
    );
    // A long non-ASCII name can encode past what Slack accepts: then link the alarm list.
    let mut links = vec![if alarm_url.len() <= MAX_LINK_URL_CHARS {
        Link {
            label: "CloudWatch alarm".to_owned(),
            url: alarm_url,
        }
    } else {
        Link {
            label: "CloudWatch alarms".to_owned(),
            url: format!(
                "https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#alarmsV2:"
            ),
        }
    }];
    if let Some(lb) = alarm.dimension("LoadBalancer").and_then(load_balancer_name) {
        links.push(Link {
            label: "Load balancer".to_owned(),
            url: format!(
                "https://{region}.console.aws.amazon.com/ec2/home?region={region}#LoadBalancers:search={}",
                utf8_percent_encode(lb, FRAGMENT)
            ),
        });
    }
    links.retain(|l| l.url.len() <= MAX_LINK_URL_CHARS);
    links
}

/// A runbook URL the alarm's description carries (`Runbook: https://...`).
/// Only https: a plain-http (or any other scheme's) link stays text, whatever
/// markup (Markdown, Slack's `<url|label>`) wraps it.
pub fn runbook_url(description: &str) -> Option<String> {
    description
        .split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '<' | '>' | '(' | ')' | '[' | ']' | '|' | '"' | '\'' | '`'
                )
        })
        .filter(|w| w.starts_with("https://"))
        .map(|w| w.trim_end_matches(['.', ',', ';', ':', '!', '?']))
        .find(|url| {
            url.len() <= MAX_LINK_URL_CHARS
                && url.len() > "https://".len()
                && url.chars().all(|c| c.is_ascii_graphic())
        })
        .map(str::to_owned)
}

/// Links that follow the investigation: the culprit group's metrics, the
/// workload in the EKS console, and the alarm's runbook.
fn investigation_links(
    alarm: &AlarmFacts,
    tags: &std::collections::BTreeMap<String, String>,
    decided: &findings::Decided,
) -> Vec<Link> {
    let mut links = Vec::new();
    if let Some(region) = alarm.region() {
        let region = utf8_percent_encode(region, FRAGMENT).to_string();
        if let Some(group) = decided.target_groups.iter().find(|g| g.culprit) {
            links.push(Link {
                label: "Target group metrics".to_owned(),
                url: format!(
                    "https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#metricsV2:graph=~();search={};namespace=AWS/ApplicationELB;dimensions=LoadBalancer,TargetGroup",
                    utf8_percent_encode(&group.name, FRAGMENT)
                ),
            });
        }
        if let Some(w) = &decided.workload
            && let (Some(cluster), Some(deployment)) = (&w.cluster, &w.deployment)
        {
            links.push(Link {
                label: "Workload in EKS".to_owned(),
                url: format!(
                    "https://{region}.console.aws.amazon.com/eks/home?region={region}#/clusters/{}/deployments/{}?namespace={}",
                    utf8_percent_encode(cluster, FRAGMENT),
                    utf8_percent_encode(deployment, FRAGMENT),
                    utf8_percent_encode(&w.namespace, FRAGMENT)
                ),
            });
        }
    }
    // A `runbook` tag (any case, `runbook_url` too) first, then the description.
    let tagged = tags
        .iter()
        .filter(|(key, _)| key.to_ascii_lowercase().starts_with("runbook"))
        .find_map(|(_, value)| runbook_url(value));
    if let Some(url) = tagged.or_else(|| alarm.description.as_deref().and_then(runbook_url)) {
        links.push(Link {
            label: "Runbook".to_owned(),
            url,
        });
    }
    links.retain(|l| l.url.len() <= MAX_LINK_URL_CHARS);
    links
}

#[cfg(test)]
mod tests {
    use crate::fixtures::sample;

    fn decided(id: crate::diagnosis::FindingId, cause: &str) -> crate::diagnosis::Finding {
        crate::diagnosis::Finding {
            ruled_out_by: None,
            id,
            role: Default::default(),
            hypothesis: String::new(),
            verdict: crate::diagnosis::Verdict::Supported,
            summary: String::new(),
            cause: Some(cause.to_owned()),
            evidence: vec![],
            series: vec![],
            facts: crate::diagnosis::Facts::None,
        }
    }

    #[test]
    fn the_headline_names_causes_in_causal_order_and_leaves_context_out() {
        use crate::diagnosis::FindingId;
        let d = sample();
        let mut findings = vec![
            decided(
                FindingId::HpaCannotReact,
                "HPA peaks at 36 % of request, under its 70 % target",
            ),
            decided(FindingId::ReadinessProbeMissing, "no probe"),
            decided(
                FindingId::RecentDeploy,
                "a deploy just before the first transition",
            ),
        ];
        crate::findings::registry::assign(&mut findings);
        let headline = super::diagnosis_headline(
            &d.alarm,
            &crate::classify::Behaviour::Sustained,
            "explanation",
            &findings,
            true,
        );
        assert_eq!(
            headline,
            "sustained: k8s-shop-latency (a deploy just before the first transition)"
        );
    }

    #[test]
    fn a_runbook_url_is_taken_from_the_description_without_its_punctuation() {
        assert_eq!(
            super::runbook_url(
                "Checkout latency. Runbook: https://wiki.example.com/runbooks/checkout-latency."
            ),
            Some("https://wiki.example.com/runbooks/checkout-latency".to_owned())
        );
        assert_eq!(super::runbook_url("no link here"), None);
        for hostile in [
            "[click](http://evil.example)",
            "<http://evil.example|click>",
            "![img](http://evil.example/x.png)",
            "Runbook: http://wiki.example.com/plain",
        ] {
            assert_eq!(super::runbook_url(hostile), None, "{hostile}");
        }
        assert_eq!(
            super::runbook_url("<https://wiki.example.com/rb|the runbook>"),
            Some("https://wiki.example.com/rb".to_owned())
        );
        assert_eq!(super::runbook_url("javascript:alert(1) ftp://x"), None);
        assert_eq!(
            super::runbook_url("see <https://x.example/a b>"),
            Some("https://x.example/a".to_owned())
        );
    }
}
